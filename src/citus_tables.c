/*
 * citus_tables.c
 *		Whether a relation is a Citus table, whose rows live in its shards.
 *
 * On a Citus coordinator, and on the workers, which hold the same metadata, a
 * distributed or reference table is a shell: its own storage stays empty, and
 * Citus's planner sends every statement on it to the shards.  A path that skips
 * the executor would write rows into the shell, where nobody ever reads them,
 * and would read nothing from it.  So the direct paths ask here, explicitly,
 * rather than rely on the trigger Citus happens to put on its tables today.
 *
 * Citus lists its tables in pg_catalog.pg_dist_partition.  Where that table does
 * not exist, Citus is not installed in this database and nothing is a Citus
 * table: the common case costs one name lookup in the system cache.  Where it
 * exists, it is read through its index, as Citus reads it, without Citus's
 * headers; a catalog that does not look as expected counts every table as a
 * Citus table, which only costs the SQL path.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "citus_tables.h"
#include "spi_util.h"

bool
citus_table(Oid relid)
{
	Oid			catalog = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	Oid			index;
	Relation	rel;
	TupleDesc	desc;
	AttrNumber	logicalrelid = InvalidAttrNumber;
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	if (!OidIsValid(catalog))
		return false;

	rel = table_open(catalog, AccessShareLock);
	desc = RelationGetDescr(rel);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), "logicalrelid") == 0 &&
			(att->atttypid == REGCLASSOID || att->atttypid == OIDOID))
			logicalrelid = att->attnum;
	}
	if (logicalrelid == InvalidAttrNumber)
	{
		table_close(rel, AccessShareLock);
		return true;
	}

	index = get_relname_relid("pg_dist_partition_logical_relid_index", PG_CATALOG_NAMESPACE);
	ScanKeyInit(&key, logicalrelid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, index, OidIsValid(index), NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Citus refuses CREATE TRIGGER on its tables unless citus.enable_unsafe_triggers
 * is on: a trigger on a shard runs on its worker, where one that reads other
 * tables sees that node alone.  A trigger that reads its own row only (the state
 * machine's) is safe there, so its DDL runs with the setting on for that DDL
 * alone, as a function's SET clause would have it; citus_triggers_end puts the
 * caller's value back.  0 when the table is not a Citus table.
 */
