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
 *
 * Written to be safe to run as a superuser in a database whose owner is hostile:
 *   - the script creates schema inbox itself and never adopts an existing one (the
 *     control file names pg_catalog, as pg_cron does, so that CREATE EXTENSION does
 *     not create or reuse the schema before this script runs);
 *   - every object is named inbox.x or pg_catalog.x (the extension's own schema is
 *     pg_catalog here), every operator is OPERATOR(pg_catalog.op), so that no object
 *     someone put in a schema on the path can be picked instead of the built-in one;
 *   - the views are security_barrier, and a view over everyone's objects skips or
 *     flags (a NULL column) an object it cannot read instead of failing.
 * An update script that adds objects follows the same rules.
 */

-- The schema: created here, so a schema "inbox" made beforehand by anyone (a database
-- owner, say, with an operator inbox.= waiting for a superuser's script) makes CREATE
-- EXTENSION fail before any of its objects can be used.  CREATE SCHEMA alone would
-- fail too; the check gives the reason and the way out.
DO $$
BEGIN
    IF pg_catalog.to_regnamespace('inbox') IS NOT NULL THEN
        RAISE EXCEPTION 'schema "inbox" already exists'
            USING ERRCODE = 'duplicate_schema',
                  DETAIL = 'CREATE EXTENSION idempotent_inbox creates schema inbox itself and never adopts one it did not create: objects someone else put there would run with the installing superuser''s rights.',
                  HINT = 'Look at what the existing schema inbox holds, then drop or rename it and run CREATE EXTENSION again.';
    END IF;
END
$$;
CREATE SCHEMA inbox;
COMMENT ON SCHEMA inbox IS 'idempotent_inbox: inbox tables registry, claim functions and views';

-- Every role may call the claim functions; what they touch is checked per table.
GRANT USAGE ON SCHEMA inbox TO PUBLIC;

-- Outcomes.  Later versions may add labels; none is ever renamed.
CREATE TYPE inbox.outcome AS ENUM ('applied', 'duplicate', 'quarantined');
COMMENT ON TYPE inbox.outcome IS
    'result of claim_apply: the effect ran (applied), the id was already claimed (duplicate), or the message is quarantined (quarantined)';

CREATE TYPE inbox.claim_status AS ENUM ('claimed', 'duplicate', 'in_progress', 'quarantined', 'blocked');
COMMENT ON TYPE inbox.claim_status IS
    'result of try_claim and claim_in_order: claimed now, already claimed and committed, held by another open transaction, quarantined, or (claim_in_order) blocked behind an earlier message of its key';

-- The registry: which tables are inboxes.  A configuration table, so pg_dump keeps its
-- rows; regclass survives dump/restore by name and pg_upgrade by preserved OID.
CREATE TABLE inbox.registry (
    relid       pg_catalog.regclass PRIMARY KEY,
    key_type    pg_catalog.regtype NOT NULL
                CONSTRAINT registry_key_type_check
                CHECK (key_type OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.text'::pg_catalog.regtype,
                                                                  'pg_catalog.uuid'::pg_catalog.regtype,
                                                                  'pg_catalog.int8'::pg_catalog.regtype])),
    retention   pg_catalog.interval
                CONSTRAINT registry_retention_check
                CHECK (retention OPERATOR(pg_catalog.>) '0'::pg_catalog.interval),
    created_at  pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    shard_key   pg_catalog.name,
    max_attempts pg_catalog.int4 NOT NULL DEFAULT 5
                CONSTRAINT registry_max_attempts_check
                CHECK (max_attempts OPERATOR(pg_catalog.>) 0),
    key_ordering pg_catalog.bool NOT NULL DEFAULT false
);
COMMENT ON TABLE inbox.registry IS
    'one row per inbox table; written only by the extension''s functions and its drop event trigger';
SELECT pg_catalog.pg_extension_config_dump('inbox.registry', '');

-- Everyone may see which tables are inboxes; only the functions below change it.
GRANT SELECT ON inbox.registry TO PUBLIC;

CREATE VIEW inbox.inboxes WITH (security_barrier) AS
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
COMMENT ON VIEW inbox.inboxes IS 'the inboxes of this database and their settings';
GRANT SELECT ON inbox.inboxes TO PUBLIC;

