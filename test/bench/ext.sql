-- One message through the extension.  dup_pct (pgbench -D) is the share of deliveries
-- that redeliver a preloaded id (1..1000000); the rest draw from a range so large that
-- every id is new.  The same lines open hand.sql and bare.sql, so all three variants
-- pay the same client-side cost.
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, 1000000)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct random(1, 1000)
SELECT inbox.claim_apply('bench_inbox', :id::text,
    'UPDATE accounts SET balance = balance + $1 WHERE id = $2', 1, :acct::int);
