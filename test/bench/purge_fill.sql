-- Claims past purge_inbox's one-hour retention, :rows of them (psql -v), for purge to
-- delete.  Created on first use; autovacuum stays off on it so that a vacuum of the
-- rows purge deletes does not land in a measured window: run vacuums between runs.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SELECT inbox.create_inbox('purge_inbox', 'text', '1 hour')
 WHERE to_regclass('purge_inbox') IS NULL;
ALTER TABLE purge_inbox SET (autovacuum_enabled = off);
TRUNCATE purge_inbox;
INSERT INTO purge_inbox (message_id, claimed_at)
SELECT 'old' || g, now() - interval '2 hours' - g * interval '10 ms'
  FROM generate_series(1, :rows) g;
VACUUM (FREEZE, ANALYZE) purge_inbox;
CHECKPOINT;
