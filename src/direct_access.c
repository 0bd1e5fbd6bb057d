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
 *	rights (INSERT, SELECT)		checked per call, before the lock, by
 *								registry_lookup, which every direct path follows
 *	row-level security			relrowsecurity: SQL; per call, check_enable_rls
 *	triggers (and so FKs)		any trigger: SQL
 *	rules						any rule: SQL
 *	partitions					partitioned tables and partitions (whose
 *								partition constraint the executor checks): SQL
 *	other relation kinds		views, foreign and other tables: SQL (or error)
 *	Citus tables				a distributed or reference table is an empty
 *								shell whose rows live in shards: SQL, which
 *								Citus routes (citus_tables.c)
 *	persistence					temporary and unlogged tables: SQL
 *	CHECK constraints			made of built-in functions and types only
 *								(builtin_only): evaluated before the write
 *								(direct_access_checks_pass), and a row that
 *								fails one takes the SQL path, which raises the
 *								statement's error; any other: SQL.  The stream
 *								positions table has two such checks.
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
 * direct_access_allowed on every call.  A stream position, which is an
 * extension table's row, is moved in place by direct_access_update, under the
 * same two questions.
 *
 * upsert inserts a new row the same way (direct_access_insert_row), when the
 * list above admits the columns it names; the values it brings have been
 * converted to each column's type and typmod already (jsonb_populate_record,
 * the cast to the table's row type), as the claim's are.
 *
 * Changes in place.  upsert and transition write a changed row they have just
 * read (below) with direct_access_update_row, in place of UPDATE ... WHERE key
 * AND the row differs.  On top of the list above (triggers, rules, row security,
 * partitions, generated columns, CHECK constraints, deferred indexes and
 * persistence: direct_access_update_possible, re-checked where user code may
 * have run since), what an UPDATE does and how it is kept:
 *
 *	rights (UPDATE on columns)	checked by the caller before the row is read
 *	concurrent change			the row version read is the one written:
 *								table_tuple_update waits for a writer or locker
 *								as the statement does, and a row changed or
 *								deleted meanwhile sends the caller to the
 *								statement, whose EvalPlanQual reads it again
 *	NOT NULL					a NULL in any NOT NULL column: SQL, for its error
 *	types and typmods			the new values come converted to the column's type
 *								and typmod (as for inserts above; transition's
 *								by the input function with the typmod)
 *	replica identity			CheckCmdReplicaIdentity, the statement's own check
 *	unique and exclusion		new index entries after a non-HOT update, checked
 *								as the statement checks them; after a HOT update
 *								only summarizing (BRIN) indexes get one (16+)
 *	snapshot isolation			READ COMMITTED only (direct_access_allowed):
 *								the statement raises 40001 on a concurrent change
 *
 * Reads.  upsert and transition read the row a unique key names straight from
 * the index (direct_access_fetch), which is what makes a replay cheap: the
 * answer "already like this" comes from one index lookup, with no statement to
 * start, no row lock and no WAL.  It reads with a fresh snapshot after a
 * command counter increment, as a statement run through SPI would, so it sees
 * what this transaction wrote a moment ago; index scans with an MVCC snapshot
 * take the same SSI predicate locks as a SELECT.  Each item below sends the
 * caller to the SQL path instead (direct_access_fetch_allowed), and
 * direct_access_fetch re-checks the items it relies on:
 *
 *	rights						SELECT on the whole table (column privileges: SQL)
 *	row security				no policy applies to the caller (check_enable_rls)
 *	relation kind				a plain table with storage: a partitioned table's
 *								rows live in its partitions and its indexes have
 *								none; the executor routes
 *	Citus tables				a shell, read through SQL, which Citus routes
 *	temporary					only this session's (shape_open refuses others')
 *	index						a valid btree unique index of this very table
 *	inheritance					the index holds the table's own rows only, as ON
 *								CONFLICT and the generated statements (FROM ONLY)
 *								see them
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "inbox.h"
#include "citus_tables.h"
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

/* Do two indexes have the same key columns, in any order? */
static bool
same_key_columns(Form_pg_index a, Form_pg_index b)
{
	Bitmapset  *acols = NULL;
	Bitmapset  *bcols = NULL;

	for (int i = 0; i < a->indnkeyatts; i++)
		acols = bms_add_member(acols, a->indkey.values[i]);
	for (int i = 0; i < b->indnkeyatts; i++)
		bcols = bms_add_member(bcols, b->indkey.values[i]);
	return bms_equal(acols, bcols);
}

