/*
 * retention.c
 *		Dedup windows: the claimed_at index a window needs, and purge, which
 *		deletes the claims that have fallen out of an inbox's window.  The window
 *		itself is set by set_retention (inbox_admin.c).
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
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "compat.h"
#include "failures.h"
#include "inbox_info.h"
#include "inbox_sql.h"
#include "registry.h"
#include "retention.h"
#include "spi_util.h"
#include "stats.h"

/*
 * Claims made before this instant are outside the inbox's window.  Strictly
 * before, as in the SQL guards of inbox_sql.c, so that what is decided here as
 * expired is also expired to the statement that acts on it.
 */
TimestampTz
retention_cutoff(const InboxInfo *inbox, TimestampTz now)
{
	/* A window set before it was bounded: nothing can be that old. */
	if (!retention_within_bounds(&inbox->retention))
		return DT_NOBEGIN;
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												   TimestampTzGetDatum(now),
												   IntervalPGetDatum(&inbox->retention)));
}

/*
 * A window longer than this could not be subtracted from now without leaving
 * the range of timestamps; NULL is the way to keep claims forever.
 */
bool
retention_within_bounds(const Interval *retention)
{
	Interval	longest;

	memset(&longest, 0, sizeof(longest));
	longest.month = MAX_RETENTION_YEARS * MONTHS_PER_YEAR;
	return DatumGetBool(DirectFunctionCall2(interval_le,
											IntervalPGetDatum(retention),
											IntervalPGetDatum(&longest)));
}

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

/* The inbox's name for an error message, or its OID once it is gone. */
static char *
purge_rel_name(Oid relid)
{
	char	   *name = get_rel_name(relid);

	return name != NULL ? name : psprintf("%u", relid);
}

/* Delete up to batch expired claims; SPI must be connected. */
static int64
purge_batch(InboxInfo *inbox, int64 batch)
{
	TimestampTz now = GetCurrentTimestamp();
	Datum		values[3] = {TimestampTzGetDatum(retention_cutoff(inbox, now)),
							 TimestampTzGetDatum(now), Int64GetDatum(batch)};
	int64		purged = inbox_sql_execute(inbox, inbox->distributed ? SQL_PURGE_DISTRIBUTED : SQL_PURGE,
											   values, NULL);

	stats_count(inbox, COUNT_PURGED, purged);
	return purged;
}

/*
 * Purge deletes as the inbox's owner (see inbox_purge), which would bypass the
 * row-level security that applies to a caller who is not the owner: such a
 * caller is refused, as the functions that answer from stored columns refuse it
 * (registry_check_stored_reads), rather than given rows its policies hide.
 * Checked before the table is locked, and again under the lock.
 */
static void
purge_forbid_hidden_rows(Oid relid, Oid userid)
{
	if (!compat_table_ownercheck(relid, userid) &&
		check_enable_rls(relid, userid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("purge() does not support row-level security on inbox \"%s\"",
						purge_rel_name(relid)),
				 errdetail("It deletes as the inbox's owner, which would bypass the policies that apply to you."),
				 errhint("Run it as the inbox's owner, or let the background purge do it.")));
}

/* A table's owner; the caller holds a lock on it. */
Oid
retention_table_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Acting as a table's owner, the way VACUUM, ANALYZE and REFRESH MATERIALIZED
 * VIEW do: under SECURITY_RESTRICTED_OPERATION (no SET ROLE, no temporary
 * objects) and with search_path set to pg_catalog, pg_temp in a GUC nest level
 * of its own.  The table must be locked, so that its owner cannot change.  An
 * error unwinds both through the (sub)transaction abort, as in core; retention_as_owner_end
 * restores them on success.
 */
void
retention_as_owner_begin(Oid relid, AsOwner *save)
{
	GetUserIdAndSecContext(&save->save_userid, &save->save_sec_context);
	SetUserIdAndSecContext(retention_table_owner(relid),
						   save->save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

void
retention_as_owner_end(const AsOwner *save)
{
	AtEOXact_GUC(false, save->save_nestlevel);
	SetUserIdAndSecContext(save->save_userid, save->save_sec_context);
}

/*
 * One batch per call, so that the caller (a script, or the background worker)
 * commits between batches and no transaction holds many row locks for long.
 *
 * The caller's own rights are checked, before the table is locked.  The batch
 * then runs as the inbox's owner, whoever the caller is, under
 * SECURITY_RESTRICTED_OPERATION and with search_path pinned to pg_catalog,
 * pg_temp, as VACUUM, ANALYZE and REFRESH MATERIALIZED VIEW do: the owner's
 * triggers, rules, policies and index predicates never run with the rights of a
 * superuser (the background worker is one) or of another caller, and cannot
 * change the session for it (no SET ROLE, no temporary objects).
 */
PG_FUNCTION_INFO_V1(inbox_purge);
Datum
inbox_purge(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox;
	Oid			relid;
	AsOwner		as_owner;
	int64		batch;
	int64		purged;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("inbox must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("batch must not be null")));
	batch = PG_GETARG_INT32(1);
	if (batch <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch must be positive")));

	relid = PG_GETARG_OID(0);
	purge_forbid_hidden_rows(relid, GetUserId());
	inbox = registry_lookup(fcinfo, 0, RowExclusiveLock, ACL_SELECT | ACL_UPDATE | ACL_DELETE);
	purge_forbid_hidden_rows(relid, GetUserId());
	if (!inbox->has_retention)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox \"%s\" has no retention", get_rel_name(inbox->relid)),
				 errdetail("Its claims never expire, so there is nothing to purge."),
				 errhint("Set one with inbox.set_retention().")));

	/* The table is locked: its owner cannot change (ALTER TABLE OWNER waits). */
	retention_as_owner_begin(relid, &as_owner);
	spi_connect();
	purged = purge_batch(inbox, batch);
	SPI_finish();
	retention_as_owner_end(&as_owner);

	spi_connect();
	failures_purge(fcinfo, inbox, retention_cutoff(inbox, GetCurrentTimestamp()));
	SPI_finish();

	PG_RETURN_INT64(purged);
}

/*
 * The oldest claim, for the stats view.  NULL when the caller may not read the
 * inbox (or a policy applies to it), or it no longer has an inbox's shape, so that one unreadable or broken
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

	AsOwner		as_owner;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)) ||
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		PG_RETURN_NULL();
	inbox = registry_lookup_if_intact(fcinfo, 0, AccessShareLock);
	if (inbox == NULL)
		PG_RETURN_NULL();

	/*
	 * As the owner: planning the query evaluates the owner's index predicates
	 * and expressions, which must not run with the rights of a superuser reading
	 * inbox.stats.  Policies are not bypassed: they do not apply to the caller.
	 */
	retention_as_owner_begin(relid, &as_owner);
	spi_connect();
	if (inbox_sql_execute(inbox, SQL_OLDEST, NULL, NULL) == 1)
		oldest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	SPI_finish();
	retention_as_owner_end(&as_owner);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(DatumGetTimestampTz(oldest));
}