int
citus_triggers_begin(Oid relid)
{
	int			level;

	if (!citus_table(relid))
		return 0;
	level = NewGUCNestLevel();
	(void) set_config_option("citus.enable_unsafe_triggers", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
citus_triggers_end(int level)
{
	if (level > 0)
		AtEOXact_GUC(true, level);
}

/*
 * The name of Citus table relid's distribution column, or NULL for a table
 * without one (a reference table).  Through SQL, as Citus keeps it as a node.
 */
char *
citus_distribution_column(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *column = NULL;

	spi_connect();
	if (SPI_execute_with_args("SELECT pg_catalog.column_to_column_name(logicalrelid, partkey) "
							  "FROM pg_catalog.pg_dist_partition "
							  "WHERE logicalrelid OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the distribution column of relation %u", relid);
	if (SPI_processed == 1)
	{
		char	   *name = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

		if (name != NULL)
		{
			column = SPI_palloc(strlen(name) + 1);
			strcpy(column, name);
		}
	}
	SPI_finish();
	return column;
}

/*
 * The statement of citus_local_shard for values of one type, planned once per
 * backend: parsing and planning it cost more than running it, once a claim.
 * (The plan cache replans it when Citus's catalogs change.)
 */
static SPIPlanPtr
local_shard_plan(Oid type)
{
	static struct
	{
		Oid			type;
		SPIPlanPtr	plan;
	}			plans[8];
	static int	nplans = 0;
	Oid			argtypes[2] = {OIDOID, type};
	SPIPlanPtr	plan;

	for (int i = 0; i < nplans; i++)
		if (plans[i].type == type)
			return plans[i].plan;
	plan = SPI_prepare("SELECT pg_catalog.to_regclass(pg_catalog.shard_name($1, s.shardid, false)) "
					   "FROM (SELECT pg_catalog.get_shard_id_for_distribution_column($1, $2) "
					   "AS shardid) AS s "
					   "WHERE EXISTS (SELECT FROM pg_catalog.pg_dist_placement AS p "
					   "WHERE p.shardid OPERATOR(pg_catalog.=) s.shardid "
					   "AND p.groupid OPERATOR(pg_catalog.=) "
					   "(SELECT groupid FROM pg_catalog.pg_dist_local_group))",
					   2, argtypes);
	if (plan == NULL)
		elog(ERROR, "could not plan the shard lookup: %s", SPI_result_code_string(SPI_result));
	/* Shard keys are of few types (one per inbox); past that, planned each time. */
	if (nplans == lengthof(plans))
		return plan;
	SPI_keepplan(plan);
	plans[nplans].type = type;
	plans[nplans].plan = plan;
	return plans[nplans++].plan;
}

/*
 * The shard of Citus table relid that holds distribution column value (of
 * type, NULL for a reference table), when this node holds a placement of it:
 * inside a function Citus delegated to the worker holding the row.  InvalidOid
 * where it does not (the coordinator, or another worker), or where the shard has
 * been dropped here (a placement being moved away keeps its metadata until the
 * move ends, and Citus's own statements still go to it then).
 */
Oid
citus_local_shard(Oid relid, Datum value, Oid type, bool isnull)
{
	Datum		values[2] = {ObjectIdGetDatum(relid), value};
	char		nulls[2] = {' ', isnull ? 'n' : ' '};
	Oid			shard = InvalidOid;

	spi_connect();
	if (SPI_execute_plan(local_shard_plan(isnull ? TEXTOID : type), values, nulls, true, 1) !=
		SPI_OK_SELECT)
		elog(ERROR, "could not look up the shard of relation %u", relid);
	if (SPI_processed == 1)
	{
		bool		shard_null;
		Datum		found = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										  &shard_null);

		if (!shard_null)
			shard = DatumGetObjectId(found);
	}
	SPI_finish();
	return shard;
}

/*
 * Is this node a Citus coordinator (its group is 0), where the workers' share of
 * a Citus table's counters is to be added?  False without Citus.
 */
bool
citus_coordinator(void)
{
	bool		coordinator = false;

	if (!OidIsValid(get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE)))
		return false;
	spi_connect();
	if (SPI_execute("SELECT groupid OPERATOR(pg_catalog.=) 0 FROM pg_catalog.pg_dist_local_group",
					true, 1) == SPI_OK_SELECT && SPI_processed == 1)
	{
		bool		isnull;
		Datum		value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		coordinator = !isnull && DatumGetBool(value);
	}
	SPI_finish();
	return coordinator;
}

/*
 * Add to counts[0..n-1] what each worker counted for Citus table relid (calls
 * delegated there count on the worker that ran them): the workers' own
 * inbox.live_counters, read through run_command_on_workers, as the caller.  A
 * worker that does not answer, or counts nothing (not preloaded), adds nothing.
 */
void
citus_add_worker_counters(Oid relid, int64 *counts, int n)
{
	char	   *name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												  get_rel_name(relid));
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1];

	values[0] = CStringGetTextDatum(psprintf("SELECT (c.*)::text FROM inbox.live_counters(%s::pg_catalog.regclass) AS c",
											 quote_literal_cstr(name)));
	spi_connect();
	/* Never an error for stats: without the function, or the right to call it, none. */
	if (SPI_execute("SELECT FROM pg_catalog.to_regprocedure('pg_catalog.run_command_on_workers(text,boolean)') AS f "
					"WHERE pg_catalog.has_function_privilege(f, 'EXECUTE')", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
	{
		SPI_finish();
		return;
	}
	if (SPI_execute_with_args("SELECT result FROM pg_catalog.run_command_on_workers($1) WHERE success",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the workers' counters of relation %u", relid);
	for (uint64 row = 0; row < SPI_processed; row++)
	{
		char	   *text = SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1);
		char	   *field;
		char	   *next;
		int			i = 0;

		/* A row's text form, "(1,2,...)"; a NULL field is empty. */
		if (text == NULL || text[0] != '(')
			continue;
		for (field = text + 1; i < n && field != NULL; field = next, i++)
		{
			next = strpbrk(field, ",)");
			if (next != NULL)
				*next++ = '\0';
			if (*field != '\0')
				counts[i] += strtoi64(field, NULL, 10);
		}
	}
	SPI_finish();
}
