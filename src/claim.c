/*
 * claim.c
 *		claim, try_claim and claim_many: record that a message id is being applied,
 *		in the caller's transaction.
 *
 * A claim is an INSERT ... ON CONFLICT DO NOTHING into the inbox, which gives
 * exactly the semantics we promise without a subtransaction:
 *	- a committed claim of the id makes it a duplicate, and writes nothing (the
 *	  executor checks the index before inserting);
 *	- an uncommitted claim by another transaction makes us wait for it, like any
 *	  unique index, and lock_timeout and statement_timeout apply to that wait;
 *	- under REPEATABLE READ and SERIALIZABLE, a conflicting claim committed after our
 *	  snapshot is a serialization failure (40001), never a wrong answer;
 *	- ROLLBACK removes the claim, so a redelivery is applied later.
 *
 * Every claim of one id (claim, try_claim past its probe, claim_apply, the dedup
 * trigger) goes through claim_dispatch, which takes the first path that applies;
 * each path calls only downward (claim_direct.c, claim_row.c, inbox_sql.c):
 *
 *	path		taken when								what it does
 *	checked		the inbox has a retention window,		INSERT (the direct one where
 *				or a fingerprint is given				allowed, else SQL), or the probe
 *														first as below; a conflict reads
 *														the row: an expired claim is
 *														reclaimed (SQL_RECLAIM), a
 *														fingerprint compared
 *	direct		inbox_shape_direct_ok and				claim_direct: probe, then a
 *				direct_access_allowed for this call		speculative insert, no executor;
 *														the insert first while nearly
 *														every id is fresh (below)
 *	SQL			otherwise (triggers, rules, RLS,		the probe first when it pays,
 *				partitions, snapshot isolation, ...)	then SQL_CLAIM (inbox_sql.c)
 *	routed		before all of these, for a Citus		one statement that decides
 *				table or a sharded inbox				alone (claim_routed.c)
 *
 *	probe		(within checked and SQL) one duplicate in four recently, or
 *				idempotent_inbox.force_path=probe; never under snapshot isolation
 *				or row security: a committed row answers "duplicate" alone
 *				(within direct) unless fewer than one duplicate in 64 recently,
 *				or force_path=insert: there the probe is all a duplicate writes
 *				nothing for, but a second index descent for every fresh id
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/fmgroids.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "inbox_info.h"
#include "adaptive.h"
#include "citus_failures.h"
#include "claim.h"
#include "claim_direct.h"
#include "claim_routed.h"
#include "claim_row.h"
#include "fingerprint.h"
#include "inbox_sql.h"
#include "message_id.h"
#include "registry.h"
#include "retention.h"
#include "signature.h"
#include "spi_util.h"
#include "stats.h"

/*
 * The duplicate that needs no INSERT: under READ COMMITTED a claim that is
 * committed (or our own) is a duplicate, exactly as ON CONFLICT DO NOTHING would
 * decide, and answering from the index alone skips the executor.  Snapshot
 * isolation must also know whether the claim is visible to the transaction's
 * snapshot, so it always takes the INSERT path, which raises 40001 if not.
 */
static bool
is_plain_duplicate(const ClaimRow *row)
{
	return row->state == ROW_PRESENT && !IsolationUsesXactSnapshot();
}

/*
 * The probe pays for itself only when duplicates are common: on a fresh id it is
 * a second descent of the index that the INSERT repeats anyway.  So each backend
 * keeps, per inbox, a moving average of how often claims were duplicates and
 * probes first only above one in four.  Both paths give the same answer; this
 * only picks the cheaper one.
 */
#define DUP_PROBE_THRESHOLD (SHARE_SCALE / 4)

/*
 * The direct path probes unless duplicates are rarer than this: skipping its
 * probe saves no executor, only an index descent, and costs a duplicate a
 * killed row, so it pays only where duplicates are rare (a bulk load, a
 * consumer between crashes).  After one duplicate the next twenty-odd claims
 * probe again.
 */
#define DIRECT_PROBE_THRESHOLD (SHARE_SCALE / 64)

static bool
direct_probe_first(const InboxInfo *inbox)
{
	return adaptive_goes_first(inbox->dup_rate >= DIRECT_PROBE_THRESHOLD, STEP_READ);
}

