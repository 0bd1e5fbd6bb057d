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
 * A SELECT would also check privileges and apply row-level security.  So the fast
 * path is taken only when the caller may read the whole table and no policy
 * applies; otherwise callers fall back to an SQL statement, which does both.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "inbox.h"

bool
row_fetch_allowed(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);

	return pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED;
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
	Relation	index = index_open(keyindex, AccessShareLock);
	int			nkeys = index->rd_index->indnkeyatts;
	ScanKeyData keys[INDEX_MAX_KEYS];
	Snapshot	snapshot;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		found = false;

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
