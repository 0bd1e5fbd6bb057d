-- Batch consumers (make bench, section batches): three inboxes of the same shape,
-- one per variant, and the accounts every variant credits.  Each pgbench client
-- credits its own 1000 accounts (ids from client_id * 1000 + 1), so clients never
-- wait for each other's rows and only the claims are compared.
SELECT inbox.create_inbox('batch_ext_inbox');
SELECT inbox.create_inbox('batch_single_inbox');
CREATE TABLE batch_hand_inbox (LIKE batch_ext_inbox INCLUDING ALL);
CREATE TABLE batch_accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
INSERT INTO batch_accounts (id) SELECT g FROM generate_series(1, 9000) g;
