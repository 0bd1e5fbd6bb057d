-- The same messages as streams_advance.sql, with the offsets in a table of one's own
-- and the best single statement: move the partition's offset forward if the message
-- is past it, and apply the effect only if it moved.  Its rows are preloaded for
-- partitions 0..7 (setup_streams.sql), which spares it the insert of a new
-- partition that advance handles; otherwise the same lines.
\if :started = 0
SELECT "offset" AS last FROM hand_positions WHERE "partition" = :client_id \gset
\set started 1
\endif
\set r random(1, 100)
\if :n > 0 and :r <= :redeliver_pct
\set o :last - random(0, least(:n - 1, 99))
\else
\set last :last + 1
\set n :n + 1
\set o :last
\endif
\set acct random(1, 1000)
\set amt random(1, 100)
WITH moved AS (
    UPDATE hand_positions SET "offset" = :o, advanced_at = now()
     WHERE topic = 'payments' AND "partition" = :client_id AND "offset" < :o
    RETURNING 1
)
UPDATE hand_accounts SET balance = balance + :amt, effects = effects + 1
 WHERE id = :acct AND EXISTS (SELECT FROM moved);
