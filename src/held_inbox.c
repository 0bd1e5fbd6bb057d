/*
 * held_inbox.c
 *		An inbox kept open for direct claims across the rows of one statement.
 *
 * dedup_trigger claims once per loaded row.  Opening the inbox, its indexes and
 * executor state for each claim and closing them again costs about a quarter of
 * what the trigger adds to a row of a COPY, so the trigger keeps them open for
 * the rest of its statement (direct_insert_begin).  What is held must be let go
 * exactly once, by whoever may still do it:
 *
 *	statement ends		the trigger's memory context (the statement's) is
 *						deleted; a reset callback closes what is open
 *	(sub)transaction	the resource owner releases the relations and the lock
 *	aborts				manager the index locks by themselves; an abort callback,
 *						which runs first, only marks what was opened in the
 *						aborting (sub)transaction as gone, so that nothing closes
 *						it a second time
 *	(sub)transaction	should anything still be open, it is closed before the
 *	commits				resource owner would report it as leaked
 *
 * The executor state lives in the (sub)transaction's memory context, not the
 * statement's: a memory context's children are deleted before its reset
 * callbacks run, and the callback needs that state to close the indexes.  After
 * an abort the context goes with the (sub)transaction.  The references to the
 * inbox and its indexes are the (sub)transaction's resource owner's, not the
 * statement's: a COPY's trigger keeps its memory in the portal's context, which
 * is deleted only after the portal's resource owner has been released.
 *
 * Rows go on being checked one by one: the registry lookup, rights and
 * direct_access_allowed per row, as for any claim.  What held state could miss,
 * a change to the inbox's indexes or its removal, needs a command that refuses
 * to run on a table this session has open (CheckTableNotInUse), as for the
 * table the statement itself writes.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "lib/ilist.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "inbox.h"
#include "direct_access.h"
#include "held_inbox.h"

struct HeldInbox
{
	Oid			relid;			/* the inbox held open, or InvalidOid */
	DirectInsert di;
	SubTransactionId subxid;	/* the (sub)transaction that opened it */
	ResourceOwner owner;		/* and the resource owner its references are in */
	dlist_node node;			/* in OpenInboxes while open */
	MemoryContextCallback on_reset;
};

/* Every held inbox that is open, for the transaction callbacks. */
static dlist_head OpenInboxes = DLIST_STATIC_INIT(OpenInboxes);
static bool CallbacksRegistered = false;

/* Close it, in the resource owner that holds its references. */
static void
held_close(HeldInbox *held)
{
	ResourceOwner saved = CurrentResourceOwner;

	dlist_delete(&held->node);
	held->relid = InvalidOid;
	CurrentResourceOwner = held->owner;
	PG_TRY();
	{
		direct_insert_end(&held->di);
		table_close(held->di.rel, NoLock);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = saved;
	}
	PG_END_TRY();
}

/* Forget it: its references and locks are being released by an abort. */
static void
held_forget(HeldInbox *held)
{
	dlist_delete(&held->node);
	held->relid = InvalidOid;
}

/*
 * Every open one of (sub)transaction subxid, or of any when it is
 * InvalidSubTransactionId: closed (commit) or forgotten (abort).
 */
static void
held_end(SubTransactionId subxid, bool commit)
{
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &OpenInboxes)
	{
		HeldInbox  *held = dlist_container(HeldInbox, node, iter.cur);

		if (subxid != InvalidSubTransactionId && held->subxid != subxid)
			continue;
		if (commit)
			held_close(held);
		else
			held_forget(held);
	}
}

static void
held_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT ||
		event == XACT_EVENT_PRE_PREPARE)
		held_end(InvalidSubTransactionId, true);
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		held_end(InvalidSubTransactionId, false);
}

static void
held_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
		held_end(mySubid, true);
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		held_end(mySubid, false);
}

/*
 * The statement is over (its memory goes): close what is open.  During an
 * abort, what is still open here is being released by the resource owner.
 */
static void
held_reset(void *arg)
{
	HeldInbox  *held = (HeldInbox *) arg;

	if (!OidIsValid(held->relid))
		return;
	if (IsTransactionState())
		held_close(held);
	else
		held_forget(held);
}

/* A held inbox that lives, and is let go, with memory context cxt. */
HeldInbox *
held_inbox_create(MemoryContext cxt)
{
	HeldInbox  *held = MemoryContextAllocZero(cxt, sizeof(HeldInbox));

	if (!CallbacksRegistered)
	{
		RegisterXactCallback(held_xact_callback, NULL);
		RegisterSubXactCallback(held_subxact_callback, NULL);
		CallbacksRegistered = true;
	}
	held->on_reset.func = held_reset;
	held->on_reset.arg = held;
	MemoryContextRegisterResetCallback(cxt, &held->on_reset);
	return held;
}

/*
 * The insertion state for inbox relid, opened now unless it is already open.
 * The caller has locked the inbox and found it fit for direct claims.
 */
DirectInsert *
held_inbox_open(HeldInbox *held, Oid relid)
{
	MemoryContext old;
	ResourceOwner saved;

	if (held->relid == relid)
		return &held->di;
	if (OidIsValid(held->relid))
		held_close(held);

	saved = CurrentResourceOwner;
	CurrentResourceOwner = CurTransactionResourceOwner;
	old = MemoryContextSwitchTo(CurTransactionContext);
	PG_TRY();
	{
		direct_insert_begin(&held->di, table_open(relid, NoLock));
	}
	PG_FINALLY();
	{
		MemoryContextSwitchTo(old);
		CurrentResourceOwner = saved;
	}
	PG_END_TRY();
	held->relid = relid;
	held->subxid = GetCurrentSubTransactionId();
	held->owner = CurTransactionResourceOwner;
	dlist_push_head(&OpenInboxes, &held->node);
	return &held->di;
}
