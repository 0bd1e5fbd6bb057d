\echo Use "ALTER EXTENSION idempotent_inbox UPDATE TO '0.2'" to load this file. \quit

/*
 * 0.1 to 0.2: the end state is exactly that of CREATE EXTENSION at 0.2 (the update
 * test compares every member object), and no row of the registry, the positions or
 * any inbox table is touched.
 *
 * Written with the same rules as idempotent_inbox--0.2.sql: every object named
 * inbox.x or pg_catalog.x, every operator OPERATOR(pg_catalog.op).  While this runs,
 * search_path is the schema 0.1 was installed in (inbox), so an unqualified name here
 * could pick an object someone put there.
 *
 * The schema.  0.1 let CREATE EXTENSION create schema inbox or adopt an existing one;
 * 0.2 creates it in its script and refuses one it did not create.  The update cannot
 * tell who created the schema, so it:
 *   - warns about every object in the schema that is not part of the extension, and
 *     about grants of CREATE on it;
 *   - refuses when the schema's owner is not a superuser (whoever owns it could have
 *     put objects there that a superuser's session would run, as in issue 9);
 *   - then makes the schema a member of the extension and records the extension in
 *     pg_catalog, as CREATE EXTENSION at 0.2 does, so that DROP EXTENSION drops the
 *     schema and pg_dump writes the same CREATE EXTENSION for both.  No command moves
 *     a non-relocatable extension between schemas, so the two catalog rows involved
 *     (pg_extension.extnamespace and the extension's dependency on its schema) are
 *     written directly: the only catalog writes of this script.
 */

DO $$
DECLARE
    ext_oid pg_catalog.oid;
    schema_oid pg_catalog.oid;
    owner_name pg_catalog.name;
    owner_is_superuser boolean;
    foreign_objects pg_catalog.text;
BEGIN
    SELECT e.oid, e.extnamespace, r.rolname, r.rolsuper
      INTO ext_oid, schema_oid, owner_name, owner_is_superuser
      FROM pg_catalog.pg_extension e
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
      JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) n.nspowner
     WHERE e.extname OPERATOR(pg_catalog.=) 'idempotent_inbox';

    IF schema_oid OPERATOR(pg_catalog.<>) 'inbox'::pg_catalog.regnamespace::pg_catalog.oid THEN
        RAISE EXCEPTION 'idempotent_inbox 0.1 is not installed in schema inbox'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('It is recorded in schema %s.', schema_oid::pg_catalog.regnamespace),
                  HINT = 'Version 0.1 could only be installed in schema inbox; check pg_extension.';
    END IF;

    SELECT pg_catalog.string_agg(pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid), ', '
                                 ORDER BY pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid))
      INTO foreign_objects
      FROM pg_catalog.pg_depend d
     WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
       AND d.refobjid OPERATOR(pg_catalog.=) schema_oid
       AND d.deptype OPERATOR(pg_catalog.=) 'n'
       AND NOT (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                AND d.objid OPERATOR(pg_catalog.=) ext_oid)
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend m
                        WHERE m.classid OPERATOR(pg_catalog.=) d.classid
                          AND m.objid OPERATOR(pg_catalog.=) d.objid
                          AND m.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
                          AND m.refobjid OPERATOR(pg_catalog.=) ext_oid
                          AND m.deptype OPERATOR(pg_catalog.=) 'e');
    IF EXISTS (SELECT 1
                 FROM pg_catalog.pg_namespace n,
                      LATERAL pg_catalog.aclexplode(n.nspacl) a
                WHERE n.oid OPERATOR(pg_catalog.=) schema_oid
                  AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
                  AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner) THEN
        RAISE WARNING 'roles other than its owner may create objects in schema "inbox"'
            USING DETAIL = 'A fresh install grants only USAGE to PUBLIC; the update leaves the grants as they are.',
                  HINT = 'REVOKE CREATE ON SCHEMA inbox FROM the roles that should not have it.';
    END IF;

    IF foreign_objects IS NOT NULL THEN
        RAISE WARNING 'schema "inbox" holds objects that are not part of idempotent_inbox: %', foreign_objects
            USING DETAIL = 'They stay where they are; from 0.2 on, DROP EXTENSION fails while they exist (or drops them with CASCADE).',
                  HINT = 'Move them to another schema unless you put them there on purpose.';
    END IF;

    IF NOT owner_is_superuser THEN
        RAISE EXCEPTION 'schema "inbox" is owned by role "%", which is not a superuser', owner_name
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Version 0.2 makes schema inbox part of the extension; a schema that a role other than a superuser owns may hold objects (an operator, a function) that would run with the rights of whoever uses the extension.',
                  HINT = 'Check what schema inbox holds and remove what the extension did not create, then ALTER SCHEMA inbox OWNER TO a superuser and update again.';
    END IF;

    -- The extension no longer depends on its schema: the schema is now one of its members.
    DELETE FROM pg_catalog.pg_depend d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass::pg_catalog.oid
       AND d.objid OPERATOR(pg_catalog.=) ext_oid
       AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
       AND d.refobjid OPERATOR(pg_catalog.=) schema_oid;
    UPDATE pg_catalog.pg_extension e
       SET extnamespace = 'pg_catalog'::pg_catalog.regnamespace::pg_catalog.oid
     WHERE e.oid OPERATOR(pg_catalog.=) ext_oid;
END
$$;

-- Records the schema's grants as they are now as its initial privileges (what
-- pg_dump compares against), as CREATE EXTENSION at 0.2 does with its own.
ALTER EXTENSION idempotent_inbox ADD SCHEMA inbox;
COMMENT ON SCHEMA inbox IS 'idempotent_inbox: inbox tables registry, claim functions and views';