/* Is funcid one made by CREATE FUNCTION, not a function of the core catalogs? */
static bool
not_builtin_function(Oid funcid, void *context)
{
	return funcid >= FirstGenbkiObjectId;
}

/*
 * Walker for builtin_only: true when the expression could run code that is not
 * PostgreSQL's own.  A built-in function reaches a user's code only through a
 * user's type (record_eq calls its columns' equality functions), a domain's
 * constraints or a subquery: so every function and every value's type must be
 * built in.
 */
static bool
not_builtin_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, CoerceToDomain) || IsA(node, SubLink) || IsA(node, NextValueExpr))
		return true;
	if ((IsA(node, Var) || IsA(node, Const) || IsA(node, Param)) &&
		exprType(node) >= FirstGenbkiObjectId)
		return true;
	if (check_functions_in_node(node, not_builtin_function, context))
		return true;
	return expression_tree_walker(node, not_builtin_walker, context);
}

/*
 * May a direct write evaluate this CHECK constraint expression itself?  Only when
 * it is immutable and made of PostgreSQL's own functions and types: then
 * evaluating it runs no one's code, with anyone's rights, and gives the
 * statement's answer.
 */
static bool
builtin_only(Node *expr)
{
	return !contain_mutable_functions(expr) && !not_builtin_walker(expr, NULL);
}

/*
 * Does the row in slot pass rel's CHECK constraints, as the executor would judge
 * it (a NULL result passes)?  False sends the caller to the SQL path, which
 * raises the error naming the constraint; so does a constraint builtin_only
 * refuses, should one have been added since the caller asked
 * direct_access_possible.
 */
bool
direct_access_checks_pass(Relation rel, TupleTableSlot *slot)
{
	TupleConstr *constr = RelationGetDescr(rel)->constr;
	EState	   *estate;
	ExprContext *econtext;
	bool		pass = true;

	if (constr == NULL || constr->num_check == 0)
		return true;
	/* A CHECK may read tableoid, which the executor sets before checking. */
	slot->tts_tableOid = RelationGetRelid(rel);
	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	econtext->ecxt_scantuple = slot;
	for (int i = 0; i < constr->num_check && pass; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
		Expr	   *expr = stringToNode(constr->check[i].ccbin);

		MemoryContextSwitchTo(old);
		pass = builtin_only((Node *) expr) &&
			ExecCheck(ExecPrepareExpr(expr, estate), econtext);
	}
	FreeExecutorState(estate);
	return pass;
}

/*
 * What every direct write needs of the relation itself, whichever columns it
 * fills: a permanent plain table, not a partition nor a Citus shell, with no
 * trigger, rule, row security, generated column, deferred index, or CHECK
 * constraint we may not evaluate ourselves.
 */
static bool
relation_allows_direct_writes(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		return false;
	if (citus_table(RelationGetRelid(rel)))
		return false;
	if (rel->trigdesc != NULL || rel->rd_rules != NULL || rel->rd_rel->relrowsecurity)
		return false;
	for (int i = 0; constr != NULL && i < constr->num_check; i++)
		if (!builtin_only(stringToNode(constr->check[i].ccbin)))
			return false;
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && TupleDescAttr(desc, i)->attgenerated)
			return false;
	return !has_deferred_index(rel);
}

/*
 * Is keyindex the only index that INSERT ... ON CONFLICT (its columns) would
 * take as an arbiter?  The statement infers every valid, immediate unique index
 * without expressions or predicate on exactly those columns, whatever its
 * collation or operator class, and a conflict in any of them is no error; a
 * direct insertion has one arbiter, so with a second such index (a
 * case-insensitive twin, say) only the statement gives the statement's answer.
 */
bool
direct_access_sole_arbiter(Relation rel, Oid keyindex)
{
	List	   *indexes = RelationGetIndexList(rel);
	Relation	key = index_open(keyindex, AccessShareLock);
	ListCell   *lc;
	bool		sole = true;

	foreach(lc, indexes)
	{
		Relation	index;
		Form_pg_index form;

		if (lfirst_oid(lc) == keyindex)
			continue;
		index = index_open(lfirst_oid(lc), AccessShareLock);
		form = index->rd_index;
		if (form->indisunique && form->indimmediate && form->indisvalid &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
			same_key_columns(form, key->rd_index))
			sole = false;
		index_close(index, AccessShareLock);
	}
	index_close(key, AccessShareLock);
	list_free(indexes);
	return sole;
}

