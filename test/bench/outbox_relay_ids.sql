-- outbox_relay_ext.sql with the ack naming the events it marks sent (relay_ack's
-- third argument) rather than only their lease.
SELECT max(lease::text) AS lease, array_agg(event_id) AS ids
  FROM inbox.relay_take('bench_outbox', 100) \gset
SELECT inbox.relay_ack('bench_outbox', :lease::uuid, :ids::bigint[]);
