\echo Use "CREATE EXTENSION idempotent_inbox" to load this file. \quit

/*
 * Terms used throughout:
 *   inbox      an ordinary table of claims for one consumer, registered below
 *   claim      the row that says "this message id is being or has been applied"
 *   effect     the business change applied together with the claim
 *   duplicate  a delivery whose id is already claimed by a committed transaction
 *
 * Inbox tables are user data: they are never members of this extension, so pg_dump
 * keeps their rows and DROP EXTENSION leaves them in place as plain tables.  They use
 * built-in types only, so nothing of theirs depends on the extension either.
 */

-- Every role may call the claim functions; what they touch is checked per table.
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-- Outcomes.  Later versions may add labels; none is ever renamed.
CREATE TYPE @extschema@.outcome AS ENUM ('applied', 'duplicate');
COMMENT ON TYPE @extschema@.outcome IS
    'result of claim_apply: the effect ran (applied) or the id was already claimed (duplicate)';

CREATE TYPE @extschema@.claim_status AS ENUM ('claimed', 'duplicate', 'in_progress');
COMMENT ON TYPE @extschema@.claim_status IS
    'result of try_claim: claimed now, already claimed and committed, or held by another open transaction';

-- The registry: which tables are inboxes.  A configuration table, so pg_dump keeps its
-- rows; regclass survives dump/restore by name and pg_upgrade by preserved OID.
CREATE TABLE @extschema@.registry (
    relid       pg_catalog.regclass PRIMARY KEY,
    key_type    pg_catalog.regtype NOT NULL
                CHECK (key_type IN ('pg_catalog.text'::pg_catalog.regtype,
                                    'pg_catalog.uuid'::pg_catalog.regtype,
                                    'pg_catalog.int8'::pg_catalog.regtype)),
    retention   pg_catalog.interval CHECK (retention > '0'::pg_catalog.interval),
    created_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE @extschema@.registry IS
    'one row per inbox table; written only by create_inbox and drop_inbox';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.registry', '');

-- Everyone may see which tables are inboxes; only the functions below change it.
GRANT SELECT ON @extschema@.registry TO PUBLIC;

CREATE VIEW @extschema@.inboxes AS
    SELECT r.relid AS inbox,
           n.nspname AS schema_name,
           c.relname AS table_name,
           r.key_type,
           r.retention,
           r.created_at
      FROM @extschema@.registry r
      JOIN pg_catalog.pg_class c ON c.oid = r.relid
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace;
COMMENT ON VIEW @extschema@.inboxes IS 'the inboxes of this database and their settings';
GRANT SELECT ON @extschema@.inboxes TO PUBLIC;

-- Inbox administration.

CREATE FUNCTION @extschema@.create_inbox(name pg_catalog.text,
                                         key_type pg_catalog.regtype DEFAULT 'pg_catalog.text',
                                         retention pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'inbox_create_inbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.create_inbox(pg_catalog.text, pg_catalog.regtype, pg_catalog.interval) IS
    'create an inbox table (message_id primary key, claimed_at) owned by the caller and register it';

CREATE FUNCTION @extschema@.drop_inbox(inbox pg_catalog.regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'inbox_drop_inbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.drop_inbox(pg_catalog.regclass) IS
    'drop an inbox table and its claims; needs the privileges of DROP TABLE';

CREATE FUNCTION @extschema@.set_retention(inbox pg_catalog.regclass, retention pg_catalog.interval)
RETURNS void
AS 'MODULE_PATHNAME', 'inbox_set_retention'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.set_retention(pg_catalog.regclass, pg_catalog.interval) IS
    'change an inbox''s dedup window (NULL: keep claims forever); owner only';

CREATE FUNCTION @extschema@.purge(inbox pg_catalog.regclass, batch pg_catalog.int4 DEFAULT 10000)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'inbox_purge'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.purge(pg_catalog.regclass, pg_catalog.int4) IS
    'delete up to batch claims that have left the inbox''s retention window, oldest first; returns how many';

/*
 * Forgetting claims is what lets a redelivery through: dropping an inbox, changing
 * its window and purging it decide how long duplicates are caught, which is the
 * operator's call, not every consumer's.  So they are not granted to PUBLIC; grant
 * them to the role that administers the consumers.  (Each also runs with the
 * caller's rights on the table: DROP needs ownership, purge needs DELETE.)
 */
REVOKE ALL ON FUNCTION @extschema@.drop_inbox(pg_catalog.regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.set_retention(pg_catalog.regclass, pg_catalog.interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.purge(pg_catalog.regclass, pg_catalog.int4) FROM PUBLIC;

-- A plain DROP TABLE of an inbox must not leave a registry row behind, or a later
-- table that happens to get the same OID would be taken for an inbox.  Definer rights
-- because the dropping user may not own the registry.
CREATE FUNCTION @extschema@.forget_dropped_inboxes()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM @extschema@.registry r
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.objsubid = 0
       AND r.relid::pg_catalog.oid = d.objid;
    DELETE FROM @extschema@.positions p
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.objsubid = 0
       AND p.inbox::pg_catalog.oid = d.objid;
END
$$;
COMMENT ON FUNCTION @extschema@.forget_dropped_inboxes() IS
    'event trigger: removes registry rows of dropped tables';
REVOKE ALL ON FUNCTION @extschema@.forget_dropped_inboxes() FROM PUBLIC;

CREATE EVENT TRIGGER idempotent_inbox_forget_dropped
    ON sql_drop
    WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED')
    EXECUTE FUNCTION @extschema@.forget_dropped_inboxes();

-- Claims.  One C function per SQL name; the key type is read from the signature.
-- Not STRICT: a NULL id is an error (22004), never a silent NULL.

CREATE FUNCTION @extschema@.claim(inbox pg_catalog.regclass, message_id pg_catalog.text)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim(inbox pg_catalog.regclass, message_id pg_catalog.uuid)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim(inbox pg_catalog.regclass, message_id pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.claim(pg_catalog.regclass, pg_catalog.text) IS
    'claim a message id in the current transaction: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION @extschema@.claim(pg_catalog.regclass, pg_catalog.uuid) IS
    'claim a message id in the current transaction: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION @extschema@.claim(pg_catalog.regclass, pg_catalog.int8) IS
    'claim a message id in the current transaction: true on first delivery, false on a duplicate';

CREATE FUNCTION @extschema@.try_claim(inbox pg_catalog.regclass, message_id pg_catalog.text)
RETURNS @extschema@.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.try_claim(inbox pg_catalog.regclass, message_id pg_catalog.uuid)
RETURNS @extschema@.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.try_claim(inbox pg_catalog.regclass, message_id pg_catalog.int8)
RETURNS @extschema@.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.try_claim(pg_catalog.regclass, pg_catalog.text) IS
    'claim without waiting: claimed, duplicate, or in_progress when another open transaction holds the id';
COMMENT ON FUNCTION @extschema@.try_claim(pg_catalog.regclass, pg_catalog.uuid) IS
    'claim without waiting: claimed, duplicate, or in_progress when another open transaction holds the id';
COMMENT ON FUNCTION @extschema@.try_claim(pg_catalog.regclass, pg_catalog.int8) IS
    'claim without waiting: claimed, duplicate, or in_progress when another open transaction holds the id';

CREATE FUNCTION @extschema@.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[])
RETURNS SETOF pg_catalog.text AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION @extschema@.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[])
RETURNS SETOF pg_catalog.uuid AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION @extschema@.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[])
RETURNS SETOF pg_catalog.int8 AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
-- Drivers send arrays as untyped strings such as '{a,b}', which would be ambiguous
-- among the array overloads; an untyped argument resolves to this one.
CREATE FUNCTION @extschema@.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.text)
RETURNS SETOF pg_catalog.text AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION @extschema@.claim_many(pg_catalog.regclass, pg_catalog.text) IS
    'claim a batch given as an array literal; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION @extschema@.claim_many(pg_catalog.regclass, pg_catalog.text[]) IS
    'claim a batch; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION @extschema@.claim_many(pg_catalog.regclass, pg_catalog.uuid[]) IS
    'claim a batch; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION @extschema@.claim_many(pg_catalog.regclass, pg_catalog.int8[]) IS
    'claim a batch; returns the fresh ids in input order, each once';

/*
 * claim_apply comes in three shapes per key type:
 *   no arguments              a statement without parameters
 *   VARIADIC "any"            typed values, and untyped literals whose types are
 *                             inferred from the statement
 *   VARIADIC text[]           chosen by the parser when every argument is an untyped
 *                             driver parameter (node-postgres, psycopg strings), which
 *                             "any" cannot accept; each is converted to the type the
 *                             statement gives its $n
 */
CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                        statement pg_catalog.text)
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                        statement pg_catalog.text, VARIADIC args "any")
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                        statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                        statement pg_catalog.text)
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                        statement pg_catalog.text, VARIADIC args "any")
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                        statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                        statement pg_catalog.text)
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                        statement pg_catalog.text, VARIADIC args "any")
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                        statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS @extschema@.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'claim a message id and, on first delivery only, run the statement in the same transaction';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, "any") IS
    'claim a message id and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text[]) IS
    'claim a message id and, on first delivery only, run the statement with untyped args converted to the types of $1..$n';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) IS
    'claim a message id and, on first delivery only, run the statement in the same transaction';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text, "any") IS
    'claim a message id and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text, pg_catalog.text[]) IS
    'claim a message id and, on first delivery only, run the statement with untyped args converted to the types of $1..$n';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) IS
    'claim a message id and, on first delivery only, run the statement in the same transaction';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text, "any") IS
    'claim a message id and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION @extschema@.claim_apply(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text, pg_catalog.text[]) IS
    'claim a message id and, on first delivery only, run the statement with untyped args converted to the types of $1..$n';

