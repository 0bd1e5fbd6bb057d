-- try_claim, fingerprinted claims, stored results and leases of a sharded inbox:
-- the _sharded forms, which take the shard key value before the id, answer as the
-- plain forms do on an inbox keyed by the id alone, for each (shard key, id).
SELECT inbox.create_sharded_inbox('keys_inbox', 'account', 'bigint', 'text');
SELECT inbox.create_sharded_inbox('window_inbox', 'tenant', 'text', 'uuid', retention => '1 hour');

-- try_claim_sharded: claimed, then duplicate; another shard key value is another claim.
SELECT inbox.try_claim_sharded('keys_inbox', 7, 'm1');
SELECT inbox.try_claim_sharded('keys_inbox', 7, 'm1');
SELECT inbox.try_claim_sharded('keys_inbox', 8, 'm1');
-- A driver's untyped shard key takes the type of the inbox's shard key.
BEGIN;
PREPARE untyped AS SELECT inbox.try_claim_sharded('keys_inbox', $1, 'm1');
EXECUTE untyped('7');
DEALLOCATE untyped;
COMMIT;

-- Fingerprints: the same payload is a duplicate, another one an error with its own SQLSTATE.
SELECT inbox.claim_sharded('keys_inbox', 7, 'f1', inbox.fingerprint('{"amount": 5}'));
SELECT inbox.claim_sharded('keys_inbox', 7, 'f1', inbox.fingerprint('{"amount": 5}'));
SELECT inbox.claim_sharded('keys_inbox', 7, 'f1', inbox.fingerprint('{"amount": 6}'));
\echo :SQLSTATE
SELECT inbox.claim_sharded('keys_inbox', 8, 'f1', inbox.fingerprint('{"amount": 6}'));
-- A claim without a fingerprint does not compare: a duplicate.
SELECT inbox.claim_sharded('keys_inbox', 7, 'f1');
SELECT inbox.claim_sharded('keys_inbox', 7, 'f2', NULL::bytea);

-- complete_sharded and result_sharded: the result of the claim of (7, m1) only.
BEGIN;
SELECT inbox.claim_sharded('keys_inbox', 9, 'r1');
SELECT inbox.complete_sharded('keys_inbox', 9, 'r1', '{"receipt": 41}');
COMMIT;
SELECT inbox.result_sharded('keys_inbox', 9, 'r1') AS mine,
       inbox.result_sharded('keys_inbox', 8, 'r1') AS other_shard_key,
       inbox.result_sharded('keys_inbox', 9, 'r2') AS unclaimed;
SELECT inbox.complete_sharded('keys_inbox', 8, 'r1', '{}');
\echo :SQLSTATE

