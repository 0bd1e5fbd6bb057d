/*
 * citus_failures.c
 *		Where a sharded inbox that Citus distributes keeps its failures: four
 *		tables beside it, made by distribute_failures, distributed by the shard
 *		key and co-located with the inbox.
 *
 * On one node the failures, blocked and audit rows are the extension's tables,
 * and a key's lock is an advisory lock (failures.c, key_order.c).  Neither
 * works for a Citus table: its claims live on the workers, reached through the
 * coordinator or by a function Citus delegated there, and move with their
 * shards; a table of one node sees only the calls made on it, and a shard move
 * leaves it behind.  So the rows of a message go into tables whose shards sit
 * beside the inbox's shard that holds its claim, on the same worker, and move
 * with it: <inbox>_failures, <inbox>_blocked, <inbox>_audit, and <inbox>_keys,
 * whose rows are the key locks (a row lock is taken on the node that holds the
 * row, so a claim through the coordinator and one delegated to the worker meet
 * on it).  Every statement on them names the shard key, so Citus routes it to
 * that one shard.
 *
 * A worker has no registry row for the inbox, so the failures table carries the
 * inbox's max_attempts and key_ordering in a constraint (INBOX_FAILURES_MARKER),
 * as the inbox carries its window; set_max_attempts and set_key_ordering rewrite
 * it on the coordinator, and Citus copies it to every node.
 *
 * The tables are the inbox owner's, who made them: the statements on them run as
 * that owner under SECURITY_RESTRICTED_OPERATION (failures.c), so each call
 * checks that they still are, and that the shard key is still of the inbox's
 * type, before anything is written.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "citus_failures.h"
#include "citus_tables.h"
#include "failures.h"
#include "inbox_admin.h"
#include "registry.h"
#include "retention.h"
#include "spi_util.h"

typedef enum Companion
{
	COMPANION_FAILURES,
	COMPANION_BLOCKED,
	COMPANION_AUDIT,
	COMPANION_KEYS,
	NUM_COMPANIONS
} Companion;

static const char *const suffixes[NUM_COMPANIONS] = {
	[COMPANION_FAILURES] = "_failures",
	[COMPANION_BLOCKED] = "_blocked",
	[COMPANION_AUDIT] = "_audit",
	[COMPANION_KEYS] = "_keys",
};

/*
 * The name of an inbox's companion, or NULL when it would not fit in a name
 * (distribute_failures refuses such an inbox, so no such table exists).
 */
static char *
companion_name(const char *inbox_name, Companion which)
{
	if (strlen(inbox_name) + strlen(suffixes[which]) >= NAMEDATALEN)
		return NULL;
	return psprintf("%s%s", inbox_name, suffixes[which]);
}

static Oid
companion_relid(Oid inbox, Companion which, char **qualname)
{
	Oid			nspid = get_rel_namespace(inbox);
	char	   *name = companion_name(get_rel_name(inbox), which);

	if (name == NULL)
		return InvalidOid;
	if (qualname != NULL)
		*qualname = quote_qualified_identifier(get_namespace_name(nspid), name);
	return get_relname_relid(name, nspid);
}

/* Does the inbox have its failures tables here?  One name lookup. */
bool
citus_failures_exist(const InboxInfo *inbox)
{
	return OidIsValid(companion_relid(inbox->relid, COMPANION_FAILURES, NULL));
}

/*
 * The settings of the marker: (max_attempts IS NOT NULL AND key_ordering IS NOT
 * NULL) over two constants, as citus_failures_sync_settings writes it.
 */
static bool
marked_settings(Relation rel, int32 *max_attempts, bool *key_ordering)
{
	ConstrCheck *checks = rel->rd_att->constr ? rel->rd_att->constr->check : NULL;
	int			n = rel->rd_att->constr ? rel->rd_att->constr->num_check : 0;

	for (int i = 0; i < n; i++)
	{
		Node	   *expr;
		Const	   *values[2];
		ListCell   *lc;
		int			j = 0;

		if (strcmp(checks[i].ccname, INBOX_FAILURES_MARKER) != 0)
			continue;
		expr = stringToNode(checks[i].ccbin);
		if (!IsA(expr, BoolExpr) || ((BoolExpr *) expr)->boolop != AND_EXPR ||
			list_length(((BoolExpr *) expr)->args) != 2)
			return false;
		foreach(lc, ((BoolExpr *) expr)->args)
		{
			NullTest   *test = lfirst(lc);

			if (!IsA(test, NullTest) || !IsA(test->arg, Const) ||
				((Const *) test->arg)->constisnull)
				return false;
			values[j++] = (Const *) test->arg;
		}
		if (values[0]->consttype != INT4OID || values[1]->consttype != BOOLOID ||
			DatumGetInt32(values[0]->constvalue) < 1)
			return false;
		*max_attempts = DatumGetInt32(values[0]->constvalue);
		*key_ordering = DatumGetBool(values[1]->constvalue);
		return true;
	}
	return false;
}

