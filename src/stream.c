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
 * advance is lost.
 *
 * Positions belong to inboxes, so the caller's rights on the inbox decide: INSERT
 * to advance (as to claim), SELECT to read.  The positions table itself is the
 * extension's and is written with its owner's rights, by the two statements below
 * only.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "inbox.h"
#include "direct_access.h"
#include "registry.h"
#include "relcache_callbacks.h"
#include "retired.h"
#include "spi_util.h"
#include "stats.h"

/* Topic names are short (Kafka allows 249 characters); bound them like ids. */
#define MAX_TOPIC_BYTES INBOX_MAX_ID_BYTES

/* Key columns of positions, in the order of its primary key. */
#define POSITION_KEYS 3
#define ATT_OFFSET 4
#define ATT_ADVANCED_AT 5

typedef struct PositionPlans
{
	Oid			relid;			/* the positions table the plans were made for */
	Oid			owner;
	Oid			pkindex;
	RegProcedure key_eq[POSITION_KEYS]; /* equality of each key column, for probes */
	SPIPlanPtr	advance;
	SPIPlanPtr	read;
} PositionPlans;

static PositionPlans plans;

/*
 * The plans name the table, and the owner runs them: remade when the table
 * changes (a new owner), and when a schema is renamed (the name they were
 * written with could now mean another table).
 */
static bool PlansStale = false;
static bool PlansCallbacks = false;

static void
position_plans_invalidate(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == plans.relid)
		PlansStale = true;
}

static void
position_plans_invalidate_names(Datum arg, int cacheid, uint32 hashvalue)
{
	PlansStale = true;
}

/* The primary key of positions and its equality procedures, for index probes. */
static void
position_keys(Oid relid, PositionPlans *p)
{
	Relation	rel = table_open(relid, AccessShareLock);
	Relation	index;

	p->pkindex = compat_immediate_primary_key(rel);
	if (!OidIsValid(p->pkindex))
		elog(ERROR, "the positions table of idempotent_inbox has no primary key");
	index = index_open(p->pkindex, AccessShareLock);
	if (index->rd_index->indnkeyatts != POSITION_KEYS)
		elog(ERROR, "the primary key of positions has %d columns", index->rd_index->indnkeyatts);
	for (int i = 0; i < POSITION_KEYS; i++)
	{
		Oid			eqop = get_opfamily_member(index->rd_opfamily[i], index->rd_opcintype[i],
											   index->rd_opcintype[i], BTEqualStrategyNumber);

		if (!OidIsValid(eqop))
			elog(ERROR, "no equality operator in operator family %u", index->rd_opfamily[i]);
		p->key_eq[i] = get_opcode(eqop);
	}
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/*
 * The plans for the positions table as it is now: after DROP and CREATE
 * EXTENSION it is another table, and the kept plans are remade.
 */
static PositionPlans *
position_plans(FunctionCallInfo fcinfo)
{
	Oid			nspid = registry_extension_namespace(fcinfo);
	Oid			relid = registry_extension_relation(fcinfo, "positions");
	char	   *table;
	HeapTuple	tuple;
	Oid			argtypes[4] = {REGCLASSOID, TEXTOID, INT4OID, INT8OID};

	if (!PlansCallbacks)
	{
		relcache_callback_register(position_plans_invalidate);
		CacheRegisterSyscacheCallback(NAMESPACEOID, position_plans_invalidate_names, (Datum) 0);
		PlansCallbacks = true;
	}
	if (relid == plans.relid && !PlansStale)
		return &plans;
	PlansStale = false;

	/* An outer call may still be running them (retired.c). */
	retired_add_plan(plans.advance);
	retired_add_plan(plans.read);
	plans.advance = plans.read = NULL;
	plans.relid = InvalidOid;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	plans.owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	position_keys(relid, &plans);

	table = quote_qualified_identifier(get_namespace_name(nspid), "positions");
	plans.advance = spi_prepare_kept(
		psprintf("INSERT INTO %s AS p (inbox, topic, \"partition\", \"offset\") "
				 "VALUES ($1, $2, $3, $4) "
				 "ON CONFLICT (inbox, topic, \"partition\") DO UPDATE "
				 "SET \"offset\" = excluded.\"offset\", advanced_at = excluded.advanced_at "
				 "WHERE p.\"offset\" OPERATOR(pg_catalog.<) excluded.\"offset\"", table),
		4, argtypes);
	plans.read = spi_prepare_kept(
		psprintf("SELECT \"offset\" FROM %s WHERE inbox OPERATOR(pg_catalog.=) $1 "
				 "AND topic OPERATOR(pg_catalog.=) $2 "
				 "AND \"partition\" OPERATOR(pg_catalog.=) $3", table),
		3, argtypes);
	plans.relid = relid;
	return &plans;
}

static text *
topic_arg(FunctionCallInfo fcinfo)
{
	text	   *topic;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("topic must not be null")));
	topic = PG_GETARG_TEXT_PP(1);
	if (VARSIZE_ANY_EXHDR(topic) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("topic must not be empty")));
	if (VARSIZE_ANY_EXHDR(topic) > MAX_TOPIC_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
				 errmsg("topic is too long"),
				 errdetail("The topic is %d bytes; the limit is %d.",
						   (int) VARSIZE_ANY_EXHDR(topic), MAX_TOPIC_BYTES)));
	return topic;
}

