/*
 * outbox.c
 *		Outboxes: create_outbox, drop_outbox, set_outbox_retention and emit, the
 *		check that a table is still an outbox, and the per-backend plans of its
 *		statements.
 *
 * An outbox is an ordinary table the caller owns, like an inbox.  emit inserts
 * an event into it in the caller's transaction, with the caller's rights, so the
 * event commits or rolls back with the effect it announces; a relay takes the
 * committed events afterwards (outbox_relay.c).  An event with a key takes
 * the key's lock before its event_id is drawn and holds it until commit, so
 * that the event ids of a key follow the order its transactions commit in:
 * that is what lets the relay keep each key's order (outbox_relay.c).
 *
 * The owner can alter the table at any time, so every call checks the shape it
 * relies on: the columns by name and exact type, a permanent plain table, and
 * the marker constraint that says it is an outbox at all.  The statements are
 * written with the table's name as it is now and kept per backend; a rename
 * (of the table or its schema) writes them again, since a kept plan that is
 * invalidated is analysed again from its text, which names the old table.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "args.h"
#include "compat.h"
#include "inbox_admin.h"
#include "outbox.h"
#include "registry.h"
#include "relcache_callbacks.h"
#include "spi_util.h"
#include "table_shape.h"

/* The columns create_outbox makes and every statement relies on. */
static const struct
{
	const char *name;
	Oid			type;
}			outbox_columns[] =
{
	{"event_id", INT8OID},
	{"topic", TEXTOID},
	{"key", TEXTOID},
	{"payload", JSONBOID},
	{"payload_bytes", BYTEAOID},
	{"headers", JSONBOID},
	{"emitted_at", TIMESTAMPTZOID},
	{"attempts", INT4OID},
	{"lease", UUIDOID},
	{"lease_until", TIMESTAMPTZOID},
	{"sent_at", TIMESTAMPTZOID},
};

/*
 * The statements, %1$s being the outbox.  SELECT, UPDATE and DELETE name ONLY
 * the outbox: children the owner may attach are not its events.  Operators are
 * qualified: the caller's search_path chooses nothing here.
 *
 * A take (see outbox_relay.c for why it skips nothing and keeps each key's
 * order) picks and locks the oldest unsent events, in event_id order, that no
 * live lease holds and whose key has no earlier event in flight ($1 the batch
 * size, $2 the time now), then leases those it may take ($1 their ids, $2 the
 * new lease, $3 its end, $4 the outbox's source, the prefix of every message
 * id).
 */
