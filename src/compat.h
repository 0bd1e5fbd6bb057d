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

/*
 * PostgreSQL 15 added a hook for requesting shared memory; before, _PG_init
 * asked.  compat_install_shmem_request chains request onto the hook, or on older
 * versions calls it at once and leaves *prev NULL, so that the request function
 * calls a previous hook only when there is one.
 */
#include "miscadmin.h"
#if PG_VERSION_NUM >= 150000
typedef shmem_request_hook_type compat_shmem_request_hook_type;

static inline void
compat_install_shmem_request(compat_shmem_request_hook_type request,
							 compat_shmem_request_hook_type *prev)
{
	*prev = shmem_request_hook;
	shmem_request_hook = request;
}
#else
typedef void (*compat_shmem_request_hook_type) (void);

static inline void
compat_install_shmem_request(compat_shmem_request_hook_type request,
							 compat_shmem_request_hook_type *prev)
{
	*prev = NULL;
	request();
}
#endif

/*
 * Incremental SHA-256, the same on every version we build against: PostgreSQL
 * 14 made cryptographic hashes allocate and fail cleanly.
 */
#if PG_VERSION_NUM >= 140000
#include "common/cryptohash.h"
#include "common/sha2.h"

typedef struct CompatSha256
{
	pg_cryptohash_ctx *ctx;
} CompatSha256;

static inline void
compat_sha256_begin(CompatSha256 *d)
{
	d->ctx = pg_cryptohash_create(PG_SHA256);
	if (d->ctx == NULL || pg_cryptohash_init(d->ctx) < 0)
		elog(ERROR, "could not initialize a SHA-256 digest");
}

static inline void
compat_sha256_add(CompatSha256 *d, const void *data, size_t len)
{
	if (pg_cryptohash_update(d->ctx, data, len) < 0)
		elog(ERROR, "could not update a SHA-256 digest");
}

static inline void
compat_sha256_end(CompatSha256 *d, uint8 *out)
{
	if (pg_cryptohash_final(d->ctx, out, PG_SHA256_DIGEST_LENGTH) < 0)
		elog(ERROR, "could not finish a SHA-256 digest");
	pg_cryptohash_free(d->ctx);
}
#else
#include "common/sha2.h"

typedef struct CompatSha256
{
	pg_sha256_ctx ctx;
} CompatSha256;

static inline void
compat_sha256_begin(CompatSha256 *d)
{
	pg_sha256_init(&d->ctx);
}

static inline void
compat_sha256_add(CompatSha256 *d, const void *data, size_t len)
{
	pg_sha256_update(&d->ctx, data, len);
}

static inline void
compat_sha256_end(CompatSha256 *d, uint8 *out)
{
	pg_sha256_final(&d->ctx, out);
}
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
 * and computing it needs a range table we do not have.  COMPAT_DIRECT_WRITES
 * says whether the paths that skip the executor exist at all.
 */
#if PG_VERSION_NUM >= 160000
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, true, (conflict), (arbiter), false))
#define compat_update_index_tuples(rri, slot, estate) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false))
#define COMPAT_DIRECT_WRITES true
#define COMPAT_UPDATE_INDEXES TU_UpdateIndexes
#define compat_must_update_indexes(u) ((u) != TU_None)
#elif PG_VERSION_NUM >= 140000
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, true, (conflict), (arbiter)))
#define compat_update_index_tuples(rri, slot, estate) \
	((void) ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL))
#define COMPAT_DIRECT_WRITES true
#define COMPAT_UPDATE_INDEXES bool
#define compat_must_update_indexes(u) (u)
#else
#define COMPAT_DIRECT_WRITES false
#define compat_insert_index_tuples(rri, slot, estate, conflict, arbiter) \
	elog(ERROR, "claims without the executor need PostgreSQL 14 or later")
#define compat_update_index_tuples(rri, slot, estate) \
	elog(ERROR, "advance without the executor needs PostgreSQL 14 or later")
#define COMPAT_UPDATE_INDEXES bool
#define compat_must_update_indexes(u) (u)
#endif

#endif							/* INBOX_COMPAT_H */
