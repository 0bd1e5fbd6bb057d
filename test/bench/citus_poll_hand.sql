-- A poll of 10 messages of one account in one call of poll_hand (setup_citus.sql), the
-- ids :id, :id + 1000, ... so that all share the account 1 + :id % 1000.  dup_pct is
-- the share of redelivered polls (every id preloaded); workers is 2 here.
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, :preload - 9000)
\else
\set id random(1000000001, 999999999990000)
\endif
\set acct 1 + :id % 1000
\set i1 :id + 1000
\set i2 :id + 2000
\set i3 :id + 3000
\set i4 :id + 4000
\set i5 :id + 5000
\set i6 :id + 6000
\set i7 :id + 7000
\set i8 :id + 8000
\set i9 :id + 9000
SELECT poll_hand(:acct, ARRAY[:id, :i1, :i2, :i3, :i4, :i5, :i6, :i7, :i8, :i9]::text[]);
