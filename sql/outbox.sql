-- Outboxes: create_outbox, emit and emit_bytes in the producer's transaction,
-- the relay's take, ack and release, purge, and every error with its SQLSTATE.
\set VERBOSITY default
SELECT inbox.create_outbox('ob_events');
SELECT table_name, retention FROM inbox.outboxes;
SELECT column_name, data_type FROM information_schema.columns
 WHERE table_name = 'ob_events' ORDER BY ordinal_position;

-- create_outbox's arguments.
SELECT inbox.create_outbox(NULL);
\echo :SQLSTATE
SELECT inbox.create_outbox('ob_events');
\echo :SQLSTATE
SELECT inbox.create_outbox('ob_bad', '-1 day');
\echo :SQLSTATE
SELECT inbox.create_outbox('ob_' || repeat('x', 70));
\echo :SQLSTATE
SELECT inbox.create_outbox('pg_temp.ob_temp');
\echo :SQLSTATE
SELECT inbox.create_outbox('inbox.ob_mine');
\echo :SQLSTATE
SELECT inbox.create_outbox('no_such_schema.ob');
\echo :SQLSTATE
SELECT inbox.create_outbox('ob_forever', NULL);
SELECT table_name, retention FROM inbox.outboxes ORDER BY 1;

-- An event commits or rolls back with the transaction that emits it.
BEGIN;
SELECT inbox.emit('ob_forever', 'payments.captured', 'acct-1', '{"amount": 5}');
ROLLBACK;
SELECT count(*) AS rolled_back FROM ob_forever;
SELECT inbox.emit('ob_events', 'payments.captured', 'acct-1', '{"amount": 5}') AS first;
SELECT inbox.emit('ob_events', 'payments.captured', 'acct-2', '{"amount": 7}',
                  '{"content-type": "application/json"}');
SELECT inbox.emit_bytes('ob_events', 'raw.bytes', NULL, '\x00ff'::bytea);
SELECT inbox.emit('ob_events', 'payments.captured', 'acct-1', '{"amount": 6}');
SELECT event_id, topic, key, payload, payload_bytes, headers, attempts, sent_at
  FROM ob_events ORDER BY event_id;

-- emit's arguments: the event is refused, nothing is written.
SELECT inbox.emit(NULL, 't', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', NULL, NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', '', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', repeat('t', 256), NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', repeat('t', 255), NULL, '{}') > 0 AS longest_topic;
SELECT inbox.emit('ob_events', 't', '', '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', 't', repeat('k', 1025), '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', 't', NULL, '{}', '[1, 2]');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', 't', NULL, '{}', '"text"');
\echo :SQLSTATE
SELECT inbox.emit('ob_events', 't', NULL, NULL, 'null');
\echo :SQLSTATE
-- A null payload is an event without a body.
SELECT inbox.emit('ob_events', 'ping', NULL, NULL) > 0 AS empty_event;
SELECT inbox.emit_bytes('ob_events', 'ping', NULL, NULL) > 0 AS empty_bytes;
BEGIN READ ONLY;
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
ROLLBACK;
-- The long topic and the empty events are not for the relay tests below.
DELETE FROM ob_events WHERE topic NOT IN ('payments.captured', 'raw.bytes');

