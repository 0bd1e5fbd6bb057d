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
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "citus_tables.h"

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
