/*
 * inbox_sql.c
 *		The statements run against an inbox table, prepared once per backend and
 *		inbox and kept until the table's cache entry is reloaded.
 *
 * Every statement is written here, in one table, so that what a claim, a lease or
 * a purge does to the rows can be read in one place.  The only thing spliced in is
 * the table's quoted, qualified name; every value is a parameter.  $1 is always the
 * message id (of the inbox's key type) except for the statements without one.
 * The claim INSERTs return the id they stored, and those of a sharded inbox
 * the shard key too: a BEFORE INSERT (or, renewing an expired claim, BEFORE
 * UPDATE) trigger on the inbox may have changed or skipped the row
 * (claim_row_stored and claim_routed_check_shard check).
 *
 * The routed statements are the claims of claim_routed.c: each decides in the
 * statement itself, so that nothing is read before it and Citus can send it,
 * whole, to the shard that holds the id.  An inbox with a shard key has its own
 * copy of each, the shard key value as the last parameter.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/lsyscache.h"

#include "inbox_info.h"
#include "citus_tables.h"
#include "inbox_sql.h"
#include "spi_util.h"

const char *const inbox_sql_column_names[INBOX_NUM_COLUMNS] = {
	[COL_CLAIMED_AT] = "claimed_at",
	[COL_FINGERPRINT] = "fingerprint",
	[COL_RESULT] = "result",
	[COL_TOKEN] = "token",
	[COL_LEASE_UNTIL] = "lease_until",
	[COL_HOLDER_PID] = "holder_pid",
	[COL_HOLDER_STARTED] = "holder_started",
};

/*
 * Parameter types; KEY and KEYS stand for the inbox's key type and its array,
 * SHARD for the type of its shard key.
 */
#define KEY		((Oid) -1)
#define KEYS	((Oid) -2)
#define SHARD	((Oid) -3)
#define MAX_PARAMS 9

/* Columns a statement needs beyond message_id and claimed_at. */
#define NEEDS_LEASE_COLUMNS true

typedef struct StatementTemplate
{
	const char *sql;			/* %1$s is the table, %2$s its shard key column */
	int			nargs;
	Oid			argtypes[MAX_PARAMS];
	bool		lease_columns;
	bool		cte_on_citus;	/* see RETURNED_BY_CTE */
} StatementTemplate;

/*
 * On a Citus table an INSERT ... SELECT run through SPI reports more rows
 * processed than it returns, which SPI takes for an internal error ("consistency
 * check on SPI tuple count failed"); a SELECT's count is its rows.  So there, and
 * only there (elsewhere the CTE costs a few per cent), such a statement returns
 * its rows through a CTE.
 */
#define RETURNED_BY_CTE true

/*
 * A lease row is (token, lease_until, holder_pid, holder_started); a plain claim
 * leaves them NULL.  An "expired" claim is one older than the retention whose
 * lease, if any, is over: $n cutoff and $n+1 now in the guards below.
 *
 * The one-statement window claims (claim_many's and the routed ones) renew an
 * expired claim in place and leave a live one alone, always with $2 the cutoff,
 * $3 now and $4 the claim's time (now(), passed in: Citus refuses a function in
 * DO UPDATE SET); the statements that ask whether a claim holds an id after a
 * trigger skipped one use the same guard, negated.
 */
#define EXPIRED \
	"(claimed_at OPERATOR(pg_catalog.<) $2 " \
	"AND (lease_until IS NULL OR lease_until OPERATOR(pg_catalog.<=) $3))"
#define RENEW_EXPIRED \
	"DO UPDATE SET claimed_at = $4, " \
	"fingerprint = NULL, result = NULL, token = NULL, lease_until = NULL, " \
	"holder_pid = NULL, holder_started = NULL " \
	"WHERE i.claimed_at OPERATOR(pg_catalog.<) $2 " \
	"AND (i.lease_until IS NULL OR i.lease_until OPERATOR(pg_catalog.<=) $3) "
