-- One request with an idempotency key, as an HTTP handler makes it: acquire a lease
-- (its own transaction), run the outside call (nothing here), finish with the token
-- and the response (another transaction).  replay_pct (pgbench -D) is the share of
-- requests that repeat one of the keys k1..k<keys> preloaded as completed
-- (setup_leases.sql): acquire answers completed with the stored response and there is
-- nothing to finish.  The rest draw from a range so large that every key is new.  The
-- same lines open leases_hand.sql, so both variants pay the same client-side cost.
\set r random(1, 100)
\if :r <= :replay_pct
\set key random(1, :keys)
\else
\set key random(1000000001, 999999999999999)
\endif
\set amt 100 + :key % 1000
SELECT status = 'acquired' AS acquired, token, result AS response
  FROM inbox.acquire('bench_keys', 'k' || :key, '30 seconds',
           inbox.fingerprint(jsonb_build_object('key', :key::bigint, 'amount', :amt::int,
                                                'currency', 'EUR'))) \gset
\if :acquired
SELECT inbox.finish('bench_keys', 'k' || :key, :token::bigint,
                    jsonb_build_object('status', 201, 'charge', 'ch_' || :key));
\endif
