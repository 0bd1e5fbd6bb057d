-- Idempotency keys as a contract: fingerprints, stored results, fenced leases,
-- retention and purge, the counters and the stats view.  Names, signatures,
-- return types and volatility of every function; the lease_status labels; the
-- token sequence; and who may do what: consumers lease and finish, only an
-- administrator forgets claims (purge, set_retention, drop_inbox).
--
-- Run with pg_prove in a database where pgtap and idempotent_inbox are installed.
-- Everything below, the role included, is rolled back.

BEGIN;
SELECT plan(158);

-- Type names in the expected values are printed the way regtype prints them
-- with this search_path (so the extension's own types show as inbox.lease_status).
SET LOCAL search_path = public;

-- args as regtype prints them; arguments as pg_get_function_arguments prints
-- them, so names, defaults and OUT columns are pinned too.  admin: revoked from
-- PUBLIC.
CREATE TEMP TABLE api (fname name, args name[], returns text, volatility text,
                       admin boolean, arguments text);
INSERT INTO api
SELECT f.fname, replace(f.args::text, 'KEY', k)::name[], f.returns, f.volatility, f.admin,
       replace(f.arguments, 'KEY', k)
  FROM (VALUES
    ('claim', '{regclass,KEY,bytea}', 'boolean', 'volatile', false,
     'inbox regclass, message_id KEY, fingerprint bytea'),
    ('complete', '{regclass,KEY,jsonb}', 'void', 'volatile', false,
     'inbox regclass, message_id KEY, result jsonb'),
    ('result', '{regclass,KEY}', 'jsonb', 'stable', false,
     'inbox regclass, message_id KEY'),
    ('acquire', '{regclass,KEY,interval,bytea,boolean}', 'record', 'volatile', false,
     'inbox regclass, key KEY, lease interval, fingerprint bytea DEFAULT NULL::bytea, '
     'session_bound boolean DEFAULT false, '
     'OUT status inbox.lease_status, OUT token bigint, OUT result jsonb'),
    ('finish', '{regclass,KEY,bigint,jsonb}', 'void', 'volatile', false,
     'inbox regclass, key KEY, token bigint, result jsonb DEFAULT NULL::jsonb'),
    ('release', '{regclass,KEY,bigint}', 'void', 'volatile', false,
     'inbox regclass, key KEY, token bigint')
  ) AS f(fname, args, returns, volatility, admin, arguments)
 CROSS JOIN unnest('{text,uuid,bigint}'::text[]) k;
INSERT INTO api VALUES
  ('fingerprint', '{jsonb}', 'bytea', 'immutable', false, 'payload jsonb'),
  ('set_retention', '{regclass,interval}', 'void', 'volatile', true,
   'inbox regclass, retention interval'),
  ('purge', '{regclass,integer}', 'bigint', 'volatile', true,
   'inbox regclass, batch integer DEFAULT 10000'),
  ('live_counters', '{regclass}', 'record', 'volatile', false,
   'inbox regclass, OUT claims bigint, OUT duplicates bigint, OUT in_progress bigint, '
   'OUT fingerprint_conflicts bigint, OUT takeovers bigint, OUT purged bigint'),
  ('oldest_claim', '{regclass}', 'timestamp with time zone', 'stable', false,
   'inbox regclass');

SELECT is((SELECT count(*) FROM api), 23::bigint, 'the API table lists 23 functions');

-- 23 x 4: existence, return type, argument names and defaults, volatility
SELECT has_function('inbox', fname, args) FROM api ORDER BY fname, args;
SELECT function_returns('inbox', fname, args, returns) FROM api ORDER BY fname, args;
SELECT is(pg_get_function_arguments(p.oid), a.arguments,
          format('inbox.%s(%s) has arguments (%s)', a.fname, array_to_string(a.args, ', '), a.arguments))
  FROM api a
  LEFT JOIN pg_proc p ON p.pronamespace = 'inbox'::regnamespace
                     AND p.proname = a.fname
                     AND array_to_string(p.proargtypes::regtype[], ',') = array_to_string(a.args, ',')
 ORDER BY a.fname, a.args;
SELECT volatility_is('inbox', fname, args, volatility) FROM api ORDER BY fname, args;

SELECT has_enum('inbox', 'lease_status', 'inbox.lease_status exists');
SELECT enum_has_labels('inbox', 'lease_status', '{acquired,in_progress,completed,quarantined}'::name[]);

SELECT has_sequence('inbox', 'lease_tokens', 'fencing tokens come from inbox.lease_tokens');
-- A restored database must go on handing out higher tokens than the dumped ones.
SELECT ok((SELECT 'inbox.lease_tokens'::regclass::oid = ANY (extconfig)
             FROM pg_extension WHERE extname = 'idempotent_inbox'),
          'inbox.lease_tokens is dumped with the data');

SELECT has_view('inbox', 'stats', 'inbox.stats exists');
SELECT columns_are('inbox', 'stats',
                   '{inbox,claims,duplicates,in_progress,fingerprint_conflicts,takeovers,purged,oldest_claim,quarantined,blocked,retried,discarded,forgotten}'::name[]);
SELECT col_type_is('inbox', 'stats', c, t, format('inbox.stats.%s is %s', c, t))
  FROM (VALUES ('inbox', 'regclass'), ('claims', 'bigint'), ('duplicates', 'bigint'),
               ('in_progress', 'bigint'), ('fingerprint_conflicts', 'bigint'),
               ('takeovers', 'bigint'), ('purged', 'bigint'),
               ('oldest_claim', 'timestamp with time zone'), ('quarantined', 'bigint'),
               ('blocked', 'bigint'), ('retried', 'bigint'), ('discarded', 'bigint'),
               ('forgotten', 'bigint')) AS v(c, t)
 ORDER BY c;

-- Privileges, seen by a fresh role, which has exactly what PUBLIC has.
-- as_lessee runs one statement with that role's rights (pgTAP's own
-- bookkeeping needs ours, so no SET ROLE here); outcome_as_lessee turns an
-- error into text, so that an unexpected one fails its test instead of ending
-- the run.
CREATE ROLE inbox_tap_lessee NOLOGIN;
CREATE SCHEMA tapl;
GRANT USAGE ON SCHEMA tapl TO inbox_tap_lessee;
-- With a retention, so that purge gets as far as the table.
SELECT is(inbox.create_inbox('tapl.granted', 'text', '1 hour')::text, 'tapl.granted',
          'an inbox the role may lease in');
