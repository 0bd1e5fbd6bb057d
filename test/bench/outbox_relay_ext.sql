-- One relay poll through the extension: lease the next 100 events (in order, none
-- skipped, each key in order), then, the broker having confirmed them, mark the
-- lease's events sent.  Each its own transaction, as a relay must: the lease
-- commits before the events leave for the broker.  A take that returned nothing
-- leaves lease empty, and the ack then fails the run: the backlog ran dry.
SELECT max(lease::text) AS lease FROM inbox.relay_take('bench_outbox', 100) \gset
SELECT inbox.relay_ack('bench_outbox', :lease::uuid);
