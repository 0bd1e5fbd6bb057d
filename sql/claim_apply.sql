-- claim_apply: the effect runs on first delivery only, in the caller's transaction.
\set SHOW_CONTEXT never

SELECT inbox.create_inbox('payments_inbox');
SELECT inbox.create_inbox('orders_inbox', 'uuid');
SELECT inbox.create_inbox('offsets_inbox', 'bigint');
CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL CHECK (balance >= 0));
INSERT INTO accounts VALUES ('acct-7', 0), ('acct-8', 0);

-- Seed 003: payment p1 (+50) delivered twice, with the durable atomic inbox.
SELECT inbox.claim_apply('payments_inbox', 'p1',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 50, 'acct-7');
SELECT inbox.claim_apply('payments_inbox', 'p1',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 50, 'acct-7');
SELECT balance FROM accounts WHERE id = 'acct-7';

-- Every key type.
SELECT inbox.claim_apply('orders_inbox', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid,
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 5, 'acct-8');
SELECT inbox.claim_apply('orders_inbox', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 5, 'acct-8');
SELECT inbox.claim_apply('offsets_inbox', 1001,
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 7, 'acct-8');
SELECT inbox.claim_apply('offsets_inbox', '1001',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 7, 'acct-8');
SELECT balance FROM accounts WHERE id = 'acct-8';

-- A statement without parameters, and one that returns rows (they are discarded).
SELECT inbox.claim_apply('payments_inbox', 'p2', 'UPDATE accounts SET balance = balance + 1');
SELECT inbox.claim_apply('payments_inbox', 'p2', 'UPDATE accounts SET balance = balance + 1');
SELECT inbox.claim_apply('payments_inbox', 'p3', 'SELECT * FROM accounts WHERE balance > $1', 0);
SELECT id, balance FROM accounts ORDER BY id;

-- Rollback undoes claim and effect together; the redelivery applies once.
BEGIN;
SELECT inbox.claim_apply('payments_inbox', 'p4',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 100, 'acct-7');
ROLLBACK;
SELECT inbox.claim_apply('payments_inbox', 'p4',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 100, 'acct-7');
SELECT balance FROM accounts WHERE id = 'acct-7';

-- The statement sees and joins the caller's transaction.
BEGIN;
INSERT INTO accounts VALUES ('acct-9', 0);
SELECT inbox.claim_apply('payments_inbox', 'p5',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 9, 'acct-9');
SELECT balance FROM accounts WHERE id = 'acct-9';
COMMIT;

-- An error in the statement aborts the transaction: the claim is never kept
-- without its effect, so the redelivery (once the cause is fixed) applies.
BEGIN;
SELECT inbox.claim_apply('payments_inbox', 'p6',
    'UPDATE accounts SET balance = balance - $1 WHERE id = $2', 1000, 'acct-7');
\echo :SQLSTATE
ROLLBACK;
SELECT count(*) AS p6_claims FROM payments_inbox WHERE message_id = 'p6';
SELECT inbox.claim_apply('payments_inbox', 'p6',
    'UPDATE accounts SET balance = balance - $1 WHERE id = $2', 10, 'acct-7');
-- With a savepoint, earlier work of the transaction survives the failed message.
BEGIN;
SELECT inbox.claim_apply('payments_inbox', 'p7',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, 'acct-7');
SAVEPOINT before_p8;
SELECT inbox.claim_apply('payments_inbox', 'p8',
    'UPDATE accounts SET balance = balance - $1 WHERE id = $2', 1000, 'acct-7');
ROLLBACK TO SAVEPOINT before_p8;
COMMIT;
SELECT message_id FROM payments_inbox WHERE message_id IN ('p7', 'p8') ORDER BY 1;
SELECT balance FROM accounts WHERE id = 'acct-7';

-- Statements and values that are wrong fail on every delivery, duplicates included.
SELECT inbox.claim_apply('payments_inbox', 'p1', 'UPDATE accounts SET balance = balance + $1 WHERE', 1);
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'UPDATE no_such_table SET x = $1', 1);
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'UPDATE accounts SET nope = $1', 1);
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'UPDATE accounts SET balance = $1 WHERE id = $2', 1);
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'UPDATE accounts SET balance = $1', 1, 'extra');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'UPDATE accounts SET balance = $3', 1, 2, 3);
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'SELECT $1');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'UPDATE accounts SET balance = $1', 'not a number');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', NULL);
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', NULL, 1);
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', NULL::text, 'SELECT 1');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', '', 'SELECT 1');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', repeat('x', 2000), 'SELECT 1');
\echo :SQLSTATE
SELECT inbox.claim_apply('accounts', 'p1', 'SELECT 1');
\echo :SQLSTATE
SELECT inbox.claim_apply('no_such_inbox', 'p1', 'SELECT 1');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 7, 'SELECT 1');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p1', 'COMMIT');
\echo :SQLSTATE
SELECT inbox.claim_apply('payments_inbox', 'p-new', 'SELECT 1; ROLLBACK');
\echo :SQLSTATE
SELECT count(*) AS claims FROM payments_inbox;
SELECT id, balance FROM accounts ORDER BY id;

-- The statement runs with the caller's privileges.
CREATE ROLE regress_inbox_consumer;
GRANT INSERT, SELECT ON payments_inbox TO regress_inbox_consumer;
GRANT SELECT ON accounts TO regress_inbox_consumer;
SET ROLE regress_inbox_consumer;
SELECT inbox.claim_apply('payments_inbox', 'p9',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, 'acct-7');
\echo :SQLSTATE
RESET ROLE;
GRANT UPDATE ON accounts TO regress_inbox_consumer;
SET ROLE regress_inbox_consumer;
SELECT inbox.claim_apply('payments_inbox', 'p9',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, 'acct-7');
RESET ROLE;
-- A cached plan is re-checked when the caller's rights change.
REVOKE UPDATE ON accounts FROM regress_inbox_consumer;
SET ROLE regress_inbox_consumer;
SELECT inbox.claim_apply('payments_inbox', 'p10',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, 'acct-7');
\echo :SQLSTATE
RESET ROLE;
REVOKE ALL ON payments_inbox, accounts FROM regress_inbox_consumer;
DROP ROLE regress_inbox_consumer;

-- Cached plans follow changes to the objects they use.
ALTER TABLE accounts ADD COLUMN updates int NOT NULL DEFAULT 0;
SELECT inbox.claim_apply('payments_inbox', 'p11',
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, 'acct-7');
SELECT inbox.claim_apply('payments_inbox', 'p12',
    'UPDATE accounts SET balance = balance + $1, updates = updates + 1 WHERE id = $2', 1, 'acct-7');
SELECT id, balance, updates FROM accounts ORDER BY id;

DROP TABLE accounts;
SELECT inbox.drop_inbox('payments_inbox'), inbox.drop_inbox('orders_inbox'), inbox.drop_inbox('offsets_inbox');
