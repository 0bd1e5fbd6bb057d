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
#include "catalog/pg_constraint.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/varlena.h"

#include "citus_failures.h"
#include "compat.h"
#include "inbox_info.h"
#include "inbox_admin.h"
#include "inbox_shape.h"
#include "inbox_sql.h"
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

/* A retention window must be a positive span of time; kept says what it keeps. */
void
admin_check_retention(Interval *retention, const char *kept)
{
	Interval	zero;

	memset(&zero, 0, sizeof(zero));
	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(retention),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retention must be a positive interval"),
				 errhint("Pass NULL to keep %s until they are deleted.", kept)));
	if (!retention_within_bounds(retention))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retention must be at most %d years", MAX_RETENTION_YEARS),
				 errhint("Pass NULL to keep %s until they are deleted.", kept)));
}

/*
 * The name given to create_inbox or create_outbox (what), parsed like a
 * qualified table name.  The parser cuts identifiers at NAMEDATALEN - 1 bytes
 * without a word; a name that long is refused instead, so the table is called
 * what the caller wrote.  Each dot-separated part is measured as written,
 * without its quotes.
 */
static List *
admin_table_name(text *name, const char *what)
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
					 errmsg("%s name is too long", what),
					 errdetail("Each part of a name is at most %d bytes.", NAMEDATALEN - 1)));
	}
	return textToQualifiedNameList(name);
}

/*
 * Where a new inbox or outbox (what) of the name in argument 0 goes: its
 * namespace, and its name quoted and qualified.  Claims and events are user data
 * that must survive the session and a crash, so neither may be temporary, and
 * neither may live in the extension's schema, which DROP EXTENSION ... CASCADE
 * would take with it.
 */
Oid
admin_new_table_name(FunctionCallInfo fcinfo, const char *what, const char *why_permanent,
					 char **relname, char **qualname)
{
	RangeVar   *rv;
	Oid			nspid;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s name must not be null", what)));
	rv = makeRangeVarFromNameList(admin_table_name(PG_GETARG_TEXT_PP(0), what));
	nspid = RangeVarGetCreationNamespace(rv);
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"%s\" cannot be temporary", what, rv->relname),
				 errdetail("%s", why_permanent)));
	if (nspid == registry_extension_namespace(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s \"%s\" cannot be created in the extension's schema", what, rv->relname),
				 errdetail("The schema belongs to the extension: DROP EXTENSION ... CASCADE would drop the %s with it.", what),
				 errhint("Create it in a schema of your own.")));
	*relname = rv->relname;
	*qualname = quote_qualified_identifier(get_namespace_name(nspid), rv->relname);
	return nspid;
}

/*
 * Run one statement on a registry of the extension's (registry, or
 * outbox_registry) with its owner's rights.  Callers have already checked the
 * caller's own rights on the inbox or outbox (they created it, or own it);
 * recording that fact needs the registry owner's, for this one statement, which
 * is fully qualified and runs as a restricted operation, as VACUUM runs index
 * functions.
 */
void
admin_registry_write(FunctionCallInfo fcinfo, const char *registry_name, const char *sql,
					 int nargs, Oid *argtypes, Datum *values, const char *nulls, int expected)
{
	Oid			registry;
	Oid			owner;
	Oid			save_userid;
	int			save_sec_context;
	HeapTuple	tuple;
	int			rc;

	registry = get_relname_relid(registry_name, get_func_namespace(fcinfo->flinfo->fn_oid));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(registry));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for %s", registry_name);
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
						  bool retention_null, const char *shard_key)
{
	Oid			argtypes[4] = {REGCLASSOID, REGTYPEOID, INTERVALOID, NAMEOID};
	Datum		values[4] = {ObjectIdGetDatum(relid), ObjectIdGetDatum(keytype), retention,
							 shard_key ? DirectFunctionCall1(namein, CStringGetDatum(shard_key)) : (Datum) 0};
	char		nulls[4] = {' ', ' ', retention_null ? 'n' : ' ', shard_key ? ' ' : 'n'};

	/* Only 0.3's create_sharded_inbox names a shard key: 0.2's registry has no column for it. */
	admin_registry_write(fcinfo, "registry",
						 psprintf("INSERT INTO %s.registry (relid, key_type, retention%s) "
								  "VALUES ($1, $2, $3%s)",
								  quote_identifier(admin_extension_schema(fcinfo)),
								  shard_key ? ", shard_key" : "", shard_key ? ", $4" : ""),
						 shard_key ? 4 : 3, argtypes, values, nulls, SPI_OK_INSERT);
}

