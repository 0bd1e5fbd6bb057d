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
 *
 * The hash is fixed-size: idempotent_inbox.max_inboxes entries, all reserved at
 * startup, never more, so that no amount of creating and dropping inboxes takes
 * the shared memory that lock tables need.  Entries are freed when their table is
 * dropped (an object-access hook), and entries of tables or databases that no
 * longer exist are reclaimed when the hash is full (a rolled-back CREATE, a DROP
 * DATABASE).  When every entry belongs to a live inbox, new inboxes are not
 * counted: one WARNING says so, claims go on, and their counters show NULL.
 *
 * A backend's InboxInfo may still point at an entry freed and reused for another
 * inbox (a DROP rolled back, or a table created in a transaction that another
 * backend could not see): each count checks that the entry is still that
 * inbox's, and finds or makes the right one if not.
 */
#include "postgres.h"

#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "compat.h"
#include "inbox_info.h"
#include "citus_tables.h"
#include "stats.h"

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

/* What lives in shared memory besides the hash. */
typedef struct StatsShared
{
	pg_atomic_uint32 full_warned;	/* the "not counted" WARNING was given */
} StatsShared;

static int	stats_max_inboxes = 1024;
static HTAB *StatsHash = NULL;
static LWLock *StatsLock = NULL;
static StatsShared *Stats = NULL;

static object_access_hook_type prev_object_access_hook = NULL;

static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;

static Size
stats_shmem_size(void)
{
	return add_size(hash_estimate_size(stats_max_inboxes, sizeof(InboxCounters)),
					MAXALIGN(sizeof(StatsShared)));
}

static void
stats_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(stats_shmem_size());
	RequestNamedLWLockTranche("idempotent_inbox", 1);
}

static void
stats_shmem_startup(void)
{
	HASHCTL		ctl;
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	ctl.keysize = sizeof(StatsKey);
	ctl.entrysize = sizeof(InboxCounters);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	/* Every entry allocated now; HASH_FIXED_SIZE: never one more. */
	StatsHash = compat_shmem_init_hash("idempotent_inbox counters", stats_max_inboxes, &ctl,
									   HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	Stats = ShmemInitStruct("idempotent_inbox counters state", sizeof(StatsShared), &found);
	if (!found)
		pg_atomic_init_u32(&Stats->full_warned, 0);
	StatsLock = &(GetNamedLWLockTranche("idempotent_inbox"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

static void stats_object_access(ObjectAccessType access, Oid classId, Oid objectId,
								int subId, void *arg);

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

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stats_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stats_shmem_startup;
	prev_object_access_hook = object_access_hook;
	object_access_hook = stats_object_access;
}

/* Free one entry; StatsLock held exclusively.  Its key is cleared for stale holders. */
static void
stats_remove(const StatsKey *key)
{
	InboxCounters *entry = hash_search(StatsHash, key, HASH_REMOVE, NULL);

	if (entry != NULL)
	{
		entry->key.dbid = InvalidOid;
		entry->key.relid = InvalidOid;
		pg_atomic_write_u32(&Stats->full_warned, 0);
	}
}

/*
 * Free the entries whose table or database no longer exists, as this backend
 * sees the catalogs: tables of other databases cannot be checked from here.
 * The keys are collected under the lock and checked without it, as catalog
 * lookups may wait for heavyweight locks.  Returns how many were freed.
 */
static int
stats_reclaim(void)
{
	HASH_SEQ_STATUS status;
	InboxCounters *entry;
	StatsKey   *gone = palloc(sizeof(StatsKey) * stats_max_inboxes);
	int			ngone = 0;
	int			ncandidates = 0;

	LWLockAcquire(StatsLock, LW_SHARED);
	hash_seq_init(&status, StatsHash);
	while ((entry = hash_seq_search(&status)) != NULL)
		gone[ncandidates++] = entry->key;
	LWLockRelease(StatsLock);

	for (int i = 0; i < ncandidates; i++)
	{
		bool		exists;

		if (gone[i].dbid == MyDatabaseId)
			exists = SearchSysCacheExists1(RELOID, ObjectIdGetDatum(gone[i].relid));
		else
			exists = SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(gone[i].dbid));
		if (!exists)
			gone[ngone++] = gone[i];
	}

	if (ngone > 0)
	{
		LWLockAcquire(StatsLock, LW_EXCLUSIVE);
		for (int i = 0; i < ngone; i++)
			stats_remove(&gone[i]);
		LWLockRelease(StatsLock);
	}
	pfree(gone);
	return ngone;
}

/* Enter an entry with zero counts; NULL when the hash is full.  No lock held. */
static InboxCounters *
stats_enter(const StatsKey *key)
{
	InboxCounters *entry;
	bool		found;

	LWLockAcquire(StatsLock, LW_EXCLUSIVE);
	entry = hash_search(StatsHash, key, HASH_ENTER_NULL, &found);
	if (entry != NULL && !found)
		for (int i = 0; i < COUNT_NUM_COUNTERS; i++)
			pg_atomic_init_u64(&entry->counts[i], 0);
	LWLockRelease(StatsLock);
	return entry;
}

static InboxCounters *
stats_find(Oid relid, bool create)
{
	StatsKey	key;
	InboxCounters *entry;

	if (StatsHash == NULL)
		return NULL;

	memset(&key, 0, sizeof(key));
	key.dbid = MyDatabaseId;
	key.relid = relid;

	LWLockAcquire(StatsLock, LW_SHARED);
	entry = hash_search(StatsHash, &key, HASH_FIND, NULL);
	LWLockRelease(StatsLock);
	if (entry != NULL || !create)
		return entry;

	entry = stats_enter(&key);
	if (entry == NULL && stats_reclaim() > 0)
		entry = stats_enter(&key);
	if (entry == NULL && pg_atomic_exchange_u32(&Stats->full_warned, 1) == 0)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("idempotent_inbox counts no more inboxes: idempotent_inbox.max_inboxes (%d) are counted",
						stats_max_inboxes),
				 errdetail("Claims work as before; inbox.stats shows NULL counters for inboxes not counted."),
				 errhint("Raise idempotent_inbox.max_inboxes and restart the server.")));
	return entry;
}

