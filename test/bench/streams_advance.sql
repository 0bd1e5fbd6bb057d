-- One message of a partitioned stream (Kafka, Redis Streams), applied with its
-- offset: each pgbench client consumes its own partition (:client_id) in order.
-- The first message of a run resumes from the stored position, as a restarted
-- consumer does; later ones take the next offset.  redeliver_pct (pgbench -D) is the
-- share of deliveries that repeat one of the last 100 messages of this run (an
-- at-least-once broker after a consumer crash): advance answers false and the
-- effect is skipped.  pgbench keeps each client's variables from one message to the
-- next; started, n and last start at 0 (-D).
\if :started = 0
SELECT coalesce(inbox.position('stream_inbox', 'payments', :client_id), 0) AS last \gset
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
-- The form the README gives: advance in a CTE, evaluated once.  Bare in the WHERE
-- clause it would be evaluated again when the account row was updated concurrently
-- (READ COMMITTED recheck), and that second advance of the same offset answers
-- false and skips the effect.
WITH fresh AS (SELECT inbox.advance('stream_inbox', 'payments', :client_id, :o) AS applied)
UPDATE adv_accounts SET balance = balance + :amt, effects = effects + 1
  FROM fresh WHERE id = :acct AND fresh.applied;
