-- Failures, quarantine and per-key ordering of a sharded inbox on one node: the
-- _sharded forms of record_failure, retry, discard, forget and claim_in_order,
-- which take the shard key value before the id.  A message is (shard key, id);
-- a key is ordered within one shard key value.  (On Citus: refused, see
-- test/citus/t/003_sharded.pl.)
\set VERBOSITY default
SELECT inbox.create_sharded_inbox('fs_inbox', 'account_id', 'bigint');
SELECT inbox.set_max_attempts('fs_inbox', 3);
CREATE TABLE fs_effects (account_id bigint, id text, PRIMARY KEY (account_id, id));

-- A failed attempt rolls back; the failure is counted per (shard key, id):
-- m-1 of account 7 and m-1 of account 8 are two messages.
BEGIN;
SELECT inbox.claim_apply_sharded('fs_inbox', 7, 'm-1', 'INSERT INTO fs_effects VALUES (7, $1)', 'm-1');
ROLLBACK;
SELECT n, f.* FROM generate_series(1, 3) n,
       LATERAL inbox.record_failure_sharded('fs_inbox', 7, 'm-1', 'ERROR: declined ' || n) f;
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 8, 'm-1', 'ERROR: timeout');
SELECT message_id, shard_key, state, attempts, last_error FROM inbox.quarantine ORDER BY shard_key;
-- A quarantined message stays so: later failures count nothing.
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 7, 'm-1', 'ERROR: once more');

-- Every sharded claim path answers the quarantined (7, m-1) without running its
-- effect; (8, m-1), only failing, runs.
SELECT inbox.claim_sharded('fs_inbox', 7, 'm-1') AS claim,
       inbox.try_claim_sharded('fs_inbox', 7, 'm-1') AS try_claim,
       inbox.claim_apply_sharded('fs_inbox', 7, 'm-1', 'INSERT INTO fs_effects VALUES (7, $1)', 'm-1') AS claim_apply;
SELECT * FROM inbox.claim_many_sharded('fs_inbox', 7, ARRAY['m-1', 'm-2']);
SELECT * FROM inbox.claim_apply_many_sharded('fs_inbox', 7, ARRAY['m-1', 'm-3'],
                                             'INSERT INTO fs_effects SELECT 7, unnest($1::text[])');
SELECT inbox.claim_apply_sharded('fs_inbox', 8, 'm-1', 'INSERT INTO fs_effects VALUES (8, $1)', 'm-1') AS other_account;
SELECT account_id, id FROM fs_effects ORDER BY 1, 2;
-- Applied: its failures are past.  A failure of an id applied meanwhile counts nothing.
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 8, 'm-1', 'ERROR: too late');
SELECT message_id, shard_key, state FROM inbox.quarantine ORDER BY shard_key;

-- The shard key value takes the column's type, as in claim_sharded.
SELECT * FROM inbox.record_failure_sharded('fs_inbox', '9', 'm-9', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 9::int2, 'm-9', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 9.0, 'm-9', 'e');
SELECT message_id, shard_key, state, attempts FROM inbox.quarantine WHERE message_id = 'm-9';

-- The operator's verbs, each by (shard key, id).  retry: account 7's m-1 runs
-- at its next delivery; retrying it under account 8 finds nothing.
SELECT inbox.retry_sharded('fs_inbox', 8, 'm-1') AS wrong_account,
       inbox.retry_sharded('fs_inbox', 7, 'm-1', 'card replaced') AS retried,
       inbox.retry_sharded('fs_inbox', 7, 'm-1') AS retried_again;
SELECT inbox.claim_apply_sharded('fs_inbox', 7, 'm-1', 'INSERT INTO fs_effects VALUES (7, $1)', 'm-1') AS after_retry;
-- discard: a quarantined one, and one never seen; neither runs afterwards.
SELECT inbox.discard_sharded('fs_inbox', 9, 'm-9', 'refunded by hand') AS discarded,
       inbox.discard_sharded('fs_inbox', 9, 'm-10', 'cancelled upstream') AS discarded_unseen,
       inbox.discard_sharded('fs_inbox', 9, 'm-10') AS discarded_again;