-- CHECK constraints with built-in operators, under the names 0.1 gave them.  Adding
-- one re-checks the rows, which all passed 0.1's equivalent checks.
ALTER TABLE inbox.registry
    DROP CONSTRAINT registry_key_type_check,
    ADD CONSTRAINT registry_key_type_check
        CHECK (key_type OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.text'::pg_catalog.regtype,
                                                          'pg_catalog.uuid'::pg_catalog.regtype,
                                                          'pg_catalog.int8'::pg_catalog.regtype])),
    DROP CONSTRAINT registry_retention_check,
    ADD CONSTRAINT registry_retention_check
        CHECK (retention OPERATOR(pg_catalog.>) '0'::pg_catalog.interval);
ALTER TABLE inbox.positions
    DROP CONSTRAINT positions_partition_check,
    ADD CONSTRAINT positions_partition_check CHECK ("partition" OPERATOR(pg_catalog.>=) 0),
    DROP CONSTRAINT positions_offset_check,
    ADD CONSTRAINT positions_offset_check CHECK ("offset" OPERATOR(pg_catalog.>=) 0);

-- The event trigger's function: the same statements with built-in operators.
-- CREATE OR REPLACE keeps its owner, grants and SET search_path.
CREATE OR REPLACE FUNCTION inbox.forget_dropped_inboxes()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM inbox.registry r
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND r.relid::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM inbox.positions p
     USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0
       AND p.inbox::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid;
END
$$;

-- The views: security_barrier, built-in operators, and each keeps answering when one
-- role's object is broken.  CREATE OR REPLACE keeps their grants; the columns are
-- unchanged.

CREATE OR REPLACE VIEW inbox.inboxes WITH (security_barrier) AS
    SELECT r.relid AS inbox,
           n.nspname AS schema_name,
           c.relname AS table_name,
           r.key_type,
           r.retention,
           r.created_at
      FROM inbox.registry r
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace;

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
CREATE OR REPLACE VIEW inbox.state_machines WITH (security_barrier) AS
    SELECT t.tgrelid::pg_catalog.regclass AS target,
           CASE WHEN t.tgnargs OPERATOR(pg_catalog.=) 2 THEN a.args[1] END AS state_column,
           CASE WHEN t.tgnargs OPERATOR(pg_catalog.=) 2 THEN inbox.edges_or_null(a.args[2]) END AS edges
      FROM pg_catalog.pg_trigger t
     CROSS JOIN LATERAL (SELECT inbox.trigger_arguments(t.tgargs, t.tgnargs) AS args) a
     WHERE t.tgfoid OPERATOR(pg_catalog.=) 'inbox.guard_trigger()'::pg_catalog.regprocedure::pg_catalog.oid;
COMMENT ON VIEW inbox.state_machines IS
    'the state machines installed by guard_transitions; NULL state_column and edges for a guard_trigger whose arguments are not (column, JSON object)';

-- oldest_claim reads the table, so it is called only for an inbox that still has
-- the columns and primary key it reads (an owner may have altered or dropped them):
-- oldest_claim is NULL for any other, and the other inboxes' rows are unaffected.
CREATE OR REPLACE VIEW inbox.stats WITH (security_barrier) AS
    SELECT r.relid AS inbox,
           c.claims,
           c.duplicates,
           c.in_progress,
           c.fingerprint_conflicts,
           c.takeovers,
           c.purged,
           CASE WHEN s.readable THEN inbox.oldest_claim(r.relid) END AS oldest_claim
      FROM inbox.registry r
     CROSS JOIN LATERAL inbox.live_counters(r.relid) c
     CROSS JOIN LATERAL (
           SELECT EXISTS (
                    SELECT 1
                      FROM pg_catalog.pg_index i
                      JOIN pg_catalog.pg_attribute ka
                        ON ka.attrelid OPERATOR(pg_catalog.=) i.indrelid
                       AND ka.attnum OPERATOR(pg_catalog.=) i.indkey[0]
                     WHERE i.indrelid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
                       AND i.indisprimary
                       AND i.indnkeyatts OPERATOR(pg_catalog.=) 1
                       AND ka.attname OPERATOR(pg_catalog.=) 'message_id'
                       AND ka.atttypid OPERATOR(pg_catalog.=) r.key_type::pg_catalog.oid)
              AND EXISTS (
                    SELECT 1
                      FROM pg_catalog.pg_attribute a
                     WHERE a.attrelid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid
                       AND a.attname OPERATOR(pg_catalog.=) 'claimed_at'
                       AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.timestamptz'::pg_catalog.regtype::pg_catalog.oid
                       AND NOT a.attisdropped) AS readable) s
     WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class k
                    WHERE k.oid OPERATOR(pg_catalog.=) r.relid::pg_catalog.oid);
COMMENT ON VIEW inbox.stats IS
    'per inbox: claims, duplicates, in-progress answers, fingerprint conflicts, leases taken over and purged claims since the server started (NULL unless preloaded), and the oldest claim (NULL if the caller may not read the inbox or its owner altered its key or claimed_at)';

-- has_table_privilege is NULL for a table that no longer exists: such rows are skipped.
CREATE OR REPLACE VIEW inbox.streams WITH (security_barrier) AS
    SELECT p.inbox, p.topic, p."partition", p."offset", p.advanced_at
      FROM inbox.positions p
     WHERE pg_catalog.has_table_privilege(p.inbox::pg_catalog.oid, 'SELECT');

-- Objects new in 0.2 go above this line, written exactly as in
-- idempotent_inbox--0.2.sql (the update test compares the two installs).
