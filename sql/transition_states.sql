-- transition compares states one way on every path (issue 9, item 13): by their text
-- form as values of the state column's type.  A state given as text is read by the
-- type's input function (typmod applied) and written back by its output function, a
-- stored state written by the output function.  The direct read (a role that may
-- read the table), the statements (a role with column privileges only), a state
-- machine and its trigger all agree, for boolean, char(n), enum, domain and varchar.
\set SHOW_CONTEXT never

CREATE TYPE regress_mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN regress_code AS text CHECK (VALUE ~ '^[A-Z]+$');
CREATE TABLE st (id int PRIMARY KEY, b boolean, c char(4), e regress_mood, d regress_code,
                 v varchar(8), n numeric(6,2));
INSERT INTO st SELECT g, false, 'A', 'sad', 'NEW', 'new', 1 FROM generate_series(1, 2) g;

-- Row 1 through the direct read.
SELECT inbox.transition('st', '{"id": 1}', 'b', ARRAY['false'], 'true') AS moved,
       inbox.transition('st', '{"id": 1}', 'b', ARRAY['false'], 'true') AS already,
       inbox.transition('st', '{"id": 1}', 'b', ARRAY['f'], 'yes') AS already_spelled,
       inbox.transition('st', '{"id": 1}', 'b', ARRAY['off'], 'on') AS already_on;
SELECT inbox.transition('st', '{"id": 1}', 'c', ARRAY['A'], 'B') AS moved,
       inbox.transition('st', '{"id": 1}', 'c', ARRAY['A'], 'B') AS already,
       inbox.transition('st', '{"id": 1}', 'c', ARRAY['A   '], 'B   ') AS already_padded,
       inbox.transition('st', '{"id": 1}', 'c', ARRAY['B'], 'C') AS moved_padded_source;
SELECT inbox.transition('st', '{"id": 1}', 'e', ARRAY['sad'], 'ok') AS moved,
       inbox.transition('st', '{"id": 1}', 'e', ARRAY['sad'], 'ok') AS already;
SELECT inbox.transition('st', '{"id": 1}', 'd', ARRAY['NEW'], 'DONE') AS moved,
       inbox.transition('st', '{"id": 1}', 'd', ARRAY['NEW'], 'DONE') AS already;
SELECT inbox.transition('st', '{"id": 1}', 'v', ARRAY['new'], 'done') AS moved,
       inbox.transition('st', '{"id": 1}', 'v', ARRAY['new'], 'done') AS already;
SELECT inbox.transition('st', '{"id": 1}', 'n', ARRAY['1'], '2.0') AS moved,
       inbox.transition('st', '{"id": 1}', 'n', ARRAY['1.00'], '2') AS already;

-- Row 2 through statements: the same answers.
CREATE ROLE regress_states;
GRANT SELECT (id, b, c, e, d, v, n), UPDATE (b, c, e, d, v, n) ON st TO regress_states;
SET ROLE regress_states;
SELECT inbox.transition('st', '{"id": 2}', 'b', ARRAY['false'], 'true') AS moved,
       inbox.transition('st', '{"id": 2}', 'b', ARRAY['false'], 'true') AS already,
       inbox.transition('st', '{"id": 2}', 'b', ARRAY['f'], 'yes') AS already_spelled,
       inbox.transition('st', '{"id": 2}', 'b', ARRAY['off'], 'on') AS already_on;
SELECT inbox.transition('st', '{"id": 2}', 'c', ARRAY['A'], 'B') AS moved,
       inbox.transition('st', '{"id": 2}', 'c', ARRAY['A'], 'B') AS already,
       inbox.transition('st', '{"id": 2}', 'c', ARRAY['A   '], 'B   ') AS already_padded,
       inbox.transition('st', '{"id": 2}', 'c', ARRAY['B'], 'C') AS moved_padded_source;
SELECT inbox.transition('st', '{"id": 2}', 'e', ARRAY['sad'], 'ok') AS moved,
       inbox.transition('st', '{"id": 2}', 'e', ARRAY['sad'], 'ok') AS already;
SELECT inbox.transition('st', '{"id": 2}', 'd', ARRAY['NEW'], 'DONE') AS moved,
       inbox.transition('st', '{"id": 2}', 'd', ARRAY['NEW'], 'DONE') AS already;
SELECT inbox.transition('st', '{"id": 2}', 'v', ARRAY['new'], 'done') AS moved,
       inbox.transition('st', '{"id": 2}', 'v', ARRAY['new'], 'done') AS already;
SELECT inbox.transition('st', '{"id": 2}', 'n', ARRAY['1'], '2.0') AS moved,
       inbox.transition('st', '{"id": 2}', 'n', ARRAY['1.00'], '2') AS already;
RESET ROLE;
SELECT * FROM st ORDER BY id;

-- States that are not values of the column's type are the type's errors.
SELECT inbox.transition('st', '{"id": 1}', 'e', ARRAY['nope'], 'ok');
\echo :SQLSTATE
SELECT inbox.transition('st', '{"id": 1}', 'e', ARRAY['ok'], 'nope');
\echo :SQLSTATE
SELECT inbox.transition('st', '{"id": 1}', 'd', ARRAY['DONE'], 'lower');
\echo :SQLSTATE
SELECT inbox.transition('st', '{"id": 1}', 'v', ARRAY['done'], 'much too long');
\echo :SQLSTATE
SELECT inbox.transition('st', '{"id": 1}', 'b', ARRAY['true'], 'maybe');
\echo :SQLSTATE

