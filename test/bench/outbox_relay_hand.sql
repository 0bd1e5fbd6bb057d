-- The hand-written relay poll that outbox_relay_ext.sql is measured against, as it
-- is commonly written: mark the 100 oldest unsent events sent and return them, one
-- statement.  No lease (a relay that dies after it commits loses the events, one
-- that sends before it commits holds their rows meanwhile) and no order across
-- relays: with SKIP LOCKED, two relays take interleaved batches and send them in
-- whatever order they finish.  It skips no event (it marks rows rather than keeping
-- a watermark), but a key's events may leave out of order.
UPDATE hand_outbox SET sent_at = now()
 WHERE id IN (SELECT id FROM hand_outbox WHERE sent_at IS NULL
               ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
RETURNING id, topic, key, payload;
