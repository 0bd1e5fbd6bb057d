/*
 * row_fetch.c
 *		Read the row a unique key names straight from the index, without the
 *		executor, for upsert and transition to decide whether they need to write.
 *
 * This is what makes a replay cheap: the answer "already like this" comes from one
 * index lookup, with no statement to start, no row lock and no WAL.  It reads with
 * a fresh snapshot after a command counter increment, as a statement run through
 * SPI would, so it sees what this transaction wrote a moment ago; index scans with
 * an MVCC snapshot take the same SSI predicate locks as a SELECT.
 *
 * Reading past the executor skips what it would have done, so the direct read is
 * gated on this list, every item of which sends the caller to the SQL path instead
 * (row_fetch_allowed), and row_fetch re-checks the items it relies on:
 *	rights		SELECT on the whole table (column privileges: the SQL path)
 *	row security	no policy applies to the caller (check_enable_rls)
 *	relation kind	a plain table with storage: a partitioned table's rows live in
 *			its partitions and its indexes have none; the executor routes
 *	temporary	only this session's (shape_open refuses other sessions')
 *	index		a valid btree unique index of this very table (shape_unique_key)
 *	inheritance	the index holds the table's own rows only, as ON CONFLICT and
 *			the generated statements (FROM ONLY) see them
 * Writes never take this path: they are always statements.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "inbox.h"
#include "row_fetch.h"

bool
row_fetch_allowed(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);

	return rel->rd_rel->relkind == RELKIND_RELATION &&
		!RELATION_IS_OTHER_TEMP(rel) &&
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
}

/* The items of the list above that row_fetch itself depends on to be safe. */
static void
CheckDirectRead(Relation rel, Relation index)
{
	if (rel->rd_rel->relkind != RELKIND_RELATION || RELATION_IS_OTHER_TEMP(rel) ||
		index->rd_rel->relkind != RELKIND_INDEX || index->rd_rel->relam != BTREE_AM_OID ||
		index->rd_index->indrelid != RelationGetRelid(rel) || !index->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" cannot be read through index \"%s\"",
						RelationGetRelationName(rel), RelationGetRelationName(index)),
				 errdetail("Only a plain table's valid btree unique index is read directly.")));
}

/*
 * Fetch the row whose key columns (those of keyindex) equal row[attnum - 1].
 * Fills stored/storednulls (indexed by attnum - 1) and returns true when found.
 * A NULL key value names no row, as "k = NULL" would not.
 */
bool
row_fetch(Relation rel, Oid keyindex, const Datum *row, const bool *rownulls,
		  Datum *stored, bool *storednulls)
{
	Relation	index = try_relation_open(keyindex, AccessShareLock);
	int			nkeys;
	ScanKeyData keys[INDEX_MAX_KEYS];
	Snapshot	snapshot;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		found = false;

	/* Dropped meanwhile by a trigger of this very call: its statements tell why. */
	if (index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the key of \"%s\" was dropped during the call", RelationGetRelationName(rel))));
	CheckDirectRead(rel, index);
	nkeys = index->rd_index->indnkeyatts;
	for (int i = 0; i < nkeys; i++)
	{
		AttrNumber	attnum = index->rd_index->indkey.values[i];
		Oid			type = index->rd_opcintype[i];
		Oid			eq = get_opfamily_member(index->rd_opfamily[i], type, type,
											 BTEqualStrategyNumber);

		if (rownulls[attnum - 1])
		{
			index_close(index, AccessShareLock);
			return false;
		}
		ScanKeyInit(&keys[i], i + 1, BTEqualStrategyNumber, get_opcode(eq), row[attnum - 1]);
		keys[i].sk_collation = index->rd_indcollation[i];
	}

	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	scan = index_beginscan(rel, index, snapshot, nkeys, 0);
	index_rescan(scan, keys, nkeys, NULL, 0);
	slot = table_slot_create(rel, NULL);
	if (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		int			natts = RelationGetDescr(rel)->natts;

		slot_getallattrs(slot);
		for (int i = 0; i < natts; i++)
		{
			storednulls[i] = slot->tts_isnull[i];
			stored[i] = storednulls[i] ? (Datum) 0 :
				datumCopy(slot->tts_values[i], TupleDescAttr(RelationGetDescr(rel), i)->attbyval,
						  TupleDescAttr(RelationGetDescr(rel), i)->attlen);
		}
		found = true;
	}
	ExecDropSingleTupleTableSlot(slot);
	index_endscan(scan);
	UnregisterSnapshot(snapshot);
	index_close(index, AccessShareLock);

	return found;
}
