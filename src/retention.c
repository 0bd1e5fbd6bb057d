/*
 * retention.c
 *		Dedup windows: set_retention, and purge, which deletes the claims that have
 *		fallen out of an inbox's window.
 *
 * A claim older than the inbox's retention already counts as absent to every
 * claim and lease (claim_row.c); deleting it only gives the space back.  So purge
 * can be lazy and polite: small batches, oldest first, never waiting for a row a
 * claimer holds, and re-checking each row as it deletes it so that a claim renewed
 * meanwhile is kept.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "compat.h"
#include "inbox.h"

/* Does some index of the inbox lead with claimed_at? */
static bool
has_claimed_at_index(Relation rel, AttrNumber claimed_at)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));

		if (!HeapTupleIsValid(tuple))
			continue;
		found = ((Form_pg_index) GETSTRUCT(tuple))->indkey.values[0] == claimed_at;
		ReleaseSysCache(tuple);
		if (found)
			break;
	}
	list_free(indexes);
	return found;
}

/*
 * A window needs purging, and purge reads the oldest claims first: an index on
 * claimed_at makes that a short range read instead of a scan of the table.  Only
 * inboxes with a retention get one, so plain inboxes do not pay for it on every
 * claim.  SPI must be connected; runs with the caller's rights (the owner's).
 */
void
retention_index_create(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	AttrNumber	claimed_at = get_attnum(relid, "claimed_at");
	char	   *qualname;
	int			rc;

	if (claimed_at == InvalidAttrNumber || has_claimed_at_index(rel, claimed_at))
	{
		table_close(rel, AccessShareLock);
		return;
	}
	qualname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
										  RelationGetRelationName(rel));
	table_close(rel, AccessShareLock);

	rc = SPI_execute(psprintf("CREATE INDEX ON %s (claimed_at)", qualname), false, 0);
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "CREATE INDEX returned %s", SPI_result_code_string(rc));
}

PG_FUNCTION_INFO_V1(inbox_set_retention);
Datum
inbox_set_retention(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox;
	bool		has_retention = !PG_ARGISNULL(1);

	registry_check_owner(fcinfo, 0);
	inbox = registry_lookup(fcinfo, 0, ShareUpdateExclusiveLock, 0);
	if (has_retention)
		registry_check_retention(PG_GETARG_INTERVAL_P(1));

	spi_connect();
	if (has_retention)
		retention_index_create(inbox->relid);
	registry_update_retention(fcinfo, inbox->relid, has_retention ? PG_GETARG_DATUM(1) : (Datum) 0,
							  !has_retention);
	SPI_finish();

	/* Every backend re-reads the window at its next call on this inbox. */
	CacheInvalidateRelcacheByRelid(inbox->relid);
	PG_RETURN_VOID();
}

/* Delete up to batch expired claims; SPI must be connected. */
static int64
purge_batch(InboxInfo *inbox, int64 batch)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[3] = {TimestampTzGetDatum(retention_cutoff(inbox, now)),
							 TimestampTzGetDatum(now), Int64GetDatum(batch)};
	int64		purged = inbox_execute(inbox, SQL_PURGE, values, NULL);

	stats_count(inbox, COUNT_PURGED, purged);
	return purged;
}

/*
 * One batch per call, so that the caller (a script, or the background worker)
 * commits between batches and no transaction holds many row locks for long.
 */
PG_FUNCTION_INFO_V1(inbox_purge);
Datum
inbox_purge(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox = registry_lookup(fcinfo, 0, RowExclusiveLock,
										ACL_SELECT | ACL_UPDATE | ACL_DELETE);
	int64		batch;
	int64		purged;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("batch must not be null")));
	batch = PG_GETARG_INT32(1);
	if (batch <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch must be positive")));
	if (!inbox->has_retention)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox \"%s\" has no retention", get_rel_name(inbox->relid)),
				 errdetail("Its claims never expire, so there is nothing to purge."),
				 errhint("Set one with inbox.set_retention().")));

	spi_connect();
	purged = purge_batch(inbox, batch);
	SPI_finish();

	PG_RETURN_INT64(purged);
}

/*
 * The oldest claim, for the stats view.  NULL when the caller may not read the
 * inbox or it no longer has an inbox's shape, so that one unreadable or broken
 * inbox does not make the whole view fail.  Rights are checked before the lock.
 */
PG_FUNCTION_INFO_V1(inbox_oldest_claim);
Datum
inbox_oldest_claim(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	InboxInfo  *inbox;
	bool		isnull = true;
	Datum		oldest = (Datum) 0;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)) ||
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		PG_RETURN_NULL();
	inbox = registry_lookup_if_intact(fcinfo, 0, AccessShareLock);
	if (inbox == NULL)
		PG_RETURN_NULL();

	spi_connect();
	if (inbox_execute(inbox, SQL_OLDEST, NULL, NULL) == 1)
		oldest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	SPI_finish();

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(DatumGetTimestampTz(oldest));
}
