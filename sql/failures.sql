-- Messages that keep failing: record_failure, quarantine, the answers of every
-- claim path for a quarantined id, per-key ordering (claim_in_order), the
-- operator's verbs and their audit rows, retention, rights and errors.
\set VERBOSITY default
SELECT inbox.create_inbox('fail_inbox');
SELECT max_attempts, key_ordering FROM inbox.inboxes WHERE inbox = 'fail_inbox'::regclass;
SELECT inbox.set_max_attempts('fail_inbox', 3);
CREATE TABLE fail_effects (id text PRIMARY KEY);

-- A failed attempt rolls back, claim and all; the failure is counted in a
-- transaction of its own.  retry, retry, then quarantined at the third.
BEGIN;
SELECT inbox.claim_apply('fail_inbox', 'm-1', 'INSERT INTO fail_effects VALUES ($1)', 'm-1');
ROLLBACK;
SELECT * FROM inbox.record_failure('fail_inbox', 'm-1', 'ERROR: card declined');
SELECT * FROM inbox.record_failure('fail_inbox', 'm-1', 'ERROR: card declined again');
SELECT message_id, state, attempts, last_error, quarantined_at IS NULL AS not_yet
  FROM inbox.quarantine;
SELECT * FROM inbox.record_failure('fail_inbox', 'm-1', 'ERROR: card declined for good');
SELECT message_id, state, attempts, last_error, quarantined_at IS NOT NULL AS quarantined
  FROM inbox.quarantine;
-- A quarantined message stays so: later failures count nothing.
SELECT * FROM inbox.record_failure('fail_inbox', 'm-1', 'ERROR: once more');
SELECT attempts, last_error FROM inbox.quarantine WHERE message_id = 'm-1';

-- Every claim path answers a quarantined id without running its effect.
SELECT inbox.claim('fail_inbox', 'm-1') AS claim;
SELECT inbox.try_claim('fail_inbox', 'm-1') AS try_claim;
SELECT inbox.claim_apply('fail_inbox', 'm-1', 'INSERT INTO fail_effects VALUES ($1)', 'm-1') AS claim_apply;
SELECT * FROM inbox.claim_apply_many('fail_inbox', ARRAY['m-1', 'm-2'],
                                     'INSERT INTO fail_effects SELECT unnest($1::text[])');
SELECT * FROM inbox.claim_many('fail_inbox', ARRAY['m-1', 'm-3']);
-- A duplicate after a quarantined one answers for itself, not for the one before.
SELECT inbox.claim('fail_inbox', 'm-1') AS quarantined_claim, inbox.try_claim('fail_inbox', 'm-2') AS next,
       inbox.claim_apply('fail_inbox', 'm-1', 'SELECT 1') AS again,
       (SELECT array_agg(outcome) FROM inbox.claim_apply_many('fail_inbox', ARRAY['m-2'], 'SELECT 1')) AS batch;
SET idempotent_inbox.force_path = probe;
SELECT inbox.claim_apply('fail_inbox', 'm-1', 'SELECT 1') AS probed, inbox.claim_apply('fail_inbox', 'm-2', 'SELECT 1') AS probed_next;
RESET idempotent_inbox.force_path;
SELECT id FROM fail_effects ORDER BY id;
SELECT quarantined, retried, discarded, forgotten FROM inbox.stats WHERE inbox = 'fail_inbox'::regclass;

-- A failure of an id applied meanwhile counts nothing (another delivery won).
SELECT * FROM inbox.record_failure('fail_inbox', 'm-2', 'ERROR: too late');
SELECT count(*) AS failures_of_m2 FROM inbox.quarantine WHERE message_id = 'm-2';

-- retry: the next delivery runs, its attempts counted afresh; false if not quarantined.
SELECT inbox.retry('fail_inbox', 'm-1', 'card replaced') AS retried;
SELECT inbox.retry('fail_inbox', 'm-1') AS retried_again;
SELECT inbox.retry('fail_inbox', 'never-seen') AS retried_unknown;
SELECT count(*) AS left_after_retry FROM inbox.quarantine WHERE message_id = 'm-1';
SELECT inbox.claim_apply('fail_inbox', 'm-1', 'INSERT INTO fail_effects VALUES ($1)', 'm-1') AS after_retry;

-- discard: counted as applied without running.  A quarantined one, and one never seen.
SELECT n, f.* FROM generate_series(1, 3) n,
       LATERAL inbox.record_failure('fail_inbox', 'm-4', 'boom ' || n) f;
