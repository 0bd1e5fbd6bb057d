// claim_apply called through postgres.js (the npm package `postgres`) the way an
// application calls it: a tagged template, values interpolated, no casts.
// postgres.js sends strings and numbers untyped but a Date as timestamptz, a
// BigInt as int8 and sql.json() as jsonb, so such a value beside strings is a mix
// of typed and untyped parameters in claim_apply's "any" arguments: the
// extension's hook, preloaded for every session, types the untyped ones.  One
// test per assertion, run in order by `node --test`.  Connects with the PG*
// environment variables to a database that preloads idempotent_inbox.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const postgres = require('postgres');

const CREDIT = 'UPDATE pjs_accounts SET balance = balance + $2 WHERE id = $1';
const SEEN = 'UPDATE pjs_accounts SET seen_at = $2 WHERE id = $1';
const NOTE = 'UPDATE pjs_accounts SET note = $2 WHERE id = $1';

// Through a transaction-mode pooler (INBOX_POOL_MODE, set by the pooler suite) no
// named prepared statements, as postgres.js's documentation asks.
const options = { onnotice: () => {}, prepare: process.env.INBOX_POOL_MODE !== 'transaction' };
let sql;

// A new connection whose first query is the call: what the preload is for.
async function firstCall(query) {
  const fresh = postgres({ ...options, max: 1 });
  try {
    return (await query(fresh))[0].outcome;
  } finally {
    await fresh.end();
  }
}

const balance = async (id) =>
  (await sql`SELECT balance::text AS b FROM pjs_accounts WHERE id = ${id}`)[0].b;

before(async () => {
  sql = postgres(options);
  await sql`SELECT inbox.create_inbox('pjs_inbox')`;
  await sql`CREATE TABLE pjs_accounts (id text PRIMARY KEY,
                balance numeric(12,2) NOT NULL DEFAULT 0, seen_at timestamptz, note jsonb)`;
  await sql`INSERT INTO pjs_accounts (id) VALUES ('alice'), ('bob'), ('carol'), ('dave')`;
});

after(() => sql && sql.end());

const seenAt = new Date(Date.UTC(2024, 1, 29, 23, 59, 58, 250));

test('Date beside strings, first query of a session: applied', async () => {
  assert.equal(await firstCall((s) =>
    s`SELECT inbox.claim_apply(${'pjs_inbox'}, ${'d-1'}, ${SEEN}, ${'alice'}, ${seenAt}) AS outcome`),
  'applied');
});

test('Date beside strings: the same instant is stored', async () => {
  const [row] = await sql`SELECT seen_at FROM pjs_accounts WHERE id = 'alice'`;
  assert.equal(row.seen_at.getTime(), seenAt.getTime());
});

test('BigInt beside strings, first query of a session: applied', async () => {
  assert.equal(await firstCall((s) =>
    s`SELECT inbox.claim_apply(${'pjs_inbox'}, ${'b-1'}, ${CREDIT}, ${'bob'}, ${5n}) AS outcome`),
  'applied');
});

test('BigInt beside strings: redelivery is a duplicate', async () => {
  const [row] = await sql`SELECT inbox.claim_apply(${'pjs_inbox'}, ${'b-1'}, ${CREDIT}, ${'bob'}, ${5n}) AS outcome`;
  assert.equal(row.outcome, 'duplicate');
});

test('number beside strings: applied', async () => {
  const [row] = await sql`SELECT inbox.claim_apply(${'pjs_inbox'}, ${'n-1'}, ${CREDIT}, ${'bob'}, ${0.25}) AS outcome`;
  assert.equal(row.outcome, 'applied');
});

test('BigInt and number: each effect applied once', async () => {
  assert.equal(await balance('bob'), '5.25');
});

const note = { tags: ['a', 'b'], n: 1, nested: { quote: 'it\'s "x"' } };

test('sql.json() beside strings, first query of a session: applied', async () => {
  assert.equal(await firstCall((s) =>
    s`SELECT inbox.claim_apply(${'pjs_inbox'}, ${'j-1'}, ${NOTE}, ${'carol'}, ${s.json(note)}) AS outcome`),
  'applied');
});

test('sql.json(): stored intact', async () => {
  const [row] = await sql`SELECT note FROM pjs_accounts WHERE id = 'carol'`;
  assert.deepEqual(row.note, note);
});

test('sql.unsafe with $n and a BigInt: applied, then a duplicate', async () => {
  const query = 'SELECT inbox.claim_apply($1, $2, $3, $4, $5) AS outcome';
  const outcomes = [];
  for (let i = 0; i < 2; i++) {
    outcomes.push((await sql.unsafe(query, ['pjs_inbox', 'u-1', CREDIT, 'dave', 7n]))[0].outcome);
  }
  outcomes.push(await balance('dave'));
  assert.deepEqual(outcomes, ['applied', 'duplicate', '7.00']);
});

test('message id reused as a value: 42P08, the hint names the cast', async () => {
  const query = "SELECT inbox.claim_apply('pjs_inbox', $1, 'SELECT $1::text || $2', $1, 7) AS outcome";
  let error;
  try {
    await sql.unsafe(query, ['r-1']);
  } catch (e) {
    error = e;
  }
  assert.ok(error, 'expected an error');
  assert.deepEqual([error.code, error.message], ['42P08', 'could not determine data type of parameter $1']);
  assert.match(error.hint, /inbox\.claim_apply.*\$1::text/);
});

test('a string that does not fit the type of its $n: 22P02', async () => {
  let code;
  try {
    await sql`SELECT inbox.claim_apply(${'pjs_inbox'}, ${'e-1'}, ${CREDIT}, ${'dave'}, ${'lots'})`;
  } catch (e) {
    code = e.code;
  }
  assert.equal(code, '22P02');
});