-- Leases: acquired, in_progress while live, completed with the result once finished.
SELECT status, token IS NOT NULL AS has_token FROM inbox.acquire_sharded('keys_inbox', 7, 'k1', '1 minute');
SELECT token AS k1_token FROM keys_inbox WHERE account = 7 AND message_id = 'k1' \gset
SELECT status, token FROM inbox.acquire_sharded('keys_inbox', 7, 'k1', '1 minute');
SELECT status, token IS NOT NULL AS has_token FROM inbox.acquire_sharded('keys_inbox', 8, 'k1', '1 minute');
SELECT inbox.complete_sharded('keys_inbox', 7, 'k1', '{}');
\echo :SQLSTATE
SELECT inbox.finish_sharded('keys_inbox', 7, 'k1', :k1_token, '{"charged": true}');
-- A repeated finish with the same result changes nothing; another token is stale
-- (tokens are shown by their SQLSTATE only: their numbers depend on earlier tests).
SELECT inbox.finish_sharded('keys_inbox', 7, 'k1', :k1_token, '{"charged": true}');
\set VERBOSITY sqlstate
SELECT inbox.finish_sharded('keys_inbox', 8, 'k1', :k1_token, '{"charged": true}');
\set VERBOSITY default
SELECT status, token = :k1_token AS same_token, result FROM inbox.acquire_sharded('keys_inbox', 7, 'k1', '1 minute');
-- A fingerprint is checked by acquire too.
SELECT status FROM inbox.acquire_sharded('keys_inbox', 7, 'k2', '1 minute', inbox.fingerprint('{"a": 1}'));
SELECT status FROM inbox.acquire_sharded('keys_inbox', 7, 'k2', '1 minute', inbox.fingerprint('{"a": 2}'));
\echo :SQLSTATE
-- release_sharded forgets the attempt, so a retry runs with a higher token.
SELECT token AS k2_token FROM keys_inbox WHERE account = 7 AND message_id = 'k2' \gset
SELECT inbox.release_sharded('keys_inbox', 7, 'k2', :k2_token);
\set VERBOSITY sqlstate
SELECT inbox.release_sharded('keys_inbox', 7, 'k2', :k2_token);
\set VERBOSITY default
SELECT status, token > :k2_token AS higher FROM inbox.acquire_sharded('keys_inbox', 7, 'k2', '1 minute');
-- A lease whose time is up is taken over with a higher token, and the old token is fenced off.
SELECT status FROM inbox.acquire_sharded('keys_inbox', 7, 'k3', '1 millisecond');
SELECT token AS k3_token FROM keys_inbox WHERE account = 7 AND message_id = 'k3' \gset
SELECT pg_sleep(0.01);
SELECT status, token > :k3_token AS higher FROM inbox.acquire_sharded('keys_inbox', 7, 'k3', '1 minute');
\set VERBOSITY sqlstate
SELECT inbox.finish_sharded('keys_inbox', 7, 'k3', :k3_token, NULL);
\set VERBOSITY default
-- On one node a session-bound lease ends with its backend, as on any inbox.
SELECT status FROM inbox.acquire_sharded('keys_inbox', 7, 'k4', '1 minute', session_bound => true);
SELECT holder_pid = pg_backend_pid() AS mine FROM keys_inbox WHERE account = 7 AND message_id = 'k4';

