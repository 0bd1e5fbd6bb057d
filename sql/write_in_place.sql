-- upsert and transition change a stored row in place, with no statement, where
-- the table is one an UPDATE would do nothing more for (direct_access.c).  Whatever
-- a user adds that an UPDATE must honour still applies, with the statement's own
-- error, and the row is left as it was.
\set SHOW_CONTEXT never

CREATE TABLE wip (id int PRIMARY KEY, status text NOT NULL, amount int CHECK (amount >= 0),
                  note text, ref text UNIQUE);
INSERT INTO wip VALUES (1, 'NEW', 10, 'one', 'r1'), (2, 'NEW', 20, 'two', 'r2');
-- Lookups of wip (index and sequential scans) so far in this transaction: a change
-- in place is the one index read; the SQL path reads the row again in its UPDATE.
CREATE FUNCTION wip_lookups() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0)::bigint
      FROM pg_stat_xact_user_tables WHERE relname = 'wip'
$$;

-- A changed row: one lookup, every column as given, the row's old version dead.
BEGIN;
SELECT wip_lookups() AS before \gset
SELECT inbox.upsert_row(ROW(1, 'PAID', 11, 'one', 'r1')::wip) AS updated;
SELECT wip_lookups() - :before AS lookups;
SELECT inbox.upsert_row(ROW(1, 'PAID', 11, 'one', 'r1')::wip) AS replay;
SELECT * FROM wip WHERE id = 1;
COMMIT;
-- A partial row keeps the columns it leaves out.
SELECT inbox.upsert('wip', '{"id": 2, "amount": 21}') AS partial;
SELECT * FROM wip WHERE id = 2;
-- Seen at once by the same transaction, and undone by its rollback.
BEGIN;
SELECT inbox.upsert('wip', '{"id": 2, "amount": 22}') AS first,
       inbox.upsert('wip', '{"id": 2, "amount": 23}') AS second,
       inbox.upsert('wip', '{"id": 2, "amount": 23}') AS third;
SELECT amount FROM wip WHERE id = 2;
ROLLBACK;
SELECT amount FROM wip WHERE id = 2;
-- A column stored out of line is carried over untouched when another changes.
UPDATE wip SET note = (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 4000) g)
 WHERE id = 1;
SELECT md5(note) AS note_md5 FROM wip WHERE id = 1 \gset
SELECT inbox.upsert('wip', '{"id": 1, "status": "SHIPPED"}') AS toasted_kept;
SELECT md5(note) = :'note_md5' AS note_intact, length(note) FROM wip WHERE id = 1;
UPDATE wip SET note = 'one' WHERE id = 1;

-- Constraints are the statement's, and the row stays as it was.
\set VERBOSITY default
SELECT inbox.upsert('wip', '{"id": 1, "status": null}');
SELECT inbox.upsert('wip', '{"id": 1, "amount": -1}');
SELECT inbox.upsert('wip', '{"id": 1, "ref": "r2"}');
SELECT inbox.transition_key('wip', 1, 'ref', ARRAY['r1'], 'r2');
SELECT id, status, amount, ref FROM wip ORDER BY id;
-- A new row is inserted without the statement too, with the same constraints and
-- errors; two lookups: the read that found no row, and the statement's own look
-- in the key before it inserts, which the other unique index (ref) needs.
BEGIN;
SELECT wip_lookups() AS before \gset
SELECT inbox.upsert_row(ROW(3, 'NEW', 30, 'three', 'r3')::wip) AS inserted;
SELECT wip_lookups() - :before AS lookups;
COMMIT;
SELECT inbox.upsert_row(ROW(4, NULL, 40, 'four', 'r4')::wip);
SELECT inbox.upsert_row(ROW(4, 'NEW', -40, 'four', 'r4')::wip);
SELECT inbox.upsert_row(ROW(4, 'NEW', 40, 'four', 'r3')::wip);
-- Columns left out must be ones the statement would leave NULL: a default is the
-- statement's to fill.
ALTER TABLE wip ADD COLUMN source text DEFAULT 'api';
SELECT inbox.upsert('wip', '{"id": 5, "status": "NEW"}') AS with_default;
SELECT id, status, source FROM wip WHERE id = 5;
ALTER TABLE wip DROP COLUMN source;
SELECT id, status, amount, ref FROM wip ORDER BY id;
-- A CHECK calling the user's own function is not evaluated in place: the statement
-- runs it, with the caller's rights.
CREATE FUNCTION wip_round(a int) RETURNS bool LANGUAGE sql IMMUTABLE AS $$ SELECT a % 5 = 0 $$;
ALTER TABLE wip ADD CONSTRAINT round_amounts CHECK (wip_round(amount)) NOT VALID;
BEGIN;
SELECT wip_lookups() AS before \gset
SELECT inbox.upsert('wip', '{"id": 1, "amount": 15}') AS round;
SELECT wip_lookups() - :before AS lookups_through_sql;
SELECT inbox.upsert('wip', '{"id": 1, "amount": 16}');
ROLLBACK;
ALTER TABLE wip DROP CONSTRAINT round_amounts;

