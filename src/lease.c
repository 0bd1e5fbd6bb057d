/*
 * lease.c
 *		acquire, finish and release: idempotency keys for effects that leave the
 *		database (a card charge, an email, an HTTP call).
 *
 * Such an effect cannot commit with its claim, so the claim is committed first,
 * as a lease: "an attempt is running until lease_until".  Retries meanwhile are
 * told in_progress; once the attempt finishes they are told completed and get the
 * stored result to replay.  An attempt that dies (its lease runs out, or, for a
 * session-bound lease, its backend is gone) is taken over by the next acquirer
 * with a higher token.  Tokens come from one sequence, so a token is never issued
 * twice, even for a key that was released or purged and acquired again; finish
 * and release check it, which fences off a holder that was presumed dead.
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "commands/sequence.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "inbox_info.h"
#include "claim_routed.h"
#include "claim_row.h"
#include "fingerprint.h"
#include "inbox_sql.h"
#include "lease.h"
#include "message_id.h"
#include "registry.h"
#include "retention.h"
#include "signature.h"
#include "spi_util.h"
#include "stats.h"

/*
 * idempotent_inbox.behind_pooler: this session's server connection belongs to a
 * connection pooler, which keeps it open after its client leaves and may close it
 * while the client still works.  A session-bound lease would then end when the
 * pooler closes the connection, not when the client goes: too late after a client
 * crash, and, worse, too early for a client still running its effect.  Nothing in
 * the backend tells a pooled session from a direct one, so the pooler's role or
 * database says so and acquire refuses such leases.
 */
static bool behind_pooler = false;

