-- Streams: a transactional offset per (inbox, topic, partition), and a dedup trigger
-- for sinks that only INSERT.
SELECT inbox.create_inbox('stream_inbox');

-- advance: true and stored when past the stored offset, false when already applied.
SELECT inbox.position('stream_inbox', 'payments', 0) IS NULL AS never_seen;
SELECT inbox.advance('stream_inbox', 'payments', 0, 0);
SELECT inbox.advance('stream_inbox', 'payments', 0, 0);
SELECT inbox.advance('stream_inbox', 'payments', 0, 41);
SELECT inbox.advance('stream_inbox', 'payments', 0, 40);
SELECT inbox.advance('stream_inbox', 'payments', 0, 41);
SELECT inbox.advance('stream_inbox', 'payments', 0, 42);
SELECT inbox.position('stream_inbox', 'payments', 0);
-- Partitions and topics are independent.
SELECT inbox.advance('stream_inbox', 'payments', 1, 7);
SELECT inbox.advance('stream_inbox', 'refunds', 0, 3);
SELECT inbox.position('stream_inbox', 'payments', 1), inbox.position('stream_inbox', 'refunds', 0),
       inbox.position('stream_inbox', 'refunds', 1) IS NULL AS other_partition_unseen;
-- Transactional: a rollback leaves the position where it was, so the message is
-- applied again on redelivery.
BEGIN;
SELECT inbox.advance('stream_inbox', 'payments', 0, 43);
SELECT inbox.position('stream_inbox', 'payments', 0);
ROLLBACK;
SELECT inbox.position('stream_inbox', 'payments', 0);
SELECT inbox.advance('stream_inbox', 'payments', 0, 43);
-- A redelivery writes and locks nothing: it does not even take a transaction id
-- (so with synchronous_commit on its COMMIT waits for no flush).  A fresh offset
-- does.
BEGIN;
SELECT inbox.advance('stream_inbox', 'payments', 0, 40) AS applied,
       pg_current_xact_id_if_assigned() IS NULL AS wrote_nothing;
SELECT inbox.advance('stream_inbox', 'payments', 0, 43) AS applied,
       pg_current_xact_id_if_assigned() IS NULL AS wrote_nothing;
COMMIT;
BEGIN;
SELECT inbox.advance('stream_inbox', 'payments', 5, 1) AS applied,
       pg_current_xact_id_if_assigned() IS NULL AS wrote_nothing;
ROLLBACK;
-- The typical consumer step: effect and advance in one transaction.  advance is
-- called once, in a CTE, never in the UPDATE's WHERE clause: after waiting for a
-- concurrent update of the same account, READ COMMITTED re-evaluates the WHERE
-- clause, and a second call would answer "already applied" to its own offset.
CREATE TABLE stream_accounts (id text PRIMARY KEY, balance numeric NOT NULL);
INSERT INTO stream_accounts VALUES ('acct-1', 0);
CREATE FUNCTION apply_payment(p_offset bigint, p_amount numeric) RETURNS boolean
LANGUAGE sql AS $$
    WITH fresh AS (SELECT inbox.advance('stream_inbox', 'ledger', 0, p_offset) AS applied)
    UPDATE stream_accounts SET balance = balance + p_amount
      FROM fresh
     WHERE id = 'acct-1' AND fresh.applied
    RETURNING true
$$;
SELECT apply_payment(1, 50), apply_payment(2, 25), apply_payment(2, 25), apply_payment(1, 50);
SELECT balance FROM stream_accounts;
-- Storage is one row per partition, however many messages.
SELECT count(*) AS stored_rows FROM inbox.streams WHERE inbox = 'stream_inbox'::regclass;
SELECT count(*) FILTER (WHERE inbox.advance('stream_inbox', 'big', 0, i)) AS advanced
  FROM generate_series(1, 1000) i;
SELECT count(*) AS stored_rows FROM inbox.streams WHERE inbox = 'stream_inbox'::regclass;
SELECT inbox, topic, "partition", "offset" FROM inbox.streams ORDER BY 2, 3;
-- The largest offset a broker can hand out.
SELECT inbox.advance('stream_inbox', 'big', 0, 9223372036854775807);
SELECT inbox.advance('stream_inbox', 'big', 0, 9223372036854775807);

