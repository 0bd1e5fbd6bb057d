-- An inbox's owner may alter it at any time.  Whatever the change, a call either
-- works as on the inbox create_inbox made, or fails with 55000 and says what is
-- wrong; it never crashes, never reads a column as another type, never claims an
-- id twice.
\set VERBOSITY default

-- A bigint key retyped to text: the direct path would read a text as an int8.
SELECT inbox.create_inbox('shape_big', 'bigint');
SELECT inbox.claim('shape_big', 12345);
ALTER TABLE shape_big ALTER COLUMN message_id TYPE text;
SELECT inbox.claim('shape_big', 12345);
\echo :SQLSTATE
SELECT inbox.try_claim('shape_big', 12345);
SELECT inbox.claim_many('shape_big', ARRAY[1, 2]::bigint[]);
SELECT inbox.claim_apply('shape_big', 7, 'SELECT 1');
SELECT * FROM inbox.acquire('shape_big', 8, '1 minute');
SELECT inbox.result('shape_big', 12345);
SELECT inbox.advance('shape_big', 't', 0, 1);
-- Back to the registered type: everything works again, and the id is still claimed.
ALTER TABLE shape_big ALTER COLUMN message_id TYPE bigint USING message_id::bigint;
SELECT inbox.claim('shape_big', 12345) AS fresh, inbox.claim('shape_big', 12346) AS fresh;

