-- One producer transaction through the extension: an event for one of 1000
-- accounts, keyed by the account (a keyed emit holds the key's lock until commit).
-- The same lines open outbox_emit_hand.sql, so both pay the same client-side cost.
\set acct random(1, 1000)
\set n random(1, 1000000)
SELECT inbox.emit('bench_outbox', 'payments', 'acct-' || :acct, jsonb_build_object('n', :n::int));
