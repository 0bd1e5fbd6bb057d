/*
 * inbox.h
 *		What the modules of idempotent_inbox share.
 *
 * Terms, used the same way in every file:
 *	inbox		an ordinary table of claims for one consumer, listed in the registry
 *	claim		the row that says "this message id is being or has been applied"
 *	effect		the business change applied in the same transaction as the claim
 *	duplicate	a delivery whose id is already claimed
 */
#ifndef INBOX_H
#define INBOX_H

#include "postgres.h"

#include "executor/spi.h"
#include "access/attnum.h"
#include "fmgr.h"
#include "storage/itemptr.h"
#include "storage/lockdefs.h"
#include "nodes/parsenodes.h"
#include "utils/array.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"
#include "utils/timestamp.h"

/*
 * Our own SQLSTATEs: the standard class, and a subclass starting with I, which
 * the standard leaves to implementations.
 */
#define ERRCODE_IDEMPOTENCY_KEY_REUSED	MAKE_SQLSTATE('2','2','I','0','1')
#define ERRCODE_STALE_LEASE_TOKEN		MAKE_SQLSTATE('5','5','I','0','1')

/* Longest retention window; longer ones would leave the range of timestamps. */
#define MAX_RETENTION_YEARS 1000

/* Retries of a claim's read-decide-write loop before it is deemed stuck. */
#define CLAIM_MAX_RETRIES 1000

/* Longest message id we accept, in bytes; keeps claims well inside an index tuple. */
#define INBOX_MAX_ID_BYTES 1024

/*
 * The statements a backend prepares per inbox, from the templates in
 * inbox_sql.c.  Each is prepared on first use and kept until the inbox's cache
 * entry is reloaded (the table may have been renamed).
 */
typedef enum InboxStatement
{
	SQL_CLAIM,					/* INSERT ... ON CONFLICT DO NOTHING */
	SQL_CLAIM_MANY,				/* batch variant, RETURNING the fresh ids */
	SQL_CLAIM_MANY_WINDOW,		/* the same, renewing expired claims */
	SQL_CLAIM_FULL,				/* a claim or lease with every column given */
	SQL_RECLAIM,				/* a fresh claim over an expired one */
	SQL_TAKEOVER,				/* a new lease over a stale one */
	SQL_FINISH,
	SQL_RELEASE,
	SQL_COMPLETE,
	SQL_RESULT,
	SQL_PURGE,
	SQL_OLDEST,
	SQL_NUM_STATEMENTS
} InboxStatement;

/*
 * The columns create_inbox makes, found by name when an entry is loaded.  Only
 * message_id and claimed_at are needed by plain claims; the others carry
 * fingerprints, stored results and leases.
 */
typedef enum InboxColumn
{
	COL_CLAIMED_AT,
	COL_FINGERPRINT,
	COL_RESULT,
	COL_TOKEN,
	COL_LEASE_UNTIL,
	COL_HOLDER_PID,
	COL_HOLDER_STARTED,
	INBOX_NUM_COLUMNS
} InboxColumn;

extern const char *const inbox_column_names[INBOX_NUM_COLUMNS];

/* Shared-memory counters of one inbox (stats.c); NULL when not preloaded. */
typedef struct InboxCounters InboxCounters;

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

/*
 * What a backend remembers about one inbox.  Entries live in a hash keyed by the
 * table's OID and are marked stale by a relcache callback; the plans are kept
 * SPI plans built from the table's current qualified name.
 */
typedef struct InboxInfo
{
	Oid			relid;			/* hash key */
	bool		valid;			/* false once a relcache invalidation arrives */
	Oid			keytype;		/* TEXTOID, UUIDOID or INT8OID */
	Oid			pkindex;		/* the message_id primary key index */
	RegProcedure key_eq;		/* equality proc of that index, for probes */
	char	   *qualname;		/* quoted, schema-qualified table name, in cxt */
	MemoryContext cxt;			/* what a load allocates, freed with the entry's
								 * plans only once no call can be using them */
	AttrNumber	key_attnum;		/* message_id */
	bool		direct_shape;	/* claims may skip the executor (claim_direct.c) */
	bool		insert_triggers;	/* BEFORE INSERT row triggers, which may skip or
									 * change a claim's row */
	bool		has_retention;	/* claims older than retention count as absent */
	Interval	retention;
	AttrNumber	columns[INBOX_NUM_COLUMNS];	/* attnums, by InboxColumn */
	SPIPlanPtr	plans[SQL_NUM_STATEMENTS];
	InboxCounters *counters;	/* looked up once per load; NULL if not preloaded */
	int			dup_rate;		/* recent share of duplicates, see claim_one */
} InboxInfo;

