\echo Use "ALTER EXTENSION idempotent_inbox UPDATE TO '0.3'" to load this file. \quit

/*
 * 0.2 to 0.3: sharded inboxes.  The end state is exactly that of CREATE EXTENSION
 * at 0.3 (sql/upgrade.sql compares every member object), and no row of the
 * registry, the positions or any inbox table is touched: every existing inbox has
 * no shard key (NULL).  Written with the rules of idempotent_inbox--0.3.sql.
 */

ALTER TABLE inbox.registry ADD COLUMN shard_key pg_catalog.name;
ALTER TABLE inbox.registry ADD COLUMN max_attempts pg_catalog.int4 NOT NULL DEFAULT 5
    CONSTRAINT registry_max_attempts_check CHECK (max_attempts OPERATOR(pg_catalog.>) 0);
ALTER TABLE inbox.registry ADD COLUMN key_ordering pg_catalog.bool NOT NULL DEFAULT false;

-- New answers for quarantined and blocked messages (0.3); enums only ever gain values.
ALTER TYPE inbox.outcome ADD VALUE 'quarantined';
ALTER TYPE inbox.claim_status ADD VALUE 'quarantined';
ALTER TYPE inbox.claim_status ADD VALUE 'blocked';
ALTER TYPE inbox.lease_status ADD VALUE 'quarantined';
COMMENT ON TYPE inbox.outcome IS
    'result of claim_apply: the effect ran (applied), the id was already claimed (duplicate), or the message is quarantined (quarantined)';
COMMENT ON TYPE inbox.claim_status IS
    'result of try_claim and claim_in_order: claimed now, already claimed and committed, held by another open transaction, quarantined, or (claim_in_order) blocked behind an earlier message of its key';
COMMENT ON TYPE inbox.lease_status IS
    'result of acquire: acquired (run the effect, then finish), in_progress (another live attempt), completed (replay the stored result), quarantined (do not run it)';

CREATE OR REPLACE VIEW inbox.inboxes WITH (security_barrier) AS
    SELECT r.relid AS inbox,
           n.nspname AS schema_name,
           c.relname AS table_name,
           r.key_type,
           r.retention,
           r.created_at,
           r.shard_key,
           r.max_attempts,
           r.key_ordering
      FROM inbox.registry r
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace;

/*
 * Sharded inboxes (0.3): the primary key is (shard key, message_id), so that Citus
 * can distribute the inbox by the shard key and co-locate it with the table its
 * effects write; a claim and its effect then run on one node, in one local
 * transaction.  The constraint named idempotent_inbox marks the table as an inbox
 * on every node: Citus copies it to the workers with the table, where the registry
 * has no row.  The claim functions take the shard key value before the message id.
 */
CREATE FUNCTION inbox.create_sharded_inbox(name pg_catalog.text,
                                           shard_key pg_catalog.text,
                                           shard_key_type pg_catalog.regtype,
                                           key_type pg_catalog.regtype DEFAULT 'pg_catalog.text',
                                           retention pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'inbox_create_sharded_inbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.create_sharded_inbox(pg_catalog.text, pg_catalog.text, pg_catalog.regtype,
                                               pg_catalog.regtype, pg_catalog.interval) IS
    'create an inbox keyed by (shard_key, message_id), to distribute with the table its effects write';

CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.text)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.uuid)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.text) IS
    'claim a message id of a sharded inbox: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.uuid) IS
    'claim a message id of a sharded inbox: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.int8) IS
    'claim a message id of a sharded inbox: true on first delivery, false on a duplicate';

CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.text, statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.text, statement pg_catalog.text,
                                          VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.uuid, statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.uuid, statement pg_catalog.text,
                                          VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.int8, statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply_sharded(inbox pg_catalog.regclass, shard_key "any",
                                          message_id pg_catalog.int8, statement pg_catalog.text,
                                          VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text, "any") IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text, "any") IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement';
COMMENT ON FUNCTION inbox.claim_apply_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text, "any") IS
    'claim a message id of a sharded inbox and, on first delivery only, run the statement with $1..$n bound to args';

CREATE FUNCTION inbox.claim_many_sharded(inbox pg_catalog.regclass, shard_key "any",
                                         message_ids pg_catalog.text[])
RETURNS SETOF pg_catalog.text AS 'MODULE_PATHNAME', 'inbox_claim_many_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_many_sharded(inbox pg_catalog.regclass, shard_key "any",
                                         message_ids pg_catalog.uuid[])
RETURNS SETOF pg_catalog.uuid AS 'MODULE_PATHNAME', 'inbox_claim_many_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_many_sharded(inbox pg_catalog.regclass, shard_key "any",
                                         message_ids pg_catalog.int8[])
RETURNS SETOF pg_catalog.int8 AS 'MODULE_PATHNAME', 'inbox_claim_many_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION inbox.claim_many_sharded(pg_catalog.regclass, "any", pg_catalog.text[]) IS
    'claim a batch of one shard key value; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION inbox.claim_many_sharded(pg_catalog.regclass, "any", pg_catalog.uuid[]) IS
    'claim a batch of one shard key value; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION inbox.claim_many_sharded(pg_catalog.regclass, "any", pg_catalog.int8[]) IS
    'claim a batch of one shard key value; returns the fresh ids in input order, each once';

/*
 * Stored columns of sharded inboxes (0.3): try_claim, fingerprinted claims,
 * stored results and leases in the _sharded forms, which take the shard key
 * value before the id, as claim_sharded does.  On Citus each is one statement
 * (or a few) that Citus sends to the shard holding the key, and runs locally in
 * a function delegated to that shard's worker.
 */
CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.text, fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.uuid, fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.int8, fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_sharded'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.bytea) IS
    'claim a message id of a sharded inbox with a request fingerprint: true on first delivery, false on a duplicate, an error for another payload';
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.bytea) IS
    'claim a message id of a sharded inbox with a request fingerprint: true on first delivery, false on a duplicate, an error for another payload';
COMMENT ON FUNCTION inbox.claim_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.bytea) IS
    'claim a message id of a sharded inbox with a request fingerprint: true on first delivery, false on a duplicate, an error for another payload';
CREATE FUNCTION inbox.try_claim_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.try_claim_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.uuid)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.try_claim_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.int8)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.try_claim_sharded(pg_catalog.regclass, "any", pg_catalog.text) IS
    'try_claim of a sharded inbox: claimed, duplicate, in_progress or quarantined';
