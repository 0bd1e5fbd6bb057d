-- Claims skip the executor only for inboxes that are exactly what create_inbox
-- made.  Whatever a user adds to an inbox table must still apply to every claim,
-- exactly as to the INSERT ... ON CONFLICT DO NOTHING it stands for.
SELECT inbox.create_inbox('paths_inbox');

-- The plain shape: claims and duplicates, index and heap agree.
BEGIN;
SELECT inbox.claim('paths_inbox', 'p1'), inbox.claim('paths_inbox', 'p1'), inbox.claim('paths_inbox', 'p2');
SELECT message_id, claimed_at = now() AS claimed_now, fingerprint IS NULL AS no_fingerprint
  FROM paths_inbox ORDER BY 1;
COMMIT;
SET enable_seqscan = off;
SELECT count(*) AS via_index FROM paths_inbox WHERE message_id IN ('p1', 'p2');
RESET enable_seqscan;
-- Within one statement, later claims see earlier ones.
SELECT count(*) FILTER (WHERE c) AS fresh
  FROM (SELECT inbox.claim('paths_inbox', 'same-' || (i % 3)) AS c FROM generate_series(1, 9) i) s;
-- A rolled-back claim is gone.
BEGIN;
SELECT inbox.claim('paths_inbox', 'p3');
ROLLBACK;
SELECT inbox.claim('paths_inbox', 'p3');

-- A trigger on the inbox fires for claims.
CREATE FUNCTION paths_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'claim of % seen by a trigger', NEW.message_id;
    RETURN NEW;
END $$;
CREATE TRIGGER paths_note BEFORE INSERT ON paths_inbox FOR EACH ROW EXECUTE FUNCTION paths_note();
SELECT inbox.claim('paths_inbox', 'p4');
DROP TRIGGER paths_note ON paths_inbox;
-- A column the user added, with a default and NOT NULL, is filled.
ALTER TABLE paths_inbox ADD COLUMN source text NOT NULL DEFAULT 'kafka';
SELECT inbox.claim('paths_inbox', 'p5');
SELECT message_id, source FROM paths_inbox WHERE message_id = 'p5';
ALTER TABLE paths_inbox DROP COLUMN source;
-- A CHECK constraint is checked.
ALTER TABLE paths_inbox ADD CONSTRAINT no_test_ids CHECK (message_id NOT LIKE 'test-%');
\set VERBOSITY terse
SELECT inbox.claim('paths_inbox', 'test-1');
\echo :SQLSTATE
\set VERBOSITY default
-- An id that passes it is claimed, once.
SELECT inbox.claim('paths_inbox', 'ok-1') AS fresh, inbox.claim('paths_inbox', 'ok-1') AS again;
ALTER TABLE paths_inbox DROP CONSTRAINT no_test_ids;
-- So is a CHECK constraint that calls the user's own function (which a claim
-- without the executor never runs: the SQL path does).
CREATE FUNCTION paths_allowed(id text) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS $$ SELECT id NOT LIKE 'bad-%' $$;
ALTER TABLE paths_inbox ADD CONSTRAINT allowed CHECK (paths_allowed(message_id));
\set VERBOSITY terse
SELECT inbox.claim('paths_inbox', 'bad-1');
\echo :SQLSTATE
\set VERBOSITY default
SELECT inbox.claim('paths_inbox', 'ok-2') AS fresh, inbox.claim('paths_inbox', 'ok-2') AS again;
ALTER TABLE paths_inbox DROP CONSTRAINT allowed;
DROP FUNCTION paths_allowed(text);
-- A check that fails while it is evaluated fails the claim with its own error.
ALTER TABLE paths_inbox ADD CONSTRAINT divides CHECK (10 / (length(message_id) - 3) IS NOT NULL);
\set VERBOSITY terse
SELECT inbox.claim('paths_inbox', 'abc');
\echo :SQLSTATE
\set VERBOSITY default
SELECT inbox.claim('paths_inbox', 'abcd') AS fresh;
ALTER TABLE paths_inbox DROP CONSTRAINT divides;
-- A check on a column of the user's own type (whose operators could be the
-- user's): claims go on, the column left NULL.
CREATE TYPE paths_mood AS ENUM ('glad', 'sad');
ALTER TABLE paths_inbox ADD COLUMN mood paths_mood CHECK (mood IS DISTINCT FROM 'sad');
SELECT inbox.claim('paths_inbox', 'moody') AS fresh, inbox.claim('paths_inbox', 'moody') AS again;
ALTER TABLE paths_inbox DROP COLUMN mood;
DROP TYPE paths_mood;
-- claimed_at's default is honoured if the user changed it.
ALTER TABLE paths_inbox ALTER COLUMN claimed_at SET DEFAULT '2000-01-01 00:00:00+00';
SELECT inbox.claim('paths_inbox', 'p6');
SELECT claimed_at FROM paths_inbox WHERE message_id = 'p6';
ALTER TABLE paths_inbox ALTER COLUMN claimed_at SET DEFAULT now();
-- Another unique index (here partial, on an expression) applies as it would to the
-- INSERT: only message_id is the arbiter, a conflict elsewhere is an error.
CREATE UNIQUE INDEX paths_one_per_prefix ON paths_inbox ((left(message_id, 2)))
    WHERE message_id LIKE 'u%';
SELECT inbox.claim('paths_inbox', 'u1a'), inbox.claim('paths_inbox', 'u2a'), inbox.claim('paths_inbox', 'u1a');
\set VERBOSITY terse
SELECT inbox.claim('paths_inbox', 'u1b');
\echo :SQLSTATE
\set VERBOSITY default
DROP INDEX paths_one_per_prefix;
-- Row-level security applies to the claim.
CREATE ROLE regress_paths_tenant;
GRANT SELECT, INSERT ON paths_inbox TO regress_paths_tenant;
ALTER TABLE paths_inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_ids ON paths_inbox TO regress_paths_tenant
    USING (message_id LIKE 'tenant-%') WITH CHECK (message_id LIKE 'tenant-%');
SET ROLE regress_paths_tenant;
SELECT inbox.claim('paths_inbox', 'tenant-1'), inbox.claim('paths_inbox', 'tenant-1');
SELECT inbox.claim('paths_inbox', 'other-1');
\echo :SQLSTATE
RESET ROLE;
ALTER TABLE paths_inbox DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant_ids ON paths_inbox;
-- A caller without INSERT gets the table's own error.
REVOKE INSERT ON paths_inbox FROM regress_paths_tenant;
SET ROLE regress_paths_tenant;
SELECT inbox.claim('paths_inbox', 'tenant-2');
\echo :SQLSTATE
RESET ROLE;
DROP OWNED BY regress_paths_tenant;
DROP ROLE regress_paths_tenant;
-- A read-only transaction refuses the claim.
BEGIN READ ONLY;
SELECT inbox.claim('paths_inbox', 'p9');
\echo :SQLSTATE
ROLLBACK;
SELECT count(*) AS p9_claims FROM paths_inbox WHERE message_id = 'p9';
-- Every claim above left exactly one row per id.
SELECT count(*) AS rows, count(DISTINCT message_id) AS ids FROM paths_inbox;
SELECT inbox.drop_inbox('paths_inbox');
DROP FUNCTION paths_note();