-- Bad input, each with its SQLSTATE; nothing stored.
SELECT inbox.advance('stream_inbox', 'payments', 0, -1);
\echo :SQLSTATE
SELECT inbox.advance('stream_inbox', 'payments', 0, NULL);
\echo :SQLSTATE
SELECT inbox.advance('stream_inbox', 'payments', -1, 1);
\echo :SQLSTATE
SELECT inbox.advance('stream_inbox', 'payments', NULL, 1);
\echo :SQLSTATE
SELECT inbox.advance('stream_inbox', NULL, 0, 1);
\echo :SQLSTATE
SELECT inbox.advance('stream_inbox', '', 0, 1);
\echo :SQLSTATE
SELECT inbox.advance('stream_inbox', repeat('t', 1025), 0, 1);
\echo :SQLSTATE
SELECT inbox.advance(NULL, 'payments', 0, 1);
\echo :SQLSTATE
SELECT inbox.advance('stream_accounts', 'payments', 0, 1);
\echo :SQLSTATE
SELECT inbox.position('stream_inbox', 'payments', -1);
\echo :SQLSTATE
SELECT inbox.position('stream_inbox', NULL, 0);
\echo :SQLSTATE
SELECT count(*) AS stored_rows FROM inbox.streams WHERE inbox = 'stream_inbox'::regclass;

-- Rights are the inbox's: INSERT to advance, SELECT to read.  Nobody writes the
-- positions table directly.
CREATE ROLE regress_stream_reader;
GRANT SELECT ON stream_inbox TO regress_stream_reader;
SET ROLE regress_stream_reader;
SELECT inbox.position('stream_inbox', 'payments', 0);
SELECT count(*) AS visible FROM inbox.streams;
SELECT inbox.advance('stream_inbox', 'payments', 0, 100);
\echo :SQLSTATE
INSERT INTO inbox.positions VALUES ('stream_inbox', 'x', 0, 1);
\echo :SQLSTATE
RESET ROLE;
REVOKE SELECT ON stream_inbox FROM regress_stream_reader;
SET ROLE regress_stream_reader;
SELECT inbox.position('stream_inbox', 'payments', 0);
\echo :SQLSTATE
SELECT count(*) AS visible FROM inbox.streams;
RESET ROLE;
DROP ROLE regress_stream_reader;

-- dedup_trigger: rows whose id was seen are dropped; fresh ones are claimed with them.
SELECT inbox.create_inbox('sink_inbox');
CREATE TABLE sink (id text NOT NULL, amount int);
CREATE TRIGGER sink_dedup BEFORE INSERT ON sink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox', 'id');
INSERT INTO sink VALUES ('a', 1);
INSERT INTO sink VALUES ('a', 1);
-- Multi-row: a repeat inside one statement is dropped too.
INSERT INTO sink VALUES ('b', 2), ('c', 3), ('b', 2), ('a', 1);
COPY sink FROM stdin;
c	3
d	4
d	4
e	5
\.
SELECT * FROM sink ORDER BY id;
SELECT message_id FROM sink_inbox ORDER BY 1;
-- A rolled-back load leaves no claims: its retry loads every row.
BEGIN;
INSERT INTO sink VALUES ('f', 6), ('g', 7);
ROLLBACK;
INSERT INTO sink VALUES ('f', 6), ('g', 7);
SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM sink;
-- A NULL id is an error, and the statement loads nothing.
INSERT INTO sink VALUES ('h', 8), (NULL, 9);
\echo :SQLSTATE
SELECT count(*) AS h_loaded FROM sink WHERE id = 'h';
ALTER TABLE sink ALTER COLUMN id DROP NOT NULL;
INSERT INTO sink VALUES (NULL, 9);
\echo :SQLSTATE
INSERT INTO sink VALUES ('', 9);
\echo :SQLSTATE
-- Other id column types: the inbox's key type, or text-like, or a smaller integer.
SELECT inbox.create_inbox('sink_inbox_bigint', 'bigint');
CREATE TABLE sink_int (id int, note text);
CREATE TRIGGER sink_dedup BEFORE INSERT ON sink_int
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox_bigint', 'id');
INSERT INTO sink_int VALUES (1, 'first'), (1, 'again'), (2, 'second');
SELECT * FROM sink_int ORDER BY id;
SELECT inbox.create_inbox('sink_inbox_uuid', 'uuid');
CREATE TABLE sink_varchar (id varchar(40));
CREATE TRIGGER sink_dedup BEFORE INSERT ON sink_varchar
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox_uuid', 'id');
INSERT INTO sink_varchar VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
                                ('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11');
