/*
 * registry.c
 *		Which tables are inboxes: create_inbox, drop_inbox, and the per-backend
 *		cache that answers "is this an inbox, and what are its keys" on every call.
 *
 * The registry is the table <extschema>.registry.  Users may read it but not write
 * it; create_inbox writes its row as the registry's owner, after creating the inbox
 * table with the caller's own rights.  Rows of dropped tables are removed by the
 * extension's sql_drop event trigger, so drop_inbox is just DROP TABLE.
 *
 * The cache holds one InboxInfo per inbox OID.  A relcache invalidation of the
 * table (DROP, ALTER ... RENAME, VACUUM updating pg_class) marks the entry stale;
 * the next lookup re-reads the registry and rebuilds the kept plans from the
 * table's current name.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "compat.h"
#include "inbox.h"

static HTAB *InboxCache = NULL;

/*
 * The registry table the cache was filled from.  When it goes (DROP EXTENSION) or
 * changes, every entry is stale, though no inbox table itself was touched.
 */
static Oid	RegistryRelid = InvalidOid;

static void
registry_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	InboxInfo  *entry;

	if (InboxCache == NULL)
		return;

	if (OidIsValid(relid) && relid != RegistryRelid)
	{
		entry = hash_search(InboxCache, &relid, HASH_FIND, NULL);
		if (entry != NULL)
			entry->valid = false;
		return;
	}

	hash_seq_init(&status, InboxCache);
	while ((entry = hash_seq_search(&status)) != NULL)
		entry->valid = false;
}

void
registry_init(void)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(InboxInfo);
	ctl.hcxt = CacheMemoryContext;
	InboxCache = hash_create("idempotent_inbox inboxes", 16, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(registry_invalidate, (Datum) 0);
}

/* The schema our SQL objects live in: that of the function being called. */
static char *
extension_schema(FunctionCallInfo fcinfo)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);

	return get_namespace_name(nspid);
}

/* What the registry says of one inbox. */
typedef struct RegistryRow
{
	Oid			keytype;		/* InvalidOid when relid is not an inbox */
	bool		has_retention;
	Interval	retention;
} RegistryRow;

static RegistryRow
registry_row(FunctionCallInfo fcinfo, Oid relid)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *sql;
	RegistryRow row;
	int			rc;

	memset(&row, 0, sizeof(row));
	sql = psprintf("SELECT key_type::pg_catalog.oid, retention FROM %s.registry "
				   "WHERE relid OPERATOR(pg_catalog.=) $1",
				   quote_identifier(extension_schema(fcinfo)));
	RegistryRelid = get_relname_relid("registry", get_func_namespace(fcinfo->flinfo->fn_oid));

	spi_connect();
	rc = SPI_execute_with_args(sql, 1, argtypes, values, NULL, true, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "registry lookup returned %s", SPI_result_code_string(rc));
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		retention;

		row.keytype = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 1, &isnull));
		retention = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
		row.has_retention = !isnull;
		if (!isnull)
			row.retention = *DatumGetIntervalP(retention);
	}
	SPI_finish();

	return row;
}

static void
load_entry(InboxInfo *entry, const RegistryRow *registered)
{
	Relation	rel;
	Relation	index;
	Oid			opfamily;
	Oid			opcintype;
	Oid			eqop;

	/* Old plans name the table as it was called; the name may have changed. */
	inbox_plans_free(entry);
	/* NULL at once: an error below must not leave a pointer to freed memory. */
	if (entry->qualname != NULL)
		pfree(entry->qualname);
	entry->qualname = NULL;

	rel = table_open(entry->relid, AccessShareLock);
	entry->pkindex = RelationGetPrimaryKeyIndex(rel);
	if (!OidIsValid(entry->pkindex))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox \"%s\" has no primary key", RelationGetRelationName(rel)),
				 errhint("Recreate it with inbox.create_inbox().")));

	index = index_open(entry->pkindex, AccessShareLock);
	opfamily = index->rd_opfamily[0];
	opcintype = index->rd_opcintype[0];
	eqop = get_opfamily_member(opfamily, opcintype, opcintype, BTEqualStrategyNumber);
	if (!OidIsValid(eqop))
		elog(ERROR, "no equality operator in operator family %u", opfamily);
	entry->key_eq = get_opcode(eqop);
	index_close(index, AccessShareLock);

	/* Columns are found by name: the user may have added or dropped some. */
	for (int c = 0; c < INBOX_NUM_COLUMNS; c++)
	{
		AttrNumber	attnum = get_attnum(entry->relid, inbox_column_names[c]);

		entry->columns[c] = attnum > 0 ? attnum : InvalidAttrNumber;
	}
	entry->key_attnum = get_attnum(entry->relid, "message_id");
	entry->direct_shape = entry->key_attnum > 0 &&
		claim_direct_shape_ok(rel, entry->columns[COL_CLAIMED_AT]);

	entry->qualname = MemoryContextStrdup(CacheMemoryContext,
										  quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
																	 RelationGetRelationName(rel)));
	table_close(rel, AccessShareLock);

	entry->keytype = registered->keytype;
	entry->has_retention = registered->has_retention;
	entry->retention = registered->retention;
	entry->counters = stats_counters_for(entry->relid);
	entry->valid = true;
}

