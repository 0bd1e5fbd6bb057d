/*
 * held_inbox.c
 *		The state of direct claims into one inbox, kept across the rows of one
 *		statement.
 *
 * dedup_trigger claims once per loaded row.  Building the executor state, the
 * inbox's index information and a slot for each claim and freeing them again
 * costs about a quarter of what the trigger adds to a row of a COPY, so the
 * trigger keeps them for the rest of its statement.  It does not keep the inbox
 * and its indexes open between rows: a relation this session has open refuses
 * TRUNCATE, ALTER TABLE, CREATE INDEX and the like, which the statement's own
 * AFTER triggers may run once its rows are in.  Each row takes the references
 * again and lets them go when its claim is done (held_inbox_release).
 *
 * What was built from the inbox is good for as long as neither the inbox nor
 * any of its indexes changes: a relcache invalidation of any of them marks the
 * state stale, and the next row builds it again.  What is kept must be freed
 * exactly once, by whoever may still do it:
 *
 *	statement ends		the trigger's memory context (the statement's) is
 *						deleted; a reset callback frees the state
 *	(sub)transaction	the state lives in the (sub)transaction's memory, which
 *	aborts				goes with it (and the resource owner lets go of the
 *						references of a row cut short); an abort callback only
 *						forgets it, so that nothing frees it a second time
 *	(sub)transaction	should anything still be kept, it is freed
 *	commits
 *
 * The state lives in the (sub)transaction's memory context, not the
 * statement's: a memory context's children are deleted before its reset
 * callbacks run, and a COPY's trigger keeps its memory in the portal's context,
 * which may outlive the (sub)transaction that built the state.
 *
 * Rows go on being checked one by one: the registry lookup, rights and
 * direct_access_allowed per row, as for any claim.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "lib/ilist.h"
#include "nodes/execnodes.h"
#include "utils/memutils.h"

#include "inbox.h"
#include "direct_access.h"
#include "held_inbox.h"
#include "relcache_callbacks.h"

struct HeldInbox
{
	Oid			relid;			/* the inbox whose state is kept, or InvalidOid */
	bool		stale;			/* the inbox or an index of it changed since */
	bool		attached;		/* the current row holds the inbox open */
	DirectInsert di;
	SubTransactionId subxid;	/* the (sub)transaction that built the state */
	dlist_node	node;			/* in KeptInboxes while kept */
	MemoryContextCallback on_reset;
};

/* Every held inbox with kept state, for the callbacks. */
static dlist_head KeptInboxes = DLIST_STATIC_INIT(KeptInboxes);
static bool CallbacksRegistered = false;

/* Free the kept state. */
static void
held_free(HeldInbox *held)
{
	dlist_delete(&held->node);
	held->relid = InvalidOid;
	if (held->attached)
		direct_insert_detach(&held->di);
	held->attached = false;
	direct_insert_free(&held->di);
}

/* Forget it: an abort is freeing its memory and letting go of its references. */
static void
held_forget(HeldInbox *held)
{
	dlist_delete(&held->node);
	held->relid = InvalidOid;
	held->attached = false;
}

/*
 * Every kept one of (sub)transaction subxid, or of any when it is
 * InvalidSubTransactionId: freed (commit) or forgotten (abort).
 */
static void
held_end(SubTransactionId subxid, bool commit)
{
	dlist_mutable_iter iter;

	dlist_foreach_modify(iter, &KeptInboxes)
	{
		HeldInbox  *held = dlist_container(HeldInbox, node, iter.cur);

		if (subxid != InvalidSubTransactionId && held->subxid != subxid)
			continue;
		if (commit)
			held_free(held);
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

/* The inbox or one of its indexes changed (relid invalid: anything may have). */
static void
held_invalidate(Datum arg, Oid relid)
{
	dlist_iter	iter;

	dlist_foreach(iter, &KeptInboxes)
	{
		HeldInbox  *held = dlist_container(HeldInbox, node, iter.cur);

		if (!OidIsValid(relid) || relid == held->relid)
			held->stale = true;
		for (int i = 0; !held->stale && i < held->di.rri->ri_NumIndices; i++)
			if (held->di.indexids[i] == relid)
				held->stale = true;
	}
}

/*
 * The statement is over (its memory goes): free what is kept.  During an
 * abort, the abort frees it.
 */
static void
held_reset(void *arg)
{
	HeldInbox  *held = (HeldInbox *) arg;

	if (!OidIsValid(held->relid))
		return;
	if (IsTransactionState())
		held_free(held);
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
		relcache_callback_register(held_invalidate);
		CallbacksRegistered = true;
	}
	held->on_reset.func = held_reset;
	held->on_reset.arg = held;
	MemoryContextRegisterResetCallback(cxt, &held->on_reset);
	return held;
}

/*
 * The insertion state for inbox relid, for one row: built now unless what is
 * kept is of this inbox and still good, and holding the inbox open until
 * held_inbox_release.  The caller has locked the inbox and found it fit for
 * direct claims.
 */
DirectInsert *
held_inbox_open(HeldInbox *held, Oid relid)
{
	MemoryContext old;

	Assert(!held->attached);
	if (OidIsValid(held->relid) && (held->relid != relid || held->stale))
		held_free(held);
	if (OidIsValid(held->relid))
	{
		direct_insert_attach(&held->di, relid);
		held->attached = true;
		return &held->di;
	}

	old = MemoryContextSwitchTo(CurTransactionContext);
	direct_insert_begin_kept(&held->di, table_open(relid, NoLock));
	MemoryContextSwitchTo(old);
	held->relid = relid;
	held->stale = false;
	held->attached = true;
	held->subxid = GetCurrentSubTransactionId();
	dlist_push_head(&KeptInboxes, &held->node);
	return &held->di;
}

/* The row's claim is done: let go of the inbox until the next row. */
void
held_inbox_release(HeldInbox *held)
{
	if (!held->attached)
		return;
	direct_insert_detach(&held->di);
	held->attached = false;
}
