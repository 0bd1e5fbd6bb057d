/*
 * failures.c
 *		Messages that keep failing: record_failure counts the failed attempts of
 *		a message, and at the inbox's max_attempts quarantines it; the operator's
 *		verbs retry, discard and forget change its claim on purpose, each leaving
 *		an audit row.
 *
 * A failed attempt rolls back, claim and all, so the count lives in a table of
 * the extension's (failures), written in the consumer's next, short transaction.
 * A quarantined message is held by a claim row of its own, claimed at
 * 'infinity' (claim_row_quarantined): every claim path then answers it without
 * running the effect, with no cost to a claim of any other id; the windows never
 * expire it and purge never picks it.  The failures row says why, for the
 * operator.
 *
 * A sharded inbox's message is (shard key, message id): its _sharded forms
 * take the shard key second, and its rows here carry the key's text form.
 * Those tables are of one node; a Citus table keeps the same rows in tables
 * beside its shards (citus_failures.c), written by the same statements.
 *
 * Rights are the caller's on the inbox, checked before any lock (registry.c);
 * the claim row is written with them, as a claim's is.  The extension's tables are
 * written with their owner's rights under SECURITY_RESTRICTED_OPERATION, as the
 * stream positions are (stream_sql.c).  None of this is a hot path: the
 * statements are planned at each call.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "args.h"
#include "claim.h"
#include "claim_routed.h"
#include "claim_row.h"
#include "failures.h"
#include "inbox_sql.h"
#include "message_id.h"
#include "registry.h"
#include "retention.h"
#include "signature.h"
#include "spi_util.h"

/* An error is kept to this many bytes: enough for a message and a stack's top. */
#define MAX_ERROR_BYTES 8192

/* What failures says of a message; attempts 0 when it has no row. */
typedef struct FailureRow
{
	bool		found;
	int32		attempts;
	bool		quarantined;
	text	   *last_error;
} FailureRow;

/*
 * The settings a shard key's text form is written under (shard_key_text), set
 * until AtEOXact_GUC(true, level) with the level returned, or the end of the
 * transaction.
 */
int
failures_pin_settings(void)
{
	static const char *const settings[][2] = {
		{"DateStyle", "ISO, YMD"}, {"IntervalStyle", "postgres"}, {"TimeZone", "UTC"},
		{"extra_float_digits", "1"}, {"bytea_output", "hex"}, {"lc_monetary", "C"}
	};
	int			level = NewGUCNestLevel();

	for (size_t i = 0; i < lengthof(settings); i++)
		(void) set_config_option(settings[i][0], settings[i][1], PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * A shard key value as the failures tables keep it: its output form under
 * fixed settings, so that every session writes a timestamptz, date, interval,
 * float, bytea or money key alike whatever its own TimeZone, DateStyle,
 * IntervalStyle, extra_float_digits, bytea_output or lc_monetary; a numeric
 * without its trailing zeros, so that 1.0 and 1.00, one key to the primary key,
 * are one here too.  (A key whose equality is looser still, as under a
 * nondeterministic collation, is kept as it is spelled, as message ids are.)
 */
static Datum
shard_key_text(const InboxInfo *inbox, Datum value)
{
	Oid			output;
	bool		varlena;
	int			level = failures_pin_settings();
	char	   *string;

	if (getBaseType(inbox->shard_type) == NUMERICOID)
		value = DirectFunctionCall1(numeric_trim_scale, value);
	getTypeOutputInfo(inbox->shard_type, &output, &varlena);
	string = OidOutputFunctionCall(output, value);
	AtEOXact_GUC(true, level);
	return CStringGetTextDatum(string);
}

/*
 * A Citus table keeps its failures in tables of its own, beside its shards
 * (citus_failures.c): only a sharded inbox has such shards, and only once
 * distribute_failures made the tables.
 */
static void
failure_call_citus(FunctionCallInfo fcinfo, FailureCall *call)
{
	const char *name = get_rel_name(call->inbox->relid);

	if (call->inbox->shard_attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s() does not support Citus table \"%s\", which has no shard key",
						get_func_name(fcinfo->flinfo->fn_oid), name),
				 errdetail("A Citus table keeps its failures in tables co-located with it by its shard key."),
				 errhint("Make the inbox with create_sharded_inbox() and distribute it by its shard key.")));
	if (!citus_failures_lookup(call->inbox, &call->companions))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox \"%s\" has no failures tables", name),
				 errdetail("A Citus table keeps its failures in tables co-located with it, which neither a call on another node nor a shard move loses."),
				 errhint("Run SELECT inbox.distribute_failures(%s) on the coordinator.",
						 quote_literal_cstr(call->inbox->qualname))));
	call->citus = &call->companions;
}

