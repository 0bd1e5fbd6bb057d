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
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "inbox.h"

/* Column c of the row in slot; false (and nothing read) if the inbox lacks it. */
static bool
column_value(const InboxInfo *inbox, TupleTableSlot *slot, InboxColumn c, Datum *value)
{
	bool		isnull;

	if (inbox->columns[c] == InvalidAttrNumber)
		return false;
	*value = slot_getattr(slot, inbox->columns[c], &isnull);
	return !isnull;
}

/*
 * Each column is read only if the inbox has it (lease columns may be missing);
 * inbox_shape.c has checked that those present have their types.
 */
static void
copy_columns(const InboxInfo *inbox, TupleTableSlot *slot, ClaimRow *row)
{
	Datum		value;

	row->claimed_at = column_value(inbox, slot, COL_CLAIMED_AT, &value) ?
		DatumGetTimestampTz(value) : DT_NOBEGIN;
	row->fingerprint = column_value(inbox, slot, COL_FINGERPRINT, &value) ?
		DatumGetByteaPCopy(value) : NULL;
	row->result = column_value(inbox, slot, COL_RESULT, &value) ?
		DatumGetJsonbPCopy(value) : NULL;
	row->has_token = column_value(inbox, slot, COL_TOKEN, &value);
	row->token = row->has_token ? DatumGetInt64(value) : 0;
	row->leased = column_value(inbox, slot, COL_LEASE_UNTIL, &value);
	row->lease_until = row->leased ? DatumGetTimestampTz(value) : 0;
	row->holder_pid = column_value(inbox, slot, COL_HOLDER_PID, &value) ?
		DatumGetInt32(value) : 0;
	row->holder_started = column_value(inbox, slot, COL_HOLDER_STARTED, &value) ?
		DatumGetTimestampTz(value) : 0;
}

typedef struct ColumnsArg
{
	const InboxInfo *inbox;
	ClaimRow   *row;
} ColumnsArg;

static void
copy_present_columns(TupleTableSlot *slot, void *arg)
{
	ColumnsArg *c = arg;

	copy_columns(c->inbox, slot, c->row);
}

/*
 * The claim of one id, as dirty_lookup sees it.  columns: also copy the row's
 * columns, for a present row.  The caller has locked the inbox.
 */
void
claim_row_read(InboxInfo *inbox, Datum message_id, bool columns, ClaimRow *row)
{
	Relation	heap = table_open(inbox->relid, NoLock);
	Relation	index = index_open(inbox->pkindex, AccessShareLock);
	ScanKeyData key;
	ColumnsArg	arg = {inbox, row};

	memset(row, 0, sizeof(ClaimRow));
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, inbox->key_eq, message_id);
	key.sk_collation = index->rd_indcollation[0];
	row->state = dirty_lookup(heap, index, &key, 1, &row->wait, &row->tid,
							  columns ? copy_present_columns : NULL, &arg);

	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
}

/* Wait for the transaction that is inserting or changing the row, as a unique index would. */
void
claim_row_wait(InboxInfo *inbox, const ClaimRow *row)
{
	Relation	heap = table_open(inbox->relid, NoLock);
	ItemPointerData tid = row->tid;

	direct_access_wait(heap, &row->wait, &tid);
	table_close(heap, NoLock);
}

/*
 * Claims made before this instant are outside the inbox's window.  Strictly
 * before, as in the SQL guards of inbox_sql.c, so that what is decided here as
 * expired is also expired to the statement that acts on it.
 */
TimestampTz
retention_cutoff(const InboxInfo *inbox, TimestampTz now)
{
	/* A window set before it was bounded: nothing can be that old. */
	if (!retention_within_bounds(&inbox->retention))
		return DT_NOBEGIN;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												   TimestampTzGetDatum(now),
												   IntervalPGetDatum(&inbox->retention)));
}

/*
 * A window longer than this could not be subtracted from now without leaving
 * the range of timestamps; NULL is the way to keep claims forever.
 */
bool
retention_within_bounds(const Interval *retention)
{
	Interval	longest;

	memset(&longest, 0, sizeof(longest));
	longest.month = MAX_RETENTION_YEARS * MONTHS_PER_YEAR;
	return DatumGetBool(DirectFunctionCall2(interval_le,
											IntervalPGetDatum(retention),
											IntervalPGetDatum(&longest)));
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
		compat_clear_backend_snapshot();
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
