-- Names with quotes, semicolons and SQL in them work or fail plainly; nothing is
-- ever injected.  Values always travel as parameters.
\set SHOW_CONTEXT never

CREATE SCHEMA "we""ird; schema";
CREATE TABLE "we""ird; schema"."Robert'); DROP TABLE canary; --" (
    "id; DROP TABLE canary" int PRIMARY KEY,
    "state"" OR 1=1 --" text NOT NULL DEFAULT 'a',
    "$1" text,
    "version) OR (true" int
);
CREATE TABLE canary (alive boolean);
INSERT INTO canary VALUES (true);

SELECT inbox.upsert('"we""ird; schema"."Robert''); DROP TABLE canary; --"',
    '{"id; DROP TABLE canary": 1, "$1": "x''); DROP TABLE canary; --", "version) OR (true": 1}',
    version_column => 'version) OR (true');
SELECT inbox.upsert('"we""ird; schema"."Robert''); DROP TABLE canary; --"',
    '{"id; DROP TABLE canary": 1, "$1": "x''); DROP TABLE canary; --", "version) OR (true": 1}',
    version_column => 'version) OR (true');
SELECT inbox.upsert('"we""ird; schema"."Robert''); DROP TABLE canary; --"',
    '{"id; DROP TABLE canary": 1, "$1": "changed"}', ARRAY['id; DROP TABLE canary']);

SELECT inbox.guard_transitions('"we""ird; schema"."Robert''); DROP TABLE canary; --"',
    'state" OR 1=1 --', '{"a": ["b''); DROP TABLE canary; --"]}');
SELECT state_column, edges FROM inbox.state_machines;
SELECT inbox.transition('"we""ird; schema"."Robert''); DROP TABLE canary; --"',
    '{"id; DROP TABLE canary": 1}', 'state" OR 1=1 --', 'b''); DROP TABLE canary; --');
SELECT inbox.transition('"we""ird; schema"."Robert''); DROP TABLE canary; --"',
    '{"id; DROP TABLE canary": 1}', 'state" OR 1=1 --', ARRAY['a'], 'a');
SELECT * FROM "we""ird; schema"."Robert'); DROP TABLE canary; --";

-- An inbox with a hostile name, and a claim_apply statement that quotes its own names.
SELECT inbox.create_inbox('"we""ird; schema"."inbox''; DROP TABLE canary; --"', 'text');
SELECT inbox.claim('"we""ird; schema"."inbox''; DROP TABLE canary; --"', '''); DROP TABLE canary; --');
SELECT inbox.claim('"we""ird; schema"."inbox''; DROP TABLE canary; --"', '''); DROP TABLE canary; --');
SELECT * FROM inbox.claim_many('"we""ird; schema"."inbox''; DROP TABLE canary; --"',
    ARRAY['a''; DROP TABLE canary; --', '"b"']);
SELECT inbox.claim_apply('"we""ird; schema"."inbox''; DROP TABLE canary; --"', 'm',
    'UPDATE "we""ird; schema"."Robert''); DROP TABLE canary; --" SET "$1" = $1', '$1''; DROP TABLE canary; --');

-- Names that are not there are plain misses.
SELECT inbox.upsert('"we""ird; schema"."Robert''); DROP TABLE canary; --"', '{"id; DROP TABLE canary\"": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('canary; DROP TABLE canary', '{"alive": true}');
\echo :SQLSTATE
SELECT inbox.transition('canary', '{"alive": true}', 'alive"; DROP TABLE canary; --', ARRAY['t'], 'f');
\echo :SQLSTATE

SELECT alive AS canary_alive FROM canary;
DROP TABLE "we""ird; schema"."Robert'); DROP TABLE canary; --";
SELECT inbox.drop_inbox('"we""ird; schema"."inbox''; DROP TABLE canary; --"');
DROP SCHEMA "we""ird; schema";
DROP TABLE canary;

-- A schema renamed, and another created under its old name with tables of the
-- same names: every call on the renamed tables still writes them, never the
-- look-alikes, whatever a session had cached (statements are written with
-- qualified names).  The inbox has a trigger, so its claims are statements.
CREATE FUNCTION ident_pass() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE SCHEMA ident_app;
CREATE TABLE ident_app.pay (id int PRIMARY KEY, v text);
CREATE TRIGGER pass BEFORE INSERT OR UPDATE ON ident_app.pay
    FOR EACH ROW EXECUTE FUNCTION ident_pass();
SELECT inbox.create_inbox('ident_app.ib');
CREATE TRIGGER pass BEFORE INSERT ON ident_app.ib FOR EACH ROW EXECUTE FUNCTION ident_pass();
SELECT inbox.create_inbox('ident_app.direct');
SELECT inbox.upsert('ident_app.pay', '{"id": 1, "v": "a"}'),
       inbox.claim('ident_app.ib', 'm1'), inbox.claim('ident_app.direct', 'm1'),
       inbox.claim_many('ident_app.ib', ARRAY['m2']);
ALTER SCHEMA ident_app RENAME TO ident_app_old;
CREATE SCHEMA ident_app;
CREATE TABLE ident_app.pay (id int PRIMARY KEY, v text);
SELECT inbox.create_inbox('ident_app.ib');
SELECT inbox.create_inbox('ident_app.direct');
SELECT inbox.upsert('ident_app_old.pay', '{"id": 2, "v": "b"}'),
       inbox.claim('ident_app_old.ib', 'm3'), inbox.claim('ident_app_old.direct', 'm3'),
       inbox.claim_many('ident_app_old.ib', ARRAY['m4']);
SELECT 'old' AS schema, count(*) FROM ident_app_old.pay
UNION ALL SELECT 'new', count(*) FROM ident_app.pay;
SELECT 'old' AS schema, message_id FROM ident_app_old.ib
UNION ALL SELECT 'new', message_id FROM ident_app.ib
UNION ALL SELECT 'old direct', message_id FROM ident_app_old.direct
UNION ALL SELECT 'new direct', message_id FROM ident_app.direct ORDER BY 1, 2;
SELECT inbox.drop_inbox(i) FROM unnest(ARRAY['ident_app.ib', 'ident_app.direct',
    'ident_app_old.ib', 'ident_app_old.direct']::regclass[]) AS i;
SET client_min_messages = warning;
DROP SCHEMA ident_app, ident_app_old CASCADE;
RESET client_min_messages;
DROP FUNCTION ident_pass();