void
failure_call(FunctionCallInfo fcinfo, AclMode rights, FailureCall *call)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	bool		sharded_call = sig->keyargno == 2;

	call->fcinfo = fcinfo;
	call->actor = GetUserId();
	call->inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, rights);
	registry_check_shard_form(fcinfo, call->inbox, sharded_call);
	call->citus = NULL;
	if (call->inbox->distributed)
		failure_call_citus(fcinfo, call);
	/* The answers come from the stored claim, which a policy may hide. */
	registry_check_stored_reads(fcinfo, call->inbox);
	call->shard = NULL;
	call->shard_text = (Datum) 0;
	if (sharded_call)
	{
		call->shard_value = claim_routed_shard_key(fcinfo, 1, call->inbox);
		call->shard = &call->shard_value;
		/* A Citus inbox's tables keep the value itself (failures_execute). */
		if (!call->citus)
			call->shard_text = shard_key_text(call->inbox, call->shard_value);
	}
	call->argno = sig->keyargno + 1;
	call->id = message_id_from_arg(fcinfo, sig->keyargno, sig->keytype, call->inbox);
	call->id_text = CStringGetTextDatum(message_id_to_cstring(call->inbox, call->id));
	if (XactReadOnly)
		PreventCommandIfReadOnly(psprintf("inbox.%s()", get_func_name(fcinfo->flinfo->fn_oid)));
	if (!OidIsValid(get_relname_relid("failures", registry_extension_namespace(fcinfo))))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"idempotent_inbox\" must be updated to record failures"),
				 errhint("Run ALTER EXTENSION idempotent_inbox UPDATE.")));
}

/*
 * A statement on an inbox's failures tables, written once for both kinds: the
 * extension's tables, which key a message by (inbox, message id, shard key
 * text), and a Citus inbox's own (citus_failures.c), which key it by (shard
 * key, message id), the shard key first so that Citus routes the statement to
 * one shard.  Its words in braces:
 *   {failures} {blocked} {audit} {keys} {registry}   the tables;
 *   {inbox}     the inbox's rows ($1), in a statement on one table;
 *   {f has b's key}   a correlation of the failures f and the blocked b: the
 *               same inbox and shard key;
 *   {key}       the rows of the message's shard key ($1 and $3);
 *   {message}   the message's rows ($1 to $3);
 *   {inbox,} and {$1,}   the inbox column of an INSERT and its value, which
 *               only the extension's tables have;
 *   {message_key}   the key of one message's row, for ON CONFLICT.
 * ({keys} and {registry} exist for one kind each: the key locks of a Citus
 * inbox, and the settings of a one-node one.)
 */
static char *
failures_sql(FunctionCallInfo fcinfo, const CompanionTables *citus, const char *statement)
{
	const char *schema = quote_identifier(get_namespace_name(registry_extension_namespace(fcinfo)));
	const char *const words[][2] = {
		{"{failures}", citus ? citus->failures : psprintf("%s.failures", schema)},
		{"{blocked}", citus ? citus->blocked : psprintf("%s.blocked", schema)},
		{"{audit}", citus ? citus->audit : psprintf("%s.audit_log", schema)},
		{"{keys}", citus ? citus->keys : NULL},
		{"{registry}", citus ? NULL : psprintf("%s.registry", schema)},
		{"{inbox}", citus ? "true" : "inbox OPERATOR(pg_catalog.=) $1"},
		{"{f has b's key}", citus ? "f.shard_key OPERATOR(pg_catalog.=) b.shard_key" :
		"f.inbox OPERATOR(pg_catalog.=) b.inbox AND f.shard_key IS NOT DISTINCT FROM b.shard_key"},
		{"{key}", citus ? "shard_key OPERATOR(pg_catalog.=) $3" :
		"inbox OPERATOR(pg_catalog.=) $1 AND shard_key IS NOT DISTINCT FROM $3"},
		{"{message}", citus ?
			"shard_key OPERATOR(pg_catalog.=) $3 AND message_id OPERATOR(pg_catalog.=) $2" :
			"inbox OPERATOR(pg_catalog.=) $1 AND message_id OPERATOR(pg_catalog.=) $2 "
		"AND shard_key IS NOT DISTINCT FROM $3"},
		{"{inbox,}", citus ? "" : "inbox, "},
		{"{$1,}", citus ? "" : "$1, "},
		{"{message_key}", citus ? "(shard_key, message_id)" : "(inbox, message_id, shard_key)"},
	};
	StringInfoData buf;

	initStringInfo(&buf);
	for (const char *p = statement; *p != '\0'; p++)
	{
		size_t		i;

		for (i = 0; *p == '{' && i < lengthof(words); i++)
			if (strncmp(p, words[i][0], strlen(words[i][0])) == 0)
				break;
		if (*p != '{' || i == lengthof(words))
		{
			appendStringInfoChar(&buf, *p);
			continue;
		}
		if (words[i][1] == NULL)
			elog(ERROR, "a statement on failures named %s, which this inbox has not", words[i][0]);
		appendStringInfoString(&buf, words[i][1]);
		p += strlen(words[i][0]) - 1;
	}
	return buf.data;
}

