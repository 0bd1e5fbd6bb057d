/*
 * direct_access.c
 *		Reading and writing a table without the executor, and the one list of
 *		conditions under which that is allowed.
 *
 * Claims and stream positions are one-row statements run per message, and most
 * of their cost through SPI is the executor around them.  So they look rows up
 * with a dirty snapshot and insert them with PostgreSQL's speculative insertion
 * directly.  That is only right when the statement would have done nothing more.
 * Here is everything the executor does for an INSERT ... ON CONFLICT DO NOTHING
 * into one table, and how each duty is kept when we skip it:
 *
 *	rights (INSERT, SELECT)		checked per call: direct_access_allowed
 *	row-level security			relrowsecurity: SQL; per call, check_enable_rls
 *	triggers (and so FKs)		any trigger: SQL
 *	rules						any rule: SQL
 *	partitions					partitioned tables and partitions (whose
 *								partition constraint the executor checks): SQL
 *	other relation kinds		views, foreign and other tables: SQL (or error)
 *	persistence					temporary and unlogged tables: SQL
 *	CHECK constraints			any: SQL
 *	generated columns			any: SQL
 *	defaults, identity			a column we do not fill with a default or
 *								identity: SQL (the caller vets the defaults of
 *								the columns it fills)
 *	NOT NULL					a column we do not fill that is NOT NULL: SQL
 *	domains						a column we do not fill of a domain type: SQL
 *	types and typmods			the columns we fill have exactly the type the
 *								caller checked (inbox_shape.c), without typmod
 *	deferrable unique indexes	any index not checked immediately: SQL
 *	other unique and exclusion	checked by ExecInsertIndexTuples, as in the
 *	indexes						statement, raising the statement's error
 *	speculative-token waits		a speculative insertion in progress is waited
 *								for by its token (SpeculativeInsertionWait), then
 *								the row is looked up again, as core does
 *	snapshot isolation			READ COMMITTED only: the executor checks that a
 *								conflicting row is visible to the snapshot
 *	read-only, parallel mode	SQL, which raises the proper error
 *
 * Every direct path asks direct_access_possible when it loads what it knows of
 * the table (again after any DDL: a relcache invalidation reloads it) and
 * direct_access_allowed on every call.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "inbox.h"
#include "direct_access.h"

/* Does the table have an index whose uniqueness is checked only later? */
static bool
has_deferred_index(Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		deferred = false;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (!index->rd_index->indimmediate)
			deferred = true;
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return deferred;
}

/*
 * May rows of rel be written without the executor, when we fill exactly the
 * columns in filled[0..nfilled-1]?  From the relation alone; the per-call
 * conditions are direct_access_allowed's.
 */
bool
direct_access_possible(Relation rel, const AttrNumber *filled, int nfilled)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;

	if (!COMPAT_DIRECT_WRITES)
		return false;
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		return false;
	if (rel->trigdesc != NULL || rel->rd_rules != NULL || rel->rd_rel->relrowsecurity)
		return false;
	if (constr != NULL && (constr->num_check > 0 || constr->has_generated_stored))
		return false;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		is_filled = false;

		if (att->attisdropped)
			continue;
		if (att->attgenerated)
			return false;
		for (int f = 0; f < nfilled; f++)
			if (filled[f] == att->attnum)
				is_filled = true;
		if (is_filled)
			continue;
		if (att->atthasdef || att->attnotnull || att->attidentity ||
			get_typtype(att->atttypid) == TYPTYPE_DOMAIN)
			return false;
	}
	return !has_deferred_index(rel);
}

/*
 * The per-call conditions: isolation level, transaction state, the caller's
 * rights, and row-level security as it applies to this caller now.
 */
bool
direct_access_allowed(Oid relid, AclMode rights)
{
	/* A read-only transaction or a parallel worker gets its error from the SQL path. */
	if (IsolationUsesXactSnapshot() || XactReadOnly || IsInParallelMode())
		return false;
	if (pg_class_aclmask(relid, GetUserId(), rights, ACLMASK_ALL) != rights)
		return false;
	return check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
}

/*
 * Look a key up with a dirty snapshot, which sees committed rows and rows of
 * transactions still open, reporting such a transaction in xmin (inserting) or
 * xmax (deleting or updating).  An update shows both versions; the old one, with
 * xmax set, makes the row ROW_CHANGING, which callers wait out, where a fresh
 * insert (ROW_INSERTING) is a claim in progress.  A speculative insertion in
 * progress also reports its token, to be waited for by direct_access_wait.
 * on_present, when given, is called with each version seen while the row counts
 * as present, to read its columns.  Shared by claims and stream positions.
 */
RowState
direct_access_dirty_lookup(Relation heap, Relation index, ScanKey keys, int nkeys, DirtyWait *wait,
						   ItemPointer tid, void (*on_present) (TupleTableSlot *slot, void *arg),
						   void *arg)
{
	SnapshotData dirty;
	IndexScanDesc scan;
	TupleTableSlot *slot = table_slot_create(heap, NULL);
	RowState	state = ROW_ABSENT;

	memset(wait, 0, sizeof(DirtyWait));
	InitDirtySnapshot(dirty);
	scan = index_beginscan(heap, index, &dirty, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while (state != ROW_CHANGING && index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		if (TransactionIdIsValid(dirty.xmax))
		{
			state = ROW_CHANGING;
			wait->xid = dirty.xmax;
			wait->spec_token = 0;
		}
		else if (TransactionIdIsValid(dirty.xmin))
		{
			state = ROW_INSERTING;
			wait->xid = dirty.xmin;
			wait->spec_token = dirty.speculativeToken;
		}
		else if (state == ROW_ABSENT)
			state = ROW_PRESENT;
		*tid = slot->tts_tid;
		if (state == ROW_PRESENT && on_present != NULL)
			on_present(slot, arg);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return state;
}

/*
 * Wait for the transaction that is inserting or changing a row, as a unique
 * index would: for a speculative insertion only until it is confirmed or killed
 * (core's ExecCheckIndexConstraints does the same), else for the transaction.
 */
void
direct_access_wait(Relation heap, const DirtyWait *wait, ItemPointer tid)
{
	ItemPointerData copy = *tid;

	if (wait->spec_token != 0)
		SpeculativeInsertionWait(wait->xid, wait->spec_token);
	else
		XactLockTableWait(wait->xid, heap, &copy, XLTW_InsertIndex);
}

/*
 * One speculative insertion of the row in slot, with arbiter as the only index
 * whose conflicts are not errors.  True if it went in; false if a concurrent
 * insertion of the same key won, and the caller must look again.  The caller
 * has locked rel and checked direct_access_possible and direct_access_allowed.
 */
bool
direct_access_speculative_insert(Relation rel, Oid arbiter, TupleTableSlot *slot)
{
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	TransactionId xid = GetCurrentTransactionId();
	List	   *arbiters = list_make1_oid(arbiter);
	bool		conflict = false;
	uint32		token;

	InitResultRelInfo(rri, rel, 1, NULL, 0);
	ExecOpenIndices(rri, true);

	token = SpeculativeInsertionLockAcquire(xid);
	table_tuple_insert_speculative(rel, slot, GetCurrentCommandId(true), 0, NULL, token);
	compat_insert_index_tuples(rri, slot, estate, &conflict, arbiters);
	table_tuple_complete_speculative(rel, slot, token, !conflict);
	SpeculativeInsertionLockRelease(xid);

	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	return !conflict;
}
