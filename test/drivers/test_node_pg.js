// claim_apply, claim_many and try_claim called through node-postgres the way an
// application calls them.  node-postgres sends every parameter untyped, as text:
// numbers as decimal strings, Dates as local timestamps, objects as JSON, arrays as
// '{...}' literals, so a call whose values are all untyped reaches the VARIADIC
// text[] overload of claim_apply, and claim_many's text overload.  One test per
// assertion, run in order by `node --test`.  Connects with the PG* environment
// variables; needs a database where idempotent_inbox is installed.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Client } = require('pg');

const CREDIT = 'UPDATE js_accounts SET balance = balance + $2 WHERE id = $1';
const SET_NOTE = 'UPDATE js_accounts SET note = $2 WHERE id = $1';
const APPLY5 = 'SELECT inbox.claim_apply($1, $2, $3, $4, $5) AS outcome';
const APPLY4 = 'SELECT inbox.claim_apply($1, $2, $3, $4) AS outcome';

let client;

async function connect() {
  const c = new Client();
  await c.connect();
  return c;
}

async function one(sql, values, c = client) {
  const { rows } = await c.query(sql, values);
  return Object.values(rows[0])[0];
}

const apply5 = (...values) => one(APPLY5, values);
const balance = (account) =>
  one('SELECT balance::text FROM js_accounts WHERE id = $1', [account]);
const column = (sql) => one(sql, []);

// Resolves to the error the promise rejects with, so tests can check its SQLSTATE.
async function errorOf(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected an error');
}

before(async () => {
  client = await connect();
  await client.query(`SELECT inbox.create_inbox('js_text'),
                             inbox.create_inbox('js_uuid', 'uuid'),
                             inbox.create_inbox('js_big', 'bigint')`);
  await client.query(`CREATE TABLE js_accounts (id text PRIMARY KEY,
                          balance numeric(12,2) NOT NULL DEFAULT 0,
                          note jsonb, ref uuid, seen_at timestamptz)`);
  await client.query(`INSERT INTO js_accounts (id) VALUES ('alice'), ('bob'), ('carol'),
                          ('dave'), ('erin'), ('frank')`);
});

after(() => client && client.end());

test('number and string args: applied', async () => {
  assert.equal(await apply5('js_text', 'n-1', CREDIT, 'alice', 10.5), 'applied');
});

test('number and string args: redelivery is a duplicate', async () => {
  assert.equal(await apply5('js_text', 'n-1', CREDIT, 'alice', 10.5), 'duplicate');
});

test('number and string args: effect applied exactly once', async () => {
  assert.equal(await balance('alice'), '10.50');
});

test('number args only: applied', async () => {
  // Untyped values take their type from the statement: "$1 * $2" alone would be
  // "unknown * unknown", which no operator resolves, so one side says numeric.
  const stmt = "UPDATE js_accounts SET balance = balance + $1 * $2::numeric WHERE id = 'bob'";
  assert.equal(await apply5('js_text', 'n-2', stmt, 3, 4), 'applied');
});

test('number args only: bound as numbers', async () => {
  assert.equal(await balance('bob'), '12.00');
});

const seenAt = new Date(Date.UTC(2024, 0, 31, 23, 30, 15, 250));

test('Date arg: applied', async () => {
  const stmt = 'UPDATE js_accounts SET seen_at = $2 WHERE id = $1';
  assert.equal(await apply5('js_text', 'n-3', stmt, 'carol', seenAt), 'applied');
});

test('Date arg: the same instant is stored', async () => {
  const stored = await column("SELECT seen_at FROM js_accounts WHERE id = 'carol'");
  assert.equal(stored.getTime(), seenAt.getTime());
});

const note = { tags: ['a', 'b'], n: 1, nested: { quote: 'it\'s "x"', brace: '{}' } };

test('object arg: applied as JSON', async () => {
  assert.equal(await apply5('js_text', 'n-4', SET_NOTE, 'dave', note), 'applied');
});

test('object arg: stored intact', async () => {
  assert.deepEqual(await column("SELECT note FROM js_accounts WHERE id = 'dave'"), note);
});

test('null arg: applied', async () => {
  assert.equal(await apply5('js_text', 'n-5', SET_NOTE, 'dave', null), 'applied');
});

test('null arg: bound as NULL', async () => {
  assert.equal(await column("SELECT note IS NULL FROM js_accounts WHERE id = 'dave'"), true);
});

const msgUuid = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';
const refUuid = '6f1c7b1e-2d8e-4b43-9a55-0d7c4f6b8e21';

const SET_REF = "UPDATE js_accounts SET ref = $1 WHERE id = 'erin'";

test('uuid string as message id and arg: applied', async () => {
  assert.equal(await one(APPLY4, ['js_uuid', msgUuid, SET_REF, refUuid]), 'applied');
});

test('uuid string as message id: redelivery is a duplicate, in any case', async () => {
  const otherRef = '00000000-0000-4000-8000-000000000000';
  assert.equal(await one(APPLY4, ['js_uuid', msgUuid.toUpperCase(), SET_REF, otherRef]), 'duplicate');
});

test('uuid string arg: stored by the first delivery only', async () => {
  assert.equal(await column("SELECT ref FROM js_accounts WHERE id = 'erin'"), refUuid);
});

