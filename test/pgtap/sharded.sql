-- Sharded inboxes (0.3), as a contract: the signatures of create_sharded_inbox and
-- the _sharded functions (claims, try_claim, stored results, leases), who may call them, the registry's shard_key, and
-- the shape of a sharded inbox table (the primary key Citus needs, the marker
-- constraint Citus copies to its workers).
--
-- Run with pg_prove in a database where pgtap and idempotent_inbox are installed.
-- Everything below, the role included, is rolled back.

BEGIN;
SELECT plan(153);

SET LOCAL search_path = public;

CREATE TEMP TABLE api (fname name, args name[], returns text, arguments text);
INSERT INTO api VALUES
  ('create_sharded_inbox', '{text,text,regtype,regtype,interval}', 'regclass',
   'name text, shard_key text, shard_key_type regtype, key_type regtype DEFAULT ''text''::regtype, retention interval DEFAULT NULL::interval'),
  ('claim_sharded', '{regclass,"\"any\"",text}', 'boolean', 'inbox regclass, shard_key "any", message_id text'),
  ('claim_sharded', '{regclass,"\"any\"",uuid}', 'boolean', 'inbox regclass, shard_key "any", message_id uuid'),
  ('claim_sharded', '{regclass,"\"any\"",bigint}', 'boolean', 'inbox regclass, shard_key "any", message_id bigint'),
  ('claim_apply_sharded', '{regclass,"\"any\"",text,text}', 'inbox.outcome',
   'inbox regclass, shard_key "any", message_id text, statement text'),
  ('claim_apply_sharded', '{regclass,"\"any\"",text,text,"\"any\""}', 'inbox.outcome',
   'inbox regclass, shard_key "any", message_id text, statement text, VARIADIC args "any"'),
  ('claim_apply_sharded', '{regclass,"\"any\"",uuid,text}', 'inbox.outcome',
   'inbox regclass, shard_key "any", message_id uuid, statement text'),
  ('claim_apply_sharded', '{regclass,"\"any\"",uuid,text,"\"any\""}', 'inbox.outcome',
   'inbox regclass, shard_key "any", message_id uuid, statement text, VARIADIC args "any"'),
  ('claim_apply_sharded', '{regclass,"\"any\"",bigint,text}', 'inbox.outcome',
   'inbox regclass, shard_key "any", message_id bigint, statement text'),
  ('claim_apply_sharded', '{regclass,"\"any\"",bigint,text,"\"any\""}', 'inbox.outcome',
   'inbox regclass, shard_key "any", message_id bigint, statement text, VARIADIC args "any"'),
  ('claim_many_sharded', '{regclass,"\"any\"",text[]}', 'setof text',
   'inbox regclass, shard_key "any", message_ids text[]'),
  ('claim_many_sharded', '{regclass,"\"any\"",uuid[]}', 'setof uuid',
   'inbox regclass, shard_key "any", message_ids uuid[]'),
  ('claim_many_sharded', '{regclass,"\"any\"",bigint[]}', 'setof bigint',
   'inbox regclass, shard_key "any", message_ids bigint[]'),
  ('acquire_sharded', '{regclass,"\"any\"",bigint,interval,bytea,boolean}', 'record',
   'inbox regclass, shard_key "any", key bigint, lease interval, fingerprint bytea DEFAULT NULL::bytea, session_bound boolean DEFAULT false, OUT status inbox.lease_status, OUT token bigint, OUT result jsonb'),
  ('acquire_sharded', '{regclass,"\"any\"",text,interval,bytea,boolean}', 'record',
   'inbox regclass, shard_key "any", key text, lease interval, fingerprint bytea DEFAULT NULL::bytea, session_bound boolean DEFAULT false, OUT status inbox.lease_status, OUT token bigint, OUT result jsonb'),
  ('acquire_sharded', '{regclass,"\"any\"",uuid,interval,bytea,boolean}', 'record',
   'inbox regclass, shard_key "any", key uuid, lease interval, fingerprint bytea DEFAULT NULL::bytea, session_bound boolean DEFAULT false, OUT status inbox.lease_status, OUT token bigint, OUT result jsonb'),
  ('claim_sharded', '{regclass,"\"any\"",bigint,bytea}', 'boolean',
   'inbox regclass, shard_key "any", message_id bigint, fingerprint bytea'),
  ('claim_sharded', '{regclass,"\"any\"",text,bytea}', 'boolean',
   'inbox regclass, shard_key "any", message_id text, fingerprint bytea'),
  ('claim_sharded', '{regclass,"\"any\"",uuid,bytea}', 'boolean',
   'inbox regclass, shard_key "any", message_id uuid, fingerprint bytea'),
  ('complete_sharded', '{regclass,"\"any\"",bigint,jsonb}', 'void',
   'inbox regclass, shard_key "any", message_id bigint, result jsonb'),
  ('complete_sharded', '{regclass,"\"any\"",text,jsonb}', 'void',
   'inbox regclass, shard_key "any", message_id text, result jsonb'),
  ('complete_sharded', '{regclass,"\"any\"",uuid,jsonb}', 'void',
   'inbox regclass, shard_key "any", message_id uuid, result jsonb'),
  ('finish_sharded', '{regclass,"\"any\"",bigint,bigint,jsonb}', 'void',
   'inbox regclass, shard_key "any", key bigint, token bigint, result jsonb DEFAULT NULL::jsonb'),
  ('finish_sharded', '{regclass,"\"any\"",text,bigint,jsonb}', 'void',
   'inbox regclass, shard_key "any", key text, token bigint, result jsonb DEFAULT NULL::jsonb'),
  ('finish_sharded', '{regclass,"\"any\"",uuid,bigint,jsonb}', 'void',
   'inbox regclass, shard_key "any", key uuid, token bigint, result jsonb DEFAULT NULL::jsonb'),
  ('release_sharded', '{regclass,"\"any\"",bigint,bigint}', 'void',
   'inbox regclass, shard_key "any", key bigint, token bigint'),
  ('release_sharded', '{regclass,"\"any\"",text,bigint}', 'void',
   'inbox regclass, shard_key "any", key text, token bigint'),
  ('release_sharded', '{regclass,"\"any\"",uuid,bigint}', 'void',
   'inbox regclass, shard_key "any", key uuid, token bigint'),
  ('result_sharded', '{regclass,"\"any\"",bigint}', 'jsonb',
   'inbox regclass, shard_key "any", message_id bigint'),
  ('result_sharded', '{regclass,"\"any\"",text}', 'jsonb',
   'inbox regclass, shard_key "any", message_id text'),
  ('result_sharded', '{regclass,"\"any\"",uuid}', 'jsonb',
   'inbox regclass, shard_key "any", message_id uuid'),
  ('try_claim_sharded', '{regclass,"\"any\"",bigint}', 'inbox.claim_status',
   'inbox regclass, shard_key "any", message_id bigint'),
  ('try_claim_sharded', '{regclass,"\"any\"",text}', 'inbox.claim_status',
   'inbox regclass, shard_key "any", message_id text'),
  ('try_claim_sharded', '{regclass,"\"any\"",uuid}', 'inbox.claim_status',
   'inbox regclass, shard_key "any", message_id uuid'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",bigint[],text}', 'setof record',
   'inbox regclass, shard_key "any", message_ids bigint[], statement text'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",text,text}', 'setof record',
   'inbox regclass, shard_key "any", message_ids text, statement text'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",text[],text}', 'setof record',
   'inbox regclass, shard_key "any", message_ids text[], statement text'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",uuid[],text}', 'setof record',
   'inbox regclass, shard_key "any", message_ids uuid[], statement text'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",bigint[],text,"\"any\""}', 'setof record',
   'inbox regclass, shard_key "any", message_ids bigint[], statement text, VARIADIC args "any"'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",bigint[],text,text[]}', 'setof record',
   'inbox regclass, shard_key "any", message_ids bigint[], statement text, VARIADIC args text[]'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",text,text,"\"any\""}', 'setof record',
   'inbox regclass, shard_key "any", message_ids text, statement text, VARIADIC args "any"'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",text,text,text[]}', 'setof record',
   'inbox regclass, shard_key "any", message_ids text, statement text, VARIADIC args text[]'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",text[],text,"\"any\""}', 'setof record',
   'inbox regclass, shard_key "any", message_ids text[], statement text, VARIADIC args "any"'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",text[],text,text[]}', 'setof record',
   'inbox regclass, shard_key "any", message_ids text[], statement text, VARIADIC args text[]'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",uuid[],text,"\"any\""}', 'setof record',
   'inbox regclass, shard_key "any", message_ids uuid[], statement text, VARIADIC args "any"'),
  ('claim_apply_many_sharded', '{regclass,"\"any\"",uuid[],text,text[]}', 'setof record',
   'inbox regclass, shard_key "any", message_ids uuid[], statement text, VARIADIC args text[]');

