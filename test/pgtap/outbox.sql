-- Outboxes as a contract: the functions with their arguments and answers, which
-- of them PUBLIC may not call, the registry only the extension writes, and the
-- shape of an outbox table: owned by its creator, permanent, its indexes, and the
-- marker that makes it one.
--
-- Run with pg_prove in a database where pgtap and idempotent_inbox are installed.
-- Everything below, the role included, is rolled back.

BEGIN;
SELECT plan(86);
SET LOCAL search_path = public;

CREATE TEMP TABLE api (fname name, args name[], returns text, arguments text);
INSERT INTO api VALUES
  ('create_outbox', '{text,interval}', 'regclass',
   'name text, retention interval DEFAULT ''7 days''::interval'),
  ('drop_outbox', '{regclass}', 'void', 'outbox regclass'),
  ('set_outbox_retention', '{regclass,interval}', 'void', 'outbox regclass, retention interval'),
  ('emit', '{regclass,text,text,jsonb,jsonb}', 'bigint',
   'outbox regclass, topic text, key text, payload jsonb, headers jsonb DEFAULT NULL::jsonb'),
  ('emit_bytes', '{regclass,text,text,bytea,jsonb}', 'bigint',
   'outbox regclass, topic text, key text, payload bytea, headers jsonb DEFAULT NULL::jsonb'),
  ('relay_take', '{regclass,integer,interval}', 'setof record',
   'outbox regclass, batch_size integer DEFAULT 100, lease_for interval DEFAULT ''00:00:30''::interval, OUT event_id bigint, OUT message_id uuid, OUT topic text, OUT key text, OUT payload jsonb, OUT payload_bytes bytea, OUT headers jsonb, OUT emitted_at timestamp with time zone, OUT attempt integer, OUT lease uuid, OUT lease_until timestamp with time zone'),
  ('relay_ack', '{regclass,uuid,bigint[]}', 'bigint',
   'outbox regclass, lease uuid, event_ids bigint[] DEFAULT NULL::bigint[]'),
  ('relay_release', '{regclass,uuid,bigint[],interval}', 'bigint',
   'outbox regclass, lease uuid, event_ids bigint[] DEFAULT NULL::bigint[], retry_after interval DEFAULT NULL::interval'),
  ('purge_outbox', '{regclass,integer}', 'bigint', 'outbox regclass, batch integer DEFAULT 10000');

-- 9 x 5: existence, return type, arguments, volatility, caller's rights
SELECT has_function('inbox', fname, args, format('inbox.%s(%s) exists', fname, array_to_string(args, ', ')))
  FROM api ORDER BY fname;
SELECT function_returns('inbox', fname, args, returns) FROM api ORDER BY fname;
SELECT is(pg_get_function_arguments(p.oid), a.arguments, format('inbox.%s has arguments (%s)', a.fname, a.arguments))
  FROM api a
  LEFT JOIN pg_proc p ON p.pronamespace = 'inbox'::regnamespace AND p.proname = a.fname
 ORDER BY a.fname;
SELECT volatility_is('inbox', fname, args, 'volatile') FROM api ORDER BY fname;
SELECT isnt_definer('inbox', fname, args) FROM api ORDER BY fname;

-- Dropping an outbox loses its unsent events; retention and purge decide how long
-- sent ones stay: the operator's call, as for inboxes.
SELECT ok(has_function_privilege('public', format('inbox.%s(%s)', fname, array_to_string(args, ','))::regprocedure, 'EXECUTE')
          = (fname NOT IN ('drop_outbox', 'set_outbox_retention', 'purge_outbox')),
          format('PUBLIC %s execute inbox.%s', CASE WHEN fname IN ('drop_outbox', 'set_outbox_retention', 'purge_outbox')
                                                    THEN 'may not' ELSE 'may' END, fname))
  FROM api ORDER BY fname;

-- The registry: the extension's, dumped with the data, readable, not writable.
SELECT has_table('inbox', 'outbox_registry', 'inbox.outbox_registry exists');
SELECT columns_are('inbox', 'outbox_registry', '{relid,source,retention,created_at}'::name[]);
SELECT col_is_pk('inbox', 'outbox_registry', 'relid', 'one registry row per outbox');
SELECT ok((SELECT 'inbox.outbox_registry'::regclass::oid = ANY (extconfig)
             FROM pg_extension WHERE extname = 'idempotent_inbox'),
          'inbox.outbox_registry is dumped with the data');