-- An exclusion constraint is checked as the statement checks it.
CREATE TABLE wip_booking (id int PRIMARY KEY, room int NOT NULL, during int4range NOT NULL,
                          EXCLUDE USING gist (during WITH &&));
INSERT INTO wip_booking VALUES (1, 7, '[1,5)'), (2, 7, '[10,15)');
SELECT inbox.upsert('wip_booking', '{"id": 2, "during": "[4,12)"}');
SELECT inbox.upsert('wip_booking', '{"id": 2, "during": "[5,12)"}') AS adjacent;
SELECT inbox.upsert('wip_booking', '{"id": 3, "room": 7, "during": "[10,20)"}');
SELECT inbox.upsert('wip_booking', '{"id": 3, "room": 7, "during": "[15,20)"}') AS inserted;
SELECT * FROM wip_booking ORDER BY id;

-- A trigger, a rule, row security or a generated column send the change through
-- the statement, which fires and applies them.
CREATE FUNCTION wip_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'update of % seen by a trigger', NEW.id;
    RETURN NEW;
END $$;
CREATE TRIGGER wip_note BEFORE UPDATE ON wip FOR EACH ROW EXECUTE FUNCTION wip_note();
SELECT inbox.upsert('wip', '{"id": 1, "amount": 12}') AS with_trigger,
       inbox.transition_key('wip', 1, 'status', ARRAY['SHIPPED'], 'DONE') AS moved_with_trigger;
DROP TRIGGER wip_note ON wip;
CREATE TABLE wip_gen (id int PRIMARY KEY, price int, doubled int GENERATED ALWAYS AS (price * 2) STORED);
INSERT INTO wip_gen (id, price) VALUES (1, 5);
SELECT inbox.upsert('wip_gen', '{"id": 1, "price": 6}') AS generated;
SELECT * FROM wip_gen;

-- A published table without the replica identity its publication needs refuses
-- the update, as the statement does; with one it goes through.
CREATE TABLE wip_pub (code text NOT NULL UNIQUE, val int);
INSERT INTO wip_pub VALUES ('a', 1);
SET client_min_messages = error;  -- whatever wal_level is, and however a version words it
CREATE PUBLICATION wip_pub FOR TABLE wip_pub;
RESET client_min_messages;
SELECT inbox.upsert('wip_pub', '{"code": "a", "val": 2}', key => '{code}');
ALTER TABLE wip_pub REPLICA IDENTITY USING INDEX wip_pub_code_key;
SELECT inbox.upsert('wip_pub', '{"code": "a", "val": 2}', key => '{code}') AS published;
DROP PUBLICATION wip_pub;

