#!/usr/bin/env python3
"""What the extension promises through a connection pooler, run by the pooler suite
through PgBouncer (test/pooler/pgbouncer.py) in transaction and in session pooling
(INBOX_POOL_MODE), two server connections for many clients:

- claim_apply from 8 clients at once, a third of the deliveries redelivered by
  another client: every effect exactly once, whichever backend ran it; in transaction
  pooling the clients' transactions do move between backends (so the per-backend
  plan caches and the typing of untyped parameters are exercised cold and warm on
  each), in session pooling each client keeps one;
- a relay's take and its acknowledgement by lease in two transactions, which in
  transaction pooling may run on different backends (the backend that took does not
  always see the ack, which then finds the lease's events by scanning): every event
  sent once, none left;
- session-bound leases refused with 0A000 where the database says it is pooled
  (idempotent_inbox.behind_pooler), plain leases taken.

Prints TAP for prove.  Connects with the PG* variables (to the pooler).
"""
import os
import random
import sys
import threading

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import psycopg  # noqa: E402
from inbox_tap import connect, done, eq, ok, own_schema, run_scenario  # noqa: E402

MODE = os.environ.get("INBOX_POOL_MODE", "")
SCHEMA = "pooled"
CLIENTS = 8
MESSAGES = 600
# The effect, with the message id, account and amount as $1, $2, $3.
EFFECT = (f"WITH l AS (INSERT INTO {SCHEMA}.ledger (message_id, account, amount) "
          f"VALUES ($1, $2, $3)) UPDATE {SCHEMA}.accounts SET balance = balance + $3 WHERE id = $2")


def scenario_setup():
    with connect() as conn:
        ok(conn.execute("SHOW idempotent_inbox.behind_pooler").fetchone()[0] == "on",
           f"{MODE} pooling: the database says it is pooled (behind_pooler = on)")
        own_schema(conn, SCHEMA)
        conn.execute(f"SELECT inbox.create_inbox('{SCHEMA}.inbox')")
        conn.execute(f"CREATE TABLE {SCHEMA}.accounts (id text PRIMARY KEY, balance int NOT NULL)")
        conn.execute(f"INSERT INTO {SCHEMA}.accounts SELECT 'acct-' || i, 0 "
                     "FROM generate_series(0, 9) i")
        # Not unique: an effect applied twice would show as two rows.
        conn.execute(f"CREATE TABLE {SCHEMA}.ledger (message_id text, account text, amount int)")


