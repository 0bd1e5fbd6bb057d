/*
 * registry.c
 *		Which tables are inboxes: the per-backend cache that answers "is this an
 *		inbox, and what are its keys" on every call, and the rights checks made
 *		with that lookup.
 *
 * The registry is the table <extschema>.registry, written only by the admin
 * functions (inbox_admin.c); this file only reads it.
 *
 * The cache holds one InboxInfo per inbox OID.  A relcache invalidation of the
 * table (DROP, ALTER ... RENAME, VACUUM updating pg_class) marks the entry stale;
 * the next lookup re-reads the registry and rebuilds the kept plans from the
 * table's current name.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "lib/stringinfo.h"
#include "storage/lmgr.h"
#include "storage/sinval.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "inbox_info.h"
#include "direct_access.h"
#include "citus_tables.h"
#include "inbox_shape.h"
#include "registry.h"
#include "relcache_callbacks.h"
#include "retired.h"
#include "signature.h"
#include "spi_util.h"
#include "stats.h"

static HTAB *InboxCache = NULL;

static InboxInfo *lookup(FunctionCallInfo fcinfo, Oid relid, LOCKMODE lockmode,
						 AclMode rights, bool quiet);

/*
 * The registry table the cache was filled from.  When it goes (DROP EXTENSION) or
 * changes, every entry is stale, though no inbox table itself was touched.
 */
static Oid	RegistryRelid = InvalidOid;

/*
 * Hand what an entry holds to retired.c; the entry keeps nothing.  An entry is
 * reloaded when an invalidation arrives, and one can arrive in the middle of a
 * call: a trigger fired by the claim's INSERT may GRANT on the inbox and call
 * another of our functions on it, which reloads the entry while the outer call
 * is still running the old plan.  So what the entry held is freed only when the
 * transaction ends.  A reload is also all or nothing (load_entry), so a failed
 * reload caught by a trigger's exception block leaves the entry as it was, only
 * marked stale.
 */
static void
retire_entry_contents(InboxInfo *entry)
{
	for (int i = 0; i < SQL_NUM_STATEMENTS; i++)
	{
		retired_add_plan(entry->plans[i]);
		entry->plans[i] = NULL;
	}
	retired_add_context(entry->cxt);
	entry->cxt = NULL;
}

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

/*
 * A schema renamed changes the qualified names our statements were written
 * with, and tells no relation: a statement naming "app.ib" after app became
 * app_old would claim into whatever table is called app.ib now.
 */
static void
registry_invalidate_names(Datum arg, int cacheid, uint32 hashvalue)
{
	registry_invalidate(arg, InvalidOid);
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
	relcache_callback_register(registry_invalidate);
	CacheRegisterSyscacheCallback(NAMESPACEOID, registry_invalidate_names, (Datum) 0);
}

/*
 * The schema our SQL objects live in: that of the function being called.  A
 * statement run by claim_apply, or a trigger, may have dropped the extension
 * under the call that is still running.
 */
Oid
registry_extension_namespace(FunctionCallInfo fcinfo)
{
	Oid			nspid = get_func_namespace(fcinfo->flinfo->fn_oid);

	if (!OidIsValid(nspid) || get_namespace_name(nspid) == NULL)
		signature_report_extension_dropped();
	return nspid;
}

/* One of the extension's own relations, by name. */
Oid
registry_extension_relation(FunctionCallInfo fcinfo, const char *relname)
{
	Oid			relid = get_relname_relid(relname, registry_extension_namespace(fcinfo));

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" of extension \"idempotent_inbox\" is missing", relname),
				 errhint("Reinstall the extension with DROP EXTENSION and CREATE EXTENSION.")));
	return relid;
}

static char *
extension_schema(FunctionCallInfo fcinfo)
{
	return get_namespace_name(registry_extension_namespace(fcinfo));
}

/* What the registry says of one inbox. */
typedef struct RegistryRow
{
	Oid			keytype;		/* InvalidOid when relid is not an inbox */
	bool		has_retention;
	Interval	retention;
	char	   *shard_key;		/* NULL when it has none */
} RegistryRow;

