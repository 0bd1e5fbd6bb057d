-- One message through a delegated consumer that uses the extension: consume() calls
-- inbox.claim_apply_sharded on an inbox co-located with the accounts, and Citus runs
-- the call on the worker that holds the account's shard.  -D workers=1 uses the group
-- whose shards all sit on worker 1, workers=2 the group spread over both.  dup_pct is
-- the share of redeliveries of a preloaded id (1..preload); the rest draw from a range
-- so large that every id is new.  The account follows from the id, so a redelivery
-- meets its claim under the same shard key.  The same lines open citus_hand.sql and
-- citus_noncoloc.sql.
\set r random(1, 100)
\if :r <= :dup_pct
\set id random(1, :preload)
\else
\set id random(1000000001, 999999999999999)
\endif
\set acct 1 + :id % 1000
\if :workers = 1
SELECT consume_1w(:acct, :id::text, 1);
\else
SELECT consume(:acct, :id::text, 1);
\endif
