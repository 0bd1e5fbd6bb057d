/*
 * stream.c
 *		advance and position: exactly-once for ordered partitions (Kafka, Pulsar,
 *		Redis Streams) by storing the partition's offset with the effect.
 *
 * A consumer that applies a partition's messages in order needs no row per
 * message: the offset of the last message applied, committed in the same
 * transaction as its effect, says everything.  A redelivered message has an
 * offset at or below it.  So advance is one row per (inbox, topic, partition) in
 * the extension's positions table, moved forward by
 *	INSERT ... ON CONFLICT DO UPDATE ... WHERE stored offset < new offset
 * which, like any upsert, waits for a concurrent advance of the same partition
 * and re-checks against what it committed: each offset is applied once, and no
 * advance is lost.  advance says every offset up to the one given is applied: an
 * offset completed out of order above the stored one (stream_gaps.c) answers
 * false, and those it passes are forgotten.  With a generation, the partition is
 * held first (stream_fence.c).
 *
 * Positions belong to inboxes, so the caller's rights on the inbox decide: INSERT
 * to advance (as to claim), SELECT to read.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "inbox_info.h"
#include "direct_access.h"
#include "registry.h"
#include "spi_util.h"
#include "stats.h"
#include "stream.h"

/* Columns of positions after its key. */
#define ATT_OFFSET 4
#define ATT_ADVANCED_AT 5
#define ATT_GENERATION 6

/*
 * advance without the executor, under READ COMMITTED: the statement above, done
 * by hand, for a partition with no generation and no offsets completed above its
 * stored one (anything else takes the SQL path).  Read the partition's row with a
 * dirty snapshot; an offset at or below a committed one is already applied, with
 * nothing written or locked (offsets only grow, so that answer cannot change).
 * Otherwise update the row in place, or insert it speculatively if there is
 * none; if another transaction changed or inserted it meanwhile, wait for it and
 * decide again.  The effect is the statement's: the same rows, locks and waits.
 */
typedef enum AdvanceResult
{
	ADVANCE_UNAVAILABLE,
	ADVANCE_MOVED,
	ADVANCE_ALREADY
} AdvanceResult;

typedef struct PositionRow
{
	RowState	state;
	DirtyWait	wait;
	ItemPointerData tid;
	int64		offset;			/* -1: nothing applied yet */
	bool		fenced;			/* it has a generation */
} PositionRow;

static void
read_offset(TupleTableSlot *slot, void *arg)
{
	PositionRow *row = (PositionRow *) arg;
	bool		isnull;
	Datum		offset = slot_getattr(slot, ATT_OFFSET, &isnull);

	row->offset = isnull ? -1 : DatumGetInt64(offset);
	row->fenced = false;
	if (slot->tts_tupleDescriptor->natts >= ATT_GENERATION)
	{
		(void) slot_getattr(slot, ATT_GENERATION, &isnull);
		row->fenced = !isnull;
	}
}

/* The partition's rows in index, the primary key of positions or of completed_offsets. */
static RowState
partition_lookup(Relation rel, Relation index, StreamPlans *p, Datum *keys, PositionRow *row)
{
	ScanKeyData scankeys[POSITION_KEYS];

	for (int i = 0; i < POSITION_KEYS; i++)
	{
		ScanKeyInit(&scankeys[i], i + 1, BTEqualStrategyNumber, p->key_eq[i], keys[i]);
		scankeys[i].sk_collation = index->rd_indcollation[i];
	}
	return direct_access_dirty_lookup(rel, index, scankeys, POSITION_KEYS, &row->wait, &row->tid,
									  read_offset, row);
}

static void
position_read(Relation rel, Relation index, StreamPlans *p, Datum *keys, PositionRow *row)
{
	memset(row, 0, sizeof(PositionRow));
	row->state = partition_lookup(rel, index, p, keys, row);
}

/*
 * Has the partition offsets completed above its stored one, or is one being
 * recorded?  Then advance must look at them, which the statements do.
 */
static bool
has_completed_offsets(StreamPlans *p, Datum *keys)
{
	Relation	rel = table_open(p->completed_relid, AccessShareLock);
	Relation	index = index_open(p->completed_pkindex, AccessShareLock);
	PositionRow entry;
	RowState	state;

	memset(&entry, 0, sizeof(PositionRow));
	state = partition_lookup(rel, index, p, keys, &entry);
	index_close(index, NoLock);
	table_close(rel, NoLock);
	return state != ROW_ABSENT;
}

