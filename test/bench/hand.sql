-- The best hand-written equivalent of ext.sql: claim and effect in one statement.
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, 1000000)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct random(1, 1000)
WITH c AS (INSERT INTO hand_inbox (message_id) VALUES (:id::text)
           ON CONFLICT DO NOTHING RETURNING 1)
UPDATE accounts SET balance = balance + 1 WHERE id = :acct::int AND EXISTS (SELECT 1 FROM c);
