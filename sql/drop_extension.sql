-- DROP EXTENSION never destroys claims: inbox tables are user data, not members.
\set SHOW_CONTEXT never

SELECT inbox.create_inbox('kept_inbox', 'bigint');
SELECT inbox.claim('kept_inbox', 1), inbox.claim('kept_inbox', 2);

DROP EXTENSION idempotent_inbox;
SELECT to_regclass('inbox.registry') IS NULL AS registry_gone;
SELECT message_id FROM kept_inbox ORDER BY 1;

-- Recreated, the extension starts with an empty registry; the old table is still
-- a plain table, refused until it is registered again by a new create_inbox.
CREATE EXTENSION idempotent_inbox;
SELECT inbox.claim('kept_inbox', 3);
\echo :SQLSTATE
SELECT count(*) AS inboxes FROM inbox.inboxes;
DROP TABLE kept_inbox;