-- Inbox administration.

CREATE FUNCTION inbox.create_inbox(name pg_catalog.text,
                                         key_type pg_catalog.regtype DEFAULT 'pg_catalog.text',
                                         retention pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'inbox_create_inbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.create_inbox(pg_catalog.text, pg_catalog.regtype, pg_catalog.interval) IS
    'create an inbox table (message_id primary key, claimed_at) owned by the caller and register it';

CREATE FUNCTION inbox.drop_inbox(inbox pg_catalog.regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'inbox_drop_inbox'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.drop_inbox(pg_catalog.regclass) IS
    'drop an inbox table and its claims; needs the privileges of DROP TABLE';

CREATE FUNCTION inbox.set_retention(inbox pg_catalog.regclass, retention pg_catalog.interval)
RETURNS void
AS 'MODULE_PATHNAME', 'inbox_set_retention'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.set_retention(pg_catalog.regclass, pg_catalog.interval) IS
    'change an inbox''s dedup window (NULL: keep claims forever); owner only';

CREATE FUNCTION inbox.purge(inbox pg_catalog.regclass, batch pg_catalog.int4 DEFAULT 10000)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'inbox_purge'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.purge(pg_catalog.regclass, pg_catalog.int4) IS
    'delete up to batch claims that have left the inbox''s retention window, oldest first; returns how many';

/*
 * Forgetting claims is what lets a redelivery through: dropping an inbox, changing
 * its window and purging it decide how long duplicates are caught, which is the
 * operator's call, not every consumer's.  So they are not granted to PUBLIC; grant
 * them to the role that administers the consumers.  (Each also runs with the
 * caller's rights on the table: DROP needs ownership; purge needs SELECT, UPDATE and
 * DELETE.)
 */
REVOKE ALL ON FUNCTION inbox.drop_inbox(pg_catalog.regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.set_retention(pg_catalog.regclass, pg_catalog.interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.purge(pg_catalog.regclass, pg_catalog.int4) FROM PUBLIC;

-- A plain DROP TABLE of an inbox must not leave a registry row behind, or a later
-- table that happens to get the same OID would be taken for an inbox.  Definer rights
-- because the dropping user may not own the registry.
CREATE FUNCTION inbox.forget_dropped_inboxes()
RETURNS event_trigger AS 'MODULE_PATHNAME', 'inbox_forget_dropped_inboxes'
LANGUAGE C SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION inbox.forget_dropped_inboxes() IS
    'event trigger: removes registry rows of dropped tables';
REVOKE ALL ON FUNCTION inbox.forget_dropped_inboxes() FROM PUBLIC;

-- Every command that drops objects: a table also goes with DROP TYPE ... CASCADE
-- (a typed table), DROP EXTENSION of another extension, and others.
CREATE EVENT TRIGGER idempotent_inbox_forget_dropped
    ON sql_drop
    EXECUTE FUNCTION inbox.forget_dropped_inboxes();

-- Claims.  One C function per SQL name; the key type is read from the signature.
-- Not STRICT: a NULL id is an error (22004), never a silent NULL.

CREATE FUNCTION inbox.claim(inbox pg_catalog.regclass, message_id pg_catalog.text)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim(inbox pg_catalog.regclass, message_id pg_catalog.uuid)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim(inbox pg_catalog.regclass, message_id pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim(pg_catalog.regclass, pg_catalog.text) IS
    'claim a message id in the current transaction: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION inbox.claim(pg_catalog.regclass, pg_catalog.uuid) IS
    'claim a message id in the current transaction: true on first delivery, false on a duplicate';
COMMENT ON FUNCTION inbox.claim(pg_catalog.regclass, pg_catalog.int8) IS
    'claim a message id in the current transaction: true on first delivery, false on a duplicate';

CREATE FUNCTION inbox.try_claim(inbox pg_catalog.regclass, message_id pg_catalog.text)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.try_claim(inbox pg_catalog.regclass, message_id pg_catalog.uuid)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.try_claim(inbox pg_catalog.regclass, message_id pg_catalog.int8)
RETURNS inbox.claim_status AS 'MODULE_PATHNAME', 'inbox_try_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.try_claim(pg_catalog.regclass, pg_catalog.text) IS
    'claim without waiting: claimed, duplicate, or in_progress when another open transaction holds the id';
COMMENT ON FUNCTION inbox.try_claim(pg_catalog.regclass, pg_catalog.uuid) IS
    'claim without waiting: claimed, duplicate, or in_progress when another open transaction holds the id';
COMMENT ON FUNCTION inbox.try_claim(pg_catalog.regclass, pg_catalog.int8) IS
    'claim without waiting: claimed, duplicate, or in_progress when another open transaction holds the id';

CREATE FUNCTION inbox.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.text[])
RETURNS SETOF pg_catalog.text AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.uuid[])
RETURNS SETOF pg_catalog.uuid AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
CREATE FUNCTION inbox.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.int8[])
RETURNS SETOF pg_catalog.int8 AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
-- Drivers send arrays as untyped strings such as '{a,b}', which would be ambiguous
-- among the array overloads; an untyped argument resolves to this one.
CREATE FUNCTION inbox.claim_many(inbox pg_catalog.regclass, message_ids pg_catalog.text)
RETURNS SETOF pg_catalog.text AS 'MODULE_PATHNAME', 'inbox_claim_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 100;
COMMENT ON FUNCTION inbox.claim_many(pg_catalog.regclass, pg_catalog.text) IS
    'claim a batch given as an array literal; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION inbox.claim_many(pg_catalog.regclass, pg_catalog.text[]) IS
    'claim a batch; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION inbox.claim_many(pg_catalog.regclass, pg_catalog.uuid[]) IS
    'claim a batch; returns the fresh ids in input order, each once';
COMMENT ON FUNCTION inbox.claim_many(pg_catalog.regclass, pg_catalog.int8[]) IS
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
CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                        statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                        statement pg_catalog.text, VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                        statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                        statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                        statement pg_catalog.text, VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                        statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                        statement pg_catalog.text)
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                        statement pg_catalog.text, VARIADIC args "any")
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim_apply(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                        statement pg_catalog.text, VARIADIC args pg_catalog.text[])
RETURNS inbox.outcome AS 'MODULE_PATHNAME', 'inbox_claim_apply'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.text, pg_catalog.text) IS
    'claim a message id and, on first delivery only, run the statement in the same transaction';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, "any") IS
    'claim a message id and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.text[]) IS
    'claim a message id and, on first delivery only, run the statement with untyped args converted to the types of $1..$n';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text) IS
    'claim a message id and, on first delivery only, run the statement in the same transaction';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text, "any") IS
    'claim a message id and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text, pg_catalog.text[]) IS
    'claim a message id and, on first delivery only, run the statement with untyped args converted to the types of $1..$n';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text) IS
    'claim a message id and, on first delivery only, run the statement in the same transaction';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text, "any") IS
    'claim a message id and, on first delivery only, run the statement with $1..$n bound to args';
