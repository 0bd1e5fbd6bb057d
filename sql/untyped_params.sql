-- Untyped driver parameters in "any" arguments (untyped_params.c).  Drivers send
-- values as parameters of unspecified type; PREPARE without types does the same.
-- PostgreSQL cannot type a parameter that fills an "any" argument (42P18); once
-- the library is loaded, the extension types it as a literal would be typed.
\set SHOW_CONTEXT never
-- Preloaded or not, the library is loaded from here on.
LOAD 'idempotent_inbox';

SELECT inbox.create_inbox('untyped_inbox');
CREATE TABLE untyped_accounts (id text PRIMARY KEY, balance integer NOT NULL, note jsonb);
INSERT INTO untyped_accounts VALUES ('acct', 0, NULL);
CREATE VIEW untyped_params AS
    SELECT name, parameter_types FROM pg_prepared_statements WHERE name LIKE 'u\_%';

-- A constant statement: an untyped value takes the type its $n has there
-- (integer, jsonb), next to a typed one (bigint, as drivers send a number); a
-- driver that encodes values by the server's description of the parameters then
-- sends an integer as one.
PREPARE u_const AS SELECT inbox.claim_apply('untyped_inbox', $1,
    'UPDATE untyped_accounts SET balance = balance + $1 + $4, note = $3 WHERE id = $2',
    $2, 'acct', $3, 0::bigint);
-- The statement as a parameter: its $n are unknown at parse time, so the value
-- is text, converted when the call runs, like a literal.
PREPARE u_param AS SELECT inbox.claim_apply('untyped_inbox', $1, $2, $3::int, $4);
-- One case stays PostgreSQL's: a parameter that fills the message id and a value
-- gets the id's type in one place only, and PostgreSQL rejects it (42P08) before
-- the extension sees the query.  The error's hint names the parameter and the
-- cast that fixes it ($1::text); passing the value twice works as well.
PREPARE u_twice AS SELECT inbox.claim_apply('untyped_inbox', $1,
    'SELECT $1::text || $2', $1, 7);
\echo :SQLSTATE
PREPARE u_twice_sharded AS SELECT inbox.claim_sharded('untyped_inbox', $1, $1);
\echo :SQLSTATE
-- Other functions' errors of the same kind get no hint.
PREPARE u_twice_other AS SELECT format('%s', $1), $1::text;
\echo :SQLSTATE
PREPARE u_twice AS SELECT inbox.claim_apply('untyped_inbox', $1,
    'SELECT $1::text || $2', $1::text, 7);
-- Calls inside subqueries and CTEs are typed too.
PREPARE u_nested AS WITH c AS (SELECT inbox.claim_apply('untyped_inbox', $1,
    'UPDATE untyped_accounts SET balance = balance + $1 + $3 WHERE id = $2', $2, 'acct', 0) AS o)
    SELECT o FROM c WHERE EXISTS (SELECT inbox.claim_apply('untyped_inbox', $3,
        'SELECT $1::date + $2', $4, 1));
-- A type the client gave is kept; so is the text[] overload chosen when every
-- argument is untyped (a client that declared text may send the value in text's
-- binary format, which only text reads correctly).
PREPARE u_declared(text, text) AS SELECT inbox.claim_apply('untyped_inbox', $1,
    'UPDATE untyped_accounts SET balance = balance + $1 WHERE id = $2', $2, 1::bigint);
PREPARE u_all_untyped AS SELECT inbox.claim_apply('untyped_inbox', $1,
    'UPDATE untyped_accounts SET balance = balance + $1 WHERE id = $2', $2, $3);
SELECT * FROM untyped_params ORDER BY name;

EXECUTE u_const('m1', 5, '{"by": "u_const"}');
EXECUTE u_const('m1', 5, '{"by": "u_const"}');
EXECUTE u_param('m2', 'UPDATE untyped_accounts SET balance = balance + $1 WHERE id = $2', 7, 'acct');
EXECUTE u_all_untyped('m3', '3', 'acct');
EXECUTE u_nested('m4', 10, 'm5', '2024-02-29');
EXECUTE u_twice('m6');
SELECT id, balance, note FROM untyped_accounts;
-- A wrong value fails when it is bound, before anything is claimed.
EXECUTE u_const('m7', 'five', NULL);
SELECT inbox.claim('untyped_inbox', 'm7');

-- Sharded inboxes: an untyped shard key takes the type of the inbox's first column.
SELECT inbox.create_sharded_inbox('untyped_sharded', 'tenant_id', 'bigint');
PREPARE u_shard AS SELECT inbox.claim_sharded('untyped_sharded', $1, $2);
PREPARE u_shard_many AS SELECT * FROM inbox.claim_many_sharded('untyped_sharded', $1, $2::text[]);
PREPARE u_shard_apply AS SELECT inbox.claim_apply_sharded('untyped_sharded', $1, $2,
    'UPDATE untyped_accounts SET balance = balance + $1 WHERE id = $2', $3, 'acct'::text);
-- With the inbox itself a parameter, the shard key is text, converted at run time.
PREPARE u_shard_inbox_param AS SELECT inbox.claim_sharded($1, $2, 'k'::text);
SELECT * FROM untyped_params WHERE name LIKE 'u\_shard%' ORDER BY name;
EXECUTE u_shard(42, 's1');
EXECUTE u_shard(42, 's1');
EXECUTE u_shard_many(42, '{s1,s2}');
EXECUTE u_shard_apply(7, 's3', 100);
EXECUTE u_shard_inbox_param('untyped_sharded', '43');
SELECT tenant_id, message_id FROM untyped_sharded ORDER BY 1, 2;

-- A broken constant statement is reported when the call is parsed, as it would
-- be when it runs.
PREPARE u_broken AS SELECT inbox.claim_apply('untyped_inbox', $1,
    'UPDATE no_such_table SET x = $1', $2::int, $3);
PREPARE u_unused AS SELECT inbox.claim_apply('untyped_inbox', $1, 'SELECT $1', 1, $2);
-- Nothing else is touched: "any" arguments of other functions stay untyped.
PREPARE u_other AS SELECT format('%s', $1);
-- An explicit VARIADIC array of unknown type is the parser's business.  (Terse: from
-- PostgreSQL 19 the parser's hint is split into a detail and a hint.)
\set VERBOSITY terse
PREPARE u_variadic AS SELECT inbox.claim_apply('untyped_inbox', 'k', 'SELECT $1', VARIADIC $1);
\set VERBOSITY default
SELECT * FROM untyped_params WHERE name IN ('u_broken', 'u_unused', 'u_other', 'u_variadic');

DEALLOCATE ALL;
DROP VIEW untyped_params;
DROP TABLE untyped_accounts, untyped_inbox, untyped_sharded;