/*
 * Is relid still a companion distribute_failures made: a Citus table of the
 * inbox's owner, whose shard key is of the inbox's type?  Errors otherwise, as
 * nothing may be written there as that owner.
 */
static void
companion_check(const InboxInfo *inbox, Oid relid, Oid owner, CompanionTables *tables)
{
	Relation	rel = table_open(relid, AccessShareLock);
	AttrNumber	attnum = get_attnum(relid, "shard_key");
	const char *problem = NULL;

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		problem = "It is not a table.";
	else if (rel->rd_rel->relowner != owner)
		problem = "It is not owned by the owner of the inbox.";
	else if (!citus_table(relid))
		problem = "It is not a Citus table.";
	else if (attnum == InvalidAttrNumber ||
			 TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid != inbox->shard_type)
		problem = "Its column \"shard_key\" is missing or not of the type of the inbox's shard key.";
	else if (tables != NULL &&
			 !marked_settings(rel, &tables->max_attempts, &tables->key_ordering))
		problem = "Its constraint \"" INBOX_FAILURES_MARKER "\" is missing or altered.";
	if (problem != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" is not a failures table of inbox \"%s\"",
						get_rel_name(relid), get_rel_name(inbox->relid)),
				 errdetail_internal("%s", problem),
				 errhint("Put back what inbox.distribute_failures() made.")));
	table_close(rel, AccessShareLock);
}

/*
 * The failures tables of a distributed inbox, checked: false when it has none.
 * A table of the four that is missing, or is not what distribute_failures made,
 * is an error.
 */
bool
citus_failures_lookup(const InboxInfo *inbox, CompanionTables *tables)
{
	char	  **names[NUM_COMPANIONS] = {&tables->failures, &tables->blocked,
	&tables->audit, &tables->keys};
	Oid			owner = retention_table_owner(inbox->relid);

	for (int i = 0; i < NUM_COMPANIONS; i++)
	{
		Oid			relid = companion_relid(inbox->relid, i, names[i]);

		if (!OidIsValid(relid))
		{
			if (i == COMPANION_FAILURES)
				return false;
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("table %s of inbox \"%s\" does not exist", *names[i],
							get_rel_name(inbox->relid)),
					 errhint("inbox.distribute_failures() makes it, with the other failures tables.")));
		}
		companion_check(inbox, relid, owner, i == COMPANION_FAILURES ? tables : NULL);
	}
	tables->inbox = inbox->relid;
	return true;
}

/* The failure settings of the inbox's registry row, read as the caller. */
static void
registry_settings(FunctionCallInfo fcinfo, const InboxInfo *inbox, int32 *max_attempts,
				  bool *key_ordering)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1] = {ObjectIdGetDatum(inbox->relid)};
	bool		isnull;

	if (SPI_execute_with_args(psprintf("SELECT max_attempts, key_ordering FROM %s.registry "
									   "WHERE relid OPERATOR(pg_catalog.=) $1",
									   quote_identifier(get_namespace_name(registry_extension_namespace(fcinfo)))),
							  1, argtypes, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read the failure settings of inbox \"%s\"",
			 get_rel_name(inbox->relid));
	*max_attempts = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*key_ordering = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
}

/*
 * Write the registry's settings into the marker of the inbox's failures table,
 * when it has one (distribute_failures, and set_max_attempts and
 * set_key_ordering on the coordinator).  Two statements: Citus runs ADD
 * CONSTRAINT only as the one subcommand.  SPI must be connected.
 */
