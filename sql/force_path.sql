-- idempotent_inbox.force_path (a developer setting, for tests) forces the order
-- of steps that claim, upsert and transition otherwise pick from what recent
-- calls did.  Each order gives the same answers; what differs is how many index
-- lookups a call makes, counted here within one transaction (scans below).
\set SHOW_CONTEXT never
SELECT inbox.create_inbox('force_inbox');
SHOW idempotent_inbox.force_path;
SET idempotent_inbox.force_path = bogus;
\echo :SQLSTATE
SELECT inbox.claim('force_inbox', 'dup', '\x01'::bytea);
CREATE TABLE force_rows (id int PRIMARY KEY, val text, state text);
INSERT INTO force_rows VALUES (1, 'first', 'new');
CREATE FUNCTION force_scans(rel regclass) RETURNS bigint LANGUAGE sql AS
$$ SELECT sum(pg_stat_get_xact_numscans(indexrelid))::bigint FROM pg_index WHERE indrelid = rel $$;

-- One call of each kind: a duplicate claim (with a fingerprint, so it must read
-- the stored row), an upsert of a new row, an upsert changing a row, and a
-- transition moving a row.  Cold averages (auto) read first except for claim.
CREATE FUNCTION force_calls(path text, id int)
RETURNS TABLE (call text, answer text, scans bigint) LANGUAGE plpgsql AS $$
DECLARE
    before bigint;
BEGIN
    PERFORM set_config('idempotent_inbox.force_path', path, true);
    before := force_scans('force_inbox');
    answer := inbox.claim('force_inbox', 'dup', '\x01'::bytea);
    call := 'duplicate claim'; scans := force_scans('force_inbox') - before; RETURN NEXT;
    before := force_scans('force_rows');
    answer := inbox.upsert('force_rows', jsonb_build_object('id', id, 'val', path));
    call := 'upsert of a new row'; scans := force_scans('force_rows') - before; RETURN NEXT;
    before := force_scans('force_rows');
    answer := inbox.upsert('force_rows', jsonb_build_object('id', 1, 'val', path));
    call := 'upsert changing a row'; scans := force_scans('force_rows') - before; RETURN NEXT;
    before := force_scans('force_rows');
    answer := inbox.transition('force_rows', '{"id": 1}', 'state',
                               ARRAY['new', 'auto', 'probe', 'insert', 'update'], path);
    call := 'transition moving a row'; scans := force_scans('force_rows') - before; RETURN NEXT;
END $$;

