/*
 * compat.h
 *		Every difference between the PostgreSQL versions we build against: 15 to 19
 *		(16 is not built here: no Debian release packages it).
 *
 * Code elsewhere calls the names defined here and never tests PG_VERSION_NUM itself.
 */
#ifndef INBOX_COMPAT_H
#define INBOX_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000
#error "idempotent_inbox needs PostgreSQL 15 or later"
#endif

/*
 * PostgreSQL 16 moved the varlena macros (VARSIZE_ANY_EXHDR, ...) to varatt.h;
 * postgres.h included it until 19.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * PostgreSQL 18 replaced pg_attribute_noreturn(), written after a declaration, with
 * pg_noreturn, written first; GCC and Clang take the attribute first as well.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * PostgreSQL 16 folded the per-catalog ownership and privilege checks into
 * object_ownercheck and object_aclcheck.
 */
#include "catalog/pg_class.h"
#include "catalog/pg_namespace.h"
#include "utils/acl.h"
#if PG_VERSION_NUM >= 160000
#include "utils/syscache.h"

/*
 * pg_class_ownercheck raised 42P01 for a relation that does not exist;
 * object_ownercheck reports an internal error: keep the former everywhere.
 */
static inline bool
compat_table_ownercheck(Oid relid, Oid roleid)
{
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return object_ownercheck(RelationRelationId, relid, roleid);
}
#define compat_namespace_aclcheck(nspid, roleid, mode) \
	object_aclcheck(NamespaceRelationId, (nspid), (roleid), (mode))
#else
#define compat_table_ownercheck(relid, roleid) pg_class_ownercheck((relid), (roleid))
#define compat_namespace_aclcheck(nspid, roleid, mode) \
	pg_namespace_aclcheck((nspid), (roleid), (mode))
#endif

/* Backend status: the per-index accessor was renamed in 17. */
#include "utils/backend_status.h"
#if PG_VERSION_NUM >= 170000
#define compat_local_beentry(i) pgstat_get_local_beentry_by_index(i)
#else
#define compat_local_beentry(i) pgstat_fetch_stat_local_beentry(i)
#endif

/*
 * An interrupted DROP DATABASE leaves a database nobody may connect to; minor
 * releases from 15.4 mark it, older ones cannot leave one.
 */
#include "catalog/pg_database.h"
#ifdef DATCONNLIMIT_INVALID_DB
#define compat_database_is_invalid(db) database_is_invalid_form(db)
#else
#define compat_database_is_invalid(db) false
#endif

/*
 * The relation's primary key if it is not deferrable: 18 can also return a
 * deferrable one, when asked to; before, a deferrable key was never returned.
 */
#include "utils/relcache.h"
#if PG_VERSION_NUM >= 180000
#define compat_immediate_primary_key(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define compat_immediate_primary_key(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/*
 * PostgreSQL 18 added instrumentation to index scans, and 19 scan options (we set
 * none: our scans serve writes); ours have no ORDER BY keys.
 */
#include "access/genam.h"
#if PG_VERSION_NUM >= 190000
#define compat_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), 0, 0)
#elif PG_VERSION_NUM >= 180000
#define compat_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), 0)
#else
#define compat_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), 0)
#endif

/*
 * Index insertion with an arbiter index, as speculative insertion does it; 16
 * added onlySummarizing, and 19 folded the booleans into flags.  After a non-HOT
 * update the new entries are inserted as for a fresh row: "update" is only a hint
 * for bottom-up deletion, and computing it needs a range table we do not have.
 * After a HOT update that changed a column of a summarizing (BRIN) index, 16 and
 * later insert into those indexes only: an entry in any other would point at a
 * heap-only tuple.
 */
#include "executor/executor.h"
#if PG_VERSION_NUM >= 190000
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	((void) ExecInsertIndexTuples((rri), (estate), EIIT_NO_DUPE_ERROR, (slot), (arbiter), (conflict)))
#define compat_update_index_tuples(rri, slot, estate, u) \
	((void) ExecInsertIndexTuples((rri), (estate), \
								  (u) == TU_Summarizing ? EIIT_ONLY_SUMMARIZING : 0, \
								  (slot), NIL, NULL))
#define COMPAT_UPDATE_INDEXES TU_UpdateIndexes
#define compat_must_update_indexes(u) ((u) != TU_None)
#elif PG_VERSION_NUM >= 160000
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, true, (conflict), (arbiter), false))
#define compat_update_index_tuples(rri, slot, estate, u) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, \
								  (u) == TU_Summarizing))
#define COMPAT_UPDATE_INDEXES TU_UpdateIndexes
#define compat_must_update_indexes(u) ((u) != TU_None)
#else
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, true, (conflict), (arbiter)))
#define compat_update_index_tuples(rri, slot, estate, u) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL))
#define COMPAT_UPDATE_INDEXES bool
#define compat_must_update_indexes(u) (u)
#endif

/* PostgreSQL 19 sizes a shared hash table once: it no longer grows. */
#include "storage/shmem.h"
#if PG_VERSION_NUM >= 190000
#define compat_shmem_init_hash(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (info), (flags))
#else
#define compat_shmem_init_hash(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (nelems), (info), (flags))
#endif

/* PostgreSQL 19 added options to table_tuple_update; we pass none. */
#include "access/tableam.h"
#if PG_VERSION_NUM >= 190000
#define compat_table_tuple_update(rel, tid, slot, cid, snapshot, crosscheck, wait, tmfd, lockmode, update_indexes) \
	table_tuple_update((rel), (tid), (slot), (cid), 0, (snapshot), (crosscheck), (wait), \
					   (tmfd), (lockmode), (update_indexes))
#else
#define compat_table_tuple_update(rel, tid, slot, cid, snapshot, crosscheck, wait, tmfd, lockmode, update_indexes) \
	table_tuple_update((rel), (tid), (slot), (cid), (snapshot), (crosscheck), (wait), \
					   (tmfd), (lockmode), (update_indexes))
#endif

/* PostgreSQL 19 passes the post-parse-analysis hook a const JumbleState. */
#include "parser/analyze.h"
#if PG_VERSION_NUM >= 190000
typedef const JumbleState CompatJumbleState;
#else
typedef JumbleState CompatJumbleState;
#endif

/* Does a plan's saved search_path still match the session's?  (17 renamed it.) */
#include "catalog/namespace.h"
#include "utils/plancache.h"
#if PG_VERSION_NUM >= 170000
#define compat_search_path_matches(source) \
	((source)->search_path == NULL || SearchPathMatchesCurrentEnvironment((source)->search_path))
#else
#define compat_search_path_matches(source) \
	((source)->search_path == NULL || OverrideSearchPathMatchesCurrent((source)->search_path))
#endif

/* The sequence of an identity column: 17 looks it up by relation, for partitions. */
#include "catalog/dependency.h"
#if PG_VERSION_NUM >= 170000
#define compat_identity_sequence(rel, attnum) getIdentitySequence((rel), (attnum), true)
#else
#define compat_identity_sequence(rel, attnum) \
	getIdentitySequence(RelationGetRelid(rel), (attnum), true)
#endif

#endif							/* INBOX_COMPAT_H */
