/*
 * citus_failures.h
 *		The tables that keep the failures of a Citus inbox (citus_failures.c).
 */
#ifndef INBOX_CITUS_FAILURES_H
#define INBOX_CITUS_FAILURES_H

#include "fmgr.h"

#include "inbox_info.h"

/* The constraint of a failures table that carries the inbox's failure settings. */
#define INBOX_FAILURES_MARKER "idempotent_inbox_failures"

/*
 * A distributed inbox's failures tables, as distribute_failures made them:
 * quoted, schema-qualified names, the inbox (whose owner they are) and the
 * settings the marker carries, which a worker has no registry row for.
 */
typedef struct CompanionTables
{
	char	   *failures;
	char	   *blocked;
	char	   *audit;
	char	   *keys;
	Oid			inbox;
	int32		max_attempts;
	bool		key_ordering;
} CompanionTables;

extern bool citus_failures_lookup(const InboxInfo *inbox, CompanionTables *tables);
extern bool citus_failures_exist(const InboxInfo *inbox);
extern char *citus_failures_drop_list(const InboxInfo *inbox);
extern void citus_failures_sync_settings(FunctionCallInfo fcinfo, const InboxInfo *inbox);

#endif							/* INBOX_CITUS_FAILURES_H */