SELECT inbox.discard('fail_inbox', 'm-4', 'refunded by hand') AS discarded;
SELECT inbox.try_claim('fail_inbox', 'm-4') AS m4_now;
SELECT inbox.discard('fail_inbox', 'm-5', 'cancelled upstream') AS discarded_unseen;
SELECT inbox.claim_apply('fail_inbox', 'm-5', 'INSERT INTO fail_effects VALUES ($1)', 'm-5') AS m5_now;
SELECT inbox.discard('fail_inbox', 'm-5') AS discarded_twice;

-- forget: an applied id runs again at its next delivery (a replay on purpose).
SELECT inbox.forget('fail_inbox', 'm-2', 'replay after the bug fix') AS forgotten;
SELECT inbox.forget('fail_inbox', 'm-2') AS forgotten_again;
DELETE FROM fail_effects WHERE id = 'm-2';
SELECT inbox.claim_apply('fail_inbox', 'm-2', 'INSERT INTO fail_effects VALUES ($1)', 'm-2') AS replayed;
SELECT id FROM fail_effects ORDER BY id;

-- The audit: who, which verb, why, and what the failures said at the time.
SELECT message_id, verb, actor = current_user AS by_me, reason, attempts, last_error
  FROM inbox.audit ORDER BY done_at, message_id;
SELECT quarantined, retried, discarded, forgotten FROM inbox.stats WHERE inbox = 'fail_inbox'::regclass;

-- max_attempts is read at each failure: lowering it quarantines at the next one.
SELECT * FROM inbox.record_failure('fail_inbox', 'm-6', 'first');
SELECT inbox.set_max_attempts('fail_inbox', 1);
SELECT * FROM inbox.record_failure('fail_inbox', 'm-6', 'second');
SELECT inbox.set_max_attempts('fail_inbox', 3);

-- The error is kept to 8192 bytes, cut on a character boundary.
SELECT * FROM inbox.record_failure('fail_inbox', 'm-7', repeat('é', 10000));
SELECT octet_length(last_error), length(last_error) FROM inbox.quarantine WHERE message_id = 'm-7';
-- forget clears a claim; m-7 has none, only its failures.
SELECT inbox.forget('fail_inbox', 'm-7') AS forgotten_unclaimed;
SELECT inbox.forget('fail_inbox', 'm-6', repeat('x', 9000)) AS forgotten_long_reason;
SELECT octet_length(reason), attempts FROM inbox.audit WHERE message_id = 'm-6';

-- Per-key ordering.  Refused until the owner turns it on.
SELECT inbox.claim_in_order('fail_inbox', 'o-1', 'acct-1');
SELECT inbox.set_key_ordering('fail_inbox', true);
SELECT key_ordering FROM inbox.inboxes WHERE inbox = 'fail_inbox'::regclass;
-- o-1 fails (acct-1); o-2 of the same key waits behind it, o-9 of another key runs.
BEGIN;
SELECT inbox.claim_in_order('fail_inbox', 'o-1', 'acct-1');
ROLLBACK;
SELECT * FROM inbox.record_failure('fail_inbox', 'o-1', 'deadlock on the ledger', 'acct-1');
SELECT inbox.claim_in_order('fail_inbox', 'o-2', 'acct-1') AS o2;
SELECT inbox.claim_in_order('fail_inbox', 'o-3', 'acct-1') AS o3;
SELECT inbox.claim_in_order('fail_inbox', 'o-2', 'acct-1') AS o2_redelivered;
SELECT inbox.claim_in_order('fail_inbox', 'o-9', 'acct-9') AS other_key;
SELECT message_id, ordering_key, state, position, blocked_by, attempts, deliveries
  FROM inbox.quarantine WHERE ordering_key IS NOT NULL ORDER BY ordering_key, position;
-- o-1 quarantined: the key stays held; try_claim and claim_in_order both say so.
SELECT n, f.* FROM generate_series(2, 3) n,
       LATERAL inbox.record_failure('fail_inbox', 'o-1', 'deadlock ' || n, 'acct-1') f;
SELECT inbox.claim_in_order('fail_inbox', 'o-1', 'acct-1') AS o1,
       inbox.claim_in_order('fail_inbox', 'o-2', 'acct-1') AS o2;
SELECT blocked FROM inbox.stats WHERE inbox = 'fail_inbox'::regclass;
-- retry: o-1 runs at its next delivery, and until it is applied o-2 still waits.
SELECT inbox.retry('fail_inbox', 'o-1', 'ledger fixed');
SELECT message_id, state, position FROM inbox.quarantine
 WHERE ordering_key = 'acct-1' ORDER BY position;
