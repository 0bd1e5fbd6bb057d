-- Hostile arguments to upsert, upsert_row, transition, guard_transitions and the guard
-- trigger (issue 9, item 13): every one a clear error with its own SQLSTATE, never a
-- crash or XX000.  NULLs, empty and huge jsonb, keys naming dropped, generated and
-- system columns, a table altered between two calls, triggers that call back into the
-- same table, and guard_trigger created by hand with arguments of every wrong kind.
\set SHOW_CONTEXT never

CREATE TABLE h (id int PRIMARY KEY, v int, s text);
INSERT INTO h VALUES (1, 1, 'A');

-- NULLs in every argument.
SELECT inbox.upsert(NULL, '{"id": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('h', NULL);
\echo :SQLSTATE
SELECT inbox.upsert('h', '{"id": 1, "v": 1}', NULL, NULL) AS null_key_and_version;
SELECT inbox.upsert('h', '{"id": 1}', ARRAY[NULL]::text[]);
\echo :SQLSTATE
SELECT inbox.upsert_row(NULL::h);
\echo :SQLSTATE
SELECT inbox.upsert_row(NULL::int);
\echo :SQLSTATE
SELECT inbox.transition(NULL, '{"id": 1}', 's', 'B');
\echo :SQLSTATE
SELECT inbox.transition('h', NULL, 's', 'B');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', NULL, 'B');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', 's', NULL);
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', 's', NULL, 'B');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', 's', ARRAY['A', NULL], 'B');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": null}', 's', ARRAY['A'], 'B') AS null_key_value;
SELECT inbox.guard_transitions(NULL, 's', '{}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('h', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('h', 's', NULL);
\echo :SQLSTATE
SELECT inbox.unguard_transitions(NULL, 's');
\echo :SQLSTATE
SELECT inbox.unguard_transitions('h', NULL);
\echo :SQLSTATE

-- Empty, wrong-shaped and huge jsonb.
SELECT inbox.upsert('h', '{}');
\echo :SQLSTATE
SELECT inbox.upsert('h', 'null');
\echo :SQLSTATE
SELECT inbox.upsert('h', '[]');
\echo :SQLSTATE
SELECT inbox.transition('h', '{}', 's', ARRAY['A'], 'B');
\echo :SQLSTATE
SELECT inbox.transition('h', '"x"', 's', ARRAY['A'], 'B');
\echo :SQLSTATE
SELECT inbox.guard_transitions('h', 's', '[]');
\echo :SQLSTATE
SELECT inbox.guard_transitions('h', 's', '{"A": "B"}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('h', 's', '{"A": [["B"]]}');
\echo :SQLSTATE
SELECT inbox.guard_transitions('h', 's', '{"A": [1]}');
\echo :SQLSTATE
SELECT inbox.upsert('h', jsonb_build_object('id', 1, repeat('k', 100000), 1));
\echo :SQLSTATE
SELECT inbox.upsert('h', (SELECT jsonb_object_agg('c' || g, g) FROM generate_series(1, 5000) g));
\echo :SQLSTATE
SELECT inbox.upsert('h', jsonb_build_object('id', 2, 's', repeat('x', 2000000))) AS huge_fresh,
       inbox.upsert('h', jsonb_build_object('id', 2, 's', repeat('x', 2000000))) AS huge_replay;
SELECT inbox.transition('h', '{"id": 2}', 's', ARRAY[repeat('x', 2000000)], repeat('y', 2000000)) AS huge_moved,
       inbox.transition('h', '{"id": 2}', 's', ARRAY[repeat('x', 2000000)], repeat('y', 2000000)) AS huge_already;
SELECT id, v, length(s) FROM h ORDER BY id;

-- Keys naming system, dropped and generated columns.
SELECT inbox.upsert('h', '{"id": 1, "ctid": "(0,1)"}');
\echo :SQLSTATE
SELECT inbox.upsert('h', '{"id": 1}', ARRAY['xmin']);
\echo :SQLSTATE
SELECT inbox.upsert('h', '{"id": 1, "v": 1}', version_column => 'xmin');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"ctid": "(0,1)"}', 's', ARRAY['A'], 'B');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', 'tableoid', ARRAY['A'], 'B');
\echo :SQLSTATE
SELECT inbox.guard_transitions('h', 'xmax', '{}');
\echo :SQLSTATE
ALTER TABLE h ADD COLUMN gone int, ADD COLUMN twice int GENERATED ALWAYS AS (v * 2) STORED,
    ADD COLUMN n int GENERATED ALWAYS AS IDENTITY;
