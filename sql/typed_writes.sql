-- The typed entry points of the naturally idempotent writes: upsert_row (a row of
-- the table's own type, taken apart directly) and transition_key (the row named by
-- the value of its primary key): the same outcomes, rights and errors as the jsonb
-- forms.
\set SHOW_CONTEXT never

CREATE TYPE tk_state AS ENUM ('PENDING', 'PAID', 'SHIPPED', 'CANCELLED');
CREATE TABLE tk (id int PRIMARY KEY, ref text UNIQUE, state tk_state NOT NULL DEFAULT 'PENDING',
                 label text);
INSERT INTO tk (id, ref) SELECT g, 'r-' || g FROM generate_series(1, 9) g;

-- moved, already (writing nothing), rejected, missing.
SELECT inbox.transition_key('tk', 1, 'state', ARRAY['PENDING'], 'PAID') AS moved;
SELECT xmin AS paid_xmin FROM tk WHERE id = 1 \gset
SELECT inbox.transition_key('tk', 1, 'state', ARRAY['PENDING'], 'PAID') AS already;
SELECT xmin = :'paid_xmin' AS replay_wrote_nothing FROM tk WHERE id = 1;
SELECT inbox.transition_key('tk', 1, 'state', ARRAY['PENDING'], 'CANCELLED') AS rejected,
       inbox.transition_key('tk', 42, 'state', ARRAY['PENDING'], 'PAID') AS missing;

-- The key's type: the column's own, an untyped literal or text (read by the column
-- type's input function), or any type with an assignment cast to it.
SELECT inbox.transition_key('tk', '2', 'state', '{PENDING}', 'PAID') AS untyped,
       inbox.transition_key('tk', '3'::text, 'state', '{PENDING}', 'PAID') AS text,
       inbox.transition_key('tk', 4::bigint, 'state', '{PENDING}', 'PAID') AS bigint,
       inbox.transition_key('tk', 5.0, 'state', '{PENDING}', 'PAID') AS numeric,
       inbox.transition_key('tk', 6::smallint, 'state', '{PENDING}', 'PAID') AS smallint;
-- The same answers with the UPDATE first, as after a run of moves.
SET idempotent_inbox.force_path = 'update';
SELECT inbox.transition_key('tk', 7, 'state', '{PENDING}', 'PAID') AS moved,
       inbox.transition_key('tk', 7, 'state', '{PENDING}', 'PAID') AS already,
       inbox.transition_key('tk', 7, 'state', '{SHIPPED}', 'CANCELLED') AS rejected,
       inbox.transition_key('tk', 99, 'state', '{PENDING}', 'PAID') AS missing;
RESET idempotent_inbox.force_path;
-- Without from_states: the column's state machine says where a row may come from.
SELECT inbox.guard_transitions('tk', 'state', '{"PENDING": ["PAID"], "PAID": ["SHIPPED"]}');
SELECT inbox.transition_key('tk', 1, 'state', 'SHIPPED') AS machine_moved,
       inbox.transition_key('tk', 8, 'state', 'SHIPPED') AS machine_rejected;
SELECT inbox.unguard_transitions('tk', 'state');
SELECT inbox.transition_key('tk', 8, 'state', 'SHIPPED');
\echo :SQLSTATE
SELECT id, state FROM tk ORDER BY id;

-- A rolled back move is undone; the redelivery moves again.
BEGIN;
SELECT inbox.transition_key('tk', 9, 'state', '{PENDING}', 'PAID');
ROLLBACK;
SELECT inbox.transition_key('tk', 9, 'state', '{PENDING}', 'PAID');

-- A driver's untyped parameter takes the key column's type (untyped_params.c).
PREPARE tk_move AS SELECT inbox.transition_key('tk', $1, 'state', '{PAID}', 'SHIPPED');
SELECT parameter_types FROM pg_prepared_statements WHERE name = 'tk_move';
EXECUTE tk_move(2);
EXECUTE tk_move('3');
DEALLOCATE tk_move;

-- Keys of other types: text, uuid, a domain (whose check applies).
CREATE DOMAIN tk_code AS text CHECK (VALUE ~ '^[A-Z]+$');
CREATE TABLE tk_text (code tk_code PRIMARY KEY, state text);
CREATE TABLE tk_uuid (id uuid PRIMARY KEY, state text);
INSERT INTO tk_text VALUES ('ABC', 'A');
INSERT INTO tk_uuid VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'A');
SELECT inbox.transition_key('tk_text', 'ABC', 'state', '{A}', 'B') AS untyped,
       inbox.transition_key('tk_text', 'ABC'::tk_code, 'state', '{A}', 'B') AS domain,
       inbox.transition_key('tk_text', 'ABC'::varchar, 'state', '{B}', 'C') AS varchar,
       inbox.transition_key('tk_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'state', '{A}', 'B') AS uuid_untyped,
       inbox.transition_key('tk_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 'state', '{A}', 'B') AS uuid;
SELECT inbox.transition_key('tk_text', 'abc', 'state', '{A}', 'B');
\echo :SQLSTATE

-- Errors, as the jsonb form's: NULLs, values the key column cannot take, a key
-- that is not one column, a missing column.
SELECT inbox.transition_key('tk', NULL, 'state', '{PENDING}', 'PAID');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', NULL::int, 'state', '{PENDING}', 'PAID');
\echo :SQLSTATE
SELECT inbox.transition_key(NULL, 1, 'state', '{PENDING}', 'PAID');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 1, NULL, '{PENDING}', 'PAID');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 1, 'state', '{PENDING}', NULL);
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 1, 'state', NULL, 'PAID');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 1, 'state', ARRAY['PAID', NULL], 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 1, 'state', '{PAID}', 'LOST');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 1, 'nope', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 'one', 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', true, 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', ROW(1, 'r-1'), 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', '{"id": 1}'::jsonb, 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition_key('tk', 3000000000, 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
CREATE TABLE tk_pair (a int, b int, state text, PRIMARY KEY (a, b));
SELECT inbox.transition_key('tk_pair', 1, 'state', '{A}', 'B');
\echo :SQLSTATE
CREATE TABLE tk_nopk (id int UNIQUE, state text);
SELECT inbox.transition_key('tk_nopk', 1, 'state', '{A}', 'B');
\echo :SQLSTATE
CREATE TABLE tk_deferred (id int PRIMARY KEY DEFERRABLE, state text);
SELECT inbox.transition_key('tk_deferred', 1, 'state', '{A}', 'B');
\echo :SQLSTATE