/*
 * May a direct insertion into rel go before any look for its key?  Only when
 * arbiter is the one index of rel that can refuse a row: INSERT ... ON CONFLICT
 * looks in its arbiters first (ExecCheckIndexConstraints), so a row that
 * conflicts with a committed one is never offered to another unique or
 * exclusion index, which would raise (23505, 23P01) where the statement does
 * nothing.  Indexes still being built (CREATE INDEX or REINDEX CONCURRENTLY)
 * are inserted into too, and count.
 */
bool
direct_access_insert_first_safe(Relation rel, Oid arbiter)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		safe = true;

	foreach(lc, indexes)
	{
		Relation	index;

		if (lfirst_oid(lc) == arbiter)
			continue;
		index = index_open(lfirst_oid(lc), AccessShareLock);
		if (index->rd_index->indisunique || index->rd_index->indisexclusion)
			safe = false;
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return safe;
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

	if (!relation_allows_direct_writes(rel))
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		is_filled = false;

		if (att->attisdropped)
			continue;
		for (int f = 0; f < nfilled; f++)
			if (filled[f] == att->attnum)
				is_filled = true;
		if (is_filled)
			continue;
		if (att->atthasdef || att->attnotnull || att->attidentity ||
			get_typtype(att->atttypid) == TYPTYPE_DOMAIN)
			return false;
	}
	return true;
}

/*
 * May a stored row of rel be changed in place by direct_access_update_row?  Every
 * column is either carried over or set by the caller, so no default, identity or
 * domain of a column left alone comes into it.  From the relation alone.
 */
bool
direct_access_update_possible(Relation rel)
{
	return relation_allows_direct_writes(rel);
}

/*
 * The per-call conditions: isolation level, transaction state, and row-level
 * security as it applies to this caller now.  The caller's rights were checked
 * by registry_lookup in the same call, so they are not checked again here.
 */
