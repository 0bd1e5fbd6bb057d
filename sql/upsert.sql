-- upsert: inserted, updated, unchanged, stale; partial rows; keys; errors.
\set SHOW_CONTEXT never

CREATE TABLE payments (
    id bigint PRIMARY KEY,
    ref text UNIQUE,
    status text NOT NULL DEFAULT 'PENDING',
    amount numeric(12,2),
    paid_at timestamptz,
    tags text[],
    meta jsonb,
    version int,
    note text DEFAULT 'none'
);
-- Counts trigger firings: one per row inserted or updated (an existing row is
-- updated with a plain UPDATE), so a replay that writes nothing shows as none.
CREATE TABLE writes (n int);
INSERT INTO writes VALUES (0);
CREATE FUNCTION count_write() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN UPDATE writes SET n = n + 1; RETURN NEW; END$$;
CREATE TRIGGER count_write BEFORE INSERT OR UPDATE ON payments
    FOR EACH ROW EXECUTE FUNCTION count_write();

-- Insert, replay, change.
SELECT inbox.upsert('payments', '{"id": 1, "amount": 50, "status": "PENDING"}');
SELECT xmin AS first_xmin FROM payments WHERE id = 1 \gset
SELECT n AS firings_before_replays FROM writes \gset
SELECT inbox.upsert('payments', '{"id": 1, "amount": 50, "status": "PENDING"}');
SELECT inbox.upsert('payments', '{"status": "PENDING", "amount": "50.00", "id": "1"}') AS key_order_and_spelling;
SELECT xmin = :'first_xmin' AS replay_kept_row_version,
       (SELECT n FROM writes) = :firings_before_replays AS replay_fired_no_trigger
  FROM payments WHERE id = 1;
SELECT inbox.upsert('payments', '{"id": 1, "amount": 75}');
SELECT id, status, amount, note FROM payments ORDER BY id;

-- Absent columns keep their stored values on update and take defaults on insert.
SELECT inbox.upsert('payments', '{"id": 2, "amount": 10}');
SELECT inbox.upsert('payments', '{"id": 2, "note": "vip"}');
SELECT id, status, amount, note FROM payments WHERE id = 2;

-- Values are converted by the column types' own input rules.
SELECT inbox.upsert('payments',
    '{"id": 3, "amount": "12.345", "paid_at": "2024-03-01 10:00:00+00", "tags": ["a", "b"], "meta": {"k": [1, 2]}}');
SELECT amount, paid_at AT TIME ZONE 'UTC' AS paid_at_utc, tags, meta FROM payments WHERE id = 3;
-- JSON null sets NULL (that is a change); a replay of it is unchanged.
SELECT inbox.upsert('payments', '{"id": 3, "meta": null}'), inbox.upsert('payments', '{"id": 3, "meta": null}');

-- Keyed by a unique constraint instead of the primary key.
SELECT inbox.upsert('payments', '{"id": 4, "ref": "r-4", "amount": 1}', ARRAY['ref']);
SELECT inbox.upsert('payments', '{"id": 4, "ref": "r-4", "amount": 2}', ARRAY['ref']);
SELECT inbox.upsert('payments', '{"id": 4, "ref": "r-4", "amount": 2}', '{ref}');
SELECT id, ref, amount FROM payments WHERE ref = 'r-4';

-- Last writer wins by version: older and equal versions are stale, in any order.
SELECT inbox.upsert('payments', '{"id": 5, "amount": 3, "version": 3}', version_column => 'version');
SELECT inbox.upsert('payments', '{"id": 5, "amount": 1, "version": 1}', version_column => 'version');
SELECT inbox.upsert('payments', '{"id": 5, "amount": 3, "version": 3}', version_column => 'version');
SELECT inbox.upsert('payments', '{"id": 5, "amount": 9, "version": 3}', version_column => 'version');
SELECT inbox.upsert('payments', '{"id": 5, "amount": 4, "version": 4}', version_column => 'version');
SELECT id, amount, version FROM payments WHERE id = 5;
-- A stored NULL version is older than any version.
SELECT inbox.upsert('payments', '{"id": 6, "amount": 1}');
SELECT inbox.upsert('payments', '{"id": 6, "amount": 2, "version": 1}', version_column => 'version');

