-- dedup_trigger keeps its inbox open across the rows of one statement
-- (held_inbox.c).  However the statement ends, what it held is let go exactly
-- once: a leaked or twice-released reference would show here as a WARNING or an
-- ERROR, and the rows and claims as wrong counts.
\set SHOW_CONTEXT never
SELECT inbox.create_inbox('held_seen');
CREATE TABLE held_sink (id text, note text);
CREATE TRIGGER dedup BEFORE INSERT ON held_sink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('held_seen', 'id');
CREATE FUNCTION held_counts(OUT sink bigint, OUT claims bigint) LANGUAGE sql AS $$
    SELECT (SELECT count(*) FROM held_sink), (SELECT count(*) FROM held_seen)
$$;

-- Many rows, repeats among them: each id once.
INSERT INTO held_sink SELECT 'm' || (g % 50), 'many' FROM generate_series(1, 200) g;
SELECT * FROM held_counts();
-- A COPY, in a transaction with other statements.
BEGIN;
COPY held_sink FROM stdin;
c1	copied
c2	copied
c1	copied again
\.
INSERT INTO held_sink VALUES ('c2', 'seen'), ('c3', 'fresh');
COMMIT;
SELECT * FROM held_counts();

-- A row failing after others were claimed ends the statement with an error: its
-- claims go, and the next statement claims them again.
INSERT INTO held_sink VALUES ('e1', 'before'), ('e2', 'before'), (NULL, 'bad');
\echo :SQLSTATE
INSERT INTO held_sink VALUES ('e1', 'after'), ('e2', 'after');
SELECT * FROM held_counts();
-- The same inside a transaction block, undone to a savepoint.
BEGIN;
INSERT INTO held_sink VALUES ('s1', 'kept');
SAVEPOINT before_bad;
INSERT INTO held_sink VALUES ('s2', 'undone'), (NULL, 'bad');
ROLLBACK TO before_bad;
INSERT INTO held_sink VALUES ('s2', 'after'), ('s1', 'repeat');
RELEASE before_bad;
COMMIT;
SELECT id, note FROM held_sink WHERE id LIKE 's%' ORDER BY id;
-- Statements run by PL/pgSQL, each in a subtransaction that fails or commits.
DO $$
BEGIN
    FOR i IN 1..5 LOOP
        BEGIN
            INSERT INTO held_sink VALUES ('p' || i, 'loop'), (CASE WHEN i % 2 = 0 THEN NULL ELSE 'p' || i END, 'loop');
        EXCEPTION WHEN null_value_not_allowed THEN
            RAISE NOTICE 'row % rolled back', i;
        END;
    END LOOP;
END $$;
SELECT id, note FROM held_sink WHERE id LIKE 'p%' ORDER BY id;

-- A statement whose own trigger changes the inbox as it goes (a_watch fires
-- before dedup): a trigger added to the inbox after the first row fires for the
-- later rows.
CREATE FUNCTION held_note_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE NOTICE 'claim of % seen by a trigger on the inbox', NEW.message_id;
    RETURN NEW;
END $$;
CREATE FUNCTION held_watch_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 'w2' THEN
        CREATE TRIGGER note BEFORE INSERT ON held_seen FOR EACH ROW EXECUTE FUNCTION held_note_claim();
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER a_watch BEFORE INSERT ON held_sink FOR EACH ROW EXECUTE FUNCTION held_watch_inbox();
INSERT INTO held_sink VALUES ('w1', 'first'), ('w2', 'second'), ('w3', 'third');
DROP TRIGGER note ON held_seen;
-- The inbox is not held open between rows: dropped in the middle of the
-- statement that claims into it, the next row's claim fails (42P01), as the next
-- INSERT of a hand-written trigger would.
CREATE OR REPLACE FUNCTION held_watch_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 'd2' THEN
        DROP TABLE held_seen;
    END IF;
    RETURN NEW;
END $$;
INSERT INTO held_sink VALUES ('d1', 'first'), ('d2', 'second');
\echo :SQLSTATE
DROP TRIGGER a_watch ON held_sink;
SELECT * FROM held_counts();

-- An index added to the inbox between two rows of a statement gets the claims
-- of the rows after it (the kept state is built again).
CREATE OR REPLACE FUNCTION held_watch_inbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id = 'i2' THEN
        CREATE INDEX held_seen_suffix ON held_seen ((message_id || '!'));
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER a_watch BEFORE INSERT ON held_sink FOR EACH ROW EXECUTE FUNCTION held_watch_inbox();
INSERT INTO held_sink VALUES ('i1', 'first'), ('i2', 'second'), ('i3', 'third');
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT message_id FROM held_seen WHERE message_id || '!' = 'i2!';
SELECT message_id FROM held_seen WHERE message_id || '!' = 'i1!'
UNION ALL SELECT message_id FROM held_seen WHERE message_id || '!' = 'i2!'
UNION ALL SELECT message_id FROM held_seen WHERE message_id || '!' = 'i3!';
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX held_seen_suffix;
DROP TRIGGER a_watch ON held_sink;

-- The statement's AFTER triggers may change the inbox: its rows are in, and
-- nothing holds the inbox open any more.
CREATE FUNCTION held_after_ddl() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ALTER TABLE held_seen ADD COLUMN note text;
    CREATE INDEX held_seen_note ON held_seen (note);
    TRUNCATE held_seen;
    DROP INDEX held_seen_note;
    ALTER TABLE held_seen DROP COLUMN note;
    RETURN NULL;
END $$;
CREATE TRIGGER z_after AFTER INSERT ON held_sink
    FOR EACH STATEMENT EXECUTE FUNCTION held_after_ddl();
INSERT INTO held_sink VALUES ('a1', 'first'), ('a2', 'second');
COPY held_sink FROM STDIN;
a3	third
\.
SELECT count(*) AS claims_left FROM held_seen;
DROP TRIGGER z_after ON held_sink;

-- Two triggers on one table, each with its own inbox, and a row dropped by the first.
SELECT inbox.create_inbox('held_other');
CREATE TRIGGER dedup_2 BEFORE INSERT ON held_sink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('held_other', 'note');
INSERT INTO held_sink VALUES ('t1', 'n1'), ('t2', 'n1'), ('t1', 'n2'), ('t3', 'n3');
SELECT id, note FROM held_sink WHERE id LIKE 't%' ORDER BY id;
SELECT message_id FROM held_other ORDER BY 1;

DROP TABLE held_sink, held_seen, held_other;
DROP FUNCTION held_counts(), held_note_claim(), held_watch_inbox(), held_after_ddl();