/*
 * The lease and result statements, which an inbox with a shard key runs with
 * SHARD_IS appended: each ends in its WHERE clause.
 */
#define RECLAIM_SQL \
	"UPDATE %1$s SET claimed_at = pg_catalog.now(), fingerprint = $2, result = NULL, " \
	"token = $3, lease_until = $4, holder_pid = $5, holder_started = $6 " \
	"WHERE message_id OPERATOR(pg_catalog.=) $1 " \
	"AND claimed_at OPERATOR(pg_catalog.<) $7 " \
	"AND (lease_until IS NULL OR lease_until OPERATOR(pg_catalog.<=) $8)"
#define TAKEOVER_SQL \
	"UPDATE %1$s SET claimed_at = pg_catalog.now(), " \
	"fingerprint = COALESCE($2, fingerprint), result = NULL, " \
	"token = $3, lease_until = $4, holder_pid = $5, holder_started = $6 " \
	"WHERE message_id OPERATOR(pg_catalog.=) $1 " \
	"AND token OPERATOR(pg_catalog.=) $7 AND lease_until IS NOT NULL"
#define FINISH_SQL \
	"UPDATE %1$s SET result = $3, lease_until = NULL, holder_pid = NULL, holder_started = NULL " \
	"WHERE message_id OPERATOR(pg_catalog.=) $1 " \
	"AND token OPERATOR(pg_catalog.=) $2 AND lease_until IS NOT NULL"
#define RELEASE_SQL \
	"DELETE FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1 " \
	"AND token OPERATOR(pg_catalog.=) $2 AND lease_until IS NOT NULL"
#define COMPLETE_SQL \
	"UPDATE %1$s SET result = $2 " \
	"WHERE message_id OPERATOR(pg_catalog.=) $1 AND lease_until IS NULL AND token IS NULL"
#define RESULT_SQL \
	"SELECT result, claimed_at, lease_until FROM %1$s " \
	"WHERE message_id OPERATOR(pg_catalog.=) $1"
/* A claim's stored columns, in InboxColumn order, read by a statement. */
#define ROW_SQL \
	"SELECT claimed_at, fingerprint, result, token, lease_until, holder_pid, holder_started " \
	"FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1"
#define SHARD_IS(n) " AND %2$s OPERATOR(pg_catalog.=) $" #n

/* The quarantine's statements (failures.c), with or without SHARD_IS. */
#define QUARANTINE_EXPIRED_SQL \
	"UPDATE %1$s SET claimed_at = 'infinity' " \
	"WHERE message_id OPERATOR(pg_catalog.=) $1 AND claimed_at OPERATOR(pg_catalog.<) $2"
#define UNQUARANTINE_SQL \
	"DELETE FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1 " \
	"AND claimed_at OPERATOR(pg_catalog.=) 'infinity'"
#define DISCARD_SQL \
	"UPDATE %1$s SET claimed_at = pg_catalog.now() WHERE message_id OPERATOR(pg_catalog.=) $1 " \
	"AND claimed_at OPERATOR(pg_catalog.=) 'infinity'"
#define FORGET_SQL \
	"DELETE FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1"