/*
 * Naturally idempotent writes: where the effect can be made idempotent by its
 * shape ("set status to PAID", "upsert the total"), no inbox is needed.
 */
CREATE TYPE @extschema@.upsert_outcome AS ENUM ('inserted', 'updated', 'unchanged', 'stale');
COMMENT ON TYPE @extschema@.upsert_outcome IS
    'result of upsert: inserted, updated, unchanged (a replay; nothing written), or stale (an older or equal version; nothing written)';

CREATE TYPE @extschema@.transition_outcome AS ENUM ('moved', 'already', 'rejected', 'missing');
COMMENT ON TYPE @extschema@.transition_outcome IS
    'result of transition: moved, already in the target state (a replay), rejected (in a state not listed), missing (no such row)';

CREATE FUNCTION @extschema@.upsert(target pg_catalog.regclass, new_row pg_catalog.jsonb,
                                   key pg_catalog.text[] DEFAULT NULL,
                                   version_column pg_catalog.text DEFAULT NULL)
RETURNS @extschema@.upsert_outcome AS 'MODULE_PATHNAME', 'inbox_upsert'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.upsert(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.text[], pg_catalog.text) IS
    'insert or update the row with new_row''s key; a replay writes nothing; with version_column, older versions are stale';

-- A row of the table's own type.  Not an overload of upsert: with one, every call
-- passing an untyped jsonb literal would be ambiguous.
CREATE FUNCTION @extschema@.upsert_row(new_row anyelement,
                                       key pg_catalog.text[] DEFAULT NULL,
                                       version_column pg_catalog.text DEFAULT NULL)
