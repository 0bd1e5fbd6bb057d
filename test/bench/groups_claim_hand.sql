-- groups_fence_hand.sql without the generation: the claim into a plain table and
-- the effect if it inserted, as hand.sql does.
\set id random(1000000001, 999999999999999)
\set acct random(1, 1000)
WITH claimed AS (
    INSERT INTO grp_hand_claims (message_id) VALUES (:id::text)
    ON CONFLICT DO NOTHING RETURNING 1
)
UPDATE grp_fence_hand_accounts SET balance = balance + 1, effects = effects + 1
 WHERE id = :acct AND EXISTS (SELECT FROM claimed);
