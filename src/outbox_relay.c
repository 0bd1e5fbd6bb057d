/*
 * outbox_relay.c
 *		The relay's side of an outbox: relay_take leases the next batch of
 *		committed events, relay_ack marks events sent once the broker has
 *		confirmed them, relay_release gives a lease back, and purge_outbox
 *		deletes sent events older than the outbox's retention.
 *
 * Why no event is skipped.  A hand-written relay that reads "event_id > last"
 * skips: an event_id is drawn at insert time but becomes visible at commit, so
 * a transaction that commits after a later one lands behind a mark already
 * passed.  Here no mark is kept: an event stays a candidate until a relay marks
 * it sent, so the events of a transaction that commits late are taken by a
 * later call, whatever ids came before them.
 *
 * Why each key leaves in commit order.  emit locks an event's key before it
 * draws the event_id and holds the lock until its transaction ends
 * (outbox.c).  So of two transactions emitting a key, the second draws its ids
 * only after the first has committed: a key's event ids grow in commit order,
 * and a snapshot that sees one event of a key sees every earlier one.  The
 * take returns events in event_id order and passes over every event of a key
 * that has an earlier event in flight (leased, or given back with a delay):
 * a key's next event leaves only once the one before it is acknowledged, or
 * its lease has run out or been given back, and then the earlier one is taken
 * first.  Events without a key take no lock and are ordered only by id.
 * (The snapshot's xmin horizon, the other known proof, would order by
 * transaction id instead, which is not commit order: a consumer that claims
 * its message first gets its xid before it waits for the row another
 * transaction holds; and one long transaction anywhere in the cluster would
 * hold every relay back.)
 *
 * Why no event is in two relays' hands at once.  Takes of one outbox run one
 * at a time (a lock of their own, held until the take's transaction ends), each
 * in a fresh READ COMMITTED snapshot taken after that lock, so each sees every
 * lease an earlier take gave, and passes over events whose lease is live.
 *
 * A relay that dies holding a lease loses it when the lease runs out; its
 * events are taken again, so a broker may see an event twice.  Each event's
 * message_id is stable (derived from the outbox's source and its event_id), so
 * the consumer's inbox answers the second delivery as a duplicate.
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/memutils.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/uuid.h"

#include "compat.h"
#include "outbox.h"
#include "registry.h"
#include "retention.h"
#include "spi_util.h"

/* Bounds on a take: a batch fits one broker round trip, a lease one outage. */
#define OUTBOX_MAX_BATCH 10000
#define OUTBOX_MAX_LEASE_SECS (24 * 60 * 60)

/*
 * The event ids of the last leases this backend took, so that an ack or release
 * of a whole lease from the same session finds its events by their ids instead
 * of reading every unsent event for the lease (it has no index: a lease changes
 * with every take, and an index on it would make each take's update non-HOT).
 * Only a hint: the statement still checks the lease, and a lease this backend
 * does not remember (another session's, or an old one) is found the slow way.
 */
#define REMEMBERED_LEASES 16

typedef struct RememberedLease
{
	Oid			relid;			/* InvalidOid: an empty slot */
	pg_uuid_t	lease;
	ArrayType  *ids;			/* in TopMemoryContext */
} RememberedLease;

static RememberedLease remembered[REMEMBERED_LEASES];
static int	next_remembered = 0;

static void
remember_lease(Relation rel, Datum lease, Datum ids)
{
	RememberedLease *slot = &remembered[next_remembered];

	next_remembered = (next_remembered + 1) % REMEMBERED_LEASES;
	if (slot->ids != NULL)
		pfree(slot->ids);
	slot->relid = RelationGetRelid(rel);
	slot->lease = *DatumGetUUIDP(lease);
	slot->ids = (ArrayType *) MemoryContextAlloc(TopMemoryContext, VARSIZE(DatumGetPointer(ids)));
	memcpy(slot->ids, DatumGetPointer(ids), VARSIZE(DatumGetPointer(ids)));
}