RETURNS @extschema@.upsert_outcome AS 'MODULE_PATHNAME', 'inbox_upsert_row'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.upsert_row(anyelement, pg_catalog.text[], pg_catalog.text) IS
    'upsert a row of a table''s own type into that table';

CREATE FUNCTION @extschema@.transition(target pg_catalog.regclass, key pg_catalog.jsonb,
                                       state_column pg_catalog.text,
                                       from_states pg_catalog.text[], to_state pg_catalog.text)
RETURNS @extschema@.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.transition(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.text, pg_catalog.text[], pg_catalog.text) IS
    'move the row with this key to to_state if it is in one of from_states (NULL: the states the column''s machine allows)';

CREATE FUNCTION @extschema@.transition(target pg_catalog.regclass, key pg_catalog.jsonb,
                                       state_column pg_catalog.text, to_state pg_catalog.text)
RETURNS @extschema@.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.transition(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.text, pg_catalog.text) IS
    'move the row with this key to to_state from any state the column''s machine allows';

CREATE FUNCTION @extschema@.guard_trigger()
RETURNS trigger AS 'MODULE_PATHNAME', 'inbox_guard_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.guard_trigger() IS
    'trigger of a state machine installed by guard_transitions; refuses moves the machine does not allow';

CREATE FUNCTION @extschema@.guard_transitions(target pg_catalog.regclass,
                                              state_column pg_catalog.text,
                                              edges pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_guard_transitions'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.guard_transitions(pg_catalog.regclass, pg_catalog.text, pg_catalog.jsonb) IS
    'install (or replace) a state machine on a column, enforced for every writer: {"FROM": ["TO", ...], ...}';

CREATE FUNCTION @extschema@.unguard_transitions(target pg_catalog.regclass,
                                                state_column pg_catalog.text)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_unguard_transitions'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.unguard_transitions(pg_catalog.regclass, pg_catalog.text) IS
    'remove the state machine of a column; false if there was none';

CREATE FUNCTION @extschema@.trigger_arguments(tgargs pg_catalog.bytea, tgnargs pg_catalog.int2)
RETURNS pg_catalog.text[] AS 'MODULE_PATHNAME', 'inbox_trigger_arguments'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.trigger_arguments(pg_catalog.bytea, pg_catalog.int2) IS
    'the arguments of a trigger (pg_trigger.tgargs) as text[]';

CREATE VIEW @extschema@.state_machines AS
    SELECT t.tgrelid::pg_catalog.regclass AS target,
           a.args[1] AS state_column,
           a.args[2]::pg_catalog.jsonb AS edges
      FROM pg_catalog.pg_trigger t
     CROSS JOIN LATERAL (SELECT @extschema@.trigger_arguments(t.tgargs, t.tgnargs) AS args) a
     WHERE t.tgfoid = '@extschema@.guard_trigger()'::pg_catalog.regprocedure;
COMMENT ON VIEW @extschema@.state_machines IS 'the state machines installed by guard_transitions';
GRANT SELECT ON @extschema@.state_machines TO PUBLIC;

/*
 * Idempotency keys for effects that leave the database (section 4 of the SPEC).
 * The same inbox table carries them: fingerprint, result, and a lease (token,
 * lease_until and, for session-bound leases, the holder's backend).
 */
CREATE FUNCTION @extschema@.fingerprint(payload pg_catalog.jsonb)
RETURNS pg_catalog.bytea AS 'MODULE_PATHNAME', 'inbox_fingerprint'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.fingerprint(pg_catalog.jsonb) IS
    'SHA-256 of a jsonb document in canonical form: key order, whitespace and 1.0 versus 1 do not matter';

CREATE FUNCTION @extschema@.claim(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                  fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                  fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.claim(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                  fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.claim(pg_catalog.regclass, pg_catalog.text, pg_catalog.bytea) IS
    'claim a message id with a request fingerprint; a claim with another fingerprint is an error (22I01)';
COMMENT ON FUNCTION @extschema@.claim(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.bytea) IS
    'claim a message id with a request fingerprint; a claim with another fingerprint is an error (22I01)';
COMMENT ON FUNCTION @extschema@.claim(pg_catalog.regclass, pg_catalog.int8, pg_catalog.bytea) IS
    'claim a message id with a request fingerprint; a claim with another fingerprint is an error (22I01)';

CREATE FUNCTION @extschema@.complete(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                     result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.complete(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                     result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.complete(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                     result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.complete(pg_catalog.regclass, pg_catalog.text, pg_catalog.jsonb) IS
    'store the result of a claimed message, to replay to duplicates';
COMMENT ON FUNCTION @extschema@.complete(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.jsonb) IS
    'store the result of a claimed message, to replay to duplicates';
COMMENT ON FUNCTION @extschema@.complete(pg_catalog.regclass, pg_catalog.int8, pg_catalog.jsonb) IS
    'store the result of a claimed message, to replay to duplicates';

CREATE FUNCTION @extschema@.result(inbox pg_catalog.regclass, message_id pg_catalog.text)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C STABLE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.result(inbox pg_catalog.regclass, message_id pg_catalog.uuid)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C STABLE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.result(inbox pg_catalog.regclass, message_id pg_catalog.int8)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.result(pg_catalog.regclass, pg_catalog.text) IS
    'the stored result of a message, or NULL';
COMMENT ON FUNCTION @extschema@.result(pg_catalog.regclass, pg_catalog.uuid) IS
    'the stored result of a message, or NULL';
COMMENT ON FUNCTION @extschema@.result(pg_catalog.regclass, pg_catalog.int8) IS
    'the stored result of a message, or NULL';

CREATE TYPE @extschema@.lease_status AS ENUM ('acquired', 'in_progress', 'completed');
COMMENT ON TYPE @extschema@.lease_status IS
    'result of acquire: acquired (run the effect, then finish), in_progress (another live attempt), completed (replay the stored result)';

-- Fencing tokens: one sequence, so no token is ever handed out twice, not even
-- for a key released or purged and acquired again.  Its position is dumped with
-- the data, so a restored database keeps handing out higher tokens.
CREATE SEQUENCE @extschema@.lease_tokens;
COMMENT ON SEQUENCE @extschema@.lease_tokens IS 'fencing tokens handed out by acquire';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.lease_tokens', '');

CREATE FUNCTION @extschema@.acquire(inbox pg_catalog.regclass, key pg_catalog.text,
                                    lease pg_catalog.interval,
                                    fingerprint pg_catalog.bytea DEFAULT NULL,
                                    session_bound boolean DEFAULT false,
                                    OUT status @extschema@.lease_status, OUT token pg_catalog.int8,
                                    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.acquire(inbox pg_catalog.regclass, key pg_catalog.uuid,
                                    lease pg_catalog.interval,
                                    fingerprint pg_catalog.bytea DEFAULT NULL,
                                    session_bound boolean DEFAULT false,
                                    OUT status @extschema@.lease_status, OUT token pg_catalog.int8,
                                    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.acquire(inbox pg_catalog.regclass, key pg_catalog.int8,
                                    lease pg_catalog.interval,
                                    fingerprint pg_catalog.bytea DEFAULT NULL,
                                    session_bound boolean DEFAULT false,
                                    OUT status @extschema@.lease_status, OUT token pg_catalog.int8,
                                    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.acquire(pg_catalog.regclass, pg_catalog.text, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'take a lease on an idempotency key, commit, then run the outside effect: acquired, in_progress or completed';
COMMENT ON FUNCTION @extschema@.acquire(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'take a lease on an idempotency key, commit, then run the outside effect: acquired, in_progress or completed';
COMMENT ON FUNCTION @extschema@.acquire(pg_catalog.regclass, pg_catalog.int8, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'take a lease on an idempotency key, commit, then run the outside effect: acquired, in_progress or completed';

CREATE FUNCTION @extschema@.finish(inbox pg_catalog.regclass, key pg_catalog.text,
                                   token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.finish(inbox pg_catalog.regclass, key pg_catalog.uuid,
                                   token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.finish(inbox pg_catalog.regclass, key pg_catalog.int8,
                                   token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.finish(pg_catalog.regclass, pg_catalog.text, pg_catalog.int8, pg_catalog.jsonb) IS
    'mark the lease''s attempt done and store its result; a stale token is an error (55I01)';
COMMENT ON FUNCTION @extschema@.finish(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.int8, pg_catalog.jsonb) IS
    'mark the lease''s attempt done and store its result; a stale token is an error (55I01)';
COMMENT ON FUNCTION @extschema@.finish(pg_catalog.regclass, pg_catalog.int8, pg_catalog.int8, pg_catalog.jsonb) IS
    'mark the lease''s attempt done and store its result; a stale token is an error (55I01)';

CREATE FUNCTION @extschema@.release(inbox pg_catalog.regclass, key pg_catalog.text,
                                    token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.release(inbox pg_catalog.regclass, key pg_catalog.uuid,
                                    token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION @extschema@.release(inbox pg_catalog.regclass, key pg_catalog.int8,
                                    token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.release(pg_catalog.regclass, pg_catalog.text, pg_catalog.int8) IS
    'forget a failed attempt so that a retry may run; a stale token is an error (55I01)';
COMMENT ON FUNCTION @extschema@.release(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.int8) IS
    'forget a failed attempt so that a retry may run; a stale token is an error (55I01)';
COMMENT ON FUNCTION @extschema@.release(pg_catalog.regclass, pg_catalog.int8, pg_catalog.int8) IS
    'forget a failed attempt so that a retry may run; a stale token is an error (55I01)';

-- Observability (section 6 of the SPEC).
CREATE FUNCTION @extschema@.live_counters(inbox pg_catalog.regclass,
                                          OUT claims pg_catalog.int8, OUT duplicates pg_catalog.int8,
                                          OUT in_progress pg_catalog.int8,
                                          OUT fingerprint_conflicts pg_catalog.int8,
                                          OUT takeovers pg_catalog.int8, OUT purged pg_catalog.int8)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_live_counters'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.live_counters(pg_catalog.regclass) IS
    'counters of an inbox since the server started; NULL unless the library is in shared_preload_libraries';

CREATE FUNCTION @extschema@.oldest_claim(inbox pg_catalog.regclass)
RETURNS pg_catalog.timestamptz AS 'MODULE_PATHNAME', 'inbox_oldest_claim'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.oldest_claim(pg_catalog.regclass) IS
    'when the oldest claim still stored was made; NULL if none or if the caller may not read the inbox';

CREATE VIEW @extschema@.stats AS
    SELECT r.relid AS inbox,
           c.claims,
           c.duplicates,
           c.in_progress,
           c.fingerprint_conflicts,
           c.takeovers,
           c.purged,
           @extschema@.oldest_claim(r.relid) AS oldest_claim
      FROM @extschema@.registry r
     CROSS JOIN LATERAL @extschema@.live_counters(r.relid) c
     WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class k WHERE k.oid = r.relid);
COMMENT ON VIEW @extschema@.stats IS
    'per inbox: claims, duplicates, in-progress answers, fingerprint conflicts, leases taken over and purged claims since the server started (NULL unless preloaded), and the oldest claim';
GRANT SELECT ON @extschema@.stats TO PUBLIC;

/*
 * Streams (section 5 of the SPEC): the offset of the last message applied, per
 * inbox, topic and partition, committed with the effect.  One row per partition,
 * however many messages.  Written only by advance, with the rights the caller
 * has on the inbox; a configuration table, so pg_dump keeps the positions.
 */
CREATE TABLE @extschema@.positions (
    inbox       pg_catalog.regclass NOT NULL,
    topic       pg_catalog.text NOT NULL,
    "partition" pg_catalog.int4 NOT NULL CHECK ("partition" >= 0),
    "offset"    pg_catalog.int8 NOT NULL CHECK ("offset" >= 0),
    advanced_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (inbox, topic, "partition")
);
COMMENT ON TABLE @extschema@.positions IS
    'the last offset applied per inbox, topic and partition; written only by advance';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.positions', '');

CREATE FUNCTION @extschema@.advance(inbox pg_catalog.regclass, topic pg_catalog.text,
                                    "partition" pg_catalog.int4, "offset" pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_advance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.advance(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8) IS
    'record offset as applied for the partition in this transaction: true if it is past the stored one, false if already applied';

CREATE FUNCTION @extschema@.position(inbox pg_catalog.regclass, topic pg_catalog.text,
                                     "partition" pg_catalog.int4)
RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'inbox_position'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.position(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4) IS
    'the last offset applied for the partition, or NULL if none: seek to the next one after a restart';

-- Everyone sees the positions of the inboxes they may read.
CREATE VIEW @extschema@.streams AS
    SELECT p.inbox, p.topic, p."partition", p."offset", p.advanced_at
      FROM @extschema@.positions p
     WHERE pg_catalog.has_table_privilege(p.inbox::pg_catalog.oid, 'SELECT');
COMMENT ON VIEW @extschema@.streams IS 'stored positions of the partitions of the inboxes you may read';
GRANT SELECT ON @extschema@.streams TO PUBLIC;

CREATE FUNCTION @extschema@.dedup_trigger()
RETURNS trigger AS 'MODULE_PATHNAME', 'inbox_dedup_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION @extschema@.dedup_trigger() IS
    'BEFORE INSERT row trigger, with arguments (inbox, id column): claims each row''s id and drops rows already seen';
