-- One payment through the hand-written delegated function with a result column:
-- INSERT ... ON CONFLICT DO NOTHING with the result, then the UPDATE when it took.
-- Variables as in citus_ext.sql (workers is 2 here).
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, :preload)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct 1 + :id % 1000
SELECT pay_hand(:acct, :id::text, 1);