static const StatementTemplate templates[SQL_NUM_STATEMENTS] = {
	[SQL_CLAIM] = {
		"INSERT INTO %1$s (message_id) VALUES ($1) ON CONFLICT (message_id) DO NOTHING "
		"RETURNING message_id",
		1, {KEY}
	},
	/* Batches: see RETURNED_BY_CTE. */
	[SQL_CLAIM_MANY] = {
		"INSERT INTO %1$s (message_id) "
		"SELECT u.id FROM pg_catalog.unnest($1) AS u(id) ORDER BY 1 "
		"ON CONFLICT (message_id) DO NOTHING RETURNING message_id",
		1, {KEYS}, false, RETURNED_BY_CTE
	},
	/* Expired claims in the batch are claimed afresh; DISTINCT as a row is updated once. */
	[SQL_CLAIM_MANY_WINDOW] = {
		"INSERT INTO %1$s AS i (message_id) "
		"SELECT DISTINCT u.id FROM pg_catalog.unnest($1) AS u(id) ORDER BY 1 "
		"ON CONFLICT (message_id) " RENEW_EXPIRED
		"RETURNING message_id",
		4, {KEYS, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID}, NEEDS_LEASE_COLUMNS, RETURNED_BY_CTE
	},
	[SQL_CLAIM_FULL] = {
		"INSERT INTO %1$s (message_id, fingerprint, token, lease_until, holder_pid, holder_started) "
		"VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (message_id) DO NOTHING "
		"RETURNING message_id",
		6, {KEY, BYTEAOID, INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID}, NEEDS_LEASE_COLUMNS
	},
	/* Expired counts as absent: the row becomes a fresh claim, if still expired. */
	[SQL_RECLAIM] = {
		RECLAIM_SQL,
		8, {KEY, BYTEAOID, INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		TIMESTAMPTZOID, TIMESTAMPTZOID}, NEEDS_LEASE_COLUMNS
	},
	/* A stale lease passes to a new holder, if nobody finished or took it meanwhile. */
	[SQL_TAKEOVER] = {
		TAKEOVER_SQL,
		7, {KEY, BYTEAOID, INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, INT8OID},
		NEEDS_LEASE_COLUMNS
	},
	[SQL_FINISH] = {
		FINISH_SQL,
		3, {KEY, INT8OID, JSONBOID}, NEEDS_LEASE_COLUMNS
	},
	[SQL_RELEASE] = {
		RELEASE_SQL,
		2, {KEY, INT8OID}, NEEDS_LEASE_COLUMNS
	},
	[SQL_COMPLETE] = {
		COMPLETE_SQL,
		2, {KEY, JSONBOID}, NEEDS_LEASE_COLUMNS
	},
	[SQL_RESULT] = {
		RESULT_SQL,
		1, {KEY}, NEEDS_LEASE_COLUMNS
	},

	/*
	 * Oldest expired claims first, skipping rows a claimer has locked, so purge
	 * never waits for claimers nor they for it; the outer guard re-checks each row
	 * as it is deleted, so a claim renewed meanwhile stays.  ctid = ANY(...) is a
	 * TID scan: each batch costs what it deletes, plus the index range it reads.
	 */
	[SQL_PURGE] = {
		"DELETE FROM %1$s WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
		"SELECT ctid FROM %1$s "
		"WHERE claimed_at OPERATOR(pg_catalog.<) $1 "
		"AND (lease_until IS NULL OR lease_until OPERATOR(pg_catalog.<=) $2) "
		"ORDER BY claimed_at LIMIT $3 FOR UPDATE SKIP LOCKED)) "
		"AND claimed_at OPERATOR(pg_catalog.<) $1 "
		"AND (lease_until IS NULL OR lease_until OPERATOR(pg_catalog.<=) $2)",
		3, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID}, NEEDS_LEASE_COLUMNS
	},
	[SQL_OLDEST] = {
		"SELECT pg_catalog.min(claimed_at) FROM %1$s",
		0, {0}
	},

	/* An expired claim is renewed by the claim itself; a live one is a conflict. */
	[SQL_CLAIM_WINDOW] = {
		"INSERT INTO %1$s AS i (message_id) VALUES ($1) "
		"ON CONFLICT (message_id) " RENEW_EXPIRED
		"RETURNING message_id",
		4, {KEY, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID}, NEEDS_LEASE_COLUMNS
	},
	[SQL_EXISTS] = {
		"SELECT 1 FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1",
		1, {KEY}
	},
	[SQL_HELD] = {
		"SELECT 1 FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1 "
		"AND NOT " EXPIRED,
		3, {KEY, TIMESTAMPTZOID, TIMESTAMPTZOID}, NEEDS_LEASE_COLUMNS
	},

	/*
	 * Citus runs a DELETE on a distributed table in every shard at once, but not
	 * one that picks its rows by ctid or with LIMIT: so one statement, and the
	 * batch size does not apply.  A claimer renewing one of these rows meanwhile
	 * waits for the DELETE, or the DELETE for it.
	 */
	[SQL_PURGE_DISTRIBUTED] = {
		"DELETE FROM %1$s WHERE claimed_at OPERATOR(pg_catalog.<) $1 "
		"AND (lease_until IS NULL OR lease_until OPERATOR(pg_catalog.<=) $2)",
		3, {TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID}, NEEDS_LEASE_COLUMNS
	},

	/*
	 * A quarantined message's claim row has claimed_at 'infinity': no window
	 * expires it and purge never picks it.  RETURNING tells a trigger's change.
	 */
	[SQL_QUARANTINE] = {
		"INSERT INTO %1$s (message_id, claimed_at) VALUES ($1, 'infinity') "
		"ON CONFLICT (message_id) DO NOTHING RETURNING claimed_at",
		1, {KEY}
	},
	[SQL_QUARANTINE_EXPIRED] = {
		QUARANTINE_EXPIRED_SQL " RETURNING claimed_at",
		2, {KEY, TIMESTAMPTZOID}
	},
	[SQL_UNQUARANTINE] = {
		UNQUARANTINE_SQL,
		1, {KEY}
	},
	[SQL_DISCARD] = {
		DISCARD_SQL,
		1, {KEY}
	},
	[SQL_FORGET] = {
		FORGET_SQL,
		1, {KEY}
	},

	[SQL_SHARDED_CLAIM] = {
		"INSERT INTO %1$s (%2$s, message_id) VALUES ($2, $1) "
		"ON CONFLICT (%2$s, message_id) DO NOTHING RETURNING message_id, %2$s",
		2, {KEY, SHARD}
	},
	[SQL_SHARDED_CLAIM_WINDOW] = {
		"INSERT INTO %1$s AS i (%2$s, message_id) VALUES ($5, $1) "
		"ON CONFLICT (%2$s, message_id) " RENEW_EXPIRED
		"RETURNING message_id, %2$s",
		5, {KEY, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, SHARD}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_CLAIM_MANY] = {
		"INSERT INTO %1$s (%2$s, message_id) "
		"SELECT $2, u.id FROM pg_catalog.unnest($1) AS u(id) ORDER BY 2 "
		"ON CONFLICT (%2$s, message_id) DO NOTHING RETURNING message_id, %2$s",
		2, {KEYS, SHARD}, false, RETURNED_BY_CTE
	},
	[SQL_SHARDED_CLAIM_MANY_WINDOW] = {
		"INSERT INTO %1$s AS i (%2$s, message_id) "
		"SELECT DISTINCT $5, u.id FROM pg_catalog.unnest($1) AS u(id) ORDER BY 2 "
		"ON CONFLICT (%2$s, message_id) " RENEW_EXPIRED
		"RETURNING message_id, %2$s",
		5, {KEYS, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, SHARD}, NEEDS_LEASE_COLUMNS,
		RETURNED_BY_CTE
	},
	[SQL_SHARDED_EXISTS] = {
		"SELECT 1 FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1 "
		"AND %2$s OPERATOR(pg_catalog.=) $2",
		2, {KEY, SHARD}
	},
	[SQL_SHARDED_HELD] = {
		"SELECT 1 FROM %1$s WHERE message_id OPERATOR(pg_catalog.=) $1 "
		"AND %2$s OPERATOR(pg_catalog.=) $4 "
		"AND NOT " EXPIRED,
		4, {KEY, TIMESTAMPTZOID, TIMESTAMPTZOID, SHARD}, NEEDS_LEASE_COLUMNS
	},

	[SQL_ROW] = {
		ROW_SQL,
		1, {KEY}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_ROW] = {
		ROW_SQL SHARD_IS(2),
		2, {KEY, SHARD}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_CLAIM_FULL] = {
		"INSERT INTO %1$s (%2$s, message_id, fingerprint, token, lease_until, holder_pid, "
		"holder_started) VALUES ($7, $1, $2, $3, $4, $5, $6) "
		"ON CONFLICT (%2$s, message_id) DO NOTHING RETURNING message_id, %2$s",
		7, {KEY, BYTEAOID, INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, SHARD},
		NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_RECLAIM] = {
		RECLAIM_SQL SHARD_IS(9),
		9, {KEY, BYTEAOID, INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID,
		TIMESTAMPTZOID, TIMESTAMPTZOID, SHARD}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_TAKEOVER] = {
		TAKEOVER_SQL SHARD_IS(8),
		8, {KEY, BYTEAOID, INT8OID, TIMESTAMPTZOID, INT4OID, TIMESTAMPTZOID, INT8OID, SHARD},
		NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_FINISH] = {
		FINISH_SQL SHARD_IS(4),
		4, {KEY, INT8OID, JSONBOID, SHARD}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_RELEASE] = {
		RELEASE_SQL SHARD_IS(3),
		3, {KEY, INT8OID, SHARD}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_COMPLETE] = {
		COMPLETE_SQL SHARD_IS(3),
		3, {KEY, JSONBOID, SHARD}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_RESULT] = {
		RESULT_SQL SHARD_IS(2),
		2, {KEY, SHARD}, NEEDS_LEASE_COLUMNS
	},
	[SQL_SHARDED_QUARANTINE] = {
		"INSERT INTO %1$s (%2$s, message_id, claimed_at) VALUES ($2, $1, 'infinity') "
		"ON CONFLICT (%2$s, message_id) DO NOTHING RETURNING claimed_at",
		2, {KEY, SHARD}
	},
	[SQL_SHARDED_QUARANTINE_EXPIRED] = {
		QUARANTINE_EXPIRED_SQL SHARD_IS(3) " RETURNING claimed_at",
		3, {KEY, TIMESTAMPTZOID, SHARD}
	},
	[SQL_SHARDED_UNQUARANTINE] = {
		UNQUARANTINE_SQL SHARD_IS(2),
		2, {KEY, SHARD}
	},
	[SQL_SHARDED_DISCARD] = {
		DISCARD_SQL SHARD_IS(2),
		2, {KEY, SHARD}
	},
	[SQL_SHARDED_FORGET] = {
		FORGET_SQL SHARD_IS(2),
		2, {KEY, SHARD}
	},
};

