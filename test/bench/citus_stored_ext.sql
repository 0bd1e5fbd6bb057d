-- One payment through a delegated function that answers from stored columns:
-- inbox.try_claim_sharded, the UPDATE, inbox.complete_sharded.  Variables as in
-- citus_ext.sql (workers is 2 here).
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, :preload)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct 1 + :id % 1000
SELECT pay_ext(:acct, :id::text, 1);