/* set_retention's write; SPI must be connected. */
static void
admin_update_retention(FunctionCallInfo fcinfo, Oid relid, Datum retention,
					   bool retention_null)
{
	Oid			argtypes[2] = {REGCLASSOID, INTERVALOID};
	Datum		values[2] = {ObjectIdGetDatum(relid), retention};
	char		nulls[2] = {' ', retention_null ? 'n' : ' '};

	admin_registry_write(fcinfo, "registry",
						 psprintf("UPDATE %s.registry SET retention = $2 "
								  "WHERE relid OPERATOR(pg_catalog.=) $1",
								  quote_identifier(admin_extension_schema(fcinfo))),
						 2, argtypes, values, nulls, SPI_OK_UPDATE);
}

/*
 * A shard key is a column of the inbox: a name of its own, which create_inbox's
 * columns do not already use.
 */
static char *
admin_shard_key(FunctionCallInfo fcinfo, int argno)
{
	char	   *name;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("shard key must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("shard key must not be empty")));
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("shard key is too long"),
				 errdetail("A column name is at most %d bytes.", NAMEDATALEN - 1)));
	if (strcmp(name, "message_id") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_COLUMN),
				 errmsg("shard key \"%s\" is a column of every inbox", name),
				 errhint("Name the shard key after the column it stands for, such as account_id.")));
	for (int c = 0; c < INBOX_NUM_COLUMNS; c++)
		if (strcmp(name, inbox_sql_column_names[c]) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("shard key \"%s\" is a column of every inbox", name),
					 errhint("Name the shard key after the column it stands for, such as account_id.")));
	return name;
}

/*
 * Does the type live in a temporary schema, or is it built on one that does (the
 * element of an array, the base of a domain, the subtype of a range, a column of
 * a composite)?  PostgreSQL lets a permanent table have a column of such a type,
 * and drops the column when the session that owns the type ends: the shard key
 * of a sharded inbox, with its primary key.
 */
static bool
type_is_temporary(Oid typid)
{
	HeapTuple	tuple;
	Form_pg_type form;
	bool		temporary;

	check_stack_depth();
	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (!HeapTupleIsValid(tuple))
		return false;
	form = (Form_pg_type) GETSTRUCT(tuple);
	temporary = isAnyTempNamespace(form->typnamespace);
	if (!temporary && form->typtype == TYPTYPE_DOMAIN)
		temporary = type_is_temporary(form->typbasetype);
	else if (!temporary && IsTrueArrayType(form))
		temporary = type_is_temporary(form->typelem);
	else if (!temporary && form->typtype == TYPTYPE_RANGE)
		temporary = type_is_temporary(get_range_subtype(typid));
	else if (!temporary && form->typtype == TYPTYPE_MULTIRANGE)
		temporary = type_is_temporary(get_multirange_range(typid));
	else if (!temporary && form->typtype == TYPTYPE_COMPOSITE && OidIsValid(form->typrelid))
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(typid, -1);

		for (int i = 0; i < desc->natts && !temporary; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				temporary = type_is_temporary(TupleDescAttr(desc, i)->atttypid);
		ReleaseTupleDesc(desc);
	}
	ReleaseSysCache(tuple);
	return temporary;
}

/*
 * A sharded inbox carries its retention in a constraint too (INBOX_WINDOW_MARKER),
 * which Citus copies to every node with the table, so that a worker, which has
 * no registry row for it, judges expired claims as the coordinator does.  The
 * constraint is always true, so NOT VALID spares the scan.  The interval is
 * written in a form every IntervalStyle reads alike.
 */
static void
admin_write_window_marker(Oid relid, const char *qualname, const Interval *retention)
{
	/* Two statements: Citus runs ADD CONSTRAINT only as the one subcommand. */
	if (OidIsValid(get_relation_constraint_oid(relid, INBOX_WINDOW_MARKER, true)))
		spi_exec_utility(psprintf("ALTER TABLE %s DROP CONSTRAINT " INBOX_WINDOW_MARKER,
								  qualname));
	if (retention != NULL)
		spi_exec_utility(psprintf("ALTER TABLE %s ADD CONSTRAINT " INBOX_WINDOW_MARKER
								  " CHECK ('%d months %d days " INT64_FORMAT " microseconds'"
								  "::pg_catalog.interval IS NOT NULL) NOT VALID",
								  qualname, retention->month, retention->day, retention->time));
}

/*
 * create_inbox and create_sharded_inbox.  The arguments: the name, the key type
 * and the retention at name_arg, keytype_arg and retention_arg; shard_key is
 * NULL for an inbox without one.
 */