SELECT ok(has_table_privilege('public', 'inbox.outbox_registry', 'SELECT'), 'PUBLIC may read inbox.outbox_registry');
SELECT ok(NOT has_table_privilege('public', 'inbox.outbox_registry', 'INSERT, UPDATE, DELETE'),
          'PUBLIC may not write inbox.outbox_registry');
SELECT has_view('inbox', 'outboxes', 'inbox.outboxes exists');
SELECT columns_are('inbox', 'outboxes', '{outbox,schema_name,table_name,source,retention,created_at}'::name[]);

-- An outbox as a role with CREATE on a schema makes it: owned by that role.
CREATE ROLE outbox_tap_owner;
CREATE SCHEMA outbox_tap AUTHORIZATION outbox_tap_owner;
GRANT USAGE ON SCHEMA inbox TO outbox_tap_owner;
SET LOCAL ROLE outbox_tap_owner;
SELECT is(inbox.create_outbox('outbox_tap.events', '1 day')::text, 'outbox_tap.events', 'create_outbox returns the table');
RESET ROLE;
SELECT table_owner_is('outbox_tap', 'events', 'outbox_tap_owner', 'the outbox belongs to the role that created it');
SELECT columns_are('outbox_tap', 'events',
                   '{event_id,topic,key,payload,payload_bytes,headers,emitted_at,attempts,lease,lease_until,sent_at}'::name[]);
SELECT col_type_is('outbox_tap', 'events', c, t, format('events.%s is %s', c, t))
  FROM (VALUES ('event_id', 'bigint'), ('topic', 'text'), ('key', 'text'), ('payload', 'jsonb'),
               ('payload_bytes', 'bytea'), ('headers', 'jsonb'),
               ('emitted_at', 'timestamp with time zone'), ('attempts', 'integer'), ('lease', 'uuid'),
               ('lease_until', 'timestamp with time zone'), ('sent_at', 'timestamp with time zone')) v(c, t)
 ORDER BY c;
SELECT col_is_pk('outbox_tap', 'events', 'event_id', 'event_id is the primary key');
SELECT is((SELECT attidentity FROM pg_attribute WHERE attrelid = 'outbox_tap.events'::regclass AND attname = 'event_id'),
          'a', 'event_id is GENERATED ALWAYS AS IDENTITY');
SELECT has_check('outbox_tap', 'events', 'an outbox carries its marker constraint');
SELECT is((SELECT relpersistence FROM pg_class WHERE oid = 'outbox_tap.events'::regclass), 'p',
          'an outbox is a permanent, logged table');
SELECT is((SELECT array_agg(pg_get_indexdef(indexrelid) ORDER BY pg_get_indexdef(indexrelid) COLLATE "C") FROM pg_index
            WHERE indrelid = 'outbox_tap.events'::regclass),
          ARRAY['CREATE INDEX events_event_id_idx ON outbox_tap.events USING btree (event_id) WHERE (sent_at IS NULL)',
                'CREATE INDEX events_key_event_id_idx ON outbox_tap.events USING btree (key, event_id) WHERE ((sent_at IS NULL) AND (key IS NOT NULL))',
                'CREATE INDEX events_sent_at_idx ON outbox_tap.events USING btree (sent_at) WHERE (sent_at IS NOT NULL)',
                'CREATE UNIQUE INDEX events_pkey ON outbox_tap.events USING btree (event_id)'],
          'the pending, per-key and sent indexes, and the primary key');
SELECT is((SELECT retention FROM inbox.outboxes WHERE outbox = 'outbox_tap.events'::regclass), '1 day'::interval,
          'the registry keeps the retention');
SELECT is((SELECT count(*) FROM inbox.outbox_registry WHERE relid = 'outbox_tap.events'::regclass), 1::bigint,
          'the outbox is registered');
-- A plain role may emit into an outbox it may INSERT into, and nothing more.
CREATE ROLE outbox_tap_producer;
GRANT USAGE ON SCHEMA outbox_tap, inbox TO outbox_tap_producer;
GRANT INSERT ON outbox_tap.events TO outbox_tap_producer;
SET LOCAL ROLE outbox_tap_producer;
SELECT lives_ok($$SELECT inbox.emit('outbox_tap.events', 't', 'k', '{}')$$, 'INSERT is all emit needs');
SELECT throws_ok($$SELECT * FROM inbox.relay_take('outbox_tap.events')$$, '42501', NULL,
                 'taking needs SELECT and UPDATE');
RESET ROLE;
DROP TABLE outbox_tap.events;
SELECT is((SELECT count(*) FROM inbox.outbox_registry), 0::bigint, 'DROP TABLE forgets the outbox');

SELECT * FROM finish();
ROLLBACK;