SELECT inbox.claim_in_order('fail_inbox', 'o-2', 'acct-1') AS o2_before_o1;
-- o-1 applied but rolled back: still held.  Committed: the key is free.
BEGIN;
SELECT inbox.claim_in_order('fail_inbox', 'o-1', 'acct-1') AS o1;
ROLLBACK;
SELECT inbox.claim_in_order('fail_inbox', 'o-2', 'acct-1') AS o2_still;
SELECT inbox.claim_in_order('fail_inbox', 'o-1', 'acct-1') AS o1;
SELECT inbox.claim_in_order('fail_inbox', 'o-2', 'acct-1') AS o2,
       inbox.claim_in_order('fail_inbox', 'o-3', 'acct-1') AS o3,
       inbox.claim_in_order('fail_inbox', 'o-3', 'acct-1') AS o3_again;
SELECT count(*) AS held_keys FROM inbox.quarantine WHERE ordering_key = 'acct-1';
-- A duplicate is a duplicate, blocked key or not; discard releases a key too.
SELECT * FROM inbox.record_failure('fail_inbox', 'o-4', 'boom', 'acct-1');
SELECT inbox.claim_in_order('fail_inbox', 'o-2', 'acct-1') AS o2_duplicate,
       inbox.claim_in_order('fail_inbox', 'o-5', 'acct-1') AS o5_blocked;
SELECT inbox.discard('fail_inbox', 'o-4', 'skipped');
SELECT inbox.claim_in_order('fail_inbox', 'o-5', 'acct-1') AS o5;

-- Bad arguments: each with its SQLSTATE, nothing recorded.
SELECT * FROM inbox.record_failure('fail_inbox', 'x', NULL);
\echo :SQLSTATE
SELECT * FROM inbox.record_failure('fail_inbox', NULL, 'e');
\echo :SQLSTATE
SELECT * FROM inbox.record_failure('fail_inbox', '', 'e');
\echo :SQLSTATE
SELECT * FROM inbox.record_failure('fail_inbox', repeat('x', 1025), 'e');
\echo :SQLSTATE
SELECT * FROM inbox.record_failure('fail_inbox', 'x', 'e', '');
\echo :SQLSTATE
SELECT * FROM inbox.record_failure('fail_inbox', 'x', 'e', repeat('k', 1025));
\echo :SQLSTATE
SELECT * FROM inbox.record_failure(NULL, 'x', 'e');
\echo :SQLSTATE
SELECT * FROM inbox.record_failure('fail_effects', 'x', 'e');
\echo :SQLSTATE
SELECT * FROM inbox.record_failure('fail_inbox', 42::int8, 'e');
\echo :SQLSTATE
SELECT inbox.claim_in_order('fail_inbox', 'x', NULL);
\echo :SQLSTATE
SELECT inbox.claim_in_order('fail_inbox', 'x', '');
\echo :SQLSTATE
SELECT inbox.retry('fail_inbox', NULL);
\echo :SQLSTATE
SELECT inbox.set_max_attempts('fail_inbox', 0);
\echo :SQLSTATE
SELECT inbox.set_max_attempts('fail_inbox', NULL);
\echo :SQLSTATE
SELECT inbox.set_key_ordering('fail_inbox', NULL);
\echo :SQLSTATE
BEGIN READ ONLY;
SELECT * FROM inbox.record_failure('fail_inbox', 'x', 'e');
\echo :SQLSTATE
ROLLBACK;
SELECT count(*) AS nothing_recorded FROM inbox.quarantine WHERE message_id = 'x';

-- Typed inboxes: uuid and bigint ids, kept as text in the failures.
SELECT inbox.create_inbox('fail_int', key_type => 'bigint');
SELECT inbox.set_max_attempts('fail_int', 1);
SELECT * FROM inbox.record_failure('fail_int', 42::int8, 'bad row');
SELECT inbox.try_claim('fail_int', 42::int8), inbox.claim_apply('fail_int', 42::int8, 'SELECT 1');
SELECT inbox.acquire('fail_int', 42::int8, '1 minute');
SELECT message_id, state FROM inbox.quarantine WHERE inbox = 'fail_int'::regclass;
SELECT inbox.forget('fail_int', 42::int8);
SELECT inbox.try_claim('fail_int', 42::int8);