/* The remembered ids of a lease, forgotten as they are handed out, or NULL. */
static ArrayType *
recall_lease(Relation rel, Datum lease)
{
	for (int i = 0; i < REMEMBERED_LEASES; i++)
	{
		RememberedLease *slot = &remembered[i];
		ArrayType  *ids;

		if (slot->relid != RelationGetRelid(rel) ||
			memcmp(&slot->lease, DatumGetUUIDP(lease), sizeof(pg_uuid_t)) != 0)
			continue;
		ids = (ArrayType *) palloc(VARSIZE(slot->ids));
		memcpy(ids, slot->ids, VARSIZE(slot->ids));
		pfree(slot->ids);
		slot->ids = NULL;
		slot->relid = InvalidOid;
		return ids;
	}
	return NULL;
}

/* What the registry says of an outbox. */
typedef struct OutboxSettings
{
	char	   *source;			/* message ids' prefix, "<uuid>/" */
	bool		has_retention;
	Datum		retention;
} OutboxSettings;

/*
 * The outbox's registry row; SPI must be connected, and what it returns lives
 * until SPI_finish.  A table without one is no outbox.
 */
static OutboxSettings
outbox_settings(FunctionCallInfo fcinfo, Relation rel)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1] = {ObjectIdGetDatum(RelationGetRelid(rel))};
	OutboxSettings settings;
	bool		isnull;
	int			rc;

	(void) outbox_registry_relation(fcinfo);
	rc = SPI_execute_with_args(psprintf("SELECT source::pg_catalog.text, retention "
										"FROM %s.outbox_registry "
										"WHERE relid OPERATOR(pg_catalog.=) $1",
										quote_identifier(get_namespace_name(registry_extension_namespace(fcinfo)))),
							   1, argtypes, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		spi_report_error(rc, "reading the outbox registry");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an outbox", RelationGetRelationName(rel)),
				 errdetail("It has an outbox's shape but no row in the outbox registry."),
				 errhint("Create one with inbox.create_outbox().")));
	settings.source = psprintf("%s/", SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	settings.retention = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	settings.has_retention = !isnull;
	return settings;
}

/* An interval argument that must be positive and at most max_secs long. */
static Interval *
relay_interval_arg(FunctionCallInfo fcinfo, int argno, const char *name, int64 max_secs)
{
	Interval   *span;
	Interval	zero;
	Interval	max;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	span = PG_GETARG_INTERVAL_P(argno);
	memset(&zero, 0, sizeof(zero));
	memset(&max, 0, sizeof(max));
	max.time = max_secs * USECS_PER_SEC;
	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(span), IntervalPGetDatum(&zero))) ||
		DatumGetBool(DirectFunctionCall2(interval_gt, IntervalPGetDatum(span), IntervalPGetDatum(&max))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a positive interval of at most " INT64_FORMAT " hours",
						name, max_secs / 3600)));
	return span;
}

static TimestampTz
relay_after(TimestampTz now, Interval *span)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
												   TimestampTzGetDatum(now),
												   IntervalPGetDatum(span)));
}

/* A lease token argument: every relay call but the take names its lease. */
static Datum
relay_lease_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("lease must not be null"),
				 errhint("Pass the lease relay_take returned with the events.")));
	return PG_GETARG_DATUM(1);
}

static void
relay_refuse_read_only(FunctionCallInfo fcinfo)
{
	if (XactReadOnly)
		PreventCommandIfReadOnly(psprintf("inbox.%s()", get_func_name(fcinfo->flinfo->fn_oid)));
}

/*
 * Takes of one outbox, one at a time until the taker's transaction ends.
 * lock_timeout applies, as to any heavyweight lock.
 */
static void
relay_lock_takes(Relation rel)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, RelationGetRelid(rel), 0, OUTBOX_TAKE_LOCKTAG_CLASS);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * The ids of the events the take may lease, as an int8[]: those picked, up to
 * the first row the calling transaction itself wrote (an event it emitted, or
 * one it changed).  Such a row must not leave before that transaction commits:
 * sent from a transaction that then rolled back, it would be a phantom.  The
 * batch ends there rather than passing over it, which could let a later event
 * of its key leave first; the next take after the commit goes on.
 */