/*
 * Who to wait for before looking at a row again (direct_access.c): the
 * transaction inserting or changing it, and for a speculative insertion its
 * token, which is released as soon as that insertion is confirmed or killed.
 */
typedef struct DirtyWait
{
	TransactionId xid;
	uint32		spec_token;
} DirtyWait;

/*
 * One claim as a dirty snapshot sees it (claim_row.c).  Another transaction may be
 * inserting it (a claim not yet committed) or changing it (finishing, taking over,
 * purging); xid names that transaction, to wait for or to report.
 */
typedef enum RowState
{
	ROW_ABSENT,
	ROW_PRESENT,				/* committed, or written by this transaction */
	ROW_INSERTING,
	ROW_CHANGING
} RowState;

typedef struct ClaimRow
{
	RowState	state;
	DirtyWait	wait;
	ItemPointerData tid;
	/* The columns below are read only when asked for, and only when present. */
	TimestampTz claimed_at;
	bytea	   *fingerprint;	/* NULL when none was given */
	Jsonb	   *result;			/* NULL when none is stored */
	bool		has_token;
	int64		token;
	bool		leased;			/* lease_until is set: an attempt is running */
	TimestampTz lease_until;
	int32		holder_pid;		/* 0 unless the lease is session-bound */
	TimestampTz holder_started;
} ClaimRow;

/* What a call site of one of our SQL functions was declared with (signature.c). */
typedef struct CallSignature
{
	Oid			keyargtype;		/* declared type of the message id argument */
	Oid			keytype;		/* the same, or its element type for arrays */
	Oid			variadic_type;	/* InvalidOid, ANYOID or TEXTOID */
	Oid			rettype;		/* declared result type (an enum for some) */
} CallSignature;

/*
 * Recent share of calls with some property, in 1/1024ths, each call weighing
 * 1/16: what the adaptive paths (claim's probe, upsert's and transition's order
 * of steps) decide from.
 */
#define SHARE_SCALE 1024
#define SHARE_THRESHOLD_HALF (SHARE_SCALE / 2)

static inline void
share_record(int *share, bool hit)
{
	*share += ((hit ? SHARE_SCALE : 0) - *share) >> 4;
}

/* idempotent_inbox.c */
extern void _PG_init(void);

/* registry.c */
extern void registry_init(void);
extern InboxInfo *registry_lookup(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode,
								  AclMode rights);
extern InboxInfo *registry_lookup_relid(FunctionCallInfo fcinfo, Oid relid, LOCKMODE lockmode,
										AclMode rights);
extern InboxInfo *registry_lookup_if_intact(FunctionCallInfo fcinfo, int argno, LOCKMODE lockmode);
extern void registry_check_window_rights(const InboxInfo *inbox);
extern void registry_forbid_row_security(FunctionCallInfo fcinfo, const InboxInfo *inbox);
extern Oid	registry_extension_namespace(FunctionCallInfo fcinfo);
extern Oid	registry_extension_relation(FunctionCallInfo fcinfo, const char *relname);

/* retired.c */
extern void retired_init(void);
extern void retire_plan(SPIPlanPtr plan);
extern void retire_context(MemoryContext cxt);

/* purge_worker.c */
extern void purge_worker_init(void);

/* retention.c: acting as a table's owner, as VACUUM does (restricted, search_path pinned) */
typedef struct AsOwner
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} AsOwner;

extern void as_owner_begin(Oid relid, AsOwner *save);
extern void as_owner_end(const AsOwner *save);

extern void retention_index_create(Oid relid);

/* message_id.c */
extern Datum message_id_from_arg(FunctionCallInfo fcinfo, int argno, Oid argtype,
								 const InboxInfo *inbox);
extern Datum message_id_from_element(Datum value, bool isnull, Oid argtype,
									 const InboxInfo *inbox, int position);
extern char *message_id_to_cstring(const InboxInfo *inbox, Datum message_id);

/* signature.c */
extern const CallSignature *call_signature(FunctionCallInfo fcinfo);
extern Datum enum_label(Oid enumtype, const char *label);

/* spi_util.c */
extern void spi_connect(void);
extern SPIPlanPtr spi_prepare_kept(const char *sql, int nargs, Oid *argtypes);
extern void spi_free_plan(SPIPlanPtr *plan);
extern void spi_execute_expect(SPIPlanPtr plan, Datum *values, const char *nulls,
							   int expected);