static const struct
{
	const char *sql;
	int			nargs;
	Oid			argtypes[6];
}			outbox_statements[OUTBOX_NUM_STATEMENTS] =
{
	[OUTBOX_EMIT] = {
		"INSERT INTO %1$s (event_id, topic, key, payload, payload_bytes, headers) "
		"OVERRIDING SYSTEM VALUE VALUES ($6, $1, $2, $3, $4, $5)",
		6, {TEXTOID, TEXTOID, JSONBOID, BYTEAOID, JSONBOID, INT8OID}
	},
	[OUTBOX_PICK] = {
		"SELECT o.event_id, o.xmin FROM ONLY %1$s o"
		" WHERE o.sent_at IS NULL"
		"   AND (o.lease_until IS NULL OR o.lease_until OPERATOR(pg_catalog.<=) $2)"
		"   AND NOT EXISTS (SELECT FROM ONLY %1$s p"
		"                    WHERE p.key OPERATOR(pg_catalog.=) o.key"
		"                      AND p.sent_at IS NULL"
		"                      AND p.lease_until OPERATOR(pg_catalog.>) $2"
		"                      AND p.event_id OPERATOR(pg_catalog.<) o.event_id)"
		" ORDER BY o.event_id LIMIT $1 FOR UPDATE OF o",
		2, {INT4OID, TIMESTAMPTZOID}
	},
	[OUTBOX_TAKE] = {
		"WITH taken AS ("
		" UPDATE ONLY %1$s SET lease = $2, lease_until = $3,"
		"        attempts = attempts OPERATOR(pg_catalog.+) 1"
		"  WHERE event_id OPERATOR(pg_catalog.=) ANY ($1)"
		" RETURNING event_id, topic, key, payload, payload_bytes, headers, emitted_at, attempts) "
		"SELECT event_id,"
		"       pg_catalog.md5($4 OPERATOR(pg_catalog.||) event_id::pg_catalog.text)::pg_catalog.uuid,"
		"       topic, key, payload, payload_bytes, headers, emitted_at, attempts"
		"  FROM taken ORDER BY event_id",
		4, {INT8ARRAYOID, UUIDOID, TIMESTAMPTZOID, TEXTOID}
	},
	[OUTBOX_ACK_LEASE] = {
		"UPDATE ONLY %1$s SET sent_at = $2, lease = NULL, lease_until = NULL "
		"WHERE sent_at IS NULL AND lease OPERATOR(pg_catalog.=) $1",
		2, {UUIDOID, TIMESTAMPTZOID}
	},
	[OUTBOX_ACK_LEASE_LISTED] = {
		"UPDATE ONLY %1$s SET sent_at = $2, lease = NULL, lease_until = NULL "
		"WHERE sent_at IS NULL AND lease OPERATOR(pg_catalog.=) $1"
		"  AND event_id OPERATOR(pg_catalog.=) ANY ($3)",
		3, {UUIDOID, TIMESTAMPTZOID, INT8ARRAYOID}
	},
	[OUTBOX_ACK_EVENTS] = {
		"UPDATE ONLY %1$s SET sent_at = $2, lease = NULL, lease_until = NULL "
		"WHERE sent_at IS NULL AND event_id OPERATOR(pg_catalog.=) ANY ($3)",
		3, {UUIDOID, TIMESTAMPTZOID, INT8ARRAYOID}
	},
	[OUTBOX_RELEASE_LEASE] = {
		"UPDATE ONLY %1$s SET lease = NULL, lease_until = $2 "
		"WHERE sent_at IS NULL AND lease OPERATOR(pg_catalog.=) $1",
		2, {UUIDOID, TIMESTAMPTZOID}
	},
	[OUTBOX_RELEASE_EVENTS] = {
		"UPDATE ONLY %1$s SET lease = NULL, lease_until = $2 "
		"WHERE sent_at IS NULL AND lease OPERATOR(pg_catalog.=) $1"
		"  AND event_id OPERATOR(pg_catalog.=) ANY ($3)",
		3, {UUIDOID, TIMESTAMPTZOID, INT8ARRAYOID}
	},
	[OUTBOX_PURGE] = {
		"DELETE FROM ONLY %1$s WHERE event_id OPERATOR(pg_catalog.=) ANY (ARRAY("
		" SELECT event_id FROM ONLY %1$s"
		"  WHERE sent_at OPERATOR(pg_catalog.<) $1"
		"  ORDER BY sent_at LIMIT $2 FOR UPDATE SKIP LOCKED))",
		2, {TIMESTAMPTZOID, INT4OID}
	},
};

/*
 * One outbox's kept plans, written for the name it had then, and the sequence
 * of its event_id, forgotten at any relcache invalidation of the outbox (which
 * every ALTER of its identity sends).
 */
typedef struct OutboxPlans
{
	Oid			relid;			/* hash key */
	char	   *qualname;		/* in CacheMemoryContext */
	SPIPlanPtr	plans[OUTBOX_NUM_STATEMENTS];
	Oid			seqid;			/* InvalidOid until looked up */
} OutboxPlans;

static HTAB *OutboxPlanCache = NULL;

static void
outbox_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	OutboxPlans *entry;

	if (OutboxPlanCache == NULL)
		return;
	hash_seq_init(&status, OutboxPlanCache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || entry->relid == relid)
			entry->seqid = InvalidOid;
}

/*
 * What is wrong with the table as an outbox, as an errdetail sentence, or NULL;
 * *marked says whether it carries the marker at all.
 */
static char *
outbox_shape_problem(Relation rel, bool *marked)
{
	TupleDesc	desc = RelationGetDescr(rel);

	*marked = false;
	for (int i = 0; desc->constr != NULL && i < desc->constr->num_check; i++)
		*marked |= strcmp(desc->constr->check[i].ccname, OUTBOX_MARKER) == 0;
	if (!*marked)
		return psprintf("It has no constraint \"%s\".", OUTBOX_MARKER);
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		return pstrdup("It is not a plain table.");
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		return pstrdup("It is not a permanent, logged table.");
	for (size_t c = 0; c < lengthof(outbox_columns); c++)
	{
		AttrNumber	attnum = InvalidAttrNumber;

		for (int i = 0; i < desc->natts && attnum == InvalidAttrNumber; i++)
			if (!TupleDescAttr(desc, i)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, i)->attname), outbox_columns[c].name) == 0)
				attnum = i + 1;
		if (attnum == InvalidAttrNumber)
			return psprintf("It has no column \"%s\".", outbox_columns[c].name);
		if (TupleDescAttr(desc, attnum - 1)->atttypid != outbox_columns[c].type)
			return psprintf("Its column \"%s\" is of type %s, not %s.", outbox_columns[c].name,
							format_type_be(TupleDescAttr(desc, attnum - 1)->atttypid),
							format_type_be(outbox_columns[c].type));
	}
	return NULL;
}

