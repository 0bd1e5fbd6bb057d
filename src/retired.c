/*
 * retired.c
 *		Plans and memory that a per-backend cache replaced, kept until the
 *		transaction ends.
 *
 * Our caches (inboxes, stream positions) are reloaded when an invalidation
 * arrives, and an invalidation can arrive in the middle of a call: a trigger
 * fired by our own statement may GRANT on the table, or alter something, and
 * call back into the extension, which reloads the entry while the outer call is
 * still running the old plan.  Freeing the old plan then would pull it from
 * under the executor.  So a cache never frees what it replaces: it retires it
 * here, and everything retired is freed at the end of the top-level transaction,
 * when no call of ours can be running.  The cost is memory held for the rest of
 * a transaction that invalidates a cache over and over, which is the price of
 * never freeing something in use.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"

#include "inbox.h"
#include "retired.h"

static List *RetiredPlans = NIL;
static List *RetiredContexts = NIL;

static void
free_retired(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	foreach(lc, RetiredPlans)
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	foreach(lc, RetiredContexts)
		MemoryContextDelete((MemoryContext) lfirst(lc));
	list_free(RetiredPlans);
	list_free(RetiredContexts);
	RetiredPlans = NIL;
	RetiredContexts = NIL;
}

void
retired_init(void)
{
	RegisterXactCallback(free_retired, NULL);
}

/* Free plan at the end of the transaction; NULL is ignored. */
void
retired_add_plan(SPIPlanPtr plan)
{
	MemoryContext old;

	if (plan == NULL)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	RetiredPlans = lappend(RetiredPlans, plan);
	MemoryContextSwitchTo(old);
}

/* Delete cxt at the end of the transaction; NULL is ignored. */
void
retired_add_context(MemoryContext cxt)
{
	MemoryContext old;

	if (cxt == NULL)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	RetiredContexts = lappend(RetiredContexts, cxt);
	MemoryContextSwitchTo(old);
}