ALTER TABLE h DROP COLUMN gone;
SELECT inbox.upsert('h', '{"id": 1, "gone": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('h', '{"id": 1, "........pg.dropped.5........": 1}');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', 'gone', ARRAY['1'], '2');
\echo :SQLSTATE
-- A generated column takes no value on either path (a replay included), as in INSERT.
SELECT inbox.upsert('h', '{"id": 1, "twice": 2}');
\echo :SQLSTATE
SELECT inbox.upsert('h', '{"id": 1, "n": 1}');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', 'twice', ARRAY['2'], '4');
\echo :SQLSTATE
SELECT inbox.transition('h', '{"id": 1}', 'n', ARRAY['1'], '2');
\echo :SQLSTATE
-- upsert_row takes the row as it is: generated columns are left out.
CREATE TABLE g (id int PRIMARY KEY, v int, twice int GENERATED ALWAYS AS (v * 2) STORED);
SELECT inbox.upsert_row(ROW(1, 1, NULL)::g) AS fresh, inbox.upsert_row(ROW(1, 1, 99)::g) AS replay,
       inbox.upsert_row(ROW(1, 2, 99)::g) AS change;
SELECT inbox.upsert_row(t) AS own_row FROM g t;
SELECT * FROM g;

-- Altered between two calls: nothing cached about the old shape is trusted.
CREATE TABLE rt (id int PRIMARY KEY, v int, s text);
SELECT inbox.upsert('rt', '{"id": 1, "v": 1, "s": "A"}') AS fresh,
       inbox.upsert('rt', '{"id": 1, "v": 1, "s": "A"}') AS replay,
       inbox.transition('rt', '{"id": 1}', 's', ARRAY['A'], 'B') AS moved;
ALTER TABLE rt ALTER COLUMN id TYPE bigint, ALTER COLUMN v TYPE text,
    ALTER COLUMN s TYPE boolean USING false;
SELECT inbox.upsert('rt', '{"id": 1, "v": "x", "s": "f"}') AS change,
       inbox.upsert('rt', '{"id": 1, "v": "x", "s": "no"}') AS replay,
       inbox.transition('rt', '{"id": 1}', 's', ARRAY['false'], 'true') AS moved,
       inbox.transition('rt', '{"id": 1}', 's', ARRAY['false'], 'true') AS already;
ALTER TABLE rt DROP COLUMN v;
SELECT inbox.upsert('rt', '{"id": 1, "v": "x"}');
\echo :SQLSTATE
ALTER TABLE rt ADD COLUMN v int;
SELECT inbox.upsert('rt', '{"id": 1, "v": 5}') AS change, inbox.upsert('rt', '{"id": 1, "v": 5}') AS replay;
ALTER TABLE rt RENAME COLUMN v TO w;
SELECT inbox.upsert('rt', '{"id": 1, "v": 5}');
\echo :SQLSTATE
SELECT inbox.upsert('rt', '{"id": 1, "w": 5}') AS renamed_replay;
ALTER TABLE rt DROP CONSTRAINT rt_pkey;
SELECT inbox.upsert('rt', '{"id": 1, "w": 5}');
\echo :SQLSTATE
SELECT inbox.transition('rt', '{"id": 1}', 's', ARRAY['true'], 'false');
\echo :SQLSTATE
CREATE UNIQUE INDEX rt_id ON rt (id);
SELECT inbox.upsert('rt', '{"id": 1, "w": 6}', ARRAY['id']) AS by_unique_index;
SELECT * FROM rt;

-- A schema renamed between two calls, and another table given its old name: the
-- statements kept for the table must not write into the newcomer.
CREATE SCHEMA regress_victim;
CREATE TABLE regress_victim.t (id int PRIMARY KEY, v text, s text);
SELECT inbox.upsert('regress_victim.t', '{"id": 1, "v": "a", "s": "A"}') AS fresh,
       inbox.transition('regress_victim.t', '{"id": 1}', 's', ARRAY['A'], 'B') AS moved;
SELECT 'regress_victim.t'::regclass::oid AS victim_oid \gset
ALTER SCHEMA regress_victim RENAME TO regress_moved;
CREATE SCHEMA regress_victim;
CREATE TABLE regress_victim.t (id int PRIMARY KEY, v text, s text);
INSERT INTO regress_victim.t VALUES (1, 'decoy', 'B');
SELECT inbox.upsert(:victim_oid::regclass, '{"id": 2, "v": "secret", "s": "A"}') AS fresh,
       inbox.upsert(:victim_oid::regclass, '{"id": 1, "v": "b"}') AS change,
       inbox.transition(:victim_oid::regclass, '{"id": 2}', 's', ARRAY['A'], 'C') AS moved;
SELECT 'moved' AS schema, * FROM regress_moved.t
UNION ALL SELECT 'decoy', * FROM regress_victim.t ORDER BY 1, 2;
DROP SCHEMA regress_victim CASCADE;
DROP SCHEMA regress_moved CASCADE;

-- Triggers that call back into upsert and transition on the same table, and change
-- the table's catalog entry, while the outer call runs.
CREATE TABLE re (id int PRIMARY KEY, v text, s text);
CREATE FUNCTION re_again() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id < 10 THEN
    PERFORM inbox.upsert('re', jsonb_build_object('id', NEW.id + 10, 'v', NEW.v, 's', 'A'));
    PERFORM inbox.transition('re', jsonb_build_object('id', NEW.id + 10), 's', ARRAY['A'], 'B');
    EXECUTE format('COMMENT ON TABLE re IS %L', NEW.v);
    PERFORM inbox.upsert('re', jsonb_build_object('id', NEW.id + 20, 'v', NEW.v));
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER re_again AFTER INSERT OR UPDATE ON re FOR EACH ROW EXECUTE FUNCTION re_again();
SELECT inbox.upsert('re', '{"id": 1, "v": "a"}'), inbox.upsert('re', '{"id": 2, "v": "b"}'),
       inbox.upsert('re', '{"id": 1, "v": "c"}'), inbox.upsert('re', '{"id": 1, "v": "c"}');