void
citus_failures_sync_settings(FunctionCallInfo fcinfo, const InboxInfo *inbox)
{
	char	   *qualname;
	Oid			relid = companion_relid(inbox->relid, COMPANION_FAILURES, &qualname);
	int32		max_attempts;
	bool		key_ordering;

	if (!OidIsValid(relid))
		return;
	registry_settings(fcinfo, inbox, &max_attempts, &key_ordering);
	if (OidIsValid(get_relation_constraint_oid(relid, INBOX_FAILURES_MARKER, true)))
		spi_exec_utility(psprintf("ALTER TABLE %s DROP CONSTRAINT " INBOX_FAILURES_MARKER,
								  qualname));
	spi_exec_utility(psprintf("ALTER TABLE %s ADD CONSTRAINT " INBOX_FAILURES_MARKER
							  " CHECK (%d IS NOT NULL AND %s IS NOT NULL) NOT VALID",
							  qualname, max_attempts, key_ordering ? "true" : "false"));
}

/* The shard key's type, and its collation when not the type's. */
static char *
shard_key_type(const InboxInfo *inbox)
{
	char	   *type = format_type_be_qualified(inbox->shard_type);

	if (OidIsValid(inbox->shard_collation) &&
		inbox->shard_collation != get_typcollation(inbox->shard_type))
		type = psprintf("%s COLLATE %s", type, generate_collation_name(inbox->shard_collation));
	return type;
}

/*
 * The four tables' definitions: %1$s is the table, %2$s the shard key's type.
 * The columns are those of the extension's failures, blocked and audit_log
 * tables, without the inbox (one per table here) and with the shard key typed
 * as the inbox's, which co-location needs.
 */
static const char *const definitions[NUM_COMPANIONS] = {
	[COMPANION_FAILURES] =
	"CREATE TABLE %1$s (shard_key %2$s NOT NULL, message_id pg_catalog.text NOT NULL, "
	"ordering_key pg_catalog.text, "
	"attempts pg_catalog.int4 NOT NULL CHECK (attempts OPERATOR(pg_catalog.>=) 0), "
	"last_error pg_catalog.text NOT NULL, "
	"first_failed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(), "
	"last_failed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(), "
	"quarantined_at pg_catalog.timestamptz, PRIMARY KEY (shard_key, message_id))",
	[COMPANION_BLOCKED] =
	"CREATE TABLE %1$s (shard_key %2$s NOT NULL, message_id pg_catalog.text NOT NULL, "
	"ordering_key pg_catalog.text NOT NULL, blocked_by pg_catalog.text NOT NULL, "
	"first_blocked_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(), "
	"last_blocked_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(), "
	"deliveries pg_catalog.int4 NOT NULL DEFAULT 1, PRIMARY KEY (shard_key, message_id))",
	[COMPANION_AUDIT] =
	"CREATE TABLE %1$s (shard_key %2$s NOT NULL, message_id pg_catalog.text NOT NULL, "
	"verb pg_catalog.text NOT NULL "
	"CHECK (verb OPERATOR(pg_catalog.=) ANY (ARRAY['retry', 'discard', 'forget'])), "
	"actor pg_catalog.name NOT NULL, reason pg_catalog.text, "
	"done_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(), "
	"attempts pg_catalog.int4, last_error pg_catalog.text)",
	[COMPANION_KEYS] =
	"CREATE TABLE %1$s (shard_key %2$s NOT NULL, ordering_key pg_catalog.text NOT NULL, "
	"PRIMARY KEY (shard_key, ordering_key))",
};

/* The indexes the statements on them read by, beside their keys. */
static const char *const indexes[NUM_COMPANIONS] = {
	[COMPANION_FAILURES] = "CREATE INDEX ON %1$s (shard_key, ordering_key) "
	"WHERE ordering_key IS NOT NULL",
	[COMPANION_BLOCKED] = "CREATE INDEX ON %1$s (shard_key, ordering_key, first_blocked_at)",
	[COMPANION_AUDIT] = "CREATE INDEX ON %1$s (shard_key, done_at)",
};

/*
 * distribute_failures(inbox): make the failures tables of a sharded inbox that
 * Citus distributes by its shard key, co-located with it, on the coordinator.
 * The caller must own the inbox; the tables are made with the caller's rights,
 * in the inbox's schema, and are the caller's.
 */
