/*
 * compat.h
 *		Every difference between the PostgreSQL versions we build against (13-17).
 *
 * Code elsewhere calls the names defined here and never tests PG_VERSION_NUM itself.
 */
#ifndef INBOX_COMPAT_H
#define INBOX_COMPAT_H

#include "postgres.h"

#include "parser/analyze.h"
#include "utils/guc.h"

/* PostgreSQL 15 added the query environment argument. */
#if PG_VERSION_NUM >= 150000
#define compat_parse_analyze_varparams(stmt, src, types, ntypes) \
	parse_analyze_varparams((stmt), (src), (types), (ntypes), NULL)
#else
#define compat_parse_analyze_varparams(stmt, src, types, ntypes) \
	parse_analyze_varparams((stmt), (src), (types), (ntypes))
#endif

/* PostgreSQL 15 renamed EmitWarningsOnPlaceholders and made it reserve the prefix. */
#if PG_VERSION_NUM >= 150000
#define compat_reserve_guc_prefix(prefix) MarkGUCPrefixReserved(prefix)
#else
#define compat_reserve_guc_prefix(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* PostgreSQL 16 folded the per-catalog ownership checks into object_ownercheck. */
#if PG_VERSION_NUM >= 160000
#include "catalog/pg_class.h"
#include "utils/acl.h"
#define compat_table_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#include "utils/acl.h"
#define compat_table_ownercheck(relid, roleid) pg_class_ownercheck((relid), (roleid))
#endif

/*
 * Backend status: its own header from 14; the per-index accessor renamed in 17;
 * the activity snapshot cleared on its own from 15.
 */
#if PG_VERSION_NUM >= 140000
#include "utils/backend_status.h"
#else
#include "pgstat.h"
#endif
#if PG_VERSION_NUM >= 170000
#define compat_local_beentry(i) pgstat_get_local_beentry_by_index(i)
#else
#define compat_local_beentry(i) pgstat_fetch_stat_local_beentry(i)
#endif
#if PG_VERSION_NUM >= 150000
#define compat_clear_backend_snapshot() pgstat_clear_backend_activity_snapshot()
#else
#define compat_clear_backend_snapshot() pgstat_clear_snapshot()
#endif

/* PostgreSQL 15 added a hook for requesting shared memory; before, _PG_init asked. */
#if PG_VERSION_NUM >= 150000
#define COMPAT_HAS_SHMEM_REQUEST_HOOK 1
#endif

/* PostgreSQL 14 made cryptographic hashes allocate and fail cleanly. */
#if PG_VERSION_NUM >= 140000
#define COMPAT_HAS_CRYPTOHASH 1
#endif

/*
 * An interrupted DROP DATABASE leaves a database nobody may connect to; minor
 * releases from 15.4 (and 13.12, 14.9) mark it, older ones cannot leave one.
 */
#include "catalog/pg_database.h"
#ifdef DATCONNLIMIT_INVALID_DB
#define compat_database_is_invalid(db) database_is_invalid_form(db)
#else
#define compat_database_is_invalid(db) false
#endif

/*
 * Index insertion with an arbiter index, as speculative insertion does it: the
 * result relation became an argument in 14, and 16 added onlySummarizing.  On 13
 * claims always take the SQL path.  After a non-HOT update the new entries are
 * inserted as for a fresh row: "update" is only a hint for bottom-up deletion,
 * and computing it needs a range table we do not have.
 */
#if PG_VERSION_NUM >= 160000
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, true, (conflict), (arbiter), false))
#define compat_update_index_tuples(rri, slot, estate) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false))
#define COMPAT_UPDATE_INDEXES TU_UpdateIndexes
#define compat_must_update_indexes(u) ((u) != TU_None)
#elif PG_VERSION_NUM >= 140000
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, true, (conflict), (arbiter)))
#define compat_update_index_tuples(rri, slot, estate) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL))
#define COMPAT_UPDATE_INDEXES bool
#define compat_must_update_indexes(u) (u)
#else
#define COMPAT_NO_DIRECT_CLAIM 1
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	elog(ERROR, "claims without the executor need PostgreSQL 14 or later")
#define compat_update_index_tuples(rri, slot, estate) \
	elog(ERROR, "advance without the executor needs PostgreSQL 14 or later")
#define COMPAT_UPDATE_INDEXES bool
#define compat_must_update_indexes(u) (u)
#endif

#endif							/* INBOX_COMPAT_H */