static RegistryRow
registry_row(FunctionCallInfo fcinfo, Oid relid)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *sql;
	RegistryRow row;
	MemoryContext callcxt = CurrentMemoryContext;
	int			rc;

	memset(&row, 0, sizeof(row));
	RegistryRelid = registry_extension_relation(fcinfo, "registry");
	/* Until ALTER EXTENSION ... UPDATE, a database may have the registry of 0.2. */
	sql = psprintf("SELECT key_type::pg_catalog.oid, retention, %s FROM %s.registry "
				   "WHERE relid OPERATOR(pg_catalog.=) $1",
				   get_attnum(RegistryRelid, "shard_key") != InvalidAttrNumber ?
				   "shard_key" : "NULL::pg_catalog.name",
				   quote_identifier(extension_schema(fcinfo)));

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
		row.shard_key = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
		if (row.shard_key != NULL)
			row.shard_key = MemoryContextStrdup(callcxt, row.shard_key);
	}
	SPI_finish();

	return row;
}

/*
 * A Citus table with no row in this node's registry, marked as an inbox
 * (INBOX_MARKER): on a worker, a sharded inbox the coordinator created.  Its
 * key type and shard key are read from the table, and its retention from the
 * window marker set_retention keeps beside the coordinator's registry row.
 */
static RegistryRow
marked_row(Oid relid)
{
	RegistryRow row;
	Relation	rel;
	AttrNumber	key;

	memset(&row, 0, sizeof(row));
	if (!citus_table(relid))
		return row;
	rel = table_open(relid, AccessShareLock);
	key = get_attnum(relid, "message_id");
	if (inbox_shape_has_marker(rel) && key > 0)
	{
		Oid			keytype = TupleDescAttr(RelationGetDescr(rel), key - 1)->atttypid;

		if (keytype == TEXTOID || keytype == UUIDOID || keytype == INT8OID)
		{
			row.keytype = keytype;
			row.shard_key = inbox_shape_shard_key(rel);
			row.has_retention = inbox_shape_marked_window(rel, &row.retention);
		}
	}
	table_close(rel, AccessShareLock);
	return row;
}

/*
 * Fill fresh from the inbox as it is now, checking everything the claim paths
 * rely on (inbox_shape.c): raises 55000 if the owner changed what we need, or
 * when quiet returns false and leaves the entry stale.
 */
static bool
load_entry(InboxInfo *entry, const RegistryRow *registered, bool quiet)
{
	InboxInfo	fresh;
	Relation	rel;
	char	   *problem;

	memset(&fresh, 0, sizeof(fresh));
	fresh.relid = entry->relid;
	fresh.keytype = registered->keytype;
	fresh.has_retention = registered->has_retention;
	fresh.retention = registered->retention;

	rel = table_open(entry->relid, AccessShareLock);
	problem = inbox_shape_problem(rel, &fresh, registered->shard_key);
	if (problem != NULL)
	{
		if (!quiet)
			inbox_shape_error(rel, problem, registered->shard_key != NULL);
		table_close(rel, AccessShareLock);
		return false;
	}
	fresh.direct_shape = inbox_shape_direct_ok(rel, &fresh);
	fresh.insert_first_safe = fresh.direct_shape &&
		direct_access_insert_first_safe(rel, fresh.pkindex);
	fresh.insert_triggers = rel->trigdesc != NULL && rel->trigdesc->trig_insert_before_row;
	fresh.update_triggers = rel->trigdesc != NULL && rel->trigdesc->trig_update_before_row;
	fresh.cxt = AllocSetContextCreate(CacheMemoryContext, "idempotent_inbox inbox",
									  ALLOCSET_SMALL_SIZES);
	fresh.qualname = MemoryContextStrdup(fresh.cxt,
										 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
																	RelationGetRelationName(rel)));
	MemoryContextSetIdentifier(fresh.cxt, fresh.qualname);
	if (fresh.shard_column != NULL)
		fresh.shard_column = MemoryContextStrdup(fresh.cxt, fresh.shard_column);
	fresh.distributed = citus_table(entry->relid);
	fresh.routed = fresh.distributed || fresh.shard_attnum != InvalidAttrNumber;
	table_close(rel, AccessShareLock);
	fresh.counters = stats_counters_for(entry->relid);

	/* Nothing can fail from here on: replace the entry as a whole. */
	retire_entry_contents(entry);
	fresh.dup_rate = entry->dup_rate;
	fresh.valid = true;
	*entry = fresh;
	return true;
}

