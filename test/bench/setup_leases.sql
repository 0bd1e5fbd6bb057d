-- Idempotency keys, two ways: bench_keys (an inbox, through acquire and finish) and
-- idempotency_keys (the hand-written table of Brandur Leach's "Implementing
-- Stripe-like Idempotency Keys in Postgres").  Keys k1..k:keys (psql -v) are preloaded
-- as completed requests in both, with the fingerprint and response the scripts
-- compute for them, so that a replay answers completed.
\set ON_ERROR_STOP 1
SELECT inbox.create_inbox('bench_keys');
CREATE TABLE idempotency_keys (
    key text PRIMARY KEY,
    request_fingerprint bytea,
    locked_at timestamptz,
    response jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- Through the API rather than by writing its columns: a completed key is whatever
-- finish leaves behind.
SELECT count(inbox.finish('bench_keys', 'k' || g, a.token,
                          jsonb_build_object('status', 201, 'charge', 'ch_' || g)))
  FROM generate_series(1, :keys) g,
       LATERAL inbox.acquire('bench_keys', 'k' || g, '30 seconds',
           inbox.fingerprint(jsonb_build_object('key', g, 'amount', 100 + g % 1000,
                                                'currency', 'EUR'))) a;
INSERT INTO idempotency_keys (key, request_fingerprint, response)
SELECT 'k' || g,
       sha256(convert_to(jsonb_build_object('key', g, 'amount', 100 + g % 1000,
                                            'currency', 'EUR')::text, 'UTF8')),
       jsonb_build_object('status', 201, 'charge', 'ch_' || g)
  FROM generate_series(1, :keys) g;
VACUUM (FREEZE, ANALYZE) bench_keys, idempotency_keys;
CHECKPOINT;