static Datum
relay_pick(Relation rel, int32 batch, TimestampTz now)
{
	Datum		args[2] = {Int32GetDatum(batch), TimestampTzGetDatum(now)};
	Datum	   *ids;
	int			nids = 0;
	int			rc;

	rc = SPI_execute_plan(outbox_plan(rel, OUTBOX_PICK), args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		spi_report_error(rc, "relay_take");
	ids = palloc(sizeof(Datum) * Max(SPI_processed, 1));
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		bool		isnull;
		Datum		id = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1, &isnull);
		TransactionId xmin = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[row],
																 SPI_tuptable->tupdesc, 2, &isnull));

		if (TransactionIdIsCurrentTransactionId(xmin))
			break;
		ids[nids++] = id;
	}
	return PointerGetDatum(construct_array(ids, nids, INT8OID, sizeof(int64), FLOAT8PASSBYVAL,
										   TYPALIGN_DOUBLE));
}

/*
 * relay_take(outbox, batch_size, lease_for): lease up to batch_size events and
 * return them in order, with the lease and its end.  The caller needs SELECT
 * and UPDATE on the outbox; its policies apply.  READ COMMITTED only: the
 * proof above needs a snapshot taken after the take lock.
 */
PG_FUNCTION_INFO_V1(inbox_relay_take);
Datum
inbox_relay_take(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	OutboxSettings settings;
	int32		batch;
	Interval   *lease_for;
	TimestampTz now = GetCurrentTimestamp();
	Datum		lease;
	Datum		args[4];
	int			rc;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("batch_size must not be null")));
	batch = PG_GETARG_INT32(1);
	if (batch <= 0 || batch > OUTBOX_MAX_BATCH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_size must be between 1 and %d", OUTBOX_MAX_BATCH)));
	lease_for = relay_interval_arg(fcinfo, 2, "lease_for", OUTBOX_MAX_LEASE_SECS);
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("inbox.relay_take() must run at READ COMMITTED"),
				 errdetail("Under REPEATABLE READ its snapshot would predate the takes that ran before it, and it could lease their events again."),
				 errhint("Take in a READ COMMITTED transaction, the default.")));
	relay_refuse_read_only(fcinfo);

	InitMaterializedSRF(fcinfo, 0);
	rel = outbox_open(fcinfo, ACL_SELECT | ACL_UPDATE, RowExclusiveLock);
	relay_lock_takes(rel);

	lease = OidFunctionCall0Coll(F_GEN_RANDOM_UUID, InvalidOid);
	spi_connect();
	settings = outbox_settings(fcinfo, rel);
	args[0] = relay_pick(rel, batch, now);
	remember_lease(rel, lease, args[0]);
	args[1] = lease;
	args[2] = TimestampTzGetDatum(relay_after(now, lease_for));
	args[3] = CStringGetTextDatum(settings.source);
	rc = SPI_execute_plan(outbox_plan(rel, OUTBOX_TAKE), args, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		spi_report_error(rc, "relay_take");
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum		values[11];
		bool		nulls[11];

		for (int col = 0; col < 9; col++)
			values[col] = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
										col + 1, &nulls[col]);
		values[9] = lease;
		nulls[9] = false;
		values[10] = args[2];
		nulls[10] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	relation_close(rel, NoLock);
	return (Datum) 0;
}

/*
 * relay_ack and relay_release: one UPDATE of the outbox with the caller's
 * rights, of the lease's events or of those listed; returns the events changed.
 * of_lease_listed is of_lease with the ids this backend remembers of the lease.
 */
static Datum
relay_finish(FunctionCallInfo fcinfo, OutboxStatement of_lease, OutboxStatement of_lease_listed,
			 OutboxStatement of_events, Datum until, bool until_null)
{
	Relation	rel;
	Datum		args[3];
	char		nulls[3] = {' ', until_null ? 'n' : ' ', ' '};
	OutboxStatement which = of_events;
	uint64		changed;
	int			rc;

	args[0] = relay_lease_arg(fcinfo);
	args[1] = until;
	relay_refuse_read_only(fcinfo);
	rel = outbox_open(fcinfo, ACL_SELECT | ACL_UPDATE, RowExclusiveLock);
	if (!PG_ARGISNULL(2))
		args[2] = PG_GETARG_DATUM(2);
	else
	{
		ArrayType  *ids = recall_lease(rel, args[0]);

		which = ids != NULL ? of_lease_listed : of_lease;
		args[2] = PointerGetDatum(ids);
		nulls[2] = ids != NULL ? ' ' : 'n';
	}

	spi_connect();
	rc = SPI_execute_plan(outbox_plan(rel, which), args, nulls, false, 0);
	if (rc != SPI_OK_UPDATE)
		spi_report_error(rc, get_func_name(fcinfo->flinfo->fn_oid));
	changed = SPI_processed;
	SPI_finish();
	relation_close(rel, NoLock);
	PG_RETURN_INT64((int64) changed);
}