test('number as message id on a bigint inbox: applied, then a duplicate', async () => {
  const outcomes = [];
  for (const id of [42, '42']) {
    outcomes.push(await apply5('js_big', id, CREDIT, 'frank', '1'));
  }
  assert.deepEqual(outcomes, ['applied', 'duplicate']);
});

// With the library loaded (shared_ or session_preload_libraries), the untyped rest
// takes the statement's own parameter types, so casting one value no longer leaves
// the others undetermined (42P18 before 0.3).
test('typing one parameter in SQL while the others are untyped: applied', async () => {
  const sql = 'SELECT inbox.claim_apply($1, $2, $3, $4, $5::int)';
  const { rows } = await client.query(sql, ['js_text', 'x-1', CREDIT, 'frank', 1]);
  assert.equal(Object.values(rows[0])[0], 'applied');
});

test('typing one parameter in SQL: the effect is applied once', async () => {
  // frank had 1 from the bigint inbox test above.
  assert.equal(await balance('frank'), '2.00');
});

const claimMany = async (inbox, ids) =>
  (await client.query('SELECT id FROM inbox.claim_many($1, $2) AS id', [inbox, ids]))
    .rows.map((r) => r.id);

test('claim_many with an array: fresh ids in input order, each once', async () => {
  // Commas, quotes, braces and spaces must survive node-postgres' array literal.
  const ids = ['b1', 'b,2', 'b1', 'b "3"', '{b4}', ' b5 '];
  assert.deepEqual(await claimMany('js_text', ids), ['b1', 'b,2', 'b "3"', '{b4}', ' b5 ']);
});

test('claim_many with an array: claimed ids are left out', async () => {
  assert.deepEqual(await claimMany('js_text', ['b,2', 'b6']), ['b6']);
});

test('claim_many with an array of numbers on a bigint inbox: fresh ids, as text', async () => {
  assert.deepEqual(await claimMany('js_big', [7, 8, 7, 42]), ['7', '8']);
});

test('try_claim: claimed, then a duplicate', async () => {
  const statuses = [];
  for (let i = 0; i < 2; i++) {
    statuses.push(await one('SELECT inbox.try_claim($1, $2)', ['js_text', 't-1']));
  }
  assert.deepEqual(statuses, ['claimed', 'duplicate']);
});

test('try_claim: held by an open transaction elsewhere is in_progress', async () => {
  const holder = await connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT inbox.try_claim($1, $2)', ['js_text', 't-2']);
    assert.equal(await one('SELECT inbox.try_claim($1, $2)', ['js_text', 't-2']), 'in_progress');
  } finally {
    await holder.query('ROLLBACK');
    await holder.end();
  }
});

test('named prepared statement reused 10 times: every fresh id applied', async () => {
  const outcomes = [];
  for (let i = 0; i < 10; i++) {
    const values = ['js_text', `p-${i}`, CREDIT, 'carol', '1.25'];
    outcomes.push(await one({ name: 'consume', text: APPLY5, values }));
  }
  assert.deepEqual(outcomes, Array(10).fill('applied'));
});

test('named prepared statement: redeliveries are duplicates', async () => {
  const outcomes = [];
  for (let i = 0; i < 10; i++) {
    const values = ['js_text', `p-${i}`, CREDIT, 'carol', '1.25'];
    outcomes.push(await one({ name: 'consume', text: APPLY5, values }));
  }
  assert.deepEqual(outcomes, Array(10).fill('duplicate'));
});

test('named prepared statement: each effect applied exactly once', async () => {
  assert.equal(await balance('carol'), '12.50');
});

// Through a transaction pooler the statement lives on whichever server connection
// prepared it, under a name of the pooler's (PgBouncer 1.21+): nothing to count.
const pooled = process.env.INBOX_POOL_MODE === 'transaction';
test('named prepared statement: prepared once on the server', { skip: pooled }, async () => {
  const n = await column("SELECT count(*)::int FROM pg_prepared_statements WHERE name = 'consume'");
  assert.equal(n, 1);
});

test('rolled back, then redelivered: the effect applies once', async () => {
  const values = ['js_text', 'r-1', CREDIT, 'erin', '4'];
  const outcomes = [];
  await client.query('BEGIN');
  outcomes.push(await one(APPLY5, values));
  await client.query('ROLLBACK');
  outcomes.push(await one(APPLY5, values));
  outcomes.push(await one(APPLY5, values));
  outcomes.push(await balance('erin'));
  assert.deepEqual(outcomes, ['applied', 'applied', 'duplicate', '4.00']);
});

test('null message id: 22004', async () => {
  const e = await errorOf(apply5('js_text', null, CREDIT, 'erin', '1'));
  assert.equal(e.code, '22004');
});

test('not an inbox: 42809', async () => {
  const e = await errorOf(apply5('js_accounts', 'e-1', CREDIT, 'erin', '1'));
  assert.equal(e.code, '42809');
});

test('a string that does not fit the type of its $n: 22P02', async () => {
  const e = await errorOf(apply5('js_text', 'e-2', CREDIT, 'erin', 'lots'));
  assert.equal(e.code, '22P02');
});

test('a failing effect: its error reaches the driver, and the retry applies', async () => {
  const insert = 'INSERT INTO js_accounts (id) VALUES ($1)';
  const e = await errorOf(one(APPLY4, ['js_text', 'e-3', insert, 'erin']));
  const retry = await one(APPLY4, ['js_text', 'e-3', insert, 'zoe']);
  assert.deepEqual([e.code, retry], ['23505', 'applied']);
});
