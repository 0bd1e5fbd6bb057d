-- The whole update chain: 0.1, with data in every table the extension knows about,
-- updated to 0.2 and then to the default version, has exactly the member objects of
-- a fresh install of the default version (in a database of its own, so that no
-- earlier test's grants count) and keeps every row.
\set SHOW_CONTEXT never
\set VERBOSITY default

-- One line per fact about the extension: each member object with its definition,
-- owner and ACL (functions, tables with columns, constraints and indexes, views with
-- their options, sequences, enums, the schema, the event trigger), comments, initial
-- privileges, and the pg_extension row.  Run in both databases and compared.
SELECT $describe$
WITH ext AS (
  SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'idempotent_inbox'),
members AS (
  SELECT d.classid, d.objid, d.objsubid
    FROM pg_catalog.pg_depend d, ext
   WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.refobjid = ext.oid
     AND d.deptype = 'e')
SELECT 'member ' || pg_describe_object(m.classid, m.objid, m.objsubid) || ' | ' || coalesce(CASE m.classid
  WHEN 'pg_catalog.pg_proc'::regclass THEN
    (SELECT concat_ws(' | ', pg_get_functiondef(p.oid), 'acl ' || coalesce(p.proacl::text, 'default'),
                      'owner ' || p.proowner::regrole::text)
       FROM pg_catalog.pg_proc p WHERE p.oid = m.objid)
  WHEN 'pg_catalog.pg_class'::regclass THEN
    (SELECT concat_ws(' | ', 'kind ' || c.relkind::text || c.relpersistence::text,
                      'acl ' || coalesce(c.relacl::text, 'default'),
                      'options ' || coalesce(c.reloptions::text, 'none'),
                      'owner ' || c.relowner::regrole::text,
                      CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END,
                      (SELECT string_agg(a.attnum || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                         || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                                         || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''),
                                         ', ' ORDER BY a.attnum)
                         FROM pg_catalog.pg_attribute a
                         LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                      (SELECT string_agg(co.conname || ' ' || pg_get_constraintdef(co.oid), ', ' ORDER BY co.conname)
                         FROM pg_catalog.pg_constraint co WHERE co.conrelid = c.oid),
                      (SELECT string_agg(pg_get_indexdef(i.indexrelid), ', ' ORDER BY 1)
                         FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid),
                      (SELECT string_agg(t.tgname || ' ' || pg_get_triggerdef(t.oid), ', ' ORDER BY 1)
                         FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid),
                      (SELECT concat_ws(' ', s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmax,
                                        s.seqmin, s.seqcache, s.seqcycle)
                         FROM pg_catalog.pg_sequence s WHERE s.seqrelid = c.oid))
       FROM pg_catalog.pg_class c WHERE c.oid = m.objid)
  WHEN 'pg_catalog.pg_type'::regclass THEN
    (SELECT concat_ws(' | ', 'owner ' || t.typowner::regrole::text, 'acl ' || coalesce(t.typacl::text, 'default'),
                      (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
                         FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid))
       FROM pg_catalog.pg_type t WHERE t.oid = m.objid)
  WHEN 'pg_catalog.pg_namespace'::regclass THEN
    (SELECT concat_ws(' | ', 'owner ' || n.nspowner::regrole::text, 'acl ' || coalesce(n.nspacl::text, 'default'))
       FROM pg_catalog.pg_namespace n WHERE n.oid = m.objid)
  WHEN 'pg_catalog.pg_event_trigger'::regclass THEN
    (SELECT concat_ws(' | ', e.evtevent, e.evtfoid::regprocedure::text, e.evtenabled::text, e.evttags::text,
                      'owner ' || e.evtowner::regrole::text)
       FROM pg_catalog.pg_event_trigger e WHERE e.oid = m.objid)
  END, 'not described')
  FROM members m
UNION ALL
SELECT 'comment on ' || pg_describe_object(d.classoid, d.objoid, d.objsubid) || ': ' || d.description
  FROM pg_catalog.pg_description d JOIN members m ON m.classid = d.classoid AND m.objid = d.objoid
UNION ALL
SELECT 'initial privileges of ' || pg_describe_object(i.classoid, i.objoid, i.objsubid) || ': '
       || i.privtype::text || ' ' || i.initprivs::text
  FROM pg_catalog.pg_init_privs i JOIN members m ON m.classid = i.classoid AND m.objid = i.objoid
UNION ALL
SELECT concat_ws(' | ', 'extension ' || e.extname || ' ' || e.extversion, 'schema ' || e.extnamespace::regnamespace::text,
                 'relocatable ' || e.extrelocatable, 'owner ' || e.extowner::regrole::text,
                 'config ' || e.extconfig::regclass[]::text, 'conditions ' || e.extcondition::text)
  FROM pg_catalog.pg_extension e WHERE e.extname = 'idempotent_inbox'
UNION ALL
SELECT 'extension depends on ' || pg_describe_object(d.refclassid, d.refobjid, d.refobjsubid) || ' (' || d.deptype::text || ')'
  FROM pg_catalog.pg_depend d, ext
 WHERE d.classid = 'pg_catalog.pg_extension'::regclass AND d.objid = ext.oid
$describe$ AS describe \gset

\set regress_db :DBNAME
CREATE DATABASE regress_inbox_fresh;
\c regress_inbox_fresh
CREATE EXTENSION idempotent_inbox;
-- Printed names must not depend on the path.
SET search_path = pg_catalog;
SELECT string_agg(line, E'\x1e' ORDER BY line) AS fresh FROM (:describe) s(line) \gset
SELECT count(*) > 100 AS fresh_described FROM (:describe) s(line);
RESET search_path;
\c :regress_db
DROP DATABASE regress_inbox_fresh;

CREATE DATABASE regress_inbox_upgrade;
\c regress_inbox_upgrade
CREATE EXTENSION idempotent_inbox VERSION '0.1';
SELECT extversion, extnamespace::regnamespace FROM pg_extension WHERE extname = 'idempotent_inbox';

-- Data in 0.1: an inbox of each key type, with claims, fingerprints, results and a
-- lease; a retention; stream positions; a state machine; a dedup trigger.
CREATE SCHEMA app;
SELECT inbox.create_inbox('app.by_text', 'text', '7 days');
SELECT inbox.create_inbox('app.by_uuid', 'uuid');
SELECT inbox.create_inbox('app.by_bigint', 'bigint', '1 day');
SELECT inbox.claim('app.by_text', 'a'), inbox.claim('app.by_text', 'b', inbox.fingerprint('{"x": 1}'));
SELECT inbox.complete('app.by_text', 'b', '{"ok": true}');
SELECT inbox.claim('app.by_uuid', '00000000-0000-0000-0000-000000000001'::uuid);
SELECT count(*) FROM inbox.claim_many('app.by_bigint', ARRAY[1, 2, 3]::bigint[]);
SELECT status, token > 0 AS has_token FROM inbox.acquire('app.by_text', 'lease-1', '1 hour');
SELECT inbox.advance('app.by_bigint', 'orders', 0, 41), inbox.advance('app.by_bigint', 'orders', 1, 7);
CREATE TABLE app.shipments (id int PRIMARY KEY, status text NOT NULL);
INSERT INTO app.shipments VALUES (1, 'PENDING'), (2, 'PAID');
SELECT inbox.guard_transitions('app.shipments', 'status', '{"PENDING": ["PAID"], "PAID": ["SHIPPED"]}');
CREATE TABLE app.sink (id text, body text);
CREATE TRIGGER sink_dedup BEFORE INSERT ON app.sink
    FOR EACH ROW EXECUTE FUNCTION inbox.dedup_trigger('app.by_text', 'id');
INSERT INTO app.sink VALUES ('s1', 'first'), ('s1', 'again');

-- Every row, as it is before the update.
CREATE TABLE app.snapshot AS
SELECT 'registry' AS source, to_jsonb(r) - 'created_at' || jsonb_build_object('created_at', r.created_at::text) AS row
  FROM inbox.registry r
UNION ALL SELECT 'positions', to_jsonb(p) FROM inbox.positions p
UNION ALL SELECT 'by_text', to_jsonb(t) FROM app.by_text t
UNION ALL SELECT 'by_uuid', to_jsonb(t) FROM app.by_uuid t
UNION ALL SELECT 'by_bigint', to_jsonb(t) FROM app.by_bigint t
UNION ALL SELECT 'shipments', to_jsonb(t) FROM app.shipments t
UNION ALL SELECT 'sink', to_jsonb(t) FROM app.sink t
UNION ALL SELECT 'lease_tokens', jsonb_build_object('last_value', last_value) FROM inbox.lease_tokens;
SELECT source, count(*) FROM app.snapshot GROUP BY source ORDER BY source;

-- The update refuses a schema inbox owned by a role that is not a superuser: that
-- role could have put objects there (issue 9, item 2).  Objects in the schema that
-- are not the extension's, and grants of CREATE on it, are reported first.
CREATE ROLE regress_inbox_schema_owner;
ALTER SCHEMA inbox OWNER TO regress_inbox_schema_owner;
CREATE TABLE inbox.not_ours (x int);
GRANT CREATE ON SCHEMA inbox TO PUBLIC;
ALTER EXTENSION idempotent_inbox UPDATE TO '0.2';
\echo :SQLSTATE
SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox';
ALTER SCHEMA inbox OWNER TO CURRENT_USER;
REVOKE CREATE ON SCHEMA inbox FROM PUBLIC;

-- An object of someone else's is only reported, and left alone.
ALTER EXTENSION idempotent_inbox UPDATE TO '0.2';
SELECT extversion, extnamespace::regnamespace FROM pg_extension WHERE extname = 'idempotent_inbox';
DROP TABLE inbox.not_ours;

-- 0.2 to 0.3: sharded inboxes; every existing inbox has no shard key.
ALTER EXTENSION idempotent_inbox UPDATE TO '0.3';
SELECT extversion FROM pg_extension WHERE extname = 'idempotent_inbox';
SELECT count(*) AS inboxes, count(shard_key) AS sharded,
       array_agg(DISTINCT max_attempts) AS max_attempts, array_agg(DISTINCT key_ordering) AS key_ordering
  FROM inbox.registry;

-- Exactly the objects of a fresh install: both lists are empty.
SET search_path = pg_catalog;
SELECT line AS only_in_fresh FROM unnest(string_to_array(:'fresh', E'\x1e')) line
EXCEPT SELECT line FROM (:describe) s(line) ORDER BY 1;
SELECT line AS only_in_updated_0_1 FROM (:describe) s(line)
EXCEPT SELECT line FROM unnest(string_to_array(:'fresh', E'\x1e')) line ORDER BY 1;
RESET search_path;

-- Every row kept: both lists are empty.  (shard_key, max_attempts, key_ordering and a
-- position's generation are new, with their defaults: counted above and below.)
CREATE TEMP TABLE after_update AS
SELECT 'registry' AS source, to_jsonb(r) - 'created_at' - 'shard_key' - 'max_attempts' - 'key_ordering' || jsonb_build_object('created_at', r.created_at::text) AS row
  FROM inbox.registry r
UNION ALL SELECT 'positions', to_jsonb(p) - 'generation' FROM inbox.positions p
UNION ALL SELECT 'by_text', to_jsonb(t) FROM app.by_text t
UNION ALL SELECT 'by_uuid', to_jsonb(t) FROM app.by_uuid t
UNION ALL SELECT 'by_bigint', to_jsonb(t) FROM app.by_bigint t
UNION ALL SELECT 'shipments', to_jsonb(t) FROM app.shipments t
UNION ALL SELECT 'sink', to_jsonb(t) FROM app.sink t
UNION ALL SELECT 'lease_tokens', jsonb_build_object('last_value', last_value) FROM inbox.lease_tokens;
SELECT count(*) AS positions, count(generation) AS with_generation,
       (SELECT count(*) FROM inbox.completed_offsets) AS completed_offsets
  FROM inbox.positions;
SELECT source, row AS lost FROM (SELECT * FROM app.snapshot EXCEPT ALL SELECT * FROM after_update) s ORDER BY 1, 2;
SELECT source, row AS gained FROM (SELECT * FROM after_update EXCEPT ALL SELECT * FROM app.snapshot) s ORDER BY 1, 2;

-- And everything still works on the kept data.
SELECT inbox.claim('app.by_text', 'a') AS dup_a, inbox.claim('app.by_text', 'c') AS fresh_c;
SELECT inbox.result('app.by_text', 'b');
SELECT inbox.claim('app.by_uuid', '00000000-0000-0000-0000-000000000001'::uuid) AS dup_uuid;
SELECT m FROM inbox.claim_many('app.by_bigint', ARRAY[3, 4]::bigint[]) m;
SELECT inbox.create_sharded_inbox('app.by_account', 'account_id', 'bigint') AS sharded_inbox;
SELECT inbox.claim_sharded('app.by_account', 7, 'p1') AS fresh, inbox.claim_sharded('app.by_account', 7, 'p1') AS dup;
SELECT status FROM inbox.acquire('app.by_text', 'lease-1', '1 hour');
SELECT inbox.advance('app.by_bigint', 'orders', 0, 41) AS replayed, inbox.position('app.by_bigint', 'orders', 0);
SELECT topic, "partition", "offset" FROM inbox.streams ORDER BY 1, 2;
SELECT table_name, key_type, retention FROM inbox.inboxes ORDER BY 1;
SELECT target, state_column, edges FROM inbox.state_machines;
UPDATE app.shipments SET status = 'SHIPPED' WHERE id = 1;
\echo :SQLSTATE
INSERT INTO app.sink VALUES ('s1', 'third'), ('s2', 'second');
SELECT id, body FROM app.sink ORDER BY 1, 2;
SELECT inbox, oldest_claim IS NOT NULL AS has_oldest FROM inbox.stats ORDER BY inbox::text;

-- The schema is now the extension's: DROP EXTENSION takes it, and the inbox tables
-- stay as user data.
DROP TRIGGER inbox_guard_status ON app.shipments;
DROP TRIGGER sink_dedup ON app.sink;
DROP EXTENSION idempotent_inbox;
SELECT to_regnamespace('inbox') IS NULL AS schema_dropped, count(*) AS text_claims FROM app.by_text;

\c :regress_db
DROP DATABASE regress_inbox_upgrade;
DROP ROLE regress_inbox_schema_owner;
