-- A minimal at-least-once consumer in plain psql: applies a batch of messages, each
-- exactly once however often it is delivered.  The batch arrives as CSV on stdin
-- (id,account,amount with a header line):
--
--   psql -X -f consumer.sql < messages.csv
--
-- One transaction per batch: all claims and effects commit together and the batch is
-- acked after COMMIT, as a consumer committing its offset per batch does.  A message
-- repeated inside the batch or redelivered in a later one comes back 'duplicate'.  If
-- anything fails (here: a debit that would overdraw), the claims roll back with the
-- effects and nothing is acked, so the redelivered batch applies all of it.  A
-- transaction per message would let good messages through a bad batch, but psql
-- could then no longer ack the batch as one, nor show each outcome in one table.
--
-- Connects with the PG* environment variables; needs CREATE EXTENSION idempotent_inbox.

\set ON_ERROR_STOP on
\set QUIET on
-- Keeps IF NOT EXISTS from saying "skipping" on every run after the first.
SET client_min_messages = warning;
\set inbox payments_inbox
\set credit 'UPDATE accounts SET balance = balance + $1 WHERE id = $2'

CREATE TABLE IF NOT EXISTS accounts (
    id      text PRIMARY KEY,
    balance numeric(12,2) NOT NULL DEFAULT 0 CHECK (balance >= 0)
);
INSERT INTO accounts (id) VALUES ('alice'), ('bob'), ('carol') ON CONFLICT (id) DO NOTHING;
SELECT inbox.create_inbox(:'inbox') WHERE to_regclass(:'inbox') IS NULL \g /dev/null

BEGIN;

-- pos keeps delivery order: the first delivery of an id is the one applied.
CREATE TEMP TABLE batch (
    pos     bigint GENERATED ALWAYS AS IDENTITY,
    id      text NOT NULL,
    account text NOT NULL,
    amount  numeric NOT NULL
);
\copy batch (id, account, amount) FROM pstdin WITH (FORMAT csv, HEADER)

-- PostgreSQL evaluates a volatile function in the select list after the ORDER BY
-- sort, so the claims are made in delivery order.
CREATE TEMP TABLE outcomes AS
SELECT pos, id, account, amount,
       inbox.claim_apply(:'inbox', id, :'credit', amount, account) AS outcome
  FROM batch
 ORDER BY pos;

COMMIT;

\echo ack batch
SELECT pos, id, account, amount, outcome FROM outcomes ORDER BY pos;
SELECT count(*) FILTER (WHERE outcome = 'applied')   AS applied,
       count(*) FILTER (WHERE outcome = 'duplicate') AS duplicate
  FROM outcomes;
