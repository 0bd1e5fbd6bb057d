-- The benchmark schema: two identical inboxes (one the extension's, one a plain table),
-- 1000 accounts, and a million claims preloaded into both for the redelivery workloads.
\set ON_ERROR_STOP 1
CREATE EXTENSION idempotent_inbox;
SELECT inbox.create_inbox('bench_inbox');
CREATE TABLE hand_inbox (
    message_id text PRIMARY KEY,
    claimed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 1000) g;
INSERT INTO bench_inbox (message_id) SELECT g::text FROM generate_series(1, 1000000) g;
INSERT INTO hand_inbox (message_id) SELECT g::text FROM generate_series(1, 1000000) g;
-- Frozen and hinted now, so that the first reads in a timed run do not pay for it.
VACUUM (FREEZE, ANALYZE) bench_inbox, hand_inbox, accounts;
CHECKPOINT;