PG_FUNCTION_INFO_V1(inbox_distribute_failures);
Datum
inbox_distribute_failures(PG_FUNCTION_ARGS)
{
	InboxInfo  *inbox;
	const char *inbox_name;
	char	   *distribution_column;
	char	   *names[NUM_COMPANIONS];
	char	   *type;
	Oid			argtypes[2] = {TEXTOID, TEXTOID};

	admin_check_owner(fcinfo, 0);
	inbox = registry_lookup(fcinfo, 0, ShareUpdateExclusiveLock, 0);
	inbox_name = get_rel_name(inbox->relid);
	if (!inbox->distributed || inbox->shard_attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox \"%s\" is not a sharded inbox that Citus distributes", inbox_name),
				 errdetail("Failures tables are for an inbox made by create_sharded_inbox and distributed by its shard key."),
				 errhint("On one node, sharded or not, the failures need no tables of their own.")));
	distribution_column = citus_distribution_column(inbox->relid);
	if (distribution_column == NULL ||
		strcmp(quote_identifier(distribution_column), inbox->shard_column) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox \"%s\" is not distributed by its shard key", inbox_name),
				 errhint("Distribute it with create_distributed_table() by column %s.",
						 inbox->shard_column)));
	if (!citus_coordinator())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox.distribute_failures() must be run on the Citus coordinator")));
	for (int i = 0; i < NUM_COMPANIONS; i++)
		if (companion_name(inbox_name, i) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NAME_TOO_LONG),
					 errmsg("the name of inbox \"%s\" is too long for its failures tables", inbox_name),
					 errdetail("Its failures tables are named after it with the suffix \"%s\", in at most %d bytes.",
							   suffixes[i], NAMEDATALEN - 1)));

	type = shard_key_type(inbox);
	spi_connect();
	for (int i = 0; i < NUM_COMPANIONS; i++)
	{
		(void) companion_relid(inbox->relid, i, &names[i]);
		spi_exec_utility(psprintf(definitions[i], names[i], type));
		if (indexes[i] != NULL)
			spi_exec_utility(psprintf(indexes[i], names[i]));
	}
	citus_failures_sync_settings(fcinfo, inbox);
	for (int i = 0; i < NUM_COMPANIONS; i++)
	{
		Datum		values[2] = {CStringGetTextDatum(names[i]),
		CStringGetTextDatum(inbox->qualname)};

		if (SPI_execute_with_args("SELECT pg_catalog.create_distributed_table($1::pg_catalog.regclass, "
								  "'shard_key', colocate_with => $2)",
								  2, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not distribute %s", names[i]);
	}
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * The columns the views read of each kind of table, in the order of the
 * extension's table of that kind, after its inbox column.  The shard key is
 * shown in its text form, written under the settings the one-node tables use.
 */
static const char *const view_columns[NUM_COMPANIONS] = {
	[COMPANION_FAILURES] = "message_id, shard_key::pg_catalog.text, ordering_key, attempts, "
	"last_error, first_failed_at, last_failed_at, quarantined_at",
	[COMPANION_BLOCKED] = "message_id, shard_key::pg_catalog.text, ordering_key, blocked_by, "
	"first_blocked_at, last_blocked_at, deliveries",
	[COMPANION_AUDIT] = "message_id, shard_key::pg_catalog.text, verb, actor, reason, done_at, "
	"attempts, last_error",
};

/*
 * Is the companion of this Citus inbox one to read as the inbox's owner?  As
 * companion_check, but quietly: the views skip what they cannot show.
 */
static bool
companion_readable(Oid inbox, Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		ok;

	if (!HeapTupleIsValid(tuple))
		return false;
	ok = ((Form_pg_class) GETSTRUCT(tuple))->relkind == RELKIND_RELATION &&
		((Form_pg_class) GETSTRUCT(tuple))->relowner == retention_table_owner(inbox);
	ReleaseSysCache(tuple);
	return ok && citus_table(relid);
}

/*
 * Add the rows of one kind of the failures tables of one inbox to the result,
 * when it is a Citus inbox the caller may read.  SPI must be connected.
 */
static void
companion_read(ReturnSetInfo *rsinfo, Oid inbox, Companion which)
{
	TupleDesc	desc = rsinfo->setDesc;
	char	   *qualname;
	Oid			relid;
	AsOwner		as_owner;
	int			level;
	int			rc;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(inbox)) || !citus_table(inbox) ||
		pg_class_aclcheck(inbox, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		return;
	relid = companion_relid(inbox, which, &qualname);
	if (!OidIsValid(relid) || !companion_readable(inbox, relid))
		return;

	level = failures_pin_settings();
	retention_as_owner_begin(inbox, &as_owner);
	rc = SPI_execute(psprintf("SELECT %s FROM %s", view_columns[which], qualname), true, 0);
	retention_as_owner_end(&as_owner);
	AtEOXact_GUC(true, level);
	if (rc != SPI_OK_SELECT)
		spi_report_error(rc, "a read of failures");
	if (SPI_processed > 0 && SPI_tuptable->tupdesc->natts != desc->natts - 1)
		elog(ERROR, "a read of failures returned %d columns", SPI_tuptable->tupdesc->natts);

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		Datum	   *out = palloc(sizeof(Datum) * desc->natts);
		bool	   *out_null = palloc(sizeof(bool) * desc->natts);

		out[0] = ObjectIdGetDatum(inbox);
		out_null[0] = false;
		for (int col = 1; col < desc->natts; col++)
			out[col] = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col,
									 &out_null[col]);
		tuplestore_putvalues(rsinfo->setResult, desc, out, out_null);
	}
}

