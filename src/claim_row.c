/*
 * claim_row.c
 *		Read the claim of one id as it is now, including what other transactions
 *		are doing to it, and the two questions asked of it: has it expired, and is
 *		its lease still held?
 *
 * Claims, leases and purges decide from this read and then write with a statement
 * whose WHERE clause repeats the condition they decided on (see inbox_sql.c).  If
 * another transaction got there first, the statement touches no row and the
 * caller reads again: a decision is never acted on unless it still holds.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "catalog/pg_collation.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "inbox_info.h"
#include "claim_row.h"
#include "citus_tables.h"
#include "direct_access.h"
#include "inbox_sql.h"
#include "message_id.h"
#include "retention.h"
#include "spi_util.h"

/*
 * Column c of the row in slot, at attnums[c]; false (and nothing read) if the
 * row lacks it.
 */
static bool
column_value(const AttrNumber *attnums, TupleTableSlot *slot, InboxColumn c, Datum *value)
{
	bool		isnull;

	if (attnums[c] == InvalidAttrNumber)
		return false;
	*value = slot_getattr(slot, attnums[c], &isnull);
	return !isnull;
}

/*
 * Each column is read only if the inbox has it (lease columns may be missing);
 * inbox_shape.c has checked that those present have their types.
 */
static void
copy_columns(const AttrNumber *attnums, TupleTableSlot *slot, ClaimRow *row)
{
	Datum		value;

	row->claimed_at = column_value(attnums, slot, COL_CLAIMED_AT, &value) ?
		DatumGetTimestampTz(value) : DT_NOBEGIN;
	row->fingerprint = column_value(attnums, slot, COL_FINGERPRINT, &value) ?
		DatumGetByteaPCopy(value) : NULL;
	row->result = column_value(attnums, slot, COL_RESULT, &value) ?
		DatumGetJsonbPCopy(value) : NULL;
	row->has_token = column_value(attnums, slot, COL_TOKEN, &value);
	row->token = row->has_token ? DatumGetInt64(value) : 0;
	row->leased = column_value(attnums, slot, COL_LEASE_UNTIL, &value);
	row->lease_until = row->leased ? DatumGetTimestampTz(value) : 0;
	row->holder_pid = column_value(attnums, slot, COL_HOLDER_PID, &value) ?
		DatumGetInt32(value) : 0;
	row->holder_started = column_value(attnums, slot, COL_HOLDER_STARTED, &value) ?
		DatumGetTimestampTz(value) : 0;
}

typedef struct ColumnsArg
{
	const AttrNumber *columns;	/* attnums in the relation read, by InboxColumn */
	ClaimRow   *row;
} ColumnsArg;

static void
copy_present_columns(TupleTableSlot *slot, void *arg)
{
	ColumnsArg *c = arg;

	copy_columns(c->columns, slot, c->row);
}

/* What claim_row_quarantined needs of a present row, and nothing else. */
static void
copy_quarantine_columns(TupleTableSlot *slot, void *arg)
{
	ColumnsArg *c = arg;
	Datum		value;

	c->row->claimed_at = column_value(c->columns, slot, COL_CLAIMED_AT, &value) ?
		DatumGetTimestampTz(value) : DT_NOBEGIN;
	c->row->leased = column_value(c->columns, slot, COL_LEASE_UNTIL, &value);
}

/*
 * The claim of a Citus table, read by a statement that Citus sends to the shard
 * holding it: a snapshot sees no other transaction's uncommitted claim, so the
 * row is absent or present, and a caller that then writes waits for such a claim
 * in its INSERT, as claim() does.  SPI is connected here, and what is copied
 * goes to the caller's memory context.
 */
