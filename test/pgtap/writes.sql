-- Naturally idempotent writes, as a contract: the signatures of upsert,
-- transition and the state machine functions, their outcome enums, the
-- inbox.state_machines view, the trigger guard_transitions leaves on a table,
-- and what a plain role may and may not do with them.
--
-- Run with pg_prove in a database where pgtap and idempotent_inbox are installed.
-- Everything below, the roles included, is rolled back.

BEGIN;
SELECT plan(95);

-- Type names in the expected values are printed the way regtype prints them
-- with this search_path (so the extension's own types show as inbox.upsert_outcome).
SET LOCAL search_path = public;

-- The API.  args as regtype prints them; arguments as pg_get_function_arguments
-- prints them, so names and defaults are pinned too.
CREATE TEMP TABLE api (fname name, args name[], returns text, arguments text);
INSERT INTO api VALUES
  ('upsert', '{regclass,jsonb,text[],text}', 'inbox.upsert_outcome',
   'target regclass, new_row jsonb, key text[] DEFAULT NULL::text[], version_column text DEFAULT NULL::text'),
  ('upsert_row', '{anyelement,text[],text}', 'inbox.upsert_outcome',
   'new_row anyelement, key text[] DEFAULT NULL::text[], version_column text DEFAULT NULL::text'),
  ('transition', '{regclass,jsonb,text,text[],text}', 'inbox.transition_outcome',
   'target regclass, key jsonb, state_column text, from_states text[], to_state text'),
  ('transition', '{regclass,jsonb,text,text}', 'inbox.transition_outcome',
   'target regclass, key jsonb, state_column text, to_state text'),
  ('guard_transitions', '{regclass,text,jsonb}', 'void',
   'target regclass, state_column text, edges jsonb'),
  ('unguard_transitions', '{regclass,text}', 'boolean', 'target regclass, state_column text'),
  ('guard_trigger', '{}', 'trigger', ''),
  ('trigger_arguments', '{bytea,smallint}', 'text[]', 'tgargs bytea, tgnargs smallint');

SELECT is((SELECT count(*) FROM api), 8::bigint, 'the API table lists 8 functions');

-- 8 x 3: existence, return type, argument names and defaults
SELECT has_function('inbox', fname, args) FROM api ORDER BY fname, args;
SELECT function_returns('inbox', fname, args, returns) FROM api ORDER BY fname, args;
SELECT is(pg_get_function_arguments(p.oid), a.arguments,
          format('inbox.%s(%s) has arguments (%s)', a.fname, array_to_string(a.args, ', '), a.arguments))
  FROM api a
  LEFT JOIN pg_proc p ON p.pronamespace = 'inbox'::regnamespace
                     AND p.proname = a.fname
                     AND array_to_string(p.proargtypes::regtype[], ',') = array_to_string(a.args, ',')
 ORDER BY a.fname, a.args;

-- 7: the writers are VOLATILE (a STABLE upsert could be folded or skipped) and
-- PARALLEL UNSAFE (a parallel worker cannot write); trigger_arguments only
-- decodes pg_trigger.tgargs for the view, so it may be IMMUTABLE and parallel safe.
SELECT volatility_is('inbox', fname, args, 'volatile')
  FROM api WHERE fname <> 'trigger_arguments' ORDER BY fname, args;
SELECT volatility_is('inbox', 'trigger_arguments', '{bytea,smallint}'::name[], 'immutable');
SELECT is(array_agg(p.oid::regprocedure::text ORDER BY 1), NULL,
          'the writing functions are PARALLEL UNSAFE')
  FROM api a
  JOIN pg_proc p ON p.pronamespace = 'inbox'::regnamespace
                AND p.proname = a.fname
                AND array_to_string(p.proargtypes::regtype[], ',') = array_to_string(a.args, ',')
 WHERE a.fname <> 'trigger_arguments' AND p.proparallel <> 'u';

-- 8: the caller's privileges apply to every write
SELECT isnt_definer('inbox', fname, args) FROM api ORDER BY fname, args;

SELECT enum_has_labels('inbox', 'upsert_outcome', '{inserted,updated,unchanged,stale}'::name[]);
SELECT enum_has_labels('inbox', 'transition_outcome', '{moved,already,rejected,missing}'::name[]);

SELECT has_view('inbox', 'state_machines', 'inbox.state_machines exists');
SELECT col_type_is('inbox', 'state_machines', 'target', 'regclass', 'state_machines.target is a regclass');
SELECT col_type_is('inbox', 'state_machines', 'state_column', 'text', 'state_machines.state_column is text');
SELECT col_type_is('inbox', 'state_machines', 'edges', 'jsonb', 'state_machines.edges is jsonb');
SELECT ok(EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a
                   WHERE c.oid = 'inbox.state_machines'::regclass
                     AND a.grantee = 0 AND a.privilege_type = 'SELECT'),
          'PUBLIC may SELECT from inbox.state_machines');

