-- streams_advance.sql with advance in a scalar subquery instead of a CTE: one
-- statement, evaluated once per execution too (an InitPlan, run before the scan and
-- not again by READ COMMITTED's recheck), with a simpler plan than the CTE's join.
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
UPDATE adv_accounts SET balance = balance + :amt, effects = effects + 1
 WHERE id = :acct AND (SELECT inbox.advance('stream_inbox', 'payments', :client_id, :o));