static void
claim_row_select(InboxInfo *inbox, Datum message_id, const Datum *shard, ClaimRow *row)
{
	MemoryContext caller = CurrentMemoryContext;
	Datum		value = message_id;

	memset(row, 0, sizeof(ClaimRow));
	spi_connect();
	row->state = inbox_sql_execute_key(inbox, SQL_ROW, shard, &value, NULL) == 1 ?
		ROW_PRESENT : ROW_ABSENT;
	if (row->state == ROW_PRESENT)
	{
		HeapTuple	tuple = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext spi = MemoryContextSwitchTo(caller);
		TupleTableSlot *slot = MakeSingleTupleTableSlot(desc, &TTSOpsHeapTuple);
		AttrNumber	in_order[INBOX_NUM_COLUMNS];

		/* The statement returns the columns in InboxColumn order. */
		for (int c = 0; c < INBOX_NUM_COLUMNS; c++)
			in_order[c] = c + 1;
		ExecStoreHeapTuple(tuple, slot, false);
		copy_columns(in_order, slot, row);
		ExecDropSingleTupleTableSlot(slot);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
}

/*
 * The attnum in shard of the table's column attnum, of the same type and typmod;
 * otherwise 0, with *same cleared.
 */
static AttrNumber
same_column(Relation table, Relation shard, AttrNumber attnum, bool *same)
{
	Form_pg_attribute tatt = TupleDescAttr(RelationGetDescr(table), attnum - 1);
	AttrNumber	satt = get_attnum(RelationGetRelid(shard), NameStr(tatt->attname));

	*same = satt > 0 &&
		TupleDescAttr(RelationGetDescr(shard), satt - 1)->atttypid == tatt->atttypid &&
		TupleDescAttr(RelationGetDescr(shard), satt - 1)->atttypmod == tatt->atttypmod;
	return *same ? satt : InvalidAttrNumber;
}

/*
 * Does shard, a shard of the inbox's table on this node, look as the table does
 * where the direct read relies on it: the same types under the same names, and a
 * primary key on the same columns with the same operator classes and collations?
 * The owner may alter a shard on its worker directly; then the claim is read by
 * a statement instead, which needs nothing of the kind.  Sets columns[] to the
 * shard's attnums (a shard is made without the table's dropped columns).
 */
static bool
shard_matches(const InboxInfo *inbox, Relation shard, AttrNumber *columns)
{
	Relation	table = table_open(inbox->relid, NoLock);
	AttrNumber	pk[2];			/* the primary key's columns in the table, then the shard */
	int			npk = 0;
	Oid			pkindex = compat_immediate_primary_key(shard);
	bool		same = OidIsValid(pkindex);

	if (inbox->shard_attnum != InvalidAttrNumber)
		pk[npk++] = inbox->shard_attnum;
	pk[npk++] = inbox->key_attnum;

	for (int c = 0; c < INBOX_NUM_COLUMNS && same; c++)
		columns[c] = inbox->columns[c] == InvalidAttrNumber ? InvalidAttrNumber :
			same_column(table, shard, inbox->columns[c], &same);
	for (int i = 0; i < npk && same; i++)
		pk[i] = same_column(table, shard, pk[i], &same);
	if (same)
	{
		Relation	tindex = index_open(inbox->pkindex, AccessShareLock);
		Relation	sindex = index_open(pkindex, AccessShareLock);

		same = sindex->rd_index->indnkeyatts == npk && tindex->rd_index->indnkeyatts == npk;
		for (int i = 0; i < npk && same; i++)
			same = sindex->rd_index->indkey.values[i] == pk[i] &&
				sindex->rd_opfamily[i] == tindex->rd_opfamily[i] &&
				sindex->rd_indcollation[i] == tindex->rd_indcollation[i];
		index_close(sindex, AccessShareLock);
		index_close(tindex, AccessShareLock);
	}
	table_close(table, NoLock);
	return same;
}

/*
 * Where a Citus table's claim of the id is read directly: its shard, when this
 * node holds it (in a function Citus delegated here) and it looks as the table
 * does (shard_matches, which sets columns[]); else InvalidOid.
 */
static Oid
local_shard(InboxInfo *inbox, Datum message_id, const Datum *shard, AttrNumber *columns)
{
	Oid			relid;
	Relation	rel;
	bool		same;

	if (!inbox->citus_column_known)
	{
		char	   *column = citus_distribution_column(inbox->relid);

		/* A name not found (-1) matches no column: the claim is then read by a statement. */
		inbox->citus_column = column == NULL ? InvalidAttrNumber :
			get_attnum(inbox->relid, column) > 0 ? get_attnum(inbox->relid, column) : -1;
		inbox->citus_column_known = true;
	}
	if (inbox->citus_column == InvalidAttrNumber)
		relid = citus_local_shard(inbox->relid, (Datum) 0, InvalidOid, true);
	else if (shard != NULL && inbox->citus_column == inbox->shard_attnum)
		relid = citus_local_shard(inbox->relid, *shard, inbox->shard_type, false);
	else if (inbox->citus_column == inbox->key_attnum)
		relid = citus_local_shard(inbox->relid, message_id, inbox->keytype, false);
	else
		return InvalidOid;
	if (!OidIsValid(relid))
		return InvalidOid;
	/* Locked as Citus's own read of it would: the inbox is locked already. */
	rel = try_table_open(relid, AccessShareLock);
	if (rel == NULL)
		return InvalidOid;
	same = rel->rd_rel->relkind == RELKIND_RELATION && shard_matches(inbox, rel, columns);
	table_close(rel, NoLock);
	return same ? relid : InvalidOid;
}

/*
 * The claim of one id, as direct_access_dirty_lookup sees it: in the inbox, or
 * in the shard of a Citus table that this node holds, by (shard key, message id)
 * for an inbox with a shard key; a Citus table's claim held elsewhere is read by
 * a statement (claim_row_select).  copy: also copy the row's columns, for a
 * present row.  The caller has locked the inbox.
 */
static void
claim_row_lookup(InboxInfo *inbox, Datum message_id, const Datum *shard,
				 void (*copy) (TupleTableSlot *, void *), ClaimRow *row)
{
	Oid			relid = inbox->relid;
	Oid			pkindex = inbox->pkindex;
	AttrNumber	shard_columns[INBOX_NUM_COLUMNS];
	Relation	heap;
	Relation	index;
	ScanKeyData keys[2];
	int			nkeys = 0;
	ColumnsArg	arg = {inbox->columns, row};

	if ((shard != NULL) != (inbox->shard_attnum != InvalidAttrNumber))
		elog(ERROR, "a claim of inbox \"%s\" read %s a shard key", get_rel_name(inbox->relid),
			 shard ? "with" : "without");
	if (inbox->distributed)
	{
		relid = local_shard(inbox, message_id, shard, shard_columns);
		if (!OidIsValid(relid))
		{
			claim_row_select(inbox, message_id, shard, row);
			return;
		}
		arg.columns = shard_columns;
	}

	/* Both locked by now: the inbox by the caller, a shard by local_shard. */
	heap = table_open(relid, NoLock);
	if (relid != inbox->relid)
		pkindex = compat_immediate_primary_key(heap);
	index = index_open(pkindex, AccessShareLock);
	memset(row, 0, sizeof(ClaimRow));
	row->relid = relid;
	/* The primary key of a sharded inbox is (shard key, message_id). */
	if (shard != NULL)
	{
		ScanKeyInit(&keys[nkeys], nkeys + 1, BTEqualStrategyNumber, inbox->shard_eq, *shard);
		keys[nkeys].sk_collation = index->rd_indcollation[nkeys];
		nkeys++;
	}
	ScanKeyInit(&keys[nkeys], nkeys + 1, BTEqualStrategyNumber, inbox->key_eq, message_id);
	keys[nkeys].sk_collation = index->rd_indcollation[nkeys];
	nkeys++;
	row->state = direct_access_dirty_lookup(heap, index, keys, nkeys, &row->wait, &row->tid,
											copy, &arg);

	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
}

void
claim_row_read(InboxInfo *inbox, Datum message_id, bool columns, ClaimRow *row)
{
	claim_row_lookup(inbox, message_id, NULL, columns ? copy_present_columns : NULL, row);
}

/* claim_row_read of a claim of any inbox: shard is its shard key value, or NULL. */
void
claim_row_read_key(InboxInfo *inbox, Datum message_id, const Datum *shard, bool columns,
				   ClaimRow *row)
{
	claim_row_lookup(inbox, message_id, shard, columns ? copy_present_columns : NULL, row);
}

/*
 * claim_row_read for a claim's look: of a present row only claimed_at and
 * whether it is leased, enough for claim_row_quarantined.
 */
void
claim_row_read_for_claim(InboxInfo *inbox, Datum message_id, ClaimRow *row)
{
	claim_row_lookup(inbox, message_id, NULL, copy_quarantine_columns, row);
}

/* Wait for the transaction that is inserting or changing the row, as a unique index would. */
void
claim_row_wait(InboxInfo *inbox, const ClaimRow *row)
{
	Relation	heap = table_open(OidIsValid(row->relid) ? row->relid : inbox->relid, NoLock);
	ItemPointerData tid = row->tid;

	direct_access_wait(heap, &row->wait, &tid);
	table_close(heap, NoLock);
}

/*
 * Is the holder of a session-bound lease still connected?  The backend is known
 * by pid and start time together, so a new backend that reuses the pid does not
 * keep a dead holder's lease alive.
 */
static bool
holder_alive(int32 pid, TimestampTz started)
{
	int			n = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = compat_local_beentry(i);

		if (local != NULL &&
			local->backendStatus.st_procpid == pid &&
			local->backendStatus.st_proc_start_timestamp == started)
			return true;
	}
	return false;
}