-- Only outboxes: every other kind of relation is refused before anything is written.
CREATE TABLE ob_plain (a int);
CREATE VIEW ob_view AS SELECT * FROM ob_events;
CREATE TABLE ob_parted (LIKE ob_events) PARTITION BY RANGE (event_id);
CREATE SEQUENCE ob_seq;
CREATE TEMP TABLE ob_temp_copy (LIKE ob_events INCLUDING ALL);
SELECT inbox.emit('ob_plain', 't', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_view', 't', NULL, '{}');
\echo :SQLSTATE
DROP VIEW ob_view;
SELECT inbox.emit('ob_parted', 't', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_seq', 't', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('pg_class', 't', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('inbox.registry', 't', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit('ob_temp_copy', 't', NULL, '{}');
\echo :SQLSTATE
SELECT inbox.emit(0, 't', NULL, '{}');
\echo :SQLSTATE
SELECT * FROM inbox.relay_take('ob_plain');
\echo :SQLSTATE
-- A table made by hand to look like one is not an outbox to the relay.
CREATE TABLE ob_lookalike (LIKE ob_events INCLUDING ALL);
SELECT inbox.emit('ob_lookalike', 't', NULL, '{}') > 0 AS accepted_by_shape;
SELECT * FROM inbox.relay_take('ob_lookalike');
\echo :SQLSTATE

-- The relay: events in order, each key's in order, none leased twice.
SELECT event_id, topic, key, payload, payload_bytes, headers, attempt,
       lease IS NOT NULL AS leased, lease_until > now() AS live
  FROM inbox.relay_take('ob_events', 2);
-- acct-1's second event waits while its first is in flight; raw.bytes has no key.
SELECT event_id, key FROM inbox.relay_take('ob_events', 10);
SELECT event_id, key FROM inbox.relay_take('ob_events', 10);
-- The message id is stable: the source of the outbox and the event id.
SELECT e.event_id,
       md5(r.source::text || '/' || e.event_id)::uuid = t.message_id AS derived
  FROM ob_events e JOIN inbox.outbox_registry r ON r.relid = 'ob_events'::regclass
  JOIN LATERAL (SELECT md5(r.source::text || '/' || e.event_id)::uuid AS message_id) t ON true
 WHERE e.event_id = 1;
SELECT lease AS lease1 FROM ob_events WHERE event_id = 1 \gset
SELECT lease AS lease3 FROM ob_events WHERE event_id = 3 \gset
-- Acknowledge the first lease: acct-1's next event may leave now.
SELECT inbox.relay_ack('ob_events', :'lease1') AS acked;
SELECT inbox.relay_ack('ob_events', :'lease1') AS acked_again;
SELECT event_id, key, attempt FROM inbox.relay_take('ob_events', 10);
SELECT lease AS lease4 FROM ob_events WHERE event_id = 4 \gset
-- Give acct-1's event back: it is taken again, a second attempt.
SELECT inbox.relay_release('ob_events', :'lease4') AS released;
SELECT event_id, key, attempt FROM inbox.relay_take('ob_events', 10);
SELECT lease AS lease4 FROM ob_events WHERE event_id = 4 \gset
-- A release with a delay keeps the event and its key's later events back.
SELECT inbox.emit('ob_events', 'payments.captured', 'acct-1', '{"amount": 8}') AS later \gset
SELECT inbox.relay_release('ob_events', :'lease4', ARRAY[4], '1 hour') AS delayed;
SELECT event_id FROM inbox.relay_take('ob_events', 10);
SELECT event_id, lease IS NULL AS no_lease, lease_until > now() + '50 minutes' AS held_back
  FROM ob_events WHERE event_id = 4;
-- A release names its own lease: another lease's events are left alone.
SELECT inbox.relay_release('ob_events', :'lease3') AS released_other;
SELECT inbox.relay_release('ob_events', gen_random_uuid()) AS released_nothing;
-- An ack of listed events marks them whatever lease holds them: the broker has them.
SELECT inbox.relay_ack('ob_events', gen_random_uuid(), ARRAY[2, 3, 4, 999, NULL]) AS acked_listed;
SELECT inbox.relay_ack('ob_events', gen_random_uuid(), '{}') AS acked_none;
SELECT event_id, key FROM inbox.relay_take('ob_events', 10);
SELECT lease AS lease_later FROM ob_events WHERE event_id = :later \gset
SELECT inbox.relay_ack('ob_events', :'lease_later');
SELECT event_id, key, attempts, lease, lease_until, sent_at IS NOT NULL AS sent
  FROM ob_events ORDER BY event_id;
SELECT count(*) AS nothing_left FROM inbox.relay_take('ob_events');

-- A lease that runs out frees its events for the next take.
SELECT inbox.emit('ob_events', 'payments.captured', 'acct-3', '{"amount": 1}') AS expiring \gset
SELECT :expiring > 0 AS emitted;
SELECT event_id, attempt FROM inbox.relay_take('ob_events', 10, '10 milliseconds');
SELECT pg_sleep(0.05);
SELECT event_id, attempt FROM inbox.relay_take('ob_events', 10);
SELECT inbox.relay_ack('ob_events', gen_random_uuid(), ARRAY[:expiring]);

-- The relay's arguments.
SELECT * FROM inbox.relay_take(NULL);
\echo :SQLSTATE
SELECT * FROM inbox.relay_take('ob_events', NULL);
\echo :SQLSTATE
SELECT * FROM inbox.relay_take('ob_events', 0);
\echo :SQLSTATE
SELECT * FROM inbox.relay_take('ob_events', 10001);
\echo :SQLSTATE
SELECT * FROM inbox.relay_take('ob_events', 10, NULL);
\echo :SQLSTATE
SELECT * FROM inbox.relay_take('ob_events', 10, '0');
\echo :SQLSTATE
SELECT * FROM inbox.relay_take('ob_events', 10, '25 hours');
\echo :SQLSTATE
SELECT inbox.relay_ack('ob_events', NULL);
\echo :SQLSTATE
SELECT inbox.relay_ack(NULL, gen_random_uuid());
\echo :SQLSTATE
SELECT inbox.relay_release('ob_events', NULL);
\echo :SQLSTATE
SELECT inbox.relay_release('ob_events', gen_random_uuid(), NULL, '-1 second');
\echo :SQLSTATE
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM inbox.relay_take('ob_events');
\echo :SQLSTATE
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM inbox.relay_take('ob_events');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM inbox.relay_take('ob_events');
\echo :SQLSTATE
ROLLBACK;
BEGIN READ ONLY;
SELECT inbox.relay_ack('ob_events', gen_random_uuid());
\echo :SQLSTATE
ROLLBACK;

-- Events of the relay's own open transaction are not taken before it commits,
-- nor any after them: the batch ends at the first row the transaction wrote.
BEGIN;
SELECT inbox.emit('ob_events', 'own', NULL, '{}') > 0 AS own;
SELECT count(*) AS own_taken FROM inbox.relay_take('ob_events');
ROLLBACK;
SELECT inbox.emit('ob_events', 'pay', 'acct-9', '{"n": 1}') AS k1 \gset
SELECT inbox.emit('ob_events', 'pay', 'acct-9', '{"n": 2}') AS k2 \gset
BEGIN;
SELECT event_id = :k1 AS first_of_key FROM inbox.relay_take('ob_events', 1);
SELECT inbox.relay_release('ob_events', lease) FROM ob_events WHERE event_id = :k1;
-- Released in this transaction: neither it nor the later event of its key leaves yet.
SELECT count(*) AS taken_before_commit FROM inbox.relay_take('ob_events');
COMMIT;
SELECT event_id = :k1 AS first, event_id = :k2 AS second FROM inbox.relay_take('ob_events');
SELECT inbox.relay_ack('ob_events', gen_random_uuid(), ARRAY[:k1, :k2]) AS acked;

-- A consumer's claim_apply may emit in its statement: effect, claim and event commit together.
SELECT inbox.create_inbox('ob_inbox');
CREATE TABLE ob_balances (account text PRIMARY KEY, balance int NOT NULL);
INSERT INTO ob_balances VALUES ('acct-1', 0);
SELECT inbox.claim_apply('ob_inbox', 'pay-1',
    $$WITH paid AS (UPDATE ob_balances SET balance = balance + $2 WHERE account = $1 RETURNING account)
      SELECT inbox.emit('ob_events', 'receipts.send', account, pg_catalog.jsonb_build_object('paid', $2))
        FROM paid$$, 'acct-1', 10) AS first;
SELECT inbox.claim_apply('ob_inbox', 'pay-1',
    $$WITH paid AS (UPDATE ob_balances SET balance = balance + $2 WHERE account = $1 RETURNING account)
      SELECT inbox.emit('ob_events', 'receipts.send', account, pg_catalog.jsonb_build_object('paid', $2))
        FROM paid$$, 'acct-1', 10) AS redelivered;
SELECT balance FROM ob_balances;
SELECT topic, key, payload FROM ob_events WHERE topic = 'receipts.send';

-- Rights: emit needs INSERT, the relay SELECT and UPDATE; row security applies.
CREATE ROLE ob_producer;
CREATE ROLE ob_relay;
GRANT USAGE ON SCHEMA inbox TO ob_producer, ob_relay;
SET ROLE ob_producer;
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
RESET ROLE;
GRANT INSERT ON ob_events TO ob_producer;
SET ROLE ob_producer;
SELECT inbox.emit('ob_events', 'rights', NULL, '{}') > 0 AS emitted;
SELECT * FROM inbox.relay_take('ob_events');
\echo :SQLSTATE
SELECT inbox.relay_ack('ob_events', gen_random_uuid());
\echo :SQLSTATE
SELECT inbox.drop_outbox('ob_events');
\echo :SQLSTATE
RESET ROLE;
GRANT SELECT, UPDATE ON ob_events TO ob_relay;
ALTER TABLE ob_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY ob_relay_rights ON ob_events TO ob_relay USING (topic <> 'rights');
SET ROLE ob_relay;
-- The policy hides the 'rights' event from this relay; the owner's take sees it.
SELECT count(*) AS visible_to_relay FROM inbox.relay_take('ob_events');
RESET ROLE;
SELECT topic, key FROM inbox.relay_take('ob_events');
ALTER TABLE ob_events DISABLE ROW LEVEL SECURITY;
DROP POLICY ob_relay_rights ON ob_events;
UPDATE ob_events SET sent_at = now(), lease = NULL, lease_until = NULL WHERE sent_at IS NULL;

-- Purge: sent events older than the retention go; unsent ones never do.
SELECT inbox.emit('ob_events', 'unsent', NULL, '{}') > 0 AS unsent;
UPDATE ob_events SET sent_at = now() - '8 days'::interval WHERE event_id <= 3;
UPDATE ob_events SET emitted_at = now() - '30 days'::interval WHERE topic = 'unsent';
SELECT inbox.purge_outbox('ob_events', 2) AS first_batch;
SELECT inbox.purge_outbox('ob_events') AS rest;
SELECT event_id, topic FROM ob_events WHERE event_id <= 3 OR topic = 'unsent' ORDER BY 1;
SELECT inbox.purge_outbox('ob_forever');
\echo :SQLSTATE
SELECT inbox.purge_outbox('ob_events', 0);
\echo :SQLSTATE
SELECT inbox.purge_outbox('ob_events', NULL);
\echo :SQLSTATE
GRANT EXECUTE ON FUNCTION inbox.purge_outbox(regclass, int4) TO ob_relay;
SET ROLE ob_relay;
SELECT inbox.purge_outbox('ob_events');
\echo :SQLSTATE
RESET ROLE;
GRANT DELETE ON ob_events TO ob_relay;
ALTER TABLE ob_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY ob_relay_all ON ob_events TO ob_relay USING (true);
SET ROLE ob_relay;
SELECT inbox.purge_outbox('ob_events');
\echo :SQLSTATE
RESET ROLE;
ALTER TABLE ob_events DISABLE ROW LEVEL SECURITY;

-- Retention: owner only; the purge follows the new window.
SELECT inbox.set_outbox_retention('ob_events', '1 hour');
SELECT inbox.set_outbox_retention('ob_events', '0');
\echo :SQLSTATE
SELECT inbox.set_outbox_retention('ob_plain', '1 hour');
\echo :SQLSTATE
GRANT EXECUTE ON FUNCTION inbox.set_outbox_retention(regclass, interval) TO ob_relay;
SET ROLE ob_relay;
SELECT inbox.set_outbox_retention('ob_events', NULL);
\echo :SQLSTATE
RESET ROLE;
UPDATE ob_events SET sent_at = now() - '2 hours'::interval WHERE sent_at IS NOT NULL;
SELECT inbox.purge_outbox('ob_events') > 0 AS purged_in_new_window;
SELECT retention FROM inbox.outboxes WHERE outbox = 'ob_events'::regclass;

-- The owner may alter the table; the functions then say what is wrong, never guess.
ALTER TABLE ob_events RENAME TO ob_renamed;
SELECT inbox.emit('ob_renamed', 'after.rename', NULL, '{}') > 0 AS emitted_after_rename;
SELECT count(*) FROM inbox.relay_take('ob_renamed') WHERE topic = 'after.rename';
ALTER TABLE ob_renamed RENAME TO ob_events;
ALTER TABLE ob_events ALTER COLUMN key TYPE varchar(100);
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
ALTER TABLE ob_events ALTER COLUMN key TYPE text;
ALTER TABLE ob_events DROP COLUMN headers;
SELECT * FROM inbox.relay_take('ob_events');
\echo :SQLSTATE
ALTER TABLE ob_events ADD COLUMN headers jsonb NOT NULL DEFAULT '{}';
SELECT inbox.emit('ob_events', 'headers.back', NULL, '{}', '{"a": "b"}') > 0 AS emitted;
ALTER TABLE ob_events SET UNLOGGED;
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
ALTER TABLE ob_events SET LOGGED;
ALTER TABLE ob_events DROP CONSTRAINT idempotent_inbox_outbox;
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
ALTER TABLE ob_events ADD CONSTRAINT idempotent_inbox_outbox CHECK (payload IS NULL OR payload_bytes IS NULL);
ALTER TABLE ob_events ALTER COLUMN event_id DROP IDENTITY;
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
ALTER TABLE ob_events ALTER COLUMN event_id ADD GENERATED ALWAYS AS IDENTITY (START 1000);
-- Columns the owner adds are left alone.
ALTER TABLE ob_events ADD COLUMN note text;
SELECT inbox.emit('ob_events', 'with.note', NULL, '{}') > 0 AS emitted;
-- A trigger that skips the insert is an error, not a silent loss.
CREATE FUNCTION ob_skip() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER ob_skip BEFORE INSERT ON ob_events FOR EACH ROW EXECUTE FUNCTION ob_skip();
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
DROP TRIGGER ob_skip ON ob_events;
-- A trigger that emits into its own outbox runs out of stack, with an error.
CREATE FUNCTION ob_echo() RETURNS trigger LANGUAGE plpgsql AS
    $$BEGIN PERFORM inbox.emit(TG_TABLE_NAME::regclass, 'echo', NULL, '{}'); RETURN NEW; END$$;
CREATE TRIGGER ob_echo AFTER INSERT ON ob_events FOR EACH ROW EXECUTE FUNCTION ob_echo();
SET max_stack_depth = '512kB';
\set VERBOSITY terse
SELECT inbox.emit('ob_events', 't', NULL, '{}');
\echo :SQLSTATE
\set VERBOSITY default
RESET max_stack_depth;
DROP TRIGGER ob_echo ON ob_events;
-- A trigger that takes from the outbox it fires on sees only committed events.
CREATE FUNCTION ob_take() RETURNS trigger LANGUAGE plpgsql AS
    $$BEGIN PERFORM inbox.relay_take(TG_TABLE_NAME::regclass); RETURN NEW; END$$;
CREATE TRIGGER ob_take AFTER INSERT ON ob_events FOR EACH ROW EXECUTE FUNCTION ob_take();
SELECT inbox.emit('ob_events', 'taken.by.trigger', NULL, '{}') > 0 AS emitted;
SELECT attempts FROM ob_events WHERE topic = 'taken.by.trigger';
DROP TRIGGER ob_take ON ob_events;

-- Dropping: owner only; the registry row goes with the table, however it is dropped.
GRANT EXECUTE ON FUNCTION inbox.drop_outbox(regclass) TO ob_relay;
SET ROLE ob_relay;
SELECT inbox.drop_outbox('ob_events');
\echo :SQLSTATE
RESET ROLE;
SELECT inbox.drop_outbox('ob_plain');
\echo :SQLSTATE
SELECT inbox.drop_outbox('ob_events');
DROP TABLE ob_forever;
SELECT count(*) AS outboxes_left FROM inbox.outbox_registry;
SELECT inbox.drop_inbox('ob_inbox');
DROP TABLE ob_plain, ob_lookalike, ob_parted, ob_balances CASCADE;
DROP SEQUENCE ob_seq;
DROP FUNCTION ob_skip(), ob_echo(), ob_take();
REVOKE USAGE ON SCHEMA inbox FROM ob_producer, ob_relay;
REVOKE ALL ON FUNCTION inbox.purge_outbox(regclass, int4) FROM ob_relay;
REVOKE ALL ON FUNCTION inbox.set_outbox_retention(regclass, interval) FROM ob_relay;
REVOKE ALL ON FUNCTION inbox.drop_outbox(regclass) FROM ob_relay;
DROP ROLE ob_producer;
DROP ROLE ob_relay;