-- A row holding only its key.
SELECT inbox.upsert('payments', '{"id": 7}'), inbox.upsert('payments', '{"id": 7}');

-- upsert_row takes a row of the table's own type.
SELECT inbox.upsert_row(ROW(8, 'r-8', 'PAID', 8, NULL, NULL, NULL, 1, 'row')::payments);
SELECT inbox.upsert_row(ROW(8, 'r-8', 'PAID', 8, NULL, NULL, NULL, 1, 'row')::payments);
SELECT inbox.upsert_row(ROW(8, 'r-8', 'PAID', 9.5, NULL, NULL, NULL, 2, 'row v2')::payments,
                        version_column => 'version');
SELECT inbox.upsert_row(p) FROM payments p WHERE id = 8;
SELECT amount, version, note FROM payments WHERE id = 8;

SELECT n AS trigger_firings FROM writes;

-- A partial row for an existing key updates it, even when it leaves out a NOT NULL
-- column that has no default; for a new key that column is required, as in INSERT.
CREATE TABLE people (id int PRIMARY KEY, name text NOT NULL, city text);
SELECT inbox.upsert('people', '{"id": 1, "name": "Ada", "city": "London"}');
SELECT inbox.upsert('people', '{"id": 1, "city": "Paris"}');
SELECT inbox.upsert('people', '{"id": 2, "city": "Rome"}');
\echo :SQLSTATE
SELECT * FROM people ORDER BY id;
DROP TABLE people;

-- After a run of new rows upsert tries the INSERT first (on a table without INSERT
-- triggers); every answer stays the same, and a replay still writes nothing.
CREATE TABLE bulk (id int PRIMARY KEY, v text, version int);
SELECT outcome, count(*) FROM (
    SELECT inbox.upsert('bulk', jsonb_build_object('id', g, 'v', 'a', 'version', 1), NULL, 'version') AS outcome
      FROM generate_series(1, 40) g) s GROUP BY 1;
SELECT xmin AS bulk_xmin FROM bulk WHERE id = 3 \gset
SELECT inbox.upsert('bulk', '{"id": 41, "v": "a", "version": 1}', NULL, 'version') AS fresh,
       inbox.upsert('bulk', '{"id": 3, "v": "a", "version": 1}', NULL, 'version') AS replay,
       inbox.upsert('bulk', '{"id": 4, "v": "b", "version": 0}', NULL, 'version') AS older,
       inbox.upsert('bulk', '{"id": 5, "v": "b", "version": 2}', NULL, 'version') AS newer,
       inbox.upsert('bulk', '{"id": 6, "v": "a", "version": 1}') AS unversioned_replay;
SELECT xmin = :'bulk_xmin' AS replay_kept_row_version FROM bulk WHERE id = 3;
SELECT id, v, version FROM bulk WHERE id IN (3, 4, 5, 41) ORDER BY id;
-- After a run of changes the guarded UPDATE goes first; the answers stay the same.
SELECT outcome, count(*) FROM (
    SELECT inbox.upsert('bulk', jsonb_build_object('id', g, 'v', 'c', 'version', 3), NULL, 'version') AS outcome
      FROM generate_series(1, 40) g) s GROUP BY 1;
SELECT xmin AS bulk_xmin FROM bulk WHERE id = 7 \gset
SELECT inbox.upsert('bulk', '{"id": 8, "v": "d", "version": 4}', NULL, 'version') AS newer,
       inbox.upsert('bulk', '{"id": 7, "v": "c", "version": 3}', NULL, 'version') AS replay,
       inbox.upsert('bulk', '{"id": 9, "v": "x", "version": 2}', NULL, 'version') AS older,
       inbox.upsert('bulk', '{"id": 42, "v": "n", "version": 1}', NULL, 'version') AS fresh,
       inbox.upsert('bulk', '{"id": 10, "v": "c"}') AS unversioned_replay;