/*
 * Run a statement (failures_sql) on the failures tables as their owner, the way
 * VACUUM acts (retention_as_owner_begin): the extension's owner, or the
 * inbox's, whose a Citus inbox's tables are.  Returns the rows it touched;
 * SPI_tuptable has those it returned.
 */
static uint64
failures_run(FunctionCallInfo fcinfo, const CompanionTables *citus, const char *statement,
			 int nargs, Oid *types, Datum *values, const char *nulls)
{
	char	   *sql = failures_sql(fcinfo, citus, statement);
	AsOwner		as_owner;
	int			rc;

	retention_as_owner_begin(citus ? citus->inbox : registry_extension_relation(fcinfo, "failures"),
							 &as_owner);
	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
	retention_as_owner_end(&as_owner);
	if (rc < 0)
		spi_report_error(rc, "a statement on failures");
	return SPI_processed;
}

/*
 * failures_run for one message: $1 is the inbox, $2 the message id, $3 the
 * shard key (its text form, or of a Citus inbox its value; NULL for an inbox
 * without one) and $4 the transaction's start, now(), which Citus refuses in an
 * ON CONFLICT's SET; then args from $5.
 */
uint64
failures_execute(const FailureCall *call, const char *statement, int nargs, const Oid *types,
				 const Datum *args, const bool *args_null)
{
	Oid			argtypes[9] = {REGCLASSOID, TEXTOID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[9] = {ObjectIdGetDatum(call->inbox->relid), call->id_text,
		call->shard_text, TimestampTzGetDatum(GetCurrentTransactionStartTimestamp())};
	char		nulls[9] = {' ', ' ', call->shard ? ' ' : 'n', ' '};

	Assert(nargs <= 5);
	if (call->citus)
	{
		argtypes[2] = call->inbox->shard_type;
		values[2] = call->shard_value;
	}
	for (int i = 0; i < nargs; i++)
	{
		argtypes[4 + i] = types[i];
		values[4 + i] = args[i];
		nulls[4 + i] = args_null != NULL && args_null[i] ? 'n' : ' ';
	}
	return failures_run(call->fcinfo, call->citus, statement, 4 + nargs, argtypes, values, nulls);
}

/*
 * purge's part (retention.c): the failures of messages not quarantined whose
 * last failure is older than the window (applied since, or never delivered
 * again), the blocked rows of keys no longer held, and a Citus inbox's key
 * locks that no row names.  Quarantined messages stay until a verb: purge
 * never decides that a poisoned message may run.  SPI must be connected;
 * nothing to do before the extension is updated, or for a Citus inbox without
 * failures tables.  (Purge may delete a key lock row that a claim holds: it
 * waits for that claim, and the next claim of the key makes the row again.)
 */
void
failures_purge(FunctionCallInfo fcinfo, const InboxInfo *inbox, TimestampTz cutoff)
{
	Oid			types[2] = {REGCLASSOID, TIMESTAMPTZOID};
	Datum		values[2] = {ObjectIdGetDatum(inbox->relid), TimestampTzGetDatum(cutoff)};
	CompanionTables tables;
	const CompanionTables *citus = NULL;

	if (!OidIsValid(get_relname_relid("blocked", registry_extension_namespace(fcinfo))))
		return;
	if (inbox->distributed)
	{
		if (inbox->shard_attnum == InvalidAttrNumber || !citus_failures_lookup(inbox, &tables))
			return;
		citus = &tables;
	}
	failures_run(fcinfo, citus, "DELETE FROM {failures} WHERE {inbox} "
				 "AND quarantined_at IS NULL AND last_failed_at OPERATOR(pg_catalog.<) $2",
				 2, types, values, NULL);
	failures_run(fcinfo, citus, "DELETE FROM {blocked} b WHERE {inbox} "
				 "AND b.last_blocked_at OPERATOR(pg_catalog.<) $2 "
				 "AND NOT EXISTS (SELECT 1 FROM {failures} f WHERE {f has b's key} "
				 "AND f.message_id OPERATOR(pg_catalog.=) b.blocked_by)",
				 2, types, values, NULL);
	if (citus != NULL)
		failures_run(fcinfo, citus, "DELETE FROM {keys} k "
					 "WHERE NOT EXISTS (SELECT 1 FROM {failures} f "
					 "WHERE f.shard_key OPERATOR(pg_catalog.=) k.shard_key "
					 "AND f.ordering_key OPERATOR(pg_catalog.=) k.ordering_key) "
					 "AND NOT EXISTS (SELECT 1 FROM {blocked} b "
					 "WHERE b.shard_key OPERATOR(pg_catalog.=) k.shard_key "
					 "AND b.ordering_key OPERATOR(pg_catalog.=) k.ordering_key)",
					 2, types, values, NULL);
}

/* The message's failures row, locked against a concurrent failure or verb. */
static void
failure_lock(const FailureCall *call, FailureRow *row)
{
	bool		isnull;

	memset(row, 0, sizeof(FailureRow));
	if (failures_execute(call, "SELECT attempts, quarantined_at IS NOT NULL, last_error "
						 "FROM {failures} WHERE {message} FOR UPDATE",
						 0, NULL, NULL, NULL) == 0)
		return;
	row->found = true;
	row->attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	row->quarantined = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	row->last_error = DatumGetTextPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
}

/* Forget the message's failures, and that it waited behind another's (key_order.c). */
void
failure_delete(const FailureCall *call)
{
	failures_execute(call, "WITH b AS (DELETE FROM {blocked} WHERE {message}) "
					 "DELETE FROM {failures} WHERE {message}", 0, NULL, NULL, NULL);
}

/* A text argument that may be NULL, cut to at most max bytes on a character boundary. */
Datum
text_arg_clipped(FunctionCallInfo fcinfo, int argno, int max, bool *isnull)
{
	text	   *value;
	int			len;

	*isnull = PG_ARGISNULL(argno);
	if (*isnull)
		return (Datum) 0;
	value = PG_GETARG_TEXT_PP(argno);
	len = VARSIZE_ANY_EXHDR(value);
	if (len <= max)
		return PointerGetDatum(value);
	return PointerGetDatum(cstring_to_text_with_len(VARDATA_ANY(value),
													pg_mbcliplen(VARDATA_ANY(value), len, max)));
}

/* An ordering key argument: NULL, or text of 1 to INBOX_MAX_ID_BYTES bytes. */
Datum
ordering_key_arg(FunctionCallInfo fcinfo, int argno, bool *isnull)
{
	text	   *key = bounded_text_arg(fcinfo, argno, "ordering key", INBOX_MAX_ID_BYTES,
										   "Pass NULL for a message without one.");

	*isnull = key == NULL;
	return PointerGetDatum(key);
}

/*
 * The claim row of a quarantine, over an expired claim if there is one: false if
 * the id was claimed meanwhile (a delivery applied it).
 */
static bool
quarantine_claim(const FailureCall *call, bool over_expired)
{
	InboxInfo  *inbox = call->inbox;
	Datum		values[2] = {call->id,
	TimestampTzGetDatum(retention_cutoff(inbox, GetCurrentTimestamp()))};
	bool		isnull;

	if (inbox_sql_execute_key(inbox, over_expired ? SQL_QUARANTINE_EXPIRED : SQL_QUARANTINE,
							  call->shard, values, NULL) == 0)
		return false;
	if (!TIMESTAMP_IS_NOEND(DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
															  SPI_tuptable->tupdesc, 1, &isnull))))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a trigger on inbox \"%s\" changed the claimed_at of a quarantined message",
						get_rel_name(inbox->relid)),
				 errdetail("A quarantined message is claimed at 'infinity', so that no window expires it.")));
	return true;
}