-- The machine is a trigger on the user's table.
CREATE SCHEMA tap_w;
CREATE TABLE tap_w.orders (id int PRIMARY KEY, state text NOT NULL, "Phase" text, note text);
INSERT INTO tap_w.orders VALUES (1, 'PENDING', 'a', NULL), (2, 'PENDING', 'a', NULL), (3, 'PAID', 'a', NULL);
CREATE TABLE tap_w.items (id int PRIMARY KEY, val text);

SELECT lives_ok($$SELECT inbox.guard_transitions('tap_w.orders', 'state',
                    '{"PENDING": ["PAID", "CANCELLED"], "PAID": ["SHIPPED"]}')$$,
                'guard_transitions installs a machine');
SELECT has_trigger('tap_w', 'orders', 'inbox_guard_state', 'the machine is the trigger inbox_guard_state');
SELECT trigger_is('tap_w', 'orders', 'inbox_guard_state', 'inbox', 'guard_trigger',
                  'inbox_guard_state runs inbox.guard_trigger');
-- BEFORE UPDATE OF the column, per row, with the column and edges as arguments
SELECT is(pg_get_triggerdef(oid),
          'CREATE TRIGGER inbox_guard_state BEFORE UPDATE OF state ON tap_w.orders FOR EACH ROW '
          'EXECUTE FUNCTION inbox.guard_trigger(''state'', ''{"PAID": ["SHIPPED"], "PENDING": ["PAID", "CANCELLED"]}'')',
          'inbox_guard_state fires BEFORE UPDATE OF state FOR EACH ROW with the machine as its arguments')
  FROM pg_trigger WHERE tgrelid = 'tap_w.orders'::regclass AND tgname = 'inbox_guard_state';
SELECT is((SELECT count(*) FROM pg_trigger WHERE tgrelid = 'tap_w.orders'::regclass), 1::bigint,
          'one trigger on the table');
SELECT is((SELECT edges FROM inbox.state_machines WHERE target = 'tap_w.orders'::regclass AND state_column = 'state'),
          '{"PENDING": ["PAID", "CANCELLED"], "PAID": ["SHIPPED"]}'::jsonb,
          'inbox.state_machines shows the machine');
-- User data, like the table: pg_dump keeps it and DROP EXTENSION never drops it silently.
SELECT is((SELECT count(*) FROM pg_depend d JOIN pg_trigger t ON d.objid = t.oid
            WHERE d.classid = 'pg_trigger'::regclass AND d.deptype = 'e'
              AND t.tgrelid = 'tap_w.orders'::regclass),
          0::bigint, 'the trigger is not an extension member');

-- Installing again replaces the machine: still one trigger, new edges.
SELECT lives_ok($$SELECT inbox.guard_transitions('tap_w.orders', 'state', '{"PENDING": ["PAID"]}')$$,
                'guard_transitions runs again on the same column');
SELECT is((SELECT count(*) FROM pg_trigger WHERE tgrelid = 'tap_w.orders'::regclass), 1::bigint,
          'installing again leaves one trigger');
SELECT has_trigger('tap_w', 'orders', 'inbox_guard_state', 'under the same name');
SELECT is((SELECT edges FROM inbox.state_machines WHERE target = 'tap_w.orders'::regclass),
          '{"PENDING": ["PAID"]}'::jsonb, 'with the new edges');

