-- A batch of 100 fresh ids through claim_many.  The array is built in SQL, identically
-- in many_hand.sql, so both pay the same cost for it.
\set base random(1, 999999999999999)
SELECT * FROM inbox.claim_many('bench_inbox',
    (SELECT array_agg('b' || (:base::bigint + g)) FROM generate_series(1, 100) g));