/* After how many failed attempts the inbox quarantines a message. */
static int32
max_attempts(const FailureCall *call)
{
	bool		isnull;

	if (call->citus)
		return call->citus->max_attempts;
	if (failures_execute(call, "SELECT max_attempts FROM {registry} "
						 "WHERE relid OPERATOR(pg_catalog.=) $1", 0, NULL, NULL, NULL) != 1)
		elog(ERROR, "inbox \"%s\" has no registry row", get_rel_name(call->inbox->relid));
	return DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * One look at the message for record_failure: its status, with the attempts it
 * has made, or NULL when the row changed under us and must be read again.
 */
static const char *
record_attempt(const FailureCall *call, Datum *args, bool *args_null, int32 *attempts)
{
	ClaimRow	row;
	FailureRow	failure;
	bool		expired = false;
	bool		isnull;

	claim_row_read_key(call->inbox, call->id, call->shard, true, &row);
	if (row.state == ROW_INSERTING || row.state == ROW_CHANGING)
	{
		claim_row_wait(call->inbox, &row);
		return NULL;
	}
	if (row.state == ROW_PRESENT)
	{
		expired = claim_row_expired(call->inbox, &row, GetCurrentTimestamp());
		if (!expired)
		{
			failure_lock(call, &failure);
			*attempts = failure.attempts;
			if (claim_row_quarantined(&row))
				return "quarantined";
			/* Its failures are past: they no longer hold its key. */
			if (failure.found)
				failure_delete(call);
			*attempts = 0;
			return "applied";
		}
	}

	/* Counted only while not quarantined: a quarantine ends with a verb. */
	if (failures_execute(call,
						 "INSERT INTO {failures} AS f ({inbox,}message_id, shard_key, "
						 "last_error, ordering_key, attempts, first_failed_at, last_failed_at) "
						 "VALUES ({$1,}$2, $3, $5, $6, 1, $4, $4) "
						 "ON CONFLICT {message_key} DO UPDATE "
						 "SET attempts = f.attempts OPERATOR(pg_catalog.+) 1, "
						 "last_error = excluded.last_error, last_failed_at = $4, "
						 "ordering_key = COALESCE(excluded.ordering_key, f.ordering_key) "
						 "WHERE f.quarantined_at IS NULL RETURNING f.attempts",
						 2, (Oid[]) {TEXTOID, TEXTOID}, args, args_null) == 0)
		return NULL;			/* quarantined by another failure: read again */
	*attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (*attempts < max_attempts(call))
		return "retry";
	if (!quarantine_claim(call, expired))
	{
		/* Claimed meanwhile and committed: the attempt did not matter. */
		failure_delete(call);
		*attempts = 0;
		return "applied";
	}
	failures_execute(call, "UPDATE {failures} SET quarantined_at = $4 WHERE {message}",
					 0, NULL, NULL, NULL);
	return "quarantined";
}

/*
 * record_failure: count the attempt unless a delivery applied the message
 * meanwhile, and quarantine it at max_attempts.  Concurrent failures of one
 * message meet on its failures row; a claim made meanwhile meets the
 * quarantine's claim row and wins or waits, as two claims do.
 */
PG_FUNCTION_INFO_V1(inbox_record_failure);
Datum
inbox_record_failure(PG_FUNCTION_ARGS)
{
	FailureCall call;
	TupleDesc	tupdesc;
	Datum		result[2];
	bool		result_null[2] = {false, false};
	const char *status = NULL;
	int32		attempts = 0;
	Datum		args[2];
	bool		args_null[2];
	int			retries = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "record_failure must return a record");
	failure_call(fcinfo, ACL_INSERT | ACL_SELECT, &call);
	if (PG_ARGISNULL(call.argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("error must not be null"),
				 errhint("Pass the text of the error the attempt failed with.")));
	args[0] = text_arg_clipped(fcinfo, call.argno, MAX_ERROR_BYTES, &args_null[0]);
	args[1] = ordering_key_arg(fcinfo, call.argno + 1, &args_null[1]);
	spi_connect();
	/* Serialized with the key's claims in order (key_order.c). */
	if (!args_null[1])
		key_order_lock(&call, args[1]);
	while (status == NULL)
	{
		claim_row_retry(call.inbox, call.id, &retries);
		status = record_attempt(&call, args, args_null, &attempts);
	}
	SPI_finish();

	result[0] = signature_enum_label(TupleDescAttr(tupdesc, 0)->atttypid, status);
	result[1] = Int32GetDatum(attempts);
	tupdesc = BlessTupleDesc(tupdesc);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, result, result_null)));
}

