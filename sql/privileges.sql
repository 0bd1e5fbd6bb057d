-- The privilege matrix: every function that takes an inbox, called by a role with
-- exactly the rights it documents, with each one of them missing, and with none,
-- on an absent, a live and a completed key.  Missing rights are 42501 before
-- anything is read: the answer must not depend on the key.
CREATE ROLE regress_priv_owner;
CREATE ROLE regress_priv_user;
GRANT CREATE ON SCHEMA public TO regress_priv_owner;
GRANT EXECUTE ON FUNCTION inbox.purge(regclass, integer),
    inbox.set_retention(regclass, interval), inbox.drop_inbox(regclass) TO regress_priv_user;

SET ROLE regress_priv_owner;
SELECT inbox.create_inbox('priv_inbox', retention => '1 day');
SELECT inbox.claim('priv_inbox', 'plain');
SELECT status FROM inbox.acquire('priv_inbox', 'live', '1 hour');
SELECT status FROM inbox.acquire('priv_inbox', 'done', '1 hour');
SELECT inbox.finish('priv_inbox', 'done', token, '{"secret": "card 4242"}')
  FROM priv_inbox WHERE message_id = 'done';
SELECT inbox.advance('priv_inbox', 'topic', 0, 5);
RESET ROLE;

-- Run stmt as regress_priv_user holding exactly rights on the inbox; report
-- 'ok: <answer>' or the SQLSTATE.  Every call is rolled back.
CREATE FUNCTION priv_try(rights text, stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    answer text;
BEGIN
    REVOKE ALL ON priv_inbox FROM regress_priv_user;
    IF rights <> '' THEN
        EXECUTE format('GRANT %s ON priv_inbox TO regress_priv_user', rights);
    END IF;
    BEGIN
        SET LOCAL ROLE regress_priv_user;
        SET LOCAL lock_timeout = '1s';
        EXECUTE stmt INTO answer;
        RAISE EXCEPTION 'ok: %', coalesce(answer, 'null');
    EXCEPTION WHEN OTHERS THEN
        RETURN CASE WHEN SQLERRM LIKE 'ok: %' THEN SQLERRM ELSE SQLSTATE END;
    END;
END $$;

-- priv_inbox has a retention window, so claims need UPDATE as well (an expired
-- claim is renewed in place).
CREATE TEMP TABLE priv_calls (fn text, needs text[], stmt text);
INSERT INTO priv_calls VALUES
  ('claim',          '{INSERT,SELECT,UPDATE}',        $$SELECT inbox.claim('priv_inbox', '%k')::text$$),
  ('claim+fp',       '{INSERT,SELECT,UPDATE}',        $$SELECT inbox.claim('priv_inbox', '%k', inbox.fingerprint('{}'))::text$$),
  ('try_claim',      '{INSERT,SELECT,UPDATE}',        $$SELECT inbox.try_claim('priv_inbox', '%k')::text$$),
  ('claim_many',     '{INSERT,SELECT,UPDATE}',        $$SELECT count(*)::text FROM inbox.claim_many('priv_inbox', ARRAY['%k'])$$),
  ('claim_apply',    '{INSERT,SELECT,UPDATE}',        $$SELECT inbox.claim_apply('priv_inbox', '%k', 'SELECT 1')::text$$),
  ('complete',       '{SELECT,UPDATE}',        $$SELECT inbox.complete('priv_inbox', '%k', '{}')::text$$),
  ('result',         '{SELECT}',               $$SELECT inbox.result('priv_inbox', '%k')::text$$),
  ('acquire',        '{INSERT,SELECT,UPDATE}', $$SELECT status::text FROM inbox.acquire('priv_inbox', '%k', '1 minute')$$),
  ('finish',         '{SELECT,UPDATE}',        $$SELECT inbox.finish('priv_inbox', '%k', 1)::text$$),
  ('release',        '{SELECT,DELETE}',        $$SELECT inbox.release('priv_inbox', '%k', 1)::text$$),
  ('advance',        '{INSERT}',               $$SELECT inbox.advance('priv_inbox', '%k', 0, 9)::text$$),
  ('position',       '{SELECT}',               $$SELECT inbox.position('priv_inbox', 'topic', 0)::text$$),
  ('advance+gen',    '{INSERT}',               $$SELECT inbox.advance('priv_inbox', '%k', 0, 9, 1)::text$$),
  ('claim_offset',   '{INSERT}',               $$SELECT inbox.claim_offset('priv_inbox', '%k', 0, 9)::text$$),
  ('fence',          '{INSERT}',               $$SELECT inbox.fence('priv_inbox', '%k', 0, 1)::text$$),
  ('resume_points',  '{SELECT}',               $$SELECT count(*)::text FROM inbox.resume_points('priv_inbox', 'topic')$$),
  ('purge',          '{SELECT,UPDATE,DELETE}', $$SELECT inbox.purge('priv_inbox')::text$$),
  ('oldest_claim',   '{SELECT}',               $$SELECT (inbox.oldest_claim('priv_inbox') IS NOT NULL)::text$$),
  ('set_retention',  '{OWNER}',                $$SELECT inbox.set_retention('priv_inbox', '2 days')::text$$),
  ('drop_inbox',     '{OWNER}',                $$SELECT inbox.drop_inbox('priv_inbox')::text$$);

-- With exactly the documented rights the call gets past the check (its answer, or
-- an error that is not 42501); with any one missing, or none, it is 42501.
SELECT fn,
       priv_try(array_to_string(array_remove(needs, 'OWNER'), ', '),
                replace(stmt, '%k', 'fresh')) AS with_rights,
       (SELECT string_agg(n || ': ' || priv_try(array_to_string(array_remove(needs, n), ', '),
                                                 replace(stmt, '%k', 'fresh')), ', ')
          FROM unnest(needs) n WHERE n <> 'OWNER') AS one_missing,
       priv_try('', replace(stmt, '%k', 'absent')) AS none_absent,
       priv_try('', replace(stmt, '%k', 'live')) AS none_live,
       priv_try('', replace(stmt, '%k', 'done')) AS none_done
  FROM priv_calls ORDER BY fn;

-- Every right but the ones needed is not enough either.
SELECT fn, priv_try(array_to_string(ARRAY(SELECT r FROM unnest('{SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER}'::text[]) r
                                          WHERE r <> ALL (needs) OR r = needs[1]
                                          EXCEPT SELECT needs[1]), ', '),
                    replace(stmt, '%k', 'done')) AS other_rights
  FROM priv_calls WHERE 'OWNER' <> ALL (needs) ORDER BY fn;

-- Row-level security: functions that answer from stored columns refuse an inbox
-- where a policy applies to the caller; claims apply the policy.
ALTER TABLE priv_inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY priv_own ON priv_inbox USING (message_id LIKE 'mine-%');
SELECT fn, priv_try('SELECT, INSERT, UPDATE, DELETE', replace(stmt, '%k', 'done')) AS under_rls
  FROM priv_calls WHERE 'OWNER' <> ALL (needs) ORDER BY fn;
SELECT priv_try('SELECT, INSERT, UPDATE', $$SELECT inbox.claim('priv_inbox', 'mine-1')::text$$) AS allowed_by_policy;
ALTER TABLE priv_inbox DISABLE ROW LEVEL SECURITY;
DROP POLICY priv_own ON priv_inbox;

-- The inbox's schema must be usable too, as for the SQL the claim stands for.
CREATE SCHEMA priv_schema;
ALTER TABLE priv_inbox SET SCHEMA priv_schema;
SET search_path = public, priv_schema;
SELECT priv_try('SELECT, INSERT, UPDATE', $$SELECT inbox.claim('priv_schema.priv_inbox'::text::regclass, 'x')::text$$) AS by_name,
       priv_try('SELECT, INSERT, UPDATE', format($$SELECT inbox.claim(%s::regclass, 'x')::text$$,
                                                 'priv_schema.priv_inbox'::regclass::oid)) AS by_oid;
RESET search_path;
ALTER TABLE priv_schema.priv_inbox SET SCHEMA public;
DROP SCHEMA priv_schema;

-- Nothing was read or changed by any of the calls above.
SELECT message_id, result FROM priv_inbox ORDER BY 1;

DROP TABLE priv_inbox;
DROP FUNCTION priv_try(text, text);
REVOKE CREATE ON SCHEMA public FROM regress_priv_owner;
REVOKE EXECUTE ON FUNCTION inbox.purge(regclass, integer),
    inbox.set_retention(regclass, interval), inbox.drop_inbox(regclass) FROM regress_priv_user;
DROP ROLE regress_priv_owner, regress_priv_user;
