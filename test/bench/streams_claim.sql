-- The same messages as streams_advance.sql, deduplicated by one claim per message:
-- the id is topic, partition and offset.  The offsets of a run start from the
-- clock in microseconds, so they are new to the inbox and increase from run to run
-- (a client applies far fewer than a million messages a second); the same lines
-- otherwise, so both variants pay the same client-side cost.
\if :started = 0
SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS last \gset
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
SELECT inbox.claim_apply('stream_inbox', 'payments-' || :client_id || '-' || :o,
    'UPDATE claim_accounts SET balance = balance + $1, effects = effects + 1 WHERE id = $2',
    :amt::int, :acct::int);