/* The audit row of a verb, with what failures said of the message. */
static void
audit(const FailureCall *call, const char *verb, const FailureRow *failure)
{
	Datum		args[5];
	bool		nulls[5] = {false, false, false, !failure->found, !failure->found};

	args[0] = CStringGetTextDatum(verb);
	args[1] = DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(call->actor, false)));
	args[2] = text_arg_clipped(call->fcinfo, call->argno, MAX_ERROR_BYTES, &nulls[2]);
	args[3] = Int32GetDatum(failure->attempts);
	args[4] = PointerGetDatum(failure->last_error);
	failures_execute(call, "INSERT INTO {audit} "
					 "({inbox,}message_id, shard_key, verb, actor, reason, attempts, last_error) "
					 "VALUES ({$1,}$2, $3, $5, $6, $7, $8, $9)",
					 5, (Oid[]) {TEXTOID, NAMEOID, TEXTOID, INT4OID, TEXTOID}, args, nulls);
}

/*
 * The operator's verbs.  Each changes the message's claim (its claim_change)
 * and, when that did something, its failures, and leaves an audit row.
 *
 * retry: end the quarantine; the next delivery runs, with its attempts counted
 * afresh.  A message with an ordering key keeps its failures row, its attempts at
 * 0: the messages of its key still wait behind it until a delivery applies it.
 *
 * discard: the message counts as applied without running; a quarantined one keeps
 * its claim row, now an ordinary claim, and one never claimed gets one.
 *
 * forget: delete the claim, applied or quarantined, so the next delivery runs again.
 */
