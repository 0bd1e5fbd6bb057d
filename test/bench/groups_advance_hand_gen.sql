-- groups_advance_hand.sql fenced: the same UPDATE guarded by the generation too
-- (topic 'fenced', generation 1).  It locks the partition's row, so a takeover
-- (SELECT ... FOR UPDATE, UPDATE ... SET generation) waits for it, and after a
-- takeover it moves nothing and applies nothing: an older generation's message
-- is skipped rather than refused with an error.
\if :started = 0
SELECT "offset" AS last FROM grp_hand_pos WHERE topic = 'fenced' AND "partition" = :client_id \gset
\set started 1
\endif
\set last :last + 1
\set acct random(1, 1000)
\set amt random(1, 100)
WITH moved AS (
    UPDATE grp_hand_pos SET "offset" = :last, advanced_at = now()
     WHERE topic = 'fenced' AND "partition" = :client_id AND "offset" < :last AND generation = 1
    RETURNING 1
)
UPDATE grp_advance_hand_gen_accounts SET balance = balance + :amt, effects = effects + 1
 WHERE id = :acct AND EXISTS (SELECT FROM moved);