SELECT inbox.transition('re', '{"id": 1}', 's', ARRAY[''], 'X'),
       inbox.upsert_row(ROW(3, 'd', NULL)::re);
SELECT * FROM re ORDER BY id;
-- A trigger that alters or drops what the outer call uses is refused by the server.
UPDATE re SET s = 'X' WHERE id = 1;
CREATE FUNCTION re_alter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  ALTER TABLE re ALTER COLUMN v TYPE varchar(10);
  RETURN NEW;
END $$;
CREATE TRIGGER re_alter BEFORE UPDATE ON re FOR EACH ROW EXECUTE FUNCTION re_alter();
SELECT inbox.upsert('re', '{"id": 1, "v": "z"}');
\echo :SQLSTATE
SELECT inbox.transition('re', '{"id": 1}', 's', ARRAY['X'], 'Y');
\echo :SQLSTATE
DROP TRIGGER re_alter ON re;

-- A BEFORE INSERT trigger that skips the row: nothing is written, as by the INSERT
-- itself, on a plain and on a partitioned table (whose partition has the trigger).
CREATE TABLE skip (id int PRIMARY KEY, v text);
CREATE FUNCTION skip_it() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER skip_it BEFORE INSERT ON skip FOR EACH ROW EXECUTE FUNCTION skip_it();
CREATE TABLE pskip (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE pskip1 PARTITION OF pskip FOR VALUES FROM (0) TO (10);
CREATE TRIGGER skip_it BEFORE INSERT ON pskip1 FOR EACH ROW EXECUTE FUNCTION skip_it();
SELECT inbox.upsert('skip', '{"id": 1, "v": "a"}') AS plain, inbox.upsert('pskip', '{"id": 1, "v": "a"}') AS partitioned;
SELECT (SELECT count(*) FROM skip) AS plain_rows, (SELECT count(*) FROM pskip) AS partitioned_rows;
DROP TABLE skip, pskip;
DROP FUNCTION skip_it();

-- guard_trigger created by hand: every wrong argument is a clear error.
CREATE TABLE hm (id int PRIMARY KEY, s text);
INSERT INTO hm VALUES (1, 'A');
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', 'not json');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
SELECT inbox.transition('hm', '{"id": 1}', 's', 'B');
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', '["A", "B"]');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
SELECT inbox.transition('hm', '{"id": 1}', 's', 'B');
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', '"A"');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
SELECT inbox.transition('hm', '{"id": 1}', 's', 'B');
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', '{"A": "B"}');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
SELECT inbox.transition('hm', '{"id": 1}', 's', 'B');
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', '{"A": [{"B": 1}]}');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger();
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', '{}', 'extra');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('xmin', '{}');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('nope', '{}');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER g AFTER UPDATE ON hm FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('s', '{}');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER g ON hm;
CREATE TRIGGER g BEFORE UPDATE ON hm FOR EACH STATEMENT EXECUTE FUNCTION inbox.guard_trigger('s', '{}');
UPDATE hm SET s = 'B';
\echo :SQLSTATE
DROP TRIGGER g ON hm;
CREATE TRIGGER g BEFORE INSERT ON hm FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('s', '{}');
INSERT INTO hm VALUES (2, 'A');
\echo :SQLSTATE
DROP TRIGGER g ON hm;
SELECT inbox.guard_trigger();
\echo :SQLSTATE
-- A machine whose states the column's type no longer accepts.
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', '{"A": ["B"]}');
ALTER TABLE hm ALTER COLUMN s TYPE char(1);
UPDATE hm SET s = 'B';
SELECT inbox.transition('hm', '{"id": 1}', 's', 'A');
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', '{"B": ["CC"]}');
UPDATE hm SET s = 'C';
\echo :SQLSTATE
SELECT inbox.transition('hm', '{"id": 1}', 's', 'C');
\echo :SQLSTATE
-- guard_transitions replaces a broken machine of its own name.
DROP TRIGGER inbox_guard_s ON hm;
CREATE TRIGGER inbox_guard_s BEFORE UPDATE ON hm FOR EACH ROW
    EXECUTE FUNCTION inbox.guard_trigger('s', 'not json');
SELECT inbox.guard_transitions('hm', 's', '{"B": ["C"]}');
SELECT inbox.transition('hm', '{"id": 1}', 's', 'C') AS moved;
SELECT inbox.unguard_transitions('hm', 's') AS removed;
SELECT * FROM hm ORDER BY id;

DROP TABLE h, g, rt, re, hm;
DROP FUNCTION re_again(), re_alter();
