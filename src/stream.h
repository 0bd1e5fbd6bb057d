/*
 * stream.h
 *		Partition positions (stream.c, stream_fence.c, stream_gaps.c): the
 *		statements on the extension's positions and completed_offsets tables, run
 *		with their owner's rights, and the partition a call names.
 */
#ifndef INBOX_STREAM_H
#define INBOX_STREAM_H

#include "inbox_info.h"

/* A consumer of a fenced partition that lost it in a rebalance. */
#define ERRCODE_STALE_GENERATION		MAKE_SQLSTATE('5','5','I','0','2')

/* Key columns of positions, in the order of its primary key. */
#define POSITION_KEYS 3

typedef enum StreamStatement
{
	STREAM_ADVANCE,				/* the cumulative upsert of a partition's offset */
	STREAM_READ,				/* its offset and generation */
	STREAM_LOCK_SHARE,			/* the same, held against a takeover */
	STREAM_LOCK_TAKEOVER,		/* the same, held against everyone */
	STREAM_ENSURE,				/* a row for the partition, with no offset yet */
	STREAM_SET_GENERATION,
	STREAM_PROGRESS,			/* stored offset and watermark */
	STREAM_ENTRY_INSERT,		/* one offset completed above the watermark */
	STREAM_ENTRY_PEEK,			/* is the offset an entry, or is any? */
	STREAM_ENTRY_DELETE,
	STREAM_ENTRIES_COUNT,		/* entries above $4, counted up to $5 */
	STREAM_MOVE,				/* the stored offset up to $4 */
	STREAM_FORGET_BELOW,		/* the entries at or below $4 */
	STREAM_LEGACY_PROGRESS,		/* STREAM_PROGRESS on the tables of 0.2 */
	STREAM_RESUME,				/* every partition of a topic */
	STREAM_NUM_STATEMENTS
} StreamStatement;

typedef struct StreamPlans
{
	Oid			relid;			/* positions, which the plans were made for */
	Oid			owner;
	Oid			pkindex;
	Oid			completed_relid;
	Oid			completed_pkindex;
	bool		legacy;			/* the tables of 0.2: no generation, no entries */
	RegProcedure key_eq[POSITION_KEYS]; /* equality of each key column, for probes */
	SPIPlanPtr	plans[STREAM_NUM_STATEMENTS];
} StreamPlans;

/* The partition a call names: $1, $2 and $3 of every statement. */
typedef struct StreamKey
{
	InboxInfo  *inbox;
	text	   *topic;
	int32		partition;
	Datum		values[POSITION_KEYS];
} StreamKey;

/* advance's and claim_offset's first arguments: the partition, an offset, a generation. */
typedef struct OffsetCall
{
	StreamKey	key;
	int64		offset;
	bool		has_generation;
	int64		generation;
} OffsetCall;

/* What the calling transaction holds of a partition (stream_hold). */
typedef struct PartitionHold
{
	bool		has_offset;		/* the stored offset: none before anything applied */
	int64		offset;
	bool		took_over;		/* this call raised the generation */
} PartitionHold;

extern StreamPlans *stream_plans(FunctionCallInfo fcinfo);
extern void stream_key_args(FunctionCallInfo fcinfo, InboxInfo *inbox, StreamKey *key);
extern int64 stream_counter_arg(FunctionCallInfo fcinfo, int argno, const char *name);
extern bool stream_generation_arg(FunctionCallInfo fcinfo, int argno, int64 *generation);
extern void stream_offset_call(FunctionCallInfo fcinfo, OffsetCall *call);
extern uint64 stream_execute(FunctionCallInfo fcinfo, StreamStatement statement,
							 const StreamKey *key, Datum arg4, bool arg4_null,
							 Datum arg5, bool latest);
extern bool stream_result_int8(int column, int64 *value);

extern void stream_hold(FunctionCallInfo fcinfo, const StreamKey *key, bool has_generation,
						int64 generation, PartitionHold *hold);
extern void stream_close_gaps(FunctionCallInfo fcinfo, const StreamKey *key);

#endif							/* INBOX_STREAM_H */
