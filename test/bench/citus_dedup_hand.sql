-- One row INSERTed through the coordinator into a distributed table whose BEFORE
-- INSERT trigger deduplicates it on the worker: the hand-written PL/pgSQL trigger
-- on its own table of seen ids.  Variables as in citus_ext.sql (workers is 2 here).
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, :preload)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct 1 + :id % 1000
INSERT INTO sink_hand VALUES (:acct, :id::text, 1);