-- auto, cold: claim inserts first then reads (2); upsert and transition read
-- first, then insert (2) or change the row they read in place (1).
SELECT * FROM force_calls('auto', 2);
-- probe: claim's probe answers alone (1); the others read first as when cold.
SELECT * FROM force_calls('probe', 3);
-- insert: upsert's INSERT settles a new row alone (1), and on a changed row is
-- followed by the statement that settles races, INSERT ... ON CONFLICT DO
-- UPDATE (2); transition's UPDATE moves alone (1).
SELECT * FROM force_calls('insert', 4);
-- update: upsert's UPDATE settles a changed row alone (1), and on a new row is
-- followed by the read and the INSERT (3); transition's UPDATE moves alone (1).
SELECT * FROM force_calls('update', 5);
-- A row that leaves out a NOT NULL column: the INSERT would refuse it, so even
-- under insert it is not tried first, and the row is updated as under auto.
CREATE TABLE force_people (id int PRIMARY KEY, name text NOT NULL, city text);
INSERT INTO force_people VALUES (1, 'Ada', 'London');
BEGIN;
SET LOCAL idempotent_inbox.force_path = insert;
SELECT inbox.upsert('force_people', '{"id": 1, "city": "Paris"}');
COMMIT;
SELECT * FROM force_people ORDER BY id;
DROP TABLE force_people;
-- Row security: the probe would read a row the policy hides ('dup'), so under
-- probe a claim still goes through the INSERT, which the policy refuses (42501)
-- as under auto.
CREATE ROLE regress_force_reader;
GRANT USAGE ON SCHEMA inbox TO regress_force_reader;
GRANT SELECT, INSERT ON force_inbox TO regress_force_reader;
ALTER TABLE force_inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY force_own ON force_inbox USING (message_id LIKE 'mine-%');
SET ROLE regress_force_reader;
SELECT inbox.claim('force_inbox', 'dup');
\echo :SQLSTATE
SET idempotent_inbox.force_path = probe;
SELECT inbox.claim('force_inbox', 'dup');
\echo :SQLSTATE
RESET idempotent_inbox.force_path;
RESET ROLE;
DROP POLICY force_own ON force_inbox;
ALTER TABLE force_inbox DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON force_inbox FROM regress_force_reader;
REVOKE USAGE ON SCHEMA inbox FROM regress_force_reader;
DROP ROLE regress_force_reader;
-- A BEFORE INSERT trigger fires for a duplicate as ON CONFLICT DO NOTHING fires
-- it (before finding the conflict), whichever order is forced: no probe skips it.
CREATE TABLE force_fired (n int);
CREATE FUNCTION force_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO force_fired VALUES (1); RETURN NEW; END $$;
CREATE TRIGGER force_note BEFORE INSERT ON force_inbox FOR EACH ROW EXECUTE FUNCTION force_note();
SET idempotent_inbox.force_path = probe;
SELECT inbox.claim('force_inbox', 'dup') AS fresh;
RESET idempotent_inbox.force_path;
SELECT inbox.claim('force_inbox', 'dup') AS fresh;
SELECT count(*) AS trigger_fired FROM force_fired;
DROP TRIGGER force_note ON force_inbox;
DROP FUNCTION force_note();
DROP TABLE force_fired;
-- The setting was local to each call's transaction.
SHOW idempotent_inbox.force_path;
SELECT id, val, state FROM force_rows ORDER BY id;

-- A claim without fingerprint or retention takes the direct path.  While
-- duplicates are rare it inserts without looking first (no index scan for a fresh
-- id); a duplicate is then found by the insertion itself, which leaves one killed
-- row (inserted 1) before the look (scans 1).  One duplicate is enough for the next
-- claims to look first again, and a duplicate then writes nothing.  probe forces
-- the look for a fresh id too; insert skips it even right after a duplicate.
SELECT inbox.create_inbox('force_direct');
CREATE FUNCTION force_direct(path text, id text)
RETURNS TABLE (answer boolean, scans bigint, inserted bigint) LANGUAGE plpgsql AS $$
DECLARE
    before_scans bigint := force_scans('force_direct');
    before_ins bigint := pg_stat_get_xact_tuples_inserted('force_direct'::regclass);
BEGIN
    PERFORM set_config('idempotent_inbox.force_path', path, true);
    answer := inbox.claim('force_direct', id);
    scans := force_scans('force_direct') - before_scans;
    inserted := pg_stat_get_xact_tuples_inserted('force_direct'::regclass) - before_ins;
    RETURN NEXT;
END $$;
SELECT 'fresh, cold' AS "case", * FROM force_direct('auto', 'd1');
SELECT 'duplicate, cold' AS "case", * FROM force_direct('auto', 'd1');
SELECT 'duplicate after one' AS "case", * FROM force_direct('auto', 'd1');
SELECT 'fresh, probe' AS "case", * FROM force_direct('probe', 'd2');
SELECT 'duplicate, insert' AS "case", * FROM force_direct('insert', 'd2');
SELECT message_id FROM force_direct ORDER BY 1;
DROP FUNCTION force_direct(text, text);
SELECT inbox.drop_inbox('force_direct');

DROP FUNCTION force_calls(text, int);
DROP FUNCTION force_scans(regclass);
DROP TABLE force_rows;
SELECT inbox.drop_inbox('force_inbox');
