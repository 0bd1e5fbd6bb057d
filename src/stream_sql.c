/*
 * stream_sql.c
 *		The statements on the extension's positions and completed_offsets tables,
 *		and the arguments that name a partition.
 *
 * Positions belong to inboxes, so the caller's rights on the inbox decide (the
 * functions check them); the tables themselves are the extension's and are read
 * and written only by the statements below, with their owner's rights, under
 * SECURITY_RESTRICTED_OPERATION.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "args.h"
#include "compat.h"
#include "registry.h"
#include "relcache_callbacks.h"
#include "retired.h"
#include "spi_util.h"
#include "stream.h"

/* Topic names are short (Kafka allows 249 characters); bound them like ids. */
#define MAX_TOPIC_BYTES INBOX_MAX_ID_BYTES

#define PARTITION_IS "inbox OPERATOR(pg_catalog.=) $1 AND topic OPERATOR(pg_catalog.=) $2 " \
	"AND \"partition\" OPERATOR(pg_catalog.=) $3"

/*
 * Each statement, with @P for positions, @C for completed_offsets and @W
 * for partition_progress; $4 and $5 are bigints.
 */
static const struct
{
	int			nargs;
	const char *sql;
}			templates[STREAM_NUM_STATEMENTS] =
{
	[STREAM_ADVANCE] = {4,
		"INSERT INTO @P AS p (inbox, topic, \"partition\", \"offset\") VALUES ($1, $2, $3, $4) "
		"ON CONFLICT (inbox, topic, \"partition\") DO UPDATE "
		"SET \"offset\" = excluded.\"offset\", advanced_at = excluded.advanced_at "
		"WHERE p.\"offset\" IS NULL OR p.\"offset\" OPERATOR(pg_catalog.<) excluded.\"offset\""},
	[STREAM_READ] = {3, "SELECT \"offset\", generation FROM @P WHERE " PARTITION_IS},
	[STREAM_LOCK_SHARE] = {3,
		"SELECT \"offset\", generation FROM @P WHERE " PARTITION_IS " FOR KEY SHARE"},
	[STREAM_LOCK_TAKEOVER] = {3,
		"SELECT \"offset\", generation FROM @P WHERE " PARTITION_IS " FOR UPDATE"},
	[STREAM_ENSURE] = {4,
		"INSERT INTO @P (inbox, topic, \"partition\", generation) VALUES ($1, $2, $3, $4) "
		"ON CONFLICT (inbox, topic, \"partition\") DO NOTHING"},
	[STREAM_SET_GENERATION] = {4, "UPDATE @P SET generation = $4 WHERE " PARTITION_IS},
	[STREAM_PROGRESS] = {3, "SELECT stored_offset, watermark FROM @W WHERE " PARTITION_IS},
	[STREAM_ENTRY_INSERT] = {5,
		"INSERT INTO @C (inbox, topic, \"partition\", \"offset\", previous) "
		"VALUES ($1, $2, $3, $4, $5) ON CONFLICT (inbox, topic, \"partition\", \"offset\") DO NOTHING"},
	/* Is offset $4 an entry (true first), or is there any (false)?  No row: none. */
	[STREAM_ENTRY_PEEK] = {4,
		"SELECT \"offset\" OPERATOR(pg_catalog.=) $4 FROM @C WHERE " PARTITION_IS
		" ORDER BY \"offset\" OPERATOR(pg_catalog.=) $4 DESC LIMIT 1"},
	[STREAM_ENTRY_DELETE] = {4,
		"DELETE FROM @C WHERE " PARTITION_IS " AND \"offset\" OPERATOR(pg_catalog.=) $4"},
	[STREAM_ENTRIES_COUNT] = {5,
		"SELECT FROM @C WHERE " PARTITION_IS " AND \"offset\" OPERATOR(pg_catalog.>) $4 LIMIT $5"},
	[STREAM_MOVE] = {4,
		"UPDATE @P SET \"offset\" = $4, advanced_at = pg_catalog.now() WHERE " PARTITION_IS
		" AND (\"offset\" IS NULL OR \"offset\" OPERATOR(pg_catalog.<) $4)"},
	[STREAM_FORGET_BELOW] = {4,
		"DELETE FROM @C WHERE " PARTITION_IS " AND \"offset\" OPERATOR(pg_catalog.<=) $4"},
	[STREAM_LEGACY_PROGRESS] = {3, "SELECT \"offset\", \"offset\" FROM @P WHERE " PARTITION_IS},
	[STREAM_RESUME] = {2,
		"SELECT \"partition\", watermark, generation, completed FROM @W "
		"WHERE inbox OPERATOR(pg_catalog.=) $1 AND topic OPERATOR(pg_catalog.=) $2 "
		"ORDER BY \"partition\""},
};