static Oid
admin_create(FunctionCallInfo fcinfo, int keytype_arg, int retention_arg,
			 const char *shard_key, Oid shard_type)
{
	Oid			nspid;
	Oid			keytype;
	Oid			relid;
	char	   *relname;
	char	   *qualname;
	char	   *sharding = "";
	int			rc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("inbox name must not be null")));
	if (PG_ARGISNULL(keytype_arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("inbox key type must not be null")));
	keytype = PG_GETARG_OID(keytype_arg);
	CheckKeyType(keytype);
	if (!PG_ARGISNULL(retention_arg))
		admin_check_retention(PG_GETARG_INTERVAL_P(retention_arg), "claims");
	nspid = admin_new_table_name(fcinfo, "inbox",
								 "Claims must survive the session and a crash to deduplicate redeliveries.",
								 &relname, &qualname);

	/*
	 * A sharded inbox: the shard key leads the primary key, and the marker
	 * constraint tells every node of a Citus cluster that the table is an inbox
	 * (inbox_shape.h).
	 */
	if (shard_key != NULL)
		sharding = psprintf("%s %s NOT NULL, ", quote_identifier(shard_key),
							/* no typmod: "bpchar", not "character", which is char(1) */
							format_type_extended(shard_type, -1,
												 FORMAT_TYPE_FORCE_QUALIFY | FORMAT_TYPE_TYPEMOD_GIVEN));

	spi_connect();

	/* The caller's rights: CREATE on the schema, and the caller owns the result. */
	rc = SPI_execute(psprintf("CREATE TABLE %s (%s"
							  "message_id %s%s, "
							  "claimed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(), "
							  "fingerprint pg_catalog.bytea, "
							  "result pg_catalog.jsonb, "
							  "token pg_catalog.int8, "
							  "lease_until pg_catalog.timestamptz, "
							  "holder_pid pg_catalog.int4, "
							  "holder_started pg_catalog.timestamptz%s)",
							  qualname, sharding, format_type_be_qualified(keytype),
							  shard_key ? " NOT NULL" : " PRIMARY KEY",
							  shard_key ? psprintf(", CONSTRAINT " INBOX_MARKER
												   " CHECK (message_id IS NOT NULL), "
												   "PRIMARY KEY (%s, message_id)",
												   quote_identifier(shard_key)) : ""),
					 false, 0);
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "CREATE TABLE returned %s", SPI_result_code_string(rc));

	relid = get_relname_relid(relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "inbox \"%s\" vanished after creation", qualname);
	if (!PG_ARGISNULL(retention_arg))
		retention_index_create(relid);
	if (shard_key != NULL && !PG_ARGISNULL(retention_arg))
		admin_write_window_marker(relid, qualname, PG_GETARG_INTERVAL_P(retention_arg));
	stats_forget(relid);

	admin_insert_registry_row(fcinfo, relid, keytype,
							  PG_ARGISNULL(retention_arg) ? (Datum) 0 : PG_GETARG_DATUM(retention_arg),
							  PG_ARGISNULL(retention_arg), shard_key);
	SPI_finish();

	return relid;
}

PG_FUNCTION_INFO_V1(inbox_create_inbox);
Datum
inbox_create_inbox(PG_FUNCTION_ARGS)
{
	PG_RETURN_OID(admin_create(fcinfo, 1, 2, NULL, InvalidOid));
}

/* create_sharded_inbox(name, shard_key, shard_key_type, key_type, retention) */
PG_FUNCTION_INFO_V1(inbox_create_sharded_inbox);
Datum
inbox_create_sharded_inbox(PG_FUNCTION_ARGS)
{
	char	   *shard_key = admin_shard_key(fcinfo, 1);
	Oid			shard_type;

	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("shard key type must not be null")));
	shard_type = PG_GETARG_OID(2);
	if (!SearchSysCacheExists1(TYPEOID, ObjectIdGetDatum(shard_type)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("type with OID %u does not exist", shard_type)));
	if (type_is_temporary(shard_type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard key type %s is temporary", format_type_be(shard_type)),
				 errdetail("A temporary type is dropped when its session ends, and with it the inbox's shard key column and primary key."),
				 errhint("Use a type of a permanent schema.")));
	PG_RETURN_OID(admin_create(fcinfo, 3, 4, shard_key, shard_type));
}

/* Only the owner may drop or alter, and must be known to be before we lock. */
void
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
	rc = SPI_execute(psprintf("DROP TABLE %s%s", qualname, citus_failures_drop_list(inbox)),
					 false, 0);
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
		admin_check_retention(PG_GETARG_INTERVAL_P(1), "claims");

	spi_connect();
	if (has_retention)
		retention_index_create(inbox->relid);
	if (inbox->shard_attnum != InvalidAttrNumber)
		admin_write_window_marker(inbox->relid, inbox->qualname,
								  has_retention ? PG_GETARG_INTERVAL_P(1) : NULL);
	admin_update_retention(fcinfo, inbox->relid, has_retention ? PG_GETARG_DATUM(1) : (Datum) 0,
						   !has_retention);
	SPI_finish();

	/* Every backend re-reads the window at its next call on this inbox. */
	CacheInvalidateRelcacheByRelid(inbox->relid);
	PG_RETURN_VOID();
}

