-- inbox.purge runs the batch as the inbox's owner, under
-- SECURITY_RESTRICTED_OPERATION and with search_path pinned, whoever calls it:
-- an owner's trigger, rule or index predicate never runs with a superuser's
-- rights (nor another caller's), as with VACUUM and ANALYZE.
\set VERBOSITY terse
SELECT current_user AS regress_superuser \gset
CREATE ROLE regress_purge_owner LOGIN;
CREATE ROLE regress_purge_admin LOGIN;
CREATE ROLE regress_purge_reader LOGIN;
CREATE SCHEMA purge_owner AUTHORIZATION regress_purge_owner;
GRANT EXECUTE ON FUNCTION inbox.purge(regclass, int)
  TO regress_purge_owner, regress_purge_admin, regress_purge_reader;
GRANT EXECUTE ON FUNCTION inbox.set_retention(regclass, interval) TO regress_purge_owner;

-- Everything below is set up by the owner in its own session, so that this
-- superuser session has not read (and cached) the index predicate itself.
\c - regress_purge_owner
SET search_path = purge_owner, public;
CREATE TABLE log (what text, cur name, sess name, super bool, path text, escalation text);
-- Tries to make the owner superuser; says how that went.
CREATE FUNCTION escalate() RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  EXECUTE 'ALTER ROLE regress_purge_owner SUPERUSER';
  RETURN 'succeeded';
EXCEPTION WHEN OTHERS THEN
  RETURN 'refused';
END $$;
CREATE FUNCTION spy(what text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO purge_owner.log
    SELECT what, current_user, session_user, r.rolsuper,
           pg_catalog.current_setting('search_path'), purge_owner.escalate()
      FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
  RETURN true;
END $$;
CREATE FUNCTION spy_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM purge_owner.spy(TG_NAME); RETURN OLD; END $$;
-- An immutable predicate with constant arguments is evaluated when the index is
-- loaded, as the query that plans a statement on the table.
CREATE FUNCTION spy_predicate(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN purge_owner.spy('index predicate'); END $$;

SELECT inbox.create_inbox('purge_owner.box', 'text', '1 hour');
CREATE TRIGGER spy_before_delete BEFORE DELETE ON box
  FOR EACH ROW EXECUTE FUNCTION spy_trigger();
CREATE RULE spy_rule AS ON DELETE TO box DO ALSO
  INSERT INTO purge_owner.log
    SELECT 'rule', current_user, session_user, r.rolsuper,
           pg_catalog.current_setting('search_path'), purge_owner.escalate()
      FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
CREATE INDEX spy_partial ON box (message_id) WHERE spy_predicate(0);
SELECT count(*) FROM (SELECT inbox.claim('purge_owner.box', 'old-' || i)
                        FROM generate_series(1, 3) i) c;
-- No window while the claims are made old: with the library preloaded, the
-- background purge would otherwise get to them before the calls below.  Each
-- purge below sets the window in its own transaction.
SELECT inbox.set_retention('purge_owner.box', NULL);
UPDATE box SET claimed_at = now() - interval '2 hours';
SELECT inbox.claim('purge_owner.box', 'fresh');
-- An inbox whose trigger fails, to see the caller's identity come back.
SELECT inbox.create_inbox('purge_owner.failing', 'text', '1 hour');
CREATE FUNCTION fail_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'failing as %', current_user; END $$;
CREATE TRIGGER fail_before_delete BEFORE DELETE ON failing
  FOR EACH ROW EXECUTE FUNCTION fail_trigger();
SELECT inbox.claim('purge_owner.failing', 'old');
UPDATE failing SET claimed_at = now() - interval '2 hours';
-- Row-level security that hides the old claims from the reader.
ALTER TABLE failing ENABLE ROW LEVEL SECURITY;
CREATE POLICY fresh_only ON failing USING (claimed_at > now() - interval '1 hour');
GRANT SELECT, UPDATE, DELETE ON failing TO regress_purge_reader;
GRANT USAGE ON SCHEMA purge_owner TO regress_purge_reader, regress_purge_admin;
GRANT SELECT, UPDATE, DELETE ON box TO regress_purge_admin;
TRUNCATE log;

-- A superuser purges: everything the owner put on the table ran as the owner,
-- restricted, with the pinned search_path, and could not escalate.
\c - :regress_superuser
BEGIN;
SELECT inbox.set_retention('purge_owner.box', '1 hour');
SELECT inbox.purge('purge_owner.box');
COMMIT;
-- (The predicate runs once per plan that loads the index: count only the others.)
SELECT what, cur, sess = current_user AS sess_is_caller, super, path, escalation,
       CASE WHEN what = 'index predicate' THEN 'some' ELSE count(*)::text END AS times
  FROM purge_owner.log GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_purge_owner';
-- The caller is itself again, with its own search_path.
SELECT current_user = :'regress_superuser' AS caller_back, current_setting('search_path');

-- An error inside the batch unwinds the switch too.
DO $$
BEGIN
  PERFORM inbox.purge('purge_owner.failing');
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT current_user = :'regress_superuser' AS caller_back, current_setting('search_path');
SELECT inbox.purge('purge_owner.failing');
SELECT current_user = :'regress_superuser' AS caller_back, current_setting('search_path');

-- A role that is not the owner needs its own rights (purge's are SELECT, UPDATE
-- and DELETE); with them the batch runs as the owner all the same.
\c - regress_purge_owner
SELECT inbox.set_retention('purge_owner.box', NULL);
UPDATE purge_owner.box SET claimed_at = now() - interval '2 hours' WHERE message_id = 'fresh';
TRUNCATE purge_owner.log;
\c - :regress_superuser
BEGIN;
SELECT inbox.set_retention('purge_owner.box', '1 hour');
SET LOCAL ROLE regress_purge_admin;
SELECT inbox.purge('purge_owner.box');
COMMIT;
SELECT what, cur, super, escalation,
       CASE WHEN what = 'index predicate' THEN 'some' ELSE count(*)::text END AS times
  FROM purge_owner.log GROUP BY 1, 2, 3, 4 ORDER BY 1;
REVOKE SELECT ON purge_owner.box FROM regress_purge_admin;
SET ROLE regress_purge_admin;
SELECT inbox.purge('purge_owner.box');
\echo :SQLSTATE
RESET ROLE;
REVOKE DELETE ON purge_owner.box FROM regress_purge_admin;
GRANT SELECT ON purge_owner.box TO regress_purge_admin;
SET ROLE regress_purge_admin;
SELECT inbox.purge('purge_owner.box');
\echo :SQLSTATE
RESET ROLE;

-- Row-level security applies to the reader, and purge would delete as the owner:
-- refused (0A000, as the functions that answer from stored columns), rather than
-- deleting rows its policies hide.
SET ROLE regress_purge_reader;
SELECT inbox.purge('purge_owner.failing');
\echo :SQLSTATE
RESET ROLE;

-- A superuser reading inbox.stats: oldest_claim plans a query on the inbox,
-- which evaluates the owner's index predicate; as the owner, restricted.
\c - :regress_superuser
TRUNCATE purge_owner.log;
SELECT oldest_claim IS NOT NULL AS has_oldest FROM inbox.stats WHERE inbox = 'purge_owner.box'::regclass;
SELECT what, cur, super, path, escalation FROM purge_owner.log ORDER BY 1;

SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_purge_owner';
DROP SCHEMA purge_owner CASCADE;
REVOKE EXECUTE ON FUNCTION inbox.purge(regclass, int)
  FROM regress_purge_owner, regress_purge_admin, regress_purge_reader;
REVOKE EXECUTE ON FUNCTION inbox.set_retention(regclass, interval) FROM regress_purge_owner;
DROP ROLE regress_purge_owner, regress_purge_admin, regress_purge_reader;
