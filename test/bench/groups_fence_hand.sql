-- groups_fence_claim.sql by hand: the partition's row of grp_hand_pos read FOR KEY
-- SHARE with the generation (held until commit, so a takeover's FOR UPDATE waits
-- for it), then the claim into a plain table, then the effect if it inserted.
\set id random(1000000001, 999999999999999)
\set acct random(1, 1000)
WITH held AS (
    SELECT FROM grp_hand_pos
     WHERE topic = 'claims' AND "partition" = :client_id AND generation = 1
       FOR KEY SHARE
), claimed AS (
    INSERT INTO grp_hand_claims (message_id) SELECT :id::text FROM held
    ON CONFLICT DO NOTHING RETURNING 1
)
UPDATE grp_fence_hand_accounts SET balance = balance + 1, effects = effects + 1
 WHERE id = :acct AND EXISTS (SELECT FROM claimed);