/* Partitions and offsets count from 0, as every broker numbers them. */
static int64
counter_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	int64		value;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	value = argno == 2 ? PG_GETARG_INT32(argno) : PG_GETARG_INT64(argno);
	if (value < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be negative", name),
				 errdetail("The %s given is " INT64_FORMAT ".", name, value)));
	return value;
}

/* Run a position statement with the owner's rights; returns the rows it touched. */
static uint64
execute_as_owner(FunctionCallInfo fcinfo, bool advance, Datum *values)
{
	PositionPlans *p = position_plans(fcinfo);
	SPIPlanPtr	plan = advance ? p->advance : p->read;
	Oid			save_userid;
	int			save_sec_context;
	int			rc;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(p->owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	rc = SPI_execute_plan(plan, values, NULL, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (rc < 0)
		elog(ERROR, "SPI_execute_plan returned %s", SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * advance without the executor, under READ COMMITTED: the statement above, done
 * by hand.  Read the partition's row with a dirty snapshot; an offset at or below
 * a committed one is already applied, with nothing written or locked (offsets
 * only grow, so that answer cannot change).  Otherwise update the row in place,
 * or insert it speculatively if there is none; if another transaction changed or
 * inserted it meanwhile, wait for it and decide again.  The effect is the
 * statement's: the same rows, locks and waits.
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
	int64		offset;
} PositionRow;

static void
read_offset(TupleTableSlot *slot, void *arg)
{
	bool		isnull;

	*(int64 *) arg = DatumGetInt64(slot_getattr(slot, ATT_OFFSET, &isnull));
}

static void
position_read(Relation rel, Relation index, PositionPlans *p, Datum *keys, PositionRow *row)
{
	ScanKeyData scankeys[POSITION_KEYS];

	memset(row, 0, sizeof(PositionRow));
	for (int i = 0; i < POSITION_KEYS; i++)
	{
		ScanKeyInit(&scankeys[i], i + 1, BTEqualStrategyNumber, p->key_eq[i], keys[i]);
		scankeys[i].sk_collation = index->rd_indcollation[i];
	}
	row->state = direct_access_dirty_lookup(rel, index, scankeys, POSITION_KEYS, &row->wait, &row->tid,
											read_offset, &row->offset);
}

/* The row as it must be after advancing to offset. */
static TupleTableSlot *
position_slot(Relation rel, Datum *keys, int64 offset)
{
	TupleTableSlot *slot = table_slot_create(rel, NULL);

	ExecClearTuple(slot);
	memset(slot->tts_isnull, false, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	for (int i = 0; i < POSITION_KEYS; i++)
		slot->tts_values[i] = keys[i];
	slot->tts_values[ATT_OFFSET - 1] = Int64GetDatum(offset);
	slot->tts_values[ATT_ADVANCED_AT - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	ExecStoreVirtualTuple(slot);
	return slot;
}

/* advance writes every column of positions. */
static const AttrNumber every_position_column[] = {1, 2, 3, ATT_OFFSET, ATT_ADVANCED_AT};

static AdvanceResult
advance_direct(PositionPlans *p, Datum *keys, int64 offset)
{
	Relation	rel;
	Relation	index;
	AdvanceResult result = ADVANCE_UNAVAILABLE;

	/* The positions table is written with its owner's rights (see above). */
	if (IsolationUsesXactSnapshot() || XactReadOnly || IsInParallelMode())
		return ADVANCE_UNAVAILABLE;

	rel = table_open(p->relid, RowExclusiveLock);
	/* As INSERT ... ON CONFLICT DO UPDATE refuses, before it looks at a row. */
	CheckCmdReplicaIdentity(rel, CMD_UPDATE);
	if (!direct_access_possible(rel, every_position_column, lengthof(every_position_column)))
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

PG_FUNCTION_INFO_V1(inbox_advance);
Datum
inbox_advance(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, AccessShareLock, ACL_INSERT);
	text	   *topic = topic_arg(fcinfo);
	int32		partition = (int32) counter_arg(fcinfo, 2, "partition");
	int64		offset = counter_arg(fcinfo, 3, "offset");
	Datum		values[4] = {ObjectIdGetDatum(inbox->relid), PointerGetDatum(topic),
							 Int32GetDatum(partition), Int64GetDatum(offset)};
	bool		advanced;

	AdvanceResult direct;

	spi_connect();				/* the plans are SPI plans, made on first use */
	direct = advance_direct(position_plans(fcinfo), values, offset);
	if (direct != ADVANCE_UNAVAILABLE)
		advanced = direct == ADVANCE_MOVED;
	else
		advanced = execute_as_owner(fcinfo, true, values) == 1;
	SPI_finish();

	stats_count(inbox, advanced ? COUNT_CLAIMS : COUNT_DUPLICATES, 1);
	PG_RETURN_BOOL(advanced);
}

PG_FUNCTION_INFO_V1(inbox_position);
Datum
inbox_position(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, AccessShareLock, ACL_SELECT);
	text	   *topic = topic_arg(fcinfo);
	int32		partition = (int32) counter_arg(fcinfo, 2, "partition");
	Datum		values[3] = {ObjectIdGetDatum(inbox->relid), PointerGetDatum(topic),
							 Int32GetDatum(partition)};
	bool		found;
	bool		isnull = true;
	int64		offset = 0;

	spi_connect();
	found = execute_as_owner(fcinfo, false, values) == 1;
	if (found)
		offset = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											 1, &isnull));
	SPI_finish();

	if (!found || isnull)
		PG_RETURN_NULL();
	PG_RETURN_INT64(offset);
}