COMMENT ON FUNCTION inbox.try_claim_sharded(pg_catalog.regclass, "any", pg_catalog.uuid) IS
    'try_claim of a sharded inbox: claimed, duplicate, in_progress or quarantined';
COMMENT ON FUNCTION inbox.try_claim_sharded(pg_catalog.regclass, "any", pg_catalog.int8) IS
    'try_claim of a sharded inbox: claimed, duplicate, in_progress or quarantined';
CREATE FUNCTION inbox.complete_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.text, result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.complete_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.uuid, result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.complete_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.int8, result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.complete_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.jsonb) IS
    'store the result of a message claimed in this transaction in a sharded inbox, for duplicates to replay';
COMMENT ON FUNCTION inbox.complete_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.jsonb) IS
    'store the result of a message claimed in this transaction in a sharded inbox, for duplicates to replay';
COMMENT ON FUNCTION inbox.complete_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.jsonb) IS
    'store the result of a message claimed in this transaction in a sharded inbox, for duplicates to replay';
CREATE FUNCTION inbox.result_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.text)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.result_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.uuid)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.result_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_id pg_catalog.int8)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.result_sharded(pg_catalog.regclass, "any", pg_catalog.text) IS
    'the stored result of a claimed message of a sharded inbox, or NULL';
COMMENT ON FUNCTION inbox.result_sharded(pg_catalog.regclass, "any", pg_catalog.uuid) IS
    'the stored result of a claimed message of a sharded inbox, or NULL';
COMMENT ON FUNCTION inbox.result_sharded(pg_catalog.regclass, "any", pg_catalog.int8) IS
    'the stored result of a claimed message of a sharded inbox, or NULL';
CREATE FUNCTION inbox.acquire_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.text, lease pg_catalog.interval,
    fingerprint pg_catalog.bytea DEFAULT NULL,
    session_bound boolean DEFAULT false,
    OUT status inbox.lease_status, OUT token pg_catalog.int8,
    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.acquire_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.uuid, lease pg_catalog.interval,
    fingerprint pg_catalog.bytea DEFAULT NULL,
    session_bound boolean DEFAULT false,
    OUT status inbox.lease_status, OUT token pg_catalog.int8,
    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.acquire_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.int8, lease pg_catalog.interval,
    fingerprint pg_catalog.bytea DEFAULT NULL,
    session_bound boolean DEFAULT false,
    OUT status inbox.lease_status, OUT token pg_catalog.int8,
    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.acquire_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'acquire of a sharded inbox: take a lease on an idempotency key, commit, then run the outside effect';
COMMENT ON FUNCTION inbox.acquire_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'acquire of a sharded inbox: take a lease on an idempotency key, commit, then run the outside effect';
COMMENT ON FUNCTION inbox.acquire_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'acquire of a sharded inbox: take a lease on an idempotency key, commit, then run the outside effect';
CREATE FUNCTION inbox.finish_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.text, token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.finish_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.uuid, token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.finish_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.int8, token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.finish_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.int8, pg_catalog.jsonb) IS
    'finish of a sharded inbox: store the result of a leased attempt, checked by its token';
COMMENT ON FUNCTION inbox.finish_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.int8, pg_catalog.jsonb) IS
    'finish of a sharded inbox: store the result of a leased attempt, checked by its token';
COMMENT ON FUNCTION inbox.finish_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.int8, pg_catalog.jsonb) IS
    'finish of a sharded inbox: store the result of a leased attempt, checked by its token';
CREATE FUNCTION inbox.release_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.text, token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.release_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.uuid, token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.release_sharded(inbox pg_catalog.regclass, shard_key "any",
    key pg_catalog.int8, token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.release_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.int8) IS
    'release of a sharded inbox: forget a leased attempt, checked by its token, so a retry may run';
COMMENT ON FUNCTION inbox.release_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.int8) IS
    'release of a sharded inbox: forget a leased attempt, checked by its token, so a retry may run';
COMMENT ON FUNCTION inbox.release_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.int8) IS
    'release of a sharded inbox: forget a leased attempt, checked by its token, so a retry may run';

/*
 * claim_apply_many_sharded (0.3): claim_apply_many for a poll whose messages share
 * a shard key value, which it takes before the ids.
 */
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.text[], statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.text[], statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.text[], statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.uuid[], statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.uuid[], statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.uuid[], statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.int8[], statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.int8[], statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.int8[], statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.text, statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.text, statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many_sharded(inbox pg_catalog.regclass, shard_key "any",
    message_ids pg_catalog.text, statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.text[], pg_catalog.text) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.text[], pg_catalog.text, "any") IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.text[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.uuid[], pg_catalog.text) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.uuid[], pg_catalog.text, "any") IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.uuid[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.int8[], pg_catalog.text) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.int8[], pg_catalog.text, "any") IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.int8[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text, "any") IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';
COMMENT ON FUNCTION inbox.claim_apply_many_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch of one shard key value and run the statement once over the fresh ids ($1) and the values kept beside them ($2..)';

-- 0.2 said only create_inbox and drop_inbox write the registry; set_retention, the drop
-- event trigger and create_sharded_inbox write it too.
COMMENT ON TABLE inbox.registry IS
    'one row per inbox table; written only by the extension''s functions and its drop event trigger';

/*
 * claim_apply_many: a consumer's poll in one call.  Every id is claimed as by
 * claim_many, and the statement runs once over the fresh messages only: $1 is the
 * array of fresh ids (of the inbox's key type, in input order, each once), and
 * each further argument is an array with one element per id, which reaches the
 * statement as $2, $3, ... cut down to the same positions.  One row per id comes
 * back, in input order: applied for the first occurrence of a fresh id, duplicate
 * otherwise.  The variadic shapes are claim_apply's; message_ids may also be an
 * array literal, as drivers send arrays.
 */
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[],
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[],
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[],
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[],
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[],
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[],
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.uuid, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[],
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[],
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[],
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.int8, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text,
                                       statement pg_catalog.text)
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text,
                                       statement pg_catalog.text, VARIADIC args "any")
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_apply_many(inbox pg_catalog.regclass, message_ids pg_catalog.text,
                                       statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS TABLE (message_id pg_catalog.text, outcome inbox.outcome) AS 'MODULE_PATHNAME', 'inbox_claim_apply_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text[], pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text[], pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.uuid[], pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.uuid[], pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.uuid[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.int8[], pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.int8[], pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.int8[], pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'claim a batch and run the statement once over the fresh ids ($1); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, "any") IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values ($2..$n, arrays cut to the same positions); one row per id, applied or duplicate';
