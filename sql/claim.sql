-- claim and try_claim for each key type, in and across transactions, and their errors.
\set SHOW_CONTEXT never

SELECT inbox.create_inbox('t_inbox');
SELECT inbox.create_inbox('u_inbox', 'uuid');
SELECT inbox.create_inbox('b_inbox', 'bigint');

-- First delivery true, redelivery false.
SELECT inbox.claim('t_inbox', 'm-1') AS first, inbox.claim('t_inbox', 'm-1') AS again;
SELECT inbox.claim('u_inbox', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid) AS first,
       inbox.claim('u_inbox', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid) AS again;
SELECT inbox.claim('b_inbox', 42::bigint) AS first, inbox.claim('b_inbox', 42) AS again;

-- Untyped literals arrive as text and are converted to the inbox's key type.
SELECT inbox.claim('u_inbox', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11') AS same_uuid_upper_case;
SELECT inbox.claim('b_inbox', '42') AS same_bigint_as_text, inbox.claim('b_inbox', '43') AS fresh;

-- A uuid key is stored in 16 bytes.
SELECT pg_column_size(message_id) AS uuid_key_bytes FROM u_inbox;

-- ROLLBACK removes the claim, so the redelivery is applied later.
BEGIN;
SELECT inbox.claim('t_inbox', 'm-2');
ROLLBACK;
SELECT inbox.claim('t_inbox', 'm-2') AS after_rollback;

-- A claim made earlier in the same transaction is a duplicate.
BEGIN;
SELECT inbox.claim('t_inbox', 'm-3') AS first, inbox.claim('t_inbox', 'm-3') AS again;
COMMIT;

-- Savepoints: a claim rolled back to a savepoint is gone, earlier ones stay.
BEGIN;
SELECT inbox.claim('t_inbox', 'm-4');
SAVEPOINT s;
SELECT inbox.claim('t_inbox', 'm-5');
ROLLBACK TO SAVEPOINT s;
SELECT inbox.claim('t_inbox', 'm-4') AS kept_is_duplicate, inbox.claim('t_inbox', 'm-5') AS undone_is_fresh;
COMMIT;

-- try_claim gives the same answers without waiting (in_progress is in the isolation tests).
SELECT inbox.try_claim('t_inbox', 'm-6') AS first, inbox.try_claim('t_inbox', 'm-6') AS again;
SELECT inbox.try_claim('t_inbox', 'm-1') AS committed_earlier;
SELECT inbox.try_claim('u_inbox', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid),
       inbox.try_claim('b_inbox', 7), inbox.try_claim('b_inbox', '7');

-- Ids are case and byte exact for text inboxes; multibyte ids count bytes.
SELECT inbox.claim('t_inbox', 'M-1') AS other_case, inbox.claim('t_inbox', 'm-1 ') AS trailing_space;
SELECT inbox.claim('t_inbox', repeat('é', 512)) AS exactly_1024_bytes;

SELECT message_id FROM t_inbox WHERE length(message_id) < 20 ORDER BY message_id COLLATE "C";

-- Errors, each with its SQLSTATE; none leaves a claim behind.
SELECT inbox.claim('t_inbox', NULL::text);
\echo :SQLSTATE
SELECT inbox.claim('u_inbox', NULL::uuid);
\echo :SQLSTATE
SELECT inbox.claim('b_inbox', NULL::bigint);
\echo :SQLSTATE
SELECT inbox.claim('t_inbox', '');
\echo :SQLSTATE
SELECT inbox.claim('t_inbox', repeat('x', 1025));
\echo :SQLSTATE
SELECT inbox.claim('t_inbox', repeat('é', 513));
\echo :SQLSTATE
SELECT inbox.claim(NULL, 'm-1');
\echo :SQLSTATE
SELECT inbox.claim('no_such_inbox', 'm-1');
\echo :SQLSTATE
CREATE TABLE not_an_inbox (message_id text PRIMARY KEY);
SELECT inbox.claim('not_an_inbox', 'm-1');
\echo :SQLSTATE
SELECT inbox.try_claim('not_an_inbox', 'm-1');
\echo :SQLSTATE
CREATE VIEW a_view AS SELECT 1 AS message_id;
SELECT inbox.claim('a_view', 'm-1');
\echo :SQLSTATE
-- wrong key types
SELECT inbox.claim('t_inbox', 5);
\echo :SQLSTATE
SELECT inbox.claim('b_inbox', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid);
\echo :SQLSTATE
SELECT inbox.claim('u_inbox', 'not-a-uuid');
\echo :SQLSTATE
SELECT inbox.claim('b_inbox', '12abc');
\echo :SQLSTATE
SELECT inbox.try_claim('u_inbox', 1);
\echo :SQLSTATE
SELECT inbox.try_claim('t_inbox', '');
\echo :SQLSTATE

-- An error aborts the transaction; work done before it is rolled back with it,
-- or kept when the caller used a savepoint.
BEGIN;
SELECT inbox.claim('t_inbox', 'm-7');
SELECT inbox.claim('t_inbox', '');
ROLLBACK;
BEGIN;
SELECT inbox.claim('t_inbox', 'm-8');
SAVEPOINT s;
SELECT inbox.claim('t_inbox', NULL::text);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT inbox.claim('t_inbox', 'm-7') AS m7_fresh, inbox.claim('t_inbox', 'm-8') AS m8_kept;

SELECT count(*) AS t_claims FROM t_inbox;
SELECT count(*) AS b_claims FROM b_inbox;

-- Privileges are the caller's: INSERT on the inbox table is needed.
CREATE ROLE regress_inbox_reader;
GRANT SELECT ON t_inbox TO regress_inbox_reader;
SET ROLE regress_inbox_reader;
SELECT inbox.claim('t_inbox', 'm-9');
\echo :SQLSTATE
RESET ROLE;
GRANT INSERT ON t_inbox TO regress_inbox_reader;
SET ROLE regress_inbox_reader;
SELECT inbox.claim('t_inbox', 'm-9') AS with_insert_grant;
RESET ROLE;
REVOKE ALL ON t_inbox FROM regress_inbox_reader;
DROP ROLE regress_inbox_reader;

DROP VIEW a_view;
DROP TABLE not_an_inbox;
SELECT inbox.drop_inbox('t_inbox'), inbox.drop_inbox('u_inbox'), inbox.drop_inbox('b_inbox');