/*
 * Whether to probe first: as above, unless idempotent_inbox.force_path says.
 * Never where row security applies to the caller: the probe reads the index
 * directly, so it would answer "duplicate" from a row the policies hide, where
 * the INSERT refuses the new row (42501) as the SQL it stands for does.  Nor
 * with BEFORE INSERT row triggers, which ON CONFLICT DO NOTHING fires before it
 * finds the conflict: a duplicate must fire them whatever this backend's history.
 */
static bool
probe_pays(const InboxInfo *inbox)
{
	return adaptive_goes_first(inbox->dup_rate >= DUP_PROBE_THRESHOLD, STEP_READ) &&
		!inbox->insert_triggers &&
		check_enable_rls(inbox->relid, InvalidOid, true) != RLS_ENABLED;
}

static bool
record_outcome(InboxInfo *inbox, bool duplicate)
{
	share_record(&inbox->dup_rate, duplicate);
	stats_count(inbox, duplicate ? COUNT_DUPLICATES : COUNT_CLAIMS, 1);
	return !duplicate;
}

/*
 * The INSERT; true when it wrote the claim.  SPI must be connected.  Without the
 * executor where the inbox allows it (claim_direct.c), else as SQL.
 */
static bool
claim_insert(InboxInfo *inbox, Datum message_id, const Datum *shard, bytea *fingerprint)
{
	Datum		values[6] = {message_id, PointerGetDatum(fingerprint)};
	char		nulls[6] = {' ', fingerprint ? ' ' : 'n', 'n', 'n', 'n', 'n'};

	if (fingerprint == NULL && shard == NULL)
	{
		ClaimDirectResult direct = claim_direct(inbox, message_id, direct_probe_first(inbox), NULL);

		if (direct != CLAIM_DIRECT_UNAVAILABLE)
			return direct == CLAIM_DIRECT_CLAIMED;
		return claim_row_stored(inbox, message_id, NULL,
								inbox_sql_execute(inbox, SQL_CLAIM, values, NULL));
	}
	return claim_row_stored(inbox, message_id, shard,
							inbox_sql_execute_key(inbox, SQL_CLAIM_FULL, shard, values, nulls));
}

/* A fresh claim in place of an expired one; false if the row changed meanwhile. */
static bool
claim_reclaim(InboxInfo *inbox, Datum message_id, const Datum *shard, bytea *fingerprint,
			  TimestampTz now)
{
	Datum		values[8] = {message_id, PointerGetDatum(fingerprint), 0, 0, 0, 0,
							 TimestampTzGetDatum(retention_cutoff(inbox, now)),
							 TimestampTzGetDatum(now)};
	char		nulls[8] = {' ', fingerprint ? ' ' : 'n', 'n', 'n', 'n', 'n', ' ', ' '};

	return inbox_sql_execute_key(inbox, SQL_RECLAIM, shard, values, nulls) == 1;
}

/*
 * A claim that must look at the row it conflicts with: to compare fingerprints,
 * or to treat a claim older than the inbox's retention as absent.  Each pass
 * either writes, or reads a committed row and answers from it; a row that another
 * transaction is changing is waited for, and one that vanished is tried again.
 * shard: the shard key value of a sharded inbox, NULL for others.
 */
static bool
claim_checked(InboxInfo *inbox, Datum message_id, const Datum *shard, bytea *fingerprint)
{
	/* Under snapshot isolation only the INSERT can tell a visible claim (see above). */
	bool		probe_first = probe_pays(inbox) && !IsolationUsesXactSnapshot();
	int			retries = 0;

	registry_check_window_rights(inbox);
	for (;;)
	{
		ClaimRow	row;
		TimestampTz now;

		claim_row_retry(inbox, message_id, &retries);
		if (!probe_first && claim_insert(inbox, message_id, shard, fingerprint))
			return record_outcome(inbox, false);
		probe_first = false;

		claim_row_read_key(inbox, message_id, shard, true, &row);
		if (row.state == ROW_ABSENT)
			continue;
		if (row.state != ROW_PRESENT)
		{
			claim_row_wait(inbox, &row);
			continue;
		}

		now = GetCurrentTimestamp();
		if (claim_row_expired(inbox, &row, now))
		{
			if (claim_reclaim(inbox, message_id, shard, fingerprint, now))
				return record_outcome(inbox, false);
			continue;
		}
		fingerprint_check(inbox, message_id, &row, fingerprint);
		/* Read anyway: claim_quarantined_after_claim asks next. */
		inbox->dup_row_known = true;
		inbox->dup_row_quarantined = claim_row_quarantined(&row);
		return record_outcome(inbox, true);
	}
}