SELECT inbox.try_claim_sharded('fs_inbox', 9, 'm-9') AS m9, inbox.try_claim_sharded('fs_inbox', 9, 'm-10') AS m10,
       inbox.try_claim_sharded('fs_inbox', 10, 'm-9') AS m9_of_account_10;
-- forget: (7, m-1) runs again at its next delivery; (8, m-1) keeps its claim.
SELECT inbox.forget_sharded('fs_inbox', 7, 'm-1', 'replay') AS forgotten,
       inbox.forget_sharded('fs_inbox', 7, 'm-1') AS forgotten_again;
SELECT account_id, message_id FROM fs_inbox WHERE message_id = 'm-1' ORDER BY 1;
SELECT message_id, shard_key, verb, reason, attempts, last_error FROM inbox.audit ORDER BY done_at;
SELECT quarantined, retried, discarded, forgotten FROM inbox.stats WHERE inbox = 'fs_inbox'::regclass;

-- Per-key ordering, within one shard key value.
SELECT inbox.claim_in_order_sharded('fs_inbox', 1, 'o-0', 'order-1');
SELECT inbox.set_key_ordering('fs_inbox', true);
SELECT inbox.claim_in_order_sharded('fs_inbox', 1, 'o-0', 'order-1');
-- o-1 of account 1 fails; o-2 of account 1 and the same key waits behind it, o-2
-- of account 2 does not (another shard key value), nor o-3 of another key.
BEGIN;
SELECT inbox.claim_in_order_sharded('fs_inbox', 1, 'o-1', 'order-1');
ROLLBACK;
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 1, 'o-1', 'ERROR: stock', 'order-1');
SELECT inbox.claim_in_order_sharded('fs_inbox', 1, 'o-2', 'order-1') AS same_key,
       inbox.claim_in_order_sharded('fs_inbox', 1, 'o-2', 'order-1') AS redelivered,
       inbox.claim_in_order_sharded('fs_inbox', 2, 'o-2', 'order-1') AS other_account,
       inbox.claim_in_order_sharded('fs_inbox', 1, 'o-3', 'order-2') AS other_key;
SELECT message_id, shard_key, ordering_key, state, position, blocked_by, deliveries
  FROM inbox.quarantine WHERE ordering_key IS NOT NULL ORDER BY shard_key, position;
-- o-1 itself runs; rolled back, it still holds its key, and once a delivery
-- of it commits, the key is free.
BEGIN;
SELECT inbox.claim_in_order_sharded('fs_inbox', 1, 'o-1', 'order-1') AS o1;
ROLLBACK;
SELECT inbox.claim_in_order_sharded('fs_inbox', 1, 'o-2', 'order-1') AS o2_after_rollback;
SELECT inbox.claim_in_order_sharded('fs_inbox', 1, 'o-1', 'order-1') AS o1,
       inbox.claim_in_order_sharded('fs_inbox', 1, 'o-2', 'order-1') AS o2,
       inbox.claim_in_order_sharded('fs_inbox', 1, 'o-2', 'order-1') AS o2_again;
SELECT count(*) AS blocked_left FROM inbox.blocked WHERE inbox = 'fs_inbox'::regclass;
-- discard frees a key too, and the message behind it runs.
SELECT inbox.set_max_attempts('fs_inbox', 1);
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 3, 'o-1', 'ERROR: poison', 'order-3');
SELECT inbox.claim_in_order_sharded('fs_inbox', 3, 'o-2', 'order-3') AS behind_quarantined;
SELECT inbox.discard_sharded('fs_inbox', 3, 'o-1', 'skip it') AS discarded,
       inbox.claim_in_order_sharded('fs_inbox', 3, 'o-2', 'order-3') AS after_discard;

