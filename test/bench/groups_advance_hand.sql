-- groups_advance.sql by hand: the best single statement on an offset table of
-- one's own (as streams_hand.sql), topic 'plain' of grp_hand_pos.
\if :started = 0
SELECT "offset" AS last FROM grp_hand_pos WHERE topic = 'plain' AND "partition" = :client_id \gset
\set started 1
\endif
\set last :last + 1
\set acct random(1, 1000)
\set amt random(1, 100)
WITH moved AS (
    UPDATE grp_hand_pos SET "offset" = :last, advanced_at = now()
     WHERE topic = 'plain' AND "partition" = :client_id AND "offset" < :last
    RETURNING 1
)
UPDATE grp_advance_hand_accounts SET balance = balance + :amt, effects = effects + 1
 WHERE id = :acct AND EXISTS (SELECT FROM moved);
