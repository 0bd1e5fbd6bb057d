-- groups_advance.sql with the 5-argument advance: generation 1, which holds the
-- partitions of topic 'fenced' (setup_groups.sql), checked on every message.
\if :started = 0
SELECT coalesce(inbox.position('grp_inbox', 'fenced', :client_id), 0) AS last \gset
\set started 1
\endif
\set last :last + 1
\set acct random(1, 1000)
\set amt random(1, 100)
WITH fresh AS (SELECT inbox.advance('grp_inbox', 'fenced', :client_id, :last, 1) AS applied)
UPDATE grp_advance_gen_accounts SET balance = balance + :amt, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
