/*
 * stream_fence.c
 *		Generations: a partition belongs to the consumer with the highest
 *		generation seen, in the caller's transaction.
 *
 * A consumer that lost its partition in a rebalance (a GC pause, a network
 * split) goes on applying messages the new owner applies too.  Kafka fences
 * producers by epoch, not a consumer's writes to a database; so every call that
 * gives a generation (the group's generation id, a Redis consumer's epoch: any
 * number that grows when ownership changes) is checked against the partition's,
 * before its effect runs:
 *	older			refused, 55I02, naming the partition and both generations
 *	the same		the partition is held, FOR KEY SHARE, until commit
 *	newer			the partition is taken over: FOR UPDATE, and the generation set
 * The takeover's FOR UPDATE waits for every transaction that holds the partition
 * by an older generation, and those that come after it wait for its commit and
 * then see its generation: the newer wins once it commits, and the older either
 * committed before it or gets the error, never a silent success.  KEY SHARE
 * does not conflict with the UPDATE that moves the offset, so transactions of one
 * generation completing offsets in parallel do not wait for each other.
 *
 * Once a partition has a generation, a call without one is refused too: mixing
 * fenced and unfenced writers would let the unfenced zombie through.
 */
#include "postgres.h"
#include "access/xact.h"
#include "tcop/utility.h"

#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "registry.h"
#include "spi_util.h"
#include "stream.h"

typedef struct StoredPartition
{
	bool		has_offset;
	int64		offset;
	bool		has_generation;
	int64		generation;
} StoredPartition;

/* Read the partition's row with statement: false if there is none. */
static bool
read_partition(FunctionCallInfo fcinfo, StreamStatement statement, const StreamKey *key,
			   StoredPartition *row)
{
	if (stream_execute(fcinfo, statement, key, (Datum) 0, true, (Datum) 0, true) == 0)
		return false;
	row->has_offset = stream_result_int8(1, &row->offset);
	row->has_generation = stream_result_int8(2, &row->generation);
	return true;
}

pg_noreturn static void
report_fenced(const StreamKey *key, const StoredPartition *row, bool has_generation,
			  int64 generation)
{
	ereport(ERROR,
			(errcode(ERRCODE_STALE_GENERATION),
			 errmsg("partition %d of topic \"%s\" of inbox \"%s\" belongs to generation " INT64_FORMAT,
					key->partition, text_to_cstring(key->topic),
					get_rel_name(key->inbox->relid), row->generation),
			 has_generation ?
			 errdetail("The caller's generation is " INT64_FORMAT ".", generation) :
			 errdetail("The caller gave no generation."),
			 errhint("A consumer of an older generation lost the partition in a rebalance: "
					 "roll back, and process the partition again only once it is assigned again.")));
}

static bool
refused(const StoredPartition *row, bool has_generation, int64 generation)
{
	if (!row->has_generation)
		return false;
	return !has_generation || generation < row->generation;
}

static bool
takes_over(const StoredPartition *row, bool has_generation, int64 generation)
{
	return has_generation && (!row->has_generation || generation > row->generation);
}

/*
 * Hold the partition for this transaction by generation (if has_generation),
 * creating its row if it has none; refused before anything is written when a
 * newer generation has it.  The row is read as committed now, under REPEATABLE
 * READ too: a takeover committed after the caller's snapshot refuses it all the
 * same.
 */
void
stream_hold(FunctionCallInfo fcinfo, const StreamKey *key, bool has_generation,
			int64 generation, PartitionHold *hold)
{
	Datum		gen = Int64GetDatum(generation);
	StoredPartition row;

	/*
	 * Refused as a write, naming the function, rather than by the row lock the
	 * first statement takes (on a hot standby too).
	 */
	if (XactReadOnly)
		PreventCommandIfReadOnly(psprintf("inbox.%s()", get_func_name(fcinfo->flinfo->fn_oid)));

	memset(hold, 0, sizeof(PartitionHold));
	for (int attempt = 0;; attempt++)
	{
		bool		takeover;

		if (attempt >= CLAIM_MAX_RETRIES)
			elog(ERROR, "partition %d of topic \"%s\" keeps changing", key->partition,
				 text_to_cstring(key->topic));
		/* Without a generation there is nothing to take over: lock at once. */
		if (!read_partition(fcinfo, has_generation ? STREAM_READ : STREAM_LOCK_SHARE, key, &row))
		{
			/* The new row is ours until commit, and fenced by our generation. */
			if (stream_execute(fcinfo, STREAM_ENSURE, key, gen, !has_generation, (Datum) 0, false) == 1)
			{
				hold->took_over = has_generation;
				return;
			}
			continue;			/* another transaction's row, committed meanwhile */
		}
		if (refused(&row, has_generation, generation))
			report_fenced(key, &row, has_generation, generation);
		takeover = takes_over(&row, has_generation, generation);
		if (has_generation &&
			!read_partition(fcinfo, takeover ? STREAM_LOCK_TAKEOVER : STREAM_LOCK_SHARE, key, &row))
			continue;
		/* What the lock found is what counts: another takeover may have come first. */
		if (refused(&row, has_generation, generation))
			report_fenced(key, &row, has_generation, generation);
		if (takes_over(&row, has_generation, generation))
		{
			if (!takeover)
				continue;		/* only share-locked: lock it for the takeover */
			stream_execute(fcinfo, STREAM_SET_GENERATION, key, gen, false, (Datum) 0, false);
			hold->took_over = true;
		}
		hold->has_offset = row.has_offset;
		hold->offset = row.offset;
		return;
	}
}

PG_FUNCTION_INFO_V1(inbox_fence);
Datum
inbox_fence(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, AccessShareLock, ACL_INSERT);
	StreamKey	key;
	int64		generation;
	PartitionHold hold;

	stream_key_args(fcinfo, inbox, &key);
	if (!stream_generation_arg(fcinfo, 3, &generation))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("generation must not be null")));
	spi_connect();
	stream_hold(fcinfo, &key, true, generation, &hold);
	SPI_finish();
	PG_RETURN_BOOL(hold.took_over);
}