SELECT xmin = :'bulk_xmin' AS replay_kept_row_version FROM bulk WHERE id = 7;
SELECT id, v, version FROM bulk WHERE id IN (7, 8, 9, 42) ORDER BY id;
DROP TABLE bulk;

-- Errors.
SELECT inbox.upsert('payments', '{"id": 9, "nope": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"amount": 1}');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9, "amount": 1}', ARRAY['amount']);
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9}', ARRAY['id', 'ref']);
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9}', ARRAY[]::text[]);
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9}', ARRAY[NULL]);
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9}', ARRAY['nope']);
\echo :SQLSTATE
SELECT inbox.upsert('payments', '[1, 2]');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '"text"');
\echo :SQLSTATE
SELECT inbox.upsert('payments', NULL);
\echo :SQLSTATE
SELECT inbox.upsert(NULL, '{"id": 9}');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": "nine"}');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9, "paid_at": "yesterday-ish"}');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9, "version": 1}', version_column => 'nope');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9}', version_column => 'version');
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9, "version": null}', version_column => 'version');
\echo :SQLSTATE
SELECT inbox.upsert('no_such_table', '{"id": 9}');
\echo :SQLSTATE
CREATE VIEW payments_view AS SELECT * FROM payments;
SELECT inbox.upsert('payments_view', '{"id": 9}');
\echo :SQLSTATE
CREATE TABLE no_key (a int);
SELECT inbox.upsert('no_key', '{"a": 1}');
\echo :SQLSTATE
CREATE TABLE partial_key (a int, b int);
CREATE UNIQUE INDEX ON partial_key (a) WHERE b > 0;
SELECT inbox.upsert('partial_key', '{"a": 1}', ARRAY['a']);
\echo :SQLSTATE
SELECT inbox.upsert_row(1);
\echo :SQLSTATE
SELECT inbox.upsert('payments', '{"id": 9, "ref": "r-4"}');
\echo :SQLSTATE
SELECT count(*) AS rows_after_errors FROM payments;

-- Privileges are the caller's: an upsert needs SELECT, INSERT and UPDATE, as
-- INSERT ... ON CONFLICT DO UPDATE does.
CREATE ROLE regress_upserter;
GRANT SELECT, INSERT ON payments TO regress_upserter;
GRANT SELECT, UPDATE ON writes TO regress_upserter;
SET ROLE regress_upserter;
SELECT inbox.upsert('payments', '{"id": 10, "amount": 1}');
\echo :SQLSTATE
RESET ROLE;
GRANT UPDATE ON payments TO regress_upserter;
SET ROLE regress_upserter;
SELECT inbox.upsert('payments', '{"id": 10, "amount": 1}');
SELECT inbox.upsert('payments', '{"id": 10, "amount": 1}');
SELECT inbox.upsert('payments', '{"id": 10, "amount": 2}');
RESET ROLE;
-- Under row-level security the stored row is read with a SELECT, which applies
-- the policies: rows the role may not see are not its to upsert.
ALTER TABLE payments ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON payments USING (id >= 10);
SET ROLE regress_upserter;
SELECT inbox.upsert('payments', '{"id": 10, "amount": 2}');
SELECT inbox.upsert('payments', '{"id": 10, "amount": 3}');
SELECT inbox.upsert('payments', '{"id": 11, "amount": 1}'), inbox.upsert('payments', '{"id": 11, "amount": 1}');
SELECT inbox.upsert('payments', '{"id": 1, "amount": 1}');
\echo :SQLSTATE
RESET ROLE;
DROP POLICY own_rows ON payments;
ALTER TABLE payments DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON payments, writes FROM regress_upserter;
DROP ROLE regress_upserter;

DROP VIEW payments_view;
DROP TABLE payments, writes, no_key, partial_key;
DROP FUNCTION count_write();