/*
 * The direct path, when this call may take it (claim_direct.c): true, with the
 * answer in *claimed, when it answered.  It probes first itself, so a duplicate
 * writes nothing there.
 */
static bool
claim_directly(InboxInfo *inbox, Datum message_id, HeldInbox *held, bool *claimed)
{
	ClaimDirectResult direct = claim_direct(inbox, message_id, direct_probe_first(inbox), held);

	if (direct == CLAIM_DIRECT_UNAVAILABLE)
		return false;
	*claimed = record_outcome(inbox, direct == CLAIM_DIRECT_DUPLICATE);
	return true;
}

/* A claim without retention or fingerprint, through SQL.  SPI must be connected. */
static bool
claim_by_sql(InboxInfo *inbox, Datum message_id)
{
	ClaimRow	row;

	if (probe_pays(inbox))
	{
		claim_row_read(inbox, message_id, false, &row);
		if (is_plain_duplicate(&row))
			return record_outcome(inbox, true);
	}
	return record_outcome(inbox,
						  !claim_row_stored(inbox, message_id,
											NULL,
											inbox_sql_execute(inbox, SQL_CLAIM, &message_id, NULL)));
}

/*
 * The dispatcher: the paths tabled at the head of this file, in that order.
 * True when the claim row was written by this call, false when the id was
 * already claimed (committed, or earlier in this transaction).  fingerprint may
 * be NULL.  connected: the caller has connected SPI; if not, SPI is connected
 * only for the paths that need it, since the direct path needs none and
 * connecting costs more than the claim itself when done for every row of a COPY.
 */
static bool
claim_dispatch(InboxInfo *inbox, Datum message_id, bytea *fingerprint, bool connected,
			   HeldInbox *held)
{
	bool		checked = inbox->has_retention || fingerprint != NULL;
	bool		claimed;

	inbox->dup_row_known = false;
	if (inbox->routed && fingerprint == NULL)
	{
		if (!connected)
			spi_connect();
		claimed = claim_routed(inbox, message_id, NULL);
		if (!connected)
			SPI_finish();
		return claimed;
	}
	if (!checked && claim_directly(inbox, message_id, held, &claimed))
		return claimed;

	if (!connected)
		spi_connect();
	claimed = checked ? claim_checked(inbox, message_id, NULL, fingerprint) :
		claim_by_sql(inbox, message_id);
	if (!connected)
		SPI_finish();
	return claimed;
}

/*
 * After a duplicate: is the id quarantined (failures.c)?  One more look at its
 * claim, for the functions that answer quarantined apart from duplicate;
 * shard is the shard key value of a sharded inbox, else NULL.  A Citus table
 * has a quarantine only once it has failures tables (citus_failures.c).
 */
bool
claim_quarantined(InboxInfo *inbox, Datum message_id, const Datum *shard)
{
	ClaimRow	row;

	inbox->dup_row_known = false;
	if (inbox->distributed && !citus_failures_exist(inbox))
		return false;
	claim_row_read_key(inbox, message_id, shard, true, &row);
	return claim_row_quarantined(&row);
}

/*
 * The same, right after claim_one of this id answered duplicate: the look that
 * found it (claim_direct.c, claim_checked) has read the row already and says so,
 * which saves a duplicate its second look.
 */
bool
claim_quarantined_after_claim(InboxInfo *inbox, Datum message_id, const Datum *shard)
{
	if (inbox->dup_row_known && !inbox->routed)
	{
		inbox->dup_row_known = false;
		return inbox->dup_row_quarantined;
	}
	return claim_quarantined(inbox, message_id, shard);
}

/* Claim one id, for callers that have connected SPI (claim_apply, try_claim). */
bool
claim_one(InboxInfo *inbox, Datum message_id, bytea *fingerprint)
{
	return claim_dispatch(inbox, message_id, fingerprint, true, NULL);
}