-- A BRIN index over a changed column (a HOT update that must still summarize the
-- new value on PostgreSQL 16 and later) finds the row, and the row is indexed
-- exactly as an UPDATE leaves it: as many primary key entries as the statement's.
CREATE TABLE wip_brin (id int PRIMARY KEY, at int);
CREATE TABLE wip_brin_sql (LIKE wip_brin INCLUDING ALL);
CREATE INDEX ON wip_brin USING brin (at);
CREATE INDEX ON wip_brin_sql USING brin (at);
INSERT INTO wip_brin SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO wip_brin_sql SELECT * FROM wip_brin;
SELECT inbox.upsert('wip_brin', '{"id": 50, "at": 5000}') AS brin;
UPDATE wip_brin_sql SET at = 5000 WHERE id = 50;
SET enable_seqscan = off;
SELECT id FROM wip_brin WHERE at = 5000;
RESET enable_seqscan;
CREATE EXTENSION pageinspect;
SELECT (SELECT live_items FROM bt_page_stats('wip_brin_pkey', 1)) =
       (SELECT live_items FROM bt_page_stats('wip_brin_sql_pkey', 1)) AS entries_as_statement;
DROP EXTENSION pageinspect;

-- transition_key moves in place too: one lookup, and the same answers.
CREATE TABLE wip_orders (id int PRIMARY KEY, state text NOT NULL CHECK (state <> 'LOST'));
INSERT INTO wip_orders VALUES (1, 'PENDING'), (2, 'PENDING');
CREATE FUNCTION wip_order_lookups() RETURNS bigint LANGUAGE sql AS $$
    SELECT coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0)::bigint
      FROM pg_stat_xact_user_tables WHERE relname = 'wip_orders'
$$;
BEGIN;
SELECT wip_order_lookups() AS before \gset
SELECT inbox.transition_key('wip_orders', 1, 'state', ARRAY['PENDING'], 'PAID') AS moved;
SELECT wip_order_lookups() - :before AS lookups;
SELECT inbox.transition_key('wip_orders', 1, 'state', ARRAY['PENDING'], 'PAID') AS already;
COMMIT;
SELECT inbox.transition_key('wip_orders', 2, 'state', ARRAY['PENDING'], 'LOST');
SELECT * FROM wip_orders ORDER BY id;

-- Code that runs between the read and the write may change the row itself: here
-- the comparison of a version column's range type, through an operator class
-- whose support function is PL/pgSQL.  The statement then answers, as UPDATE
-- would, never an internal error.
CREATE FUNCTION wip_meddling_cmp(a int, b int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    IF a = 1 AND b = 2 AND current_setting('wip.meddle', true) = 'on' THEN
        PERFORM set_config('wip.meddle', 'off', true);
        UPDATE wip_meddle SET val = 'meddled' WHERE id = 1;
    END IF;
    RETURN CASE WHEN a < b THEN -1 WHEN a > b THEN 1 ELSE 0 END;
END $$;
CREATE OPERATOR CLASS wip_meddling_ops FOR TYPE int4 USING btree AS
    OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
    FUNCTION 1 wip_meddling_cmp(int, int);
CREATE TYPE wip_vrange AS RANGE (subtype = int4, subtype_opclass = wip_meddling_ops);
CREATE TABLE wip_meddle (id int PRIMARY KEY, val text, v wip_vrange);
INSERT INTO wip_meddle VALUES (1, 'start', '[1,2)');
BEGIN;
SET LOCAL wip.meddle = on;
SELECT inbox.upsert('wip_meddle', '{"id": 1, "val": "new", "v": "[2,3)"}', version_column => 'v');
SELECT current_setting('wip.meddle') AS meddled_off, * FROM wip_meddle;
COMMIT;
DROP TABLE wip_meddle;
DROP TYPE wip_vrange;
DROP OPERATOR CLASS wip_meddling_ops USING btree;
DROP OPERATOR FAMILY wip_meddling_ops USING btree;
DROP FUNCTION wip_meddling_cmp(int, int);

DROP TABLE wip, wip_booking, wip_gen, wip_pub, wip_brin, wip_brin_sql, wip_orders;
DROP FUNCTION wip_lookups(), wip_order_lookups(), wip_round(int), wip_note();