/*
 * The inbox named by argument argno, from the cache when it is fresh, after
 * locking the table in lockmode.  Raises the user-facing errors for a NULL,
 * missing or non-inbox table.
 */
InboxInfo *
registry_lookup(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("inbox must not be null")));
	return registry_lookup_relid(fcinfo, PG_GETARG_OID(argno), lockmode);
}

/*
 * The same for an inbox known by OID (a trigger's argument).  fcinfo is that of
 * one of our functions: it tells which schema the registry is in.
 */
InboxInfo *
registry_lookup_relid(FunctionCallInfo fcinfo, Oid relid, LOCKMODE lockmode)
{
	InboxInfo  *entry;
	bool		found;
	RegistryRow registered;

	/*
	 * Lock before trusting the cache: a RENAME or DROP that another session
	 * commits reaches us as an invalidation now, not later while a kept plan
	 * re-resolves the old name ("relation public.x does not exist").  Claims
	 * pass the mode their INSERT takes, so that lock is not acquired twice.
	 */
	LockRelationOid(relid, lockmode);

	entry = hash_search(InboxCache, &relid, HASH_FIND, NULL);
	if (entry != NULL && entry->valid)
		return entry;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));

	registered = registry_row(fcinfo, relid);
	if (!OidIsValid(registered.keytype))
	{
		if (entry != NULL)
		{
			inbox_plans_free(entry);
			if (entry->qualname != NULL)
				pfree(entry->qualname);
			hash_search(InboxCache, &relid, HASH_REMOVE, NULL);
		}
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an inbox", get_rel_name(relid)),
				 errhint("Create one with inbox.create_inbox().")));
	}

	entry = hash_search(InboxCache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->qualname = NULL;
		memset(entry->plans, 0, sizeof(entry->plans));
		entry->dup_rate = 0;
	}
	entry->valid = false;
	load_entry(entry, &registered);
	return entry;
}

/* Only these key types have the storage and comparison the SPEC promises. */
static void
CheckKeyType(Oid keytype)
{
	if (keytype != TEXTOID && keytype != UUIDOID && keytype != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unsupported inbox key type %s", format_type_be(keytype)),
				 errhint("Use text, uuid or bigint.")));
}

/* A retention window must be a positive span of time. */
void
registry_check_retention(Interval *retention)
{
	Interval	zero;

	memset(&zero, 0, sizeof(zero));
	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(retention),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retention must be a positive interval"),
				 errhint("Pass NULL to keep claims until they are deleted.")));
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
 * recording that fact needs the registry owner's, for this one statement.
 */
static void
registry_write(FunctionCallInfo fcinfo, const char *sql, int nargs, Oid *argtypes,
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
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (rc != expected || SPI_processed != 1)
		elog(ERROR, "registry write returned %s for %lu rows",
			 SPI_result_code_string(rc), (unsigned long) SPI_processed);
}

static void
insert_registry_row(FunctionCallInfo fcinfo, Oid relid, Oid keytype, Datum retention,
					bool retention_null)
{
	Oid			argtypes[3] = {REGCLASSOID, REGTYPEOID, INTERVALOID};
	Datum		values[3] = {ObjectIdGetDatum(relid), ObjectIdGetDatum(keytype), retention};
	char		nulls[3] = {' ', ' ', retention_null ? 'n' : ' '};

	registry_write(fcinfo,
				   psprintf("INSERT INTO %s.registry (relid, key_type, retention) "
							"VALUES ($1, $2, $3)", quote_identifier(extension_schema(fcinfo))),
				   3, argtypes, values, nulls, SPI_OK_INSERT);
}

/* set_retention's write; SPI must be connected. */
void
registry_update_retention(FunctionCallInfo fcinfo, Oid relid, Datum retention,
						  bool retention_null)
{
	Oid			argtypes[2] = {REGCLASSOID, INTERVALOID};
	Datum		values[2] = {ObjectIdGetDatum(relid), retention};
	char		nulls[2] = {' ', retention_null ? 'n' : ' '};

	registry_write(fcinfo,
				   psprintf("UPDATE %s.registry SET retention = $2 "
							"WHERE relid OPERATOR(pg_catalog.=) $1",
							quote_identifier(extension_schema(fcinfo))),
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
		registry_check_retention(PG_GETARG_INTERVAL_P(2));

	rv = makeRangeVarFromNameList(textToQualifiedNameList(PG_GETARG_TEXT_PP(0)));
	nspid = RangeVarGetCreationNamespace(rv);
	CheckPermanent(nspid, rv->relname);
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

	insert_registry_row(fcinfo, relid, keytype,
						PG_ARGISNULL(2) ? (Datum) 0 : PG_GETARG_DATUM(2), PG_ARGISNULL(2));
	SPI_finish();

	PG_RETURN_OID(relid);
}

/* Only the owner may drop or alter, and must be known to be before we lock. */
void
registry_check_owner(FunctionCallInfo fcinfo, int argno)
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
	registry_check_owner(fcinfo, 0);
	inbox = registry_lookup(fcinfo, 0, AccessExclusiveLock);
	qualname = pstrdup(inbox->qualname);

	spi_connect();
	/* The caller's rights: only an owner may drop.  The event trigger forgets it. */
	rc = SPI_execute(psprintf("DROP TABLE %s", qualname), false, 0);
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "DROP TABLE returned %s", SPI_result_code_string(rc));
	SPI_finish();

	PG_RETURN_VOID();
}
