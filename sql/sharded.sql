-- Sharded inboxes on one node: create_sharded_inbox, the _sharded claim functions,
-- what the other functions say of a sharded inbox, and every error.  (On a Citus
-- cluster: test/citus/t.)
\set SHOW_CONTEXT never
\set VERBOSITY default

SELECT inbox.create_sharded_inbox('pay_inbox', 'account_id', 'bigint');
-- The shard key leads the primary key; the marker constraint names the table an inbox.
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull
  FROM pg_attribute a WHERE a.attrelid = 'pay_inbox'::regclass AND a.attnum > 0 ORDER BY a.attnum;
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
 WHERE conrelid = 'pay_inbox'::regclass AND contype <> 'n' ORDER BY conname;
SELECT table_name, key_type, retention, shard_key FROM inbox.inboxes WHERE table_name = 'pay_inbox';

-- An id is claimed once per shard key value.
SELECT inbox.claim_sharded('pay_inbox', 7, 'm1') AS fresh,
       inbox.claim_sharded('pay_inbox', 7, 'm1') AS again,
       inbox.claim_sharded('pay_inbox', 8, 'm1') AS other_account;
-- The shard key value takes the column's type: an untyped literal or a string is
-- read as bigint, an int or numeric takes the assignment cast.
SELECT inbox.claim_sharded('pay_inbox', '7', 'm1') AS literal,
       inbox.claim_sharded('pay_inbox', '7'::text, 'm1') AS text,
       inbox.claim_sharded('pay_inbox', 7::int2, 'm1') AS int2,
       inbox.claim_sharded('pay_inbox', 7.0, 'm1') AS numeric;
SELECT inbox.claim_sharded('pay_inbox', 'seven', 'm1');
SELECT inbox.claim_sharded('pay_inbox', gen_random_uuid(), 'm1');
SELECT inbox.claim_sharded('pay_inbox', NULL::bigint, 'm1');
SELECT inbox.claim_sharded('pay_inbox', 7, NULL::text);
-- A cast that would round is refused: 7.5 is not account 8.
SELECT inbox.claim_sharded('pay_inbox', 7.5, 'm1');
SELECT inbox.claim_sharded('pay_inbox', 7, repeat('x', 2000));

-- ROLLBACK removes the claim.
BEGIN;
SELECT inbox.claim_sharded('pay_inbox', 7, 'm2');
ROLLBACK;
SELECT inbox.claim_sharded('pay_inbox', 7, 'm2') AS after_rollback;