SELECT count(*) AS same_uuid_once FROM sink_varchar;
INSERT INTO sink_varchar VALUES ('not-a-uuid');
\echo :SQLSTATE
-- A schema-qualified inbox name, resolved when the trigger fires.
CREATE SCHEMA sink_app;
SELECT inbox.create_inbox('sink_app.events', 'uuid');
CREATE TABLE sink_qualified (event_id uuid);
CREATE TRIGGER sink_dedup BEFORE INSERT ON sink_qualified
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_app.events', 'event_id');
INSERT INTO sink_qualified VALUES ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
SELECT count(*) AS loaded FROM sink_qualified;

-- Wrong arguments or firing: a clear error at the first row, nothing loaded.
CREATE TABLE sink_bad (id text, n int);
CREATE TRIGGER t_no_args BEFORE INSERT ON sink_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger();
INSERT INTO sink_bad VALUES ('x', 1);
\echo :SQLSTATE
DROP TRIGGER t_no_args ON sink_bad;
CREATE TRIGGER t_missing_column BEFORE INSERT ON sink_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox', 'nope');
INSERT INTO sink_bad VALUES ('x', 1);
\echo :SQLSTATE
DROP TRIGGER t_missing_column ON sink_bad;
CREATE TRIGGER t_missing_inbox BEFORE INSERT ON sink_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('no_such_inbox', 'id');
INSERT INTO sink_bad VALUES ('x', 1);
\echo :SQLSTATE
DROP TRIGGER t_missing_inbox ON sink_bad;
CREATE TRIGGER t_not_inbox BEFORE INSERT ON sink_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink', 'id');
INSERT INTO sink_bad VALUES ('x', 1);
\echo :SQLSTATE
DROP TRIGGER t_not_inbox ON sink_bad;
CREATE TRIGGER t_wrong_type BEFORE INSERT ON sink_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox_uuid', 'n');
INSERT INTO sink_bad VALUES ('x', 1);
\echo :SQLSTATE
DROP TRIGGER t_wrong_type ON sink_bad;
CREATE TRIGGER t_after AFTER INSERT ON sink_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox', 'id');
INSERT INTO sink_bad VALUES ('x', 1);
\echo :SQLSTATE
DROP TRIGGER t_after ON sink_bad;
CREATE TRIGGER t_update BEFORE UPDATE ON sink_bad
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_inbox', 'id');
INSERT INTO sink_bad VALUES ('x', 1);
UPDATE sink_bad SET n = 2;
\echo :SQLSTATE
DROP TRIGGER t_update ON sink_bad;
SELECT count(*) AS loaded_while_broken FROM sink_bad;

-- The inserting role needs the claim rights on the inbox.
CREATE ROLE regress_sink_writer;
GRANT INSERT, SELECT ON sink TO regress_sink_writer;
SET ROLE regress_sink_writer;
INSERT INTO sink VALUES ('z', 1);
\echo :SQLSTATE
RESET ROLE;
GRANT INSERT, SELECT ON sink_inbox TO regress_sink_writer;
SET ROLE regress_sink_writer;
INSERT INTO sink VALUES ('z', 1);
INSERT INTO sink VALUES ('z', 1);
RESET ROLE;
DROP OWNED BY regress_sink_writer;
DROP ROLE regress_sink_writer;

-- Dropping an inbox forgets its positions.
SELECT inbox.drop_inbox('stream_inbox');
SELECT count(*) AS positions_left FROM inbox.positions;
DROP TABLE sink, sink_int, sink_varchar, sink_qualified, sink_bad, stream_accounts;
DROP FUNCTION apply_payment(bigint, numeric);
SELECT inbox.drop_inbox('sink_inbox');
SELECT inbox.drop_inbox('sink_inbox_bigint');
SELECT inbox.drop_inbox('sink_inbox_uuid');
SELECT inbox.drop_inbox('sink_app.events');
DROP SCHEMA sink_app;
