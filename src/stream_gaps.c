/*
 * stream_gaps.c
 *		claim_offset and resume_points: exactly-once for consumers that finish a
 *		partition's messages out of order.
 *
 * Consumers that process a partition in parallel finish 1, 2, 3, 5, 6, 7.  A
 * single offset (advance) could only say 3, and 5-7 would be applied again after
 * a restart.  So a partition has a watermark, every offset up to which is
 * applied, and the set of offsets completed above it, one row each in
 * completed_offsets, committed with the effect:
 *	at or below the watermark, or in the set		already applied: false
 *	otherwise										recorded: true
 * The entry's primary key decides between two transactions completing the same
 * offset, as a claim's does.  Completing the offset after the watermark moves it
 * past every entry that follows on and deletes them.  An entry "follows on" when
 * the offset delivered before it (previous, offset - 1 unless given: compaction
 * and Kafka's transaction markers leave offsets out) is at or below the
 * watermark.
 *
 * Transactions completing offsets of one partition in parallel must not wait for
 * each other, so nothing here locks the partition's row against them: moving the
 * watermark is an UPDATE whose lock only movers take, and a transaction sees
 * only the committed entries when it moves it.  An entry that follows on from
 * another transaction's uncommitted one stays until the partition's next
 * completion moves past it; readers take the watermark from partition_progress,
 * which follows the entries on from the stored offset.
 *
 * The set is bounded: a partition has at most max_completed_offsets entries
 * above its watermark, and the next one is refused with 54000.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "registry.h"
#include "spi_util.h"
#include "stats.h"
#include "stream.h"
#include "stream_gaps.h"

static int	MaxCompletedOffsets = 10000;

void
stream_gaps_init(void)
{
	DefineCustomIntVariable("idempotent_inbox.max_completed_offsets",
							"Most offsets a partition may have completed above its watermark.",
							"claim_offset refuses one more with 54000: the offset just after "
							"the watermark has to be applied first.",
							&MaxCompletedOffsets,
							10000, 1, 10000000,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * Move the stored offset up to watermark, and forget the entries it passed.  In
 * this order, as every mover does: the partition's row first, so that movers wait
 * for each other there and never for an entry another mover deletes.
 */
static void
move_watermark(FunctionCallInfo fcinfo, const StreamKey *key, bool has_stored, int64 stored,
			   bool has_watermark, int64 watermark)
{
	if (!has_watermark || (has_stored && stored >= watermark))
		return;
	stream_execute(fcinfo, STREAM_MOVE, key, Int64GetDatum(watermark), false, (Datum) 0, false);
	stream_execute(fcinfo, STREAM_FORGET_BELOW, key, Int64GetDatum(watermark), false, (Datum) 0, false);
}

/* Where partition_progress computes the watermark now, move the stored offset. */
void
stream_close_gaps(FunctionCallInfo fcinfo, const StreamKey *key)
{
	int64		stored = -1;
	int64		watermark = -1;
	bool		has_stored;
	bool		has_watermark;

	if (stream_execute(fcinfo, STREAM_PROGRESS, key, (Datum) 0, true, (Datum) 0, false) == 0)
		return;
	has_stored = stream_result_int8(1, &stored);
	has_watermark = stream_result_int8(2, &watermark);
	move_watermark(fcinfo, key, has_stored, stored, has_watermark, watermark);
}

/* Refuse an offset too far above the watermark when the set is full. */
static void
check_room(FunctionCallInfo fcinfo, const StreamKey *key, const PartitionHold *hold, int64 offset)
{
	int64		watermark = hold->has_offset ? hold->offset : -1;

	/* Fewer offsets than the limit lie between them: the set cannot be full. */
	if (offset - watermark <= MaxCompletedOffsets)
		return;
	if (stream_execute(fcinfo, STREAM_ENTRIES_COUNT, key, Int64GetDatum(watermark), false,
					   Int64GetDatum(MaxCompletedOffsets), false) < (uint64) MaxCompletedOffsets)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("partition %d of topic \"%s\" of inbox \"%s\" has %d offsets completed above its watermark",
					key->partition, text_to_cstring(key->topic), get_rel_name(key->inbox->relid),
					MaxCompletedOffsets),
			 hold->has_offset ?
			 errdetail("The stored watermark is " INT64_FORMAT "; offset " INT64_FORMAT " was not recorded.",
					   hold->offset, offset) :
			 errdetail("Nothing is applied up to a watermark yet; offset " INT64_FORMAT " was not recorded.",
					   offset),
			 errhint("Apply the offsets just after the watermark first, or raise "
					 "idempotent_inbox.max_completed_offsets.  A consumer that starts a partition "
					 "past its first offset says so with inbox.advance(inbox, topic, partition, start - 1), "
					 "or passes previous => -1 with the first offset it reads.")));
}