-- A uuid key retyped to text.
SELECT inbox.create_inbox('shape_uuid', 'uuid');
ALTER TABLE shape_uuid ALTER COLUMN message_id TYPE text;
SELECT inbox.claim('shape_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid);
SELECT * FROM inbox.acquire('shape_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '1 minute');
-- A text key retyped to varchar or given a typmod is not the registered type either.
SELECT inbox.create_inbox('shape_text');
ALTER TABLE shape_text ALTER COLUMN message_id TYPE varchar(10);
SELECT inbox.claim('shape_text', 'x');
ALTER TABLE shape_text ALTER COLUMN message_id TYPE text;
SELECT inbox.claim('shape_text', 'x');

-- Lease and result columns retyped: never read as their old types.
SELECT inbox.create_inbox('shape_keys');
SELECT status FROM inbox.acquire('shape_keys', 'k1', '1 minute');
SELECT inbox.finish('shape_keys', 'k1', token, '{"ok": true}') FROM shape_keys WHERE message_id = 'k1';
ALTER TABLE shape_keys ALTER COLUMN result TYPE text;
SELECT inbox.try_claim('shape_keys', 'k1');
SELECT * FROM inbox.acquire('shape_keys', 'k1', '1 minute');
ALTER TABLE shape_keys ALTER COLUMN result TYPE jsonb USING result::jsonb;
SELECT status, result FROM inbox.acquire('shape_keys', 'k1', '1 minute');
ALTER TABLE shape_keys ALTER COLUMN fingerprint TYPE uuid USING NULL;
SELECT inbox.claim('shape_keys', 'k2', inbox.fingerprint('{}'));
ALTER TABLE shape_keys ALTER COLUMN fingerprint TYPE bytea USING NULL;
ALTER TABLE shape_keys ALTER COLUMN lease_until TYPE date;
SELECT * FROM inbox.acquire('shape_keys', 'k3', '1 minute');
ALTER TABLE shape_keys ALTER COLUMN lease_until TYPE timestamptz;
ALTER TABLE shape_keys ALTER COLUMN lease_until TYPE timestamptz(0);
SELECT * FROM inbox.acquire('shape_keys', 'k3', '1 minute');
ALTER TABLE shape_keys ALTER COLUMN lease_until TYPE timestamptz;
SELECT status FROM inbox.acquire('shape_keys', 'k3', '1 minute');
SELECT status FROM inbox.acquire('shape_keys', 'k3', '1 minute');
-- A dropped result column: plain claims go on, lease features say what is missing.
ALTER TABLE shape_keys DROP COLUMN result;
SELECT inbox.claim('shape_keys', 'k4'), inbox.try_claim('shape_keys', 'k4');
SELECT * FROM inbox.acquire('shape_keys', 'k5', '1 minute');
\echo :SQLSTATE
-- claimed_at is needed by every claim.
ALTER TABLE shape_keys DROP COLUMN claimed_at;
SELECT inbox.claim('shape_keys', 'k6');

-- The primary key: dropped, widened, deferrable.
SELECT inbox.create_inbox('shape_pk');
SELECT inbox.claim('shape_pk', 'a');
ALTER TABLE shape_pk DROP CONSTRAINT shape_pk_pkey;
SELECT inbox.claim('shape_pk', 'a');
ALTER TABLE shape_pk ADD PRIMARY KEY (message_id, claimed_at);
SELECT inbox.claim('shape_pk', 'a');
ALTER TABLE shape_pk DROP CONSTRAINT shape_pk_pkey;
ALTER TABLE shape_pk ADD PRIMARY KEY (message_id) DEFERRABLE;
SELECT inbox.claim('shape_pk', 'a');
ALTER TABLE shape_pk DROP CONSTRAINT shape_pk_pkey;
ALTER TABLE shape_pk ADD PRIMARY KEY (message_id);
SELECT inbox.claim('shape_pk', 'a') AS fresh, inbox.claim('shape_pk', 'b') AS fresh;

-- A nondeterministic collation would let two different ids be equal.
CREATE COLLATION shape_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
ALTER TABLE shape_pk ALTER COLUMN message_id TYPE text COLLATE shape_ci;
SELECT inbox.claim('shape_pk', 'A');
ALTER TABLE shape_pk ALTER COLUMN message_id TYPE text COLLATE "default";
SELECT inbox.claim('shape_pk', 'A');
DROP COLLATION shape_ci;

-- Persistence: an unlogged inbox would forget claims in a crash.
ALTER TABLE shape_pk SET UNLOGGED;
SELECT inbox.claim('shape_pk', 'c');
ALTER TABLE shape_pk SET LOGGED;
SELECT inbox.claim('shape_pk', 'c');

-- Renamed columns are missing columns; renamed tables are the same inbox.
ALTER TABLE shape_pk RENAME COLUMN message_id TO id;
SELECT inbox.claim('shape_pk', 'd');
ALTER TABLE shape_pk RENAME COLUMN id TO message_id;
ALTER TABLE shape_pk RENAME TO shape_pk_renamed;
SELECT inbox.claim('shape_pk_renamed', 'd') AS fresh, inbox.claim('shape_pk_renamed', 'd') AS fresh;

-- A broken inbox does not break the views over every inbox.
SELECT inbox::text, oldest_claim IS NOT NULL AS has_oldest
  FROM inbox.stats WHERE inbox::text LIKE 'shape%' ORDER BY 1;

-- Rules, partitions and domains apply to claims as to the INSERT they stand for:
-- PostgreSQL refuses ON CONFLICT on a table with INSERT rules (0A000), and so
-- does a claim, instead of skipping the rule.
SELECT inbox.create_inbox('shape_rule');
CREATE TABLE shape_rule_log (message_id text, seen_by name);
CREATE RULE shape_rule_note AS ON INSERT TO shape_rule
    DO ALSO INSERT INTO shape_rule_log VALUES (NEW.message_id, current_user);
\set VERBOSITY terse
SELECT inbox.claim('shape_rule', 'r1');
\echo :SQLSTATE
\set VERBOSITY default
SELECT count(*) AS claimed_without_rule FROM shape_rule;
DROP RULE shape_rule_note ON shape_rule;

CREATE DOMAIN shape_required AS text CHECK (VALUE IS NOT NULL);
ALTER TABLE shape_rule ADD COLUMN source shape_required;
SELECT inbox.claim('shape_rule', 'r2');
\echo :SQLSTATE
ALTER TABLE shape_rule DROP COLUMN source;
DROP DOMAIN shape_required;

-- An inbox attached as a partition: the partition constraint is checked.
CREATE TABLE shape_parent (LIKE shape_rule) PARTITION BY LIST (message_id);
ALTER TABLE shape_parent ATTACH PARTITION shape_rule FOR VALUES IN ('r1', 'r3');
SELECT inbox.claim('shape_rule', 'r3');
\set VERBOSITY terse
SELECT inbox.claim('shape_rule', 'r4');
\echo :SQLSTATE
\set VERBOSITY default
ALTER TABLE shape_parent DETACH PARTITION shape_rule;
DROP TABLE shape_parent;

-- A retention window must leave now() - retention a timestamp.
SELECT inbox.set_retention('shape_rule', '100000 years');
\echo :SQLSTATE
SELECT inbox.create_inbox('shape_long', retention => '1001 years');
SELECT inbox.set_retention('shape_rule', '1000 years');
SELECT inbox.claim('shape_rule', 'r5');
SELECT inbox.set_retention('shape_rule', NULL);

-- Re-entry: a trigger on the inbox grants on it (every backend's cache entry is
-- reloaded) and calls back into the extension on the same inbox, while the
-- outer claim's plan is still running.
SELECT inbox.create_inbox('shape_reentry');
CREATE FUNCTION shape_reenter() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s inbox.lease_status;
BEGIN
    EXECUTE format('GRANT SELECT ON %I TO PUBLIC', TG_TABLE_NAME);
    SELECT status INTO s FROM inbox.acquire(TG_TABLE_NAME::regclass, 'nested-' || NEW.message_id, '1 minute');
    PERFORM inbox.claim(TG_TABLE_NAME::regclass, 'again-' || NEW.message_id);
    RAISE NOTICE 'nested acquire: %', s;
    RETURN NEW;
END $$;
CREATE TRIGGER shape_reenter AFTER INSERT ON shape_reentry
    FOR EACH ROW WHEN (NEW.message_id NOT LIKE 'nested-%' AND NEW.message_id NOT LIKE 'again-%')
    EXECUTE FUNCTION shape_reenter();
SELECT inbox.claim('shape_reentry', 'a'), inbox.claim('shape_reentry', 'b');
SELECT inbox.claim('shape_reentry', 'a');
SELECT count(*) FROM shape_reentry;
-- The nested call alters the inbox under the outer call: refused by PostgreSQL,
-- and caught here, so the outer call continues with its entry as it was.
CREATE OR REPLACE FUNCTION shape_reenter() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE format('ALTER TABLE %I ALTER COLUMN result TYPE text', TG_TABLE_NAME);
    EXCEPTION WHEN others THEN
        RAISE NOTICE 'nested ALTER refused: %', SQLSTATE;
    END;
    BEGIN
        PERFORM inbox.try_claim(TG_TABLE_NAME::regclass, 'nested-' || NEW.message_id);
    EXCEPTION WHEN others THEN
        RAISE NOTICE 'nested try_claim: %', SQLSTATE;
    END;
    RETURN NEW;
END $$;
SELECT inbox.claim('shape_reentry', 'c'), inbox.claim('shape_reentry', 'd');
SELECT message_id FROM shape_reentry ORDER BY 1;

DROP TABLE shape_big, shape_uuid, shape_text, shape_keys, shape_pk_renamed, shape_rule,
    shape_rule_log, shape_reentry;
DROP FUNCTION shape_reenter();