COMMENT ON FUNCTION inbox.claim_apply_many(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text[]) IS
    'claim a batch and run the statement once over the fresh ids ($1) and their values, untyped arrays converted to the types of $2..$n; one row per id, applied or duplicate';

-- The row named by the value of its table's primary key (a single column).  "any",
-- not anyelement, so that an untyped literal (or driver parameter) is read by the
-- key column type's input function, as the jsonb form reads a string; a value of
-- another type is cast as an INSERT would.  Not an overload of transition: with one,
-- every call passing an untyped jsonb literal would be ambiguous.
CREATE FUNCTION inbox.transition_key(target pg_catalog.regclass, key "any",
                                           state_column pg_catalog.text,
                                           from_states pg_catalog.text[], to_state pg_catalog.text)
RETURNS inbox.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition_key'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.transition_key(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text[], pg_catalog.text) IS
    'move the row with this primary key value to to_state if it is in one of from_states (NULL: the states the column''s machine allows)';

CREATE FUNCTION inbox.transition_key(target pg_catalog.regclass, key "any",
                                           state_column pg_catalog.text, to_state pg_catalog.text)
RETURNS inbox.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition_key'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.transition_key(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'move the row with this primary key value to to_state from any state the column''s machine allows';

-- The event trigger finds the registry and the positions in its own schema when it
-- runs (C), not by the name the schema had when it was created (PL/pgSQL): after
-- ALTER SCHEMA inbox RENAME, every DROP TABLE in the database failed, and a table
-- created under the old name would have been written with the owner's rights.
CREATE OR REPLACE FUNCTION inbox.forget_dropped_inboxes()
RETURNS event_trigger AS 'MODULE_PATHNAME', 'inbox_forget_dropped_inboxes'
LANGUAGE C SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

-- It runs for every command that drops objects: a table also goes with DROP TYPE
-- ... CASCADE (a typed table), DROP EXTENSION of another extension, and others,
-- which left registry rows naming no table (and the purge worker failing on them).
DROP EVENT TRIGGER idempotent_inbox_forget_dropped;
CREATE EVENT TRIGGER idempotent_inbox_forget_dropped
    ON sql_drop
    EXECUTE FUNCTION inbox.forget_dropped_inboxes();

/*
 * Consumer groups (0.3): a fencing generation per partition, offsets completed out
 * of order above the watermark, and the resume points of a topic.  Every stored
 * position stays as it is: a NULL offset (a partition fenced or claimed out of
 * order before anything below it was applied) and the generation are new.
 */
ALTER TABLE inbox.positions ALTER COLUMN "offset" DROP NOT NULL;
ALTER TABLE inbox.positions ADD COLUMN generation pg_catalog.int8
    CONSTRAINT positions_generation_check CHECK (generation OPERATOR(pg_catalog.>=) 0);
COMMENT ON TABLE inbox.positions IS
    'per inbox, topic and partition: the offset up to which every message is applied (NULL: none yet) and the fencing generation; written only by advance, claim_offset and fence';
COMMENT ON FUNCTION inbox.position(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4) IS
    'the watermark of the partition: every offset up to it is applied (NULL if none); seek to the next one after a restart';

/*
 * Gaps (0.3): offsets completed above a partition's watermark, one row each, by
 * consumers that finish a partition's messages out of order (claim_offset).  The
 * completion of the offset just after the watermark moves it past every
 * contiguous entry here and deletes them; "previous" is the offset delivered
 * before this one, so that a partition whose offsets skip (compaction, Kafka's
 * transaction markers) still closes up.  At most
 * idempotent_inbox.max_completed_offsets entries per partition.
 */
CREATE TABLE inbox.completed_offsets (
    inbox        pg_catalog.regclass NOT NULL,
    topic        pg_catalog.text NOT NULL,
    "partition"  pg_catalog.int4 NOT NULL,
    "offset"     pg_catalog.int8 NOT NULL
                 CONSTRAINT completed_offsets_offset_check CHECK ("offset" OPERATOR(pg_catalog.>=) 0),
    previous     pg_catalog.int8 NOT NULL
                 CONSTRAINT completed_offsets_previous_check
                 CHECK (previous OPERATOR(pg_catalog.>=) -1 AND previous OPERATOR(pg_catalog.<) "offset"),
    completed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (inbox, topic, "partition", "offset")
);
COMMENT ON TABLE inbox.completed_offsets IS
    'offsets applied above the watermark of their partition; written only by claim_offset and advance';
SELECT pg_catalog.pg_extension_config_dump('inbox.completed_offsets', '');

/*
 * Each partition's watermark: the stored offset, moved past the entries above it
 * that follow on without a gap.  The completion that closes a gap moves the
 * stored offset itself, unless another transaction's entry it follows on from was
 * not committed yet; the next completion then moves it.  So readers take the
 * watermark from here.  Not for PUBLIC: inbox.streams filters it by the caller's
 * rights.  A break is an entry whose previous offset is past the entry before it
 * (or the stored offset); brk counts the breaks so far.
 */
CREATE VIEW inbox.partition_progress WITH (security_barrier) AS
    SELECT p.inbox, p.topic, p."partition",
           p."offset" AS stored_offset,
           COALESCE(s.absorbed, p."offset") AS watermark,
           p.generation, p.advanced_at,
           s.completed_above, s.gaps, s.completed
      FROM inbox.positions p,
           LATERAL (SELECT pg_catalog.max(y."offset") FILTER (WHERE y.brk OPERATOR(pg_catalog.=) 0) AS absorbed,
                           pg_catalog.count(*) FILTER (WHERE y.brk OPERATOR(pg_catalog.>) 0) AS completed_above,
                           COALESCE(pg_catalog.max(y.brk), 0) AS gaps,
                           COALESCE(pg_catalog.array_agg(y."offset" ORDER BY y."offset")
                                    FILTER (WHERE y.brk OPERATOR(pg_catalog.>) 0),
                                    '{}') AS completed
                      FROM (SELECT x."offset", pg_catalog.sum(x.b) OVER (ORDER BY x."offset") AS brk
                              FROM (SELECT c."offset",
                                           (c.previous OPERATOR(pg_catalog.>)
                                            COALESCE(pg_catalog.lag(c."offset") OVER (ORDER BY c."offset"),
                                                     p."offset", -1))::pg_catalog.int4 AS b
                                      FROM inbox.completed_offsets c
                                     WHERE c.inbox OPERATOR(pg_catalog.=) p.inbox
                                       AND c.topic OPERATOR(pg_catalog.=) p.topic
                                       AND c."partition" OPERATOR(pg_catalog.=) p."partition"
                                       AND c."offset" OPERATOR(pg_catalog.>) COALESCE(p."offset", -1)) x) y) s;
