-- claim_many: fresh ids of a batch, in input order, each once.
\set SHOW_CONTEXT never

SELECT inbox.create_inbox('t_inbox');
SELECT inbox.create_inbox('u_inbox', 'uuid');
SELECT inbox.create_inbox('b_inbox', 'bigint');

SELECT inbox.claim('t_inbox', 'seen');

-- Input order is kept (not key order); repeats inside the batch are reported once;
-- already claimed ids are left out.
SELECT * FROM inbox.claim_many('t_inbox', ARRAY['zulu', 'seen', 'alpha', 'zulu', 'mike', 'alpha']);
SELECT * FROM inbox.claim_many('t_inbox', ARRAY['alpha', 'new', 'zulu']);
SELECT * FROM inbox.claim_many('t_inbox', '{}'::text[]);

SELECT * FROM inbox.claim_many('b_inbox', ARRAY[30, 10, 20, 10]);
SELECT * FROM inbox.claim_many('b_inbox', '{20,40}');
SELECT * FROM inbox.claim_many('u_inbox',
    ARRAY['b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11']::uuid[]);
-- Text elements are converted to the key type; the result keeps the given spelling.
SELECT * FROM inbox.claim_many('u_inbox',
    ARRAY['B0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11']);

-- Usable as a set in a consumer's query: apply only the fresh ones.
CREATE TABLE events (id text PRIMARY KEY, amount int);
INSERT INTO events
SELECT f.id, 10 FROM inbox.claim_many('t_inbox', ARRAY['e1', 'e2', 'e1', 'seen']) AS f(id);
SELECT * FROM events ORDER BY id;

-- A rolled back batch leaves nothing; a redelivered batch is then fresh again.
BEGIN;
SELECT * FROM inbox.claim_many('t_inbox', ARRAY['r1', 'r2']);
ROLLBACK;
SELECT * FROM inbox.claim_many('t_inbox', ARRAY['r2', 'r1']);

-- Errors name the offending element; the batch is all or nothing.
SELECT * FROM inbox.claim_many('t_inbox', ARRAY['ok-1', NULL]);
\echo :SQLSTATE
SELECT * FROM inbox.claim_many('t_inbox', ARRAY['ok-1', '']);
\echo :SQLSTATE
SELECT * FROM inbox.claim_many('t_inbox', ARRAY['ok-1', repeat('x', 1025)]);
\echo :SQLSTATE
SELECT * FROM inbox.claim_many('t_inbox', NULL::text[]);
\echo :SQLSTATE
SELECT * FROM inbox.claim_many('t_inbox', ARRAY[['a', 'b'], ['c', 'd']]);
\echo :SQLSTATE
SELECT * FROM inbox.claim_many('t_inbox', ARRAY[1, 2]);
\echo :SQLSTATE
SELECT * FROM inbox.claim_many('u_inbox', ARRAY['nope']);
\echo :SQLSTATE
SELECT * FROM inbox.claim_many('events', ARRAY['x']);
\echo :SQLSTATE
SELECT inbox.claim('t_inbox', 'ok-1') AS ok_1_still_fresh;

SELECT count(*) AS t_claims FROM t_inbox;

DROP TABLE events;
SELECT inbox.drop_inbox('t_inbox'), inbox.drop_inbox('u_inbox'), inbox.drop_inbox('b_inbox');