COMMENT ON FUNCTION inbox.claim_apply(pg_catalog.regclass, pg_catalog.int8, pg_catalog.text, pg_catalog.text[]) IS
    'claim a message id and, on first delivery only, run the statement with untyped args converted to the types of $1..$n';

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

/*
 * Naturally idempotent writes: where the effect can be made idempotent by its
 * shape ("set status to PAID", "upsert the total"), no inbox is needed.
 */
CREATE TYPE inbox.upsert_outcome AS ENUM ('inserted', 'updated', 'unchanged', 'stale');
COMMENT ON TYPE inbox.upsert_outcome IS
    'result of upsert: inserted, updated, unchanged (a replay; nothing written), or stale (an older or equal version; nothing written)';

CREATE TYPE inbox.transition_outcome AS ENUM ('moved', 'already', 'rejected', 'missing');
COMMENT ON TYPE inbox.transition_outcome IS
    'result of transition: moved, already in the target state (a replay), rejected (in a state not listed), missing (no such row)';

CREATE FUNCTION inbox.upsert(target pg_catalog.regclass, new_row pg_catalog.jsonb,
                                   key pg_catalog.text[] DEFAULT NULL,
                                   version_column pg_catalog.text DEFAULT NULL)
RETURNS inbox.upsert_outcome AS 'MODULE_PATHNAME', 'inbox_upsert'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.upsert(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.text[], pg_catalog.text) IS
    'insert or update the row with new_row''s key; a replay writes nothing; with version_column, older versions are stale';

