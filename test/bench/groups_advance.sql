-- The generation check, in order: each pgbench client consumes its own partition
-- (:client_id) in offset order, one message per transaction, applied as an UPDATE
-- of one of 1000 accounts, as streams_advance.sql does.  Here the 4-argument
-- advance on topic 'plain' (no generation: its executor-free path);
-- groups_advance_gen.sql is the 5-argument advance with generation 1 on topic
-- 'fenced', and groups_advance_hand.sql and groups_advance_hand_gen.sql the same
-- by hand.  The first message of a run resumes from the stored position; started
-- starts at 0 (-D).
\if :started = 0
SELECT coalesce(inbox.position('grp_inbox', 'plain', :client_id), 0) AS last \gset
\set started 1
\endif
\set last :last + 1
\set acct random(1, 1000)
\set amt random(1, 100)
WITH fresh AS (SELECT inbox.advance('grp_inbox', 'plain', :client_id, :last) AS applied)
UPDATE grp_advance_accounts SET balance = balance + :amt, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