/*
 * relay_ack(outbox, lease, event_ids): mark sent, once the broker confirmed
 * them, the events of the lease, or those listed whatever lease holds them now
 * (a relay whose lease ran out may still ack what its broker confirmed; a
 * second relay's copy is then a duplicate the consumer's inbox drops).
 */
PG_FUNCTION_INFO_V1(inbox_relay_ack);
Datum
inbox_relay_ack(PG_FUNCTION_ARGS)
{
	return relay_finish(fcinfo, OUTBOX_ACK_LEASE, OUTBOX_ACK_LEASE_LISTED, OUTBOX_ACK_EVENTS,
						TimestampTzGetDatum(GetCurrentTimestamp()), false);
}

/*
 * relay_release(outbox, lease, event_ids, retry_after): give back the events the
 * lease still holds, at once or after retry_after; meanwhile the later events
 * of their keys wait.
 */
PG_FUNCTION_INFO_V1(inbox_relay_release);
Datum
inbox_relay_release(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(3))
		return relay_finish(fcinfo, OUTBOX_RELEASE_LEASE, OUTBOX_RELEASE_EVENTS,
							OUTBOX_RELEASE_EVENTS, (Datum) 0, true);
	return relay_finish(fcinfo, OUTBOX_RELEASE_LEASE, OUTBOX_RELEASE_EVENTS, OUTBOX_RELEASE_EVENTS,
						TimestampTzGetDatum(relay_after(GetCurrentTimestamp(),
														relay_interval_arg(fcinfo, 3, "retry_after",
																		   OUTBOX_MAX_LEASE_SECS))),
						false);
}

/*
 * purge_outbox(outbox, batch): delete up to batch events sent longer ago than
 * the retention, as the outbox's owner under SECURITY_RESTRICTED_OPERATION with
 * search_path pinned, as inbox.purge does (retention.c).  The caller's rights
 * are checked before the lock; a caller under the outbox's row security is
 * refused, since the owner's delete would pass over its policies.
 */
PG_FUNCTION_INFO_V1(inbox_purge_outbox);
Datum
inbox_purge_outbox(PG_FUNCTION_ARGS)
{
	Relation	rel;
	OutboxSettings settings;
	AsOwner		as_owner;
	Datum		args[2];
	int32		batch;
	uint64		purged;
	int			rc;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("batch must not be null")));
	batch = PG_GETARG_INT32(1);
	if (batch <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch must be positive")));
	relay_refuse_read_only(fcinfo);
	rel = outbox_open(fcinfo, ACL_SELECT | ACL_DELETE, RowExclusiveLock);
	if (!compat_table_ownercheck(RelationGetRelid(rel), GetUserId()) &&
		check_enable_rls(RelationGetRelid(rel), GetUserId(), true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("purge_outbox() does not support row-level security on outbox \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail("It deletes as the outbox's owner, which would bypass the policies that apply to you."),
				 errhint("Run it as the outbox's owner, or let the background purge do it.")));

	spi_connect();
	settings = outbox_settings(fcinfo, rel);
	if (!settings.has_retention)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("outbox \"%s\" has no retention", RelationGetRelationName(rel)),
				 errdetail("Its sent events are kept until they are deleted."),
				 errhint("Set one with inbox.set_outbox_retention().")));
	args[0] = TimestampTzGetDatum(DatumGetTimestampTz(
		DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(GetCurrentTimestamp()),
							settings.retention)));
	args[1] = Int32GetDatum(batch);

	/* The outbox is locked: its owner cannot change meanwhile. */
	retention_as_owner_begin(RelationGetRelid(rel), &as_owner);
	rc = SPI_execute_plan(outbox_plan(rel, OUTBOX_PURGE), args, NULL, false, 0);
	retention_as_owner_end(&as_owner);
	if (rc != SPI_OK_DELETE)
		spi_report_error(rc, "purge_outbox");
	purged = SPI_processed;
	SPI_finish();
	relation_close(rel, NoLock);
	PG_RETURN_INT64((int64) purged);
}