/* "INSERT and SELECT": the rights in mask, for messages. */
static char *
rights_text(AclMode mask)
{
	static const struct
	{
		AclMode		bit;
		const char *name;
	}			names[] = {
		{ACL_INSERT, "INSERT"}, {ACL_SELECT, "SELECT"},
		{ACL_UPDATE, "UPDATE"}, {ACL_DELETE, "DELETE"},
	};
	StringInfoData buf;
	int			n = 0;
	int			total = 0;

	for (int i = 0; i < (int) lengthof(names); i++)
		if (mask & names[i].bit)
			total++;
	initStringInfo(&buf);
	for (int i = 0; i < (int) lengthof(names); i++)
	{
		if ((mask & names[i].bit) == 0)
			continue;
		if (n > 0)
			appendStringInfoString(&buf, n == total - 1 ? " and " : ", ");
		appendStringInfoString(&buf, names[i].name);
		n++;
	}
	return buf.data;
}

/*
 * The caller must hold every right in rights on the table.  Checked before the
 * lock is taken, so that a role without rights cannot queue behind (and hold up)
 * an exclusive lock on a table it may not touch, and again after it.
 */
static void
check_rights(FunctionCallInfo fcinfo, Oid relid, AclMode rights)
{
	AclMode		held;
	char	   *relname;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	if (rights == 0)
		return;

	/*
	 * The SQL a claim may run names the table, which needs USAGE on its schema;
	 * the paths that skip SQL must not be more generous.
	 */
	if (compat_namespace_aclcheck(get_rel_namespace(relid), GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for schema %s",
						get_namespace_name(get_rel_namespace(relid))),
				 errdetail("%s() needs USAGE on the schema of the inbox.",
						   get_func_name(fcinfo->flinfo->fn_oid))));
	held = pg_class_aclmask(relid, GetUserId(), rights, ACLMASK_ALL);
	if (held == rights)
		return;
	relname = get_rel_name(relid);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for table %s", relname ? relname : "?"),
			 errdetail("%s() needs %s on the inbox.",
					   get_func_name(fcinfo->flinfo->fn_oid), rights_text(rights))));
}

/*
 * The inbox named by argument argno, from the cache when it is fresh, after
 * checking that the caller holds rights on it and locking it in lockmode.
 * Raises the user-facing errors for a NULL, missing or non-inbox table.
 */
InboxInfo *
registry_lookup(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode, AclMode rights)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("inbox must not be null")));
	return registry_lookup_relid(fcinfo, PG_GETARG_OID(argno), lockmode, rights);
}

/*
 * The same for an inbox known by OID (a trigger's argument).  fcinfo is that of
 * one of our functions: it tells which schema the registry is in.
 */
InboxInfo *
registry_lookup_relid(FunctionCallInfo fcinfo, Oid relid, LOCKMODE lockmode, AclMode rights)
{
	return lookup(fcinfo, relid, lockmode, rights, false);
}

/*
 * For views over every inbox: NULL instead of an error when the table is not an
 * inbox or no longer has an inbox's shape, so that one broken inbox does not
 * make the view fail for everyone.  The caller checks rights before calling.
 */
InboxInfo *
registry_lookup_if_intact(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode)
{
	Oid			relid = PG_GETARG_OID(argno);

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		return NULL;
	return lookup(fcinfo, relid, lockmode, 0, true);
}

static InboxInfo *
lookup(FunctionCallInfo fcinfo, Oid relid, LOCKMODE lockmode, AclMode rights, bool quiet)
{
	InboxInfo  *entry;
	bool		found;
	RegistryRow registered;
	uint64		inval_count;

	check_rights(fcinfo, relid, rights);

	/*
	 * Lock before trusting the cache: a RENAME or DROP that another session
	 * commits reaches us as an invalidation now, not later while a kept plan
	 * re-resolves the old name ("relation public.x does not exist").  Claims
	 * pass the mode their INSERT takes, so that lock is not acquired twice.
	 * Rights are checked again if anything changed while we waited for the
	 * lock (a REVOKE, a DROP), as RangeVarGetRelidExtended does.
	 */
	inval_count = SharedInvalidMessageCounter;
	LockRelationOid(relid, lockmode);
	if (inval_count != SharedInvalidMessageCounter)
		check_rights(fcinfo, relid, rights);

	entry = hash_search(InboxCache, &relid, HASH_FIND, NULL);
	if (entry != NULL && entry->valid)
		return entry;

	registered = registry_row(fcinfo, relid);
	if (!OidIsValid(registered.keytype))
		registered = marked_row(relid);
	if (!OidIsValid(registered.keytype))
	{
		/*
		 * Not (or no longer) an inbox.  The entry stays, empty and stale: an
		 * outer call may still hold a pointer to it.
		 */
		if (entry != NULL)
			retire_entry_contents(entry);
		if (quiet)
			return NULL;
		if (citus_table(relid) && !citus_coordinator())
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not an inbox on this Citus worker", get_rel_name(relid)),
					 errdetail("A worker knows the inboxes that inbox.create_sharded_inbox() made, by the marker constraint Citus copies to it; an inbox made by inbox.create_inbox() is known on the coordinator only."),
					 errhint("Claim through the coordinator, or use a sharded inbox co-located with the table.")));
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an inbox", get_rel_name(relid)),
				 errhint("Create one with inbox.create_inbox().")));
	}

	entry = hash_search(InboxCache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		memset(((char *) entry) + sizeof(Oid), 0, sizeof(InboxInfo) - sizeof(Oid));
		entry->valid = false;
	}
	if (!load_entry(entry, &registered, quiet))
		return NULL;
	return entry;
}

