-- The same request against a hand-written idempotency_keys table, one statement per
-- step.  Acquire: insert the key locked; or, if it exists, take over a lock older than
-- the lease when no response was stored yet; or else report what is there (a stored
-- response to replay, a live attempt, or another payload).  Data-modifying CTEs share
-- one snapshot, so the branches exclude each other.  Finish: store the response and
-- unlock, only if our lock still holds (locked_at is the fencing token).
\set r random(1, 100)
\if :r <= :replay_pct
\set key random(1, :keys)
\else
\set key random(1000000001, 999999999999999)
\endif
\set amt 100 + :key % 1000
WITH req AS (
    SELECT 'k' || :key AS key,
           sha256(convert_to(jsonb_build_object('key', :key::bigint, 'amount', :amt::int,
                                                'currency', 'EUR')::text, 'UTF8')) AS fp
), ins AS (
    INSERT INTO idempotency_keys (key, request_fingerprint, locked_at)
    SELECT key, fp, now() FROM req
    ON CONFLICT (key) DO NOTHING
    RETURNING locked_at
), took AS (
    UPDATE idempotency_keys k SET locked_at = now()
      FROM req
     WHERE k.key = req.key AND NOT EXISTS (SELECT FROM ins)
       AND k.response IS NULL AND k.locked_at < now() - interval '30 seconds'
       AND k.request_fingerprint = req.fp
    RETURNING k.locked_at
)
SELECT true AS acquired, locked_at, NULL::jsonb AS response, false AS conflict FROM ins
UNION ALL
SELECT true, locked_at, NULL, false FROM took
UNION ALL
SELECT false, NULL, k.response, k.request_fingerprint <> req.fp
  FROM idempotency_keys k JOIN req USING (key)
 WHERE NOT EXISTS (SELECT FROM ins) AND NOT EXISTS (SELECT FROM took) \gset
\if :acquired
UPDATE idempotency_keys
   SET response = jsonb_build_object('status', 201, 'charge', 'ch_' || :key), locked_at = NULL
 WHERE key = 'k' || :key AND locked_at = :locked_at::timestamptz;
\endif