def deliveries():
    """Every message once, a third of them again, shuffled: (id, account, amount)."""
    messages = [(f"m{i}", f"acct-{i % 10}", 1 + i % 7) for i in range(MESSAGES)]
    rng = random.Random(28)
    batch = messages + rng.sample(messages, MESSAGES // 3)
    rng.shuffle(batch)
    return messages, batch


def consume(batch, outcomes, backends, errors):
    """One client: each delivery in a transaction of its own, as a consumer runs."""
    try:
        with connect(autocommit=False) as conn:
            seen = set()
            for mid, account, amount in batch:
                with conn.transaction():
                    # Untyped parameters from psycopg: the hook types them from the
                    # statements, on whichever backend the transaction runs.
                    row = conn.execute(
                        f"SELECT inbox.claim_apply('{SCHEMA}.inbox', %s, %s, %s, %s, %s), "
                        "pg_backend_pid()", (mid, EFFECT, mid, account, amount)).fetchone()
                outcomes.append((mid, row[0]))
                seen.add(row[1])
            backends.append(seen)
    except Exception as e:  # noqa: BLE001 - reported as a failed assertion
        errors.append(repr(e))


def scenario_concurrent_claims():
    messages, batch = deliveries()
    outcomes, backends, errors = [], [], []
    threads = [threading.Thread(target=consume, args=(batch[i::CLIENTS], outcomes, backends, errors))
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eq(errors, [], f"{MODE}: {CLIENTS} clients through the pooler raise nothing")
    applied = [m for m, o in outcomes if o == "applied"]
    eq((len(applied), len(set(applied))), (MESSAGES, MESSAGES),
       f"{MODE}: each of {MESSAGES} messages applied exactly once, redeliveries duplicate")
    eq(sum(1 for _, o in outcomes if o == "duplicate"), len(batch) - MESSAGES,
       f"{MODE}: every redelivery answered duplicate")
    with connect() as conn:
        ledger = conn.execute(f"SELECT count(*), count(DISTINCT message_id) FROM {SCHEMA}.ledger").fetchone()
        eq(tuple(ledger), (MESSAGES, MESSAGES), f"{MODE}: the ledger holds each effect once")
        balances = dict(conn.execute(f"SELECT id, balance FROM {SCHEMA}.accounts").fetchall())
    want = {}
    for _, account, amount in messages:
        want[account] = want.get(account, 0) + amount
    eq(balances, want, f"{MODE}: every balance is exact")
    moved = sum(1 for seen in backends if len(seen) > 1)
    if MODE == "transaction":
        ok(moved > 0, "transaction pooling: clients' transactions ran on more than one backend",
           f"backends per client: {backends}")
    else:
        eq(moved, 0, f"{MODE} pooling: each client kept its backend")


def scenario_relay_across_backends():
    with connect() as conn:
        conn.execute(f"SELECT inbox.create_outbox('{SCHEMA}.outbox')")
        for i in range(50):
            conn.execute(f"SELECT inbox.emit('{SCHEMA}.outbox', 'pay', %s, "
                         "jsonb_build_object('n', %s::int))", (f"k{i % 5}", i))
    sent, errors = [], []

    def relay():
        try:
            with connect() as conn:
                while True:
                    rows = conn.execute(
                        f"SELECT event_id, lease FROM inbox.relay_take('{SCHEMA}.outbox', 7)").fetchall()
                    if not rows:
                        # Another relay may hold events still: wait for its ack.
                        left = conn.execute(f"SELECT count(*) FROM {SCHEMA}.outbox "
                                            "WHERE sent_at IS NULL").fetchone()[0]
                        if left == 0:
                            return
                        continue
                    conn.execute(f"SELECT inbox.relay_ack('{SCHEMA}.outbox', %s)", (rows[0][1],))
                    sent.extend(r[0] for r in rows)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=relay) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eq(errors, [], f"{MODE}: three relays through the pooler raise nothing")
    eq((len(sent), len(set(sent))), (50, 50),
       f"{MODE}: every event taken and acknowledged by lease once")


def scenario_session_bound_refused():
    with connect() as conn:
        try:
            conn.execute(f"SELECT inbox.acquire('{SCHEMA}.inbox', 'lease-1', '1 minute', NULL, true)")
            ok(False, f"{MODE}: a session-bound lease is refused")
        except psycopg.Error as e:
            eq(e.sqlstate, "0A000", f"{MODE}: a session-bound lease is refused (0A000)")
        status = conn.execute(f"SELECT status FROM inbox.acquire('{SCHEMA}.inbox', 'lease-1', "
                              "'1 minute')").fetchone()[0]
        eq(status, "acquired", f"{MODE}: a plain lease is taken")


def scenario_session_bound_unguarded():
    """Why behind_pooler exists: with it off, a session-bound lease taken through
    transaction pooling belongs to a server connection, not to the client.  When the
    pooler closes that connection (here: its backend is terminated, as a pooler's
    server_lifetime or a failover would end it) while the client still works, the
    lease is over, another attempt takes it, and the first client learns it only at
    finish (55I01)."""
    if MODE != "transaction":
        return
    with connect() as first, connect() as other:
        # other holds one of the two server connections, so first's lease is taken on
        # the other one and other can end it without ending itself.
        with other.transaction():
            other.execute("SELECT 1")
            with first.transaction():
                first.execute("SET LOCAL idempotent_inbox.behind_pooler = off")
                token, holder = first.execute(
                    f"SELECT token, pg_backend_pid() FROM inbox.acquire('{SCHEMA}.inbox', "
                    "'lease-2', '1 hour', NULL, true)").fetchone()
            other.execute("SELECT pg_terminate_backend(%s, 5000)", (holder,))
        status = other.execute(f"SELECT status FROM inbox.acquire('{SCHEMA}.inbox', 'lease-2', "
                               "'1 hour')").fetchone()[0]
        eq(status, "acquired", "transaction pooling, behind_pooler off: the session-bound lease "
                               "ended with its server connection, the client still connected")
        try:
            first.execute(f"SELECT inbox.finish('{SCHEMA}.inbox', 'lease-2', %s, '{{}}')", (token,))
            ok(False, "the first client's finish is refused")
        except psycopg.Error as e:
            eq(e.sqlstate, "55I01", "the first client learns it at finish: its token is superseded")


def main():
    for scenario in (scenario_setup, scenario_concurrent_claims, scenario_relay_across_backends,
                     scenario_session_bound_refused, scenario_session_bound_unguarded):
        run_scenario(scenario)
    return done()


if __name__ == "__main__":
    sys.exit(main())
