-- Outboxes (make bench, section outbox): bench_outbox, made by inbox.create_outbox,
-- and hand_outbox, the outbox a user writes by hand: an identity key, the event, and
-- a sent_at that a relay sets, with a partial index on the unsent events for the
-- relay to read them in id order.  The section empties and refills both before each
-- timed run (outbox_reset, outbox_fill in run).  Run again, it starts over.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
DROP TABLE IF EXISTS bench_outbox, hand_outbox;

SELECT inbox.create_outbox('bench_outbox');

CREATE TABLE hand_outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic text NOT NULL,
    key text,
    payload jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    sent_at timestamptz
);
CREATE INDEX ON hand_outbox (id) WHERE sent_at IS NULL;