bool
direct_access_allowed(Oid relid)
{
	/* A read-only transaction or a parallel worker gets its error from the SQL path. */
	if (IsolationUsesXactSnapshot() || XactReadOnly || IsInParallelMode())
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
	scan = compat_index_beginscan(heap, index, &dirty, nkeys);
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
 * Executor state, rel's indexes opened for insertion and a slot, for
 * direct_insert_begin and direct_insert_begin_kept: kept, the slot has a row
 * type of its own and the indexes are remembered by OID.
 */
static void
insert_state_open(DirectInsert *di, Relation rel, bool kept)
{
	MemoryContext old;

	di->rel = rel;
	di->estate = CreateExecutorState();
	old = MemoryContextSwitchTo(di->estate->es_query_cxt);
	di->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(di->rri, rel, 1, NULL, 0);
	ExecOpenIndices(di->rri, true);
	di->indexids = NULL;
	if (kept)
	{
		int			n = di->rri->ri_NumIndices;

		di->indexids = palloc(sizeof(Oid) * Max(n, 1));
		for (int i = 0; i < n; i++)
			di->indexids[i] = RelationGetRelid(di->rri->ri_IndexRelationDescs[i]);
		di->slot = MakeSingleTupleTableSlot(CreateTupleDescCopy(RelationGetDescr(rel)),
											table_slot_callbacks(rel));
	}
	else
		di->slot = table_slot_create(rel, NULL);
	MemoryContextSwitchTo(old);
}

/*
 * What a speculative insertion needs around it, for one row.  The caller has
 * locked rel and keeps it open for as long.
 */
void
direct_insert_begin(DirectInsert *di, Relation rel)
{
	insert_state_open(di, rel, false);
}

void
direct_insert_end(DirectInsert *di)
{
	ExecDropSingleTupleTableSlot(di->slot);
	ExecCloseIndices(di->rri);
	FreeExecutorState(di->estate);
}

/*
 * The same state, for a caller that keeps it across rows without holding rel
 * and its indexes in between (held_inbox.c): a relation this session has open
 * refuses DDL (CheckTableNotInUse), which the statement's own AFTER triggers may
 * well run.  The slot's row type pins nothing, and the indexes are taken again
 * by direct_insert_attach.  The state is attached (rel and its indexes held)
 * when this returns.
 */
void
direct_insert_begin_kept(DirectInsert *di, Relation rel)
{
	insert_state_open(di, rel, true);
}

/* Let go of rel and its indexes until the next row; their locks stay. */
void
direct_insert_detach(DirectInsert *di)
{
	for (int i = 0; i < di->rri->ri_NumIndices; i++)
		index_close(di->rri->ri_IndexRelationDescs[i], NoLock);
	table_close(di->rel, NoLock);
	di->rel = NULL;
}

/*
 * Take them again, for a row.  The caller knows that neither the table nor any
 * of its indexes has changed since direct_insert_begin_kept (no relcache
 * invalidation of any of them), so what was built from them still holds.
 */
void
direct_insert_attach(DirectInsert *di, Oid relid)
{
	di->rel = table_open(relid, NoLock);
	di->rri->ri_RelationDesc = di->rel;
	for (int i = 0; i < di->rri->ri_NumIndices; i++)
		di->rri->ri_IndexRelationDescs[i] = index_open(di->indexids[i], NoLock);
}

/* Free detached kept state. */
void
direct_insert_free(DirectInsert *di)
{
	ExecDropSingleTupleTableSlot(di->slot);
	FreeExecutorState(di->estate);
}

/*
 * One speculative insertion of the row in di->slot, with arbiter as the only
 * index whose conflicts are not errors.  True if it went in; false if a
 * concurrent insertion of the same key won, and the caller must look again.  The
 * caller has checked direct_access_possible and direct_access_allowed.
 */
bool
direct_insert_speculative(DirectInsert *di, Oid arbiter)
{
	TransactionId xid = GetCurrentTransactionId();
	MemoryContext old = MemoryContextSwitchTo(GetPerTupleMemoryContext(di->estate));
	List	   *arbiters = list_make1_oid(arbiter);
	bool		conflict = false;
	uint32		token;

	token = SpeculativeInsertionLockAcquire(xid);
	table_tuple_insert_speculative(di->rel, di->slot, GetCurrentCommandId(true), 0, NULL, token);
	compat_insert_index_tuples(di->rri, di->slot, di->estate, &conflict, arbiters);
	table_tuple_complete_speculative(di->rel, di->slot, token, !conflict);
	SpeculativeInsertionLockRelease(xid);

	MemoryContextSwitchTo(old);
	ResetPerTupleExprContext(di->estate);
	return !conflict;
}

/* direct_insert_speculative of the row in slot, with state opened for it alone. */
bool
direct_access_speculative_insert(Relation rel, Oid arbiter, TupleTableSlot *slot)
{
	DirectInsert di;
	bool		inserted;

	direct_insert_begin(&di, rel);
	ExecCopySlot(di.slot, slot);
	inserted = direct_insert_speculative(&di, arbiter);
	direct_insert_end(&di);
	return inserted;
}

/*
 * May upsert and transition read rel directly (the list of reads at the top)?
 */
bool
direct_access_fetch_allowed(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);

	return rel->rd_rel->relkind == RELKIND_RELATION &&
		!RELATION_IS_OTHER_TEMP(rel) &&
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED &&
		!citus_table(relid);
}

/*
 * Scan keys for the row (values by attribute number - 1) in a btree index on
 * plain columns, with the index's own equality and collation; false when a key
 * value is NULL.
 */
static bool
key_scankeys(Relation index, const Datum *row, const bool *rownulls, ScanKey keys)
{
	for (int i = 0; i < index->rd_index->indnkeyatts; i++)
	{
		AttrNumber	attnum = index->rd_index->indkey.values[i];
		Oid			type = index->rd_opcintype[i];
		Oid			eq = get_opfamily_member(index->rd_opfamily[i], type, type,
											 BTEqualStrategyNumber);

		if (rownulls[attnum - 1])
			return false;
		ScanKeyInit(&keys[i], i + 1, BTEqualStrategyNumber, get_opcode(eq), row[attnum - 1]);
		keys[i].sk_collation = index->rd_indcollation[i];
	}
	return true;
}

/* The items of the list of reads that direct_access_fetch itself relies on. */
static void
CheckDirectRead(Relation rel, Relation index)
{
	if (rel->rd_rel->relkind != RELKIND_RELATION || RELATION_IS_OTHER_TEMP(rel) ||
		index->rd_rel->relkind != RELKIND_INDEX || index->rd_rel->relam != BTREE_AM_OID ||
		index->rd_index->indrelid != RelationGetRelid(rel) || !index->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" cannot be read through index \"%s\"",
						RelationGetRelationName(rel), RelationGetRelationName(index)),
				 errdetail("Only a plain table's valid btree unique index is read directly.")));
}

/*
 * Fetch the row whose key columns (those of keyindex) equal row[attnum - 1].
 * Fills stored/storednulls (indexed by attnum - 1) and, when asked, where the
 * row version is (for direct_access_update_row), and returns true when found.
 * A NULL key value names no row, as "k = NULL" would not.
 */
