-- One message through the hand-written delegated consumer (issue 12's baseline):
-- INSERT ... ON CONFLICT DO NOTHING into a co-located table, then the UPDATE when the
-- insert took.  Variables as in citus_ext.sql.
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, :preload)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct 1 + :id % 1000
\if :workers = 1
SELECT consume_hand_1w(:acct, :id::text, 1);
\else
SELECT consume_hand(:acct, :id::text, 1);
\endif
