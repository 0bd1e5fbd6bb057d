-- One upsert of a preloaded row with a new amount, in a function delegated to the
-- row's worker: cw_upsert_ext (inbox.upsert).
\set id random(1, 100000)
\set amt random(51, 1000000)
SELECT cw_upsert_ext(:id, :amt);
