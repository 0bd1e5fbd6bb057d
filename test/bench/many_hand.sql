-- The hand-written batch claim that many_ext.sql is measured against.
\set base random(1, 999999999999999)
INSERT INTO hand_inbox (message_id)
SELECT unnest((SELECT array_agg('b' || (:base::bigint + g)) FROM generate_series(1, 100) g))
ON CONFLICT DO NOTHING RETURNING message_id;
