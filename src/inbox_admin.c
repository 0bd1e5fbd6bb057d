/*
 * inbox_admin.c
 *		The admin functions: create_inbox, drop_inbox and set_retention, with the
 *		checks on their arguments and the registry writes they make.
 *
 * The registry is the table <extschema>.registry.  Users may read it but not write
 * it; create_inbox writes its row as the registry's owner, after creating the inbox
 * table with the caller's own rights.  Rows of dropped tables are removed by the
 * extension's sql_drop event trigger, so drop_inbox is just DROP TABLE.  A new
 * window (set_retention) reaches every backend as a relcache invalidation of the
 * inbox, which makes registry.c re-read the registry.
 *
 * Calls registry.c (which tables are inboxes) and retention.c (the window's
 * index); neither calls back here.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "compat.h"
#include "inbox.h"
#include "registry.h"
#include "retention.h"
#include "spi_util.h"
#include "stats.h"

/* The schema our SQL objects live in, by name, for the statements below. */
static char *
admin_extension_schema(FunctionCallInfo fcinfo)
{
	return get_namespace_name(registry_extension_namespace(fcinfo));
}

/* Only these key types have the storage and comparison the SPEC promises. */
static void
CheckKeyType(Oid keytype)
{
	if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(keytype)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type with OID %u does not exist", keytype),
				 errhint("Use text, uuid or bigint.")));
	if (keytype != TEXTOID && keytype != UUIDOID && keytype != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unsupported inbox key type %s", format_type_be(keytype)),
				 errhint("Use text, uuid or bigint.")));
}

/* A retention window must be a positive span of time. */
static void
admin_check_retention(Interval *retention)
{
	Interval	zero;

	memset(&zero, 0, sizeof(zero));
	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(retention),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retention must be a positive interval"),
				 errhint("Pass NULL to keep claims until they are deleted.")));
	if (!retention_within_bounds(retention))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retention must be at most %d years", MAX_RETENTION_YEARS),
				 errhint("Pass NULL to keep claims until they are deleted.")));
}

/*
 * The name given to create_inbox, parsed like a qualified table name.  The
 * parser cuts identifiers at NAMEDATALEN - 1 bytes without a word; a name that
 * long is refused instead, so the inbox is called what the caller wrote.  Each
 * dot-separated part is measured as written, without its quotes.
 */
static List *
admin_inbox_name(text *name)
{
	char	   *raw = text_to_cstring(name);
	bool		quoted = false;
	int			part = 0;

	for (char *p = raw; *p != '\0'; p++)
	{
		if (*p == '"')
		{
			if (quoted && p[1] == '"')
			{
				part++;
				p++;
			}
			else
				quoted = !quoted;
			continue;
		}
		if (*p == '.' && !quoted)
			part = 0;
		else if (++part >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("inbox name is too long"),
					 errdetail("Each part of a name is at most %d bytes.", NAMEDATALEN - 1)));
	}
	return textToQualifiedNameList(name);
}

/* Claims are user data that must survive a crash: no temporary inboxes. */
static void
CheckPermanent(Oid nspid, const char *relname)
{
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("inbox \"%s\" cannot be temporary", relname),
				 errdetail("Claims must survive the session and a crash to deduplicate redeliveries.")));
}

/*
 * Run one statement on the registry with its owner's rights.  Callers have already
 * checked the caller's own rights on the inbox (they created it, or own it);
 * recording that fact needs the registry owner's, for this one statement, which
 * is fully qualified and runs as a restricted operation, as VACUUM runs index
 * functions.
 */
static void
admin_registry_write(FunctionCallInfo fcinfo, const char *sql, int nargs, Oid *argtypes,
					 Datum *values, const char *nulls, int expected)
{
	Oid			registry;
	Oid			owner;
	Oid			save_userid;
	int			save_sec_context;
	HeapTuple	tuple;
	int			rc;

	registry = get_relname_relid("registry", get_func_namespace(fcinfo->flinfo->fn_oid));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(registry));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for the inbox registry");
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (rc != expected || SPI_processed != 1)
		elog(ERROR, "registry write returned %s for %lu rows",
			 SPI_result_code_string(rc), (unsigned long) SPI_processed);
}

static void
admin_insert_registry_row(FunctionCallInfo fcinfo, Oid relid, Oid keytype, Datum retention,
						  bool retention_null)
{
	Oid			argtypes[3] = {REGCLASSOID, REGTYPEOID, INTERVALOID};
	Datum		values[3] = {ObjectIdGetDatum(relid), ObjectIdGetDatum(keytype), retention};
	char		nulls[3] = {' ', ' ', retention_null ? 'n' : ' '};

	admin_registry_write(fcinfo,
						 psprintf("INSERT INTO %s.registry (relid, key_type, retention) "
								  "VALUES ($1, $2, $3)",
								  quote_identifier(admin_extension_schema(fcinfo))),
						 3, argtypes, values, nulls, SPI_OK_INSERT);
}

