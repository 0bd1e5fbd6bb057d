-- One message of a partition whose messages complete out of order, applied with
-- claim_offset as an UPDATE of one of 1000 accounts.  -D shared=0: each pgbench
-- client consumes its own partition of topic 'swap' (:client_id) and completes its
-- offsets in swapped pairs, 1 0 3 2 5 4 ...: half of them above the watermark (an
-- entry), half closing the gap (the watermark moves by two and the entry is
-- deleted).  The first message of a run resumes from the watermark, as a restarted
-- consumer does; an offset completed above it before the restart answers false.
-- -D shared=1: the clients share :partitions partitions of topic 'shared' (client
-- c works on partition c % partitions), taking each offset from the partition's
-- sequence, as workers fed by one dispatcher: offsets complete in whatever order
-- the concurrent transactions commit.  pgbench keeps each client's variables from
-- one message to the next; started and n start at 0 (-D).  groups_offset_hand.sql
-- is the same with hand_claim_offset.
\set acct random(1, 1000)
\set amt random(1, 100)
\if :shared = 1
\set p :client_id % :partitions
WITH fresh AS (SELECT inbox.claim_offset('grp_inbox', 'shared', :p,
                                         nextval(('grp_ext_seq_' || :p)::regclass)) AS applied)
UPDATE grp_offset_ext_accounts SET balance = balance + :amt, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
\else
\if :started = 0
SELECT coalesce(inbox.position('grp_inbox', 'swap', :client_id), -1) AS base \gset
\set started 1
\endif
\set n :n + 1
\set o :base + :n + 2 * (:n % 2) - 1
WITH fresh AS (SELECT inbox.claim_offset('grp_inbox', 'swap', :client_id, :o) AS applied)
UPDATE grp_offset_ext_accounts SET balance = balance + :amt, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
\endif