/*
 * Claim one id without a fingerprint, for a caller without SPI: the dedup trigger,
 * which keeps the inbox open across the rows of its statement in held.
 */
bool
claim_one_connecting(InboxInfo *inbox, Datum message_id, HeldInbox *held)
{
	return claim_dispatch(inbox, message_id, NULL, false, held);
}

PG_FUNCTION_INFO_V1(inbox_claim);
Datum
inbox_claim(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_INSERT | ACL_SELECT);
	Datum		id;
	bytea	   *fingerprint;

	id = message_id_from_arg(fcinfo, 1, sig->keytype, inbox);
	fingerprint = fingerprint_arg(fcinfo, 2);

	/* Comparing fingerprints reads the stored one, which a policy may hide. */
	if (fingerprint != NULL)
		registry_check_stored_reads(fcinfo, inbox);

	PG_RETURN_BOOL(claim_dispatch(inbox, id, fingerprint, false, NULL));
}

/*
 * claim of a sharded inbox: the shard key value, then the message id, and
 * maybe a fingerprint, compared with the stored one as claim() does.
 */
PG_FUNCTION_INFO_V1(inbox_claim_sharded);
Datum
inbox_claim_sharded(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_INSERT | ACL_SELECT);
	Datum		shard_key;
	Datum		id;
	bytea	   *fingerprint = NULL;
	bool		claimed;

	registry_check_shard_form(fcinfo, inbox, true);
	shard_key = claim_routed_shard_key(fcinfo, 1, inbox);
	id = message_id_from_arg(fcinfo, sig->keyargno, sig->keytype, inbox);
	if (PG_NARGS() > sig->keyargno + 1)
		fingerprint = fingerprint_arg(fcinfo, sig->keyargno + 1);

	spi_connect();
	if (fingerprint != NULL)
	{
		registry_check_stored_reads(fcinfo, inbox);
		inbox->dup_row_known = false;
		claimed = claim_checked(inbox, id, &shard_key, fingerprint);
	}
	else
		claimed = claim_routed(inbox, id, &shard_key);
	SPI_finish();
	PG_RETURN_BOOL(claimed);
}

/*
 * try_claim answers in_progress instead of waiting.  Between the probe and the
 * INSERT another transaction may still slip in a claim of the same id; the INSERT
 * then waits for it like claim does, which keeps the answer right at the cost of
 * a wait that is as short as that race.  A live lease is in progress too.
 *
 * claim_probe_status is what it answers from the stored row alone, or NULL when
 * it must go on and claim (claim_status_of_insert), with whether a claim of the
 * id is held; claim_in_order asks between the two whether the message's key is
 * blocked.
 */
const char *
claim_probe_status(InboxInfo *inbox, Datum id, const Datum *shard, bool *held)
{
	ClaimRow	row;

	claim_row_read_key(inbox, id, shard, true, &row);
	*held = row.state == ROW_PRESENT && !claim_row_expired(inbox, &row, GetCurrentTimestamp());
	if (claim_row_quarantined(&row))
	{
		record_outcome(inbox, true);
		return "quarantined";
	}
	if (row.state == ROW_INSERTING ||
		(row.state == ROW_PRESENT && claim_row_lease_live(&row, GetCurrentTimestamp())))
	{
		stats_count(inbox, COUNT_IN_PROGRESS, 1);
		return "in_progress";
	}
	if (is_plain_duplicate(&row) && !inbox->has_retention)
	{
		record_outcome(inbox, true);
		return "duplicate";
	}
	return NULL;
}

/* try_claim's claim, after the probe; SPI must be connected. */
const char *
claim_status_of_insert(InboxInfo *inbox, Datum id, const Datum *shard)
{
	if (shard ? claim_routed(inbox, id, shard) : claim_one(inbox, id, NULL))
		return "claimed";
	return claim_quarantined_after_claim(inbox, id, shard) ? "quarantined" : "duplicate";
}

