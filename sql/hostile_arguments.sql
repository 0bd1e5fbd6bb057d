-- Arguments nobody should pass, for the functions that take an inbox: each gets
-- a specific SQLSTATE, never an internal error.
\set VERBOSITY terse
-- Key types that do not exist, or are not supported.
SELECT inbox.create_inbox('hostile_x', 0::oid::regtype);
\echo :SQLSTATE
SELECT inbox.create_inbox('hostile_x', 99999::oid::regtype);
\echo :SQLSTATE
SELECT inbox.create_inbox('hostile_x', 'int4');
\echo :SQLSTATE
-- Names: empty, too many dots, too long (refused, not silently cut), in a catalog.
SELECT inbox.create_inbox('', 'text');
\echo :SQLSTATE
SELECT inbox.create_inbox('a.b.c.d', 'text');
\echo :SQLSTATE
SELECT inbox.create_inbox(repeat('x', 100000), 'text');
\echo :SQLSTATE
SELECT inbox.create_inbox(repeat('é', 32), 'text');
\echo :SQLSTATE
SELECT inbox.create_inbox(repeat('x', 63), 'text') IS NOT NULL AS longest_name_works;
SELECT inbox.create_inbox('pg_catalog.hostile_x', 'text');
\echo :SQLSTATE
SELECT inbox.create_inbox('pg_temp.hostile_x', 'text');
\echo :SQLSTATE
SELECT inbox.create_inbox('inbox.hostile_x', 'text');
\echo :SQLSTATE
SELECT inbox.create_inbox(NULL);
\echo :SQLSTATE
SELECT inbox.create_inbox('hostile_x', NULL);
\echo :SQLSTATE
-- Relations that are not inboxes, or do not exist.
SELECT inbox.create_inbox('hostile_inbox');
CREATE VIEW hostile_view AS SELECT * FROM hostile_inbox;
CREATE SEQUENCE hostile_seq;
CREATE TABLE hostile_parted (message_id text PRIMARY KEY) PARTITION BY HASH (message_id);
CREATE TEMP TABLE hostile_temp (message_id text PRIMARY KEY);
SELECT inbox.try_claim(0::regclass, 'x');
\echo :SQLSTATE
SELECT inbox.claim(99999::regclass, 'x');
\echo :SQLSTATE
SELECT inbox.claim('pg_class', 'x');
\echo :SQLSTATE
SELECT inbox.claim('inbox.registry', 'x');
\echo :SQLSTATE
SELECT inbox.claim('inbox.positions', 'x');
\echo :SQLSTATE
SELECT inbox.claim('hostile_view', 'x');
\echo :SQLSTATE
SELECT inbox.claim('hostile_seq', 'x');
\echo :SQLSTATE
SELECT inbox.claim('hostile_parted', 'x');
\echo :SQLSTATE
SELECT inbox.claim('hostile_temp', 'x');
\echo :SQLSTATE
SELECT inbox.claim('hostile_inbox_pkey', 'x');
\echo :SQLSTATE
SELECT inbox.drop_inbox(99999::regclass);
\echo :SQLSTATE
SELECT inbox.drop_inbox('hostile_view');
\echo :SQLSTATE
SELECT inbox.set_retention(99999::regclass, '1 day');
\echo :SQLSTATE
SELECT inbox.advance(99999::regclass, 't', 0, 1);
\echo :SQLSTATE
SELECT inbox.position('pg_class', 't', 0);
\echo :SQLSTATE
SELECT inbox.oldest_claim(99999::regclass) IS NULL AS null_for_missing,
       inbox.oldest_claim('pg_class') IS NULL AS null_for_non_inbox,
       inbox.oldest_claim(NULL) IS NULL AS null_for_null;
-- Retention windows that cannot be subtracted from now().
SELECT inbox.set_retention('hostile_inbox', '100000 years');
\echo :SQLSTATE
SELECT inbox.create_inbox('hostile_x', retention => '1001 years');
\echo :SQLSTATE
SELECT inbox.set_retention('hostile_inbox', '1 month -40 days');
\echo :SQLSTATE
SELECT inbox.set_retention('hostile_inbox', '1000 years');
SELECT inbox.claim('hostile_inbox', 'kept'), inbox.claim('hostile_inbox', 'kept');
-- A window stored before it was bounded (the registry of 0.1 accepted any):
-- nothing is old enough to expire, and claims go on.
UPDATE inbox.registry SET retention = '100000 years' WHERE relid = 'hostile_inbox'::regclass;
SELECT inbox.set_retention('hostile_inbox', NULL);
UPDATE inbox.registry SET retention = '100000 years' WHERE relid = 'hostile_inbox'::regclass;
SELECT inbox.claim('hostile_inbox', 'kept'), inbox.claim('hostile_inbox', 'new');
SELECT inbox.purge('hostile_inbox');
UPDATE inbox.registry SET retention = NULL WHERE relid = 'hostile_inbox'::regclass;
\set VERBOSITY default
DROP VIEW hostile_view;
DROP TABLE hostile_inbox, hostile_parted, hostile_temp;
DROP TABLE "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
DROP SEQUENCE hostile_seq;
