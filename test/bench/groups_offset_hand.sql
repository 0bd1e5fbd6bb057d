-- The same messages as groups_offset_ext.sql, through hand_claim_offset
-- (setup_groups.sql): a watermark row per partition and a table of the offsets
-- completed above it.  The same lines otherwise.
\set acct random(1, 1000)
\set amt random(1, 100)
\if :shared = 1
\set p :client_id % :partitions
WITH fresh AS (SELECT hand_claim_offset('shared', :p,
                                        nextval(('grp_hand_seq_' || :p)::regclass)) AS applied)
UPDATE grp_offset_hand_accounts SET balance = balance + :amt, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
\else
\if :started = 0
SELECT watermark AS base FROM grp_hand_wm WHERE topic = 'swap' AND "partition" = :client_id \gset
\set started 1
\endif
\set n :n + 1
\set o :base + :n + 2 * (:n % 2) - 1
WITH fresh AS (SELECT hand_claim_offset('swap', :client_id, :o) AS applied)
UPDATE grp_offset_hand_accounts SET balance = balance + :amt, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
\endif
