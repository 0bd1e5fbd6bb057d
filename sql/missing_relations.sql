-- Every function that takes a relation, given one that does not exist (OID 0, and
-- the OID of a table dropped a moment ago), as a superuser and as a role without
-- rights: a clear 42P01 or a refusal, never an internal error.  PostgreSQL 16 turned
-- some lookups of a missing relation into internal errors ("cache lookup failed"),
-- which the privilege and ownership checks must not let through.
CREATE ROLE regress_missing_nobody;
CREATE TABLE missing_gone (id int PRIMARY KEY);
SELECT 'missing_gone'::regclass::oid AS gone_oid \gset
DROP TABLE missing_gone;

CREATE OR REPLACE FUNCTION pg_temp.outcome(call text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'SELECT ' || call;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;

CREATE TEMP TABLE calls (call text);
INSERT INTO calls VALUES
  ('inbox.drop_inbox(%s)'), ('inbox.set_retention(%s, ''1 day'')'),
  ('inbox.purge(%s, 10)'), ('inbox.claim(%s, ''m'')'), ('inbox.claim(%s, 1::bigint)'),
  ('inbox.try_claim(%s, ''m'')'), ('inbox.claim_many(%s, ARRAY[''m''])'),
  ('inbox.claim_apply(%s, ''m'', ''SELECT 1'')'),
  ('inbox.upsert(%s, ''{"id": 1}'')'),
  ('inbox.transition(%s, ''{"id": 1}'', ''state'', ARRAY[''a''], ''b'')'),
  ('inbox.transition_key(%s, 1, ''state'', ARRAY[''a''], ''b'')'),
  ('inbox.guard_transitions(%s, ''state'', ''{"a": ["b"]}'')'),
  ('inbox.unguard_transitions(%s, ''state'')'),
  ('inbox.claim(%s, ''m'', inbox.fingerprint(''{"x": 1}''))'),
  ('inbox.complete(%s, ''m'', ''{}''::jsonb)'), ('inbox.result(%s, ''m'')'),
  ('inbox.acquire(%s, ''k'', ''1 minute'')'), ('inbox.finish(%s, ''k'', 1, ''{}''::jsonb)'),
  ('inbox.release(%s, ''k'', 1)'), ('inbox.live_counters(%s)'), ('inbox.oldest_claim(%s)'),
  ('inbox.advance(%s, ''t'', 0, 1)'), ('inbox.position(%s, ''t'', 0)'),
  ('inbox.advance(%s, ''t'', 0, 1, 1)'), ('inbox.claim_offset(%s, ''t'', 0, 1)'),
  ('inbox.fence(%s, ''t'', 0, 1)'), ('inbox.resume_points(%s, ''t'')'),
  ('inbox.claim_sharded(%s, 1, ''m'')'), ('inbox.claim_many_sharded(%s, 1, ARRAY[''m''])'),
  ('inbox.claim_apply_sharded(%s, 1, ''m'', ''SELECT 1'')'),
  ('inbox.claim_apply_many(%s, ARRAY[''m''], ''SELECT 1'')');

GRANT SELECT ON calls TO regress_missing_nobody;
-- Even the functions that are not PUBLIC's: the checks behind EXECUTE are the point.
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA inbox TO regress_missing_nobody;

-- Superuser, then a role with no rights at all: no row may show XX000.
SELECT c.call, pg_temp.outcome(format(c.call, '0::regclass')) AS oid_zero,
       pg_temp.outcome(format(c.call, :'gone_oid' || '::oid::regclass')) AS dropped
  FROM calls c ORDER BY c.call;
SET ROLE regress_missing_nobody;
SELECT c.call, pg_temp.outcome(format(c.call, '0::regclass')) AS oid_zero,
       pg_temp.outcome(format(c.call, :'gone_oid' || '::oid::regclass')) AS dropped
  FROM calls c ORDER BY c.call;
RESET ROLE;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA inbox FROM regress_missing_nobody;
DROP TABLE calls;
DROP ROLE regress_missing_nobody;
