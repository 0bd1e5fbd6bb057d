-- The installed schema, as a contract: names, signatures, return types,
-- volatility and security of every function; the enums; the registry as a
-- configuration table; the shape of an inbox table and that it stays user data;
-- and what a plain role may and may not do.
--
-- Run with pg_prove in a database where pgtap and idempotent_inbox are installed.
-- Everything below, the role included, is rolled back.

BEGIN;
SELECT plan(286);

-- Type names in the expected values are printed the way regtype prints them
-- with this search_path (so the extension's own types show as inbox.outcome).
SET LOCAL search_path = public;

SELECT has_schema('inbox');
SELECT has_table('inbox', 'registry', 'inbox.registry exists');
SELECT has_view('inbox', 'inboxes', 'inbox.inboxes exists');

-- The API.  args are as regtype prints them; arguments are as
-- pg_get_function_arguments prints them, so names and defaults are pinned too.
CREATE TEMP TABLE api (fname name, args name[], returns text, arguments text);
INSERT INTO api VALUES
  ('create_inbox', '{text,regtype,interval}', 'regclass',
   'name text, key_type regtype DEFAULT ''text''::regtype, retention interval DEFAULT NULL::interval'),
  ('drop_inbox', '{regclass}', 'void', 'inbox regclass'),
  ('forget_dropped_inboxes', '{}', 'event_trigger', ''),
  ('claim', '{regclass,text}', 'boolean', 'inbox regclass, message_id text'),
  ('claim', '{regclass,uuid}', 'boolean', 'inbox regclass, message_id uuid'),
  ('claim', '{regclass,bigint}', 'boolean', 'inbox regclass, message_id bigint'),
  ('try_claim', '{regclass,text}', 'inbox.claim_status', 'inbox regclass, message_id text'),
  ('try_claim', '{regclass,uuid}', 'inbox.claim_status', 'inbox regclass, message_id uuid'),
  ('try_claim', '{regclass,bigint}', 'inbox.claim_status', 'inbox regclass, message_id bigint'),
  ('claim_many', '{regclass,text[]}', 'setof text', 'inbox regclass, message_ids text[]'),
  ('claim_many', '{regclass,uuid[]}', 'setof uuid', 'inbox regclass, message_ids uuid[]'),
  ('claim_many', '{regclass,bigint[]}', 'setof bigint', 'inbox regclass, message_ids bigint[]'),
  ('claim_apply', '{regclass,text,text}', 'inbox.outcome',
   'inbox regclass, message_id text, statement text'),
  ('claim_apply', '{regclass,text,text,"\"any\""}', 'inbox.outcome',
   'inbox regclass, message_id text, statement text, VARIADIC args "any"'),
  ('claim_apply', '{regclass,text,text,text[]}', 'inbox.outcome',
   'inbox regclass, message_id text, statement text, VARIADIC args text[]'),
  ('claim_apply', '{regclass,uuid,text}', 'inbox.outcome',
   'inbox regclass, message_id uuid, statement text'),
  ('claim_apply', '{regclass,uuid,text,"\"any\""}', 'inbox.outcome',
   'inbox regclass, message_id uuid, statement text, VARIADIC args "any"'),
  ('claim_apply', '{regclass,uuid,text,text[]}', 'inbox.outcome',
   'inbox regclass, message_id uuid, statement text, VARIADIC args text[]'),
  ('claim_apply', '{regclass,bigint,text}', 'inbox.outcome',
   'inbox regclass, message_id bigint, statement text'),
  ('claim_apply', '{regclass,bigint,text,"\"any\""}', 'inbox.outcome',
   'inbox regclass, message_id bigint, statement text, VARIADIC args "any"'),
  ('claim_apply', '{regclass,bigint,text,text[]}', 'inbox.outcome',
   'inbox regclass, message_id bigint, statement text, VARIADIC args text[]'),
  ('claim_apply_many', '{regclass,text[],text}', 'setof record',
   'inbox regclass, message_ids text[], statement text'),
  ('claim_apply_many', '{regclass,text[],text,"\"any\""}', 'setof record',
   'inbox regclass, message_ids text[], statement text, VARIADIC args "any"'),
  ('claim_apply_many', '{regclass,text[],text,text[]}', 'setof record',
   'inbox regclass, message_ids text[], statement text, VARIADIC args text[]'),
  ('claim_apply_many', '{regclass,uuid[],text}', 'setof record',
   'inbox regclass, message_ids uuid[], statement text'),
  ('claim_apply_many', '{regclass,uuid[],text,"\"any\""}', 'setof record',
   'inbox regclass, message_ids uuid[], statement text, VARIADIC args "any"'),
  ('claim_apply_many', '{regclass,uuid[],text,text[]}', 'setof record',
   'inbox regclass, message_ids uuid[], statement text, VARIADIC args text[]'),
  ('claim_apply_many', '{regclass,bigint[],text}', 'setof record',
   'inbox regclass, message_ids bigint[], statement text'),
  ('claim_apply_many', '{regclass,bigint[],text,"\"any\""}', 'setof record',
   'inbox regclass, message_ids bigint[], statement text, VARIADIC args "any"'),
  ('claim_apply_many', '{regclass,bigint[],text,text[]}', 'setof record',
   'inbox regclass, message_ids bigint[], statement text, VARIADIC args text[]'),
  ('claim_apply_many', '{regclass,text,text}', 'setof record',
   'inbox regclass, message_ids text, statement text'),
  ('claim_apply_many', '{regclass,text,text,"\"any\""}', 'setof record',
   'inbox regclass, message_ids text, statement text, VARIADIC args "any"'),
  ('claim_apply_many', '{regclass,text,text,text[]}', 'setof record',
   'inbox regclass, message_ids text, statement text, VARIADIC args text[]'),
  ('upsert', '{regclass,jsonb,text[],text}', 'inbox.upsert_outcome',
   'target regclass, new_row jsonb, key text[] DEFAULT NULL::text[], version_column text DEFAULT NULL::text'),
  ('upsert_row', '{anyelement,text[],text}', 'inbox.upsert_outcome',
   'new_row anyelement, key text[] DEFAULT NULL::text[], version_column text DEFAULT NULL::text'),
  ('transition', '{regclass,jsonb,text,text[],text}', 'inbox.transition_outcome',
   'target regclass, key jsonb, state_column text, from_states text[], to_state text'),
  ('transition', '{regclass,jsonb,text,text}', 'inbox.transition_outcome',
   'target regclass, key jsonb, state_column text, to_state text'),
  ('transition_key', '{regclass,"\"any\"",text,text[],text}', 'inbox.transition_outcome',
   'target regclass, key "any", state_column text, from_states text[], to_state text'),
  ('transition_key', '{regclass,"\"any\"",text,text}', 'inbox.transition_outcome',
   'target regclass, key "any", state_column text, to_state text');

SELECT is((SELECT count(*) FROM api), 39::bigint, 'the API table lists 39 functions');

-- 39 x 3: existence, return type, argument names and defaults
SELECT has_function('inbox', fname, args) FROM api ORDER BY fname, args;
SELECT function_returns('inbox', fname, args, returns) FROM api ORDER BY fname, args;
SELECT is(pg_get_function_arguments(p.oid), a.arguments,
          format('inbox.%s(%s) has arguments (%s)', a.fname, array_to_string(a.args, ', '), a.arguments))
  FROM api a
  LEFT JOIN pg_proc p ON p.pronamespace = 'inbox'::regnamespace
                     AND p.proname = a.fname
                     AND array_to_string(p.proargtypes::regtype[], ',') = array_to_string(a.args, ',')
 ORDER BY a.fname, a.args;

-- 38: every C function writes, so none may be STABLE or IMMUTABLE (the planner
-- could then fold or skip a call) ...
SELECT volatility_is('inbox', fname, args, 'volatile')
  FROM api WHERE fname <> 'forget_dropped_inboxes' ORDER BY fname, args;
-- ... nor run in a parallel worker, where writes are refused (trigger_arguments,
-- a pure decoder of pg_trigger.tgargs, fingerprint, a digest, and live_counters,
-- a read of shared memory, write nothing)
SELECT is(array_agg(p.oid::regprocedure::text ORDER BY 1), NULL,
          'every function of inbox that writes is PARALLEL UNSAFE')
  FROM pg_proc p
 WHERE p.pronamespace = 'inbox'::regnamespace AND p.proparallel <> 'u'
   AND p.proname NOT IN ('trigger_arguments', 'fingerprint', 'live_counters');

-- 39: the caller's privileges apply everywhere except the event trigger, which
-- must delete registry rows the dropping user cannot write
SELECT isnt_definer('inbox', fname, args)
  FROM api WHERE fname <> 'forget_dropped_inboxes' ORDER BY fname, args;
SELECT is_definer('inbox', 'forget_dropped_inboxes', '{}'::name[]);
SELECT is((SELECT proconfig FROM pg_proc
            WHERE oid = 'inbox.forget_dropped_inboxes()'::regprocedure),
          '{"search_path=pg_catalog, pg_temp"}'::text[],
          'the definer-rights function pins its search_path');

SELECT enum_has_labels('inbox', 'outcome', '{applied,duplicate,quarantined}'::name[]);
SELECT enum_has_labels('inbox', 'claim_status', '{claimed,duplicate,in_progress,quarantined,blocked}'::name[]);

-- pg_dump keeps the registry's rows because it is a configuration table
SELECT ok((SELECT 'inbox.registry'::regclass::oid = ANY (extconfig)
             FROM pg_extension WHERE extname = 'idempotent_inbox'),
          'inbox.registry is a configuration table of the extension');

-- 0.2: the schema belongs to the extension, which made it (a schema someone
-- created beforehand is refused, never adopted), and nothing in it can be
-- captured by an operator someone else defined.
SELECT is((SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox'), '0.3',
          'the installed version is 0.3');
SELECT is((SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'idempotent_inbox'),
          'pg_catalog', 'the extension is recorded in pg_catalog, and creates schema inbox itself');
SELECT ok(EXISTS (SELECT 1 FROM pg_depend d
                   WHERE d.classid = 'pg_namespace'::regclass AND d.objid = 'inbox'::regnamespace
                     AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
                     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'idempotent_inbox')),
          'schema inbox is a member of the extension');
SELECT ok((SELECT r.rolsuper FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner
            WHERE n.oid = 'inbox'::regnamespace),
          'schema inbox is owned by a superuser');
SELECT is(array_agg(c.relname::text ORDER BY c.relname), NULL,
          'every view of inbox is security_barrier')
  FROM pg_class c
 WHERE c.relnamespace = 'inbox'::regnamespace AND c.relkind = 'v'
   AND NOT coalesce('security_barrier=true' = ANY (c.reloptions), false);
SELECT is(array_agg(pg_describe_object(d.classid, d.objid, d.objsubid) || ' uses ' || d.refobjid::regoperator::text
                    ORDER BY 1), NULL,
          'the views and CHECK constraints of inbox use only pg_catalog''s operators')
  FROM pg_depend d
  JOIN pg_operator o ON o.oid = d.refobjid
 WHERE d.refclassid = 'pg_operator'::regclass
   AND o.oprnamespace <> 'pg_catalog'::regnamespace
   AND (d.classid, d.objid) IN (
         SELECT 'pg_rewrite'::regclass, r.oid FROM pg_rewrite r
           JOIN pg_class c ON c.oid = r.ev_class WHERE c.relnamespace = 'inbox'::regnamespace
         UNION ALL
         SELECT 'pg_constraint'::regclass, k.oid FROM pg_constraint k
           JOIN pg_class c ON c.oid = k.conrelid WHERE c.relnamespace = 'inbox'::regnamespace);
-- SQL and PL/pgSQL bodies: no comparison operator outside OPERATOR(pg_catalog.x)
-- (PL/pgSQL's := is an assignment, not an operator).
SELECT is(array_agg(p.oid::regprocedure::text ORDER BY 1), NULL,
          'the SQL and PL/pgSQL functions of inbox write every operator as OPERATOR(pg_catalog.x)')
  FROM pg_proc p
 WHERE p.pronamespace = 'inbox'::regnamespace
   AND p.prolang IN (SELECT oid FROM pg_language WHERE lanname IN ('sql', 'plpgsql'))
   AND regexp_replace(p.prosrc, 'OPERATOR\(pg_catalog\.[^)]+\)', '', 'g') ~ '(<|>|[^:<>!]=)';
SELECT is((SELECT count(*) FROM pg_operator WHERE oprnamespace = 'inbox'::regnamespace), 0::bigint,
          'schema inbox defines no operators');
SELECT is(inbox.edges_or_null('not json'), NULL, 'a guard_trigger''s edges that are not JSON read as NULL');
SELECT is(inbox.edges_or_null('[1]'), NULL, 'edges that are JSON but not an object read as NULL');
SELECT is(inbox.edges_or_null('{"A": ["B"]}'), '{"A": ["B"]}'::jsonb, 'edges that are a JSON object read as jsonb');
SELECT throws_ok($$SELECT inbox.trigger_arguments('\xff00'::bytea, 1::int2)$$, '22021', NULL,
                 'trigger_arguments refuses bytes that are not valid in the database encoding');
SELECT throws_ok($$SELECT inbox.trigger_arguments('\x6100'::bytea, 2::int2)$$, '22P03', NULL,
                 'trigger_arguments refuses a count larger than what the bytes hold');

-- An inbox table of each key type.
CREATE SCHEMA tap;
SELECT is(inbox.create_inbox('tap.by_text')::text, 'tap.by_text', 'create_inbox returns the table');
SELECT is(inbox.create_inbox('tap.by_uuid', 'uuid')::text, 'tap.by_uuid', 'an inbox keyed by uuid');
SELECT is(inbox.create_inbox('tap.by_bigint', 'bigint')::text, 'tap.by_bigint', 'an inbox keyed by bigint');

SELECT col_is_pk('tap', t, 'message_id', format('tap.%s has primary key message_id', t))
  FROM unnest('{by_text,by_uuid,by_bigint}'::name[]) t;
SELECT col_type_is('tap', 'by_text', 'message_id', 'text', 'a text inbox keys on text');
SELECT col_type_is('tap', 'by_uuid', 'message_id', 'uuid', 'a uuid inbox keys on uuid (16 bytes)');
SELECT col_type_is('tap', 'by_bigint', 'message_id', 'bigint', 'a bigint inbox keys on bigint');
SELECT col_type_is('tap', 'by_text', 'claimed_at', 'timestamp with time zone',
                   'claimed_at is a timestamptz');
SELECT col_not_null('tap', 'by_text', 'claimed_at', 'claimed_at is NOT NULL');
SELECT col_default_is('tap', 'by_text', 'claimed_at', 'now()', 'claimed_at defaults to now()');
SELECT is((SELECT relkind::text || relpersistence::text FROM pg_class
            WHERE oid = 'tap.by_text'::regclass),
          'rp', 'an inbox is an ordinary WAL-logged table');
SELECT is((SELECT string_agg(table_name || ' ' || key_type::text, ', ' ORDER BY table_name)
             FROM inbox.inboxes WHERE schema_name = 'tap'),
          'by_bigint bigint, by_text text, by_uuid uuid',
          'inbox.inboxes lists the new inboxes with their key types');

-- User data, not extension members: neither the table nor anything of it
-- (its index, its row type) may carry an extension dependency, or DROP
-- EXTENSION would take the claims with it and pg_dump would skip their rows.
SELECT is((SELECT count(*) FROM pg_depend d
            WHERE d.deptype = 'e'
              AND (d.classid, d.objid) IN (
                    SELECT 'pg_class'::regclass::oid, c.oid FROM pg_class c
                     WHERE c.relnamespace = 'tap'::regnamespace
                    UNION ALL
                    SELECT 'pg_type'::regclass::oid, t.oid FROM pg_type t
                     WHERE t.typnamespace = 'tap'::regnamespace)),
          0::bigint, 'inbox tables, their indexes and row types are not extension members');

-- Privileges, seen by a plain role.  as_worker runs one statement with that
-- role's rights (pgTAP's own bookkeeping needs ours, so no SET ROLE here);
-- outcome_as_worker turns an error into text, so that an unexpected one fails
-- its test instead of ending the run.
CREATE ROLE inbox_tap_worker NOLOGIN;
GRANT USAGE ON SCHEMA tap TO inbox_tap_worker;
SELECT is(inbox.create_inbox('tap.granted')::text, 'tap.granted', 'an inbox the role may write');
SELECT is(inbox.create_inbox('tap.denied')::text, 'tap.denied', 'an inbox the role may only read');
-- Claiming reads as well as writes: it tells whether the id was there.
GRANT INSERT, SELECT ON tap.granted TO inbox_tap_worker;
GRANT SELECT ON tap.denied TO inbox_tap_worker;
CREATE TABLE tap.account (id int PRIMARY KEY, balance int NOT NULL);
INSERT INTO tap.account VALUES (1, 100);
GRANT SELECT ON tap.account TO inbox_tap_worker;
CREATE FUNCTION tap.as_worker(sql text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
  result text;
BEGIN
  EXECUTE sql INTO result;
  RETURN result;
END
$$;
ALTER FUNCTION tap.as_worker(text) OWNER TO inbox_tap_worker;
CREATE FUNCTION tap.outcome_as_worker(sql text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  RETURN tap.as_worker(sql);
EXCEPTION WHEN OTHERS THEN
  RETURN format('ERROR %s: %s', SQLSTATE, SQLERRM);
END
$$;

SELECT schema_privs_are('inbox', 'inbox_tap_worker', '{USAGE}',
                        'a plain role may use schema inbox');
SELECT function_privs_are('inbox', fname, args, 'inbox_tap_worker', '{EXECUTE}',
                          format('a plain role may execute inbox.%s(%s)', fname, array_to_string(args, ', ')))
  FROM api WHERE fname NOT IN ('forget_dropped_inboxes', 'drop_inbox') ORDER BY fname, args;
SELECT function_privs_are('inbox', 'forget_dropped_inboxes', '{}', 'inbox_tap_worker', '{}',
                          'a plain role may not execute the event trigger function');
SELECT function_privs_are('inbox', 'drop_inbox', '{regclass}', 'inbox_tap_worker', '{}',
                          'dropping an inbox is for administrators: not granted to PUBLIC');

SELECT is(tap.outcome_as_worker($$SELECT inbox.claim('tap.granted', 'm1')::text$$), 'true',
          'a role with INSERT and SELECT on an inbox can claim in it');
SELECT is(tap.outcome_as_worker($$SELECT inbox.claim('tap.granted', 'm1')::text$$), 'false',
          'and sees its own claim as a duplicate');
SELECT is(tap.outcome_as_worker($$SELECT inbox.try_claim('tap.granted', 'm2')::text$$), 'claimed',
          'a role with INSERT and SELECT on an inbox can try_claim in it');
SELECT is(tap.outcome_as_worker($$SELECT string_agg(m, ',') FROM inbox.claim_many('tap.granted', '{m3,m4}'::text[]) m$$),
          'm3,m4', 'a role with INSERT and SELECT on an inbox can claim_many in it');
SELECT is(tap.outcome_as_worker($$SELECT inbox.claim_apply('tap.granted', 'm5', 'SELECT $1', 1)::text$$),
          'applied', 'a role with INSERT and SELECT on an inbox can claim_apply in it');
SELECT throws_ok($$SELECT tap.as_worker('SELECT inbox.claim(''tap.denied'', ''m1'')::text')$$,
                 '42501', 'permission denied for table denied',
                 'claim needs INSERT on the inbox');
SELECT throws_ok($$SELECT tap.as_worker('SELECT inbox.try_claim(''tap.denied'', ''m1'')::text')$$,
                 '42501', 'permission denied for table denied',
                 'try_claim needs INSERT on the inbox');
SELECT throws_ok($$SELECT tap.as_worker('SELECT count(*)::text FROM inbox.claim_many(''tap.denied'', ''{m1}''::text[])')$$,
                 '42501', 'permission denied for table denied',
                 'claim_many needs INSERT on the inbox');
SELECT throws_ok($$SELECT tap.as_worker('SELECT inbox.claim_apply(''tap.denied'', ''m1'', ''SELECT 1'')::text')$$,
                 '42501', 'permission denied for table denied',
                 'claim_apply needs INSERT on the inbox');
-- the statement runs with the caller's rights: no UPDATE on account, no effect
SELECT throws_ok($$SELECT tap.as_worker('SELECT inbox.claim_apply(''tap.granted'', ''m6'', ''UPDATE tap.account SET balance = balance + $1 WHERE id = 1'', 10)::text')$$,
                 '42501', 'permission denied for table account',
                 'claim_apply runs its statement with the caller''s privileges');
SELECT is(tap.outcome_as_worker($$SELECT count(*)::text FROM inbox.inboxes WHERE schema_name = 'tap'$$),
          '5', 'a plain role can read inbox.inboxes');
SELECT throws_ok($$SELECT tap.as_worker('INSERT INTO inbox.registry (relid, key_type) VALUES (''tap.account'', ''text'') RETURNING 1')$$,
                 '42501', 'permission denied for table registry',
                 'a plain role cannot register a table by writing inbox.registry');
SELECT throws_ok($$SELECT tap.as_worker('DELETE FROM inbox.registry RETURNING 1')$$,
                 '42501', 'permission denied for table registry',
                 'a plain role cannot unregister an inbox by writing inbox.registry');

SELECT * FROM finish();
ROLLBACK;