/*
 * A failure setting of the inbox's registry row (max_attempts, key_ordering),
 * read by record_failure and claim_in_order at each call, so nothing is cached;
 * of a Citus table, also in its failures table's marker (citus_failures.c).
 */
static void
admin_set_failure_setting(FunctionCallInfo fcinfo, const char *column, Oid type)
{
	InboxInfo  *inbox;
	Oid			argtypes[2] = {REGCLASSOID, type};
	Datum		values[2];

	admin_check_owner(fcinfo, 0);
	inbox = registry_lookup(fcinfo, 0, ShareUpdateExclusiveLock, 0);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", column)));
	if (get_attnum(registry_extension_relation(fcinfo, "registry"), column) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"idempotent_inbox\" must be updated to record failures"),
				 errhint("Run ALTER EXTENSION idempotent_inbox UPDATE.")));
	values[0] = ObjectIdGetDatum(inbox->relid);
	values[1] = PG_GETARG_DATUM(1);
	spi_connect();
	admin_registry_write(fcinfo, "registry",
						 psprintf("UPDATE %s.registry SET %s = $2 "
								  "WHERE relid OPERATOR(pg_catalog.=) $1",
								  quote_identifier(admin_extension_schema(fcinfo)), column),
						 2, argtypes, values, NULL, SPI_OK_UPDATE);
	/* A Citus table's workers read them from its failures table. */
	if (inbox->distributed)
		citus_failures_sync_settings(fcinfo, inbox);
	SPI_finish();
}

/* After how many failed attempts record_failure quarantines a message. */
PG_FUNCTION_INFO_V1(inbox_set_max_attempts);
Datum
inbox_set_max_attempts(PG_FUNCTION_ARGS)
{
	if (!PG_ARGISNULL(1) && PG_GETARG_INT32(1) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_attempts must be at least 1"),
				 errdetail("The value given is %d.", PG_GETARG_INT32(1))));
	admin_set_failure_setting(fcinfo, "max_attempts", INT4OID);
	PG_RETURN_VOID();
}

/* Whether claim_in_order may be used on the inbox (key_order.c). */
PG_FUNCTION_INFO_V1(inbox_set_key_ordering);
Datum
inbox_set_key_ordering(PG_FUNCTION_ARGS)
{
	admin_set_failure_setting(fcinfo, "key_ordering", BOOLOID);
	PG_RETURN_VOID();
}

/*
 * The sql_drop event trigger: forget the registry rows, stream positions,
 * completed offsets, failures, blocked and audit rows of dropped tables, and
 * the outbox registry rows of dropped outboxes.  It
 * finds those tables in its own schema when it runs, as every
 * function of the extension does: a PL/pgSQL body would keep the name the
 * schema had when it was created, so that after ALTER SCHEMA inbox RENAME every
 * DROP TABLE in the database failed, and a table made under the old name would
 * have been written with the rights of the function's owner.
 */
PG_FUNCTION_INFO_V1(inbox_forget_dropped_inboxes);
Datum
inbox_forget_dropped_inboxes(PG_FUNCTION_ARGS)
{
	static const char *const tables[][2] = {{"registry", "relid"}, {"positions", "inbox"},
	{"completed_offsets", "inbox"}, {"failures", "inbox"}, {"audit_log", "inbox"},
	{"blocked", "inbox"}, {"outbox_registry", "relid"}};
	Oid			nspid;
	char	   *schema;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("forget_dropped_inboxes() must be called as an event trigger")));
	nspid = get_func_namespace(fcinfo->flinfo->fn_oid);
	schema = OidIsValid(nspid) ? get_namespace_name(nspid) : NULL;
	if (schema == NULL)
		PG_RETURN_VOID();

	spi_connect();
	for (size_t i = 0; i < lengthof(tables); i++)
	{
		/* Gone with the same command (the extension's own schema dropped). */
		if (!OidIsValid(get_relname_relid(tables[i][0], nspid)))
			continue;
		if (SPI_execute(psprintf("DELETE FROM %s t "
								 "USING pg_catalog.pg_event_trigger_dropped_objects() d "
								 "WHERE d.classid OPERATOR(pg_catalog.=) "
								 "'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid "
								 "AND d.objsubid OPERATOR(pg_catalog.=) 0 "
								 "AND t.%s::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid",
								 quote_qualified_identifier(schema, tables[i][0]), tables[i][1]),
						false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not forget dropped tables in %s", tables[i][0]);
	}
	SPI_finish();
	PG_RETURN_VOID();
}