static StreamPlans plans;

/* A template with the tables' qualified names in place of @P, @C and @W. */
static char *
statement_text(const char *template, const char *const names[3])
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (const char *c = template; *c != '\0'; c++)
	{
		const char *name = NULL;

		if (c[0] == '@')
			name = c[1] == 'P' ? names[0] : c[1] == 'C' ? names[1] : c[1] == 'W' ? names[2] : NULL;
		if (name == NULL)
			appendStringInfoChar(&buf, *c);
		else
		{
			appendStringInfoString(&buf, name);
			c++;
		}
	}
	return buf.data;
}

/*
 * The plans name the tables, and the owner runs them: remade when a table
 * changes (a new owner), and when a schema is renamed (the name they were
 * written with could now mean another table).
 */
static bool PlansStale = false;
static bool PlansCallbacks = false;

static void
stream_plans_invalidate(Datum arg, Oid relid)
{
	if (!OidIsValid(relid) || relid == plans.relid || relid == plans.completed_relid)
		PlansStale = true;
}

static void
stream_plans_invalidate_names(Datum arg, int cacheid, uint32 hashvalue)
{
	PlansStale = true;
}

/* The primary key of a table of ours, and (for positions) its equality procedures. */
static Oid
primary_key(Oid relid, int nkeys, RegProcedure *key_eq)
{
	Relation	rel = table_open(relid, AccessShareLock);
	Relation	index;
	Oid			pkindex = compat_immediate_primary_key(rel);

	if (!OidIsValid(pkindex))
		elog(ERROR, "table \"%s\" of idempotent_inbox has no primary key", RelationGetRelationName(rel));
	index = index_open(pkindex, AccessShareLock);
	if (index->rd_index->indnkeyatts != nkeys)
		elog(ERROR, "the primary key of \"%s\" has %d columns", RelationGetRelationName(rel),
			 index->rd_index->indnkeyatts);
	for (int i = 0; key_eq != NULL && i < POSITION_KEYS; i++)
	{
		Oid			eqop = get_opfamily_member(index->rd_opfamily[i], index->rd_opcintype[i],
											   index->rd_opcintype[i], BTEqualStrategyNumber);

		if (!OidIsValid(eqop))
			elog(ERROR, "no equality operator in operator family %u", index->rd_opfamily[i]);
		key_eq[i] = get_opcode(eqop);
	}
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
	return pkindex;
}

/*
 * The plans for the tables as they are now: after DROP and CREATE EXTENSION they
 * are other tables, and the kept plans are remade.
 */
StreamPlans *
stream_plans(FunctionCallInfo fcinfo)
{
	Oid			nspid = registry_extension_namespace(fcinfo);
	Oid			relid = registry_extension_relation(fcinfo, "positions");
	Oid			completed = get_relname_relid("completed_offsets", nspid);
	Oid			argtypes[5] = {REGCLASSOID, TEXTOID, INT4OID, INT8OID, INT8OID};
	const char *schema;
	const char *names[3];
	HeapTuple	tuple;

	if (!PlansCallbacks)
	{
		relcache_callback_register(stream_plans_invalidate);
		CacheRegisterSyscacheCallback(NAMESPACEOID, stream_plans_invalidate_names, (Datum) 0);
		PlansCallbacks = true;
	}
	if (relid == plans.relid && completed == plans.completed_relid && !PlansStale)
		return &plans;
	PlansStale = false;

	/* An outer call may still be running them (retired.c). */
	for (int i = 0; i < STREAM_NUM_STATEMENTS; i++)
	{
		retired_add_plan(plans.plans[i]);
		plans.plans[i] = NULL;
	}
	plans.relid = plans.completed_relid = InvalidOid;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	plans.owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	plans.pkindex = primary_key(relid, POSITION_KEYS, plans.key_eq);
	/* Until ALTER EXTENSION ... UPDATE, a database may have the tables of 0.2. */
	plans.legacy = !OidIsValid(completed);
	if (!plans.legacy)
		plans.completed_pkindex = primary_key(completed, POSITION_KEYS + 1, NULL);

	schema = get_namespace_name(nspid);
	names[0] = quote_qualified_identifier(schema, "positions");
	names[1] = quote_qualified_identifier(schema, "completed_offsets");
	names[2] = quote_qualified_identifier(schema, "partition_progress");
	for (int i = 0; i < STREAM_NUM_STATEMENTS; i++)
	{
		/* The tables of 0.2 have what advance and position need, and no more. */
		if (i != STREAM_ADVANCE && plans.legacy != (i == STREAM_LEGACY_PROGRESS))
			continue;
		plans.plans[i] = spi_prepare_kept(statement_text(templates[i].sql, names),
										  templates[i].nargs, argtypes);
	}
	plans.relid = relid;
	plans.completed_relid = completed;
	return &plans;
}