/* set_retention's write; SPI must be connected. */
static void
admin_update_retention(FunctionCallInfo fcinfo, Oid relid, Datum retention,
					   bool retention_null)
{
	Oid			argtypes[2] = {REGCLASSOID, INTERVALOID};
	Datum		values[2] = {ObjectIdGetDatum(relid), retention};
	char		nulls[2] = {' ', retention_null ? 'n' : ' '};

	admin_registry_write(fcinfo,
						 psprintf("UPDATE %s.registry SET retention = $2 "
								  "WHERE relid OPERATOR(pg_catalog.=) $1",
								  quote_identifier(admin_extension_schema(fcinfo))),
						 2, argtypes, values, nulls, SPI_OK_UPDATE);
}

PG_FUNCTION_INFO_V1(inbox_create_inbox);
Datum
inbox_create_inbox(PG_FUNCTION_ARGS)
{
	RangeVar   *rv;
	Oid			nspid;
	Oid			keytype;
	Oid			relid;
	char	   *qualname;
	int			rc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("inbox name must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("inbox key type must not be null")));
	keytype = PG_GETARG_OID(1);
	CheckKeyType(keytype);
	if (!PG_ARGISNULL(2))
		admin_check_retention(PG_GETARG_INTERVAL_P(2));

	rv = makeRangeVarFromNameList(admin_inbox_name(PG_GETARG_TEXT_PP(0)));
	nspid = RangeVarGetCreationNamespace(rv);
	CheckPermanent(nspid, rv->relname);
	if (nspid == registry_extension_namespace(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("inbox \"%s\" cannot be created in the extension's schema", rv->relname),
				 errdetail("The schema belongs to the extension: DROP EXTENSION ... CASCADE would drop the inbox with it."),
				 errhint("Create it in a schema of your own.")));
	qualname = quote_qualified_identifier(get_namespace_name(nspid), rv->relname);

	spi_connect();

	/* The caller's rights: CREATE on the schema, and the caller owns the result. */
	rc = SPI_execute(psprintf("CREATE TABLE %s ("
							  "message_id %s PRIMARY KEY, "
							  "claimed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(), "
							  "fingerprint pg_catalog.bytea, "
							  "result pg_catalog.jsonb, "
							  "token pg_catalog.int8, "
							  "lease_until pg_catalog.timestamptz, "
							  "holder_pid pg_catalog.int4, "
							  "holder_started pg_catalog.timestamptz)",
							  qualname, format_type_be_qualified(keytype)),
					 false, 0);
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "CREATE TABLE returned %s", SPI_result_code_string(rc));

	relid = get_relname_relid(rv->relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "inbox \"%s\" vanished after creation", qualname);
	if (!PG_ARGISNULL(2))
		retention_index_create(relid);
	stats_forget(relid);

	admin_insert_registry_row(fcinfo, relid, keytype,
						PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2), PG_ARGISNULL(2));
	SPI_finish();

	PG_RETURN_OID(relid);
}

/* Only the owner may drop or alter, and must be known to be before we lock. */
static void
admin_check_owner(FunctionCallInfo fcinfo, int argno)
{
	Oid			relid = PG_ARGISNULL(argno) ? InvalidOid : PG_GETARG_OID(argno);

	if (OidIsValid(relid) && SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)) &&
		!compat_table_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
}

PG_FUNCTION_INFO_V1(inbox_drop_inbox);
Datum
inbox_drop_inbox(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox;
	char	   *qualname;
	int			rc;

	/*
	 * The exclusive lock first, so that the name we drop by is the table's name
	 * now, after any rename another session committed.
	 */
	admin_check_owner(fcinfo, 0);
	inbox = registry_lookup(fcinfo, 0, AccessExclusiveLock, 0);
	qualname = pstrdup(inbox->qualname);

	spi_connect();
	/* The caller's rights: only an owner may drop.  The event trigger forgets it. */
	rc = SPI_execute(psprintf("DROP TABLE %s", qualname), false, 0);
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "DROP TABLE returned %s", SPI_result_code_string(rc));
	SPI_finish();

	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(inbox_set_retention);
Datum
inbox_set_retention(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox;
	bool		has_retention = !PG_ARGISNULL(1);

	admin_check_owner(fcinfo, 0);
	inbox = registry_lookup(fcinfo, 0, ShareUpdateExclusiveLock, 0);
	if (has_retention)
		admin_check_retention(PG_GETARG_INTERVAL_P(1));

	spi_connect();
	if (has_retention)
		retention_index_create(inbox->relid);
	admin_update_retention(fcinfo, inbox->relid, has_retention ? PG_GETARG_DATUM(1) : (Datum) 0,
						   !has_retention);
	SPI_finish();

	/* Every backend re-reads the window at its next call on this inbox. */
	CacheInvalidateRelcacheByRelid(inbox->relid);
	PG_RETURN_VOID();
}
