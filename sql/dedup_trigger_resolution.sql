-- dedup_trigger finds its inbox relative to the trigger, never by the inserter's
-- search_path (issue 9, item 10): a decoy inbox earlier on a session's path must
-- not receive the claims, nor let rows through that were seen.
\set SHOW_CONTEXT never
CREATE SCHEMA dedup_app;
CREATE SCHEMA dedup_decoy;
SELECT inbox.create_inbox('dedup_app.seen');
SELECT inbox.create_inbox('dedup_decoy.seen');
CREATE TABLE dedup_app.events (id text, note text);
-- Unqualified: the inbox of that name in the table's own schema.
CREATE TRIGGER dedup BEFORE INSERT ON dedup_app.events
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('seen', 'id');
INSERT INTO dedup_app.events VALUES ('a', 'first');

-- A session that puts the decoy first on its path, and has seen 'b' in it.
INSERT INTO dedup_decoy.seen (message_id) VALUES ('b');
SET search_path = dedup_decoy, dedup_app, public;
INSERT INTO dedup_app.events VALUES ('a', 'again'), ('b', 'fresh');
INSERT INTO events VALUES ('c', 'fresh, unqualified table');
RESET search_path;
SELECT id, note FROM dedup_app.events ORDER BY id, note;
SELECT message_id FROM dedup_app.seen ORDER BY 1;
SELECT message_id FROM dedup_decoy.seen ORDER BY 1;

-- A trigger on a partitioned table is cloned onto its partitions, which may live in
-- another schema: the name is still resolved where the trigger was created.
CREATE TABLE dedup_app.parted (id text, part int) PARTITION BY LIST (part);
CREATE TABLE dedup_decoy.parted_1 PARTITION OF dedup_app.parted FOR VALUES IN (1);
CREATE TRIGGER dedup BEFORE INSERT ON dedup_app.parted
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('seen', 'id');
INSERT INTO dedup_app.parted VALUES ('p1', 1), ('a', 1), ('p1', 1);
SELECT id FROM dedup_app.parted ORDER BY id;
SELECT count(*) AS decoy_claims FROM dedup_decoy.seen WHERE message_id = 'p1';

-- A qualified name is followed as written, whatever the path.
CREATE TABLE dedup_app.orders (id text);
CREATE TRIGGER dedup BEFORE INSERT ON dedup_app.orders
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('dedup_decoy.seen', 'id');
SET search_path = dedup_app, public;
INSERT INTO dedup_app.orders VALUES ('b'), ('d');
RESET search_path;
SELECT id FROM dedup_app.orders;

-- An unqualified name not in the table's schema is an error even when the
-- inserter's path would find one: 42P01, with a hint to qualify it.
SELECT inbox.create_inbox('dedup_elsewhere');
CREATE TABLE dedup_app.misnamed (id text);
CREATE TRIGGER dedup BEFORE INSERT ON dedup_app.misnamed
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('dedup_elsewhere', 'id');
INSERT INTO dedup_app.misnamed VALUES ('x');
\echo :SQLSTATE

-- The name is resolved at each statement: a replaced inbox is found again.
SELECT inbox.drop_inbox('dedup_app.seen');
SELECT inbox.create_inbox('dedup_app.seen');
INSERT INTO dedup_app.events VALUES ('a', 'after the inbox was replaced');
SELECT message_id FROM dedup_app.seen ORDER BY 1;
ALTER TABLE dedup_app.seen RENAME TO seen_renamed;
INSERT INTO dedup_app.events VALUES ('e', 'inbox renamed away');
\echo :SQLSTATE

-- Rights are checked before the inbox is locked: 42501.
CREATE ROLE regress_dedup_loader;
GRANT USAGE ON SCHEMA dedup_app, dedup_decoy TO regress_dedup_loader;
GRANT INSERT ON dedup_app.orders TO regress_dedup_loader;
SET ROLE regress_dedup_loader;
INSERT INTO dedup_app.orders VALUES ('f');
\echo :SQLSTATE
RESET ROLE;

-- Nor does a session remember the inbox across statements when the name comes
-- to mean another: a schema renamed, or the trigger's table moved to another
-- schema.  Every row of a statement, on every partition, goes to the inbox the
-- name means now, as it does for a new session.
CREATE SCHEMA dedup_q;
SELECT inbox.create_inbox('dedup_q.qib');
CREATE TABLE dedup_app.qsink (id text);
CREATE TRIGGER dedup BEFORE INSERT ON dedup_app.qsink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('dedup_q.qib', 'id');
INSERT INTO dedup_app.qsink VALUES ('x1');
ALTER SCHEMA dedup_q RENAME TO dedup_q_old;
CREATE SCHEMA dedup_q;
SELECT inbox.create_inbox('dedup_q.qib');
INSERT INTO dedup_app.qsink VALUES ('x1'), ('x2');
SELECT 'old' AS inbox, message_id FROM dedup_q_old.qib
UNION ALL SELECT 'new', message_id FROM dedup_q.qib ORDER BY 1, 2;

CREATE SCHEMA dedup_s1;
CREATE SCHEMA dedup_s2;
CREATE SCHEMA dedup_s3;
SELECT inbox.create_inbox('dedup_s1.pib');
SELECT inbox.create_inbox('dedup_s3.pib');
CREATE TABLE dedup_s1.psink (id text, region int) PARTITION BY LIST (region);
CREATE TABLE dedup_s1.p1 PARTITION OF dedup_s1.psink FOR VALUES IN (1);
CREATE TABLE dedup_s2.p2 PARTITION OF dedup_s1.psink FOR VALUES IN (2);
CREATE TRIGGER dedup BEFORE INSERT ON dedup_s1.psink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('pib', 'id');
INSERT INTO dedup_s1.psink VALUES ('mv1', 1);
ALTER TABLE dedup_s1.psink SET SCHEMA dedup_s3;
INSERT INTO dedup_s3.psink VALUES ('mv2', 1), ('mv3', 2);
SELECT 's1' AS inbox, message_id FROM dedup_s1.pib
UNION ALL SELECT 's3', message_id FROM dedup_s3.pib ORDER BY 1, 2;

-- A char(n) id is claimed as its cast to text gives it, without the padding:
-- the same id from a text column or from claim() is a duplicate.
SELECT inbox.create_inbox('dedup_app.padded');
CREATE TABLE dedup_app.chsink (id char(8));
CREATE TRIGGER dedup BEFORE INSERT ON dedup_app.chsink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('padded', 'id');
CREATE TABLE dedup_app.wide (id char(2000));
CREATE TRIGGER dedup BEFORE INSERT ON dedup_app.wide
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('padded', 'id');
INSERT INTO dedup_app.chsink VALUES ('m1');
SELECT message_id, octet_length(message_id) FROM dedup_app.padded;
SELECT inbox.claim('dedup_app.padded', 'm1') AS claimed_again;
SELECT inbox.claim('dedup_app.padded', 'm2') AS claimed;
INSERT INTO dedup_app.chsink VALUES ('m2');
INSERT INTO dedup_app.wide VALUES ('m1'), ('w1');
SELECT message_id FROM dedup_app.padded ORDER BY 1;

SET client_min_messages = warning;
DROP SCHEMA dedup_q, dedup_q_old, dedup_s1, dedup_s2, dedup_s3 CASCADE;
DROP SCHEMA dedup_app, dedup_decoy CASCADE;
RESET client_min_messages;
DROP ROLE regress_dedup_loader;
SELECT inbox.drop_inbox('dedup_elsewhere');