-- A machine per column, named after it as written.
SELECT lives_ok($$SELECT inbox.guard_transitions('tap_w.orders', 'Phase', '{"a": ["b"]}')$$,
                'a machine on a second column');
SELECT has_trigger('tap_w', 'orders', 'inbox_guard_Phase', 'is the trigger inbox_guard_Phase');
SELECT is((SELECT array_agg(state_column ORDER BY state_column) FROM inbox.state_machines
            WHERE target = 'tap_w.orders'::regclass),
          '{Phase,state}'::text[], 'inbox.state_machines lists both');

-- Removing them.
SELECT is(inbox.unguard_transitions('tap_w.orders', 'Phase'), true, 'unguard_transitions returns true');
SELECT hasnt_trigger('tap_w', 'orders', 'inbox_guard_Phase', 'and drops the trigger');
SELECT is(inbox.unguard_transitions('tap_w.orders', 'Phase'), false, 'a second unguard returns false');
SELECT has_trigger('tap_w', 'orders', 'inbox_guard_state', 'the other column keeps its machine');
SELECT is(inbox.unguard_transitions('tap_w.orders', 'state'), true, 'unguard the state column');
SELECT is((SELECT count(*) FROM pg_trigger WHERE tgrelid = 'tap_w.orders'::regclass), 0::bigint,
          'no trigger left on the table');
SELECT is((SELECT count(*) FROM inbox.state_machines WHERE target = 'tap_w.orders'::regclass), 0::bigint,
          'inbox.state_machines no longer lists it');

-- Privileges, seen by plain roles.  as_<role> runs one statement with that
-- role's rights (pgTAP's own bookkeeping needs ours, so no SET ROLE here);
-- outcome_as_writer turns an error into text, so that an unexpected one fails
-- its test instead of ending the run.
SELECT inbox.guard_transitions('tap_w.orders', 'state',
                               '{"PENDING": ["PAID", "CANCELLED"], "PAID": ["SHIPPED"]}');