-- 46 x 3: existence, return type, argument names and defaults
SELECT has_function('inbox', fname, args) FROM api ORDER BY fname, args;
SELECT function_returns('inbox', fname, args, returns) FROM api ORDER BY fname, args;
SELECT is(pg_get_function_arguments(p.oid), a.arguments,
          format('inbox.%s(%s) has arguments (%s)', a.fname, array_to_string(a.args, ', '), a.arguments))
  FROM api a
  LEFT JOIN pg_proc p ON p.pronamespace = 'inbox'::regnamespace
                     AND p.proname = a.fname
                     AND array_to_string(p.proargtypes::regtype[], ',') = array_to_string(a.args, ',')
 ORDER BY a.fname, a.args;

-- Every one volatile, invoker's rights, and callable by PUBLIC like create_inbox and claim.
SELECT is(array_agg(p.oid::regprocedure::text ORDER BY 1), NULL,
          'the sharded functions are volatile, run with the caller''s rights, and PUBLIC may call them')
  FROM pg_proc p
 WHERE p.pronamespace = 'inbox'::regnamespace
   AND p.proname IN ('create_sharded_inbox', 'claim_sharded', 'claim_apply_sharded', 'claim_many_sharded',
                     'try_claim_sharded', 'complete_sharded', 'result_sharded', 'acquire_sharded',
                     'finish_sharded', 'release_sharded', 'claim_apply_many_sharded')
   AND (p.provolatile <> 'v' OR p.prosecdef OR NOT has_function_privilege('public', p.oid, 'EXECUTE'));

