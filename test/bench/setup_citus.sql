-- The Citus benchmark schema, run on the coordinator of a cluster with two workers.
-- psql variables: host (the workers' socket directory), worker2 (its port), preload
-- (claims preloaded into each inbox for the redelivery runs).
--
-- Two groups of co-located tables, each with 1000 accounts, a sharded inbox and its
-- delegated consumer, and the hand-written pair (issue 12's baseline):
--   *_1w  every shard on worker 1 (created while worker 2 takes no shards)
--   plain names  shards spread over both workers
-- and noncoloc_inbox, an inbox distributed by message_id, which protects the two-worker
-- accounts through the coordinator: claim and effect usually land on different workers.
--
-- A message's account is 1 + id % 1000 in every script, so that a redelivery of a
-- preloaded id meets its claim under the same shard key.
\set ON_ERROR_STOP 1
CREATE EXTENSION idempotent_inbox;

-- ---- one worker ----------------------------------------------------------------------
SELECT citus_set_node_property(:'host', :worker2, 'shouldhaveshards', false);

CREATE TABLE accounts_1w (id bigint PRIMARY KEY, balance bigint NOT NULL);
SELECT create_distributed_table('accounts_1w', 'id', colocate_with => 'none');

SELECT inbox.create_sharded_inbox('payments_inbox_1w', 'account_id', 'bigint');
SELECT create_distributed_table('payments_inbox_1w', 'account_id', colocate_with => 'accounts_1w');
-- PL/pgSQL: a one-SELECT SQL function would be inlined into the caller's query, and
-- Citus would then have no call to delegate.
CREATE FUNCTION consume_1w(acct bigint, mid text, amount bigint) RETURNS inbox.outcome
LANGUAGE plpgsql AS $$ BEGIN
  RETURN inbox.claim_apply_sharded('payments_inbox_1w', acct, mid,
           'UPDATE accounts_1w SET balance = balance + $1 WHERE id = $2', amount, acct); END $$;
SELECT create_distributed_function('consume_1w(bigint,text,bigint)', '$1',
                                   colocate_with := 'accounts_1w');

CREATE TABLE hand_inbox_1w (account_id bigint NOT NULL, message_id text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (account_id, message_id));
SELECT create_distributed_table('hand_inbox_1w', 'account_id', colocate_with => 'accounts_1w');
CREATE FUNCTION consume_hand_1w(acct bigint, mid text, amount bigint) RETURNS boolean
LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  INSERT INTO hand_inbox_1w (account_id, message_id) VALUES (acct, mid) ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 1 THEN UPDATE accounts_1w SET balance = balance + amount WHERE id = acct; END IF;
  RETURN n = 1; END $$;
SELECT create_distributed_function('consume_hand_1w(bigint,text,bigint)', '$1',
                                   colocate_with := 'accounts_1w');

-- ---- two workers ---------------------------------------------------------------------
SELECT citus_set_node_property(:'host', :worker2, 'shouldhaveshards', true);

CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
SELECT create_distributed_table('accounts', 'id', colocate_with => 'none');

SELECT inbox.create_sharded_inbox('payments_inbox', 'account_id', 'bigint');
SELECT create_distributed_table('payments_inbox', 'account_id', colocate_with => 'accounts');
-- PL/pgSQL: a one-SELECT SQL function would be inlined into the caller's query, and
-- Citus would then have no call to delegate.
CREATE FUNCTION consume(acct bigint, mid text, amount bigint) RETURNS inbox.outcome
LANGUAGE plpgsql AS $$ BEGIN
  RETURN inbox.claim_apply_sharded('payments_inbox', acct, mid,
           'UPDATE accounts SET balance = balance + $1 WHERE id = $2', amount, acct); END $$;
SELECT create_distributed_function('consume(bigint,text,bigint)', '$1',
                                   colocate_with := 'accounts');

CREATE TABLE hand_inbox (account_id bigint NOT NULL, message_id text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (account_id, message_id));
SELECT create_distributed_table('hand_inbox', 'account_id', colocate_with => 'accounts');
CREATE FUNCTION consume_hand(acct bigint, mid text, amount bigint) RETURNS boolean
LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  INSERT INTO hand_inbox (account_id, message_id) VALUES (acct, mid) ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 1 THEN UPDATE accounts SET balance = balance + amount WHERE id = acct; END IF;
  RETURN n = 1; END $$;
SELECT create_distributed_function('consume_hand(bigint,text,bigint)', '$1',
                                   colocate_with := 'accounts');

SELECT inbox.create_inbox('noncoloc_inbox', 'text');
SELECT create_distributed_table('noncoloc_inbox', 'message_id', colocate_with => 'none');

-- ---- data ------------------------------------------------------------------------------
INSERT INTO accounts_1w SELECT g, 0 FROM generate_series(1, 1000) g;
INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 1000) g;
INSERT INTO payments_inbox_1w (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
INSERT INTO hand_inbox_1w (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
INSERT INTO payments_inbox (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
INSERT INTO hand_inbox (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
INSERT INTO noncoloc_inbox (message_id) SELECT g::text FROM generate_series(1, :preload) g;
-- Frozen and hinted now (VACUUM through the coordinator reaches every shard), so that
-- the first reads in a timed run do not pay for it.
VACUUM (FREEZE, ANALYZE) accounts_1w, payments_inbox_1w, hand_inbox_1w,
                         accounts, payments_inbox, hand_inbox, noncoloc_inbox;

-- ---- stored columns: try_claim_sharded and complete_sharded --------------------------
-- The same payment, answered as an HTTP API would (claimed, duplicate or in_progress,
-- the stored result for a replay), on two workers: pay_ext uses the extension, pay_hand
-- is the hand-written delegated function with a result column of its own.  Their own
-- accounts, so that the effects check above stays exact.
CREATE TABLE stored_accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
SELECT create_distributed_table('stored_accounts', 'id', colocate_with => 'accounts');
SELECT inbox.create_sharded_inbox('keys_inbox', 'account_id', 'bigint');
SELECT create_distributed_table('keys_inbox', 'account_id', colocate_with => 'accounts');
CREATE FUNCTION pay_ext(acct bigint, mid text, amount bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  status inbox.claim_status := inbox.try_claim_sharded('keys_inbox', acct, mid);
BEGIN
  IF status = 'claimed' THEN
    UPDATE stored_accounts SET balance = balance + amount WHERE id = acct;
    PERFORM inbox.complete_sharded('keys_inbox', acct, mid, jsonb_build_object('paid', amount));
  END IF;
  RETURN status;
END $$;
SELECT create_distributed_function('pay_ext(bigint,text,bigint)', '$1', colocate_with := 'accounts');
CREATE TABLE hand_keys (account_id bigint NOT NULL, message_id text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(), result jsonb,
    PRIMARY KEY (account_id, message_id));
SELECT create_distributed_table('hand_keys', 'account_id', colocate_with => 'accounts');
CREATE FUNCTION pay_hand(acct bigint, mid text, amount bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  INSERT INTO hand_keys (account_id, message_id, result)
    VALUES (acct, mid, jsonb_build_object('paid', amount)) ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 1 THEN
    UPDATE stored_accounts SET balance = balance + amount WHERE id = acct;
    RETURN 'claimed';
  END IF;
  RETURN 'duplicate';
END $$;
SELECT create_distributed_function('pay_hand(bigint,text,bigint)', '$1', colocate_with := 'accounts');
INSERT INTO stored_accounts SELECT g, 0 FROM generate_series(1, 1000) g;
INSERT INTO keys_inbox (account_id, message_id, result)
    SELECT 1 + g % 1000, g::text, '{"paid": 1}' FROM generate_series(1, :preload) g;
INSERT INTO hand_keys (account_id, message_id, result)
    SELECT 1 + g % 1000, g::text, '{"paid": 1}' FROM generate_series(1, :preload) g;
VACUUM (FREEZE, ANALYZE) stored_accounts, keys_inbox, hand_keys;

-- ---- dedup_trigger on a distributed table ---------------------------------------
-- Rows inserted through the coordinator into a table co-located with a sharded inbox:
-- sink_ext deduplicates with inbox.dedup_trigger, sink_hand with the PL/pgSQL trigger a
-- user would write (INSERT ... ON CONFLICT DO NOTHING into its own co-located table of
-- seen ids, the row dropped when that inserted nothing).  Both fire on the worker.
SELECT inbox.create_sharded_inbox('sink_seen', 'account_id', 'bigint');
SELECT create_distributed_table('sink_seen', 'account_id', colocate_with => 'accounts');
CREATE TABLE sink_ext (account_id bigint NOT NULL, id text NOT NULL, amount bigint NOT NULL);
SELECT create_distributed_table('sink_ext', 'account_id', colocate_with => 'accounts');
CREATE TABLE hand_sink_seen (account_id bigint NOT NULL, message_id text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (account_id, message_id));
SELECT create_distributed_table('hand_sink_seen', 'account_id', colocate_with => 'accounts');
CREATE TABLE sink_hand (account_id bigint NOT NULL, id text NOT NULL, amount bigint NOT NULL);
SELECT create_distributed_table('sink_hand', 'account_id', colocate_with => 'accounts');
CREATE FUNCTION hand_dedup() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO hand_sink_seen (account_id, message_id) VALUES (NEW.account_id, NEW.id)
    ON CONFLICT DO NOTHING;
  IF FOUND THEN
    RETURN NEW;
  END IF;
  RETURN NULL;
END $$;
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER sink_ext_dedup BEFORE INSERT ON sink_ext
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('sink_seen', 'id');
CREATE TRIGGER sink_hand_dedup BEFORE INSERT ON sink_hand
    FOR EACH ROW EXECUTE FUNCTION hand_dedup();
RESET citus.enable_unsafe_triggers;
INSERT INTO sink_seen (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
INSERT INTO hand_sink_seen (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
VACUUM (FREEZE, ANALYZE) sink_seen, hand_sink_seen;

-- ---- upsert and transition on distributed tables ----------------------------------
-- Delegated functions that write one row of a distributed table: cw_upsert_ext calls
-- inbox.upsert and cw_move_ext inbox.transition_key; cw_upsert_hand and cw_move_hand
-- are the statements written by hand (INSERT ... ON CONFLICT DO UPDATE ... WHERE
-- IS DISTINCT FROM; the guarded UPDATE).  Rows 1..100000 start PENDING.
CREATE TABLE cw_ext (id bigint PRIMARY KEY, status text NOT NULL, amount int,
                     state text NOT NULL DEFAULT 'PENDING');
SELECT create_distributed_table('cw_ext', 'id', colocate_with => 'accounts');
CREATE TABLE cw_hand (id bigint PRIMARY KEY, status text NOT NULL, amount int,
                      state text NOT NULL DEFAULT 'PENDING');
SELECT create_distributed_table('cw_hand', 'id', colocate_with => 'accounts');
INSERT INTO cw_ext (id, status, amount) SELECT g, 'NEW', 50 FROM generate_series(1, 100000) g;
INSERT INTO cw_hand (id, status, amount) SELECT g, 'NEW', 50 FROM generate_series(1, 100000) g;
CREATE FUNCTION cw_upsert_ext(rid bigint, amt int) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN inbox.upsert('cw_ext', jsonb_build_object('id', rid, 'status', 'PAID', 'amount', amt));
END $$;
CREATE FUNCTION cw_upsert_hand(rid bigint, amt int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  INSERT INTO cw_hand AS t (id, status, amount) VALUES (rid, 'PAID', amt)
    ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, amount = EXCLUDED.amount
    WHERE (t.status, t.amount) IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.amount);
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN CASE WHEN n = 1 THEN 'written' ELSE 'unchanged' END;
END $$;
CREATE FUNCTION cw_move_ext(rid bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN inbox.transition_key('cw_ext', rid, 'state', '{PENDING}', 'PAID');
END $$;
CREATE FUNCTION cw_move_hand(rid bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n int;
BEGIN
  UPDATE cw_hand SET state = 'PAID' WHERE id = rid AND state = 'PENDING';
  GET DIAGNOSTICS n = ROW_COUNT;
  RETURN CASE WHEN n = 1 THEN 'moved' ELSE 'already' END;
END $$;
SELECT create_distributed_function('cw_upsert_ext(bigint,int)', '$1', colocate_with := 'accounts');
SELECT create_distributed_function('cw_upsert_hand(bigint,int)', '$1', colocate_with := 'accounts');
SELECT create_distributed_function('cw_move_ext(bigint)', '$1', colocate_with := 'accounts');
SELECT create_distributed_function('cw_move_hand(bigint)', '$1', colocate_with := 'accounts');
VACUUM (FREEZE, ANALYZE) cw_ext, cw_hand;

-- ---- batches: claim_apply_many_sharded -------------------------------------------
-- A poll of 10 messages of one account in one delegated call: poll_ext calls
-- inbox.claim_apply_many_sharded, whose statement adds the number of fresh ids to the
-- balance; poll_hand is the delegated function a user would write (INSERT ... SELECT
-- unnest ... ON CONFLICT DO NOTHING in key order, then the UPDATE by the number of
-- rows it inserted).  That number comes from RETURNING: on a Citus table the row count
-- of such an INSERT ... SELECT (GET DIAGNOSTICS ... ROW_COUNT) counts the rows the
-- SELECT gave, inserted or not, and a redelivered poll would be paid again.
CREATE TABLE batch_accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
SELECT create_distributed_table('batch_accounts', 'id', colocate_with => 'accounts');
CREATE TABLE hand_batch_accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
SELECT create_distributed_table('hand_batch_accounts', 'id', colocate_with => 'accounts');
SELECT inbox.create_sharded_inbox('batch_inbox', 'account_id', 'bigint');
SELECT create_distributed_table('batch_inbox', 'account_id', colocate_with => 'accounts');
CREATE TABLE hand_batch (account_id bigint NOT NULL, message_id text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (account_id, message_id));
SELECT create_distributed_table('hand_batch', 'account_id', colocate_with => 'accounts');
CREATE FUNCTION poll_ext(acct bigint, ids text[]) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FILTER (WHERE outcome = 'applied')
            FROM inbox.claim_apply_many_sharded('batch_inbox', acct, ids,
                   'UPDATE batch_accounts SET balance = balance + cardinality($1) WHERE id = $2[1]',
                   array_fill(acct, ARRAY[cardinality(ids)])));
END $$;
CREATE FUNCTION poll_hand(acct bigint, ids text[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  WITH fresh AS (INSERT INTO hand_batch (account_id, message_id)
                   SELECT acct, u FROM unnest(ids) u ORDER BY 2 ON CONFLICT DO NOTHING RETURNING 1)
  SELECT count(*) INTO n FROM fresh;
  IF n > 0 THEN
    UPDATE hand_batch_accounts SET balance = balance + n WHERE id = acct;
  END IF;
  RETURN n;
END $$;
SELECT create_distributed_function('poll_ext(bigint,text[])', '$1', colocate_with := 'accounts');
SELECT create_distributed_function('poll_hand(bigint,text[])', '$1', colocate_with := 'accounts');
INSERT INTO batch_accounts SELECT g, 0 FROM generate_series(1, 1000) g;
INSERT INTO hand_batch_accounts SELECT g, 0 FROM generate_series(1, 1000) g;
INSERT INTO batch_inbox (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
INSERT INTO hand_batch (account_id, message_id)
    SELECT 1 + g % 1000, g::text FROM generate_series(1, :preload) g;
VACUUM (FREEZE, ANALYZE) batch_accounts, hand_batch_accounts, batch_inbox, hand_batch;

-- ---- failures: record_failure_sharded ---------------------------------------------
-- A failed delivery recorded in a delegated function: fail_ext calls
-- inbox.record_failure_sharded on an inbox with failures tables (distribute_failures);
-- fail_hand is what a user would write: a look at the claim (applied meanwhile?), the
-- attempt counted in a co-located table, and at the fifth a claim that holds the
-- message, so that no delivery runs it.  Citus refuses now() in an ON CONFLICT's SET,
-- so the hand-written one passes the time as a variable.
SELECT inbox.create_sharded_inbox('fail_inbox', 'account_id', 'bigint');
SELECT create_distributed_table('fail_inbox', 'account_id', colocate_with => 'accounts');
SELECT inbox.distribute_failures('fail_inbox');
CREATE TABLE hand_fail_inbox (account_id bigint NOT NULL, message_id text NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (account_id, message_id));
SELECT create_distributed_table('hand_fail_inbox', 'account_id', colocate_with => 'accounts');
CREATE TABLE hand_failures (account_id bigint NOT NULL, message_id text NOT NULL,
    attempts int NOT NULL, last_error text NOT NULL,
    first_failed_at timestamptz NOT NULL DEFAULT now(), last_failed_at timestamptz NOT NULL DEFAULT now(),
    quarantined_at timestamptz, PRIMARY KEY (account_id, message_id));
SELECT create_distributed_table('hand_failures', 'account_id', colocate_with => 'accounts');
CREATE FUNCTION fail_ext(acct bigint, mid text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT f.status FROM inbox.record_failure_sharded('fail_inbox', acct, mid, 'boom') f);
END $$;
CREATE FUNCTION fail_hand(acct bigint, mid text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := now();
  claimed timestamptz;
  n int;
BEGIN
  SELECT claimed_at INTO claimed FROM hand_fail_inbox WHERE account_id = acct AND message_id = mid;
  IF FOUND THEN
    RETURN CASE WHEN claimed = 'infinity' THEN 'quarantined' ELSE 'applied' END;
  END IF;
  INSERT INTO hand_failures AS f (account_id, message_id, attempts, last_error)
       VALUES (acct, mid, 1, 'boom')
  ON CONFLICT (account_id, message_id) DO UPDATE
     SET attempts = f.attempts + 1, last_error = excluded.last_error, last_failed_at = t
   WHERE f.quarantined_at IS NULL
  RETURNING attempts INTO n;
  IF n IS NULL THEN
    RETURN 'quarantined';
  ELSIF n < 5 THEN
    RETURN 'retry';
  END IF;
  INSERT INTO hand_fail_inbox (account_id, message_id, claimed_at) VALUES (acct, mid, 'infinity');
  UPDATE hand_failures SET quarantined_at = t WHERE account_id = acct AND message_id = mid;
  RETURN 'quarantined';
END $$;
SELECT create_distributed_function('fail_ext(bigint,text)', '$1', colocate_with := 'accounts');
SELECT create_distributed_function('fail_hand(bigint,text)', '$1', colocate_with := 'accounts');