-- Bad arguments: each with its SQLSTATE, nothing recorded.
\set VERBOSITY sqlstate
SELECT * FROM inbox.record_failure_sharded('fs_inbox', NULL::bigint, 'b-1', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 'seven', 'b-1', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 7.5, 'b-1', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', gen_random_uuid(), 'b-1', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 7, NULL::text, 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 7, '', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 7, 'b-1', NULL);
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 7, 'b-1', 'e', repeat('k', 2000));
SELECT inbox.claim_in_order_sharded('fs_inbox', 7, 'b-1', NULL);
SELECT inbox.retry_sharded('fs_inbox', NULL::bigint, 'b-1');
SELECT inbox.forget_sharded('fs_inbox', 7, 'b-1', repeat('r', 100000)) AS long_reason;
\set VERBOSITY default
SELECT count(*) AS recorded FROM inbox.failures WHERE message_id = 'b-1';
-- The plain forms name the sharded ones; the sharded forms refuse an inbox without a shard key.
SELECT * FROM inbox.record_failure('fs_inbox', 'm-1', 'e');
SELECT inbox.claim_in_order('fs_inbox', 'm-1', 'k');
SELECT inbox.discard('fs_inbox', 'm-1');
SELECT inbox.claim_in_order_sharded('fs_inbox', 7, 'b-1', NULL);
SELECT inbox.create_inbox('fs_plain');
SELECT * FROM inbox.record_failure_sharded('fs_plain', 7, 'm-1', 'e');
SELECT inbox.retry_sharded('fs_plain', 7, 'm-1');

-- Typed ids and a text shard key: kept as text in the failures, the
-- quarantine's claim row stored by (tenant, id).
SELECT inbox.create_sharded_inbox('fs_uuid', 'tenant', 'text', 'uuid');
SELECT inbox.set_max_attempts('fs_uuid', 1);
SELECT * FROM inbox.record_failure_sharded('fs_uuid', 'acme', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 'e');
SELECT tenant, message_id, claimed_at FROM fs_uuid;
SELECT shard_key, message_id, state FROM inbox.quarantine WHERE inbox = 'fs_uuid'::regclass;
SELECT inbox.try_claim_sharded('fs_uuid', 'acme', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid) AS acme,
       inbox.try_claim_sharded('fs_uuid', 'other', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid) AS other;

-- A shard key is kept in one text form whatever the session's settings: a
-- timestamptz key failed under two time zones and date styles is one message,
-- a numeric 1.0 and 1.00 one key, as they are to the primary key.
SELECT inbox.create_sharded_inbox('fs_ts', 'at', 'timestamptz');
BEGIN;
SET LOCAL TimeZone = 'Asia/Tokyo';
SET LOCAL DateStyle = 'SQL, DMY';
SELECT * FROM inbox.record_failure_sharded('fs_ts', '2026-01-02 03:04:05+00', 't-1', 'e');
COMMIT;
BEGIN;
SET LOCAL TimeZone = 'America/New_York';
SELECT * FROM inbox.record_failure_sharded('fs_ts', '2026-01-02 03:04:05+00', 't-1', 'e');
COMMIT;
SELECT shard_key, attempts FROM inbox.quarantine WHERE inbox = 'fs_ts'::regclass;
SELECT inbox.create_sharded_inbox('fs_num', 'amount', 'numeric');
SELECT * FROM inbox.record_failure_sharded('fs_num', 1.0, 'n-1', 'e');
SELECT * FROM inbox.record_failure_sharded('fs_num', 1.00, 'n-1', 'e');
SELECT shard_key, attempts FROM inbox.quarantine WHERE inbox = 'fs_num'::regclass;

-- Retention: an expired claim is absent, so a failure of it counts, and the
-- quarantine takes its row over; purge removes the failures of messages not
-- quarantined once their last failure is older than the window, never a
-- quarantined one, and the blocked rows behind them.
SELECT inbox.create_sharded_inbox('fs_window', 'account_id', 'bigint', retention => '1 hour');
SELECT inbox.set_max_attempts('fs_window', 2);
SELECT inbox.set_key_ordering('fs_window', true);
SELECT inbox.claim_sharded('fs_window', 1, 'expired');
UPDATE fs_window SET claimed_at = now() - interval '2 days';
SELECT n, f.* FROM generate_series(1, 2) n,
       LATERAL inbox.record_failure_sharded('fs_window', 1, 'expired', 'e' || n) f;