bool
direct_access_fetch(Relation rel, Oid keyindex, const Datum *row, const bool *rownulls,
					Datum *stored, bool *storednulls, ItemPointer tid)
{
	Relation	index = try_relation_open(keyindex, AccessShareLock);
	int			nkeys;
	ScanKeyData keys[INDEX_MAX_KEYS];
	Snapshot	snapshot;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		found = false;

	/* Dropped meanwhile by a trigger of this very call: its statements tell why. */
	if (index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the key of \"%s\" was dropped during the call", RelationGetRelationName(rel))));
	CheckDirectRead(rel, index);
	nkeys = index->rd_index->indnkeyatts;
	if (!key_scankeys(index, row, rownulls, keys))
	{
		index_close(index, AccessShareLock);
		return false;
	}

	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	scan = compat_index_beginscan(rel, index, snapshot, nkeys);
	index_rescan(scan, keys, nkeys, NULL, 0);
	slot = table_slot_create(rel, NULL);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		int			natts = RelationGetDescr(rel)->natts;

		slot_getallattrs(slot);
		for (int i = 0; i < natts; i++)
		{
			storednulls[i] = slot->tts_isnull[i];
			stored[i] = storednulls[i] ? (Datum) 0 :
				datumCopy(slot->tts_values[i], TupleDescAttr(RelationGetDescr(rel), i)->attbyval,
						  TupleDescAttr(RelationGetDescr(rel), i)->attlen);
		}
		if (tid != NULL)
			*tid = slot->tts_tid;
		found = true;
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
	UnregisterSnapshot(snapshot);
	index_close(index, AccessShareLock);

	return found;
}

/*
 * Replace the committed (or our own) row at tid by slot, and its index entries;
 * false if it was changed or deleted since it was read, and the caller must
 * look again.  The caller has checked direct_access_possible and _allowed.
 */
bool
direct_access_update(Relation rel, ItemPointer tid, TupleTableSlot *slot)
{
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	COMPAT_UPDATE_INDEXES update_indexes;
	TM_Result	result;

	CheckCmdReplicaIdentity(rel, CMD_UPDATE);
	result = compat_table_tuple_update(rel, tid, slot, GetCurrentCommandId(true),
									   InvalidSnapshot, InvalidSnapshot, true,
									   &tmfd, &lockmode, &update_indexes);
	/*
	 * Changed since it was read: by another transaction, or by this one in code
	 * that ran between the read and now (a type's comparison function, say).
	 * The statement reads the row again and answers as UPDATE does.
	 */
	if (result == TM_Updated || result == TM_Deleted || result == TM_SelfModified)
		return false;
	if (result != TM_Ok)
		elog(ERROR, "unexpected result %d updating a row directly", (int) result);

	if (compat_must_update_indexes(update_indexes))
	{
		EState	   *estate = CreateExecutorState();
		ResultRelInfo *rri = makeNode(ResultRelInfo);

		InitResultRelInfo(rri, rel, 1, NULL, 0);
		ExecOpenIndices(rri, false);
		compat_update_index_tuples(rri, slot, estate, update_indexes);
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
	}
	return true;
}

/*
 * What may have changed since the caller's direct_access_possible or
 * direct_access_update_possible verdict, when user code ran since (a type's
 * comparison function, say), and what a row must satisfy that the caller's
 * values may not: is it still right to write values/nulls (natts of them, by
 * attribute number - 1) directly?  What cannot change without ALTER TABLE,
 * which the caller's open relation refuses, is not looked at again; a row read
 * under another shape is not written.
 */
static bool
row_still_direct(Relation rel, int natts, const bool *nulls)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (natts != desc->natts || rel->trigdesc != NULL || rel->rd_rules != NULL ||
		rel->rd_rel->relrowsecurity)
		return false;
	for (int i = 0; i < desc->natts; i++)
		if (nulls[i] && TupleDescAttr(desc, i)->attnotnull && !TupleDescAttr(desc, i)->attisdropped)
			return false;
	return true;
}

/*
 * The row to write, in slot.  A dropped column is NULL in every row version the
 * executor writes, whatever the row read still holds there: carrying the old
 * value over would keep data the owner dropped, and its TOAST, alive.
 */