typedef enum OperatorVerb
{
	VERB_RETRY,
	VERB_DISCARD,
	VERB_FORGET
} OperatorVerb;

static const struct
{
	const char *name;
	AclMode		rights;
}			verbs[] = {
	[VERB_RETRY] = {"retry", ACL_DELETE | ACL_SELECT},
	[VERB_DISCARD] = {"discard", ACL_INSERT | ACL_UPDATE | ACL_SELECT},
	[VERB_FORGET] = {"forget", ACL_DELETE | ACL_SELECT},
};

static bool
claim_change(FailureCall *call, OperatorVerb verb)
{
	switch (verb)
	{
		case VERB_RETRY:
			return inbox_sql_execute_key(call->inbox, SQL_UNQUARANTINE, call->shard,
										 &call->id, NULL) == 1;
		case VERB_DISCARD:
			if (inbox_sql_execute_key(call->inbox, SQL_DISCARD, call->shard, &call->id, NULL) == 1)
				return true;
			return call->shard ? claim_routed(call->inbox, call->id, call->shard) :
				claim_one(call->inbox, call->id, NULL);
		case VERB_FORGET:
			return inbox_sql_execute_key(call->inbox, SQL_FORGET, call->shard,
										 &call->id, NULL) == 1;
	}
	pg_unreachable();
}

static Datum
operator_verb(FunctionCallInfo fcinfo, OperatorVerb verb)
{
	FailureCall call;
	FailureRow	failure;
	bool		done;

	failure_call(fcinfo, verbs[verb].rights, &call);
	spi_connect();
	failure_lock(&call, &failure);
	done = claim_change(&call, verb);
	if (done)
	{
		if (verb == VERB_RETRY)
			failures_execute(&call, "WITH d AS (DELETE FROM {failures} WHERE {message} "
							 "AND ordering_key IS NULL) "
							 "UPDATE {failures} SET attempts = 0, quarantined_at = NULL "
							 "WHERE {message} AND ordering_key IS NOT NULL",
							 0, NULL, NULL, NULL);
		else
			failure_delete(&call);
		audit(&call, verbs[verb].name, &failure);
	}
	SPI_finish();
	return BoolGetDatum(done);
}

PG_FUNCTION_INFO_V1(inbox_retry);
Datum
inbox_retry(PG_FUNCTION_ARGS)
{
	return operator_verb(fcinfo, VERB_RETRY);
}

PG_FUNCTION_INFO_V1(inbox_discard);
Datum
inbox_discard(PG_FUNCTION_ARGS)
{
	return operator_verb(fcinfo, VERB_DISCARD);
}

PG_FUNCTION_INFO_V1(inbox_forget);
Datum
inbox_forget(PG_FUNCTION_ARGS)
{
	return operator_verb(fcinfo, VERB_FORGET);
}