SELECT account_id, message_id, claimed_at FROM fs_window;
SELECT * FROM inbox.record_failure_sharded('fs_window', 1, 'stale', 'e', 'k');
SELECT inbox.claim_in_order_sharded('fs_window', 1, 'behind', 'k');
UPDATE inbox.failures SET last_failed_at = now() - interval '2 days', first_failed_at = now() - interval '2 days'
 WHERE inbox = 'fs_window'::regclass;
UPDATE inbox.blocked SET last_blocked_at = now() - interval '2 days' WHERE inbox = 'fs_window'::regclass;
SELECT inbox.purge('fs_window');
SELECT message_id, shard_key, state FROM inbox.quarantine WHERE inbox = 'fs_window'::regclass;
SELECT inbox.claim_in_order_sharded('fs_window', 1, 'behind', 'k') AS behind_after_purge;

-- Rights: the verbs need EXECUTE, which PUBLIC lacks, and the rights on the
-- inbox their plain forms need; record_failure_sharded needs INSERT and SELECT.
CREATE ROLE regress_fs_reader;
CREATE ROLE regress_fs_operator;
GRANT SELECT ON fs_inbox TO regress_fs_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON fs_inbox TO regress_fs_operator;
GRANT EXECUTE ON FUNCTION inbox.retry_sharded(regclass, "any", text, text) TO regress_fs_operator;
SET ROLE regress_fs_reader;
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 5, 'r-1', 'e');
SELECT inbox.retry_sharded('fs_inbox', 5, 'r-1');
RESET ROLE;
SET ROLE regress_fs_operator;
SELECT * FROM inbox.record_failure_sharded('fs_inbox', 5, 'r-1', 'e');
SELECT inbox.retry_sharded('fs_inbox', 5, 'r-1', 'operator') AS retried;
SELECT inbox.forget_sharded('fs_inbox', 5, 'r-1');
RESET ROLE;
SELECT message_id, shard_key, verb, actor FROM inbox.audit WHERE actor = 'regress_fs_operator';

-- distribute_failures is for a sharded inbox that Citus distributes: on one
-- node, each kind of table is refused with its reason; it is not for PUBLIC,
-- and only the owner may call it.
SELECT inbox.distribute_failures('fs_inbox');
SELECT inbox.distribute_failures('fs_plain');
\set VERBOSITY sqlstate
SELECT inbox.distribute_failures('fs_effects');
SELECT inbox.distribute_failures(NULL);
SELECT inbox.distribute_failures('pg_class');
SET ROLE regress_fs_operator;
SELECT inbox.distribute_failures('fs_inbox');
RESET ROLE;
GRANT EXECUTE ON FUNCTION inbox.distribute_failures(regclass) TO regress_fs_operator;
SET ROLE regress_fs_operator;
SELECT inbox.distribute_failures('fs_inbox');
RESET ROLE;
\set VERBOSITY default
SELECT count(*) AS made FROM pg_class WHERE relname LIKE 'fs\_inbox\_%' AND relkind = 'r';
-- Without Citus the views' Citus rows are none; asked for one table, the
-- functions want the right to read it, and an inbox.
SELECT (SELECT count(*) FROM inbox.citus_failures()) + (SELECT count(*) FROM inbox.citus_blocked('fs_inbox'))
       + (SELECT count(*) FROM inbox.citus_audit_log(NULL)) AS citus_rows;
\set VERBOSITY sqlstate
SELECT * FROM inbox.citus_audit_log('pg_class');
SELECT * FROM inbox.citus_failures(0);
SET ROLE regress_fs_reader;
SELECT * FROM inbox.citus_blocked('fs_uuid');
SELECT count(*) AS readable FROM inbox.citus_blocked('fs_inbox');
RESET ROLE;
\set VERBOSITY default

-- Dropping an inbox forgets its failures, blocked messages and audit rows.
DROP TABLE fs_inbox, fs_uuid, fs_ts, fs_num, fs_window, fs_plain, fs_effects;
SELECT count(*) AS failures_left FROM inbox.failures;
SELECT count(*) AS blocked_left FROM inbox.blocked;
SELECT count(*) AS audit_left FROM inbox.audit_log;
DROP OWNED BY regress_fs_operator;
DROP ROLE regress_fs_reader, regress_fs_operator;