-- claim_apply_sharded: the effect runs once per (shard key, id).
CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
INSERT INTO accounts VALUES (7), (8);
SELECT inbox.claim_apply_sharded('pay_inbox', a, 'p' || i,
         'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 10 * i, a)
  FROM generate_series(1, 3) i, (VALUES (7::bigint), (8)) v(a), generate_series(1, 2) redelivery
 ORDER BY redelivery, a, i;
SELECT id, balance FROM accounts ORDER BY id;
-- A failing effect takes its claim with it.
SELECT inbox.claim_apply_sharded('pay_inbox', 7, 'p9', 'UPDATE accounts SET balance = balance / 0');
SELECT inbox.claim_apply_sharded('pay_inbox', 7, 'p9', 'SELECT 1') AS after_failed_effect;
SELECT inbox.claim_apply_sharded('pay_inbox', 7, 'p10', NULL);
-- Without arguments, and with an explicit VARIADIC array.
SELECT inbox.claim_apply_sharded('pay_inbox', 8, 'p11', 'UPDATE accounts SET balance = 0 WHERE id = 8');
SELECT inbox.claim_apply_sharded('pay_inbox', 8, 'p12',
         'UPDATE accounts SET balance = balance + $1 WHERE id = $2', VARIADIC ARRAY[5, 8]);
SELECT id, balance FROM accounts ORDER BY id;

-- claim_many_sharded: the fresh ids of one shard key value, in input order, each once.
SELECT m FROM inbox.claim_many_sharded('pay_inbox', 9, ARRAY['b', 'a', 'b', 'm1']) m;
SELECT m FROM inbox.claim_many_sharded('pay_inbox', 9, ARRAY['a', 'c']) m;
SELECT count(*) FROM inbox.claim_many_sharded('pay_inbox', 9, ARRAY[]::text[]);
SELECT inbox.claim_many_sharded('pay_inbox', 9, NULL::text[]);
SELECT inbox.claim_many_sharded('pay_inbox', NULL::int, ARRAY['a']);
SELECT inbox.claim_many_sharded('pay_inbox', 9, ARRAY['a', NULL]);

-- The plain claim functions do not name a claim of a sharded inbox.
SELECT inbox.claim('pay_inbox', 'm1');
SELECT inbox.claim_apply('pay_inbox', 'm1', 'SELECT 1');
SELECT inbox.claim_many('pay_inbox', ARRAY['m1']);
SELECT inbox.claim('pay_inbox', 'm1', inbox.fingerprint('{}'));
-- Nor do those that read a claim's stored columns: theirs are in sharded_stored.sql.
SELECT inbox.try_claim('pay_inbox', 'm1');
SELECT inbox.result('pay_inbox', 'm1');
SELECT inbox.complete('pay_inbox', 'm1', '{}');
SELECT * FROM inbox.acquire('pay_inbox', 'k1', '1 minute');
SELECT inbox.finish('pay_inbox', 'k1', 1, '{}');
SELECT inbox.release('pay_inbox', 'k1', 1);
-- And the _sharded forms need a sharded inbox.
SELECT inbox.create_inbox('plain_inbox');
SELECT inbox.claim_sharded('plain_inbox', 7, 'm1');
SELECT inbox.claim_apply_sharded('plain_inbox', 7, 'm1', 'SELECT 1');
SELECT inbox.claim_many_sharded('plain_inbox', 7, ARRAY['m1']);

-- Positions, stats, retention and purge work on a sharded inbox as on any other.
SELECT inbox.advance('pay_inbox', 'payments', 0, 5) AS advanced, inbox.position('pay_inbox', 'payments', 0);
SELECT inbox FROM inbox.stats WHERE inbox = 'pay_inbox'::regclass;
SELECT inbox.set_retention('pay_inbox', '1 day');
UPDATE pay_inbox SET claimed_at = now() - interval '2 days' WHERE account_id = 7 AND message_id = 'm1';
-- An expired claim counts as absent: the claim renews it, in place.
SELECT inbox.claim_sharded('pay_inbox', 7, 'm1') AS renewed, inbox.claim_sharded('pay_inbox', 7, 'm1') AS again;
SELECT count(*) FROM pay_inbox WHERE account_id = 7 AND message_id = 'm1' AND claimed_at > now() - interval '1 hour';
UPDATE pay_inbox SET claimed_at = now() - interval '2 days' WHERE account_id = 9;
SELECT m FROM inbox.claim_many_sharded('pay_inbox', 9, ARRAY['a', 'z']) m ORDER BY m;
UPDATE pay_inbox SET claimed_at = now() - interval '2 days' WHERE account_id = 8;
-- (With the library preloaded, the purge worker may get there first.)
SELECT inbox.purge('pay_inbox') BETWEEN 0 AND 9 AS purged;
SELECT count(*) AS left_for_8 FROM pay_inbox WHERE account_id = 8;
-- Renewing an expired claim: a BEFORE UPDATE trigger that moves it is an error too.
UPDATE pay_inbox SET claimed_at = now() - interval '2 days' WHERE account_id = 7 AND message_id = 'm1';
CREATE FUNCTION move_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.account_id := NEW.account_id + 1000; RETURN NEW; END $$;
CREATE TRIGGER move BEFORE UPDATE ON pay_inbox FOR EACH ROW EXECUTE FUNCTION move_account();
SELECT inbox.claim_sharded('pay_inbox', 7, 'm1');
SELECT inbox.claim_many_sharded('pay_inbox', 7, ARRAY['m1']);
DROP TRIGGER move ON pay_inbox;
DROP FUNCTION move_account();

-- Other shard key types: uuid and text; a uuid-keyed inbox sharded by text.
SELECT inbox.create_sharded_inbox('tenant_inbox', 'tenant', 'text', 'uuid');
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000001') AS fresh,
       inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000001'::uuid) AS again,
       inbox.claim_sharded('tenant_inbox', 'ACME', '00000000-0000-0000-0000-000000000001') AS other_tenant;

-- A trigger that skips the claim's row is an error, not a duplicate.
CREATE FUNCTION skip_claims() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER skip BEFORE INSERT ON tenant_inbox FOR EACH ROW EXECUTE FUNCTION skip_claims();
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000002');
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000001') AS still_duplicate;
SELECT inbox.claim_many_sharded('tenant_inbox', 'acme', ARRAY['00000000-0000-0000-0000-000000000003'::uuid]);
DROP TRIGGER skip ON tenant_inbox;
-- So is one that stores the claim under another shard key value: it would be
-- answered fresh for a (shard key, id) the inbox does not hold.
CREATE FUNCTION move_claims() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.tenant <> 'stays' THEN NEW.tenant := 'elsewhere'; END IF; RETURN NEW; END $$;
CREATE TRIGGER move BEFORE INSERT ON tenant_inbox FOR EACH ROW EXECUTE FUNCTION move_claims();
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000005');
SELECT inbox.claim_many_sharded('tenant_inbox', 'acme', ARRAY['00000000-0000-0000-0000-000000000005'::uuid]);
SELECT inbox.claim_apply_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000005', 'SELECT 1');
SELECT inbox.claim_sharded('tenant_inbox', 'stays', '00000000-0000-0000-0000-000000000005') AS left_alone;
DROP TRIGGER move ON tenant_inbox;
SELECT count(*) AS moved FROM tenant_inbox WHERE tenant = 'elsewhere';

-- The shape is checked: the marker and the primary key are what make it a sharded inbox.
ALTER TABLE tenant_inbox DROP CONSTRAINT idempotent_inbox;
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000004');
ALTER TABLE tenant_inbox ADD CONSTRAINT idempotent_inbox CHECK (message_id IS NOT NULL);
ALTER TABLE tenant_inbox DROP CONSTRAINT tenant_inbox_pkey;
ALTER TABLE tenant_inbox ADD PRIMARY KEY (message_id, tenant);
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000004');
ALTER TABLE tenant_inbox DROP CONSTRAINT tenant_inbox_pkey;
ALTER TABLE tenant_inbox ADD PRIMARY KEY (tenant, message_id);
ALTER TABLE tenant_inbox RENAME COLUMN tenant TO customer;
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000004');
ALTER TABLE tenant_inbox RENAME COLUMN customer TO tenant;
SELECT inbox.claim_sharded('tenant_inbox', 'acme', '00000000-0000-0000-0000-000000000004') AS intact_again;

-- Rights: the caller's own, as for every claim.
CREATE ROLE regress_sharded_reader;
GRANT SELECT ON pay_inbox TO regress_sharded_reader;
SET ROLE regress_sharded_reader;
SELECT inbox.claim_sharded('pay_inbox', 7, 'r1');
RESET ROLE;
REVOKE ALL ON pay_inbox FROM regress_sharded_reader;
DROP ROLE regress_sharded_reader;

-- create_sharded_inbox's arguments.
SELECT inbox.create_sharded_inbox('bad', NULL, 'bigint');
SELECT inbox.create_sharded_inbox('bad', 'account_id', NULL);
SELECT inbox.create_sharded_inbox('bad', '', 'bigint');
SELECT inbox.create_sharded_inbox('bad', repeat('k', 64), 'bigint');
SELECT inbox.create_sharded_inbox('bad', 'message_id', 'bigint');
SELECT inbox.create_sharded_inbox('bad', 'claimed_at', 'bigint');
SELECT inbox.create_sharded_inbox('bad', 'account_id', 0::regtype);
SELECT inbox.create_sharded_inbox('bad', 'account_id', 'json');
SELECT inbox.create_sharded_inbox('bad', 'account_id', 'bigint', 'int4');
SELECT inbox.create_sharded_inbox('bad', 'account_id', 'bigint', 'text', '-1 day');
SELECT inbox.create_sharded_inbox('pg_temp.bad', 'account_id', 'bigint');
-- A temporary type would take the shard key column with it when its session ends.
CREATE TYPE pg_temp.temp_key AS (a int);
CREATE DOMAIN pg_temp.temp_dom AS int;
SELECT inbox.create_sharded_inbox('bad', 'account_id', 'pg_temp.temp_key');
SELECT inbox.create_sharded_inbox('bad', 'account_id', 'pg_temp.temp_key[]');
SELECT inbox.create_sharded_inbox('bad', 'account_id', 'pg_temp.temp_dom');
CREATE TYPE wraps_temp AS (k pg_temp.temp_key);
SELECT inbox.create_sharded_inbox('bad', 'account_id', 'wraps_temp');
DROP TYPE wraps_temp;
-- The type as named, without a length: bpchar and bit are not char(1) and bit(1).
SELECT inbox.create_sharded_inbox('code_inbox', 'code', 'bpchar');
SELECT inbox.create_sharded_inbox('bits_inbox', 'bits', 'bit');
SELECT a.attrelid::regclass, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
 WHERE a.attrelid IN ('code_inbox'::regclass, 'bits_inbox'::regclass) AND a.attnum = 1 ORDER BY 1;
SELECT inbox.claim_sharded('code_inbox', 'abc', 'm') AS fresh, inbox.claim_sharded('code_inbox', 'abc  ', 'm') AS padded,
       inbox.claim_sharded('bits_inbox', '101', 'm') AS bits;
SELECT inbox.drop_inbox('code_inbox');
SELECT inbox.drop_inbox('bits_inbox');
SELECT inbox.create_sharded_inbox('pay_inbox', 'account_id', 'bigint');
-- A quoted shard key keeps its case and spaces.
SELECT inbox.create_sharded_inbox('quoted_inbox', 'Account Id', 'int4');
SELECT inbox.claim_sharded('quoted_inbox', 1, 'q') AS fresh, inbox.claim_sharded('quoted_inbox', 1::bigint, 'q') AS again;
SELECT m FROM inbox.claim_many_sharded('quoted_inbox', 1, ARRAY['q', 'r']) m;

-- A BEFORE UPDATE trigger that skips the renewal of an expired claim is an error too:
-- the message is fresh, and would otherwise be answered duplicate.  (The same for
-- claim_many of an inbox without a shard key.)
SELECT inbox.create_sharded_inbox('renew_inbox', 'acct', 'bigint', 'text', '1 day');
SELECT inbox.create_inbox('renew_plain', 'text', '1 day');
SELECT inbox.claim_sharded('renew_inbox', 7, 'm1'), inbox.claim('renew_plain', 'm1');
CREATE FUNCTION skip_renewals() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
-- Each in a transaction that ages the claim first, so that a preloaded purge worker
-- cannot delete it before the claim sees it.
BEGIN;
UPDATE renew_inbox SET claimed_at = now() - interval '2 days';
CREATE TRIGGER skip BEFORE UPDATE ON renew_inbox FOR EACH ROW EXECUTE FUNCTION skip_renewals();
SELECT inbox.claim_sharded('renew_inbox', 7, 'm1');
ROLLBACK;
BEGIN;
UPDATE renew_inbox SET claimed_at = now() - interval '2 days';
CREATE TRIGGER skip BEFORE UPDATE ON renew_inbox FOR EACH ROW EXECUTE FUNCTION skip_renewals();
SELECT inbox.claim_many_sharded('renew_inbox', 7, ARRAY['m1']);
ROLLBACK;
BEGIN;
UPDATE renew_plain SET claimed_at = now() - interval '2 days';
CREATE TRIGGER skip BEFORE UPDATE ON renew_plain FOR EACH ROW EXECUTE FUNCTION skip_renewals();
SELECT inbox.claim_many('renew_plain', ARRAY['m1']);
ROLLBACK;
CREATE TRIGGER skip BEFORE UPDATE ON renew_inbox FOR EACH ROW EXECUTE FUNCTION skip_renewals();
CREATE TRIGGER skip BEFORE UPDATE ON renew_plain FOR EACH ROW EXECUTE FUNCTION skip_renewals();
-- A live claim is still a plain duplicate with the trigger in place.
SELECT inbox.claim_sharded('renew_inbox', 7, 'm2') AS fresh, inbox.claim_sharded('renew_inbox', 7, 'm2') AS again;
SELECT m FROM inbox.claim_many_sharded('renew_inbox', 7, ARRAY['m2', 'm3']) m;
SELECT m FROM inbox.claim_many('renew_plain', ARRAY['m2', 'm2']) m;
SELECT m FROM inbox.claim_many('renew_plain', ARRAY['m2']) m;
SELECT inbox.drop_inbox('renew_inbox');
SELECT inbox.drop_inbox('renew_plain');
DROP FUNCTION skip_renewals();

-- The SQLSTATE of each refusal above, with every relation kind as the inbox: a clear
-- code, never an internal error.
CREATE OR REPLACE FUNCTION pg_temp.outcome(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'SELECT ' || call;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;
CREATE VIEW pay_view AS SELECT * FROM quoted_inbox;
CREATE TABLE pay_parted (account_id int, message_id text, claimed_at timestamptz) PARTITION BY HASH (account_id);
SELECT call, pg_temp.outcome(call) FROM (VALUES
  ('inbox.claim(''quoted_inbox'', ''m1'')'),
  ('inbox.try_claim(''quoted_inbox'', ''m1'')'),
  ('inbox.claim_sharded(''quoted_inbox'', 1, NULL::text)'),
  ('inbox.claim_sharded(''quoted_inbox'', NULL::int, ''m'')'),
  ('inbox.claim_sharded(''quoted_inbox'', ''x'', ''m'')'),
  ('inbox.claim_sharded(''quoted_inbox'', now(), ''m'')'),
  ('inbox.claim_sharded(''quoted_inbox'', 2.5::float8, ''m'')'),
  ('inbox.claim_sharded(''quoted_inbox'', 2.0::float8, ''m'')'),
  ('inbox.claim_sharded(''quoted_inbox'', 3000000000, ''m'')'),
  ('inbox.claim_sharded(''quoted_inbox'', 1, 1::bigint)'),
  ('inbox.claim_sharded(NULL, 1, ''m'')'),
  ('inbox.claim_sharded(''pay_view'', 1, ''m'')'),
  ('inbox.claim_sharded(''pay_parted'', 1, ''m'')'),
  ('inbox.claim_sharded(''pg_class'', 1, ''m'')'),
  ('inbox.claim_apply_sharded(''quoted_inbox'', 1, ''m9'', ''SELECT $1'')'),
  ('inbox.claim_many_sharded(''quoted_inbox'', 1, ARRAY[[''a'']])'),
  ('inbox.create_sharded_inbox(''bad'', ''holder_pid'', ''int4'')'),
  ('inbox.create_sharded_inbox(''bad'', ''k'', ''anyelement'')')) c(call);
DROP VIEW pay_view;
DROP TABLE pay_parted;

SELECT inbox.drop_inbox('quoted_inbox');
SELECT inbox.drop_inbox('tenant_inbox');
SELECT inbox.drop_inbox('plain_inbox');
SELECT inbox.drop_inbox('pay_inbox');
DROP TABLE accounts;
DROP FUNCTION skip_claims();
DROP FUNCTION move_claims();
SELECT count(*) AS registered FROM inbox.registry WHERE shard_key IS NOT NULL;
