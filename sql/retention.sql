-- Retention: an inbox with a retention is a dedup window.  A claim older than the
-- window counts as absent and is claimed afresh; purge deletes such claims.
SELECT inbox.create_inbox('window_inbox', retention => '1 hour');
SELECT retention FROM inbox.inboxes WHERE inbox = 'window_inbox'::regclass;
-- The window comes with an index that lets purge read the oldest claims first.
SELECT indexdef FROM pg_indexes WHERE tablename = 'window_inbox' ORDER BY indexname;

SELECT inbox.claim('window_inbox', 'fresh');
SELECT inbox.claim('window_inbox', 'fresh');
-- Age some claims past the window (as if they were made two hours ago).
INSERT INTO window_inbox (message_id, claimed_at, fingerprint, result)
SELECT 'old-' || i, now() - interval '2 hours', '\x01', '{"old": true}'
  FROM generate_series(1, 5) i;

-- An expired claim is absent: claimed again at once, with the old result forgotten
-- and the new fingerprint recorded.
SELECT inbox.result('window_inbox', 'old-1') IS NULL AS expired_result_hidden;
SELECT inbox.claim('window_inbox', 'old-1', '\x02');
SELECT claimed_at > now() - interval '1 minute' AS renewed, fingerprint, result
  FROM window_inbox WHERE message_id = 'old-1';
SELECT inbox.claim('window_inbox', 'old-1', '\x02');
SELECT inbox.try_claim('window_inbox', 'old-2');
SELECT inbox.claim_apply('window_inbox', 'old-3', 'SELECT 1');
SELECT * FROM inbox.claim_many('window_inbox', ARRAY['old-4', 'old-4', 'fresh', 'new-1']);
SELECT status, token IS NOT NULL AS has_token, result FROM inbox.acquire('window_inbox', 'old-5', '1 minute');
SELECT count(*) FILTER (WHERE claimed_at < now() - interval '1 hour') AS still_expired FROM window_inbox;

-- purge deletes expired claims only, oldest first, at most batch per call.
INSERT INTO window_inbox (message_id, claimed_at)
SELECT 'stale-' || i, now() - interval '3 hours' + i * interval '1 second'
  FROM generate_series(1, 25) i;
SELECT inbox.purge('window_inbox', 10);
SELECT min(message_id COLLATE "C") AS oldest_left FROM window_inbox WHERE message_id LIKE 'stale-%';
SELECT inbox.purge('window_inbox', 10);
SELECT inbox.purge('window_inbox');
SELECT inbox.purge('window_inbox');
SELECT count(*) AS left_in_window FROM window_inbox;
-- A lease older than the window but still running is not purged, nor re-claimed.
INSERT INTO window_inbox (message_id, claimed_at, token, lease_until)
VALUES ('long-lease', now() - interval '2 hours', 1000000, now() + interval '1 hour');
SELECT inbox.purge('window_inbox');
SELECT status FROM inbox.acquire('window_inbox', 'long-lease', '1 minute');
SELECT inbox.claim('window_inbox', 'long-lease');
-- A purge inside a transaction that rolls back deletes nothing.
UPDATE window_inbox SET lease_until = NULL, claimed_at = now() - interval '2 hours'
 WHERE message_id = 'long-lease';
BEGIN;
SELECT inbox.purge('window_inbox');
ROLLBACK;
SELECT count(*) AS long_lease_kept FROM window_inbox WHERE message_id = 'long-lease';

-- set_retention changes the window for every backend at once; NULL keeps claims forever.
SELECT inbox.create_inbox('forever_inbox');
INSERT INTO forever_inbox (message_id, claimed_at) VALUES ('ancient', now() - interval '10 years');
SELECT inbox.claim('forever_inbox', 'ancient');
SELECT inbox.purge('forever_inbox');
\echo :SQLSTATE
SELECT inbox.set_retention('forever_inbox', '1 day');
SELECT retention FROM inbox.inboxes WHERE inbox = 'forever_inbox'::regclass;
SELECT count(*) AS claimed_at_indexes FROM pg_indexes
 WHERE tablename = 'forever_inbox' AND indexdef LIKE '%(claimed_at)';
SELECT inbox.purge('forever_inbox');
SELECT inbox.claim('forever_inbox', 'ancient');
-- Setting it again reuses the index.
SELECT inbox.set_retention('forever_inbox', '2 days');
SELECT count(*) AS claimed_at_indexes FROM pg_indexes
 WHERE tablename = 'forever_inbox' AND indexdef LIKE '%(claimed_at)';
SELECT inbox.set_retention('forever_inbox', NULL);
SELECT retention FROM inbox.inboxes WHERE inbox = 'forever_inbox'::regclass;
UPDATE forever_inbox SET claimed_at = now() - interval '10 years';
SELECT inbox.claim('forever_inbox', 'ancient');

-- Bad input.
SELECT inbox.set_retention('forever_inbox', '0 seconds');
\echo :SQLSTATE
SELECT inbox.set_retention('forever_inbox', '-1 day');
\echo :SQLSTATE
SELECT inbox.set_retention('pg_class', '1 day');
\echo :SQLSTATE
SELECT inbox.purge('window_inbox', 0);
\echo :SQLSTATE
SELECT inbox.purge('window_inbox', NULL);
\echo :SQLSTATE
SELECT inbox.purge(NULL);
\echo :SQLSTATE
SELECT inbox.purge('pg_class');
\echo :SQLSTATE
SELECT inbox.create_inbox('bad_window', retention => '0 seconds');
\echo :SQLSTATE

-- Purging and changing the window are for administrators: not granted to PUBLIC,
-- and with EXECUTE granted, the table's own rights still apply.
CREATE ROLE regress_inbox_consumer;
GRANT SELECT, INSERT, UPDATE ON window_inbox TO regress_inbox_consumer;
SET ROLE regress_inbox_consumer;
SELECT inbox.claim('window_inbox', 'consumer-1');
SELECT inbox.purge('window_inbox');
\echo :SQLSTATE
SELECT inbox.set_retention('window_inbox', '1 day');
\echo :SQLSTATE
RESET ROLE;
GRANT EXECUTE ON FUNCTION inbox.purge(regclass, int) TO regress_inbox_consumer;
GRANT EXECUTE ON FUNCTION inbox.set_retention(regclass, interval) TO regress_inbox_consumer;
SET ROLE regress_inbox_consumer;
SELECT inbox.purge('window_inbox');
\echo :SQLSTATE
SELECT inbox.set_retention('window_inbox', '1 day');
\echo :SQLSTATE
RESET ROLE;
REVOKE EXECUTE ON FUNCTION inbox.purge(regclass, int) FROM regress_inbox_consumer;
REVOKE EXECUTE ON FUNCTION inbox.set_retention(regclass, interval) FROM regress_inbox_consumer;
DROP OWNED BY regress_inbox_consumer;
DROP ROLE regress_inbox_consumer;

-- inbox.stats: live counters are NULL unless the library is preloaded (these tests
-- run without it); the oldest claim is always there.
SELECT inbox, claims, duplicates, purged, oldest_claim < now() - interval '1 hour' AS has_old_claims
  FROM inbox.stats ORDER BY inbox::text;
SELECT * FROM inbox.live_counters('window_inbox');

SELECT inbox.drop_inbox('window_inbox');
SELECT inbox.drop_inbox('forever_inbox');
