-- The same work through the coordinator: inbox.claim_apply on an inbox distributed by
-- message_id, with the UPDATE of the two-worker accounts.  The claim's shard and the
-- account's shard lie on different workers for about half the messages, and those
-- commit with two-phase commit.  Variables as in citus_ext.sql (workers is unused).
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, :preload)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct 1 + :id % 1000
SELECT inbox.claim_apply('noncoloc_inbox', :id::text,
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, :acct::bigint);