/*
 * Open the outbox in argument 0: the caller's rights first, then the lock
 * (table_shape.c), then its shape.  A table with no marker was never an outbox
 * (42809); one whose owner altered it away from the shape is 55000.
 */
Relation
outbox_open(FunctionCallInfo fcinfo, AclMode rights, LOCKMODE lockmode)
{
	Relation	rel;
	char	   *problem;
	bool		marked;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("outbox must not be null")));
	rel = shape_open_relid(PG_GETARG_OID(0), rights, false, lockmode, NULL);
	problem = outbox_shape_problem(rel, &marked);
	if (!marked)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an outbox", RelationGetRelationName(rel)),
				 errhint("Create one with inbox.create_outbox().")));
	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("outbox \"%s\" no longer has an outbox's shape",
						RelationGetRelationName(rel)),
				 errdetail("%s", problem),
				 errhint("Alter it back, or create a new outbox with inbox.create_outbox().")));
	return rel;
}

/* The extension's outbox_registry, which create_outbox and the relay read. */
Oid
outbox_registry_relation(FunctionCallInfo fcinfo)
{
	Oid			relid = get_relname_relid("outbox_registry", registry_extension_namespace(fcinfo));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"idempotent_inbox\" must be updated to use outboxes"),
				 errhint("Run ALTER EXTENSION idempotent_inbox UPDATE.")));
	return relid;
}

/*
 * The cache entry of an open outbox, its plans written again when the outbox's
 * qualified name is not the one they were written for.
 */
