/*
 * citus_tables.h
 *		Whether a relation is a Citus table, whose rows live in its shards.
 */
#ifndef INBOX_CITUS_TABLES_H
#define INBOX_CITUS_TABLES_H

extern bool citus_table(Oid relid);
extern char *citus_distribution_column(Oid relid);
extern Oid	citus_local_shard(Oid relid, Datum value, Oid type, bool isnull);
extern bool citus_coordinator(void);
extern void citus_add_worker_counters(Oid relid, int64 *counts, int n);
extern int	citus_triggers_begin(Oid relid);
extern void citus_triggers_end(int level);

#endif							/* INBOX_CITUS_TABLES_H */