-- The window is kept in a constraint too, always true, which Citus copies to its
-- workers (where the registry has no row): set_retention rewrites it, NULL drops it.
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'window_inbox'::regclass AND contype = 'c' ORDER BY 1;
-- (In one transaction: behind a transaction pooler a session's SET would outlive it.)
BEGIN;
SET LOCAL intervalstyle = 'iso_8601';
SELECT inbox.set_retention('window_inbox', '10 minutes');
COMMIT;
SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'idempotent_inbox_window';
SELECT inbox.set_retention('window_inbox', NULL);
SELECT count(*) AS window_markers FROM pg_constraint WHERE conname = 'idempotent_inbox_window';
SELECT inbox.set_retention('window_inbox', '1 hour');

-- A window: an expired claim counts as absent, with its fingerprint and result.
SELECT inbox.claim_sharded('window_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid,
                           inbox.fingerprint('{"v": 1}'));
UPDATE window_inbox SET claimed_at = now() - interval '2 hours';
SELECT inbox.claim_sharded('window_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid,
                           inbox.fingerprint('{"v": 2}'));
SELECT inbox.try_claim_sharded('window_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid);
UPDATE window_inbox SET claimed_at = now() - interval '2 hours';
SELECT inbox.result_sharded('window_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid);
SELECT inbox.try_claim_sharded('window_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid);
SELECT status FROM inbox.acquire_sharded('window_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid, '1 minute');
UPDATE window_inbox SET claimed_at = now() - interval '2 hours', lease_until = now() - interval '1 second';
SELECT status FROM inbox.acquire_sharded('window_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid, '1 minute');
SELECT tenant, count(*) FROM window_inbox GROUP BY 1;

-- A trigger that moves a lease to another shard key value is an error, as for claims.
CREATE FUNCTION move_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.account := NEW.account + 1; RETURN NEW; END $$;
CREATE TRIGGER move_account BEFORE INSERT ON keys_inbox FOR EACH ROW EXECUTE FUNCTION move_account();
SELECT status FROM inbox.acquire_sharded('keys_inbox', 20, 'moved', '1 minute');
\echo :SQLSTATE
SELECT inbox.claim_sharded('keys_inbox', 20, 'moved', '\x01'::bytea);
\echo :SQLSTATE
DROP TRIGGER move_account ON keys_inbox;
DROP FUNCTION move_account();
SELECT count(*) AS moved FROM keys_inbox WHERE message_id = 'moved';

-- The plain forms do not name a claim of a sharded inbox, the _sharded forms need
-- one, functions without a _sharded form refuse it, and row security is refused as
-- for any inbox: each with its SQLSTATE, never an internal error.
CREATE OR REPLACE FUNCTION pg_temp.outcome(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'SELECT ' || call;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
SELECT inbox.create_inbox('unsharded_inbox');
CREATE TABLE not_an_inbox (account bigint, message_id text);
SELECT call, pg_temp.outcome(call) FROM (VALUES
  ('inbox.try_claim(''keys_inbox'', ''m1'')'),
  ('inbox.result(''keys_inbox'', ''m1'')'),
  ('inbox.complete(''keys_inbox'', ''m1'', ''{}'')'),
  ('inbox.acquire(''keys_inbox'', ''k1'', ''1 minute'')'),
  ('inbox.finish(''keys_inbox'', ''k1'', 1, ''{}'')'),
  ('inbox.release(''keys_inbox'', ''k1'', 1)'),
  ('inbox.record_failure(''keys_inbox'', ''m1'', ''boom'')'),
  ('inbox.try_claim_sharded(''unsharded_inbox'', 1, ''m1'')'),
  ('inbox.acquire_sharded(''unsharded_inbox'', 1, ''k1'', ''1 minute'')'),
  ('inbox.result_sharded(''unsharded_inbox'', 1, ''k1'')'),
  ('inbox.try_claim_sharded(''not_an_inbox'', 1, ''m1'')'),
  ('inbox.try_claim_sharded(NULL, 1, ''m1'')'),
  ('inbox.try_claim_sharded(''keys_inbox'', NULL::bigint, ''m1'')'),
  ('inbox.try_claim_sharded(''keys_inbox'', 1, NULL::text)'),
  ('inbox.try_claim_sharded(''keys_inbox'', 1.5, ''m1'')'),
  ('inbox.try_claim_sharded(''keys_inbox'', ''x'', ''m1'')'),
  ('inbox.try_claim_sharded(''keys_inbox'', 1, repeat(''x'', 100000))'),
  ('inbox.acquire_sharded(''keys_inbox'', 1, ''k9'', NULL)'),
  ('inbox.acquire_sharded(''keys_inbox'', 1, ''k9'', ''-1 second'')'),
  ('inbox.acquire_sharded(''keys_inbox'', 1, ''k9'', ''1 minute'', NULL, NULL)'),
  ('inbox.finish_sharded(''keys_inbox'', 1, ''k9'', NULL, NULL)'),
  ('inbox.release_sharded(''keys_inbox'', 1, ''k9'', 0)'),
  ('inbox.complete_sharded(''keys_inbox'', 1, ''never'', NULL)'),
  ('inbox.result_sharded(''keys_inbox'', ''1'', ''never'')')) c(call);
-- Row security: the functions that answer from stored columns refuse it; claims apply it.
CREATE ROLE regress_sharded_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON keys_inbox TO regress_sharded_reader;
ALTER TABLE keys_inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_account ON keys_inbox USING (account = 7);
BEGIN;
SET LOCAL ROLE regress_sharded_reader;
SELECT pg_temp.outcome('inbox.try_claim_sharded(''keys_inbox'', 7, ''m1'')');
SELECT pg_temp.outcome('inbox.acquire_sharded(''keys_inbox'', 7, ''k1'', ''1 minute'')');
SELECT pg_temp.outcome('inbox.claim_sharded(''keys_inbox'', 7, ''f1'', ''\x01''::bytea)');
SELECT inbox.claim_sharded('keys_inbox', 7, 'rls1') AS claimed_under_policy;
SELECT inbox.result_sharded('keys_inbox', 9, 'r1') AS hidden_by_policy;
COMMIT;
DROP POLICY own_account ON keys_inbox;
ALTER TABLE keys_inbox DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON keys_inbox FROM regress_sharded_reader;
DROP ROLE regress_sharded_reader;

SELECT account, message_id, fingerprint IS NOT NULL AS fingerprinted, result,
       token IS NOT NULL AS leased_once, lease_until IS NOT NULL AS running
FROM keys_inbox ORDER BY 1, 2;

SELECT inbox.drop_inbox('keys_inbox');
SELECT inbox.drop_inbox('window_inbox');
SELECT inbox.drop_inbox('unsharded_inbox');
DROP TABLE not_an_inbox;
