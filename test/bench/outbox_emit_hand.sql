-- The hand-written producer that outbox_emit_ext.sql is measured against: the same
-- event inserted into hand_outbox (setup_outbox.sql).
\set acct random(1, 1000)
\set n random(1, 1000000)
INSERT INTO hand_outbox (topic, key, payload)
VALUES ('payments', 'acct-' || :acct, jsonb_build_object('n', :n::int));
