-- The same write by hand: the best single statement, with typed values.
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
INSERT INTO up_hand AS t (id, status, amount) VALUES (:id, 'PAID', :amt)
    ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, amount = EXCLUDED.amount
    WHERE (t.status, t.amount) IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.amount);
