-- How claim_apply binds its arguments to $1..$n, for each way clients pass them.
\set SHOW_CONTEXT never

SELECT inbox.create_inbox('args_inbox');
CREATE TABLE ledger (id serial PRIMARY KEY, account text, amount numeric(12,2),
                     at date, tags text[], note jsonb, ref uuid);

-- Untyped literals take the type of the column or expression they meet.
SELECT inbox.claim_apply('args_inbox', 'a1',
    'INSERT INTO ledger (account, amount, at, tags, note, ref) VALUES ($1, $2, $3, $4, $5, $6)',
    'acct-1', '12.50', '2024-01-31', '{x,y}', '{"k": 1}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
-- Typed values keep their types; the statement adapts to them like PREPARE would.
SELECT inbox.claim_apply('args_inbox', 'a2',
    'INSERT INTO ledger (account, amount, at) VALUES ($1, $2, $3)',
    'acct-2'::text, 7, current_date - current_date + date '2024-02-01');
-- NULL arguments, typed and untyped.
SELECT inbox.claim_apply('args_inbox', 'a3',
    'INSERT INTO ledger (account, amount, note) VALUES ($1, $2, $3)', 'acct-3', NULL, NULL::jsonb);
-- A parameter whose context says nothing falls back to text.
SELECT inbox.claim_apply('args_inbox', 'a4',
    'INSERT INTO ledger (account) SELECT $1 || ''-suffix''', 'acct');
-- The same parameter used twice, and parameters out of order.
SELECT inbox.claim_apply('args_inbox', 'a5',
    'INSERT INTO ledger (account, amount) VALUES ($2, $1), ($2, $1 * 2)', '1.25', 'acct-5');
-- An explicit VARIADIC array, typed or as text to be converted.
SELECT inbox.claim_apply('args_inbox', 'a6',
    'INSERT INTO ledger (account, amount) VALUES ($1, $2::numeric)', VARIADIC ARRAY['acct-6', '6']);
SELECT inbox.claim_apply('args_inbox', 'a7', 'SELECT 1', VARIADIC NULL::text[]);
-- Several statements in one string share the parameters.
SELECT inbox.claim_apply('args_inbox', 'a8',
    'INSERT INTO ledger (account, amount) VALUES ($1, $2); UPDATE ledger SET amount = amount + $2 WHERE account = $1',
    'acct-8', 4);

SELECT account, amount, at, tags, note, ref FROM ledger ORDER BY id;

-- Driver parameters: an extended-protocol statement with untyped parameters, as
-- node-postgres and psycopg send them, resolves to the text[] overload and every
-- value is converted to the type its $n has in the statement.
PREPARE consume(regclass, text, text, text, text) AS
    SELECT inbox.claim_apply($1, $2, $3, $4, $5);
PREPARE consume_untyped AS SELECT inbox.claim_apply($1, $2, $3, $4, $5);
EXECUTE consume_untyped('args_inbox', 'd1',
    'INSERT INTO ledger (account, amount, at) VALUES ($1, $2, $3)', 'acct-d', '3.25');
\echo :SQLSTATE
EXECUTE consume_untyped('args_inbox', 'd1',
    'INSERT INTO ledger (account, amount) VALUES ($1, $2)', 'acct-d', '3.25');
EXECUTE consume_untyped('args_inbox', 'd1',
    'INSERT INTO ledger (account, amount) VALUES ($1, $2)', 'acct-d', '3.25');
EXECUTE consume('args_inbox', 'd2',
    'INSERT INTO ledger (account, amount) VALUES ($1, $2)', 'acct-d', '1.75');
SELECT account, sum(amount) FROM ledger WHERE account = 'acct-d' GROUP BY account;
-- Mixing a typed parameter with untyped ones reaches "any": PostgreSQL alone
-- would refuse the untyped one (42P18); the loaded library types it as text
-- here, the statement being a parameter too (untyped_params.sql).
PREPARE mixed AS SELECT inbox.claim_apply($1, $2, $3, $4::int, $5);
SELECT parameter_types FROM pg_prepared_statements WHERE name = 'mixed';

-- The statement cache is bounded; evicted statements are simply prepared again.
SET idempotent_inbox.statement_cache_size = 2;
SELECT inbox.claim_apply('args_inbox', 'c' || i,
    format('INSERT INTO ledger (account, amount) VALUES (%L, $1)', 'cache-' || (i % 4)), i)
  FROM generate_series(1, 12) AS i;
SELECT account, count(*), sum(amount) FROM ledger WHERE account LIKE 'cache-%' GROUP BY 1 ORDER BY 1;
RESET idempotent_inbox.statement_cache_size;
SET idempotent_inbox.statement_cache_size = 0;
\echo :SQLSTATE

-- One statement over many messages in a single query: only fresh ids apply.
SELECT outcome, count(*)
  FROM (SELECT inbox.claim_apply('args_inbox', 'bulk-' || (i % 50),
            'INSERT INTO ledger (account, amount) VALUES ($1, $2)', 'bulk', 1) AS outcome
          FROM generate_series(1, 200) AS i) s
 GROUP BY outcome ORDER BY outcome;
SELECT count(*) AS bulk_rows FROM ledger WHERE account = 'bulk';

DROP TABLE ledger;
SELECT inbox.drop_inbox('args_inbox');