/* claim.c */
extern bool claim_one(InboxInfo *inbox, Datum message_id, bytea *fingerprint);
extern bool claim_one_connecting(InboxInfo *inbox, Datum message_id);

/* direct_access.c */
extern bool direct_access_possible(Relation rel, const AttrNumber *filled, int nfilled);
extern bool direct_access_allowed(Oid relid, AclMode rights);
extern RowState dirty_lookup(Relation heap, Relation index, struct ScanKeyData *keys, int nkeys,
							 DirtyWait *wait, ItemPointer tid,
							 void (*on_present) (struct TupleTableSlot *slot, void *arg),
							 void *arg);
extern void direct_access_wait(Relation heap, const DirtyWait *wait, ItemPointer tid);
extern bool speculative_insert(Relation rel, Oid arbiter, struct TupleTableSlot *slot);

/* inbox_shape.c */
extern char *inbox_shape_problem(Relation rel, InboxInfo *inbox);
extern void inbox_shape_error(Relation rel, const char *problem) pg_attribute_noreturn();
extern bool inbox_shape_direct_ok(Relation rel, const InboxInfo *inbox);

/* claim_direct.c */
typedef enum ClaimDirectResult
{
	CLAIM_DIRECT_UNAVAILABLE,
	CLAIM_DIRECT_CLAIMED,
	CLAIM_DIRECT_DUPLICATE
} ClaimDirectResult;

extern ClaimDirectResult claim_direct(InboxInfo *inbox, Datum message_id);

/* claim_row.c */
extern void claim_row_read(InboxInfo *inbox, Datum message_id, bool columns, ClaimRow *row);
extern void claim_row_wait(InboxInfo *inbox, const ClaimRow *row);
extern bool claim_row_stored(InboxInfo *inbox, Datum message_id, uint64 stored);
extern void claim_row_suppressed(InboxInfo *inbox, Datum message_id) pg_attribute_noreturn();
extern void claim_row_retry(InboxInfo *inbox, Datum message_id, int *retries);
extern bool claim_row_expired(const InboxInfo *inbox, const ClaimRow *row, TimestampTz now);
extern bool claim_row_lease_live(const ClaimRow *row, TimestampTz now);
extern TimestampTz retention_cutoff(const InboxInfo *inbox, TimestampTz now);
extern bool retention_within_bounds(const Interval *retention);

/* fingerprint.c */
extern bytea *fingerprint_arg(FunctionCallInfo fcinfo, int argno);
extern void fingerprint_check(InboxInfo *inbox, Datum message_id, const ClaimRow *row,
							  const bytea *fingerprint);

/* inbox_sql.c */
extern SPIPlanPtr inbox_plan(InboxInfo *inbox, InboxStatement which);
extern int	inbox_execute(InboxInfo *inbox, InboxStatement which, Datum *values, const char *nulls);
extern void inbox_require_column(const InboxInfo *inbox, InboxColumn column);

/* stats.c */
extern void stats_init(void);
extern InboxCounters *stats_counters_for(Oid relid);
extern void stats_count(InboxInfo *inbox, InboxCounter counter, int64 n);
extern void stats_forget(Oid relid);

/* row_fetch.c */
extern bool row_fetch_allowed(Relation rel);
extern bool row_fetch(Relation rel, Oid keyindex, const Datum *row, const bool *rownulls,
					  Datum *stored, bool *storednulls);

/* row_values.c */
extern void row_values_init(void);
extern void row_values_from_jsonb(Relation rel, Jsonb *object, Datum *values, bool *nulls);

/* state_machine.c */
extern ArrayType *state_machine_sources(Relation rel, const char *column, const char *to_state,
										Oid nspid);

/* statement_cache.c */
typedef struct StatementPlan StatementPlan;
extern void statement_cache_init(void);
extern StatementPlan *statement_cache_get(const char *source, int nargs, const Oid *argtypes);
extern void statement_convert_args(StatementPlan *entry, Datum *values, const char *nulls);
extern void statement_execute(StatementPlan *entry, Datum *values, const char *nulls);
extern void statement_pin(StatementPlan *entry);
extern void statement_unpin(StatementPlan *entry);

/* signature.c (misc, issue 9) */
extern void report_extension_dropped(void) pg_attribute_noreturn();

/* spi_util.c (misc, issue 9) */
extern void spi_report_error(int rc, const char *what) pg_attribute_noreturn();

#endif							/* INBOX_H */
