-- Rights of upsert, upsert_row, transition, guard_transitions and unguard_transitions
-- (issue 9, item 6): checked before any lock and before any row is read; column
-- privileges exactly; row-level security applies and hidden rows are never reported.
-- (The lock order itself: test/specs/shape_rights_before_locks.spec.)
\set SHOW_CONTEXT never

CREATE TABLE docs (id int PRIMARY KEY, owner text NOT NULL DEFAULT current_user,
                   body text, state text);
INSERT INTO docs VALUES (1, 'nobody', 'b', 'DRAFT');
CREATE ROLE regress_shape_none;

-- No rights at all: 42501 for every function.
SET ROLE regress_shape_none;
SELECT inbox.upsert('docs', '{"id": 1, "body": "b"}');
\echo :SQLSTATE
SELECT inbox.upsert_row(ROW(1, 'nobody', 'b', 'DRAFT')::docs);
\echo :SQLSTATE
SELECT inbox.transition('docs', '{"id": 1}', 'state', ARRAY['DRAFT'], 'DONE');
\echo :SQLSTATE
SELECT inbox.transition('docs', '{"id": 1}', 'state', 'DONE');
\echo :SQLSTATE
SELECT inbox.guard_transitions('docs', 'state', '{"DRAFT": ["DONE"]}');
\echo :SQLSTATE
SELECT inbox.unguard_transitions('docs', 'state');
\echo :SQLSTATE
RESET ROLE;

-- SELECT alone is not enough to write; nor are INSERT and UPDATE without SELECT.
-- A replay would otherwise answer "unchanged" or "already" to a role that may not
-- write (or read) the row.
GRANT SELECT ON docs TO regress_shape_none;
SET ROLE regress_shape_none;
SELECT inbox.upsert('docs', '{"id": 1, "body": "b"}');
\echo :SQLSTATE
SELECT inbox.transition('docs', '{"id": 1}', 'state', ARRAY['DRAFT'], 'DRAFT');
\echo :SQLSTATE
RESET ROLE;
REVOKE SELECT ON docs FROM regress_shape_none;
GRANT INSERT, UPDATE ON docs TO regress_shape_none;
SET ROLE regress_shape_none;
SELECT inbox.upsert('docs', '{"id": 1, "body": "b"}');
\echo :SQLSTATE
SELECT inbox.transition('docs', '{"id": 1}', 'state', ARRAY['DRAFT'], 'DRAFT');
\echo :SQLSTATE
RESET ROLE;
-- SELECT, INSERT and UPDATE, but neither TRIGGER nor the owner: no state machines.
GRANT SELECT ON docs TO regress_shape_none;
SET ROLE regress_shape_none;
SELECT inbox.upsert('docs', '{"id": 1, "body": "b"}');
SELECT inbox.transition('docs', '{"id": 1}', 'state', ARRAY['DRAFT'], 'DRAFT');
SELECT inbox.guard_transitions('docs', 'state', '{"DRAFT": ["DONE"]}');
\echo :SQLSTATE
RESET ROLE;
-- A machine is a trigger: TRIGGER installs one, as CREATE TRIGGER needs; replacing
-- or removing one drops a trigger, which only the owner may.
GRANT TRIGGER ON docs TO regress_shape_none;
SET ROLE regress_shape_none;
SELECT inbox.guard_transitions('docs', 'state', '{"DRAFT": ["DONE"]}') AS installed;
SELECT inbox.guard_transitions('docs', 'state', '{"DRAFT": ["DONE", "GONE"]}');
\echo :SQLSTATE
SELECT inbox.unguard_transitions('docs', 'state');
\echo :SQLSTATE
RESET ROLE;
SELECT state_column, edges FROM inbox.state_machines WHERE target = 'docs'::regclass;
SELECT inbox.unguard_transitions('docs', 'state') AS owner_removed;
REVOKE ALL ON docs FROM regress_shape_none;

-- Column privileges: exactly the columns a call names.
CREATE TABLE cols (id int PRIMARY KEY, a text, secret text, state text);
INSERT INTO cols VALUES (1, 'a', 's', 'NEW');
GRANT SELECT (id, a, state), INSERT (id, a), UPDATE (a, state) ON cols TO regress_shape_none;
SET ROLE regress_shape_none;
SELECT inbox.upsert('cols', '{"id": 1, "a": "a"}') AS replay,
       inbox.upsert('cols', '{"id": 1, "a": "b"}') AS change;
-- a new row too (without SELECT on the whole table, the write cannot read xmax)
SELECT inbox.upsert('cols', '{"id": 2, "a": "new"}') AS fresh,
       inbox.upsert('cols', '{"id": 2, "a": "new"}') AS replay,
       inbox.upsert('cols', '{"id": 2, "a": "newer"}') AS change;