static OutboxPlans *
outbox_entry(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	char	   *qualname = shape_qualname(rel);
	OutboxPlans *entry;
	bool		found;

	if (OutboxPlanCache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(OutboxPlans);
		ctl.hcxt = CacheMemoryContext;
		OutboxPlanCache = hash_create("idempotent_inbox outbox plans", 16, &ctl,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		relcache_callback_register(outbox_invalidate);
	}
	entry = hash_search(OutboxPlanCache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->qualname = NULL;
		memset(entry->plans, 0, sizeof(entry->plans));
		entry->seqid = InvalidOid;
	}
	if (entry->qualname == NULL || strcmp(entry->qualname, qualname) != 0)
	{
		for (int i = 0; i < OUTBOX_NUM_STATEMENTS; i++)
			spi_free_plan(&entry->plans[i]);
		if (entry->qualname != NULL)
			pfree(entry->qualname);
		entry->qualname = MemoryContextStrdup(CacheMemoryContext, qualname);
	}
	return entry;
}

/*
 * The kept plan of one statement of an open outbox; SPI must be connected.  The
 * pick is planned once for any parameters: a plan made for the time now as a
 * constant checks a key's in-flight events with a scan of every unsent event,
 * where the generic one probes the key's index.
 */
SPIPlanPtr
outbox_plan(Relation rel, OutboxStatement which)
{
	OutboxPlans *entry = outbox_entry(rel);

	if (entry->plans[which] == NULL)
		entry->plans[which] = spi_prepare_kept_opts(psprintf(outbox_statements[which].sql,
															 entry->qualname),
													outbox_statements[which].nargs,
													(Oid *) outbox_statements[which].argtypes,
													which == OUTBOX_PICK ? CURSOR_OPT_GENERIC_PLAN : 0);
	return entry->plans[which];
}

/*
 * create_outbox(name, retention): the table, with the caller's rights and
 * owned by the caller, its indexes, and its registry row.  The pending index
 * serves the take; the key index the check that a key has nothing earlier in
 * flight; the sent index the purge.  An event is in the first two only while
 * it is unsent.
 */
PG_FUNCTION_INFO_V1(inbox_create_outbox);
Datum
inbox_create_outbox(PG_FUNCTION_ARGS)
{
	char	   *relname;
	char	   *qualname;
	Oid			nspid;
	Oid			relid;
	Oid			argtypes[2] = {REGCLASSOID, INTERVALOID};
	Datum		values[2];
	char		nulls[2] = {' ', PG_ARGISNULL(1) ? 'n' : ' '};
	const char *const statements[] = {
		"CREATE TABLE %1$s ("
		"event_id pg_catalog.int8 GENERATED ALWAYS AS IDENTITY, "
		"topic pg_catalog.text NOT NULL, "
		"key pg_catalog.text, "
		"payload pg_catalog.jsonb, "
		"payload_bytes pg_catalog.bytea, "
		"headers pg_catalog.jsonb NOT NULL DEFAULT '{}', "
		"emitted_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(), "
		"attempts pg_catalog.int4 NOT NULL DEFAULT 0, "
		"lease pg_catalog.uuid, "
		"lease_until pg_catalog.timestamptz, "
		"sent_at pg_catalog.timestamptz, "
		"PRIMARY KEY (event_id), "
		"CONSTRAINT " OUTBOX_MARKER " CHECK (payload IS NULL OR payload_bytes IS NULL))",
		"CREATE INDEX ON %1$s (event_id) WHERE sent_at IS NULL",
		"CREATE INDEX ON %1$s (key, event_id) WHERE sent_at IS NULL AND key IS NOT NULL",
		"CREATE INDEX ON %1$s (sent_at) WHERE sent_at IS NOT NULL",
	};

	(void) outbox_registry_relation(fcinfo);
	if (!PG_ARGISNULL(1))
		admin_check_retention(PG_GETARG_INTERVAL_P(1), "sent events");
	nspid = admin_new_table_name(fcinfo, "outbox",
								 "Events must survive the session and a crash until a relay has sent them.",
								 &relname, &qualname);
	/* Said here, not by the CREATE TABLE statement, whose text would be the context. */
	if (OidIsValid(get_relname_relid(relname, nspid)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", relname)));

	spi_connect();
	for (size_t i = 0; i < lengthof(statements); i++)
	{
		int			rc = SPI_execute(psprintf(statements[i], qualname), false, 0);

		if (rc != SPI_OK_UTILITY)
			elog(ERROR, "creating outbox %s returned %s", qualname, SPI_result_code_string(rc));
	}
	relid = get_relname_relid(relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "outbox \"%s\" vanished after creation", qualname);

	values[0] = ObjectIdGetDatum(relid);
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	admin_registry_write(fcinfo, "outbox_registry",
						 psprintf("INSERT INTO %s.outbox_registry (relid, retention) VALUES ($1, $2)",
								  quote_identifier(get_namespace_name(registry_extension_namespace(fcinfo)))),
						 2, argtypes, values, nulls, SPI_OK_INSERT);
	SPI_finish();
	PG_RETURN_OID(relid);
}

/* drop_outbox(outbox): DROP TABLE with the caller's rights; the event trigger forgets it. */
PG_FUNCTION_INFO_V1(inbox_drop_outbox);
Datum
inbox_drop_outbox(PG_FUNCTION_ARGS)
{
	Relation	rel;
	char	   *qualname;

	admin_check_owner(fcinfo, 0);
	rel = outbox_open(fcinfo, 0, AccessExclusiveLock);
	qualname = shape_qualname(rel);
	relation_close(rel, NoLock);

	spi_connect();
	if (SPI_execute(psprintf("DROP TABLE %s", qualname), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not drop outbox %s", qualname);
	SPI_finish();
	PG_RETURN_VOID();
}

/* set_outbox_retention(outbox, retention): how long sent events are kept; owner only. */
PG_FUNCTION_INFO_V1(inbox_set_outbox_retention);
Datum
inbox_set_outbox_retention(PG_FUNCTION_ARGS)
{
	Relation	rel;
	Oid			argtypes[2] = {REGCLASSOID, INTERVALOID};
	Datum		values[2];
	char		nulls[2] = {' ', PG_ARGISNULL(1) ? 'n' : ' '};

	admin_check_owner(fcinfo, 0);
	if (!PG_ARGISNULL(1))
		admin_check_retention(PG_GETARG_INTERVAL_P(1), "sent events");
	rel = outbox_open(fcinfo, 0, ShareUpdateExclusiveLock);
	values[0] = ObjectIdGetDatum(RelationGetRelid(rel));
	values[1] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	relation_close(rel, NoLock);

	spi_connect();
	admin_registry_write(fcinfo, "outbox_registry",
						 psprintf("UPDATE %s.outbox_registry SET retention = $2 "
								  "WHERE relid OPERATOR(pg_catalog.=) $1",
								  quote_identifier(get_namespace_name(registry_extension_namespace(fcinfo)))),
						 2, argtypes, values, nulls, SPI_OK_UPDATE);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * An event's key, locked until the transaction ends, before its event_id is
 * drawn: a second transaction emitting the key waits for the first to commit
 * or roll back, and only then draws its ids, so a key's event ids grow in the
 * order its transactions commit.  An advisory lock of a class of its own (see
 * key_order.c); two keys whose hashes collide share a lock, which only makes
 * them wait for each other.  lock_timeout and the deadlock detector apply.
 */
static void
emit_lock_key(Relation rel, text *key)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, RelationGetRelid(rel),
						 hash_bytes((const unsigned char *) VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)),
						 OUTBOX_KEY_LOCKTAG_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* Headers become a message's header table: an object, or null for none. */
static Datum
emit_headers(FunctionCallInfo fcinfo)
{
	Jsonb	   *headers;

	if (PG_ARGISNULL(4))
		return DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
	headers = PG_GETARG_JSONB_P(4);
	if (!JB_ROOT_IS_OBJECT(headers))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("headers must be a JSON object"),
				 errhint("Pass an object such as '{\"content-type\": \"application/json\"}', or NULL.")));
	return PointerGetDatum(headers);
}

/*
 * The sequence of the outbox's event_id.  emit draws the id itself, the way the
 * executor fills an identity column (no right on the sequence needed), rather
 * than by RETURNING, which would need SELECT on the outbox: a producer needs
 * INSERT only.
 */
static Oid
outbox_event_id_sequence(Relation rel)
{
	OutboxPlans *entry = outbox_entry(rel);
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			seqid = InvalidOid;

	if (OidIsValid(entry->seqid))
		return entry->seqid;
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), "event_id") == 0 &&
			TupleDescAttr(desc, i)->attidentity != '\0')
			seqid = compat_identity_sequence(rel, i + 1);
	if (!OidIsValid(seqid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("outbox \"%s\" no longer has an outbox's shape",
						RelationGetRelationName(rel)),
				 errdetail("Its column \"event_id\" is not an identity column."),
				 errhint("Alter it back, or create a new outbox with inbox.create_outbox().")));
	entry->seqid = seqid;
	return seqid;
}