-- Retention: purge removes failures of messages not quarantined once their
-- last failure is older than the window, and never a quarantined message.
SELECT inbox.create_inbox('fail_window', retention => '1 hour');
SELECT inbox.set_max_attempts('fail_window', 2);
SELECT n, f.* FROM generate_series(1, 2) n,
       LATERAL inbox.record_failure('fail_window', 'old', 'e' || n) f;
SELECT * FROM inbox.record_failure('fail_window', 'stale', 'e');
SELECT inbox.claim('fail_window', 'done');
UPDATE fail_window SET claimed_at = now() - interval '2 days' WHERE message_id = 'done';
UPDATE inbox.failures SET last_failed_at = now() - interval '2 days', first_failed_at = now() - interval '2 days'
 WHERE inbox = 'fail_window'::regclass;
SELECT inbox.purge('fail_window');
SELECT message_id, state FROM inbox.quarantine WHERE inbox = 'fail_window'::regclass;
SELECT inbox.try_claim('fail_window', 'old') AS old_still_quarantined;
-- With a window, claim_apply's look answers from the row it read: quarantined, then a plain duplicate.
SELECT inbox.claim('fail_window', 'kept') AS kept;
SELECT inbox.claim_apply('fail_window', 'old', 'SELECT 1') AS old, inbox.claim_apply('fail_window', 'kept', 'SELECT 1') AS kept;
DELETE FROM fail_window WHERE message_id = 'kept';
SELECT message_id, claimed_at FROM fail_window;

-- Rights: record_failure needs INSERT and SELECT on the inbox, as a claim;
-- retry and forget DELETE, discard INSERT and UPDATE, and EXECUTE, which PUBLIC
-- lacks; set_max_attempts and set_key_ordering are the owner's.
CREATE ROLE regress_fail_reader;
CREATE ROLE regress_fail_operator;
GRANT SELECT ON fail_inbox TO regress_fail_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON fail_inbox TO regress_fail_operator;
GRANT EXECUTE ON FUNCTION inbox.retry(regclass, text, text), inbox.discard(regclass, text, text),
                          inbox.forget(regclass, text, text), inbox.retry(regclass, int8, text),
                          inbox.discard(regclass, int8, text) TO regress_fail_operator;
GRANT SELECT ON fail_int TO regress_fail_operator;
SET ROLE regress_fail_reader;
SELECT * FROM inbox.record_failure('fail_inbox', 'r-1', 'e');
SELECT inbox.claim_in_order('fail_inbox', 'r-1', 'k');
SELECT inbox.retry('fail_inbox', 'm-7');
SELECT count(*) > 0 AS reader_sees_quarantine FROM inbox.quarantine;
SELECT count(*) > 0 AS reader_sees_audit FROM inbox.audit;
SELECT count(*) FROM inbox.failures;
SELECT count(*) FROM inbox.audit_log;
RESET ROLE;
SET ROLE regress_fail_operator;
SELECT * FROM inbox.record_failure('fail_inbox', 'r-1', 'e');
SELECT inbox.set_max_attempts('fail_inbox', 9);
SELECT inbox.set_key_ordering('fail_inbox', false);
SELECT inbox.forget('fail_inbox', 'm-1', 'operator replay');
SELECT inbox.retry('fail_int', 42::int8);
SELECT inbox.discard('fail_int', 42::int8);
RESET ROLE;
SELECT message_id, verb, actor, reason FROM inbox.audit WHERE actor = 'regress_fail_operator';

-- Row security: the answers come from stored claims a policy may hide.
SELECT inbox.create_inbox('fail_rls');
ALTER TABLE fail_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY visible ON fail_rls USING (true);
GRANT SELECT, INSERT ON fail_rls TO regress_fail_operator;
SET ROLE regress_fail_operator;
SELECT * FROM inbox.record_failure('fail_rls', 'x', 'e');
RESET ROLE;

-- Dropping an inbox forgets its failures, blocked messages and audit rows.
DROP TABLE fail_window;
SELECT count(*) AS window_rows FROM inbox.failures WHERE inbox::oid NOT IN (SELECT oid FROM pg_class);

DROP TABLE fail_inbox, fail_int, fail_rls, fail_effects;
SELECT count(*) AS failures_left FROM inbox.failures;
SELECT count(*) AS blocked_left FROM inbox.blocked;
SELECT count(*) AS audit_left FROM inbox.audit_log;
DROP OWNED BY regress_fail_operator;
DROP ROLE regress_fail_reader, regress_fail_operator;