-- a replay of a column it may not read is not "unchanged"
SELECT inbox.upsert('cols', '{"id": 1, "secret": "s"}');
\echo :SQLSTATE
-- nor may it name a column it may not insert
SELECT inbox.upsert('cols', '{"id": 1, "a": "b", "state": "NEW"}');
\echo :SQLSTATE
SELECT inbox.transition('cols', '{"id": 1}', 'secret', ARRAY['s'], 's');
\echo :SQLSTATE
SELECT inbox.transition('cols', '{"id": 1}', 'state', ARRAY['NEW'], 'DONE') AS moved,
       inbox.transition('cols', '{"id": 1}', 'state', ARRAY['NEW'], 'DONE') AS already;
-- the key column may be read but not updated: not a state column for this role
SELECT inbox.transition('cols', '{"id": 1}', 'id', ARRAY['1'], '1');
\echo :SQLSTATE
RESET ROLE;
SELECT * FROM cols ORDER BY id;
REVOKE ALL ON cols FROM regress_shape_none;

-- Row-level security: the stored row is read through the policies, and a row they
-- hide is never reported, not even as "unchanged".
CREATE ROLE regress_shape_alice;
CREATE ROLE regress_shape_bob;
GRANT SELECT, INSERT, UPDATE ON docs TO regress_shape_alice, regress_shape_bob;
ALTER TABLE docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON docs USING (owner = current_user);
SET ROLE regress_shape_alice;
SELECT inbox.upsert('docs', '{"id": 2, "body": "secret", "state": "DRAFT"}') AS fresh,
       inbox.upsert('docs', '{"id": 2, "body": "secret", "state": "DRAFT"}') AS replay;
RESET ROLE;
SET ROLE regress_shape_bob;
-- Refused with 42501 on every version; the message is core's row security error up
-- to 18 and ours from 19, where ON CONFLICT's WHERE is judged before the policies.
\set VERBOSITY sqlstate
SELECT inbox.upsert('docs', '{"id": 2, "body": "secret", "state": "DRAFT"}');
\set VERBOSITY default
\echo :SQLSTATE
SELECT inbox.upsert('docs', '{"id": 2, "body": "guess"}');
\echo :SQLSTATE
SELECT inbox.transition('docs', '{"id": 2}', 'state', ARRAY['DRAFT'], 'DONE') AS hidden_move,
       inbox.transition('docs', '{"id": 2}', 'state', ARRAY['DONE'], 'DRAFT') AS hidden_already;
SELECT inbox.upsert('docs', '{"id": 3, "body": "bob"}') AS fresh,
       inbox.upsert('docs', '{"id": 3, "body": "bob"}') AS replay,
       inbox.transition('docs', '{"id": 3}', 'state', ARRAY[''], 'DONE') AS from_empty;
RESET ROLE;
SELECT id, owner, body, state FROM docs ORDER BY id;

-- The same on a partitioned table, where every write is a statement.
CREATE TABLE pdocs (id int PRIMARY KEY, owner text NOT NULL DEFAULT current_user, body text)
    PARTITION BY HASH (id);
CREATE TABLE pdocs0 PARTITION OF pdocs FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pdocs1 PARTITION OF pdocs FOR VALUES WITH (MODULUS 2, REMAINDER 1);
GRANT SELECT, INSERT, UPDATE ON pdocs TO regress_shape_alice, regress_shape_bob;
ALTER TABLE pdocs ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON pdocs USING (owner = current_user);
SET ROLE regress_shape_alice;
SELECT inbox.upsert('pdocs', '{"id": 1, "body": "secret"}') AS fresh,
       inbox.upsert('pdocs', '{"id": 1, "body": "secret"}') AS replay,
       inbox.upsert('pdocs', '{"id": 1, "body": "secret2"}') AS change;
RESET ROLE;
SET ROLE regress_shape_bob;
SELECT inbox.upsert('pdocs', '{"id": 1, "body": "secret2"}');
\echo :SQLSTATE
SELECT inbox.upsert('pdocs', '{"id": 1, "body": "guess"}');
\echo :SQLSTATE
RESET ROLE;
SELECT id, owner, body FROM pdocs ORDER BY id;

-- A table named by OID is still in its schema: without USAGE on it, no answer.
CREATE SCHEMA regress_hidden;
CREATE TABLE regress_hidden.t (id int PRIMARY KEY, v text, state text);
INSERT INTO regress_hidden.t VALUES (1, 'a', 'A');
GRANT ALL ON regress_hidden.t TO regress_shape_none;
SELECT 'regress_hidden.t'::regclass::oid AS hidden_oid \gset
SET ROLE regress_shape_none;
SELECT inbox.upsert(:hidden_oid::regclass, '{"id": 1, "v": "a"}');
\echo :SQLSTATE
SELECT inbox.transition(:hidden_oid::regclass, '{"id": 1}', 'state', ARRAY['A'], 'A');
\echo :SQLSTATE
RESET ROLE;
DROP SCHEMA regress_hidden CASCADE;

DROP TABLE docs, cols, pdocs;
DROP ROLE regress_shape_none, regress_shape_alice, regress_shape_bob;