-- Targets: partitioned tables and their partitions, temporary tables; views are
-- not tables, and an OID that names nothing is 42P01.
CREATE TABLE tk_parted (id int PRIMARY KEY, state text) PARTITION BY RANGE (id);
CREATE TABLE tk_parted_low PARTITION OF tk_parted FOR VALUES FROM (0) TO (100);
INSERT INTO tk_parted VALUES (1, 'A'), (2, 'A');
CREATE TEMP TABLE tk_temp (id int PRIMARY KEY, state text);
INSERT INTO tk_temp VALUES (1, 'A');
SELECT inbox.transition_key('tk_parted', 1, 'state', '{A}', 'B') AS parted_moved,
       inbox.transition_key('tk_parted', 1, 'state', '{A}', 'B') AS parted_already,
       inbox.transition_key('tk_parted_low', 2, 'state', '{A}', 'B') AS partition_moved,
       inbox.transition_key('tk_parted', 50, 'state', '{A}', 'B') AS parted_missing,
       inbox.transition_key('tk_temp', 1, 'state', '{A}', 'B') AS temp_moved;
CREATE VIEW tk_view AS SELECT * FROM tk;
SELECT inbox.transition_key('tk_view', 1, 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
SELECT inbox.transition_key('pg_class', 1, 'relname', '{a}', 'b');
\echo :SQLSTATE
SELECT inbox.transition_key(999999::regclass, 1, 'state', '{A}', 'B');
\echo :SQLSTATE

-- Rights: SELECT and UPDATE on the table, or on the key and state columns (SELECT)
-- and the state column (UPDATE), checked before the key is converted.
CREATE ROLE regress_tk_role;
SET ROLE regress_tk_role;
SELECT inbox.transition_key('tk', 'not a number', 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
RESET ROLE;
GRANT SELECT ON tk TO regress_tk_role;
SET ROLE regress_tk_role;
SELECT inbox.transition_key('tk', 1, 'state', '{PAID}', 'PAID');
\echo :SQLSTATE
RESET ROLE;
REVOKE SELECT ON tk FROM regress_tk_role;
GRANT SELECT (state), UPDATE (state) ON tk TO regress_tk_role;
SET ROLE regress_tk_role;
SELECT inbox.transition_key('tk', 'not a number', 'state', '{PAID}', 'SHIPPED');
\echo :SQLSTATE
RESET ROLE;
GRANT SELECT (id) ON tk TO regress_tk_role;
SET ROLE regress_tk_role;
SELECT inbox.transition_key('tk', 9, 'state', '{PAID}', 'SHIPPED') AS columns_moved,
       inbox.transition_key('tk', 9, 'state', '{PAID}', 'SHIPPED') AS columns_already;
RESET ROLE;
REVOKE ALL ON tk FROM regress_tk_role;
DROP ROLE regress_tk_role;

-- upsert_row takes the row's values as they are: dropped columns are skipped,
-- generated columns left to the table, a NULL version refused.
CREATE TABLE ur (id int PRIMARY KEY, gone text, v int, doubled int GENERATED ALWAYS AS (v * 2) STORED);
ALTER TABLE ur DROP COLUMN gone;
ALTER TABLE ur ADD COLUMN note text;
SELECT inbox.upsert_row(ROW(1, 5, NULL, 'x')::ur) AS inserted,
       inbox.upsert_row(ROW(1, 5, NULL, 'x')::ur) AS unchanged,
       inbox.upsert_row(ROW(1, 6, 99, 'x')::ur) AS updated,
       inbox.upsert_row(ROW(1, 4, NULL, 'y')::ur, NULL, 'v') AS stale,
       inbox.upsert_row(ROW(1, 7, NULL, 'y')::ur, NULL, 'v') AS newer;
SELECT * FROM ur;
SELECT inbox.upsert_row(ROW(2, NULL, NULL, 'x')::ur, NULL, 'v');
\echo :SQLSTATE
SELECT inbox.upsert_row(NULL::ur);
\echo :SQLSTATE
SELECT inbox.upsert_row(ROW(2, 1, NULL, 'x')::ur, '{note}');
\echo :SQLSTATE
-- A row is unchanged only when every value has the same image: a NULL that
-- becomes a value is a change, and so is numeric 1.0 becoming 1.00, which "="
-- calls equal.
CREATE TABLE ur_img (id int PRIMARY KEY, n numeric, t text, c char(3), b bpchar);
SELECT inbox.upsert_row(ROW(1, 1.0, NULL, 'a', 'b')::ur_img) AS inserted,
       inbox.upsert_row(ROW(1, 1.0, 'x', 'a', 'b')::ur_img) AS null_to_value,
       inbox.upsert_row(ROW(1, 1.00, 'x', 'a', 'b')::ur_img) AS same_number_new_image,
       inbox.upsert_row(ROW(1, 1.00, 'x', 'a', 'b')::ur_img) AS unchanged,
       inbox.upsert_row(ROW(1, 1.00, 'x', 'a', 'b ')::ur_img) AS trailing_blank,
       inbox.upsert_row(ROW(1, 1.00, NULL, 'a', 'b ')::ur_img) AS value_to_null;
SELECT n, t, c, b || '|' AS b FROM ur_img;
DROP TABLE ur_img;
-- Large values compare by their contents, compressed or not.
SELECT inbox.upsert_row(ROW(3, 1, NULL, repeat('z', 100000))::ur) AS inserted,
       inbox.upsert_row(ROW(3, 1, NULL, repeat('z', 100000))::ur) AS unchanged;

DROP TABLE tk, tk_text, tk_uuid, tk_pair, tk_nopk, tk_deferred, tk_parted, tk_temp, ur CASCADE;
DROP DOMAIN tk_code;
DROP TYPE tk_state;
