-- Issue 9, item 12: the views over everyone's objects (inbox.inboxes, inbox.stats,
-- inbox.streams, inbox.state_machines) keep answering, for every role, when one role
-- has broken one of its objects.  A broken object is skipped or flagged with NULL.
\set SHOW_CONTEXT never

CREATE ROLE regress_views_tenant;
CREATE ROLE regress_views_reader;
CREATE SCHEMA views_tenant AUTHORIZATION regress_views_tenant;
GRANT USAGE ON SCHEMA views_tenant TO regress_views_reader;

-- A healthy inbox of someone else's, readable by the reader.
CREATE SCHEMA views_ok;
GRANT USAGE ON SCHEMA views_ok TO regress_views_reader;
SELECT inbox.create_inbox('views_ok.healthy', 'text');
SELECT inbox.claim('views_ok.healthy', 'h1');
SELECT inbox.advance('views_ok.healthy', 'views', 0, 5);
GRANT SELECT ON views_ok.healthy TO regress_views_reader;

-- The tenant breaks its own inboxes in every way an owner may.
SET ROLE regress_views_tenant;
SELECT inbox.create_inbox('views_tenant.no_pk', 'bigint');
SELECT inbox.create_inbox('views_tenant.key_retyped', 'uuid');
SELECT inbox.create_inbox('views_tenant.claimed_at_retyped', 'text');
SELECT inbox.create_inbox('views_tenant.claimed_at_dropped', 'text');
SELECT inbox.create_inbox('views_tenant.wider_key', 'text');
SELECT inbox.claim('views_tenant.no_pk', 1), inbox.claim('views_tenant.key_retyped', gen_random_uuid()),
       inbox.claim('views_tenant.claimed_at_retyped', 'c'), inbox.claim('views_tenant.claimed_at_dropped', 'd'),
       inbox.claim('views_tenant.wider_key', 'w');
SELECT inbox.advance('views_tenant.no_pk', 'views', 0, 1);
ALTER TABLE views_tenant.no_pk DROP CONSTRAINT no_pk_pkey;
ALTER TABLE views_tenant.key_retyped ALTER COLUMN message_id TYPE text;
ALTER TABLE views_tenant.claimed_at_retyped ALTER COLUMN claimed_at TYPE text;
ALTER TABLE views_tenant.claimed_at_dropped DROP COLUMN claimed_at;
ALTER TABLE views_tenant.wider_key DROP CONSTRAINT wider_key_pkey,
    ADD PRIMARY KEY (message_id, claimed_at);

-- And installs guard_trigger by hand with arguments guard_transitions never writes.
CREATE TABLE views_tenant.machine (id int PRIMARY KEY, state text);
CREATE TRIGGER not_json BEFORE UPDATE ON views_tenant.machine
    FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('state', 'not json');
CREATE TRIGGER not_an_object BEFORE UPDATE ON views_tenant.machine
    FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('state', '["A", "B"]');
CREATE TRIGGER no_arguments BEFORE UPDATE ON views_tenant.machine
    FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger();
CREATE TRIGGER one_argument BEFORE UPDATE ON views_tenant.machine
    FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('state');
CREATE TRIGGER three_arguments BEFORE UPDATE ON views_tenant.machine
    FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('state', '{"A": ["B"]}', 'extra');
CREATE TRIGGER nul_escape BEFORE UPDATE ON views_tenant.machine
    FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger('state', '{"A": ["\u0000"]}');
DO $$
BEGIN
    EXECUTE format('CREATE TRIGGER too_deep BEFORE UPDATE ON views_tenant.machine
                    FOR EACH ROW EXECUTE FUNCTION inbox.guard_trigger(%L, %L)',
                   'state', repeat('[', 200000));
END $$;
SELECT inbox.guard_transitions('views_tenant.machine', 'state', '{"A": ["B"]}');
RESET ROLE;

-- Each view, as a superuser, as the tenant and as a reader with no rights on the
-- tenant's tables.  oldest_claim is NULL for an inbox whose key or claimed_at its
-- owner changed; the counters and the other inboxes are unaffected.
SELECT inbox::text, oldest_claim IS NOT NULL AS has_oldest
  FROM inbox.stats WHERE inbox::text LIKE 'views%' ORDER BY 1;
SELECT table_name, key_type FROM inbox.inboxes WHERE schema_name LIKE 'views%' ORDER BY 1;
SELECT inbox::text, topic, "offset" FROM inbox.streams WHERE topic = 'views' ORDER BY 1;
-- One machine as guard_transitions made it; the others listed with NULLs.
SELECT state_column, edges FROM inbox.state_machines
 WHERE target = 'views_tenant.machine'::regclass ORDER BY 1 NULLS FIRST, 2 NULLS FIRST;
SELECT count(*) AS machines FROM inbox.state_machines WHERE target = 'views_tenant.machine'::regclass;

SET ROLE regress_views_tenant;
SELECT inbox::text, oldest_claim IS NOT NULL AS has_oldest
  FROM inbox.stats WHERE inbox::text LIKE 'views%' ORDER BY 1;
SELECT count(*) AS machines FROM inbox.state_machines WHERE target = 'views_tenant.machine'::regclass;
RESET ROLE;

SET ROLE regress_views_reader;
SELECT inbox::text, oldest_claim IS NOT NULL AS has_oldest
  FROM inbox.stats WHERE inbox::text LIKE 'views%' ORDER BY 1;
SELECT table_name FROM inbox.inboxes WHERE schema_name LIKE 'views%' ORDER BY 1;
SELECT inbox::text, topic, "offset" FROM inbox.streams WHERE topic = 'views' ORDER BY 1;
SELECT count(*) AS machines FROM inbox.state_machines WHERE target = 'views_tenant.machine'::regclass;
RESET ROLE;

-- The guard trigger with bad arguments still refuses moves: a broken machine lets
-- nothing through.
INSERT INTO views_tenant.machine VALUES (1, 'A');
UPDATE views_tenant.machine SET state = 'B';
\echo :SQLSTATE

-- Rows left behind by a table dropped while the event trigger was off are skipped,
-- not an error.
CREATE TABLE views_ok.gone (id int);
SELECT inbox.create_inbox('views_ok.gone_inbox', 'text');
SELECT inbox.advance('views_ok.gone_inbox', 'views', 3, 3);
ALTER EVENT TRIGGER idempotent_inbox_forget_dropped DISABLE;
DROP TABLE views_ok.gone_inbox;
ALTER EVENT TRIGGER idempotent_inbox_forget_dropped ENABLE;
SELECT count(*) AS orphans FROM inbox.registry r WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = r.relid);
SELECT inbox::text, oldest_claim IS NOT NULL AS has_oldest
  FROM inbox.stats WHERE inbox::text LIKE 'views%' OR inbox::text ~ '^[0-9]+$' ORDER BY 1;
SELECT table_name FROM inbox.inboxes WHERE schema_name LIKE 'views%' ORDER BY 1;
SELECT inbox::text, topic, "offset" FROM inbox.streams WHERE topic = 'views' ORDER BY 1;
DELETE FROM inbox.registry r WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = r.relid);
DELETE FROM inbox.positions p WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = p.inbox);

DROP SCHEMA views_tenant CASCADE;
DROP SCHEMA views_ok CASCADE;
DROP ROLE regress_views_tenant;
DROP ROLE regress_views_reader;