/* Topic (argument 1) and partition (argument 2) of the inbox's partition. */
void
stream_key_args(FunctionCallInfo fcinfo, InboxInfo *inbox, StreamKey *key)
{
	text	   *topic = bounded_text_arg(fcinfo, 1, "topic", MAX_TOPIC_BYTES, NULL);

	key->inbox = inbox;
	key->topic = topic;
	key->partition = PG_NARGS() > 2 ? (int32) stream_counter_arg(fcinfo, 2, "partition") : 0;
	key->values[0] = ObjectIdGetDatum(inbox->relid);
	key->values[1] = PointerGetDatum(topic);
	key->values[2] = Int32GetDatum(key->partition);
}

/* Partitions, offsets and generations count from 0, as every broker numbers them. */
int64
stream_counter_arg(FunctionCallInfo fcinfo, int argno, const char *name)
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

/* An optional generation: false if NULL (the call is not fenced). */
bool
stream_generation_arg(FunctionCallInfo fcinfo, int argno, int64 *generation)
{
	if (PG_NARGS() <= argno || PG_ARGISNULL(argno))
		return false;
	*generation = stream_counter_arg(fcinfo, argno, "generation");
	return true;
}

/*
 * The inbox (argument 0, which the caller may write), partition, offset and
 * generation of advance and claim_offset.
 */
void
stream_offset_call(FunctionCallInfo fcinfo, OffsetCall *call)
{
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, AccessShareLock, ACL_INSERT);

	stream_key_args(fcinfo, inbox, &call->key);
	call->offset = stream_counter_arg(fcinfo, 3, "offset");
	call->generation = 0;
	call->has_generation = stream_generation_arg(fcinfo, 4, &call->generation);
}

/*
 * Run a statement on the partition with the owner's rights; arg4 and arg5 are
 * $4 and $5 where it has them.  latest reads what is committed now, also under
 * REPEATABLE READ: a generation or a watermark moved by a transaction that
 * committed after the caller's snapshot decides the answer as well.  Returns
 * the rows it touched; SPI_tuptable has those it returned.
 */
uint64
stream_execute(FunctionCallInfo fcinfo, StreamStatement statement, const StreamKey *key,
			   Datum arg4, bool arg4_null, Datum arg5, bool latest)
{
	StreamPlans *p = stream_plans(fcinfo);
	Datum		values[5] = {key->values[0], key->values[1], key->values[2], arg4, arg5};
	char		nulls[5] = {' ', ' ', ' ', arg4_null ? 'n' : ' ', ' '};
	Oid			save_userid;
	int			save_sec_context;
	int			rc;

	if (p->legacy && statement == STREAM_PROGRESS)
		statement = STREAM_LEGACY_PROGRESS;
	if (p->plans[statement] == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"idempotent_inbox\" must be updated to use generations and offsets completed out of order"),
				 errhint("Run ALTER EXTENSION idempotent_inbox UPDATE.")));
	if (statement == STREAM_RESUME)
		values[2] = (Datum) 0;	/* the whole topic */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(p->owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	rc = SPI_execute_snapshot(p->plans[statement], values, nulls,
							  latest ? GetLatestSnapshot() : InvalidSnapshot,
							  InvalidSnapshot, false, true, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (rc < 0)
		spi_report_error(rc, "a statement on stream positions");
	return SPI_processed;
}

/* Column (from 1) of the first row the last statement returned: false if NULL. */
bool
stream_result_int8(int column, int64 *value)
{
	bool		isnull;
	Datum		datum = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, column, &isnull);

	if (!isnull)
		*value = DatumGetInt64(datum);
	return !isnull;
}