/* The counters of one inbox of this database; NULL when there are none to keep. */
InboxCounters *
stats_counters_for(Oid relid)
{
	return stats_find(relid, true);
}

/*
 * Add to one counter.  The entry found at load time may have been freed and
 * given to another inbox since (a rolled-back DROP): then find this inbox's.
 */
void
stats_count(InboxInfo *inbox, InboxCounter counter, int64 n)
{
	InboxCounters *entry = inbox->counters;

	if (entry == NULL || n <= 0)
		return;
	if (entry->key.relid != inbox->relid || entry->key.dbid != MyDatabaseId)
	{
		entry = inbox->counters = stats_find(inbox->relid, true);
		if (entry == NULL)
			return;
	}
	pg_atomic_fetch_add_u64(&entry->counts[counter], (uint64) n);
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
 * A table is being dropped: free its entry now, whatever dropped it (DROP TABLE,
 * drop_inbox, DROP SCHEMA ... CASCADE).  Should the DROP roll back, the inbox's
 * next count makes a fresh entry.
 */
static void
stats_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId,
					void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);

	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 &&
		StatsHash != NULL && stats_find(objectId, false) != NULL)
	{
		StatsKey	key;

		memset(&key, 0, sizeof(key));
		key.dbid = MyDatabaseId;
		key.relid = objectId;
		LWLockAcquire(StatsLock, LW_EXCLUSIVE);
		stats_remove(&key);
		LWLockRelease(StatsLock);
	}
}

/*
 * Whether the caller may see an inbox's counters: the table exists and the
 * caller may read it.  Catalog lookups only, no lock: a view over every inbox
 * calls this for each.
 */
static bool
stats_visible(Oid relid)
{
	bool		is_missing = false;

	if (pg_class_aclcheck_ext(relid, GetUserId(), ACL_SELECT, &is_missing) != ACLCHECK_OK)
		return false;
	return !is_missing;
}

/*
 * The counters of one inbox as a row, in InboxCounter order.  Every column is
 * NULL when the library is not preloaded, when the table does not exist or the
 * caller may not read it, and when the inbox is not counted (the hash is full).
 * An inbox not yet used since the server started has zeros.  Never an error for
 * a relation, so that inbox.stats answers for everyone whatever one inbox is.
 */
PG_FUNCTION_INFO_V1(inbox_live_counters);
Datum
inbox_live_counters(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[COUNT_NUM_COUNTERS];
	bool		nulls[COUNT_NUM_COUNTERS];
	int64		counts[COUNT_NUM_COUNTERS];
	bool		shown = false;
	InboxCounters *entry = NULL;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "live_counters must return a row");
	tupdesc = BlessTupleDesc(tupdesc);
	if (tupdesc->natts != COUNT_NUM_COUNTERS)
		elog(ERROR, "live_counters returns %d columns, expected %d",
			 tupdesc->natts, COUNT_NUM_COUNTERS);

	if (StatsHash != NULL && !PG_ARGISNULL(0) && stats_visible(PG_GETARG_OID(0)))
	{
		entry = stats_find(PG_GETARG_OID(0), false);
		/* No entry: not used yet, or not counted because every entry is taken. */
		shown = entry != NULL || hash_get_num_entries(StatsHash) < stats_max_inboxes;
	}

	for (int i = 0; i < COUNT_NUM_COUNTERS; i++)
		counts[i] = entry ? (int64) pg_atomic_read_u64(&entry->counts[i]) : 0;
	/* On a Citus coordinator, a Citus table's counters include its workers'. */
	if (shown && citus_table(PG_GETARG_OID(0)) && citus_coordinator())
		citus_add_worker_counters(PG_GETARG_OID(0), counts, COUNT_NUM_COUNTERS);
	for (int i = 0; i < COUNT_NUM_COUNTERS; i++)
	{
		nulls[i] = !shown;
		values[i] = Int64GetDatum(counts[i]);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