/*
 * Add the rows of one kind of the failures tables of the Citus inboxes that
 * the caller may read, to the result: read as each inbox's owner, under
 * SECURITY_RESTRICTED_OPERATION.  Of every inbox, or of the inbox given, which
 * the caller must be allowed to read (42501) and must be an inbox (42809).
 */
static void
companion_rows(FunctionCallInfo fcinfo, Companion which)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char		nulls[1];
	Oid		   *inboxes;
	uint64		n;

	InitMaterializedSRF(fcinfo, 0);
	/* One inbox is asked for as every function asks: the right first, then what it is. */
	if (!PG_ARGISNULL(0) &&
		pg_class_aclcheck(PG_GETARG_OID(0), GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(PG_GETARG_OID(0)));
	values[0] = PG_ARGISNULL(0) ? (Datum) 0 : PG_GETARG_DATUM(0);
	nulls[0] = PG_ARGISNULL(0) ? 'n' : ' ';
	spi_connect();
	if (SPI_execute_with_args(psprintf("SELECT relid FROM %s.registry "
									   "WHERE $1 IS NULL OR relid OPERATOR(pg_catalog.=) $1",
									   quote_identifier(get_namespace_name(registry_extension_namespace(fcinfo)))),
							  1, argtypes, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the registry");
	n = SPI_processed;
	if (!PG_ARGISNULL(0) && n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an inbox", get_rel_name(PG_GETARG_OID(0))),
				 errhint("Create one with inbox.create_inbox().")));
	/* Without Citus nothing is a Citus table. */
	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		n = 0;
	inboxes = palloc(sizeof(Oid) * (n + 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		inboxes[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
													1, &isnull));
	}

	for (uint64 i = 0; i < n; i++)
		companion_read(rsinfo, inboxes[i], which);
	SPI_finish();
}

/*
 * The rows of the Citus inboxes' failures tables that inbox.quarantine,
 * inbox.audit and inbox.stats add to those of the extension's tables, in their
 * columns: citus_failures, citus_blocked and citus_audit_log (inbox regclass
 * DEFAULT NULL, for every inbox).
 */
PG_FUNCTION_INFO_V1(inbox_citus_failures);
Datum
inbox_citus_failures(PG_FUNCTION_ARGS)
{
	companion_rows(fcinfo, COMPANION_FAILURES);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(inbox_citus_blocked);
Datum
inbox_citus_blocked(PG_FUNCTION_ARGS)
{
	companion_rows(fcinfo, COMPANION_BLOCKED);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(inbox_citus_audit_log);
Datum
inbox_citus_audit_log(PG_FUNCTION_ARGS)
{
	companion_rows(fcinfo, COMPANION_AUDIT);
	return (Datum) 0;
}

/*
 * The inbox's failures tables, quoted, schema-qualified and comma-separated
 * after a comma (", a, b, c, d"), to drop with it; "" if it has none.
 */
char *
citus_failures_drop_list(const InboxInfo *inbox)
{
	CompanionTables tables;

	if (!inbox->distributed || inbox->shard_attnum == InvalidAttrNumber ||
		!citus_failures_lookup(inbox, &tables))
		return "";
	return psprintf(", %s, %s, %s, %s", tables.failures, tables.blocked, tables.audit,
					tables.keys);
}