/* try_claim and try_claim_sharded, which takes the shard key before the id. */
PG_FUNCTION_INFO_V1(inbox_try_claim);
Datum
inbox_try_claim(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_INSERT | ACL_SELECT);
	Datum		shard_value;
	const Datum *shard = claim_routed_shard_arg(fcinfo, sig, inbox, &shard_value);
	Datum		id = message_id_from_arg(fcinfo, sig->keyargno, sig->keytype, inbox);
	const char *status;
	bool		held;

	/* Its answer comes from the stored row, which a policy may hide. */
	registry_check_stored_reads(fcinfo, inbox);
	status = claim_probe_status(inbox, id, shard, &held);
	if (status == NULL)
	{
		spi_connect();
		status = claim_status_of_insert(inbox, id, shard);
		SPI_finish();
	}
	PG_RETURN_DATUM(signature_enum_label(sig->rettype, status));
}

/*
 * claim_many: the batch is inserted in key order, so two overlapping batches lock
 * their ids in the same order and cannot deadlock; the fresh ids come back from
 * RETURNING in that order and are then reported in input order, each once.
 */

typedef struct IdBytes
{
	const char *data;
	int			len;
} IdBytes;

static uint32
id_bytes_hash(const void *key, Size keysize)
{
	const IdBytes *id = key;

	return hash_bytes((const unsigned char *) id->data, id->len);
}

static int
id_bytes_match(const void *key1, const void *key2, Size keysize)
{
	const IdBytes *a = key1;
	const IdBytes *b = key2;

	return (a->len == b->len && memcmp(a->data, b->data, a->len) == 0) ? 0 : 1;
}

/* The bytes that identify a key; equal keys of our key types have equal bytes. */
static IdBytes
id_bytes(Datum value, Oid keytype)
{
	IdBytes		id;

	if (keytype == INT8OID)
	{
		int64	   *copy = palloc(sizeof(int64));

		*copy = DatumGetInt64(value);
		id.data = (const char *) copy;
		id.len = sizeof(int64);
	}
	else if (keytype == UUIDOID)
	{
		id.data = (const char *) DatumGetPointer(value);
		id.len = UUID_LEN;
	}
	else
	{
		id.data = VARDATA_ANY(DatumGetPointer(value));
		id.len = VARSIZE_ANY_EXHDR(DatumGetPointer(value));
	}
	return id;
}

static HTAB *
fresh_ids_set(int nelems)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(IdBytes);
	ctl.entrysize = sizeof(IdBytes);
	ctl.hash = id_bytes_hash;
	ctl.match = id_bytes_match;
	ctl.hcxt = CurrentMemoryContext;
	return hash_create("claim_many fresh ids", Max(nelems, 16), &ctl,
					   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
}

/*
 * The batch as given (for the result, which has the declared type) and as keys of
 * the inbox (for the INSERT and for matching), validated element by element.
 */
void
claim_batch_read(ClaimBatch *batch, FunctionCallInfo fcinfo, const CallSignature *sig,
				 InboxInfo *inbox)
{
	int			argno = sig->keyargno;
	ArrayType  *input;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("message ids must not be null")));
	/*
	 * The text overload takes an array literal: drivers send arrays as untyped
	 * strings, which would be ambiguous among the array overloads.
	 */
	if (sig->keyargtype == TEXTOID)
		input = DatumGetArrayTypeP(OidFunctionCall3(F_ARRAY_IN,
													CStringGetDatum(TextDatumGetCString(PG_GETARG_DATUM(argno))),
													ObjectIdGetDatum(TEXTOID),
													Int32GetDatum(-1)));
	else
		input = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(input) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("message ids must be a one-dimensional array")));

	get_typlenbyvalalign(sig->keytype, &typlen, &typbyval, &typalign);
	deconstruct_array(input, sig->keytype, typlen, typbyval, typalign, &elems, &nulls, &n);

	batch->nids = n;
	batch->given = elems;
	batch->keys = palloc(sizeof(Datum) * Max(n, 1));
	batch->fresh = palloc0(sizeof(bool) * Max(n, 1));
	batch->quarantined = palloc0(sizeof(bool) * Max(n, 1));
	for (int i = 0; i < n; i++)
		batch->keys[i] = message_id_from_element(elems[i], nulls[i], sig->keytype, inbox, i + 1);

	if (sig->keytype == inbox->keytype)
		batch->array = input;
	else
	{
		get_typlenbyvalalign(inbox->keytype, &typlen, &typbyval, &typalign);
		batch->array = construct_array(batch->keys, n, inbox->keytype, typlen, typbyval,
									   typalign);
	}
}

