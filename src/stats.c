/*
 * stats.c
 *		Live counters per inbox in shared memory, behind the inbox.stats view.
 *
 * Counting must cost a claim next to nothing, so each counter is an atomic add on
 * an entry found once per cache load of the inbox (InboxInfo.counters), with no
 * lock.  Entries are created under an LWLock the first time a backend loads an
 * inbox.  Counters start at zero with the server: they describe traffic since
 * then, like pg_stat_activity, not history.  Without shared_preload_libraries
 * there is no shared memory for them and the view shows NULL.
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "compat.h"
#include "inbox.h"

typedef struct StatsKey
{
	Oid			dbid;
	Oid			relid;
} StatsKey;

struct InboxCounters
{
	StatsKey	key;			/* hash key */
	pg_atomic_uint64 counts[COUNT_NUM_COUNTERS];
};

static int	stats_max_inboxes = 1024;
static HTAB *StatsHash = NULL;
static LWLock *StatsLock = NULL;

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
#ifdef COMPAT_HAS_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif

static Size
stats_shmem_size(void)
{
	return hash_estimate_size(stats_max_inboxes, sizeof(InboxCounters));
}

static void
stats_shmem_request(void)
{
#ifdef COMPAT_HAS_SHMEM_REQUEST_HOOK
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(stats_shmem_size());
	RequestNamedLWLockTranche("idempotent_inbox", 1);
}

static void
stats_shmem_startup(void)
{
	HASHCTL		ctl;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	ctl.keysize = sizeof(StatsKey);
	ctl.entrysize = sizeof(InboxCounters);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	StatsHash = ShmemInitHash("idempotent_inbox counters", stats_max_inboxes,
							  stats_max_inboxes, &ctl, HASH_ELEM | HASH_BLOBS);
	StatsLock = &(GetNamedLWLockTranche("idempotent_inbox"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init: shared memory exists only when we are preloaded. */
void
stats_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("idempotent_inbox.max_inboxes",
							"Inboxes, across all databases, whose counters inbox.stats keeps.",
							"Inboxes beyond this many are not counted; their counters show NULL.",
							&stats_max_inboxes, 1024, 16, 1000000,
							PGC_POSTMASTER, 0, NULL, NULL, NULL);

#ifdef COMPAT_HAS_SHMEM_REQUEST_HOOK
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
#else
	stats_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;
}

static InboxCounters *
stats_find(Oid relid, bool create)
{
	StatsKey	key = {MyDatabaseId, relid};
	InboxCounters *entry;
	bool		found;

	if (StatsHash == NULL)
		return NULL;

	LWLockAcquire(StatsLock, LW_SHARED);
	entry = hash_search(StatsHash, &key, HASH_FIND, NULL);
	LWLockRelease(StatsLock);
	if (entry != NULL || !create)
		return entry;

	LWLockAcquire(StatsLock, LW_EXCLUSIVE);
	entry = hash_search(StatsHash, &key, HASH_ENTER_NULL, &found);
	if (entry != NULL && !found)
		for (int i = 0; i < COUNT_NUM_COUNTERS; i++)
			pg_atomic_init_u64(&entry->counts[i], 0);
	LWLockRelease(StatsLock);
	return entry;
}

/* The counters of one inbox of this database; NULL when there are none to keep. */
InboxCounters *
stats_counters_for(Oid relid)
{
	return stats_find(relid, true);
}

void
stats_count(InboxInfo *inbox, InboxCounter counter, int64 n)
{
	if (inbox->counters != NULL && n > 0)
		pg_atomic_fetch_add_u64(&inbox->counters->counts[counter], (uint64) n);
}

/* A new inbox may reuse a dropped one's OID: it starts from zero. */
void
stats_forget(Oid relid)
{
	InboxCounters *entry = stats_find(relid, false);

	if (entry != NULL)
		for (int i = 0; i < COUNT_NUM_COUNTERS; i++)
			pg_atomic_write_u64(&entry->counts[i], 0);
}

/*
 * The counters of one inbox as a row, in InboxCounter order; every column NULL
 * when the library is not preloaded.  An inbox not yet used since the server
 * started has zeros.
 */
PG_FUNCTION_INFO_V1(inbox_live_counters);
Datum
inbox_live_counters(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[COUNT_NUM_COUNTERS];
	bool		nulls[COUNT_NUM_COUNTERS];
	InboxCounters *entry = PG_ARGISNULL(0) ? NULL : stats_find(PG_GETARG_OID(0), false);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "live_counters must return a row");
	tupdesc = BlessTupleDesc(tupdesc);
	if (tupdesc->natts != COUNT_NUM_COUNTERS)
		elog(ERROR, "live_counters returns %d columns, expected %d",
			 tupdesc->natts, COUNT_NUM_COUNTERS);

	for (int i = 0; i < COUNT_NUM_COUNTERS; i++)
	{
		nulls[i] = StatsHash == NULL || PG_ARGISNULL(0);
		values[i] = Int64GetDatum(entry ? (int64) pg_atomic_read_u64(&entry->counts[i]) : 0);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
