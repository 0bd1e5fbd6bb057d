-- The floor: the effect alone, with no deduplication at all.
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, 1000000)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct random(1, 1000)
UPDATE accounts SET balance = balance + 1 WHERE id = :acct::int;
