-- claim_apply_many: a batch claimed as by claim_many, and one run of a set-based
-- statement over the fresh messages only.
\set SHOW_CONTEXT never

SELECT inbox.create_inbox('cam_inbox');
SELECT inbox.create_inbox('cam_big', 'bigint');
SELECT inbox.create_inbox('cam_uuid', 'uuid');
CREATE TABLE cam_accounts (id text PRIMARY KEY, balance numeric NOT NULL DEFAULT 0);
INSERT INTO cam_accounts VALUES ('alice'), ('bob');
CREATE TABLE cam_log (message_id text, account text, amount numeric);

-- A poll of four messages, one of them delivered twice in the same poll: each
-- fresh id's values reach the statement once, beside its id.
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['m1', 'm2', 'm1', 'm3'],
    'INSERT INTO cam_log SELECT * FROM unnest($1, $2::text[], $3::numeric[])',
    ARRAY['alice', 'bob', 'alice', 'alice'], ARRAY[1.50, 2, 100, 10]);
SELECT * FROM cam_log ORDER BY message_id;

-- The next poll overlaps the last one: replays are duplicates, the statement sees
-- only m4.  An aggregating statement applies several messages to one row.
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['m3', 'm4', 'm5', 'm4'],
    'UPDATE cam_accounts a SET balance = a.balance + m.total
       FROM (SELECT account, sum(amount) AS total
               FROM unnest($2::text[], $3::numeric[]) AS u(account, amount)
              GROUP BY account) m
      WHERE a.id = m.account',
    ARRAY['alice', 'bob', 'bob', 'bob'], ARRAY[1000, 7, 5, 1000]);
SELECT * FROM cam_accounts ORDER BY id;

-- A poll of nothing but replays runs no statement at all.
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['m1', 'm2'],
    'SELECT 1 / 0 FROM unnest($2::int[])', ARRAY[1, 2]);
-- Nor does an empty poll; the statement is still prepared, so a broken one fails.
SELECT * FROM inbox.claim_apply_many('cam_inbox', '{}'::text[], 'SELECT 1 / 0');
SELECT * FROM inbox.claim_apply_many('cam_inbox', '{}'::text[], 'SELEC 1');

-- Only the ids: $1 alone.
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['m6', 'm2', 'm6'],
    'INSERT INTO cam_log (message_id) SELECT unnest($1)');
SELECT message_id FROM cam_log WHERE account IS NULL;

-- $1 has the inbox's key type; ids come back as given.
CREATE TABLE cam_big_log (id bigint, n int);
SELECT * FROM inbox.claim_apply_many('cam_big', ARRAY[30, 10, 30],
    'INSERT INTO cam_big_log SELECT * FROM unnest($1, $2::int[])', ARRAY[3, 1, 4]);
SELECT * FROM inbox.claim_apply_many('cam_big', ARRAY['10', '20'],
    'INSERT INTO cam_big_log SELECT * FROM unnest($1, $2::int[])', ARRAY[5, 2]);
SELECT * FROM cam_big_log ORDER BY id;
SELECT * FROM inbox.claim_apply_many('cam_uuid',
    ARRAY['A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
    'SELECT pg_typeof($1)::text FROM unnest($1)');

-- Drivers: every parameter untyped, arrays as literals (the text[] form converts
-- each to the type its $n has), or typed arrays beside them.
PREPARE cam_untyped AS SELECT * FROM inbox.claim_apply_many($1, $2, $3, $4, $5);
EXECUTE cam_untyped('cam_inbox', '{d1,d2,d1}',
    'UPDATE cam_accounts a SET balance = a.balance + m.total
       FROM (SELECT account, sum(amount) AS total
               FROM unnest($2::text[], $3::numeric[]) AS u(account, amount)
              GROUP BY account) m
      WHERE a.id = m.account',
    '{alice,bob,alice}', '{0.25,0.5,99}');
EXECUTE cam_untyped('cam_inbox', '{d1,d3}',
    'UPDATE cam_accounts a SET balance = a.balance + m.total
       FROM (SELECT account, sum(amount) AS total
               FROM unnest($2::text[], $3::numeric[]) AS u(account, amount)
              GROUP BY account) m
      WHERE a.id = m.account',
    '{alice,bob}', '{99,0.125}');
SELECT * FROM cam_accounts ORDER BY id;
PREPARE cam_typed(text[], text[], numeric[]) AS
    SELECT * FROM inbox.claim_apply_many('cam_inbox', $1,
        'INSERT INTO cam_log SELECT * FROM unnest($1, $2, $3)', $2, $3);
EXECUTE cam_typed('{t1,t2}', '{alice,bob}', '{1,2}');
EXECUTE cam_typed('{t2,t3}', '{alice,bob}', '{1,2}');
SELECT * FROM cam_log WHERE message_id LIKE 't%' ORDER BY message_id;
DEALLOCATE ALL;

-- Claims and effect commit or roll back together: a failing statement leaves
-- no claim, and the redelivered poll applies.
BEGIN;
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['r1', 'r2'],
    'INSERT INTO cam_log SELECT $1[1], 1 / 0');
