/*
 * stats.h
 *		Per-inbox counters in shared memory (stats.c).
 */
#ifndef INBOX_STATS_H
#define INBOX_STATS_H

#include "inbox_info.h"

typedef enum InboxCounter
{
	COUNT_CLAIMS,
	COUNT_DUPLICATES,
	COUNT_IN_PROGRESS,
	COUNT_FINGERPRINT_CONFLICTS,
	COUNT_TAKEOVERS,
	COUNT_PURGED,
	COUNT_NUM_COUNTERS
} InboxCounter;

extern void stats_init(void);
extern InboxCounters *stats_counters_for(Oid relid);
extern void stats_count(InboxInfo *inbox, InboxCounter counter, int64 n);
extern void stats_forget(Oid relid);

#endif							/* INBOX_STATS_H */
