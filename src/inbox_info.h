/*
 * inbox_info.h
 *		What a backend remembers about one inbox (registry.c loads it): the
 *		table's shape, its settings and the statements prepared for it.
 */
#ifndef INBOX_INFO_H
#define INBOX_INFO_H

#include "access/attnum.h"
#include "utils/timestamp.h"
#include "executor/spi.h"

#include "inbox.h"

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
	/* Routed claims (claim_routed.c): one statement each, which Citus can route. */
	SQL_CLAIM_WINDOW,			/* a claim that renews an expired one in place */
	SQL_EXISTS,					/* is the id claimed? (after a trigger skipped it) */
	SQL_HELD,					/* the same, by a claim that has not expired */
	SQL_PURGE_DISTRIBUTED,		/* purge as one distributed DELETE */
	/* Quarantine (failures.c): the claim row of a quarantined message. */
	SQL_QUARANTINE,				/* a claim row that never expires */
	SQL_QUARANTINE_EXPIRED,		/* the same over an expired claim */
	SQL_UNQUARANTINE,			/* retry: delete that row */
	SQL_DISCARD,				/* discard: make it an ordinary claim */
	SQL_FORGET,					/* forget: delete any claim of the id */
	/* The same statements for an inbox with a shard key; it is their last $n. */
	SQL_SHARDED_CLAIM,
	SQL_SHARDED_CLAIM_WINDOW,
	SQL_SHARDED_CLAIM_MANY,
	SQL_SHARDED_CLAIM_MANY_WINDOW,
	SQL_SHARDED_EXISTS,
	SQL_SHARDED_HELD,
	/* Stored columns of a routed inbox: one claim read by a statement, and the
	 * sharded forms of the lease and result statements (inbox_sql_execute_key). */
	SQL_ROW,
	SQL_SHARDED_ROW,
	SQL_SHARDED_CLAIM_FULL,
	SQL_SHARDED_RECLAIM,
	SQL_SHARDED_TAKEOVER,
	SQL_SHARDED_FINISH,
	SQL_SHARDED_RELEASE,
	SQL_SHARDED_COMPLETE,
	SQL_SHARDED_RESULT,
	SQL_SHARDED_QUARANTINE,
	SQL_SHARDED_QUARANTINE_EXPIRED,
	SQL_SHARDED_UNQUARANTINE,
	SQL_SHARDED_DISCARD,
	SQL_SHARDED_FORGET,
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

/* Shared-memory counters of one inbox (stats.h); NULL when not preloaded. */
typedef struct InboxCounters InboxCounters;

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
	AttrNumber	shard_attnum;	/* the shard key, first in the primary key; 0 if none */
	Oid			shard_type;
	RegProcedure shard_eq;		/* equality proc of the primary key on it, and */
	Oid			shard_collation;	/* its collation: a stored claim's shard key is
									 * compared with the one given */
	char	   *shard_column;	/* its quoted name, in cxt; NULL if none */
	bool		distributed;	/* a Citus table: its rows live in shards */
	bool		citus_column_known;	/* citus_column is read (claim_row.c), once a load:
									 * Citus invalidates the table's relcache entry
									 * when it redistributes it */
	AttrNumber	citus_column;	/* then its distribution column; 0 for a reference
								 * table, -1 for a name not found */
	bool		routed;			/* every claim is one SQL statement, with nothing read
								 * or written directly: distributed, or with a shard
								 * key (claim_routed.c) */
	bool		direct_shape;	/* claims may skip the executor (claim_direct.c) */
	bool		insert_first_safe;	/* the primary key is its only unique or
									 * exclusion index: a direct claim may insert
									 * before it looks */
	bool		insert_triggers;	/* BEFORE INSERT row triggers, which may skip or
									 * change a claim's row */
	bool		update_triggers;	/* BEFORE UPDATE row triggers, which may skip the
									 * renewal of an expired claim */
	bool		has_retention;	/* claims older than retention count as absent */
	Interval	retention;
	AttrNumber	columns[INBOX_NUM_COLUMNS];	/* attnums, by InboxColumn */
	SPIPlanPtr	plans[SQL_NUM_STATEMENTS];
	InboxCounters *counters;	/* looked up once per load; NULL if not preloaded */
	int			dup_rate;		/* recent share of duplicates, see claim_one */
	/*
	 * Set by a claim that answered duplicate from the row it read (the direct
	 * path's look, claim_checked): whether that row was a quarantine, so that claim_quarantined
	 * need not read it again.  Cleared at each claim.
	 */
	bool		dup_row_known;
	bool		dup_row_quarantined;
} InboxInfo;

#endif							/* INBOX_INFO_H */