ROLLBACK;
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['r1', 'r2'],
    'INSERT INTO cam_log (message_id) SELECT unnest($1)');
-- The batch's claims are the transaction's: a later claim in it is a duplicate.
BEGIN;
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['x1'], 'SELECT $1');
SELECT inbox.claim('cam_inbox', 'x1');
SELECT inbox.claim_apply('cam_inbox', 'x1', 'SELECT 1 / 0');
COMMIT;

-- Errors, each before anything is claimed.
SELECT * FROM inbox.claim_apply_many('cam_inbox', NULL::text[], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1', NULL], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1', ''], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY[['e1'], ['e2']], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1'], NULL);
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1', 'e2'],
    'SELECT unnest($2::int[])', ARRAY[1, 2, 3]);
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1'],
    'SELECT unnest($2::int[])', ARRAY[[1], [2]]);
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1'], 'SELECT $2 + 1', 5);
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1'], 'SELECT $2', NULL::int[]);
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1'], 'SELECT $3', ARRAY[1]);
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1'], 'SELECT $1', ARRAY[1]);
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['e1'], 'COMMIT');
SELECT * FROM inbox.claim_apply_many('cam_accounts', ARRAY['e1'], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many('cam_big', ARRAY['ten'], 'SELECT 1');
SELECT inbox.create_sharded_inbox('cam_sharded', 'account', 'text');
SELECT * FROM inbox.claim_apply_many('cam_sharded', ARRAY['e1'], 'SELECT 1');
SELECT count(*) AS claimed_e FROM cam_inbox WHERE message_id LIKE 'e%';

-- claim_apply_many_sharded: a poll whose messages share a shard key value.  Each
-- (shard key, id) is claimed once; the statement sees the fresh ids and their values.
CREATE TABLE cam_tenants (account text PRIMARY KEY, total int NOT NULL DEFAULT 0, ids text[] NOT NULL DEFAULT '{}');
INSERT INTO cam_tenants VALUES ('acme'), ('initech');
SELECT * FROM inbox.claim_apply_many_sharded('cam_sharded', 'acme', ARRAY['s1', 's2', 's1'],
    'UPDATE cam_tenants SET total = total + (SELECT sum(v) FROM unnest($2::int[]) v), ids = ids || $1
     WHERE account = ''acme''', ARRAY[1, 10, 100]);
SELECT * FROM inbox.claim_apply_many_sharded('cam_sharded', 'acme', ARRAY['s2', 's3'],
    'UPDATE cam_tenants SET total = total + (SELECT sum(v) FROM unnest($2::int[]) v), ids = ids || $1
     WHERE account = ''acme''', ARRAY[1000, 10000]);
-- The same ids under another shard key value are other messages; an array literal as text.
SELECT * FROM inbox.claim_apply_many_sharded('cam_sharded', 'initech', '{s1,s3}',
    'UPDATE cam_tenants SET total = total + cardinality($1), ids = ids || $1 WHERE account = ''initech''');
SELECT * FROM inbox.claim_apply_many_sharded('cam_sharded', 'initech', ARRAY['s1'], 'SELECT 1');
SELECT account, total, ids FROM cam_tenants ORDER BY 1;
SELECT * FROM inbox.claim_apply_many_sharded('cam_inbox', 'acme', ARRAY['s9'], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many_sharded('cam_sharded', NULL::text, ARRAY['s9'], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many_sharded('cam_sharded', 'acme', NULL::text[], 'SELECT 1');
SELECT * FROM inbox.claim_apply_many_sharded('cam_sharded', 'acme', ARRAY['s9'], 'SELECT $2', ARRAY[1, 2]);
SELECT count(*) AS not_claimed FROM cam_sharded WHERE message_id = 's9';
DROP TABLE cam_tenants;

-- A statement that drops the extension: a clear error, and the rollback keeps it.
BEGIN;
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['z1'],
    'DROP EXTENSION idempotent_inbox CASCADE');
ROLLBACK;
SELECT count(*) FROM inbox.claim_many('cam_inbox', ARRAY['z1']);

-- Rights: INSERT and SELECT on the inbox, as for claim_many; the statement runs
-- with the caller's own rights.
CREATE ROLE cam_role;
GRANT USAGE ON SCHEMA public TO cam_role;
SET ROLE cam_role;
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['p1'], 'SELECT 1');
RESET ROLE;
GRANT INSERT, SELECT ON cam_inbox TO cam_role;
SET ROLE cam_role;
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['p1'], 'DELETE FROM cam_log WHERE message_id = ANY ($1)');
SELECT * FROM inbox.claim_apply_many('cam_inbox', ARRAY['p1'], 'SELECT $1');
RESET ROLE;
REVOKE ALL ON cam_inbox FROM cam_role;
REVOKE USAGE ON SCHEMA public FROM cam_role;
DROP ROLE cam_role;

SELECT inbox.drop_inbox('cam_sharded');
DROP TABLE cam_accounts, cam_log, cam_big_log;
SELECT inbox.drop_inbox('cam_inbox');
SELECT inbox.drop_inbox('cam_big');
SELECT inbox.drop_inbox('cam_uuid');
