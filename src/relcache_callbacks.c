/*
 * relcache_callbacks.c
 *		One relcache invalidation callback for all of the library's caches.
 *
 * A backend has room for only ten relcache callbacks (MAX_RELCACHE_CALLBACKS),
 * shared by the core and every library it loads, and running out is FATAL.
 * PostgreSQL's own code takes some (more in a logical replication worker), and
 * Citus takes five: with one slot per cache of ours, a dedup_trigger on a Citus
 * worker ended the session.  So each cache registers here, and the library takes
 * a single slot, when the first one does.
 */
#include "postgres.h"

#include "relcache_callbacks.h"

/* Our caches: registry, shapes, row converters, held inboxes, stream positions, outboxes. */
#define MAX_INBOX_RELCACHE_CALLBACKS 8

static RelcacheCallbackFunction callbacks[MAX_INBOX_RELCACHE_CALLBACKS];
static int	ncallbacks = 0;

static void
relcache_callbacks_dispatch(Datum arg, Oid relid)
{
	for (int i = 0; i < ncallbacks; i++)
		callbacks[i] (arg, relid);
}

void
relcache_callback_register(RelcacheCallbackFunction func)
{
	if (ncallbacks >= MAX_INBOX_RELCACHE_CALLBACKS)
		elog(ERROR, "idempotent_inbox registered more than %d relcache callbacks",
			 MAX_INBOX_RELCACHE_CALLBACKS);
	if (ncallbacks == 0)
		CacheRegisterRelcacheCallback(relcache_callbacks_dispatch, (Datum) 0);
	callbacks[ncallbacks++] = func;
}