/*
 * emit(outbox, topic, key, payload, headers) and emit_bytes: insert one event
 * in the caller's transaction, with the caller's rights (INSERT on the outbox,
 * and its policies), and return its event_id.
 */
static Datum
emit_event(FunctionCallInfo fcinfo, bool bytes)
{
	Relation	rel;
	SPIPlanPtr	plan;
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	int64		event_id;
	int			rc;

	/* A topic is a routing key: present, and short enough for AMQP. */
	(void) bounded_text_arg(fcinfo, 1, "topic", OUTBOX_MAX_TOPIC_BYTES, NULL);
	(void) bounded_text_arg(fcinfo, 2, "key", OUTBOX_MAX_KEY_BYTES,
							"Pass NULL for an event whose order does not matter.");
	values[0] = PG_GETARG_DATUM(1);
	values[1] = PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2);
	nulls[1] = PG_ARGISNULL(2) ? 'n' : ' ';
	values[2] = (bytes || PG_ARGISNULL(3)) ? (Datum) 0 : PG_GETARG_DATUM(3);
	nulls[2] = (bytes || PG_ARGISNULL(3)) ? 'n' : ' ';
	values[3] = (!bytes || PG_ARGISNULL(3)) ? (Datum) 0 : PG_GETARG_DATUM(3);
	nulls[3] = (!bytes || PG_ARGISNULL(3)) ? 'n' : ' ';
	values[4] = emit_headers(fcinfo);

	rel = outbox_open(fcinfo, ACL_INSERT, RowExclusiveLock);
	if (XactReadOnly)
		PreventCommandIfReadOnly(bytes ? "inbox.emit_bytes()" : "inbox.emit()");
	if (!PG_ARGISNULL(2))
		emit_lock_key(rel, PG_GETARG_TEXT_PP(2));
	event_id = nextval_internal(outbox_event_id_sequence(rel), false);
	values[5] = Int64GetDatum(event_id);

	spi_connect();
	plan = outbox_plan(rel, OUTBOX_EMIT);
	relation_close(rel, NoLock);
	rc = SPI_execute_plan(plan, values, nulls, false, 0);
	if (rc != SPI_OK_INSERT)
		spi_report_error(rc, "emit");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_TRIGGERED_ACTION_EXCEPTION),
				 errmsg("the event was not written to outbox \"%s\"", get_rel_name(PG_GETARG_OID(0))),
				 errdetail("A trigger or rule of the outbox skipped the insert.")));
	SPI_finish();
	PG_RETURN_INT64(event_id);
}

PG_FUNCTION_INFO_V1(inbox_emit);
Datum
inbox_emit(PG_FUNCTION_ARGS)
{
	return emit_event(fcinfo, false);
}

PG_FUNCTION_INFO_V1(inbox_emit_bytes);
Datum
inbox_emit_bytes(PG_FUNCTION_ARGS)
{
	return emit_event(fcinfo, true);
}