static void
store_row(TupleTableSlot *slot, int natts, const Datum *values, const bool *nulls)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;

	ExecClearTuple(slot);
	memcpy(slot->tts_values, values, sizeof(Datum) * natts);
	memcpy(slot->tts_isnull, nulls, sizeof(bool) * natts);
	for (int i = 0; i < natts; i++)
		if (TupleDescAttr(desc, i)->attisdropped)
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
		}
	ExecStoreVirtualTuple(slot);
}

/*
 * The statement's look before it inserts (ExecCheckIndexConstraints): is a row
 * with this key in the arbiter, committed or being written by a transaction we
 * wait for?  ROW_PRESENT or ROW_ABSENT; ROW_CHANGING when a key value is NULL,
 * which the statement judges by the index's NULLS [NOT] DISTINCT.
 */
static RowState
arbiter_lookup(Relation rel, Oid arbiter, const Datum *values, const bool *nulls)
{
	Relation	index = index_open(arbiter, RowExclusiveLock);
	ScanKeyData keys[INDEX_MAX_KEYS];
	RowState	state = ROW_CHANGING;

	if (key_scankeys(index, values, nulls, keys))
	{
		for (;;)
		{
			DirtyWait	wait;
			ItemPointerData tid;

			state = direct_access_dirty_lookup(rel, index, keys, index->rd_index->indnkeyatts,
											   &wait, &tid, NULL, NULL);
			if (state == ROW_PRESENT || state == ROW_ABSENT)
				break;
			direct_access_wait(rel, &wait, &tid);
			CHECK_FOR_INTERRUPTS();
		}
	}
	index_close(index, NoLock);
	return state;
}

/*
 * Insert values/nulls (natts of them, by attribute number - 1) speculatively,
 * with arbiter as the only index whose conflict is no error, for a table whose
 * direct_access_possible verdict covered exactly the columns given (the others
 * are NULL).  With look_first, looks for the key as the statement does before
 * it inserts, which a table with another unique or exclusion index needs
 * (direct_access_insert_first_safe).  DIRECT_INSERTED, or DIRECT_CONFLICT when a row with the key exists
 * or is being inserted (nothing was written); DIRECT_UNAVAILABLE sends the
 * caller to the SQL path, when the row breaks a NOT NULL or CHECK constraint
 * whose error the statement raises.
 */
DirectWrite
direct_access_insert_row(Relation rel, Oid arbiter, int natts, const Datum *values,
						 const bool *nulls, bool look_first)
{
	DirectInsert di;
	DirectWrite result = DIRECT_UNAVAILABLE;

	if (!row_still_direct(rel, natts, nulls))
		return DIRECT_UNAVAILABLE;
	if (look_first)
	{
		RowState	state = arbiter_lookup(rel, arbiter, values, nulls);

		if (state != ROW_ABSENT)
			return state == ROW_PRESENT ? DIRECT_CONFLICT : DIRECT_UNAVAILABLE;
	}
	direct_insert_begin(&di, rel);
	store_row(di.slot, natts, values, nulls);
	if (direct_access_checks_pass(rel, di.slot))
		result = direct_insert_speculative(&di, arbiter) ? DIRECT_INSERTED : DIRECT_CONFLICT;
	direct_insert_end(&di);
	return result;
}

/*
 * Replace the row at tid, which the caller read with a current snapshot at
 * command read_cid (GetCurrentCommandId(false) just after direct_access_fetch),
 * by values/nulls (natts of them, by attribute number - 1): an UPDATE's work, for a
 * table direct_access_update_possible admits.  False sends the caller to the SQL
 * path: the row changed or went meanwhile (the statement's EvalPlanQual settles
 * that), or the new row breaks a NOT NULL or CHECK constraint, whose error the
 * statement raises.  Unique and exclusion constraints are checked by the index
 * insertion, with the statement's errors, and a table published without the
 * replica identity its publications need refuses the update as a statement would.
 */
bool
direct_access_update_row(Relation rel, int natts, ItemPointer tid, CommandId read_cid,
						 const Datum *values, const bool *nulls)
{
	TupleTableSlot *slot;
	bool		done = false;

	/*
	 * A command run since the read (by a type's comparison or output function,
	 * say) may have changed the row: let the statement read it again.
	 */
	if (GetCurrentCommandId(false) != read_cid || !row_still_direct(rel, natts, nulls))
		return false;

	slot = table_slot_create(rel, NULL);
	store_row(slot, natts, values, nulls);
	if (direct_access_checks_pass(rel, slot))
		done = direct_access_update(rel, tid, slot);
	ExecDropSingleTupleTableSlot(slot);
	return done;
}
