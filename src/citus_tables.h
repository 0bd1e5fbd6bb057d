/*
 * citus_tables.h
 *		Whether a relation is a Citus table, whose rows live in its shards.
 */
#ifndef INBOX_CITUS_TABLES_H
#define INBOX_CITUS_TABLES_H

extern bool citus_table(Oid relid);

#endif							/* INBOX_CITUS_TABLES_H */
