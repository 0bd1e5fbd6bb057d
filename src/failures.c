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
 * They are kept on one node, so not for a Citus table, whose shards move.
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
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
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
	static const char *const settings[][2] = {
		{"DateStyle", "ISO, YMD"}, {"IntervalStyle", "postgres"}, {"TimeZone", "UTC"},
		{"extra_float_digits", "1"}, {"bytea_output", "hex"}, {"lc_monetary", "C"}
	};
	Oid			output;
	bool		varlena;
	int			level = NewGUCNestLevel();
	char	   *string;

	for (size_t i = 0; i < lengthof(settings); i++)
		(void) set_config_option(settings[i][0], settings[i][1], PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	if (getBaseType(inbox->shard_type) == NUMERICOID)
		value = DirectFunctionCall1(numeric_trim_scale, value);
	getTypeOutputInfo(inbox->shard_type, &output, &varlena);
	string = OidOutputFunctionCall(output, value);
	AtEOXact_GUC(true, level);
	return CStringGetTextDatum(string);
}

void
failure_call(FunctionCallInfo fcinfo, AclMode rights, FailureCall *call)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	bool		sharded_call = sig->keyargno == 2;

	call->fcinfo = fcinfo;
	call->actor = GetUserId();
	call->inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, rights);
	registry_check_not_distributed(fcinfo, call->inbox);
	registry_check_shard_form(fcinfo, call->inbox, sharded_call);
	/* The answers come from the stored claim, which a policy may hide. */
	registry_check_stored_reads(fcinfo, call->inbox);
	call->shard = NULL;
	call->shard_text = (Datum) 0;
	if (sharded_call)
	{
		call->shard_value = claim_routed_shard_key(fcinfo, 1, call->inbox);
		call->shard = &call->shard_value;
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
 * Run a statement on the extension's tables as their owner, under
 * SECURITY_RESTRICTED_OPERATION: %1$s in sql is the extension's schema.
 * Returns the rows it touched; SPI_tuptable has those it returned.
 */
static uint64
failures_run(FunctionCallInfo fcinfo, const char *sql, int nargs, Oid *types,
			 Datum *values, const char *nulls)
{
	Oid			nspid = registry_extension_namespace(fcinfo);
	Oid			relid = registry_extension_relation(fcinfo, "failures");
	Oid			owner;
	Oid			save_userid;
	int			save_sec_context;
	HeapTuple	tuple;
	int			rc;

	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	rc = SPI_execute_with_args(psprintf(sql, quote_identifier(get_namespace_name(nspid))),
							   nargs, types, values, nulls, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (rc < 0)
		spi_report_error(rc, "a statement on failures");
	return SPI_processed;
}

/*
 * failures_run for one message: $1 is the inbox, $2 the message id and $3 the
 * shard key (FAILURE_IS), then args from $4.
 */
uint64
failures_execute(const FailureCall *call, const char *sql, int nargs, const Oid *types,
				 const Datum *args, const bool *args_null)
{
	Oid			argtypes[8] = {REGCLASSOID, TEXTOID, TEXTOID};
	Datum		values[8] = {ObjectIdGetDatum(call->inbox->relid), call->id_text,
	call->shard_text};
	char		nulls[8] = {' ', ' ', call->shard ? ' ' : 'n'};

	Assert(nargs <= 5);
	for (int i = 0; i < nargs; i++)
	{
		argtypes[3 + i] = types[i];
		values[3 + i] = args[i];
		nulls[3 + i] = args_null != NULL && args_null[i] ? 'n' : ' ';
	}
	return failures_run(call->fcinfo, sql, 3 + nargs, argtypes, values, nulls);
}

/*
 * purge's part (retention.c): the failures of messages not quarantined whose
 * last failure is older than the window (applied since, or never delivered
 * again), and the blocked rows of keys no longer held.  Quarantined messages
 * stay until a verb: purge never decides that a poisoned message may run.
 * SPI must be connected; nothing to do before the extension is updated.
 */
void
failures_purge(FunctionCallInfo fcinfo, const InboxInfo *inbox, TimestampTz cutoff)
{
	Oid			types[2] = {REGCLASSOID, TIMESTAMPTZOID};
	Datum		values[2] = {ObjectIdGetDatum(inbox->relid), TimestampTzGetDatum(cutoff)};

	if (!OidIsValid(get_relname_relid("blocked", registry_extension_namespace(fcinfo))))
		return;
	failures_run(fcinfo, "DELETE FROM %1$s.failures WHERE inbox OPERATOR(pg_catalog.=) $1 "
				 "AND quarantined_at IS NULL AND last_failed_at OPERATOR(pg_catalog.<) $2",
				 2, types, values, NULL);
	failures_run(fcinfo, "DELETE FROM %1$s.blocked b WHERE b.inbox OPERATOR(pg_catalog.=) $1 "
				 "AND b.last_blocked_at OPERATOR(pg_catalog.<) $2 "
				 "AND NOT EXISTS (SELECT 1 FROM %1$s.failures f "
				 "WHERE f.inbox OPERATOR(pg_catalog.=) b.inbox "
				 "AND f.message_id OPERATOR(pg_catalog.=) b.blocked_by "
				 "AND f.shard_key IS NOT DISTINCT FROM b.shard_key)",
				 2, types, values, NULL);
}

/* The message's failures row, locked against a concurrent failure or verb. */
static void
failure_lock(const FailureCall *call, FailureRow *row)
{
	bool		isnull;

	memset(row, 0, sizeof(FailureRow));
	if (failures_execute(call, "SELECT attempts, quarantined_at IS NOT NULL, last_error "
						 "FROM %1$s.failures WHERE " FAILURE_IS " FOR UPDATE",
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
	failures_execute(call, "WITH b AS (DELETE FROM %1$s.blocked WHERE " FAILURE_IS ") "
					 "DELETE FROM %1$s.failures WHERE " FAILURE_IS, 0, NULL, NULL, NULL);
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
	int32		max_attempts;

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
						 "INSERT INTO %1$s.failures AS f "
						 "(inbox, message_id, shard_key, last_error, ordering_key, attempts) "
						 "VALUES ($1, $2, $3, $4, $5, 1) "
						 "ON CONFLICT (inbox, message_id, shard_key) DO UPDATE "
						 "SET attempts = f.attempts OPERATOR(pg_catalog.+) 1, "
						 "last_error = excluded.last_error, last_failed_at = pg_catalog.now(), "
						 "ordering_key = COALESCE(excluded.ordering_key, f.ordering_key) "
						 "WHERE f.quarantined_at IS NULL "
						 "RETURNING f.attempts, (SELECT r.max_attempts FROM %1$s.registry r "
						 "WHERE r.relid OPERATOR(pg_catalog.=) $1)",
						 2, (Oid[]) {TEXTOID, TEXTOID}, args, args_null) == 0)
		return NULL;			/* quarantined by another failure: read again */
	*attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	max_attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	if (*attempts < max_attempts)
		return "retry";
	if (!quarantine_claim(call, expired))
	{
		/* Claimed meanwhile and committed: the attempt did not matter. */
		failure_delete(call);
		*attempts = 0;
		return "applied";
	}
	failures_execute(call, "UPDATE %1$s.failures SET quarantined_at = pg_catalog.now() "
					 "WHERE " FAILURE_IS, 0, NULL, NULL, NULL);
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
	/* Serialized with the key's claims in order (key_order.c). */
	if (!args_null[1])
		key_order_lock(&call, args[1]);

	spi_connect();
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
	failures_execute(call, "INSERT INTO %1$s.audit_log "
					 "(inbox, message_id, shard_key, verb, actor, reason, attempts, last_error) "
					 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
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
			failures_execute(&call, "WITH d AS (DELETE FROM %1$s.failures WHERE " FAILURE_IS
							 " AND ordering_key IS NULL) "
							 "UPDATE %1$s.failures SET attempts = 0, quarantined_at = NULL "
							 "WHERE " FAILURE_IS " AND ordering_key IS NOT NULL",
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
