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
