// A minimal at-least-once consumer in node-postgres: each message is applied exactly
// once, however often it is delivered.  A broker would hand us messages and expect an
// ack; to stay broker-free this reads one JSON message per line from stdin, e.g.
//
//   {"id": "pay-1", "account": "alice", "amount": 50}
//
// and "acks" by printing.  The rule that makes redelivery safe: claim the message id
// and apply its effect in ONE transaction (inbox.claim_apply), ack only after COMMIT.
// A crash before COMMIT loses both claim and effect, so the redelivery applies it; a
// crash after COMMIT but before the ack makes the redelivery a duplicate.  A message
// that fails (here: a debit that would overdraw, against CHECK balance >= 0) is rolled
// back, claim included, and not acked, so its redelivery can apply it.
//
//   npm ci && node consumer.js < messages.jsonl
//
// Connects with the PG* environment variables; needs CREATE EXTENSION idempotent_inbox.
'use strict';

const readline = require('node:readline');
const { Pool } = require('pg');

const INBOX = 'payments_inbox';
// node-postgres sends every parameter as untyped text; claim_apply converts each one
// to the type the statement gives its $n (numeric for $1, text for $2).
const CREDIT = 'UPDATE accounts SET balance = balance + $1 WHERE id = $2';

async function setup(pool) {
  await pool.query(`CREATE TABLE IF NOT EXISTS accounts (
                      id text PRIMARY KEY,
                      balance numeric(12,2) NOT NULL DEFAULT 0 CHECK (balance >= 0))`);
  await pool.query(`INSERT INTO accounts (id) VALUES ('alice'), ('bob'), ('carol')
                    ON CONFLICT (id) DO NOTHING`);
  await pool.query('SELECT inbox.create_inbox($1) WHERE to_regclass($1) IS NULL', [INBOX]);
}

// Returns 'applied' or 'duplicate' once committed; throws after rolling back.
async function handle(pool, message) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      'SELECT inbox.claim_apply($1, $2, $3, $4, $5) AS outcome',
      [INBOX, message.id, CREDIT, message.amount, message.account]);
    await client.query('COMMIT');
    return rows[0].outcome;
  } catch (err) {
    // Undo the claim with the effect, so that a redelivery can try again.
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

async function main() {
  const pool = new Pool();
  // An idle client losing its connection must not crash the process.
  pool.on('error', (err) => console.error('idle client error:', err.message));
  const counts = { applied: 0, duplicate: 0, failed: 0 };
  try {
    await setup(pool);
    const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    for await (const line of lines) {
      if (!line.trim()) continue;
      let id = '?';
      try {
        const message = JSON.parse(line);
        id = message.id;
        const outcome = await handle(pool, message);
        counts[outcome] += 1;
        console.log(`ack ${id} (${outcome})`);
      } catch (err) {
        // Not acked: a broker would redeliver it later.
        counts.failed += 1;
        console.error(`nack ${id}: ${err.code ? err.code + ' ' : ''}${err.message}`);
      }
    }
  } finally {
    await pool.end();
  }
  console.log(`applied ${counts.applied}, duplicate ${counts.duplicate}, failed ${counts.failed}`);
  return counts.failed ? 1 : 0;
}

main().then(
  (code) => { process.exitCode = code; },
  (err) => { console.error(err); process.exitCode = 2; });
