/*
 * claim_direct.c
 *		The claim INSERT without the executor, for inboxes that are exactly what
 *		create_inbox made.
 *
 * A claim is INSERT ... ON CONFLICT (message_id) DO NOTHING.  Run through SPI,
 * most of its cost is the executor around it (snapshot, plan start and end), paid
 * once per message; for a row trigger that is once per loaded row.  This file does
 * what the executor does for that one statement, directly: look for the id with
 * a dirty snapshot, waiting for a transaction that is inserting it; then insert
 * the row speculatively, insert its index entries with the primary key as the
 * arbiter, and if another transaction inserted the same id in between, kill our
 * row and look again.  That is PostgreSQL's own speculative insertion protocol,
 * so the answers, the waits and the locks are those of the SQL statement.
 *
 * The look first is what keeps a duplicate from writing anything, and it costs a
 * fresh id a second descent of the index, a fifth of a claim.  When the caller
 * says duplicates are rare (probe_first false: claim.c decides from the recent
 * share), the insert goes first: the speculative insertion finds a conflict on
 * its own, and a duplicate then leaves one killed row behind, which is the price
 * of skipping the look for every fresh id.  Only where the primary key is the
 * inbox's one unique or exclusion index: the statement looks in its arbiter
 * before it inserts, so a committed duplicate never reaches another such index,
 * which would raise where the claim must answer "duplicate".
 *
 * Only when nothing else could happen in the SQL statement: the checklist at the
 * head of direct_access.c, asked when the inbox is loaded (inbox_shape_direct_ok)
 * and on every call (direct_access_allowed).  Anything else takes the SQL path,
 * which raises the errors the user should see.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "compat.h"
#include "inbox_info.h"
#include "claim_direct.h"
#include "claim_row.h"
#include "direct_access.h"
#include "held_inbox.h"

/*
 * Write the claim row.  CLAIM_DIRECT_CLAIMED when it went in;
 * CLAIM_DIRECT_DUPLICATE when a concurrent insertion of the id won and the caller
 * must look again; CLAIM_DIRECT_UNAVAILABLE when the row fails a CHECK constraint
 * of the inbox, whose error the SQL path raises (see direct_access.c).  With held,
 * the inbox stays open for the caller's next row (held_inbox.c).
 */
static ClaimDirectResult
insert_speculatively(InboxInfo *inbox, Datum message_id, HeldInbox *held)
{
	DirectInsert one;
	DirectInsert *di;
	TupleTableSlot *slot;
	ClaimDirectResult result = CLAIM_DIRECT_UNAVAILABLE;

	if (held != NULL)
		di = held_inbox_open(held, inbox->relid);
	else
	{
		di = &one;
		direct_insert_begin(di, table_open(inbox->relid, NoLock));	/* locked by the lookup */
	}

	slot = di->slot;
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	slot->tts_values[inbox->key_attnum - 1] = message_id;
	slot->tts_isnull[inbox->key_attnum - 1] = false;
	slot->tts_values[inbox->columns[COL_CLAIMED_AT] - 1] =
		TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	slot->tts_isnull[inbox->columns[COL_CLAIMED_AT] - 1] = false;
	ExecStoreVirtualTuple(slot);

	if (direct_access_checks_pass(di->rel, slot))
		result = direct_insert_speculative(di, inbox->pkindex) ?
			CLAIM_DIRECT_CLAIMED : CLAIM_DIRECT_DUPLICATE;

	if (held == NULL)
	{
		direct_insert_end(di);
		table_close(di->rel, NoLock);
	}
	else
		held_inbox_release(held);
	return result;
}

/*
 * Claim one id without the executor.  Returns CLAIM_DIRECT_UNAVAILABLE when this
 * call must take the SQL path; otherwise whether the claim was written.  Unless
 * probe_first, the insert is tried before the look (see the head of this file).
 * held, when not NULL, keeps the inbox open across the caller's calls.
 */
ClaimDirectResult
claim_direct(InboxInfo *inbox, Datum message_id, bool probe_first, HeldInbox *held)
{
	int			retries = 0;
	ClaimDirectResult inserted;

	if (!inbox->direct_shape || !direct_access_allowed(inbox->relid))
		return CLAIM_DIRECT_UNAVAILABLE;
	/* Another unique or exclusion index would raise where the look finds a duplicate. */
	if (!inbox->insert_first_safe)
		probe_first = true;

	if (!probe_first)
	{
		inserted = insert_speculatively(inbox, message_id, held);
		if (inserted != CLAIM_DIRECT_DUPLICATE)
			return inserted;
	}

	for (;;)
	{
		ClaimRow	row;

		claim_row_retry(inbox, message_id, &retries);
		claim_row_read_for_claim(inbox, message_id, &row);
		if (row.state == ROW_PRESENT)
		{
			/* Read anyway: claim_quarantined_after_claim asks next. */
			inbox->dup_row_known = true;
			inbox->dup_row_quarantined = claim_row_quarantined(&row);
			return CLAIM_DIRECT_DUPLICATE;
		}
		if (row.state != ROW_ABSENT)
		{
			claim_row_wait(inbox, &row);
			continue;
		}
		inserted = insert_speculatively(inbox, message_id, held);
		if (inserted != CLAIM_DIRECT_DUPLICATE)
			return inserted;
	}
}