void
lease_init(void)
{
	DefineCustomBoolVariable("idempotent_inbox.behind_pooler",
							 "Refuses session-bound leases: server connections outlive their clients.",
							 "Set it for the role or database a connection pooler (PgBouncer, "
							 "RDS Proxy) logs in with.",
							 &behind_pooler,
							 false,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

typedef enum LeaseStatus
{
	LEASE_ACQUIRED,
	LEASE_IN_PROGRESS,
	LEASE_COMPLETED,
	LEASE_QUARANTINED
} LeaseStatus;

static const char *const lease_status_labels[] = {"acquired", "in_progress", "completed",
"quarantined"};

/* What acquire answers. */
typedef struct LeaseAnswer
{
	LeaseStatus status;
	bool		has_token;
	int64		token;
	Jsonb	   *result;
} LeaseAnswer;

/* The lease an acquirer asks for. */
typedef struct LeaseRequest
{
	Datum		message_id;
	const Datum *shard;			/* its shard key value, for a sharded inbox */
	bytea	   *fingerprint;
	TimestampTz until;
	bool		session_bound;
} LeaseRequest;

static int64
next_token(FunctionCallInfo fcinfo)
{
	Oid			seqid = registry_extension_relation(fcinfo, "lease_tokens");

	/* Callers need no rights on the sequence: tokens are ours to hand out. */
	return nextval_internal(seqid, false);
}

/* Columns 2..6 of the lease statements: fingerprint, token and the holder. */
static void
lease_values(const LeaseRequest *req, int64 token, Datum *values, char *nulls)
{
	values[0] = req->message_id;
	nulls[0] = ' ';
	values[1] = PointerGetDatum(req->fingerprint);
	nulls[1] = req->fingerprint ? ' ' : 'n';
	values[2] = Int64GetDatum(token);
	nulls[2] = ' ';
	values[3] = TimestampTzGetDatum(req->until);
	nulls[3] = ' ';
	values[4] = Int32GetDatum(MyProcPid);
	nulls[4] = req->session_bound ? ' ' : 'n';
	values[5] = TimestampTzGetDatum(MyStartTimestamp);
	nulls[5] = req->session_bound ? ' ' : 'n';
}

/*
 * One attempt to write a new lease: a fresh row, a fresh claim over an expired
 * one, or a takeover of a stale lease.  False when the row changed since it was
 * read, and the caller reads again.
 */
static bool
lease_write(FunctionCallInfo fcinfo, InboxInfo *inbox, const LeaseRequest *req,
			InboxStatement which, const ClaimRow *row, TimestampTz now, LeaseAnswer *answer)
{
	Datum		values[8];
	char		nulls[8];
	int64		token = next_token(fcinfo);

	lease_values(req, token, values, nulls);
	if (which == SQL_RECLAIM)
	{
		values[6] = TimestampTzGetDatum(retention_cutoff(inbox, now));
		values[7] = TimestampTzGetDatum(now);
		nulls[6] = nulls[7] = ' ';
	}
	else if (which == SQL_TAKEOVER)
	{
		values[6] = Int64GetDatum(row->token);
		nulls[6] = ' ';
	}
	if (which == SQL_CLAIM_FULL)
	{
		if (!claim_row_stored(inbox, req->message_id, req->shard,
							  inbox_sql_execute_key(inbox, which, req->shard, values, nulls)))
			return false;
	}
	else if (inbox_sql_execute_key(inbox, which, req->shard, values, nulls) != 1)
		return false;

	answer->status = LEASE_ACQUIRED;
	answer->has_token = true;
	answer->token = token;
	answer->result = NULL;
	stats_count(inbox, which == SQL_TAKEOVER ? COUNT_TAKEOVERS : COUNT_CLAIMS, 1);
	return true;
}

/*
 * Decide from the row as it is now, and write only if the decision still holds
 * when the write runs; otherwise look again.  A fresh claim another transaction
 * has not committed yet is a live attempt (in_progress), not something to wait
 * for: acquire never blocks on another attempt, only on the short statements
 * that change a committed row.
 */
static void
acquire_lease(FunctionCallInfo fcinfo, InboxInfo *inbox, const LeaseRequest *req,
			  LeaseAnswer *answer)
{
	int			retries = 0;

	for (;;)
	{
		ClaimRow	row;
		TimestampTz now = GetCurrentTimestamp();

		claim_row_retry(inbox, req->message_id, &retries);
		claim_row_read_key(inbox, req->message_id, req->shard, true, &row);
		switch (row.state)
		{
			case ROW_ABSENT:
				if (lease_write(fcinfo, inbox, req, SQL_CLAIM_FULL, &row, now, answer))
					return;
				continue;
			case ROW_CHANGING:
				claim_row_wait(inbox, &row);
				continue;
			case ROW_INSERTING:
				break;
			case ROW_PRESENT:
				if (claim_row_expired(inbox, &row, now))
				{
					if (lease_write(fcinfo, inbox, req, SQL_RECLAIM, &row, now, answer))
						return;
					continue;
				}
				if (claim_row_quarantined(&row))
				{
					/* Failed too often (failures.c): not to be run until retried. */
					answer->status = LEASE_QUARANTINED;
					answer->has_token = false;
					answer->result = NULL;
					stats_count(inbox, COUNT_DUPLICATES, 1);
					return;
				}
				fingerprint_check(inbox, req->message_id, &row, req->fingerprint);
				if (!row.leased)
				{
					answer->status = LEASE_COMPLETED;
					answer->has_token = row.has_token;
					answer->token = row.token;
					answer->result = NULL;
					if (row.result != NULL)
					{
						/* SPI_finish frees what was read; the answer outlives it. */
						answer->result = SPI_palloc(VARSIZE(row.result));
						memcpy(answer->result, row.result, VARSIZE(row.result));
					}
					stats_count(inbox, COUNT_DUPLICATES, 1);
					return;
				}
				if (!claim_row_lease_live(&row, now))
				{
					if (lease_write(fcinfo, inbox, req, SQL_TAKEOVER, &row, now, answer))
						return;
					continue;
				}
				break;
		}

		answer->status = LEASE_IN_PROGRESS;
		answer->has_token = false;
		answer->result = NULL;
		stats_count(inbox, COUNT_IN_PROGRESS, 1);
		return;
	}
}

/* A lease must be a positive span of time. */
static TimestampTz
lease_until(FunctionCallInfo fcinfo, int argno)
{
	Interval   *lease;
	Interval	zero;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("lease must not be null"),
				 errhint("Give the longest time the outside call may take, such as '30 seconds'.")));
	lease = PG_GETARG_INTERVAL_P(argno);
	memset(&zero, 0, sizeof(zero));
	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(lease),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease must be a positive interval")));
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(GetCurrentTimestamp()),
												   IntervalPGetDatum(lease)));
}

static bool
bool_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	return PG_GETARG_BOOL(argno);
}

/*
 * A session-bound lease is judged live by looking for its holder among the
 * backends of the node that reads it.  On a Citus table the lease may be taken
 * on one node (the coordinator, or a worker in a delegated function) and read
 * on another, which cannot see that backend: it would be taken over as dead.
 * And on a worker the holder is one of Citus's cached connections, which
 * outlive the client as a pooler's do.
 */
static void
check_session_bound(const InboxInfo *inbox)
{
	if (behind_pooler)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session-bound leases cannot be taken through a connection pooler"),
				 errdetail("idempotent_inbox.behind_pooler is on: the pooler keeps this server "
						   "connection after its client leaves and may close it while the client "
						   "still works, so the lease would not end with the client."),
				 errhint("Acquire without session_bound: the lease then ends at its time, or "
						 "connect to the server directly.")));
	if (inbox->distributed)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("session-bound leases are not supported on distributed inbox \"%s\"",
						get_rel_name(inbox->relid)),
				 errdetail("A lease's holder is a backend of one node, which the other nodes of "
						   "a Citus cluster cannot see, and on a worker it is a connection Citus "
						   "keeps open after its client leaves."),
				 errhint("Acquire without session_bound: the lease then ends at its time.")));
}