/* The row as it must be after advancing to offset. */
static TupleTableSlot *
position_slot(Relation rel, Datum *keys, int64 offset)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);

	ExecClearTuple(slot);
	memset(slot->tts_isnull, false, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	if (slot->tts_tupleDescriptor->natts >= ATT_GENERATION)
		slot->tts_isnull[ATT_GENERATION - 1] = true;
	for (int i = 0; i < POSITION_KEYS; i++)
		slot->tts_values[i] = keys[i];
	slot->tts_values[ATT_OFFSET - 1] = Int64GetDatum(offset);
	slot->tts_values[ATT_ADVANCED_AT - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	ExecStoreVirtualTuple(slot);
	return slot;
}

/* advance writes every column of positions. */
static const AttrNumber every_position_column[] = {1, 2, 3, ATT_OFFSET, ATT_ADVANCED_AT,
ATT_GENERATION};

static AdvanceResult
advance_direct(StreamPlans *p, Datum *keys, int64 offset)
{
	Relation	rel;
	Relation	index;
	AdvanceResult result = ADVANCE_UNAVAILABLE;

	/* The positions table is written with its owner's rights (see above). */
	if (IsolationUsesXactSnapshot() || XactReadOnly || IsInParallelMode())
		return ADVANCE_UNAVAILABLE;
	if (!p->legacy && has_completed_offsets(p, keys))
		return ADVANCE_UNAVAILABLE;

	rel = table_open(p->relid, RowExclusiveLock);
	/* As INSERT ... ON CONFLICT DO UPDATE refuses, before it looks at a row. */
	CheckCmdReplicaIdentity(rel, CMD_UPDATE);
	if (!direct_access_possible(rel, every_position_column,
								Min((int) lengthof(every_position_column), RelationGetNumberOfAttributes(rel))))
	{
		table_close(rel, NoLock);
		return ADVANCE_UNAVAILABLE;
	}
	index = index_open(p->pkindex, RowExclusiveLock);
	while (result == ADVANCE_UNAVAILABLE)
	{
		PositionRow row;
		TupleTableSlot *slot;

		CHECK_FOR_INTERRUPTS();
		/* Our own earlier advance in this statement must be visible, and final. */
		CommandCounterIncrement();
		position_read(rel, index, p, keys, &row);
		if (row.state == ROW_INSERTING || row.state == ROW_CHANGING)
		{
			direct_access_wait(rel, &row.wait, &row.tid);
			continue;
		}
		if (row.state == ROW_PRESENT && row.fenced)
			break;				/* the statements check the generation */
		if (row.state == ROW_PRESENT && row.offset >= offset)
		{
			result = ADVANCE_ALREADY;
			break;
		}
		slot = position_slot(rel, keys, offset);
		if (!direct_access_checks_pass(rel, slot))
		{
			/* The SQL path raises the error naming the constraint. */
			ExecDropSingleTupleTableSlot(slot);
			break;
		}
		if (row.state == ROW_PRESENT ? direct_access_update(rel, &row.tid, slot) :
			direct_access_speculative_insert(rel, p->pkindex, slot))
			result = ADVANCE_MOVED;
		ExecDropSingleTupleTableSlot(slot);
	}
	index_close(index, NoLock);
	table_close(rel, NoLock);
	return result;
}

/*
 * advance by the statements: hold the partition (by generation, or checking it
 * has none), then the upsert; an offset completed out of order is applied
 * already, and those the new offset passes are forgotten.
 */
static bool
advance_sql(FunctionCallInfo fcinfo, const OffsetCall *call)
{
	const StreamKey *key = &call->key;
	Datum		value = Int64GetDatum(call->offset);
	PartitionHold hold;
	bool		has_entries;
	bool		isnull;

	if (stream_plans(fcinfo)->legacy && !call->has_generation)
		return stream_execute(fcinfo, STREAM_ADVANCE, key, value, false, (Datum) 0, false) == 1;
	stream_hold(fcinfo, key, call->has_generation, call->generation, &hold);
	has_entries = stream_execute(fcinfo, STREAM_ENTRY_PEEK, key, value, false, (Datum) 0, false) == 1;
	if (has_entries && DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		return false;			/* completed out of order already */
	if (stream_execute(fcinfo, STREAM_ADVANCE, key, value, false, (Datum) 0, false) == 0)
		return false;
	/* With no entries there is nothing to forget or to close up. */
	if (has_entries)
	{
		stream_execute(fcinfo, STREAM_FORGET_BELOW, key, value, false, (Datum) 0, false);
		stream_close_gaps(fcinfo, key);
	}
	return true;
}

PG_FUNCTION_INFO_V1(inbox_advance);
Datum
inbox_advance(PG_FUNCTION_ARGS)
{
	OffsetCall	call;
	bool		advanced;
	AdvanceResult direct = ADVANCE_UNAVAILABLE;

	stream_offset_call(fcinfo, &call);
	spi_connect();				/* the plans are SPI plans, made on first use */
	if (!call.has_generation)
		direct = advance_direct(stream_plans(fcinfo), call.key.values, call.offset);
	if (direct != ADVANCE_UNAVAILABLE)
		advanced = direct == ADVANCE_MOVED;
	else
		advanced = advance_sql(fcinfo, &call);
	SPI_finish();

	stats_count(call.key.inbox, advanced ? COUNT_CLAIMS : COUNT_DUPLICATES, 1);
	PG_RETURN_BOOL(advanced);
}

/* The watermark: every offset up to it is applied; NULL if none is. */
PG_FUNCTION_INFO_V1(inbox_position);
Datum
inbox_position(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, AccessShareLock, ACL_SELECT);
	StreamKey	key;
	bool		found = false;
	int64		watermark = 0;

	stream_key_args(fcinfo, inbox, &key);
	spi_connect();
	if (stream_execute(fcinfo, STREAM_PROGRESS, &key, (Datum) 0, true, (Datum) 0, false) == 1)
		found = stream_result_int8(2, &watermark);
	SPI_finish();

	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_INT64(watermark);
}