/*
 * Record offset above the watermark: false if it is there already.  The insert
 * can also succeed for an offset just passed: a transaction that moved the
 * watermark past it deleted its entry and committed while this one waited on
 * that entry.  What it committed says so.  Then move the watermark, if the new
 * entry (or one committed since) closes a gap.
 */
static bool
record_entry(FunctionCallInfo fcinfo, const StreamKey *key, const PartitionHold *hold,
			 int64 offset, int64 previous)
{
	int64		stored = -1;
	int64		watermark = -1;
	bool		has_stored;
	bool		has_watermark;

	check_room(fcinfo, key, hold, offset);
	if (stream_execute(fcinfo, STREAM_ENTRY_INSERT, key, Int64GetDatum(offset), false,
					   Int64GetDatum(previous), false) == 0)
		return false;
	/* The row is held by this transaction: only a superuser's own DELETE takes it. */
	if (stream_execute(fcinfo, STREAM_PROGRESS, key, (Datum) 0, true, (Datum) 0, true) == 0)
		return true;
	has_stored = stream_result_int8(1, &stored);
	has_watermark = stream_result_int8(2, &watermark);
	if (has_stored && offset <= stored)
	{
		stream_execute(fcinfo, STREAM_ENTRY_DELETE, key, Int64GetDatum(offset), false, (Datum) 0, false);
		return false;
	}
	move_watermark(fcinfo, key, has_stored, stored, has_watermark, watermark);
	return true;
}

PG_FUNCTION_INFO_V1(inbox_claim_offset);
Datum
inbox_claim_offset(PG_FUNCTION_ARGS)
{
	OffsetCall	call;
	int64		previous;
	PartitionHold hold;
	bool		fresh;

	stream_offset_call(fcinfo, &call);
	previous = call.offset - 1;
	if (!PG_ARGISNULL(5))
	{
		previous = PG_GETARG_INT64(5);
		if (previous < -1 || previous >= call.offset)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("previous must be below offset and at least -1"),
					 errdetail("The offset given is " INT64_FORMAT " and previous " INT64_FORMAT ".",
							   call.offset, previous),
					 errhint("previous is the offset delivered before this one in the partition, "
							 "or -1 if none was.")));
	}

	spi_connect();
	stream_hold(fcinfo, &call.key, call.has_generation, call.generation, &hold);
	fresh = !(hold.has_offset && call.offset <= hold.offset) &&
		record_entry(fcinfo, &call.key, &hold, call.offset, previous);
	SPI_finish();

	stats_count(call.key.inbox, fresh ? COUNT_CLAIMS : COUNT_DUPLICATES, 1);
	PG_RETURN_BOOL(fresh);
}

/*
 * Every stored partition of a topic, for a consumer given its partitions: the
 * watermark, where to seek (the next offset), the generation, and the offsets
 * completed above the watermark, which it skips (claim_offset would answer false).
 */
PG_FUNCTION_INFO_V1(inbox_resume_points);
Datum
inbox_resume_points(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, AccessShareLock, ACL_SELECT);
	StreamKey	key;
	uint64		nrows;

	stream_key_args(fcinfo, inbox, &key);
	InitMaterializedSRF(fcinfo, 0);

	spi_connect();
	nrows = stream_execute(fcinfo, STREAM_RESUME, &key, (Datum) 0, true, (Datum) 0, false);
	for (uint64 i = 0; i < nrows; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum		values[5];
		bool		nulls[5];

		values[0] = SPI_getbinval(row, desc, 1, &nulls[0]);
		values[1] = SPI_getbinval(row, desc, 2, &nulls[1]);
		/* Nothing applied from the start: where the consumer's reset policy says. */
		nulls[2] = nulls[1] || DatumGetInt64(values[1]) == PG_INT64_MAX;
		values[2] = nulls[2] ? (Datum) 0 : Int64GetDatum(DatumGetInt64(values[1]) + 1);
		values[3] = SPI_getbinval(row, desc, 3, &nulls[3]);
		values[4] = SPI_getbinval(row, desc, 4, &nulls[4]);
		/* SPI's memory goes at SPI_finish; the tuplestore copies the values now. */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}