/*
 * Claim the batch in one statement, and put the ids it inserted into fresh,
 * copied into the caller's memory before SPI_finish frees SPI's.  shard_key is
 * the value of every id of the batch in a sharded inbox, else NULL.
 */
static void
claim_many_insert(InboxInfo *inbox, ArrayType *batch, int nids, HTAB *fresh,
				  const Datum *shard_key, TimestampTz now)
{
	MemoryContext callcxt = CurrentMemoryContext;
	MemoryContext oldcxt;
	int16		keylen;
	bool		keybyval;

	get_typlenbyval(inbox->keytype, &keylen, &keybyval);

	spi_connect();
	if (inbox->has_retention)
	{
		Datum		values[5] = {PointerGetDatum(batch),
								 TimestampTzGetDatum(retention_cutoff(inbox, now)),
								 TimestampTzGetDatum(now),
								 TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
								 shard_key ? *shard_key : (Datum) 0};

		registry_check_window_rights(inbox);

		inbox_sql_execute(inbox, shard_key ? SQL_SHARDED_CLAIM_MANY_WINDOW : SQL_CLAIM_MANY_WINDOW,
						  values, NULL);
	}
	else
	{
		Datum		values[2] = {PointerGetDatum(batch), shard_key ? *shard_key : (Datum) 0};

		inbox_sql_execute(inbox, shard_key ? SQL_SHARDED_CLAIM_MANY : SQL_CLAIM_MANY, values, NULL);
	}
	stats_count(inbox, COUNT_CLAIMS, SPI_processed);
	stats_count(inbox, COUNT_DUPLICATES, nids - (int64) SPI_processed);

	oldcxt = MemoryContextSwitchTo(callcxt);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		value = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		IdBytes		id;

		if (shard_key)
			claim_row_check_shard(inbox, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, value,
									 *shard_key);

		id = id_bytes(datumCopy(value, keybyval, keylen), inbox->keytype);
		hash_search(fresh, &id, HASH_ENTER, NULL);
	}
	MemoryContextSwitchTo(oldcxt);
	SPI_finish();
}

/*
 * Does a claim hold the id, committed or of this transaction (and in an inbox
 * with a retention window, one not expired at now, when the batch was judged)?
 */
static bool
claimed_already(InboxInfo *inbox, Datum id, const Datum *shard_key, TimestampTz now)
{
	ClaimRow	row;
	bool		held;

	if (!inbox->routed)
	{
		claim_row_read(inbox, id, inbox->has_retention, &row);
		return row.state != ROW_ABSENT &&
			!(row.state == ROW_PRESENT && claim_row_expired(inbox, &row, now));
	}
	spi_connect();
	held = claim_routed_held(inbox, id, shard_key, now);
	SPI_finish();
	return held;
}

/*
 * Mark the positions of the batch that were claimed: the first position of each
 * id the INSERT returned.  Removing each id as it is found drops repeats; an id
 * that was not inserted is a duplicate, unless a trigger skipped it.
 */
static void
claim_batch_judge(ClaimBatch *batch, InboxInfo *inbox, HTAB *fresh, const Datum *shard_key,
				  TimestampTz now)
{
	for (int i = 0; i < batch->nids; i++)
	{
		IdBytes		id = id_bytes(batch->keys[i], inbox->keytype);
		bool		found;

		hash_search(fresh, &id, HASH_REMOVE, &found);
		batch->fresh[i] = found;
		if (!found && claim_routed_may_skip(inbox) &&
			!claimed_already(inbox, batch->keys[i], shard_key, now))
		{
			/* Not inserted, and not there: a trigger skipped it. */
			claim_row_suppressed(inbox, batch->keys[i]);
		}
	}

	/* A trigger that changed an id made a row no input id matches. */
	if (hash_get_num_entries(fresh) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a trigger on inbox \"%s\" changed the id of a claim", get_rel_name(inbox->relid)),
				 errdetail("A claim must be stored under the id it was made for."),
				 errhint("Make BEFORE INSERT triggers on the inbox leave message_id alone.")));
}

