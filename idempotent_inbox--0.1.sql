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
