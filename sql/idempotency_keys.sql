-- Idempotency keys for effects outside the database: fingerprints, stored results,
-- and fenced leases (acquire / finish / release).
SELECT inbox.create_inbox('api_keys');
SELECT inbox.create_inbox('api_keys_uuid', 'uuid');
SELECT inbox.create_inbox('api_keys_bigint', 'bigint');

-- fingerprint(): a digest of canonical jsonb.  Key order, whitespace, duplicate keys
-- and trailing zeros do not matter; values, types and nesting do.
SELECT length(inbox.fingerprint('{"a": 1}')) AS bytes;
SELECT inbox.fingerprint('{"a": 1, "b": [1, 2.50]}') = inbox.fingerprint('{ "b":[1,2.5],"a":1.0 }') AS same;
SELECT inbox.fingerprint('{"a": 1, "a": 2}') = inbox.fingerprint('{"a": 2}') AS last_key_wins;
SELECT inbox.fingerprint('{"a": 1}') = inbox.fingerprint('{"a": "1"}') AS number_is_string;
SELECT inbox.fingerprint('[1, 2]') = inbox.fingerprint('[2, 1]') AS order_in_arrays;
SELECT inbox.fingerprint('1') = inbox.fingerprint('[1]') AS scalar_is_array;
SELECT inbox.fingerprint('{"a": {"b": 1}}') = inbox.fingerprint('{"a": [{"b": 1}]}') AS nesting;
SELECT inbox.fingerprint('"ab"') = inbox.fingerprint('["a", "b"]') AS strings_run_together;
SELECT inbox.fingerprint(NULL) IS NULL AS strict;

-- claim with a fingerprint: a replay with the same payload is a duplicate, another
-- payload under the same key is an error that names the key.
SELECT inbox.claim('api_keys', 'order-1', inbox.fingerprint('{"amount": 10}'));
SELECT inbox.claim('api_keys', 'order-1', inbox.fingerprint('{"amount": 10.0}'));
SELECT inbox.claim('api_keys', 'order-1', inbox.fingerprint('{"amount": 11}'));
\echo :SQLSTATE
-- No fingerprint on either side: nothing to compare.
SELECT inbox.claim('api_keys', 'order-1');
SELECT inbox.claim('api_keys', 'order-1', NULL);
SELECT inbox.claim('api_keys', 'order-2');
SELECT inbox.claim('api_keys', 'order-2', inbox.fingerprint('{"amount": 10}'));
-- The mismatch is found on every path, also when this backend has seen mostly
-- duplicates and answers them from the index first.
SELECT count(*) FILTER (WHERE NOT inbox.claim('api_keys', 'order-1', inbox.fingerprint('{"amount": 10}'))) AS duplicates
  FROM generate_series(1, 40);
