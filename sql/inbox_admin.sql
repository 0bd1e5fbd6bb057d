-- Creating, listing and dropping inboxes, and the errors of doing it wrong.
\set SHOW_CONTEXT never
\set VERBOSITY default

SELECT inbox.create_inbox('payments_inbox');
SELECT inbox.create_inbox('orders_inbox', 'uuid');
SELECT inbox.create_inbox('offsets_inbox', 'bigint', '7 days');
CREATE SCHEMA consumers;
SELECT inbox.create_inbox('consumers.mail_inbox', 'text', '1 hour');
SELECT inbox.create_inbox('"Odd Name; DROP TABLE x"');

SELECT inbox, schema_name, table_name, key_type, retention
  FROM inbox.inboxes ORDER BY schema_name, table_name;

-- The table is an ordinary WAL-logged table keyed by message_id.
SELECT c.relname, c.relpersistence, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.oid = 'orders_inbox'::regclass ORDER BY a.attnum;
-- (contype n: from 18, NOT NULL constraints are catalogued too)
SELECT pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'orders_inbox'::regclass AND contype <> 'n';
SELECT count(*) AS extension_members FROM pg_depend
 WHERE objid = 'payments_inbox'::regclass AND deptype = 'e';

-- Errors: each names what was wrong, with its SQLSTATE.
SELECT inbox.create_inbox(NULL);
\echo :SQLSTATE
SELECT inbox.create_inbox('x', NULL);
\echo :SQLSTATE
SELECT inbox.create_inbox('x', 'integer');
\echo :SQLSTATE
SELECT inbox.create_inbox('x', 'text', '0 seconds');
\echo :SQLSTATE
SELECT inbox.create_inbox('x', 'text', '-1 day');
\echo :SQLSTATE
SELECT inbox.create_inbox('pg_temp.x');
\echo :SQLSTATE
SELECT inbox.create_inbox('payments_inbox');
\echo :SQLSTATE
SELECT inbox.create_inbox('no_such_schema.x');
\echo :SQLSTATE
SELECT inbox.create_inbox('a.b.c.d');
\echo :SQLSTATE

-- A table that is not an inbox is refused by name, whatever the function.
CREATE TABLE plain_table (message_id text PRIMARY KEY);
SELECT inbox.drop_inbox('plain_table');
\echo :SQLSTATE
SELECT inbox.drop_inbox(NULL);
\echo :SQLSTATE
SELECT inbox.drop_inbox('no_such_table');
\echo :SQLSTATE
SELECT inbox.drop_inbox(0);
\echo :SQLSTATE

-- drop_inbox drops the table and forgets it; so does a plain DROP TABLE.
SELECT inbox.drop_inbox('consumers.mail_inbox');
SELECT to_regclass('consumers.mail_inbox') IS NULL AS table_gone;
DROP TABLE offsets_inbox;
DROP SCHEMA consumers;
SELECT inbox FROM inbox.inboxes ORDER BY 1::text;
SELECT count(*) AS registry_rows FROM inbox.registry;

-- A rename keeps the inbox working under its new name.
ALTER TABLE "Odd Name; DROP TABLE x" RENAME TO renamed_inbox;
SELECT inbox.claim('renamed_inbox', 'm1');
SELECT inbox.claim('renamed_inbox', 'm1');
SELECT inbox.drop_inbox('renamed_inbox');

-- Dropping is an administrator's function (not granted to PUBLIC), and even with
-- EXECUTE only the owner of an inbox may drop it; nobody may write the registry.
CREATE ROLE regress_inbox_stranger;
SET ROLE regress_inbox_stranger;
SELECT inbox.drop_inbox('payments_inbox');
\echo :SQLSTATE
RESET ROLE;
GRANT EXECUTE ON FUNCTION inbox.drop_inbox(regclass) TO regress_inbox_stranger;
SET ROLE regress_inbox_stranger;
SELECT inbox.drop_inbox('payments_inbox');
\echo :SQLSTATE
INSERT INTO inbox.registry (relid, key_type) VALUES ('plain_table', 'text');
\echo :SQLSTATE
SELECT count(*) > 0 AS can_list FROM inbox.inboxes;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION inbox.drop_inbox(regclass) FROM regress_inbox_stranger;
DROP ROLE regress_inbox_stranger;
DROP TABLE plain_table;

-- A table dropped by any command leaves no registry row behind: a typed table
-- goes with DROP TYPE ... CASCADE.
SELECT inbox.create_inbox('typed_inbox', retention => '1 hour');
CREATE TYPE typed_inbox_row AS (message_id text, claimed_at timestamptz, fingerprint bytea,
    result jsonb, token int8, lease_until timestamptz, holder_pid int4, holder_started timestamptz);
ALTER TABLE typed_inbox OF typed_inbox_row;
SET client_min_messages = warning;
DROP TYPE typed_inbox_row CASCADE;
RESET client_min_messages;
SELECT count(*) AS registry_rows_without_table FROM inbox.registry
 WHERE relid::oid NOT IN (SELECT oid FROM pg_class);
