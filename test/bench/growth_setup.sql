-- The growth section's inbox, one key type at a time (psql -v type=bigint|uuid|text):
-- created with a retention so that it has the claimed_at index purge reads, a window
-- of 1000 years (the longest allowed) so that nothing expires until the section moves
-- the window, and autovacuum off so that no vacuum lands in a timed run: the section
-- vacuums between its steps.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS growth_inbox;
SELECT inbox.create_inbox('growth_inbox', :'type', '1000 years');
ALTER TABLE growth_inbox SET (autovacuum_enabled = off);