/*
 * Claims of an inbox with a retention window renew an expired claim in place,
 * an UPDATE: so they need that right too, whether or not this id has expired,
 * so that the answer does not depend on the data.  The caller already holds
 * INSERT, and with it the lock a claim takes.
 */
void
registry_check_window_rights(const InboxInfo *inbox)
{
	if (inbox->has_retention &&
		pg_class_aclcheck(inbox->relid, GetUserId(), ACL_UPDATE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(inbox->relid)),
				 errdetail("Claims of an inbox with a retention window need UPDATE too: an expired claim is renewed in place.")));
}

/*
 * Functions that answer from a claim's stored columns (try_claim, leases, stored
 * results, fingerprints) refuse an inbox where row-level security applies to
 * the caller: they would answer from rows a policy hides.
 */
void
registry_check_stored_reads(FunctionCallInfo fcinfo, const InboxInfo *inbox)
{
	if (check_enable_rls(inbox->relid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s() does not support row-level security on inbox \"%s\"",
						get_func_name(fcinfo->flinfo->fn_oid), get_rel_name(inbox->relid)),
				 errdetail("It would answer from claims that a policy hides from you."),
				 errhint("Use claim() or claim_apply(), which apply the policies, or run as the inbox's owner.")));
}

/* The functions that have a _sharded form, which takes the shard key second. */
static const char *const sharded_forms[] = {
	"claim", "claim_apply", "claim_many", "claim_apply_many", "try_claim", "complete",
	"result", "acquire", "finish", "release", "record_failure", "retry", "discard",
	"forget", "claim_in_order"
};

static bool
has_sharded_form(const char *name)
{
	for (size_t i = 0; i < lengthof(sharded_forms); i++)
		if (strcmp(name, sharded_forms[i]) == 0)
			return true;
	return false;
}

/* "claim, claim_apply, ... and claim_in_order", for the hint that names them. */
static char *
sharded_form_names(void)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (size_t i = 0; i < lengthof(sharded_forms); i++)
		appendStringInfo(&buf, "%s%s", i == 0 ? "" : i + 1 == lengthof(sharded_forms) ? " and " : ", ",
						 sharded_forms[i]);
	return buf.data;
}

/*
 * A sharded inbox is claimed by (shard key, message id): the _sharded forms of
 * the claim functions, and only they, take the shard key value.
 */
void
registry_check_shard_form(FunctionCallInfo fcinfo, const InboxInfo *inbox, bool sharded_call)
{
	bool		sharded = inbox->shard_attnum != InvalidAttrNumber;
	const char *name;

	/* On every claim: only a mismatch looks the function's name up. */
	if (sharded == sharded_call)
		return;
	name = get_func_name(fcinfo->flinfo->fn_oid);
	if (sharded && !has_sharded_form(name))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s() does not support sharded inbox \"%s\"", name,
						get_rel_name(inbox->relid)),
				 errhint("The functions with a _sharded form, which takes the shard key value before the id, are %s.",
						 sharded_form_names())));
	if (sharded)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("inbox \"%s\" is sharded by %s", get_rel_name(inbox->relid),
						inbox->shard_column),
				 errdetail("Its claims are keyed by (%s, message_id).", inbox->shard_column),
				 errhint("Call %s_sharded(inbox, %s, %s, ...), which takes the shard key value before the message id.",
						 name, inbox->shard_column,
						 (strcmp(name, "claim_many") == 0 ||
						  strcmp(name, "claim_apply_many") == 0) ? "message_ids" :
						 (strcmp(name, "acquire") == 0 || strcmp(name, "finish") == 0 ||
						  strcmp(name, "release") == 0) ? "key" : "message_id")));
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("inbox \"%s\" has no shard key", get_rel_name(inbox->relid)),
			 errhint("Call %.*s() without a shard key.", (int) strlen(name) - 8, name)));
}