-- A row of the table's own type.  Not an overload of upsert: with one, every call
-- passing an untyped jsonb literal would be ambiguous.
CREATE FUNCTION inbox.upsert_row(new_row anyelement,
                                       key pg_catalog.text[] DEFAULT NULL,
                                       version_column pg_catalog.text DEFAULT NULL)
RETURNS inbox.upsert_outcome AS 'MODULE_PATHNAME', 'inbox_upsert_row'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.upsert_row(anyelement, pg_catalog.text[], pg_catalog.text) IS
    'upsert a row of a table''s own type into that table';

CREATE FUNCTION inbox.transition(target pg_catalog.regclass, key pg_catalog.jsonb,
                                       state_column pg_catalog.text,
                                       from_states pg_catalog.text[], to_state pg_catalog.text)
RETURNS inbox.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.transition(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.text, pg_catalog.text[], pg_catalog.text) IS
    'move the row with this key to to_state if it is in one of from_states (NULL: the states the column''s machine allows)';

CREATE FUNCTION inbox.transition(target pg_catalog.regclass, key pg_catalog.jsonb,
                                       state_column pg_catalog.text, to_state pg_catalog.text)
RETURNS inbox.transition_outcome AS 'MODULE_PATHNAME', 'inbox_transition'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.transition(pg_catalog.regclass, pg_catalog.jsonb, pg_catalog.text, pg_catalog.text) IS
    'move the row with this key to to_state from any state the column''s machine allows';

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

CREATE FUNCTION inbox.guard_trigger()
RETURNS trigger AS 'MODULE_PATHNAME', 'inbox_guard_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.guard_trigger() IS
    'trigger of a state machine installed by guard_transitions; refuses moves the machine does not allow';