/* acquire, and acquire_sharded, which takes the shard key before the key. */
PG_FUNCTION_INFO_V1(inbox_acquire);
Datum
inbox_acquire(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock,
										ACL_INSERT | ACL_SELECT | ACL_UPDATE);
	int			argno = sig->keyargno;
	Datum		shard_value;
	LeaseRequest req;
	LeaseAnswer answer = {0};
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	req.shard = claim_routed_shard_arg(fcinfo, sig, inbox, &shard_value);
	registry_check_stored_reads(fcinfo, inbox);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "acquire must return a row");
	tupdesc = BlessTupleDesc(tupdesc);

	req.message_id = message_id_from_arg(fcinfo, argno, sig->keytype, inbox);
	req.until = lease_until(fcinfo, argno + 1);
	req.fingerprint = fingerprint_arg(fcinfo, argno + 2);
	req.session_bound = bool_arg(fcinfo, argno + 3, "session_bound");
	if (req.session_bound)
		check_session_bound(inbox);

	spi_connect();
	acquire_lease(fcinfo, inbox, &req, &answer);
	SPI_finish();

	values[0] = signature_enum_label(TupleDescAttr(tupdesc, 0)->atttypid,
									 lease_status_labels[answer.status]);
	values[1] = Int64GetDatum(answer.token);
	nulls[1] = !answer.has_token;
	values[2] = PointerGetDatum(answer.result);
	nulls[2] = answer.result == NULL;

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

static int64
token_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("lease token must not be null"),
				 errhint("Pass the token that inbox.acquire() returned.")));
	return PG_GETARG_INT64(argno);
}

static bool
results_equal(const Jsonb *a, const Jsonb *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return compareJsonbContainers((JsonbContainer *) &a->root,
								  (JsonbContainer *) &b->root) == 0;
}

/* Why a token no longer holds its key, read after a finish or release missed. */
static void
report_stale_token(InboxInfo *inbox, Datum message_id, int64 token, const ClaimRow *row)
{
	const char *id = message_id_to_cstring(inbox, message_id);

	ereport(ERROR,
			(errcode(ERRCODE_STALE_LEASE_TOKEN),
			 errmsg("lease token " INT64_FORMAT " no longer holds idempotency key \"%s\"",
					token, id),
			 row->state != ROW_PRESENT ?
			 errdetail("No attempt holds the key: it was released, purged, or never acquired.") :
			 !row->has_token ?
			 errdetail("The key was claimed without a lease.") :
			 row->token != token ?
			 errdetail("The lease was taken over by token " INT64_FORMAT ".", row->token) :
			 errdetail("The attempt with this token has already finished."),
			 errhint("Another attempt may have run the effect: do not report this one as done.")));
}

/* finish and finish_sharded; the same for release below. */
PG_FUNCTION_INFO_V1(inbox_finish);
Datum
inbox_finish(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_SELECT | ACL_UPDATE);
	int			argno = sig->keyargno;
	Datum		shard_value;
	const Datum *shard = claim_routed_shard_arg(fcinfo, sig, inbox, &shard_value);
	Datum		id = message_id_from_arg(fcinfo, argno, sig->keytype, inbox);
	int64		token = token_arg(fcinfo, argno + 1);
	Jsonb	   *result = PG_ARGISNULL(argno + 2) ? NULL : PG_GETARG_JSONB_P(argno + 2);
	Datum		values[3] = {id, Int64GetDatum(token), PointerGetDatum(result)};
	char		nulls[3] = {' ', ' ', result ? ' ' : 'n'};
	ClaimRow	row;

	registry_check_stored_reads(fcinfo, inbox);

	spi_connect();
	if (inbox_sql_execute_key(inbox, SQL_FINISH, shard, values, nulls) == 1)
	{
		SPI_finish();
		PG_RETURN_VOID();
	}
	SPI_finish();

	/* A repeated finish (the first one's reply was lost) changes nothing. */
	claim_row_read_key(inbox, id, shard, true, &row);
	if (row.state == ROW_PRESENT && row.has_token && row.token == token && !row.leased &&
		results_equal(row.result, result))
		PG_RETURN_VOID();
	report_stale_token(inbox, id, token, &row);
	PG_RETURN_VOID();			/* not reached */
}

PG_FUNCTION_INFO_V1(inbox_release);
Datum
inbox_release(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_SELECT | ACL_DELETE);
	Datum		shard_value;
	const Datum *shard = claim_routed_shard_arg(fcinfo, sig, inbox, &shard_value);
	Datum		id = message_id_from_arg(fcinfo, sig->keyargno, sig->keytype, inbox);
	int64		token = token_arg(fcinfo, sig->keyargno + 1);
	Datum		values[2] = {id, Int64GetDatum(token)};
	ClaimRow	row;
	int			released;

	registry_check_stored_reads(fcinfo, inbox);

	spi_connect();
	released = inbox_sql_execute_key(inbox, SQL_RELEASE, shard, values, NULL);
	SPI_finish();
	if (released == 1)
		PG_RETURN_VOID();

	claim_row_read_key(inbox, id, shard, true, &row);
	report_stale_token(inbox, id, token, &row);
	PG_RETURN_VOID();			/* not reached */
}