-- The registry and the view say which inboxes are sharded, and by what.
SELECT col_type_is('inbox', 'registry', 'shard_key', 'name', 'inbox.registry.shard_key is a name');
SELECT col_is_null('inbox', 'registry', 'shard_key', 'inbox.registry.shard_key may be NULL: an inbox without one');
SELECT has_column('inbox', 'inboxes', 'shard_key', 'inbox.inboxes shows the shard key');

-- A sharded inbox: the shard key first, then message_id, both in the primary key;
-- the marker; still user data, owned by its creator.
CREATE ROLE regress_pgtap_sharder;
GRANT CREATE ON SCHEMA public TO regress_pgtap_sharder;
SET LOCAL ROLE regress_pgtap_sharder;
SELECT is(inbox.create_sharded_inbox('pgtap_sharded', 'tenant_id', 'uuid', 'bigint', '7 days')::text,
          'pgtap_sharded', 'create_sharded_inbox returns the table');
RESET ROLE;
SELECT col_is_pk('public', 'pgtap_sharded', ARRAY['tenant_id', 'message_id'],
                 'the primary key is (shard key, message_id)');
SELECT col_type_is('public', 'pgtap_sharded', 'tenant_id', 'uuid', 'the shard key has its type');
SELECT col_type_is('public', 'pgtap_sharded', 'message_id', 'bigint', 'message_id has the key type');
SELECT col_not_null('public', 'pgtap_sharded', 'tenant_id', 'the shard key is NOT NULL');
SELECT has_check('public', 'pgtap_sharded', 'the table has the marker');
SELECT is((SELECT pg_get_constraintdef(oid) FROM pg_constraint
            WHERE conrelid = 'pgtap_sharded'::regclass AND conname = 'idempotent_inbox'),
          'CHECK ((message_id IS NOT NULL))', 'the marker is the constraint idempotent_inbox');
SELECT table_owner_is('public', 'pgtap_sharded', 'regress_pgtap_sharder', 'owned by its creator');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_depend WHERE classid = 'pg_class'::regclass
                        AND objid = 'pgtap_sharded'::regclass AND deptype = 'e'),
          'not a member of the extension');
SELECT is((SELECT shard_key::text || ', ' || retention::text FROM inbox.registry
            WHERE relid = 'pgtap_sharded'::regclass),
          'tenant_id, 7 days', 'the registry row names the shard key and keeps the window');
SELECT has_index('public', 'pgtap_sharded', 'pgtap_sharded_claimed_at_idx', 'with a retention, claimed_at is indexed');

SELECT * FROM finish();
ROLLBACK;
