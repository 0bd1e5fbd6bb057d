/*
 * claim_direct.c
 *		The claim INSERT without the executor, for inboxes that are exactly what
 *		create_inbox made.
 *
 * A claim is INSERT ... ON CONFLICT (message_id) DO NOTHING.  Run through SPI,
 * most of its cost is the executor around it (snapshot, plan start and end), paid
 * once per message; for a row trigger that is once per loaded row.  This file does
 * what the executor does for that one statement, directly: look for the id with
 * a dirty snapshot, waiting for a transaction that is inserting it; then insert
 * the row speculatively, insert its index entries with the primary key as the
 * arbiter, and if another transaction inserted the same id in between, kill our
 * row and look again.  That is PostgreSQL's own speculative insertion protocol,
 * so the answers, the waits and the locks are those of the SQL statement.
 *
 * Only when nothing else could happen in the SQL statement: no triggers (foreign
 * keys are triggers), no row-level security, no CHECK constraints or generated
 * columns, no defaults but claimed_at's now(), no NOT NULL columns we do not
 * fill, a plain table, READ COMMITTED (snapshot isolation needs the executor's
 * visibility check), and a caller with INSERT and SELECT on the table.  Anything
 * else takes the SQL path, which raises the errors the user should see.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "compat.h"
#include "inbox.h"

/* Is the default of attribute attnum exactly now()? */
static bool
default_is_now(Relation rel, AttrNumber attnum)
{
	Node	   *expr = build_column_default(rel, attnum);

	return expr != NULL && IsA(expr, FuncExpr) &&
		((FuncExpr *) expr)->funcid == F_NOW && ((FuncExpr *) expr)->args == NIL;
}

/*
 * Can claims of this inbox skip the executor?  Decided from the table's shape
 * when the cache entry is loaded, which happens again after any DDL on it.
 */
bool
claim_direct_shape_ok(Relation rel, AttrNumber claimed_at)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;

#ifdef COMPAT_NO_DIRECT_CLAIM
	return false;
#endif
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->trigdesc != NULL ||
		rel->rd_rel->relrowsecurity || claimed_at == InvalidAttrNumber)
		return false;
	if (constr != NULL && (constr->num_check > 0 || constr->has_generated_stored))
		return false;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		is_key = strcmp(NameStr(att->attname), "message_id") == 0;

		if (att->attisdropped || is_key)
			continue;
		if (att->attnum == claimed_at)
		{
			if (!att->atthasdef || !default_is_now(rel, att->attnum))
				return false;
		}
		else if (att->atthasdef || att->attnotnull || att->attidentity || att->attgenerated)
			return false;
	}
	return true;
}

/* The per-call conditions: the caller's rights, RLS as it applies now, isolation. */
static bool
claim_direct_allowed(InboxInfo *inbox)
{
	Oid			user = GetUserId();

	/* A read-only transaction or a parallel worker gets its error from the SQL path. */
	return inbox->direct_shape &&
		!IsolationUsesXactSnapshot() && !XactReadOnly && !IsInParallelMode() &&
		pg_class_aclcheck(inbox->relid, user, ACL_INSERT) == ACLCHECK_OK &&
		pg_class_aclcheck(inbox->relid, user, ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(inbox->relid, InvalidOid, true) != RLS_ENABLED;
}

/*
 * One speculative insertion of the row in slot, with arbiter as the only index
 * whose conflicts are not errors.  True if it went in; false if a concurrent
 * insertion of the same key won, and the caller must look again.  The caller
 * has locked rel.
 */
bool
speculative_insert(Relation rel, Oid arbiter, TupleTableSlot *slot)
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

static bool
insert_speculatively(InboxInfo *inbox, Datum message_id)
{
	Relation	rel = table_open(inbox->relid, NoLock);	/* locked by the lookup */
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	bool		inserted;

	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	slot->tts_values[inbox->key_attnum - 1] = message_id;
	slot->tts_isnull[inbox->key_attnum - 1] = false;
	slot->tts_values[inbox->columns[COL_CLAIMED_AT] - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	slot->tts_isnull[inbox->columns[COL_CLAIMED_AT] - 1] = false;
	ExecStoreVirtualTuple(slot);

	inserted = speculative_insert(rel, inbox->pkindex, slot);

	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, NoLock);
	return inserted;
}

/*
 * Claim one id without the executor.  Returns CLAIM_DIRECT_UNAVAILABLE when this
 * call must take the SQL path; otherwise whether the claim was written.
 */
ClaimDirectResult
claim_direct(InboxInfo *inbox, Datum message_id)
{
	if (!claim_direct_allowed(inbox))
		return CLAIM_DIRECT_UNAVAILABLE;

	for (;;)
	{
		ClaimRow	row;

		CHECK_FOR_INTERRUPTS();
		claim_row_read(inbox, message_id, false, &row);
		if (row.state == ROW_PRESENT)
			return CLAIM_DIRECT_DUPLICATE;
		if (row.state != ROW_ABSENT)
		{
			claim_row_wait(inbox, &row);
			continue;
		}
		if (insert_speculatively(inbox, message_id))
			return CLAIM_DIRECT_CLAIMED;
	}
}