CREATE ROLE inbox_tap_writer NOLOGIN;
CREATE ROLE inbox_tap_inserter NOLOGIN;
GRANT USAGE ON SCHEMA tap_w TO inbox_tap_writer, inbox_tap_inserter;
-- An upsert is INSERT ... ON CONFLICT DO UPDATE and reads the row first; a
-- transition is an UPDATE that reads the state.
GRANT SELECT, INSERT, UPDATE ON tap_w.orders, tap_w.items TO inbox_tap_writer;
GRANT SELECT, INSERT ON tap_w.orders, tap_w.items TO inbox_tap_inserter;
CREATE FUNCTION tap_w.as_writer(sql text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  result text;
BEGIN
  EXECUTE sql INTO result;
  RETURN result;
END
$$;
ALTER FUNCTION tap_w.as_writer(text) OWNER TO inbox_tap_writer;
CREATE FUNCTION tap_w.as_inserter(sql text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  result text;
BEGIN
  EXECUTE sql INTO result;
  RETURN result;
END
$$;
ALTER FUNCTION tap_w.as_inserter(text) OWNER TO inbox_tap_inserter;
CREATE FUNCTION tap_w.outcome_as_writer(sql text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  RETURN tap_w.as_writer(sql);
EXCEPTION WHEN OTHERS THEN
  RETURN format('ERROR %s: %s', SQLSTATE, SQLERRM);
END
$$;

-- 8: a plain role may call every function of this part
SELECT function_privs_are('inbox', fname, args, 'inbox_tap_writer', '{EXECUTE}',
                          format('a plain role may execute inbox.%s(%s)', fname, array_to_string(args, ', ')))
  FROM api ORDER BY fname, args;

SELECT is(tap_w.outcome_as_writer($$SELECT inbox.upsert('tap_w.items', '{"id": 1, "val": "a"}')::text$$),
          'inserted', 'a role with SELECT, INSERT and UPDATE can upsert a new row');
SELECT is(tap_w.outcome_as_writer($$SELECT inbox.upsert('tap_w.items', '{"id": 1, "val": "a"}')::text$$),
          'unchanged', 'and replay it');
SELECT is(tap_w.outcome_as_writer($$SELECT inbox.upsert('tap_w.items', '{"id": 1, "val": "b"}')::text$$),
          'updated', 'and change it');
SELECT is(tap_w.outcome_as_writer($$SELECT inbox.transition('tap_w.orders', '{"id": 1}', 'state', '{PENDING}', 'PAID')::text$$),
          'moved', 'a role with SELECT, INSERT and UPDATE can transition a row');
SELECT is(tap_w.outcome_as_writer($$SELECT inbox.transition('tap_w.orders', '{"id": 1}', 'state', '{PENDING}', 'PAID')::text$$),
          'already', 'and replay the transition');
SELECT is(tap_w.outcome_as_writer($$SELECT inbox.transition('tap_w.orders', '{"id": 1}', 'state', 'SHIPPED')::text$$),
          'moved', 'and transition by the machine');
SELECT is(tap_w.outcome_as_writer($$SELECT string_agg(state_column, ',') FROM inbox.state_machines WHERE target = 'tap_w.orders'::regclass$$),
          'state', 'a plain role can read inbox.state_machines');

-- Without UPDATE, no write of either kind.
SELECT throws_ok($$SELECT tap_w.as_inserter('SELECT inbox.upsert(''tap_w.items'', ''{"id": 2, "val": "a"}'')::text')$$,
                 '42501', 'permission denied for table items',
                 'upsert needs UPDATE on the table');
SELECT throws_ok($$SELECT tap_w.as_inserter('SELECT inbox.transition(''tap_w.orders'', ''{"id": 2}'', ''state'', ''{PENDING}'', ''PAID'')::text')$$,
                 '42501', 'permission denied for table orders',
                 'transition needs UPDATE on the table');
SELECT throws_ok($$SELECT tap_w.as_inserter('SELECT inbox.transition(''tap_w.orders'', ''{"id": 2}'', ''state'', ''PAID'')::text')$$,
                 '42501', 'permission denied for table orders',
                 'transition by the machine needs UPDATE on the table');

-- Only the owner installs or removes a machine; every writer obeys it.
SELECT throws_ok($$SELECT tap_w.as_writer('SELECT inbox.guard_transitions(''tap_w.orders'', ''state'', ''{}'')::text')$$,
                 '42501', 'must be owner of relation orders',
                 'a role that is not the owner cannot replace a machine');
SELECT throws_ok($$SELECT tap_w.as_writer('SELECT inbox.guard_transitions(''tap_w.orders'', ''note'', ''{}'')::text')$$,
                 '42501', 'permission denied for table orders',
                 'nor install one on another column (no TRIGGER privilege)');
SELECT throws_ok($$SELECT tap_w.as_writer('SELECT inbox.unguard_transitions(''tap_w.orders'', ''state'')::text')$$,
                 '42501', 'must be owner of relation orders',
                 'nor remove one');
SELECT is((SELECT array_agg(tgname ORDER BY tgname) FROM pg_trigger WHERE tgrelid = 'tap_w.orders'::regclass),
          '{inbox_guard_state}'::name[], 'the machine is still in place');
SELECT throws_ok($$SELECT tap_w.as_writer('UPDATE tap_w.orders SET state = ''PENDING'' WHERE id = 3 RETURNING state')$$,
                 '23I01', 'illegal state transition from "PAID" to "PENDING"',
                 'a plain role''s own UPDATE obeys the machine');
SELECT is(tap_w.outcome_as_writer($$UPDATE tap_w.orders SET state = 'CANCELLED' WHERE id = 2 RETURNING state$$),
          'CANCELLED', 'and may make a legal move');
SELECT is((SELECT array_agg(id || ' ' || state ORDER BY id) FROM tap_w.orders),
          '{"1 SHIPPED","2 CANCELLED","3 PAID"}'::text[], 'the rows hold exactly the allowed moves');

SELECT * FROM finish();
ROLLBACK;
