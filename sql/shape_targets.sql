-- Which relations upsert, upsert_row, transition and guard_transitions accept (issue 9,
-- items 4 and 13): plain and partitioned tables, their partitions, inheritance parents
-- and children, temporary and unlogged tables; every other kind is 42809, an OID that
-- names nothing 42P01.
\set SHOW_CONTEXT never

-- A partitioned table: its rows live in its partitions, and the executor routes them.
-- (The parent's index has no storage: reading it directly crashed the server.)
CREATE TEMP TABLE p (id int PRIMARY KEY) PARTITION BY RANGE (id);
SELECT inbox.upsert('p', '{"id":1}');
\echo :SQLSTATE
CREATE TEMP TABLE p_low PARTITION OF p FOR VALUES FROM (0) TO (100);
SELECT inbox.upsert('p', '{"id":1}') AS fresh, inbox.upsert('p', '{"id":1}') AS replay;

CREATE TABLE orders (id int, region text, state text, note text, PRIMARY KEY (id, region))
    PARTITION BY LIST (region);
CREATE TABLE orders_eu PARTITION OF orders FOR VALUES IN ('eu');
CREATE TABLE orders_us PARTITION OF orders FOR VALUES IN ('us') PARTITION BY HASH (id);
CREATE TABLE orders_us0 PARTITION OF orders_us FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE orders_us1 PARTITION OF orders_us FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT inbox.upsert('orders', '{"id": 1, "region": "eu", "state": "NEW"}') AS fresh,
       inbox.upsert('orders', '{"id": 1, "region": "eu", "state": "NEW"}') AS replay,
       inbox.upsert('orders', '{"id": 1, "region": "eu", "note": "n"}') AS change,
       inbox.upsert('orders', '{"id": 2, "region": "us", "state": "NEW"}') AS fresh_us,
       inbox.upsert('orders', '{"id": 3, "region": "us", "state": "NEW"}') AS fresh_us1;
SELECT inbox.upsert_row(ROW(4, 'us', 'NEW', NULL)::orders) AS row_fresh,
       inbox.upsert_row(ROW(4, 'us', 'NEW', NULL)::orders) AS row_replay,
       inbox.upsert_row(ROW(4, 'us', 'NEW', 'x')::orders) AS row_change;
SELECT inbox.transition('orders', '{"id": 2, "region": "us"}', 'state', ARRAY['NEW'], 'PAID') AS moved,
       inbox.transition('orders', '{"id": 2, "region": "us"}', 'state', ARRAY['NEW'], 'PAID') AS already,
       inbox.transition('orders', '{"id": 3, "region": "us"}', 'state', ARRAY['OLD'], 'PAID') AS rejected,
       inbox.transition('orders', '{"id": 9, "region": "us"}', 'state', ARRAY['NEW'], 'PAID') AS missing;
-- Versions on a partitioned table: newer wins, older and equal are stale.
ALTER TABLE orders ADD COLUMN version int;
SELECT inbox.upsert('orders', '{"id": 5, "region": "eu", "version": 2}', NULL, 'version') AS fresh,
       inbox.upsert('orders', '{"id": 5, "region": "eu", "version": 1}', NULL, 'version') AS older,
       inbox.upsert('orders', '{"id": 5, "region": "eu", "version": 2}', NULL, 'version') AS equal,
       inbox.upsert('orders', '{"id": 5, "region": "eu", "version": 3, "note": "v3"}', NULL, 'version') AS newer;
-- A row no partition takes is the executor's error.
SELECT inbox.upsert('orders', '{"id": 6, "region": "jp"}');
\echo :SQLSTATE
-- A partition is a table too; a row outside its bounds is refused by it.
SELECT inbox.upsert('orders_eu', '{"id": 7, "region": "eu"}') AS fresh,
       inbox.upsert('orders_eu', '{"id": 7, "region": "eu"}') AS replay,
       inbox.transition('orders_eu', '{"id": 1, "region": "eu"}', 'state', ARRAY['NEW'], 'PAID') AS moved;
SELECT inbox.upsert('orders_eu', '{"id": 8, "region": "us"}');
\echo :SQLSTATE
-- A state machine on a partitioned table guards every partition.
SELECT inbox.guard_transitions('orders', 'state', '{"PAID": ["SHIPPED"]}');
SELECT inbox.transition('orders', '{"id": 1, "region": "eu"}', 'state', 'SHIPPED') AS machine_moved;
UPDATE orders SET state = 'NEW' WHERE id = 1;
\echo :SQLSTATE
SELECT inbox.unguard_transitions('orders', 'state');
SELECT tableoid::regclass AS part, id, region, state, note, version FROM orders ORDER BY id, region;
-- After many fresh rows upsert tries the insert first: the same answers.
SELECT outcome, count(*) FROM (
    SELECT inbox.upsert('orders', jsonb_build_object('id', 100 + g, 'region', 'eu')) AS outcome
      FROM generate_series(1, 40) g) s GROUP BY 1 ORDER BY 1;
SELECT inbox.upsert('orders', '{"id": 101, "region": "eu"}') AS replay,
       inbox.upsert('orders', '{"id": 200, "region": "eu"}') AS fresh,
       inbox.upsert('orders', '{"id": 101, "region": "eu", "note": "x"}') AS change;

-- Inheritance: a table's unique keys hold its own rows only, so upsert and transition
-- act on the named table's rows (as ON CONFLICT does), not on its children's.
CREATE TABLE parent (id int PRIMARY KEY, v text, state text);
CREATE TABLE child (PRIMARY KEY (id)) INHERITS (parent);
INSERT INTO child VALUES (1, 'child', 'NEW');
SELECT inbox.upsert('parent', '{"id": 1, "v": "parent"}') AS parent_fresh,
       inbox.upsert('parent', '{"id": 1, "v": "parent"}') AS parent_replay,
       inbox.transition('parent', '{"id": 1}', 'state', ARRAY['NEW'], 'DONE') AS parent_state,
       inbox.transition('child', '{"id": 1}', 'state', ARRAY['NEW'], 'DONE') AS child_state,
       inbox.upsert('child', '{"id": 1, "v": "child"}') AS child_replay;
-- The same through statements (a role with column privileges only reads with SELECT).
CREATE ROLE regress_shape_cols;
GRANT SELECT (id, v, state), INSERT (id, v, state), UPDATE (v, state) ON parent TO regress_shape_cols;
SET ROLE regress_shape_cols;
SELECT inbox.upsert('parent', '{"id": 1, "v": "parent"}') AS parent_replay,
       inbox.transition('parent', '{"id": 1}', 'state', ARRAY['NEW'], 'DONE') AS parent_state;
RESET ROLE;
SELECT tableoid::regclass AS tab, * FROM parent ORDER BY 1, 2;
REVOKE ALL ON parent FROM regress_shape_cols;
DROP ROLE regress_shape_cols;

-- Temporary and unlogged tables.
CREATE TEMP TABLE tmp (id int PRIMARY KEY, state text);
CREATE UNLOGGED TABLE unl (id int PRIMARY KEY, state text);
SELECT inbox.upsert('tmp', '{"id": 1, "state": "A"}'), inbox.upsert('tmp', '{"id": 1, "state": "A"}'),
       inbox.transition('tmp', '{"id": 1}', 'state', ARRAY['A'], 'B'),
       inbox.upsert('unl', '{"id": 1, "state": "A"}'), inbox.upsert('unl', '{"id": 1, "state": "A"}'),
       inbox.transition('unl', '{"id": 1}', 'state', ARRAY['A'], 'B');

-- Everything else is not a table.
CREATE VIEW v AS SELECT * FROM unl;
CREATE MATERIALIZED VIEW mv AS SELECT * FROM unl;
CREATE SEQUENCE seq;
CREATE TYPE comp AS (id int);
SELECT inbox.upsert('v', '{"id": 1}');
\echo :SQLSTATE
SELECT inbox.transition('v', '{"id": 1}', 'state', ARRAY['A'], 'B');
\echo :SQLSTATE
SELECT inbox.guard_transitions('v', 'state', '{}');
\echo :SQLSTATE
SELECT inbox.upsert('mv', '{"id": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('seq', '{"last_value": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('unl_pkey', '{"id": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('comp', '{"id": 1}');
\echo :SQLSTATE
SELECT inbox.upsert_row(ROW(1)::comp);
\echo :SQLSTATE
SELECT inbox.transition(c.reltoastrelid::regclass, '{"chunk_id": 1}', 'chunk_seq', ARRAY['1'], '2')
  FROM pg_class c WHERE c.oid = 'pg_proc'::regclass;
\echo :SQLSTATE
SELECT inbox.upsert('pg_class', '{"oid": 1}');
\echo :SQLSTATE
SELECT inbox.transition('pg_proc', '{"oid": 1}', 'proname', ARRAY['a'], 'b');
\echo :SQLSTATE
SELECT inbox.guard_transitions('pg_class', 'relname', '{}');
\echo :SQLSTATE
SELECT inbox.unguard_transitions('pg_class', 'relname');
\echo :SQLSTATE
SELECT inbox.upsert_row(c) FROM pg_class c LIMIT 1;
\echo :SQLSTATE

-- An OID that names no relation, or a dropped table's.
SELECT inbox.upsert(999999::regclass, '{"id": 1}');
\echo :SQLSTATE
SELECT inbox.transition(999999::regclass, '{"id": 1}', 'state', 'B');
\echo :SQLSTATE
SELECT inbox.transition(999999::regclass, '{"id": 1}', 'state', ARRAY['A'], 'B');
\echo :SQLSTATE
SELECT inbox.guard_transitions(999999::regclass, 'state', '{}');
\echo :SQLSTATE
SELECT inbox.unguard_transitions(999999::regclass, 'state');
\echo :SQLSTATE
CREATE TABLE gone (id int PRIMARY KEY, state text);
SELECT 'gone'::regclass::oid AS gone_oid \gset
DROP TABLE gone;
-- (only the SQLSTATE: the message names the OID)
\set VERBOSITY sqlstate
SELECT inbox.upsert(:gone_oid::regclass, '{"id": 1}');
\echo :SQLSTATE
SELECT inbox.transition(:gone_oid::regclass, '{"id": 1}', 'state', ARRAY['A'], 'B');
\echo :SQLSTATE
SELECT inbox.guard_transitions(:gone_oid::regclass, 'state', '{}');
\echo :SQLSTATE
\set VERBOSITY default
SELECT inbox.upsert(0::regclass, '{"id": 1}');
\echo :SQLSTATE

DROP VIEW v;
DROP MATERIALIZED VIEW mv;
DROP SEQUENCE seq;
DROP TYPE comp;
DROP TABLE orders, parent, unl CASCADE;