/* A statement about leases or results needs the columns create_inbox makes. */
void
inbox_sql_require_column(const InboxInfo *inbox, InboxColumn column)
{
	if (inbox->columns[column] == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("inbox \"%s\" has no column \"%s\"",
						get_rel_name(inbox->relid), inbox_sql_column_names[column]),
				 errhint("Recreate it with inbox.create_inbox().")));
}

SPIPlanPtr
inbox_sql_plan(InboxInfo *inbox, InboxStatement which)
{
	const StatementTemplate *t = &templates[which];
	Oid			argtypes[MAX_PARAMS];
	char	   *sql;

	if (inbox->plans[which] != NULL)
		return inbox->plans[which];

	if (t->lease_columns)
		for (int c = 0; c < INBOX_NUM_COLUMNS; c++)
			inbox_sql_require_column(inbox, c);

	for (int i = 0; i < t->nargs; i++)
	{
		if (t->argtypes[i] == KEY)
			argtypes[i] = inbox->keytype;
		else if (t->argtypes[i] == KEYS)
			argtypes[i] = get_array_type(inbox->keytype);
		else if (t->argtypes[i] == SHARD)
			argtypes[i] = inbox->shard_type;
		else
			argtypes[i] = t->argtypes[i];
	}
	sql = psprintf(t->sql, inbox->qualname, inbox->shard_column);
	if (t->cte_on_citus && citus_table(inbox->relid))
		sql = psprintf("WITH returned AS (%s) SELECT * FROM returned", sql);
	inbox->plans[which] = spi_prepare_kept(sql, t->nargs, argtypes);
	return inbox->plans[which];
}

