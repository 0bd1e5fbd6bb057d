-- dedup_trigger on a sharded inbox: rows claim (shard key, id), the shard key
-- read from the column named as the inbox's, or from the column named third.
\set VERBOSITY default
SELECT inbox.create_sharded_inbox('ds_inbox', 'account_id', 'bigint');

CREATE TABLE ds_events (account_id bigint, id text, note text);
CREATE TRIGGER ds_dedup BEFORE INSERT ON ds_events
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'id');
INSERT INTO ds_events VALUES (1, 'e1', 'first');
-- The same id under the same shard key is a duplicate, dropped silently;
-- under another shard key it is another message.
INSERT INTO ds_events VALUES (1, 'e1', 'again'), (2, 'e1', 'other account'), (2, 'e1', 'twice in one insert');
COPY ds_events FROM stdin;
1	e1	copied duplicate
3	e1	copied fresh
3	e2	copied fresh
\.
SELECT account_id, id, note FROM ds_events ORDER BY account_id, id;
SELECT account_id, message_id FROM ds_inbox ORDER BY account_id, message_id;
-- The claims commit or roll back with the rows.
BEGIN;
INSERT INTO ds_events VALUES (4, 'e9', 'rolled back');
ROLLBACK;
INSERT INTO ds_events VALUES (4, 'e9', 'after the rollback');
SELECT count(*) AS claims_of_4 FROM ds_inbox WHERE account_id = 4;

-- The shard key column named third, here of another type: an integer widens,
-- a text is read as a literal of the shard key's type.
CREATE TABLE ds_other (acct integer, acct_text text, event_id text);
CREATE TRIGGER ds_other_dedup BEFORE INSERT ON ds_other
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'event_id', 'acct');
INSERT INTO ds_other VALUES (1, NULL, 'e1'), (1, NULL, 'o1');
SELECT acct, event_id FROM ds_other;
DROP TRIGGER ds_other_dedup ON ds_other;
CREATE TRIGGER ds_other_dedup BEFORE INSERT ON ds_other
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'event_id', 'acct_text');
INSERT INTO ds_other VALUES (NULL, '1', 'o1'), (NULL, '1', 'o2');
SELECT acct_text, event_id FROM ds_other WHERE acct IS NULL;
INSERT INTO ds_other VALUES (NULL, 'one', 'o3');
\echo :SQLSTATE
INSERT INTO ds_other VALUES (NULL, NULL, 'o3');
\echo :SQLSTATE

-- A value that would be claimed as another shard key is refused, not rounded.
CREATE TABLE ds_numeric (acct numeric, id text);
CREATE TRIGGER ds_numeric_dedup BEFORE INSERT ON ds_numeric
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'id', 'acct');
INSERT INTO ds_numeric VALUES (7, 'n1');
INSERT INTO ds_numeric VALUES (7.5, 'n2');
\echo :SQLSTATE
SELECT acct, id FROM ds_numeric;

-- Mistakes are found at the first row, and no row passes unclaimed.
CREATE TABLE ds_bad (account_id boolean, acct bigint, id text);
CREATE TRIGGER ds_bad_dedup BEFORE INSERT ON ds_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'id');
INSERT INTO ds_bad VALUES (true, 1, 'b1');
\echo :SQLSTATE
DROP TRIGGER ds_bad_dedup ON ds_bad;
CREATE TRIGGER ds_bad_dedup BEFORE INSERT ON ds_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'id', 'nope');
INSERT INTO ds_bad VALUES (true, 1, 'b1');
\echo :SQLSTATE
DROP TRIGGER ds_bad_dedup ON ds_bad;
CREATE TRIGGER ds_bad_dedup BEFORE INSERT ON ds_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'id', 'acct', 'extra');
INSERT INTO ds_bad VALUES (true, 1, 'b1');
\echo :SQLSTATE
DROP TRIGGER ds_bad_dedup ON ds_bad;
CREATE TABLE ds_unsharded (acct bigint, id text);
SELECT inbox.create_inbox('ds_plain');
CREATE TRIGGER ds_plain_dedup BEFORE INSERT ON ds_unsharded
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_plain', 'id', 'acct');
INSERT INTO ds_unsharded VALUES (1, 'p1');
\echo :SQLSTATE
-- A table without the inbox's shard key column needs it named.
CREATE TRIGGER ds_missing_dedup BEFORE INSERT ON ds_unsharded
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'id');
DROP TRIGGER ds_plain_dedup ON ds_unsharded;
INSERT INTO ds_unsharded VALUES (1, 'p1');
\echo :SQLSTATE
SELECT count(*) AS unclaimed_rows FROM ds_bad, ds_unsharded;

-- An expired claim is absent: its row is let through and the claim renewed.
SELECT inbox.set_retention('ds_inbox', '1 day');
UPDATE ds_inbox SET claimed_at = now() - interval '2 days' WHERE account_id = 1 AND message_id = 'e1';
INSERT INTO ds_events VALUES (1, 'e1', 'after expiry'), (1, 'e1', 'duplicate again');
SELECT note FROM ds_events WHERE account_id = 1 AND id = 'e1' ORDER BY note;

-- A partitioned table: the trigger is cloned onto each partition.
CREATE TABLE ds_parted (account_id bigint, id text) PARTITION BY RANGE (account_id);
CREATE TABLE ds_parted_low PARTITION OF ds_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE ds_parted_high PARTITION OF ds_parted FOR VALUES FROM (100) TO (MAXVALUE);
CREATE TRIGGER ds_parted_dedup BEFORE INSERT ON ds_parted
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('ds_inbox', 'id');
INSERT INTO ds_parted VALUES (50, 'p1'), (150, 'p1'), (150, 'p1');
INSERT INTO ds_parted VALUES (50, 'p1');
SELECT tableoid::regclass, account_id, id FROM ds_parted ORDER BY account_id;

DROP TABLE ds_events, ds_other, ds_numeric, ds_bad, ds_unsharded, ds_parted, ds_inbox, ds_plain;