bool
claim_row_lease_live(const ClaimRow *row, TimestampTz now)
{
	if (!row->leased || row->lease_until <= now)
		return false;
	if (row->holder_pid != 0)
	{
		/* Our own snapshot of backend status may be older than this transaction. */
		pgstat_clear_backend_activity_snapshot();
		return holder_alive(row->holder_pid, row->holder_started);
	}
	return true;
}

/*
 * An expired claim counts as absent: it is older than the inbox's retention and
 * no lease on it is still running (a lease outlives the window it started in).
 */
bool
claim_row_expired(const InboxInfo *inbox, const ClaimRow *row, TimestampTz now)
{
	if (!inbox->has_retention || row->claimed_at >= retention_cutoff(inbox, now))
		return false;
	return !row->leased || row->lease_until <= now;
}

/*
 * A quarantined message's claim (failures.c): claimed at 'infinity', so that
 * every claim path, the windows and purge already treat it as held for good.
 */
bool
claim_row_quarantined(const ClaimRow *row)
{
	return row->state == ROW_PRESENT && TIMESTAMP_IS_NOEND(row->claimed_at) && !row->leased;
}

/*
 * A claim's INSERT ran through SQL and touched stored rows (0 or 1): did it
 * store this id (under this shard key, for a sharded inbox)?  A BEFORE INSERT trigger on the inbox may skip the row
 * (returning NULL) or change its id; either would make a fresh message look
 * like a duplicate, or claim another id, so both are errors.  With no such
 * trigger, no row means a conflict, as ON CONFLICT DO NOTHING says.
 */