CREATE FUNCTION inbox.guard_transitions(target pg_catalog.regclass,
                                              state_column pg_catalog.text,
                                              edges pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_guard_transitions'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.guard_transitions(pg_catalog.regclass, pg_catalog.text, pg_catalog.jsonb) IS
    'install (or replace) a state machine on a column, enforced for every writer: {"FROM": ["TO", ...], ...}';

CREATE FUNCTION inbox.unguard_transitions(target pg_catalog.regclass,
                                                state_column pg_catalog.text)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_unguard_transitions'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.unguard_transitions(pg_catalog.regclass, pg_catalog.text) IS
    'remove the state machine of a column; false if there was none';

CREATE FUNCTION inbox.trigger_arguments(tgargs pg_catalog.bytea, tgnargs pg_catalog.int2)
RETURNS pg_catalog.text[] AS 'MODULE_PATHNAME', 'inbox_trigger_arguments'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION inbox.trigger_arguments(pg_catalog.bytea, pg_catalog.int2) IS
    'the arguments of a trigger (pg_trigger.tgargs) as text[]';

-- Anyone may create a trigger calling guard_trigger on a table of theirs, with any
-- arguments; the view must still answer for everyone, so edges that are not a JSON
-- object read as NULL (and the trigger refuses every move).
CREATE FUNCTION inbox.edges_or_null(edges pg_catalog.text)
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    parsed pg_catalog.jsonb;
BEGIN
    parsed := edges::pg_catalog.jsonb;
    IF pg_catalog.jsonb_typeof(parsed) OPERATOR(pg_catalog.=) 'object' THEN
        RETURN parsed;
    END IF;
    RETURN NULL;
EXCEPTION
    -- Whatever jsonb's input may refuse: bad syntax, \u0000, nesting or size limits.
    WHEN invalid_text_representation OR untranslatable_character
         OR statement_too_complex OR program_limit_exceeded THEN
        RETURN NULL;
END
$$;
COMMENT ON FUNCTION inbox.edges_or_null(pg_catalog.text) IS
    'the text as a jsonb object, or NULL when it is not one: how inbox.state_machines reads a trigger''s edges';

-- A trigger with other than two arguments, or edges that are not a JSON object, is
-- listed with NULL in the columns it cannot fill.
CREATE VIEW inbox.state_machines WITH (security_barrier) AS
    SELECT t.tgrelid::pg_catalog.regclass AS target,
           CASE WHEN t.tgnargs OPERATOR(pg_catalog.=) 2 THEN a.args[1] END AS state_column,
           CASE WHEN t.tgnargs OPERATOR(pg_catalog.=) 2 THEN inbox.edges_or_null(a.args[2]) END AS edges
      FROM pg_catalog.pg_trigger t
     CROSS JOIN LATERAL (SELECT inbox.trigger_arguments(t.tgargs, t.tgnargs) AS args) a
     WHERE t.tgfoid OPERATOR(pg_catalog.=) 'inbox.guard_trigger()'::pg_catalog.regprocedure::pg_catalog.oid;
COMMENT ON VIEW inbox.state_machines IS
    'the state machines installed by guard_transitions; NULL state_column and edges for a guard_trigger whose arguments are not (column, JSON object)';
GRANT SELECT ON inbox.state_machines TO PUBLIC;

/*
 * Idempotency keys for effects that leave the database (section 4 of the SPEC).
 * The same inbox table carries them: fingerprint, result, and a lease (token,
 * lease_until and, for session-bound leases, the holder's backend).
 */
CREATE FUNCTION inbox.fingerprint(payload pg_catalog.jsonb)
RETURNS pg_catalog.bytea AS 'MODULE_PATHNAME', 'inbox_fingerprint'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION inbox.fingerprint(pg_catalog.jsonb) IS
    'SHA-256 of a jsonb document in canonical form: key order, whitespace and 1.0 versus 1 do not matter';

CREATE FUNCTION inbox.claim(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                  fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                  fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.claim(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                  fingerprint pg_catalog.bytea)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.claim(pg_catalog.regclass, pg_catalog.text, pg_catalog.bytea) IS
    'claim a message id with a request fingerprint; a claim with another fingerprint is an error (22I01)';
COMMENT ON FUNCTION inbox.claim(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.bytea) IS
    'claim a message id with a request fingerprint; a claim with another fingerprint is an error (22I01)';
COMMENT ON FUNCTION inbox.claim(pg_catalog.regclass, pg_catalog.int8, pg_catalog.bytea) IS
    'claim a message id with a request fingerprint; a claim with another fingerprint is an error (22I01)';

CREATE FUNCTION inbox.complete(inbox pg_catalog.regclass, message_id pg_catalog.text,
                                     result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.complete(inbox pg_catalog.regclass, message_id pg_catalog.uuid,
                                     result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.complete(inbox pg_catalog.regclass, message_id pg_catalog.int8,
                                     result pg_catalog.jsonb)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_complete'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.complete(pg_catalog.regclass, pg_catalog.text, pg_catalog.jsonb) IS
    'store the result of a claimed message, to replay to duplicates';
COMMENT ON FUNCTION inbox.complete(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.jsonb) IS
    'store the result of a claimed message, to replay to duplicates';
COMMENT ON FUNCTION inbox.complete(pg_catalog.regclass, pg_catalog.int8, pg_catalog.jsonb) IS
    'store the result of a claimed message, to replay to duplicates';

CREATE FUNCTION inbox.result(inbox pg_catalog.regclass, message_id pg_catalog.text)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C STABLE PARALLEL UNSAFE;
CREATE FUNCTION inbox.result(inbox pg_catalog.regclass, message_id pg_catalog.uuid)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C STABLE PARALLEL UNSAFE;
CREATE FUNCTION inbox.result(inbox pg_catalog.regclass, message_id pg_catalog.int8)
RETURNS pg_catalog.jsonb AS 'MODULE_PATHNAME', 'inbox_result'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.result(pg_catalog.regclass, pg_catalog.text) IS
    'the stored result of a message, or NULL';
COMMENT ON FUNCTION inbox.result(pg_catalog.regclass, pg_catalog.uuid) IS
    'the stored result of a message, or NULL';
COMMENT ON FUNCTION inbox.result(pg_catalog.regclass, pg_catalog.int8) IS
    'the stored result of a message, or NULL';

CREATE TYPE inbox.lease_status AS ENUM ('acquired', 'in_progress', 'completed', 'quarantined');
COMMENT ON TYPE inbox.lease_status IS
    'result of acquire: acquired (run the effect, then finish), in_progress (another live attempt), completed (replay the stored result), quarantined (do not run it)';

-- Fencing tokens: one sequence, so no token is ever handed out twice, not even
-- for a key released or purged and acquired again.  Its position is dumped with
-- the data, so a restored database keeps handing out higher tokens.
CREATE SEQUENCE inbox.lease_tokens;
COMMENT ON SEQUENCE inbox.lease_tokens IS 'fencing tokens handed out by acquire';
SELECT pg_catalog.pg_extension_config_dump('inbox.lease_tokens', '');

CREATE FUNCTION inbox.acquire(inbox pg_catalog.regclass, key pg_catalog.text,
                                    lease pg_catalog.interval,
                                    fingerprint pg_catalog.bytea DEFAULT NULL,
                                    session_bound boolean DEFAULT false,
                                    OUT status inbox.lease_status, OUT token pg_catalog.int8,
                                    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.acquire(inbox pg_catalog.regclass, key pg_catalog.uuid,
                                    lease pg_catalog.interval,
                                    fingerprint pg_catalog.bytea DEFAULT NULL,
                                    session_bound boolean DEFAULT false,
                                    OUT status inbox.lease_status, OUT token pg_catalog.int8,
                                    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.acquire(inbox pg_catalog.regclass, key pg_catalog.int8,
                                    lease pg_catalog.interval,
                                    fingerprint pg_catalog.bytea DEFAULT NULL,
                                    session_bound boolean DEFAULT false,
                                    OUT status inbox.lease_status, OUT token pg_catalog.int8,
                                    OUT result pg_catalog.jsonb)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_acquire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.acquire(pg_catalog.regclass, pg_catalog.text, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'take a lease on an idempotency key, commit, then run the outside effect: acquired, in_progress or completed';
COMMENT ON FUNCTION inbox.acquire(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'take a lease on an idempotency key, commit, then run the outside effect: acquired, in_progress or completed';
COMMENT ON FUNCTION inbox.acquire(pg_catalog.regclass, pg_catalog.int8, pg_catalog.interval, pg_catalog.bytea, boolean) IS
    'take a lease on an idempotency key, commit, then run the outside effect: acquired, in_progress or completed';

CREATE FUNCTION inbox.finish(inbox pg_catalog.regclass, key pg_catalog.text,
                                   token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.finish(inbox pg_catalog.regclass, key pg_catalog.uuid,
                                   token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.finish(inbox pg_catalog.regclass, key pg_catalog.int8,
                                   token pg_catalog.int8, result pg_catalog.jsonb DEFAULT NULL)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_finish'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.finish(pg_catalog.regclass, pg_catalog.text, pg_catalog.int8, pg_catalog.jsonb) IS
    'mark the lease''s attempt done and store its result; a stale token is an error (55I01)';
COMMENT ON FUNCTION inbox.finish(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.int8, pg_catalog.jsonb) IS
    'mark the lease''s attempt done and store its result; a stale token is an error (55I01)';
COMMENT ON FUNCTION inbox.finish(pg_catalog.regclass, pg_catalog.int8, pg_catalog.int8, pg_catalog.jsonb) IS
    'mark the lease''s attempt done and store its result; a stale token is an error (55I01)';

CREATE FUNCTION inbox.release(inbox pg_catalog.regclass, key pg_catalog.text,
                                    token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.release(inbox pg_catalog.regclass, key pg_catalog.uuid,
                                    token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION inbox.release(inbox pg_catalog.regclass, key pg_catalog.int8,
                                    token pg_catalog.int8)
RETURNS void AS 'MODULE_PATHNAME', 'inbox_release'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.release(pg_catalog.regclass, pg_catalog.text, pg_catalog.int8) IS
    'forget a failed attempt so that a retry may run; a stale token is an error (55I01)';
COMMENT ON FUNCTION inbox.release(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.int8) IS
    'forget a failed attempt so that a retry may run; a stale token is an error (55I01)';
COMMENT ON FUNCTION inbox.release(pg_catalog.regclass, pg_catalog.int8, pg_catalog.int8) IS
    'forget a failed attempt so that a retry may run; a stale token is an error (55I01)';

-- Observability (section 6 of the SPEC).
CREATE FUNCTION inbox.live_counters(inbox pg_catalog.regclass,
                                          OUT claims pg_catalog.int8, OUT duplicates pg_catalog.int8,
                                          OUT in_progress pg_catalog.int8,
                                          OUT fingerprint_conflicts pg_catalog.int8,
                                          OUT takeovers pg_catalog.int8, OUT purged pg_catalog.int8)
RETURNS record AS 'MODULE_PATHNAME', 'inbox_live_counters'
LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION inbox.live_counters(pg_catalog.regclass) IS
    'counters of an inbox since the server started; NULL unless the library is in shared_preload_libraries';

CREATE FUNCTION inbox.oldest_claim(inbox pg_catalog.regclass)
RETURNS pg_catalog.timestamptz AS 'MODULE_PATHNAME', 'inbox_oldest_claim'
LANGUAGE C STABLE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.oldest_claim(pg_catalog.regclass) IS
    'when the oldest claim still stored was made; NULL if none or if the caller may not read the inbox';

-- oldest_claim and live_counters never fail for one inbox: they answer NULL for an
-- inbox the caller may not read, or whose owner altered what they read, so the
-- other inboxes' rows are unaffected.

/*
 * Streams (section 5 of the SPEC): the offset of the last message applied, per
 * inbox, topic and partition, committed with the effect.  One row per partition,
 * however many messages.  Written only by advance, with the rights the caller
 * has on the inbox; a configuration table, so pg_dump keeps the positions.
 */
CREATE TABLE inbox.positions (
    inbox       pg_catalog.regclass NOT NULL,
    topic       pg_catalog.text NOT NULL,
    "partition" pg_catalog.int4 NOT NULL
                CONSTRAINT positions_partition_check CHECK ("partition" OPERATOR(pg_catalog.>=) 0),
    "offset"    pg_catalog.int8
                CONSTRAINT positions_offset_check CHECK ("offset" OPERATOR(pg_catalog.>=) 0),
    advanced_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
    generation  pg_catalog.int8
                CONSTRAINT positions_generation_check CHECK (generation OPERATOR(pg_catalog.>=) 0),
    PRIMARY KEY (inbox, topic, "partition")
);
COMMENT ON TABLE inbox.positions IS
    'per inbox, topic and partition: the offset up to which every message is applied (NULL: none yet) and the fencing generation; written only by advance, claim_offset and fence';
SELECT pg_catalog.pg_extension_config_dump('inbox.positions', '');

CREATE FUNCTION inbox.advance(inbox pg_catalog.regclass, topic pg_catalog.text,
                                    "partition" pg_catalog.int4, "offset" pg_catalog.int8)
RETURNS boolean AS 'MODULE_PATHNAME', 'inbox_advance'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inbox.advance(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int8) IS
    'record offset as applied for the partition in this transaction: true if it is past the stored one, false if already applied';

CREATE FUNCTION inbox.position(inbox pg_catalog.regclass, topic pg_catalog.text,
                                     "partition" pg_catalog.int4)
RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'inbox_position'
LANGUAGE C STABLE PARALLEL UNSAFE;
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
CREATE VIEW inbox.streams WITH (security_barrier) AS
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

CREATE FUNCTION inbox.dedup_trigger()
RETURNS trigger AS 'MODULE_PATHNAME', 'inbox_dedup_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE SECURITY INVOKER;
COMMENT ON FUNCTION inbox.dedup_trigger() IS
    'BEFORE INSERT row trigger, with arguments (inbox, id column): claims each row''s id and drops rows already seen';

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

-- After the failures tables, whose counts it shows.
CREATE VIEW inbox.stats WITH (security_barrier) AS
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
GRANT SELECT ON inbox.stats TO PUBLIC;

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

-- Objects added here are added to the update script that introduces them too, word for word.