-- State machines on those columns: the trigger and transition read states alike.
SELECT inbox.guard_transitions('st', 'b', '{"true": ["false"]}');
SELECT inbox.guard_transitions('st', 'c', '{"C": ["D"], "D": ["A"]}');
SELECT inbox.guard_transitions('st', 'e', '{"ok": ["happy"], "happy": ["sad"]}');
SELECT inbox.transition('st', '{"id": 1}', 'b', 'no') AS machine_moved,
       inbox.transition('st', '{"id": 1}', 'b', 'f') AS machine_already,
       inbox.transition('st', '{"id": 1}', 'c', 'D') AS machine_moved_char,
       inbox.transition('st', '{"id": 1}', 'c', 'D   ') AS machine_already_char,
       inbox.transition('st', '{"id": 1}', 'e', 'happy') AS machine_moved_enum;
SET ROLE regress_states;
SELECT inbox.transition('st', '{"id": 2}', 'b', 'no') AS machine_moved,
       inbox.transition('st', '{"id": 2}', 'b', 'f') AS machine_already,
       inbox.transition('st', '{"id": 2}', 'c', 'D') AS machine_moved_char,
       inbox.transition('st', '{"id": 2}', 'c', 'D   ') AS machine_already_char,
       inbox.transition('st', '{"id": 2}', 'e', 'happy') AS machine_moved_enum;
RESET ROLE;
UPDATE st SET b = true WHERE id = 1;
\echo :SQLSTATE
UPDATE st SET c = 'A' WHERE id = 1;
UPDATE st SET c = 'C' WHERE id = 1;
\echo :SQLSTATE
SELECT * FROM st ORDER BY id;
SELECT * FROM inbox.state_machines WHERE target = 'st'::regclass ORDER BY state_column;

DROP TABLE st;
DROP ROLE regress_states;
DROP DOMAIN regress_code;
DROP TYPE regress_mood;

-- The guarded UPDATE compares states by text form too, in three forms: an enum as a
-- value of its type, a type with an immutable output function through that
-- function, any other (timestamptz) through format(); Citus accepts the first two.
-- A table with a trigger takes the statement: every answer and row as without one.
CREATE TYPE regress_phase AS ENUM ('a', 'b', 'c');
CREATE TABLE forms_direct (id int PRIMARY KEY, b bool, c char(3), n numeric,
                           e regress_phase, i inet, ts timestamptz);
CREATE TABLE forms_sql (LIKE forms_direct INCLUDING ALL);
CREATE TABLE forms_update (LIKE forms_direct INCLUDING ALL);
CREATE FUNCTION forms_pass() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$;
CREATE TRIGGER pass BEFORE UPDATE ON forms_sql FOR EACH ROW EXECUTE FUNCTION forms_pass();
INSERT INTO forms_direct VALUES (1, false, 'A', 1.0, 'a', '10.0.0.1', '2020-01-01 00:00+00');
INSERT INTO forms_sql SELECT * FROM forms_direct;
INSERT INTO forms_update SELECT * FROM forms_direct;
SET TimeZone = 'UTC';
CREATE FUNCTION forms_moves(t regclass) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    answers text := '';
    m record;
BEGIN
    FOR m IN SELECT * FROM (VALUES (1, 'b', ARRAY['false'], 'yes'), (2, 'b', ARRAY['t'], 'true'),
                                   (3, 'c', ARRAY['A  '], 'B'), (4, 'n', ARRAY['1.00'], '2'),
                                   (5, 'n', ARRAY['1.0'], '2'), (6, 'e', ARRAY['a'], 'b'),
                                   (7, 'e', ARRAY['b'], 'b'), (8, 'e', ARRAY['a'], 'c'),
                                   (9, 'i', ARRAY['10.0.0.1/32'], '10.0.0.2'),
                                   (10, 'ts', ARRAY['2020-01-01 00:00:00+00'], '2021-01-01'))
                          v(n, col, src, dst) ORDER BY n
    LOOP
        answers := answers || m.col || ':' || inbox.transition(t, '{"id": 1}', m.col, m.src, m.dst) || ' ';
    END LOOP;
    RETURN answers;
END $$;
SELECT forms_moves('forms_direct') AS direct, forms_moves('forms_sql') AS via_update;
-- The UPDATE first, whatever the stored row: its WHERE alone decides every answer.
SET idempotent_inbox.force_path = 'update';
SELECT forms_moves('forms_update') AS update_first;
RESET idempotent_inbox.force_path;
SELECT * FROM forms_direct UNION ALL SELECT * FROM forms_sql UNION ALL SELECT * FROM forms_update;
RESET TimeZone;
DROP TABLE forms_direct, forms_sql, forms_update;
DROP FUNCTION forms_pass(), forms_moves(regclass);
DROP TYPE regress_phase;
