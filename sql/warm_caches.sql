-- A session that has called the functions before (its caches filled) answers
-- as a new session would after the catalogs change under it: argument types
-- inferred again, row types of composite columns read again, statements that
-- name a schema or a collation written again.
\set SHOW_CONTEXT never
\set VERBOSITY terse
SELECT inbox.create_inbox('warm');

-- claim_apply's untyped arguments take the type their $n has now.
CREATE TYPE warm_mood AS ENUM ('happy', 'sad');
CREATE TABLE warm_t (m warm_mood);
SELECT inbox.claim_apply('warm', 'e1', 'INSERT INTO warm_t VALUES ($1)', 'happy');
DROP TABLE warm_t;
DROP TYPE warm_mood;
CREATE TYPE warm_mood AS ENUM ('happy', 'sad');
CREATE TABLE warm_t (m warm_mood);
SELECT inbox.claim_apply('warm', 'e2', 'INSERT INTO warm_t VALUES ($1)', 'sad');
TABLE warm_t;

SET timezone = 'UTC';
CREATE TABLE warm_ev (id int, ts timestamp);
SELECT inbox.claim_apply('warm', 't1', 'INSERT INTO warm_ev VALUES ($1, $2)', '1', '2024-01-01 10:00+05');
ALTER TABLE warm_ev ALTER COLUMN ts TYPE timestamptz;
SELECT inbox.claim_apply('warm', 't2', 'INSERT INTO warm_ev VALUES ($1, $2)', '2', '2024-01-01 10:00+05');
SELECT * FROM warm_ev ORDER BY id;
RESET timezone;

CREATE SCHEMA warm_s1;
CREATE SCHEMA warm_s2;
CREATE TABLE warm_s1.t (v int);
CREATE TABLE warm_s2.t (v text);
SET search_path = warm_s1, public;
SELECT inbox.claim_apply('warm', 'p1', 'INSERT INTO t VALUES ($1)', '1');
SET search_path = warm_s2, public;
SELECT inbox.claim_apply('warm', 'p2', 'INSERT INTO t VALUES ($1)', '007');
RESET search_path;
SELECT 's1' AS s, v::text FROM warm_s1.t UNION ALL SELECT 's2', v FROM warm_s2.t;

-- DDL rolled back leaves nothing behind: the inference is that of the table as it is.
CREATE TABLE warm_acc (id int PRIMARY KEY, bal int);
INSERT INTO warm_acc VALUES (1, 0);
BEGIN;
ALTER TABLE warm_acc ALTER COLUMN bal TYPE numeric;
SELECT inbox.claim_apply('warm', 'r1', 'UPDATE warm_acc SET bal = bal + $1 WHERE id = 1', '1');
ROLLBACK;
SELECT inbox.claim_apply('warm', 'r2', 'UPDATE warm_acc SET bal = bal + $1 WHERE id = 1', '1.5');
SELECT inbox.claim_apply('warm', 'r3', 'UPDATE warm_acc SET bal = bal + $1 WHERE id = 1', '2');
TABLE warm_acc;

-- upsert reads a composite column as its type is now, also after a rollback.
CREATE TYPE warm_comp AS (a int, b int);
CREATE TABLE warm_ct (id int PRIMARY KEY, c warm_comp);
SELECT inbox.upsert('warm_ct', '{"id": 1, "c": {"a": 1, "b": 2}}');
ALTER TYPE warm_comp ADD ATTRIBUTE d int;
SELECT inbox.upsert('warm_ct', '{"id": 2, "c": {"a": 1, "b": 2, "d": 3}}');
BEGIN;
ALTER TYPE warm_comp ADD ATTRIBUTE e text;
SELECT inbox.upsert('warm_ct', '{"id": 3, "c": {"a": 1, "b": 2, "d": 3, "e": "x"}}');
ROLLBACK;
SELECT inbox.upsert('warm_ct', '{"id": 4, "c": {"a": 1, "b": 2, "d": 4, "e": "x"}}');
SELECT * FROM warm_ct ORDER BY id;

-- A key index's collation renamed: the statements naming it are written again.
CREATE COLLATION warm_coll FROM "C";
CREATE TABLE warm_p (k text, v int);
CREATE UNIQUE INDEX ON warm_p (k COLLATE warm_coll);
CREATE FUNCTION warm_pass() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE TRIGGER pass BEFORE UPDATE ON warm_p FOR EACH ROW EXECUTE FUNCTION warm_pass();
INSERT INTO warm_p VALUES ('a', 1), ('b', 1);
SELECT inbox.upsert('warm_p', '{"k": "a", "v": 2}', ARRAY['k']);
ALTER COLLATION warm_coll RENAME TO warm_coll_old;
SET search_path = pg_catalog, public;
SELECT inbox.upsert('warm_p', '{"k": "b", "v": 2}', ARRAY['k']);
RESET search_path;
TABLE warm_p;

-- The extension's schema renamed, and look-alike tables in a new schema of the
-- old name: positions are read from and written to the extension's own table,
-- and the drop event trigger forgets a dropped inbox in the real registry, never
-- the look-alike's, and lets DROP work at all.
SELECT inbox.create_inbox('warm_gone');
SELECT inbox.advance('warm', 'topic', 0, 1) AS advanced, inbox.position('warm', 'topic', 0);
ALTER SCHEMA inbox RENAME TO inbox_renamed;
CREATE SCHEMA inbox;
CREATE TABLE inbox.positions (inbox regclass, topic text, "partition" int, "offset" bigint,
    advanced_at timestamptz DEFAULT now(), PRIMARY KEY (inbox, topic, "partition"));
INSERT INTO inbox.positions VALUES ('warm', 'topic', 0, 999);
CREATE TABLE inbox.registry (relid oid);
INSERT INTO inbox.registry VALUES ('warm_gone'::regclass);
SELECT inbox_renamed.advance('warm', 'topic', 0, 5) AS advanced,
       inbox_renamed.position('warm', 'topic', 0);
DROP TABLE warm_gone;
SELECT count(*) AS real_registry_rows FROM inbox_renamed.registry
 WHERE relid::oid NOT IN (SELECT oid FROM pg_class);
SELECT count(*) AS look_alike_rows FROM inbox.registry;
SET client_min_messages = warning;
DROP SCHEMA inbox CASCADE;
RESET client_min_messages;
ALTER SCHEMA inbox_renamed RENAME TO inbox;
SELECT inbox.position('warm', 'topic', 0);

DROP TABLE warm_t, warm_ev, warm_acc, warm_ct, warm_p;
DROP TYPE warm_mood;
DROP TYPE warm_comp;
DROP COLLATION warm_coll_old;
DROP FUNCTION warm_pass();
DROP SCHEMA warm_s1, warm_s2 CASCADE;
SELECT inbox.drop_inbox('warm');