COMMENT ON VIEW inbox.partition_progress IS
    'every partition''s watermark, generation and offsets completed above it, for the extension''s functions';

-- Everyone sees the positions of the inboxes they may read.
-- has_table_privilege is NULL for a table that no longer exists: such rows are skipped.
CREATE OR REPLACE VIEW inbox.streams WITH (security_barrier) AS
    SELECT p.inbox, p.topic, p."partition", p.watermark AS "offset", p.advanced_at,
           p.generation, p.completed_above, p.gaps
      FROM inbox.partition_progress p
     WHERE pg_catalog.has_table_privilege(p.inbox::pg_catalog.oid, 'SELECT');
COMMENT ON VIEW inbox.streams IS
    'the partitions of the inboxes you may read: watermark, fencing generation, offsets completed above the watermark and the gaps between them';
GRANT SELECT ON inbox.streams TO PUBLIC;

-- Generations (0.3): fencing a partition against a consumer that lost it.
CREATE FUNCTION inbox.advance(inbox pg_catalog.regclass, topic pg_catalog.text,
                              "partition" pg_catalog.int4, "offset" pg_catalog.int8,
                              generation pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_advance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.advance(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.int8) IS
    'advance, refused (55I02) if the partition belongs to a newer generation; a newer one takes it over';

CREATE FUNCTION inbox.fence(inbox pg_catalog.regclass, topic pg_catalog.text,
                            "partition" pg_catalog.int4, generation pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_fence'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.fence(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8) IS
    'hold the partition for generation until commit, before claims: true if it took the partition over, false if it had it; 55I02 if a newer generation has it';

CREATE FUNCTION inbox.claim_offset(inbox pg_catalog.regclass, topic pg_catalog.text,
                                   "partition" pg_catalog.int4, "offset" pg_catalog.int8,
                                   generation pg_catalog.int8 DEFAULT NULL,
                                   previous pg_catalog.int8 DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim_offset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_offset(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8, pg_catalog.int8, pg_catalog.int8) IS
    'record one offset as applied in this transaction, in any order: true if fresh, false if at or below the watermark or completed already';

CREATE FUNCTION inbox.resume_points(inbox pg_catalog.regclass, topic pg_catalog.text,
                                    OUT "partition" pg_catalog.int4, OUT "offset" pg_catalog.int8,
                                    OUT seek_to pg_catalog.int8, OUT generation pg_catalog.int8,
                                    OUT completed pg_catalog.int8[])
RETURNS SETOF record AS 'MODULE_PATHNAME', 'inbox_resume_points'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.resume_points(pg_catalog.regclass, pg_catalog.text) IS
    'every stored partition of the topic: watermark, where to seek, generation, and the offsets completed above the watermark (skip them)';

/*
 * Failures and quarantine (0.3).  A consumer whose effect failed rolls back and
 * records the failure in a transaction of its own (record_failure): attempts are
 * counted per message, and at the inbox's max_attempts the message is
 * quarantined.  A quarantined message holds a claim row whose claimed_at is
 * 'infinity': every claim answers it without running the effect (claim and
 * claim_many as a duplicate, the others 'quarantined'), no retention window
 * expires it and purge never removes it.  The operator's verbs (retry, discard,
 * forget) change claims on purpose and leave a row in audit_log each.
 * Neither table is for PUBLIC: inbox.quarantine and inbox.audit show the rows of
 * the inboxes the caller may read.
 */
CREATE TABLE inbox.failures (
    inbox           pg_catalog.regclass NOT NULL,
    message_id      pg_catalog.text NOT NULL,
    shard_key       pg_catalog.text,
    ordering_key    pg_catalog.text,
    attempts        pg_catalog.int4 NOT NULL
                    CONSTRAINT failures_attempts_check CHECK (attempts OPERATOR(pg_catalog.>=) 0),
    last_error      pg_catalog.text NOT NULL,
    first_failed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_failed_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    quarantined_at  pg_catalog.timestamptz,
    CONSTRAINT failures_message_key UNIQUE NULLS NOT DISTINCT (inbox, message_id, shard_key)
);
CREATE INDEX failures_ordering_key_idx ON inbox.failures (inbox, shard_key, ordering_key)
    WHERE ordering_key IS NOT NULL;
COMMENT ON TABLE inbox.failures IS
    'failed attempts per message, by (message_id, shard_key) with shard_key NULL unless the inbox is sharded (0 after a retry, until a delivery applies it), and the quarantined messages; written only by record_failure, claim_in_order, retry, discard, forget, purge and the drop event trigger';
SELECT pg_catalog.pg_extension_config_dump('inbox.failures', '');

-- The messages claim_in_order turned away while an earlier one of their key held it.
-- blocked_by is a message of the same shard key: a sharded inbox orders a key
-- within one shard key value.
CREATE TABLE inbox.blocked (
    inbox           pg_catalog.regclass NOT NULL,
    message_id      pg_catalog.text NOT NULL,
    shard_key       pg_catalog.text,
    ordering_key    pg_catalog.text NOT NULL,
    blocked_by      pg_catalog.text NOT NULL,
    first_blocked_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    last_blocked_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    deliveries      pg_catalog.int4 NOT NULL DEFAULT 1,
    CONSTRAINT blocked_message_key UNIQUE NULLS NOT DISTINCT (inbox, message_id, shard_key)
);
CREATE INDEX blocked_ordering_key_idx ON inbox.blocked (inbox, shard_key, ordering_key, first_blocked_at);
COMMENT ON TABLE inbox.blocked IS
    'messages claim_in_order answered blocked, until a claim of theirs or a verb on them; written only by claim_in_order, the verbs, purge and the drop event trigger';
SELECT pg_catalog.pg_extension_config_dump('inbox.blocked', '');

CREATE TABLE inbox.audit_log (
    inbox       pg_catalog.regclass NOT NULL,
    message_id  pg_catalog.text NOT NULL,
    shard_key   pg_catalog.text,
    verb        pg_catalog.text NOT NULL
                CONSTRAINT audit_log_verb_check
                CHECK (verb OPERATOR(pg_catalog.=) ANY (ARRAY['retry', 'discard', 'forget'])),
    actor       pg_catalog.name NOT NULL,
    reason      pg_catalog.text,
    done_at     pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    attempts    pg_catalog.int4,
    last_error  pg_catalog.text
);
CREATE INDEX audit_log_inbox_idx ON inbox.audit_log (inbox, done_at);
COMMENT ON TABLE inbox.audit_log IS
    'who retried, discarded or forgot which message, when and why; written only by those verbs and the drop event trigger';
SELECT pg_catalog.pg_extension_config_dump('inbox.audit_log', '');

CREATE TYPE inbox.failure_status AS ENUM ('retry', 'quarantined', 'applied');
COMMENT ON TYPE inbox.failure_status IS
    'result of record_failure: retry (redeliver it), quarantined (acknowledge it: claims will not run it), applied (another delivery applied it meanwhile; nothing was recorded)';

CREATE FUNCTION inbox.record_failure(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                     error pg_catalog.text, ordering_key pg_catalog.text DEFAULT NULL,
                                     OUT status inbox.failure_status, OUT attempts pg_catalog.int4)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_record_failure'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.record_failure(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                     error pg_catalog.text, ordering_key pg_catalog.text DEFAULT NULL,
                                     OUT status inbox.failure_status, OUT attempts pg_catalog.int4)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_record_failure'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.record_failure(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                     error pg_catalog.text, ordering_key pg_catalog.text DEFAULT NULL,
                                     OUT status inbox.failure_status, OUT attempts pg_catalog.int4)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_record_failure'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.record_failure(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text) IS
    'after a failed attempt rolled back, in a transaction of its own: count it, and quarantine the message at the inbox''s max_attempts';
COMMENT ON FUNCTION inbox.record_failure(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text, pg_catalog.text) IS
    'after a failed attempt rolled back, in a transaction of its own: count it, and quarantine the message at the inbox''s max_attempts';
COMMENT ON FUNCTION inbox.record_failure(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text, pg_catalog.text) IS
    'after a failed attempt rolled back, in a transaction of its own: count it, and quarantine the message at the inbox''s max_attempts';

CREATE FUNCTION inbox.retry(inbox pg_catalog.regclass, message_id pg_catalog.text,
                            reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.retry(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                            reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.retry(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                            reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.retry(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'end a message''s quarantine and forget its attempts, so that its next delivery runs; false if it was not quarantined';
COMMENT ON FUNCTION inbox.retry(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) IS
    'end a message''s quarantine and forget its attempts, so that its next delivery runs; false if it was not quarantined';
COMMENT ON FUNCTION inbox.retry(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) IS
    'end a message''s quarantine and forget its attempts, so that its next delivery runs; false if it was not quarantined';

CREATE FUNCTION inbox.discard(inbox pg_catalog.regclass, message_id pg_catalog.text,
                              reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_discard'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.discard(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                              reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_discard'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.discard(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                              reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_discard'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.discard(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'mark a message applied without running it (quarantined or not yet claimed); false if it was applied already';
COMMENT ON FUNCTION inbox.discard(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) IS
    'mark a message applied without running it (quarantined or not yet claimed); false if it was applied already';
COMMENT ON FUNCTION inbox.discard(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) IS
    'mark a message applied without running it (quarantined or not yet claimed); false if it was applied already';

CREATE FUNCTION inbox.forget(inbox pg_catalog.regclass, message_id pg_catalog.text,
                             reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_forget'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.forget(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                             reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_forget'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.forget(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                             reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_forget'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.forget(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'delete a message''s claim (applied or quarantined) and its attempts, so that its next delivery runs again; false if it had none';
COMMENT ON FUNCTION inbox.forget(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) IS
    'delete a message''s claim (applied or quarantined) and its attempts, so that its next delivery runs again; false if it had none';
COMMENT ON FUNCTION inbox.forget(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) IS
    'delete a message''s claim (applied or quarantined) and its attempts, so that its next delivery runs again; false if it had none';

CREATE FUNCTION inbox.set_max_attempts(inbox pg_catalog.regclass, max_attempts pg_catalog.int4)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_set_max_attempts'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.set_max_attempts(pg_catalog.regclass, pg_catalog.int4) IS
    'change after how many failed attempts record_failure quarantines a message of the inbox; owner only';

CREATE FUNCTION inbox.set_key_ordering(inbox pg_catalog.regclass, enabled pg_catalog.bool)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_set_key_ordering'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.set_key_ordering(pg_catalog.regclass, pg_catalog.bool) IS
    'let claim_in_order be used on the inbox (true) or not; owner only';

-- A sharded inbox that Citus distributes keeps its failures, blocked, audit and
-- key-lock rows in four tables beside it, distributed by the shard key and
-- co-located with it, so that the workers' calls and a shard move keep them.
CREATE FUNCTION inbox.distribute_failures(inbox pg_catalog.regclass)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_distribute_failures'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.distribute_failures(pg_catalog.regclass) IS
    'on a Citus coordinator, make the tables <inbox>_failures, _blocked, _audit and _keys that keep the failures of a sharded inbox distributed by its shard key, co-located with it; owner only';

CREATE FUNCTION inbox.claim_in_order(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                     ordering_key pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_claim_in_order'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_in_order(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                     ordering_key pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_claim_in_order'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_in_order(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                     ordering_key pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_claim_in_order'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_in_order(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'try_claim, in the order of a key: blocked while an earlier message of the key is failing, quarantined or retried and not yet applied';
COMMENT ON FUNCTION inbox.claim_in_order(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) IS
    'try_claim, in the order of a key: blocked while an earlier message of the key is failing, quarantined or retried and not yet applied';
COMMENT ON FUNCTION inbox.claim_in_order(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) IS
    'try_claim, in the order of a key: blocked while an earlier message of the key is failing, quarantined or retried and not yet applied';

-- Like purge and set_retention, these decide what runs again: the operator's call.
REVOKE ALL ON FUNCTION inbox.retry(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.retry(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.retry(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.discard(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.discard(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.discard(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.forget(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.forget(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.forget(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.set_max_attempts(pg_catalog.regclass, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.set_key_ordering(pg_catalog.regclass, pg_catalog.bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.distribute_failures(pg_catalog.regclass) FROM PUBLIC;

/*
 * The _sharded forms of the failure functions, for an inbox with a shard key:
 * the shard key value second, before the message id, as every _sharded form
 * takes it.  Their rows in failures, blocked and audit_log carry the shard key
 * as text.  A sharded inbox orders a key within one shard key value.
 */
CREATE FUNCTION inbox.record_failure_sharded(inbox pg_catalog.regclass, shard_key "any",
                                             message_id pg_catalog.text,
                                             error pg_catalog.text, ordering_key pg_catalog.text DEFAULT NULL,
                                             OUT status inbox.failure_status, OUT attempts pg_catalog.int4)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_record_failure'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.record_failure_sharded(inbox pg_catalog.regclass, shard_key "any",
                                             message_id pg_catalog.uuid,
                                             error pg_catalog.text, ordering_key pg_catalog.text DEFAULT NULL,
                                             OUT status inbox.failure_status, OUT attempts pg_catalog.int4)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_record_failure'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.record_failure_sharded(inbox pg_catalog.regclass, shard_key "any",
                                             message_id pg_catalog.int8,
                                             error pg_catalog.text, ordering_key pg_catalog.text DEFAULT NULL,
                                             OUT status inbox.failure_status, OUT attempts pg_catalog.int4)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_record_failure'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.record_failure_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text, pg_catalog.text) IS
    'record_failure of a sharded inbox: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.record_failure_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text, pg_catalog.text) IS
    'record_failure of a sharded inbox: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.record_failure_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text, pg_catalog.text) IS
    'record_failure of a sharded inbox: the shard key value, then the message id';

CREATE FUNCTION inbox.retry_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.text,
                                    reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.retry_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.uuid,
                                    reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.retry_sharded(inbox pg_catalog.regclass, shard_key "any",
                                    message_id pg_catalog.int8,
                                    reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_retry'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.retry_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'retry of a sharded inbox''s message: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.retry_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) IS
    'retry of a sharded inbox''s message: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.retry_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) IS
    'retry of a sharded inbox''s message: the shard key value, then the message id';

CREATE FUNCTION inbox.discard_sharded(inbox pg_catalog.regclass, shard_key "any",
                                      message_id pg_catalog.text,
                                      reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_discard'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.discard_sharded(inbox pg_catalog.regclass, shard_key "any",
                                      message_id pg_catalog.uuid,
                                      reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_discard'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.discard_sharded(inbox pg_catalog.regclass, shard_key "any",
                                      message_id pg_catalog.int8,
                                      reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_discard'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.discard_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'discard of a sharded inbox''s message: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.discard_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) IS
    'discard of a sharded inbox''s message: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.discard_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) IS
    'discard of a sharded inbox''s message: the shard key value, then the message id';

CREATE FUNCTION inbox.forget_sharded(inbox pg_catalog.regclass, shard_key "any",
                                     message_id pg_catalog.text,
                                     reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_forget'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.forget_sharded(inbox pg_catalog.regclass, shard_key "any",
                                     message_id pg_catalog.uuid,
                                     reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_forget'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.forget_sharded(inbox pg_catalog.regclass, shard_key "any",
                                     message_id pg_catalog.int8,
                                     reason pg_catalog.text DEFAULT NULL)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_forget'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.forget_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'forget of a sharded inbox''s message: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.forget_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) IS
    'forget of a sharded inbox''s message: the shard key value, then the message id';
COMMENT ON FUNCTION inbox.forget_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) IS
    'forget of a sharded inbox''s message: the shard key value, then the message id';

CREATE FUNCTION inbox.claim_in_order_sharded(inbox pg_catalog.regclass, shard_key "any",
                                             message_id pg_catalog.text,
                                             ordering_key pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_claim_in_order'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_in_order_sharded(inbox pg_catalog.regclass, shard_key "any",
                                             message_id pg_catalog.uuid,
                                             ordering_key pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_claim_in_order'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_in_order_sharded(inbox pg_catalog.regclass, shard_key "any",
                                             message_id pg_catalog.int8,
                                             ordering_key pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_claim_in_order'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim_in_order_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) IS
    'claim_in_order of a sharded inbox: the shard key value, then the message id; a key is ordered within one shard key value';
COMMENT ON FUNCTION inbox.claim_in_order_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) IS
    'claim_in_order of a sharded inbox: the shard key value, then the message id; a key is ordered within one shard key value';
COMMENT ON FUNCTION inbox.claim_in_order_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) IS
    'claim_in_order of a sharded inbox: the shard key value, then the message id; a key is ordered within one shard key value';

REVOKE ALL ON FUNCTION inbox.retry_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.retry_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.retry_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.discard_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.discard_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.discard_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.forget_sharded(pg_catalog.regclass, "any", pg_catalog.text, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.forget_sharded(pg_catalog.regclass, "any", pg_catalog.uuid, pg_catalog.text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.forget_sharded(pg_catalog.regclass, "any", pg_catalog.int8, pg_catalog.text) FROM PUBLIC;

-- The rows of the Citus inboxes' failures tables (distribute_failures), in the
-- columns of the extension's tables, of the inboxes the caller may read (of all,
-- or of one, which the caller must be allowed to read): what the views add to the
-- extension's own rows.
CREATE FUNCTION inbox.citus_failures(inbox pg_catalog.regclass DEFAULT NULL)
RETURNS SETOF inbox.failures AS 'MODULE_PATHNAME', 'inbox_citus_failures'
LANGUAGE C STABLE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION inbox.citus_failures(pg_catalog.regclass) IS
    'the failures rows of Citus inboxes you may read, from their <inbox>_failures tables, in the columns of inbox.failures';
CREATE FUNCTION inbox.citus_blocked(inbox pg_catalog.regclass DEFAULT NULL)
RETURNS SETOF inbox.blocked AS 'MODULE_PATHNAME', 'inbox_citus_blocked'
LANGUAGE C STABLE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION inbox.citus_blocked(pg_catalog.regclass) IS
    'the blocked rows of Citus inboxes you may read, from their <inbox>_blocked tables, in the columns of inbox.blocked';
CREATE FUNCTION inbox.citus_audit_log(inbox pg_catalog.regclass DEFAULT NULL)
RETURNS SETOF inbox.audit_log AS 'MODULE_PATHNAME', 'inbox_citus_audit_log'
LANGUAGE C STABLE PARALLEL UNSAFE ROWS 10;
COMMENT ON FUNCTION inbox.citus_audit_log(pg_catalog.regclass) IS
    'the audit rows of Citus inboxes you may read, from their <inbox>_audit tables, in the columns of inbox.audit_log';

-- has_table_privilege is NULL for a table that no longer exists: such rows are skipped.
-- Within a key, position orders the messages as they hold it: the failing,
-- quarantined or retried one first, then those blocked behind it.
CREATE VIEW inbox.quarantine WITH (security_barrier) AS
    WITH f AS (SELECT * FROM inbox.failures UNION ALL SELECT * FROM inbox.citus_failures()),
         b AS (SELECT * FROM inbox.blocked UNION ALL SELECT * FROM inbox.citus_blocked())
    SELECT m.inbox, m.message_id, m.shard_key, m.ordering_key, m.state,
           CASE WHEN m.ordering_key IS NOT NULL
                THEN pg_catalog.row_number() OVER (PARTITION BY m.inbox, m.shard_key, m.ordering_key
                                                   ORDER BY m.held, m.since, m.message_id)
           END AS position,
           m.blocked_by, m.attempts, m.last_error, m.first_failed_at, m.last_failed_at,
           m.quarantined_at, m.first_blocked_at, m.deliveries
      FROM (SELECT f.inbox, f.message_id, f.shard_key, f.ordering_key,
                   CASE WHEN f.quarantined_at IS NOT NULL THEN 'quarantined'
                        WHEN f.attempts OPERATOR(pg_catalog.=) 0 THEN 'retried'
                        ELSE 'failing' END AS state,
                   0 AS held, f.first_failed_at AS since, NULL::pg_catalog.text AS blocked_by,
                   f.attempts, f.last_error, f.first_failed_at, f.last_failed_at,
                   f.quarantined_at, NULL::pg_catalog.timestamptz AS first_blocked_at,
                   NULL::pg_catalog.int4 AS deliveries
              FROM f
             UNION ALL
            SELECT b.inbox, b.message_id, b.shard_key, b.ordering_key, 'blocked', 1, b.first_blocked_at,
                   b.blocked_by, NULL, NULL, NULL, NULL, NULL, b.first_blocked_at, b.deliveries
              FROM b
             WHERE NOT EXISTS (SELECT 1 FROM f
                                WHERE f.inbox OPERATOR(pg_catalog.=) b.inbox
                                  AND f.message_id OPERATOR(pg_catalog.=) b.message_id
                                  AND f.shard_key IS NOT DISTINCT FROM b.shard_key)) m
     WHERE pg_catalog.has_table_privilege(m.inbox::pg_catalog.oid, 'SELECT');
COMMENT ON VIEW inbox.quarantine IS
    'the messages of the inboxes you may read that failed (failing, quarantined, retried and not yet applied) or wait behind one of their key (blocked), in each key''s order, with attempts and last error';
GRANT SELECT ON inbox.quarantine TO PUBLIC;

CREATE VIEW inbox.audit WITH (security_barrier) AS
    SELECT a.inbox, a.message_id, a.shard_key, a.verb, a.actor, a.reason, a.done_at, a.attempts, a.last_error
      FROM (SELECT * FROM inbox.audit_log UNION ALL SELECT * FROM inbox.citus_audit_log()) a
     WHERE pg_catalog.has_table_privilege(a.inbox::pg_catalog.oid, 'SELECT');
COMMENT ON VIEW inbox.audit IS
    'who retried, discarded or forgot which message of the inboxes you may read, when and why';
GRANT SELECT ON inbox.audit TO PUBLIC;

CREATE OR REPLACE VIEW inbox.stats WITH (security_barrier) AS
    SELECT r.relid AS inbox,
           c.claims,
           c.duplicates,
           c.in_progress,
           c.fingerprint_conflicts,
           c.takeovers,
           c.purged,
           inbox.oldest_claim(r.relid) AS oldest_claim,
           q.quarantined, q.blocked, q.retried, q.discarded, q.forgotten
      FROM inbox.registry r
     CROSS JOIN LATERAL inbox.live_counters(r.relid) c
      LEFT JOIN LATERAL (
           SELECT (SELECT pg_catalog.count(*)
                     FROM (SELECT f.quarantined_at FROM inbox.failures f
                            WHERE f.inbox OPERATOR(pg_catalog.=) r.relid
                           UNION ALL
                           SELECT c.quarantined_at FROM inbox.citus_failures(r.relid) c
                            WHERE pg_catalog.has_table_privilege(r.relid::pg_catalog.oid, 'SELECT')) f
                    WHERE f.quarantined_at IS NOT NULL) AS quarantined,
                  (SELECT pg_catalog.count(*)
                     FROM (SELECT FROM inbox.blocked b WHERE b.inbox OPERATOR(pg_catalog.=) r.relid
                           UNION ALL
                           SELECT FROM inbox.citus_blocked(r.relid)
                            WHERE pg_catalog.has_table_privilege(r.relid::pg_catalog.oid, 'SELECT')) b) AS blocked,
                  pg_catalog.count(*) FILTER (WHERE a.verb OPERATOR(pg_catalog.=) 'retry') AS retried,
                  pg_catalog.count(*) FILTER (WHERE a.verb OPERATOR(pg_catalog.=) 'discard') AS discarded,
                  pg_catalog.count(*) FILTER (WHERE a.verb OPERATOR(pg_catalog.=) 'forget') AS forgotten
             FROM (SELECT a.verb FROM inbox.audit_log a WHERE a.inbox OPERATOR(pg_catalog.=) r.relid
                   UNION ALL
                   SELECT c.verb FROM inbox.citus_audit_log(r.relid) c
                    WHERE pg_catalog.has_table_privilege(r.relid::pg_catalog.oid, 'SELECT')) a) q
        ON pg_catalog.has_table_privilege(r.relid::pg_catalog.oid, 'SELECT')
     WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class k
                    WHERE k.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid);
COMMENT ON VIEW inbox.stats IS
    'per inbox: claims, duplicates, in-progress answers, fingerprint conflicts, leases taken over and purged claims since the server started (NULL unless preloaded), the oldest claim (NULL if the caller may not read the inbox or its owner altered its key or claimed_at), the messages quarantined and blocked now, and those retried, discarded and forgotten (NULL if the caller may not read the inbox)';

/*
 * Outboxes (issue 27): events written in the producer's transaction, relayed to
 * a broker after commit.  The registry says which tables are outboxes, their
 * source (the prefix of every message id they give, so that the ids of a
 * dropped and re-created outbox never repeat) and how long sent events are kept.
 */
CREATE TABLE inbox.outbox_registry (
    relid       pg_catalog.regclass PRIMARY KEY,
    source      pg_catalog.uuid NOT NULL DEFAULT pg_catalog.gen_random_uuid(),
    retention   pg_catalog.interval
                CONSTRAINT outbox_registry_retention_check
                CHECK (retention OPERATOR(pg_catalog.>) '0'::pg_catalog.interval),
    created_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE inbox.outbox_registry IS
    'one row per outbox table; written only by create_outbox, set_outbox_retention and the drop event trigger';
SELECT pg_catalog.pg_extension_config_dump('inbox.outbox_registry', '');
GRANT SELECT ON inbox.outbox_registry TO PUBLIC;

CREATE VIEW inbox.outboxes WITH (security_barrier) AS
    SELECT r.relid AS outbox,
           n.nspname AS schema_name,
           c.relname AS table_name,
           r.source,
           r.retention,
           r.created_at
      FROM inbox.outbox_registry r
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace;
COMMENT ON VIEW inbox.outboxes IS 'the outboxes of this database and their settings';
GRANT SELECT ON inbox.outboxes TO PUBLIC;

CREATE FUNCTION inbox.create_outbox(name pg_catalog.text,
                                    retention pg_catalog.interval DEFAULT '7 days')
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'inbox_create_outbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.create_outbox(pg_catalog.text, pg_catalog.interval) IS
    'create an outbox table owned by the caller and register it; sent events are kept for retention (NULL: until deleted)';

CREATE FUNCTION inbox.drop_outbox(outbox pg_catalog.regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'inbox_drop_outbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.drop_outbox(pg_catalog.regclass) IS
    'drop an outbox table and its events, sent or not; needs the privileges of DROP TABLE';

CREATE FUNCTION inbox.set_outbox_retention(outbox pg_catalog.regclass, retention pg_catalog.interval)
RETURNS void
AS 'MODULE_PATHNAME', 'inbox_set_outbox_retention'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.set_outbox_retention(pg_catalog.regclass, pg_catalog.interval) IS
    'change how long an outbox keeps sent events (NULL: until deleted); owner only';

CREATE FUNCTION inbox.emit(outbox pg_catalog.regclass, topic pg_catalog.text,
                           key pg_catalog.text, payload pg_catalog.jsonb,
                           headers pg_catalog.jsonb DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'inbox_emit'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.emit(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb, pg_catalog.jsonb) IS
    'write an event (topic, ordering key or NULL, jsonb payload, headers object) into the outbox in the caller''s transaction; returns its event_id';

CREATE FUNCTION inbox.emit_bytes(outbox pg_catalog.regclass, topic pg_catalog.text,
                                 key pg_catalog.text, payload pg_catalog.bytea,
                                 headers pg_catalog.jsonb DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'inbox_emit_bytes'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.emit_bytes(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.bytea, pg_catalog.jsonb) IS
    'emit with a bytea payload, sent as it is';

CREATE FUNCTION inbox.relay_take(outbox pg_catalog.regclass,
                                 batch_size pg_catalog.int4 DEFAULT 100,
                                 lease_for pg_catalog.interval DEFAULT '30 seconds',
                                 OUT event_id pg_catalog.int8, OUT message_id pg_catalog.uuid,
                                 OUT topic pg_catalog.text, OUT key pg_catalog.text,
                                 OUT payload pg_catalog.jsonb, OUT payload_bytes pg_catalog.bytea,
                                 OUT headers pg_catalog.jsonb, OUT emitted_at pg_catalog.timestamptz,
                                 OUT attempt pg_catalog.int4, OUT lease pg_catalog.uuid,
                                 OUT lease_until pg_catalog.timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'inbox_relay_take'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER ROWS 100;
COMMENT ON FUNCTION inbox.relay_take(pg_catalog.regclass, pg_catalog.int4, pg_catalog.interval) IS
    'lease the next committed events in order, none skipped, none leased twice at once, each key in order; READ COMMITTED only';

CREATE FUNCTION inbox.relay_ack(outbox pg_catalog.regclass, lease pg_catalog.uuid,
                                event_ids pg_catalog.int8[] DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'inbox_relay_ack'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.relay_ack(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.int8[]) IS
    'mark sent the events of a lease, or those listed, once the broker confirmed them; returns how many were still unsent';

CREATE FUNCTION inbox.relay_release(outbox pg_catalog.regclass, lease pg_catalog.uuid,
                                    event_ids pg_catalog.int8[] DEFAULT NULL,
                                    retry_after pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'inbox_relay_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.relay_release(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.int8[], pg_catalog.interval) IS
    'give back the events a lease still holds (all, or those listed), to be taken again at once or after retry_after; returns how many';

CREATE FUNCTION inbox.purge_outbox(outbox pg_catalog.regclass, batch pg_catalog.int4 DEFAULT 10000)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'inbox_purge_outbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.purge_outbox(pg_catalog.regclass, pg_catalog.int4) IS
    'delete up to batch events sent longer ago than the outbox''s retention, oldest first, as its owner; returns how many';

-- As for inboxes: dropping, retention and purging are the operator's call.
REVOKE ALL ON FUNCTION inbox.drop_outbox(pg_catalog.regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.set_outbox_retention(pg_catalog.regclass, pg_catalog.interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.purge_outbox(pg_catalog.regclass, pg_catalog.int4) FROM PUBLIC;
