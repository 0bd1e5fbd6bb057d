-- The direct paths (reads, inserts and changes in place without a statement)
-- answer as the statements they replace.  Each case runs on a table the direct
-- paths take and on its twin with a no-op trigger, which sends every call to
-- SQL; the outcomes, the rows and the errors must be the same.
\set SHOW_CONTEXT never
\set VERBOSITY terse

CREATE FUNCTION par_noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END';
CREATE FUNCTION par_twin(t regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TRIGGER par_sql BEFORE INSERT OR UPDATE ON %s
                    FOR EACH ROW EXECUTE FUNCTION par_noop()', t);
END
$$;

-- A CHECK reading tableoid sees the table's own OID, as the executor sets it.
CREATE TABLE par_oid (id int PRIMARY KEY, kind text,
                      CHECK (tableoid <> 'par_oid'::regclass OR kind = 'x'));
CREATE TABLE par_oid_sql (id int PRIMARY KEY, kind text,
                          CHECK (tableoid <> 'par_oid_sql'::regclass OR kind = 'x'));
SELECT par_twin('par_oid_sql');
INSERT INTO par_oid VALUES (1, 'x');
INSERT INTO par_oid_sql VALUES (1, 'x');
SELECT inbox.upsert('par_oid', '{"id": 1, "kind": "y"}');
SELECT inbox.upsert('par_oid_sql', '{"id": 1, "kind": "y"}');
SELECT inbox.upsert('par_oid', '{"id": 2, "kind": "y"}');
SELECT inbox.upsert('par_oid_sql', '{"id": 2, "kind": "y"}');
SELECT inbox.transition_key('par_oid', 1, 'kind', ARRAY['x'], 'z');
SELECT inbox.transition_key('par_oid_sql', 1, 'kind', ARRAY['x'], 'z');
SELECT inbox.upsert('par_oid', '{"id": 3, "kind": "x"}') AS passes;
TABLE par_oid;
TABLE par_oid_sql;

-- A column dropped keeps nothing in the row versions written afterwards: its
-- out-of-line values go once the old versions are vacuumed away.
CREATE TABLE par_dropped (id int PRIMARY KEY, secret text, v int);
ALTER TABLE par_dropped ALTER secret SET STORAGE EXTERNAL;
INSERT INTO par_dropped SELECT g, repeat('secret', 2000), g FROM generate_series(1, 3) g;
ALTER TABLE par_dropped DROP COLUMN secret;
SELECT inbox.upsert('par_dropped', '{"id": 1, "v": 10}');
SELECT inbox.transition_key('par_dropped', 3, 'v', ARRAY['3'], '30');
UPDATE par_dropped SET v = 20 WHERE id = 2;
VACUUM par_dropped;
SELECT reltoastrelid::regclass AS toast FROM pg_class WHERE relname = 'par_dropped' \gset
SELECT count(*) AS toast_chunks_left FROM :toast;
TABLE par_dropped;

-- A unique index with its own collation: the row with a key is the one the
-- index finds, on every path.
CREATE COLLATION par_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE par_ci (email text NOT NULL, st text);
CREATE UNIQUE INDEX ON par_ci (email COLLATE par_ci);
CREATE TABLE par_ci_sql (LIKE par_ci INCLUDING INDEXES);
SELECT par_twin('par_ci_sql');
INSERT INTO par_ci VALUES ('Bob@X.org', 'NEW');
INSERT INTO par_ci_sql VALUES ('Bob@X.org', 'NEW');
SELECT inbox.transition('par_ci', '{"email": "bob@x.org"}', 'st', ARRAY['NEW'], 'PAID');
SELECT inbox.transition('par_ci_sql', '{"email": "bob@x.org"}', 'st', ARRAY['NEW'], 'PAID');
SELECT inbox.upsert('par_ci', '{"email": "BOB@x.org", "st": "SENT"}', ARRAY['email']);
SELECT inbox.upsert('par_ci_sql', '{"email": "BOB@x.org", "st": "SENT"}', ARRAY['email']);
SELECT inbox.upsert('par_ci', '{"email": "BOB@x.org", "st": "SENT"}', ARRAY['email']) AS replay;
SELECT inbox.upsert('par_ci_sql', '{"email": "BOB@x.org", "st": "SENT"}', ARRAY['email']) AS replay;
TABLE par_ci;
TABLE par_ci_sql;

-- A key equal to the stored one but of another image (1.00 for 1.0) names the
-- same row and is never written: a replay is unchanged, on every path.
CREATE TABLE par_num (id numeric PRIMARY KEY, v text);
CREATE TABLE par_num_sql (LIKE par_num INCLUDING INDEXES);
SELECT par_twin('par_num_sql');
INSERT INTO par_num VALUES (1.0, 'a');
INSERT INTO par_num_sql VALUES (1.0, 'a');
SELECT inbox.upsert('par_num', '{"id": 1.00, "v": "a"}') AS replay,
       inbox.upsert('par_num_sql', '{"id": 1.00, "v": "a"}') AS replay_sql;
SET idempotent_inbox.force_path = insert;
SELECT inbox.upsert('par_num', '{"id": 1.00, "v": "a"}') AS replay,
       inbox.upsert('par_num_sql', '{"id": 1.00, "v": "a"}') AS replay_sql;
SET idempotent_inbox.force_path = update;
SELECT inbox.upsert('par_num', '{"id": 1.00, "v": "a"}') AS replay,
       inbox.upsert('par_num_sql', '{"id": 1.00, "v": "a"}') AS replay_sql;
RESET idempotent_inbox.force_path;
SELECT inbox.upsert('par_num', '{"id": 1.00}') AS key_only,
       inbox.upsert('par_num_sql', '{"id": 1.00}') AS key_only_sql;
SELECT inbox.upsert('par_num', '{"id": 1.000, "v": "b"}') AS changed,
       inbox.upsert('par_num_sql', '{"id": 1.000, "v": "b"}') AS changed_sql;
SELECT * FROM par_num UNION ALL SELECT * FROM par_num_sql;

-- Two unique indexes on the key's columns: ON CONFLICT takes both as arbiters,
-- so a conflict in either is an update, not an error.
CREATE TABLE par_two (email text PRIMARY KEY, v int);
CREATE UNIQUE INDEX par_two_ci ON par_two (email COLLATE par_ci);
CREATE TABLE par_two_sql (LIKE par_two INCLUDING INDEXES);
SELECT par_twin('par_two_sql');
INSERT INTO par_two VALUES ('Bob@X.org', 1);
INSERT INTO par_two_sql VALUES ('Bob@X.org', 1);
SELECT inbox.upsert('par_two', '{"email": "bob@x.org", "v": 2}');
SELECT inbox.upsert('par_two_sql', '{"email": "bob@x.org", "v": 2}');
TABLE par_two;
TABLE par_two_sql;
-- The same for an inbox given a second unique index on message_id: a claim of
-- an id the twin index finds is a duplicate.
SELECT inbox.create_inbox('par_inbox');
CREATE UNIQUE INDEX par_inbox_ci ON par_inbox (message_id COLLATE par_ci);
SELECT inbox.claim('par_inbox', 'Msg-1') AS fresh;
SELECT inbox.claim('par_inbox', 'msg-1') AS duplicate;
SELECT message_id FROM par_inbox;

-- Another unique or exclusion index beside the key's: a duplicate key never
-- reaches it, whichever order the call takes (the statement looks in its arbiter
-- before it inserts), so the answer is an update or a duplicate, never 23505.
CREATE TABLE par_uniq (id int PRIMARY KEY, email text UNIQUE, v int);
CREATE TABLE par_uniq_sql (LIKE par_uniq INCLUDING INDEXES);
SELECT par_twin('par_uniq_sql');
INSERT INTO par_uniq VALUES (1, 'a@x', 1);
INSERT INTO par_uniq_sql VALUES (1, 'a@x', 1);
SET idempotent_inbox.force_path = insert;
SELECT inbox.upsert('par_uniq', '{"id": 1, "email": "a@x", "v": 2}') AS changed,
       inbox.upsert('par_uniq_sql', '{"id": 1, "email": "a@x", "v": 2}') AS changed_sql;
SELECT inbox.upsert('par_uniq', '{"id": 1, "email": "a@x", "v": 2}') AS replay,
       inbox.upsert('par_uniq_sql', '{"id": 1, "email": "a@x", "v": 2}') AS replay_sql;
RESET idempotent_inbox.force_path;
SELECT inbox.upsert('par_uniq', '{"id": 2, "email": "a@x", "v": 3}');
SELECT inbox.upsert('par_uniq_sql', '{"id": 2, "email": "a@x", "v": 3}');
TABLE par_uniq;
TABLE par_uniq_sql;

SELECT inbox.create_inbox('par_excl');
ALTER TABLE par_excl ADD CONSTRAINT par_excl_same EXCLUDE USING btree (message_id WITH =);
SELECT inbox.create_inbox('par_lower');
CREATE UNIQUE INDEX par_lower_idx ON par_lower (lower(message_id));
CREATE TABLE par_sink (id text);
CREATE TRIGGER dedup BEFORE INSERT ON par_sink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('par_lower', 'id');
SET idempotent_inbox.force_path = insert;
SELECT inbox.claim('par_excl', 'e1') AS fresh, inbox.claim('par_excl', 'e1') AS duplicate;
SELECT inbox.claim('par_lower', 'l1') AS fresh, inbox.claim('par_lower', 'l1') AS duplicate;
INSERT INTO par_sink VALUES ('l1'), ('l2'), ('l2');
RESET idempotent_inbox.force_path;
TABLE par_sink;

-- A table published without a replica identity refuses upsert and transition
-- as INSERT ... ON CONFLICT DO UPDATE and UPDATE refuse it: whatever the row,
-- on every path.
CREATE TABLE par_pub (k int NOT NULL UNIQUE, v text);
INSERT INTO par_pub VALUES (1, 'a');
SET client_min_messages = error;
CREATE PUBLICATION par_pub FOR TABLE par_pub;
RESET client_min_messages;
SELECT inbox.upsert('par_pub', '{"k": 2, "v": "b"}', ARRAY['k']) AS new_row;
SET idempotent_inbox.force_path = insert;
SELECT inbox.upsert('par_pub', '{"k": 2, "v": "b"}', ARRAY['k']) AS new_row_insert_first;
RESET idempotent_inbox.force_path;
SELECT inbox.upsert('par_pub', '{"k": 1, "v": "a"}', ARRAY['k']) AS replay;
SELECT inbox.transition('par_pub', '{"k": 1}', 'v', ARRAY['a'], 'b') AS move;
SELECT inbox.transition('par_pub', '{"k": 3}', 'v', ARRAY['a'], 'b') AS missing;
TABLE par_pub;
DROP PUBLICATION par_pub;
SELECT inbox.upsert('par_pub', '{"k": 2, "v": "b"}', ARRAY['k']) AS unpublished;

-- Stream positions are published the same way only by a superuser's change to
-- the extension's table; advance then refuses as its statement would.
SELECT inbox.advance('par_inbox', 'topic', 0, 5) AS first;
ALTER TABLE inbox.positions REPLICA IDENTITY NOTHING;
SET client_min_messages = error;
CREATE PUBLICATION par_positions FOR TABLE inbox.positions;
RESET client_min_messages;
SELECT inbox.advance('par_inbox', 'topic', 0, 6) AS moved;
SELECT inbox.advance('par_inbox', 'topic', 0, 5) AS redelivered;
DROP PUBLICATION par_positions;
ALTER TABLE inbox.positions REPLICA IDENTITY DEFAULT;
SELECT inbox.advance('par_inbox', 'topic', 0, 6) AS moved;

DROP TABLE par_oid, par_oid_sql, par_dropped, par_ci, par_ci_sql, par_num, par_num_sql, par_two,
    par_two_sql, par_uniq, par_uniq_sql, par_sink, par_pub;
SELECT inbox.drop_inbox('par_excl'), inbox.drop_inbox('par_lower');
SELECT inbox.drop_inbox('par_inbox');
DROP COLLATION par_ci;
DROP FUNCTION par_twin(regclass);
DROP FUNCTION par_noop();
