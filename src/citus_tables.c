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
	Oid			argtypes[2] = {OIDOID, isnull ? TEXTOID : type};
	Datum		values[2] = {ObjectIdGetDatum(relid), value};
	char		nulls[2] = {' ', isnull ? 'n' : ' '};
	Oid			shard = InvalidOid;

	spi_connect();
	if (SPI_execute_with_args("SELECT pg_catalog.to_regclass(pg_catalog.shard_name($1, s.shardid, false)) "
							  "FROM (SELECT pg_catalog.get_shard_id_for_distribution_column($1, $2) "
							  "AS shardid) AS s "
							  "WHERE EXISTS (SELECT FROM pg_catalog.pg_dist_placement AS p "
							  "WHERE p.shardid OPERATOR(pg_catalog.=) s.shardid "
							  "AND p.groupid OPERATOR(pg_catalog.=) "
							  "(SELECT groupid FROM pg_catalog.pg_dist_local_group))",
							  2, argtypes, values, nulls, true, 1) != SPI_OK_SELECT)
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