SELECT inbox.claim('api_keys', 'order-1', '\x00');
\echo :SQLSTATE
-- In one transaction: the second claim sees the first.
BEGIN;
SELECT inbox.claim('api_keys', 'order-3', '\x01');
SELECT inbox.claim('api_keys', 'order-3', '\x02');
ROLLBACK;
SELECT inbox.claim('api_keys', 'order-3', '\x02');
-- uuid and bigint keys.
SELECT inbox.claim('api_keys_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '\x01');
SELECT inbox.claim('api_keys_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '\x02');
\echo :SQLSTATE
SELECT inbox.claim('api_keys_bigint', 42::bigint, '\x01');
SELECT inbox.claim('api_keys_bigint', 42::bigint, '\x01');

-- complete() and result(): the first answer, kept for duplicates.
BEGIN;
SELECT inbox.claim('api_keys', 'order-4');
SELECT inbox.complete('api_keys', 'order-4', '{"receipt": 1}');
COMMIT;
SELECT inbox.result('api_keys', 'order-4');
SELECT inbox.result('api_keys', 'order-2') IS NULL AS no_result_stored;
SELECT inbox.result('api_keys', 'never-seen') IS NULL AS not_claimed;
-- A rolled-back complete leaves the earlier result.
BEGIN;
SELECT inbox.complete('api_keys', 'order-4', '{"receipt": 2}');
ROLLBACK;
SELECT inbox.result('api_keys', 'order-4');
SELECT inbox.complete('api_keys', 'never-seen', '{}');
\echo :SQLSTATE
SELECT inbox.result('api_keys_bigint', 42::bigint) IS NULL AS bigint_result;

-- acquire: a fresh key is acquired with a token; retries see in_progress while the
-- lease is live, and completed with the stored result once it is finished.
SELECT status, token IS NOT NULL AS has_token, result
  FROM inbox.acquire('api_keys', 'pay-1', '1 minute', inbox.fingerprint('{"amount": 5}'));
SELECT token AS first_token FROM api_keys WHERE message_id = 'pay-1' \gset
SELECT * FROM inbox.acquire('api_keys', 'pay-1', '1 minute', inbox.fingerprint('{"amount": 5}'));
-- Another payload under the key is refused even while it is in progress.
SELECT * FROM inbox.acquire('api_keys', 'pay-1', '1 minute', inbox.fingerprint('{"amount": 6}'));
\echo :SQLSTATE
SELECT inbox.finish('api_keys', 'pay-1', :first_token, '{"charge": "ch_1"}');
SELECT status, token = :first_token AS same_token, result
  FROM inbox.acquire('api_keys', 'pay-1', '1 minute', inbox.fingerprint('{"amount": 5}'));
SELECT inbox.result('api_keys', 'pay-1');
-- finish again with the same token and result (a retry after a lost reply): no-op.
SELECT inbox.finish('api_keys', 'pay-1', :first_token, '{"charge": "ch_1"}');
-- ... with another result: refused.
SELECT inbox.finish('api_keys', 'pay-1', :first_token, '{"charge": "ch_2"}');
\echo :SQLSTATE
-- A finished attempt cannot be released.
SELECT inbox.release('api_keys', 'pay-1', :first_token);
\echo :SQLSTATE

-- release: forget a failed attempt so a retry runs, with a higher token.
SELECT status FROM inbox.acquire('api_keys', 'pay-2', '1 minute');
SELECT token AS t1 FROM api_keys WHERE message_id = 'pay-2' \gset
SELECT inbox.release('api_keys', 'pay-2', :t1);
SELECT count(*) AS rows_left FROM api_keys WHERE message_id = 'pay-2';
SELECT inbox.release('api_keys', 'pay-2', :t1);
\echo :SQLSTATE
SELECT status, token > :t1 AS higher_token FROM inbox.acquire('api_keys', 'pay-2', '1 minute');
SELECT token AS t2 FROM api_keys WHERE message_id = 'pay-2' \gset
SELECT inbox.finish('api_keys', 'pay-2', :t1, '{}');
\echo :SQLSTATE
SELECT inbox.finish('api_keys', 'pay-2', :t2);
SELECT status, result IS NULL AS null_result FROM inbox.acquire('api_keys', 'pay-2', '1 minute');

-- A lease whose time is up is taken over with a higher token; the old holder is
-- fenced off, the new one finishes.
SELECT status FROM inbox.acquire('api_keys', 'pay-3', '1 millisecond');
SELECT token AS old_token FROM api_keys WHERE message_id = 'pay-3' \gset
SELECT pg_sleep(0.01);
SELECT status, token > :old_token AS higher_token FROM inbox.acquire('api_keys', 'pay-3', '1 minute');
SELECT token AS new_token FROM api_keys WHERE message_id = 'pay-3' \gset
SELECT inbox.finish('api_keys', 'pay-3', :old_token, '{"late": true}');
\echo :SQLSTATE
SELECT inbox.release('api_keys', 'pay-3', :old_token);
\echo :SQLSTATE
SELECT inbox.finish('api_keys', 'pay-3', :new_token, '{"late": false}');
SELECT inbox.result('api_keys', 'pay-3');
-- An expired lease nobody took over may still finish: its token was never superseded.
SELECT status FROM inbox.acquire('api_keys', 'pay-4', '1 millisecond');
SELECT token AS slow_token FROM api_keys WHERE message_id = 'pay-4' \gset
SELECT pg_sleep(0.01);
SELECT inbox.finish('api_keys', 'pay-4', :slow_token, '{"slow": true}');
SELECT status, result FROM inbox.acquire('api_keys', 'pay-4', '1 minute');

-- Session-bound: while this session lives, its lease is live.
SELECT status FROM inbox.acquire('api_keys', 'pay-5', '1 minute', NULL, true);
SELECT holder_pid = pg_backend_pid() AS held_by_me FROM api_keys WHERE message_id = 'pay-5';
SELECT status FROM inbox.acquire('api_keys', 'pay-5', '1 minute', NULL, true);
-- A session-bound lease whose backend is gone is stale at once.  Pretend the holder
-- was a backend that no longer exists.
UPDATE api_keys SET holder_pid = 2147483000 WHERE message_id = 'pay-5';
SELECT status FROM inbox.acquire('api_keys', 'pay-5', '1 minute', NULL, true);
-- Behind a connection pooler its server connection is not the client's session:
-- refused (0A000) before anything is read, while a plain lease is still taken.
SET idempotent_inbox.behind_pooler = on;
SELECT status FROM inbox.acquire('api_keys', 'pay-6', '1 minute', NULL, true);
\echo :SQLSTATE
SELECT count(*) AS rows_written FROM api_keys WHERE message_id = 'pay-6';
SELECT status FROM inbox.acquire('api_keys', 'pay-6', '1 minute', NULL, false);
SELECT holder_pid IS NULL AS not_session_bound FROM api_keys WHERE message_id = 'pay-6';
RESET idempotent_inbox.behind_pooler;

-- Key types and a plain claim's key: acquire of an id claimed without a lease
-- replays it as completed; finish of such a key is refused.
SELECT status, token, result FROM inbox.acquire('api_keys', 'order-4', '1 minute');
SELECT inbox.finish('api_keys', 'order-4', 1);
\echo :SQLSTATE
SELECT status FROM inbox.acquire('api_keys_uuid', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '1 minute');
SELECT status FROM inbox.acquire('api_keys_bigint', 7::bigint, '1 minute');
SELECT status FROM inbox.acquire('api_keys_bigint', '7', '1 minute');
-- complete is for claims; a leased key is finished with its token.
SELECT inbox.complete('api_keys_bigint', 7::bigint, '{}');
\echo :SQLSTATE
-- try_claim sees a live lease as in progress; claim sees a duplicate.
SELECT inbox.try_claim('api_keys_bigint', 7::bigint);
SELECT inbox.claim('api_keys_bigint', 7::bigint);

-- Bad input: each with its SQLSTATE, nothing written.
SELECT * FROM inbox.acquire('api_keys', 'bad', NULL);
\echo :SQLSTATE
SELECT * FROM inbox.acquire('api_keys', 'bad', '0 seconds');
\echo :SQLSTATE
SELECT * FROM inbox.acquire('api_keys', 'bad', '-1 seconds');
\echo :SQLSTATE
SELECT * FROM inbox.acquire('api_keys', 'bad', '1 minute', NULL, NULL);
\echo :SQLSTATE
SELECT * FROM inbox.acquire('api_keys', NULL, '1 minute');
\echo :SQLSTATE
SELECT * FROM inbox.acquire('api_keys', '', '1 minute');
\echo :SQLSTATE
SELECT * FROM inbox.acquire('api_keys', repeat('x', 1025), '1 minute');
\echo :SQLSTATE
SELECT * FROM inbox.acquire('pg_class', 'k', '1 minute');
\echo :SQLSTATE
SELECT * FROM inbox.acquire(NULL, 'k', '1 minute');
\echo :SQLSTATE
SELECT inbox.finish('api_keys', 'pay-9', NULL);
\echo :SQLSTATE
SELECT inbox.finish('api_keys', 'never-acquired', 1);
\echo :SQLSTATE
SELECT inbox.release('api_keys', 'never-acquired', 1);
\echo :SQLSTATE
SELECT inbox.release('api_keys', 'pay-9', NULL);
\echo :SQLSTATE
SELECT inbox.complete('api_keys', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.result('api_keys', '');
\echo :SQLSTATE
SELECT count(*) AS bad_rows FROM api_keys WHERE message_id IN ('bad', 'k', 'pay-9', 'never-acquired');

-- Privileges are the table's: a role that may only read the inbox cannot lease.
CREATE ROLE regress_inbox_reader;
GRANT SELECT ON api_keys TO regress_inbox_reader;
SET ROLE regress_inbox_reader;
SELECT inbox.result('api_keys', 'order-4');
SELECT * FROM inbox.acquire('api_keys', 'pay-10', '1 minute');
\echo :SQLSTATE
RESET ROLE;
DROP OWNED BY regress_inbox_reader;
DROP ROLE regress_inbox_reader;

-- A lease's result is its token holder's: complete never overwrites it, even
-- after the lease was finished by another holder.
SELECT token AS stale_token FROM inbox.acquire('api_keys', 'fenced', '1 second') \gset
UPDATE api_keys SET lease_until = now() - interval '1 second' WHERE message_id = 'fenced';
SELECT token AS winner_token FROM inbox.acquire('api_keys', 'fenced', '30 seconds') \gset
SELECT inbox.finish('api_keys', 'fenced', :winner_token, '{"charge": "B"}');
SELECT inbox.complete('api_keys', 'fenced', '{"charge": "A"}');
\echo :SQLSTATE
SELECT status, result FROM inbox.acquire('api_keys', 'fenced', '30 seconds');
-- An expired claim counts as absent: nothing to complete.
SELECT inbox.create_inbox('api_keys_window', retention => '1 hour');
SELECT inbox.claim('api_keys_window', 'old');
UPDATE api_keys_window SET claimed_at = now() - interval '2 hours';
SELECT inbox.complete('api_keys_window', 'old', '{}');
\echo :SQLSTATE
SELECT inbox.claim('api_keys_window', 'new');
SELECT inbox.complete('api_keys_window', 'new', '{"ok": true}');
SELECT inbox.result('api_keys_window', 'new');
SELECT inbox.drop_inbox('api_keys_window');

SELECT inbox.drop_inbox('api_keys');
SELECT inbox.drop_inbox('api_keys_uuid');
SELECT inbox.drop_inbox('api_keys_bigint');