bool
claim_row_stored(InboxInfo *inbox, Datum message_id, const Datum *shard, uint64 stored)
{
	ClaimRow	row;

	if (!inbox->insert_triggers)
		return stored == 1;
	if (stored == 1)
	{
		claim_row_check_written(inbox, message_id);
		if (shard)
			claim_row_check_shard(inbox, SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
								  message_id, *shard);
		return true;
	}
	claim_row_read_key(inbox, message_id, shard, false, &row);
	if (row.state == ROW_ABSENT)
		claim_row_suppressed(inbox, message_id);
	return false;
}

/*
 * The claim's INSERT returned the id it stored (in SPI_tuptable): the one it was
 * made for, unless a BEFORE INSERT trigger changed it.
 */
void
claim_row_check_written(InboxInfo *inbox, Datum message_id)
{
	bool		isnull;
	Datum		written;

	if (!inbox->insert_triggers)
		return;
	written = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull || !DatumGetBool(OidFunctionCall2Coll(inbox->key_eq, DEFAULT_COLLATION_OID,
													 written, message_id)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a trigger on inbox \"%s\" changed the id of the claim of \"%s\"",
						get_rel_name(inbox->relid), message_id_to_cstring(inbox, message_id)),
				 errdetail("A claim must be stored under the id it was made for."),
				 errhint("Make BEFORE INSERT triggers on the inbox leave message_id alone.")));
}

/*
 * A claim statement of a sharded inbox returned (message_id, shard key) of a row
 * it wrote: the shard key must be the one given.  A BEFORE INSERT trigger (or a
 * BEFORE UPDATE one, when an expired claim is renewed) may have changed it, and
 * the claim would then be answered fresh for a (shard key, id) it does not hold,
 * and hold one nobody claimed.
 */
void
claim_row_check_shard(InboxInfo *inbox, HeapTuple row, TupleDesc desc, Datum message_id,
						 Datum shard_key)
{
	bool		isnull;
	Datum		written = SPI_getbinval(row, desc, 2, &isnull);

	if (isnull || !DatumGetBool(OidFunctionCall2Coll(inbox->shard_eq, inbox->shard_collation,
													 written, shard_key)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a trigger on inbox \"%s\" changed the shard key of the claim of \"%s\"",
						get_rel_name(inbox->relid), message_id_to_cstring(inbox, message_id)),
				 errdetail("A claim must be stored under the shard key value it was made for."),
				 errhint("Make BEFORE INSERT and BEFORE UPDATE triggers on the inbox leave %s alone.",
						 inbox->shard_column)));
}

/* The claim's INSERT (or UPDATE) changed no row, yet nothing holds the id. */
void
claim_row_suppressed(InboxInfo *inbox, Datum message_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the claim of \"%s\" was not stored in inbox \"%s\"",
					message_id_to_cstring(inbox, message_id), get_rel_name(inbox->relid)),
			 errdetail("The statement that writes the claim changed no row, and no other transaction holds the id: a trigger on the inbox skipped it."),
			 errhint("Make triggers on the inbox return NEW for claims.")));
}

/*
 * Loops that read a claim, decide and write only if the decision still holds
 * retry when another transaction got there first, and each such retry follows
 * a wait or a concurrent change.  A write that a trigger silently skips would
 * make them retry forever: after CLAIM_MAX_RETRIES, they give up.
 */
void
claim_row_retry(InboxInfo *inbox, Datum message_id, int *retries)
{
	CHECK_FOR_INTERRUPTS();
	if (++(*retries) > CLAIM_MAX_RETRIES)
		claim_row_suppressed(inbox, message_id);
}