/*
 * Claim every id of the batch in one statement, in key order, so that two
 * overlapping batches lock their ids in the same order and cannot deadlock; then
 * mark which positions were claimed (batch->fresh).  shard_key is the value of
 * every id of the batch in a sharded inbox, else NULL.
 */
void
claim_batch_claim(ClaimBatch *batch, InboxInfo *inbox, const Datum *shard_key)
{
	HTAB	   *fresh = fresh_ids_set(batch->nids);
	TimestampTz now = inbox->has_retention ? GetCurrentTimestamp() : 0;	/* judges expiry only */

	claim_many_insert(inbox, batch->array, batch->nids, fresh, shard_key, now);
	claim_batch_judge(batch, inbox, fresh, shard_key, now);
	hash_destroy(fresh);
}

/*
 * The result set of a batch function, materialized: an empty store for rows of
 * tupdesc (which must live in per-query memory), already handed to the executor.
 */
Tuplestorestate *
claim_result_store(ReturnSetInfo *rsinfo, TupleDesc tupdesc)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	Tuplestorestate *store;

	store = tuplestore_begin_heap(rsinfo->allowedModes & SFRM_Materialize_Random, false, work_mem);
	MemoryContextSwitchTo(oldcxt);

	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = tupdesc;
	return store;
}

/* The fresh ids as keys of the inbox, in input order, each once: $1 of claim_apply_many. */
ArrayType *
claim_batch_fresh_keys(const ClaimBatch *batch, const InboxInfo *inbox)
{
	Datum	   *fresh = palloc(sizeof(Datum) * Max(batch->nids, 1));
	int			n = 0;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	for (int i = 0; i < batch->nids; i++)
		if (batch->fresh[i])
			fresh[n++] = batch->keys[i];
	get_typlenbyvalalign(inbox->keytype, &typlen, &typbyval, &typalign);
	return construct_array(fresh, n, inbox->keytype, typlen, typbyval, typalign);
}

/* claim_many's result: the fresh ids, as given, in input order. */
static void
claim_many_report(ReturnSetInfo *rsinfo, const CallSignature *sig, const ClaimBatch *batch)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	TupleDesc	tupdesc = CreateTemplateTupleDesc(1);
	Tuplestorestate *store;

	TupleDescInitEntry(tupdesc, 1, "message_id", sig->keytype, -1, 0);
	MemoryContextSwitchTo(oldcxt);
	store = claim_result_store(rsinfo, tupdesc);

	for (int i = 0; i < batch->nids; i++)
		if (batch->fresh[i])
		{
			bool		isnull = false;

			tuplestore_putvalues(store, tupdesc, &batch->given[i], &isnull);
		}
}

/* claim_many and claim_many_sharded: the batch is the argument after the shard key, if any. */
static Datum
claim_many_common(FunctionCallInfo fcinfo, bool sharded)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const CallSignature *sig = signature_of_call(fcinfo);
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_INSERT | ACL_SELECT);
	Datum		shard_key = (Datum) 0;
	ClaimBatch	batch;

	claim_check_set_context(fcinfo, sharded ? "claim_many_sharded" : "claim_many");
	registry_check_shard_form(fcinfo, inbox, sharded);
	if (sharded)
		shard_key = claim_routed_shard_key(fcinfo, 1, inbox);
	claim_batch_read(&batch, fcinfo, sig, inbox);
	claim_batch_claim(&batch, inbox, sharded ? &shard_key : NULL);
	claim_many_report(rsinfo, sig, &batch);
	return (Datum) 0;
}

/* A set-returning function of ours called where no set is accepted. */
void
claim_check_set_context(FunctionCallInfo fcinfo, const char *function)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		(rsinfo->allowedModes & SFRM_Materialize) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s must be called in a context that accepts a set", function)));
}

PG_FUNCTION_INFO_V1(inbox_claim_many);
Datum
inbox_claim_many(PG_FUNCTION_ARGS)
{
	return claim_many_common(fcinfo, false);
}

PG_FUNCTION_INFO_V1(inbox_claim_many_sharded);
Datum
inbox_claim_many_sharded(PG_FUNCTION_ARGS)
{
	return claim_many_common(fcinfo, true);
}
