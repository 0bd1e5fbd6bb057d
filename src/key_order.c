/*
 * key_order.c
 *		Per-key ordering: claim_in_order claims a message of an ordering key (an
 *		account, an order) only when no earlier message of that key is still
 *		failing, quarantined or retried but not yet applied; otherwise it answers
 *		'blocked' and lists the message, in order, in the blocked table.
 *
 * "Earlier" is the failures table's word for it: a message of the key that
 * record_failure counted and no delivery has applied since (claim_in_order
 * deletes a message's failures row when it claims it, in the claim's
 * transaction, so a rollback keeps the key held).  Every claim and failure of
 * one key takes the key's lock until its transaction ends, so two messages of a
 * key never run at once and a failure recorded meanwhile is seen by the next
 * claim: the messages of a key run one after the other, in the order they get
 * the lock.  What no lock can close is the gap between a failed attempt's
 * ROLLBACK and its record_failure: a consumer that hands the next message of
 * the key to another worker in that gap lets it pass (README).
 *
 * The inbox opts in (set_key_ordering): its claims in order are then answered
 * from the same stored row as try_claim's, blocked in between.
 *
 * A sharded inbox orders a key within one shard key value: its failures rows
 * and its lock are by (shard key, ordering key).  A consumer that wants all of
 * an account's messages in order shards by the account, or something coarser.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "claim.h"
#include "failures.h"
#include "signature.h"
#include "spi_util.h"

/*
 * The key lock's tag: an advisory lock of a class of its own.  pg_advisory_lock
 * uses field4 1 (one int8) and 2 (two int4), so no user's advisory lock shares
 * it; other extensions pick their own small numbers, as Citus does.
 */
#define KEY_ORDER_LOCKTAG_CLASS 0x4949

static uint32
text_hash(Datum value)
{
	text	   *t = DatumGetTextPP(value);

	return hash_bytes((const unsigned char *) VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
}

/*
 * Lock one ordering key of an inbox (of one shard key value, in a sharded
 * inbox) until the transaction ends.  Two keys whose hashes collide share a
 * lock, which only makes them wait for each other.  lock_timeout and the
 * deadlock detector apply, as to any heavyweight lock.  A Citus inbox's key
 * lock is the key's row in its keys table instead (citus_failures.c), locked
 * on the worker that holds the shard, where every call of the key meets it.
 * SPI must be connected.
 */
void
key_order_lock(const FailureCall *call, Datum ordering_key)
{
	uint32		hash;
	LOCKTAG		tag;

	if (call->citus)
	{
		/* Locked, not written: DO UPDATE locks the row whatever its WHERE says. */
		failures_execute(call, "INSERT INTO {keys} AS k (shard_key, ordering_key) VALUES ($3, $5) "
						 "ON CONFLICT (shard_key, ordering_key) DO UPDATE "
						 "SET ordering_key = excluded.ordering_key WHERE false",
						 1, (Oid[]) {TEXTOID}, &ordering_key, NULL);
		return;
	}
	hash = text_hash(ordering_key);
	if (call->shard)
		hash = hash_combine(hash, text_hash(call->shard_text));
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, call->inbox->relid, hash, KEY_ORDER_LOCKTAG_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* Does the inbox order its claims by key?  Refused with 55000 if not. */
static void
key_order_check_enabled(const FailureCall *call)
{
	bool		enabled;
	bool		isnull;

	if (call->citus)
		enabled = call->citus->key_ordering;
	else
		enabled = failures_execute(call, "SELECT key_ordering FROM {registry} "
								   "WHERE relid OPERATOR(pg_catalog.=) $1",
								   0, NULL, NULL, NULL) == 1 &&
			DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (enabled)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("inbox \"%s\" does not order its claims by key", get_rel_name(call->inbox->relid)),
			 errhint("Its owner can turn it on with inbox.set_key_ordering().")));
}

/*
 * The earliest other message of the key that still holds it, and the waiting
 * message's place in the blocked list: its first blocked time stays, so the
 * list keeps the order in which the key's messages were first turned away.
 */
static bool
key_order_blocked(const FailureCall *call, Datum ordering_key)
{
	Datum		args[2] = {ordering_key};
	bool		isnull;

	if (failures_execute(call, "SELECT message_id FROM {failures} WHERE {key} "
						 "AND ordering_key OPERATOR(pg_catalog.=) $5 "
						 "AND message_id OPERATOR(pg_catalog.<>) $2 "
						 "ORDER BY first_failed_at, message_id LIMIT 1",
						 1, (Oid[]) {TEXTOID}, args, NULL) == 0)
		return false;
	args[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	failures_execute(call, "INSERT INTO {blocked} AS b ({inbox,}message_id, shard_key, "
					 "ordering_key, blocked_by, first_blocked_at, last_blocked_at) "
					 "VALUES ({$1,}$2, $3, $5, $6, $4, $4) "
					 "ON CONFLICT {message_key} DO UPDATE "
					 "SET blocked_by = excluded.blocked_by, ordering_key = excluded.ordering_key, "
					 "last_blocked_at = $4, "
					 "deliveries = b.deliveries OPERATOR(pg_catalog.+) 1",
					 2, (Oid[]) {TEXTOID, TEXTOID}, args, NULL);
	return true;
}

/*
 * claim_in_order(inbox, message_id, ordering_key) and claim_in_order_sharded
 * (inbox, shard_key, message_id, ordering_key): try_claim's answers, and
 * 'blocked' between its probe and its claim.  Waits for the key's lock (not for
 * the id, which try_claim never does).
 */
PG_FUNCTION_INFO_V1(inbox_claim_in_order);
Datum
inbox_claim_in_order(PG_FUNCTION_ARGS)
{
	const CallSignature *sig = signature_of_call(fcinfo);
	FailureCall call;
	Datum		key;
	bool		isnull;
	bool		held;
	const char *status;

	failure_call(fcinfo, ACL_INSERT | ACL_SELECT, &call);
	key = ordering_key_arg(fcinfo, call.argno, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ordering key must not be null"),
				 errhint("Claim a message without a key with inbox.%s.",
						 call.shard ? "try_claim_sharded" : "try_claim")));
	spi_connect();
	key_order_check_enabled(&call);
	key_order_lock(&call, key);
	status = claim_probe_status(call.inbox, call.id, call.shard, &held);
	if (status == NULL)
	{
		/* A duplicate is a duplicate, blocked key or not. */
		if (!held && key_order_blocked(&call, key))
			status = "blocked";
		else
		{
			status = claim_status_of_insert(call.inbox, call.id, call.shard);
			/* Applied once this commits: its key is no longer held by it. */
			if (strcmp(status, "claimed") == 0)
				failure_delete(&call);
		}
	}
	SPI_finish();
	PG_RETURN_DATUM(signature_enum_label(sig->rettype, status));
}