SELECT is(inbox.create_inbox('tapl.unreadable')::text, 'tapl.unreadable',
          'an inbox the role may not read');
GRANT INSERT, SELECT, UPDATE ON tapl.granted TO inbox_tap_lessee;
CREATE FUNCTION tapl.as_lessee(sql text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  result text;
BEGIN
  EXECUTE sql INTO result;
  RETURN result;
END
$$;
ALTER FUNCTION tapl.as_lessee(text) OWNER TO inbox_tap_lessee;
CREATE FUNCTION tapl.outcome_as_lessee(sql text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  RETURN tapl.as_lessee(sql);
EXCEPTION WHEN OTHERS THEN
  RETURN format('ERROR %s: %s', SQLSTATE, SQLERRM);
END
$$;

-- 23 + 1: consumers may execute everything but the admin functions
SELECT function_privs_are('inbox', fname, args, 'inbox_tap_lessee',
                          CASE WHEN admin THEN '{}' ELSE '{EXECUTE}' END::name[],
                          format('a plain role %s execute inbox.%s(%s)',
                                 CASE WHEN admin THEN 'may not' ELSE 'may' END,
                                 fname, array_to_string(args, ', ')))
  FROM api ORDER BY fname, args;
SELECT function_privs_are('inbox', 'drop_inbox', '{regclass}', 'inbox_tap_lessee', '{}',
                          'a plain role may not execute inbox.drop_inbox(regclass)');
-- and it is PUBLIC that lacks them, not just this role
SELECT ok(NOT has_function_privilege('public', f, 'EXECUTE'), format('PUBLIC may not execute %s', f))
  FROM unnest(ARRAY['inbox.drop_inbox(regclass)', 'inbox.purge(regclass, integer)',
                    'inbox.set_retention(regclass, interval)']) f
 ORDER BY f;
-- acquire draws tokens for its caller: no rights on the sequence are needed
SELECT sequence_privs_are('inbox', 'lease_tokens', 'inbox_tap_lessee', '{}',
                          'a plain role has no privileges on inbox.lease_tokens');
SELECT table_privs_are('inbox', 'stats', 'inbox_tap_lessee', '{SELECT}',
                       'a plain role may read inbox.stats');

-- A lease, finished, then replayed.
SELECT is(tapl.outcome_as_lessee($$SELECT format('%s %s', status, token IS NOT NULL)
                                     FROM inbox.acquire('tapl.granted', 'k1', '1 minute')$$),
          'acquired t', 'a role with INSERT, SELECT and UPDATE on an inbox can acquire a key');
SELECT is(tapl.outcome_as_lessee($$SELECT 'finished' FROM inbox.finish('tapl.granted', 'k1',
                                     (SELECT token FROM tapl.granted WHERE message_id = 'k1'),
                                     '{"charge": "ch_1"}')$$),
          'finished', 'and finish its attempt');
SELECT is(tapl.outcome_as_lessee($$SELECT format('%s %s', status, result)
                                     FROM inbox.acquire('tapl.granted', 'k1', '1 minute')$$),
          'completed {"charge": "ch_1"}', 'and is then told completed, with the stored result');
-- release deletes the row, which UPDATE does not allow
SELECT is(tapl.outcome_as_lessee($$SELECT status::text FROM inbox.acquire('tapl.granted', 'k2', '1 minute')$$),
          'acquired', 'the role acquires a second key');
SELECT throws_ok($$SELECT tapl.as_lessee('SELECT ''released'' FROM inbox.release(''tapl.granted'', ''k2'',
                     (SELECT token FROM tapl.granted WHERE message_id = ''k2''))')$$,
                 '42501', 'permission denied for table granted',
                 'release needs DELETE on the inbox');

-- A claim with a fingerprint and a stored result.
SELECT is(tapl.outcome_as_lessee($$SELECT inbox.claim('tapl.granted', 'm1',
                                     inbox.fingerprint('{"amount": 100}'))::text$$),
          'true', 'the role can claim with a fingerprint');
SELECT is(tapl.outcome_as_lessee($$SELECT 'completed' FROM inbox.complete('tapl.granted', 'm1', '{"id": 7}')$$),
          'completed', 'and store the result of its claim');
SELECT is(tapl.outcome_as_lessee($$SELECT inbox.result('tapl.granted', 'm1')::text$$),
          '{"id": 7}', 'and read it back');

-- The stats view, read by the role: its own inbox is there with its oldest
-- claim, and one it may not read shows no oldest claim instead of failing.
INSERT INTO tapl.unreadable (message_id) VALUES ('u1');
SELECT is(tapl.outcome_as_lessee($$SELECT string_agg(format('%s %s', inbox, oldest_claim IS NOT NULL), ', ' ORDER BY inbox::text)
                                     FROM inbox.stats WHERE inbox::text LIKE 'tapl.%'$$),
          'tapl.granted t, tapl.unreadable f',
          'inbox.stats hides the oldest claim of an inbox the reader may not read');

-- Forgetting claims is for administrators.
SELECT throws_ok($$SELECT tapl.as_lessee('SELECT inbox.purge(''tapl.granted'')::text')$$,
                 '42501', 'permission denied for function purge',
                 'a plain role cannot purge');
SELECT throws_ok($$SELECT tapl.as_lessee('SELECT ''set'' FROM inbox.set_retention(''tapl.granted'', ''1 minute'')')$$,
                 '42501', 'permission denied for function set_retention',
                 'a plain role cannot change a retention');
SELECT throws_ok($$SELECT tapl.as_lessee('SELECT ''dropped'' FROM inbox.drop_inbox(''tapl.granted'')')$$,
                 '42501', 'permission denied for function drop_inbox',
                 'a plain role cannot drop an inbox');
-- Granted purge, the role still needs DELETE on the table.
GRANT EXECUTE ON FUNCTION inbox.purge(regclass, integer) TO inbox_tap_lessee;
SELECT throws_ok($$SELECT tapl.as_lessee('SELECT inbox.purge(''tapl.granted'')::text')$$,
                 '42501', 'permission denied for table granted',
                 'purge runs with the caller''s rights on the table');
GRANT DELETE ON tapl.granted TO inbox_tap_lessee;
INSERT INTO tapl.granted (message_id, claimed_at) VALUES ('expired', now() - interval '2 hours');
SELECT is(tapl.outcome_as_lessee($$SELECT inbox.purge('tapl.granted')::text$$),
          '1', 'with EXECUTE on purge and DELETE on the inbox the role can purge it');
SELECT is((SELECT string_agg(message_id, ',' ORDER BY message_id) FROM tapl.granted),
          'k1,k2,m1', 'purge took the expired claim and kept those inside the window');

SELECT * FROM finish();
ROLLBACK;