/* Run one of the statements; SPI must be connected.  Returns the rows it touched. */
int
inbox_sql_execute(InboxInfo *inbox, InboxStatement which, Datum *values, const char *nulls)
{
	SPIPlanPtr	plan = inbox_sql_plan(inbox, which);
	int			rc = SPI_execute_plan(plan, values, nulls, false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute_plan returned %s", SPI_result_code_string(rc));
	return (int) SPI_processed;
}

/* The statement an inbox with a shard key runs in place of each: its last $n is the shard key. */
static const InboxStatement sharded_forms[SQL_NUM_STATEMENTS] = {
	[SQL_CLAIM] = SQL_SHARDED_CLAIM,
	[SQL_CLAIM_WINDOW] = SQL_SHARDED_CLAIM_WINDOW,
	[SQL_CLAIM_MANY] = SQL_SHARDED_CLAIM_MANY,
	[SQL_CLAIM_MANY_WINDOW] = SQL_SHARDED_CLAIM_MANY_WINDOW,
	[SQL_EXISTS] = SQL_SHARDED_EXISTS,
	[SQL_HELD] = SQL_SHARDED_HELD,
	[SQL_ROW] = SQL_SHARDED_ROW,
	[SQL_CLAIM_FULL] = SQL_SHARDED_CLAIM_FULL,
	[SQL_RECLAIM] = SQL_SHARDED_RECLAIM,
	[SQL_TAKEOVER] = SQL_SHARDED_TAKEOVER,
	[SQL_FINISH] = SQL_SHARDED_FINISH,
	[SQL_RELEASE] = SQL_SHARDED_RELEASE,
	[SQL_COMPLETE] = SQL_SHARDED_COMPLETE,
	[SQL_RESULT] = SQL_SHARDED_RESULT,
	[SQL_QUARANTINE] = SQL_SHARDED_QUARANTINE,
	[SQL_QUARANTINE_EXPIRED] = SQL_SHARDED_QUARANTINE_EXPIRED,
	[SQL_UNQUARANTINE] = SQL_SHARDED_UNQUARANTINE,
	[SQL_DISCARD] = SQL_SHARDED_DISCARD,
	[SQL_FORGET] = SQL_SHARDED_FORGET,
};

/*
 * inbox_sql_execute for one claim: values as the statement without a shard key
 * takes them; with shard (the shard key value of a sharded inbox, NULL for
 * others) its sharded form runs, the value appended.
 */
int
inbox_sql_execute_key(InboxInfo *inbox, InboxStatement which, const Datum *shard,
					  Datum *values, const char *nulls)
{
	InboxStatement sharded = sharded_forms[which];
	Datum		all[MAX_PARAMS];
	char		all_nulls[MAX_PARAMS];
	int			nargs = templates[which].nargs;

	if ((shard != NULL) != (inbox->shard_attnum != InvalidAttrNumber))
		elog(ERROR, "a claim of inbox \"%s\" %s", get_rel_name(inbox->relid),
			 shard ? "has no shard key" : "needs its shard key");
	if (shard == NULL)
		return inbox_sql_execute(inbox, which, values, nulls);
	/* SQL_CLAIM is 0 and has a sharded form: 0 is "none" for the others. */
	if (sharded == SQL_CLAIM && which != SQL_CLAIM)
		elog(ERROR, "statement %d has no sharded form", (int) which);
	memcpy(all, values, nargs * sizeof(Datum));
	if (nulls)
		memcpy(all_nulls, nulls, nargs);
	else
		memset(all_nulls, ' ', nargs);
	all[nargs] = *shard;
	all_nulls[nargs] = ' ';
	return inbox_sql_execute(inbox, sharded, all, all_nulls);
}
