-- Failures, quarantine and per-key ordering as a contract: the functions with
-- their arguments and answers, the tables only the extension writes, the views
-- everyone may read, and which verbs PUBLIC may not call.
--
-- Run with pg_prove in a database where pgtap and idempotent_inbox are installed.

BEGIN;
SELECT plan(135);
SET LOCAL search_path = public;

CREATE TEMP TABLE api (fname name, args name[], returns text);
INSERT INTO api
SELECT f, ARRAY['regclass', k] || extra, r
  FROM (VALUES ('record_failure', '{text,text}'::name[], 'record'),
               ('retry', '{text}', 'boolean'), ('discard', '{text}', 'boolean'),
               ('forget', '{text}', 'boolean'), ('claim_in_order', '{text}', 'inbox.claim_status')) f(f, extra, r),
       unnest('{text,uuid,bigint}'::name[]) k;
-- The _sharded forms take the shard key ("any") before the id.
INSERT INTO api
SELECT fname || '_sharded', ARRAY['regclass', '"any"'] || args[2:], returns FROM api;
INSERT INTO api VALUES ('set_max_attempts', '{regclass,integer}', 'void'),
                       ('set_key_ordering', '{regclass,boolean}', 'void'),
                       ('distribute_failures', '{regclass}', 'void'),
                       ('citus_failures', '{regclass}', 'setof inbox.failures'),
                       ('citus_blocked', '{regclass}', 'setof inbox.blocked'),
                       ('citus_audit_log', '{regclass}', 'setof inbox.audit_log');

SELECT has_function('inbox', fname, args, format('inbox.%s(%s) exists', fname, array_to_string(args, ', ')))
  FROM api ORDER BY fname, args;
SELECT function_returns('inbox', fname, args, returns) FROM api ORDER BY fname, args;
SELECT is((SELECT pg_get_function_arguments(p.oid) FROM pg_proc p
            WHERE p.oid = 'inbox.record_failure(regclass, text, text, text)'::regprocedure),
          'inbox regclass, message_id text, error text, ordering_key text DEFAULT NULL::text, OUT status inbox.failure_status, OUT attempts integer',
          'record_failure takes an optional ordering key and answers status and attempts');
SELECT is((SELECT pg_get_function_arguments(p.oid) FROM pg_proc p
            WHERE p.oid = 'inbox.record_failure_sharded(regclass, "any", text, text, text)'::regprocedure),
          'inbox regclass, shard_key "any", message_id text, error text, ordering_key text DEFAULT NULL::text, OUT status inbox.failure_status, OUT attempts integer',
          'record_failure_sharded takes the shard key before the id');
SELECT enum_has_labels('inbox', 'failure_status', '{retry,quarantined,applied}'::name[]);

-- The operator's verbs and the owner's settings: not for PUBLIC.
SELECT ok(NOT has_function_privilege('public', p.oid, 'EXECUTE'),
          format('PUBLIC may not execute %s', p.oid::regprocedure))
  FROM pg_proc p
 WHERE p.pronamespace = 'inbox'::regnamespace
   AND p.proname IN ('retry', 'discard', 'forget', 'retry_sharded', 'discard_sharded',
                     'forget_sharded', 'set_max_attempts', 'set_key_ordering',
                     'distribute_failures')
 ORDER BY p.oid::regprocedure::text;
SELECT ok(has_function_privilege('public', p.oid, 'EXECUTE'),
          format('PUBLIC may execute %s', p.oid::regprocedure))
  FROM pg_proc p
 WHERE p.pronamespace = 'inbox'::regnamespace
   AND p.proname IN ('record_failure', 'claim_in_order', 'record_failure_sharded', 'claim_in_order_sharded',
                     'citus_failures', 'citus_blocked', 'citus_audit_log')
 ORDER BY p.oid::regprocedure::text;

-- The tables: the extension's, dumped with the data, and closed to PUBLIC.
SELECT has_table('inbox', t, format('inbox.%s exists', t))
  FROM unnest('{failures,blocked,audit_log}'::name[]) t;
SELECT ok((SELECT format('inbox.%s', t)::regclass::oid = ANY (extconfig)
             FROM pg_extension WHERE extname = 'idempotent_inbox'),
          format('inbox.%s is dumped with the data', t))
  FROM unnest('{failures,blocked,audit_log}'::name[]) t;
SELECT ok(NOT has_table_privilege('public', format('inbox.%s', t), 'SELECT, INSERT, UPDATE, DELETE'),
          format('PUBLIC has no rights on inbox.%s', t))
  FROM unnest('{failures,blocked,audit_log}'::name[]) t;
-- One row per message: (inbox, message_id, shard_key), shard_key NULL for an
-- inbox without one, and a NULL equal to a NULL.
SELECT col_is_unique('inbox', t, '{inbox,message_id,shard_key}'::name[], format('one %s row per message', t))
  FROM unnest('{failures,blocked}'::name[]) t;
SELECT ok((SELECT i.indnullsnotdistinct FROM pg_index i
            WHERE i.indrelid = format('inbox.%s', t)::regclass AND i.indisunique),
          format('inbox.%s counts a NULL shard key as one value', t))
  FROM unnest('{failures,blocked}'::name[]) t;
SELECT columns_are('inbox', 'audit_log',
                   '{inbox,message_id,shard_key,verb,actor,reason,done_at,attempts,last_error}'::name[]);

-- The views: readable by everyone, filtered by the right to read the inbox.
SELECT has_view('inbox', v, format('inbox.%s exists', v)) FROM unnest('{quarantine,audit}'::name[]) v;
SELECT ok(has_table_privilege('public', format('inbox.%s', v), 'SELECT'),
          format('PUBLIC may read inbox.%s', v))
  FROM unnest('{quarantine,audit}'::name[]) v;
SELECT columns_are('inbox', 'quarantine',
                   '{inbox,message_id,shard_key,ordering_key,state,position,blocked_by,attempts,last_error,first_failed_at,last_failed_at,quarantined_at,first_blocked_at,deliveries}'::name[]);
SELECT columns_are('inbox', 'audit',
                   '{inbox,message_id,shard_key,verb,actor,reason,done_at,attempts,last_error}'::name[]);
SELECT has_column('inbox', 'inboxes', c, format('inbox.inboxes shows %s', c))
  FROM unnest('{max_attempts,key_ordering}'::name[]) c;
SELECT col_default_is('inbox', 'registry', 'max_attempts', '5', 'an inbox quarantines at the fifth failure by default');
SELECT col_default_is('inbox', 'registry', 'key_ordering', 'false', 'claims are not ordered by key by default');

SELECT * FROM finish();
ROLLBACK;
