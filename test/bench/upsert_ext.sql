-- One upsert through the extension.  replay_pct (pgbench -D) is the share of calls
-- that repeat a preloaded row exactly (1..100000, amount 50); the rest write a new
-- amount to a preloaded row (change) or a new row (fresh), set by fresh_pct.
\set r random(1, 100)
\if :r <= :replay_pct
\set id random(1, 100000)
\set amt 50
\elif :r <= :replay_pct + :fresh_pct
\set id random(1000000001, 999999999999999)
\set amt random(1, 1000000)
\else
\set id random(1, 100000)
\set amt random(51, 1000000)
\endif
SELECT inbox.upsert('up_ext', jsonb_build_object('id', :id::bigint, 'status', 'PAID', 'amount', :amt::int));
