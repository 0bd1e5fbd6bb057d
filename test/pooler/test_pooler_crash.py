#!/usr/bin/env python3
"""kill -9 through a pooler: consumers reach a private cluster through a private
PgBouncer in transaction pooling (test/pooler/pgbouncer.py), apply payments with
claim_apply and acknowledge an in-process broker only after COMMIT; the broker
redelivers whatever was not acknowledged, and a tenth of the messages twice anyway.
Meanwhile PgBouncer and the server are killed with SIGKILL and started again: at
random moments, and at the two moments that matter, with a consumer's effect applied
but not committed, and committed but not acknowledged (the consumer then dies too:
it drops its connection and acknowledges nothing).  Every payment must end applied
exactly once: the ledger holds each once and every balance is exact.  Prints TAP.
"""
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "python"))
sys.path.append(os.path.join(HERE, "..", "..", "examples", "outbox_rabbitmq"))
import psycopg  # noqa: E402
from inbox_tap import done, eq, ok, run_scenario  # noqa: E402
import services  # noqa: E402  (a private cluster that can be killed and restarted)
from pgbouncer import PgBouncer  # noqa: E402

MESSAGES = 1500
CONSUMERS = 3
DEADLINE = 180
EFFECT = ("WITH l AS (INSERT INTO ledger (message_id, account, amount) VALUES ($1, $2, $3)) "
          "UPDATE accounts SET balance = balance + $3 WHERE id = $2")
# Each kill, in a shuffled order: what is killed, and where (None: at any moment).
KILLS = [("pgbouncer", None), ("pgbouncer", None), ("server", None),
         ("pgbouncer", "before_commit"), ("server", "before_commit"),
         ("pgbouncer", "before_ack"), ("server", "before_ack")]


class Broker:
    """At-least-once delivery: a message goes back to the queue until acknowledged."""

    def __init__(self, messages, rng):
        self.queue = queue.Queue()
        self.unacked = {m[0] for m in messages}
        self.lock = threading.Lock()
        self.redelivered = 0
        deliveries = messages + rng.sample(messages, len(messages) // 10)
        rng.shuffle(deliveries)
        for m in deliveries:
            self.queue.put(m)

    def get(self):
        try:
            return self.queue.get(timeout=0.2)
        except queue.Empty:
            return None

    def ack(self, message):
        with self.lock:
            self.unacked.discard(message[0])

    def nack(self, message):
        with self.lock:
            self.redelivered += 1
        self.queue.put(message)

    def finished(self):
        with self.lock:
            return not self.unacked and self.queue.empty()


class Chaos:
    """Kills PgBouncer or the server now, or arms a kill for the next consumer that
    reaches a named point."""

    def __init__(self, pg, bouncer):
        self.pg, self.bouncer = pg, bouncer
        self.lock = threading.Lock()
        self.armed = None
        self.done = []          # (what, where) of each kill made

    def kill(self, what, where):
        if what == "pgbouncer":
            self.bouncer.kill9()
            self.bouncer.start()
        else:
            self.pg.kill9()     # and starts it again: crash recovery
        self.done.append((what, where))

    def arm(self, what, where):
        with self.lock:
            self.armed = (what, where)

    def point(self, where):
        """A consumer at where: True if a kill was armed for it (and is made now)."""
        with self.lock:
            if self.armed is None or self.armed[1] != where:
                return False
            what, self.armed = self.armed[0], None
        self.kill(what, where)
        return True


def applied(stats):
    return sum(1 for o in stats if not o.startswith("error"))


def consumer(broker, bouncer, chaos, stats, errors, stop):
    conn = None
    while not stop.is_set() and not broker.finished():
        message = broker.get()
        if message is None:
            continue
        mid, account, amount = message
        try:
            if conn is None:
                conn = psycopg.connect(host=bouncer.dir, port=bouncer.port, dbname="crash",
                                       user="postgres", prepare_threshold=None, connect_timeout=5)
            with conn.transaction():
                outcome = conn.execute("SELECT inbox.claim_apply('payments_inbox', %s, %s, %s, %s, %s)",
                                       (mid, EFFECT, mid, account, amount)).fetchone()[0]
                chaos.point("before_commit")
            if chaos.point("before_ack"):
                # The consumer dies with its payment committed and not acknowledged.
                conn.close()
                conn = None
                broker.nack(message)
                continue
            stats.append(outcome)
            broker.ack(message)
        except psycopg.Error as e:
            # The pooler or the server went away: nothing acknowledged, so redelivered.
            stats.append(f"error: {e}".strip())
            if conn is not None:
                conn.close()
            conn = None
            broker.nack(message)
            time.sleep(0.05)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
            broker.nack(message)
    if conn is not None:
        conn.close()


def scenario_crashes(workdir):
    rng = random.Random(int(os.environ.get("INBOX_CRASH_SEED", "28")))
    pg = services.Postgres(workdir)
    pg.start()
    bouncer = None
    try:
        subprocess.run(["createdb", "-h", pg.dir, "-p", str(pg.port), "-U", "postgres", "crash"],
                       check=True)
        with psycopg.connect(pg.dsn("crash"), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION idempotent_inbox")
            conn.execute("ALTER DATABASE crash SET idempotent_inbox.behind_pooler = on")
            conn.execute("ALTER DATABASE crash SET session_preload_libraries = 'idempotent_inbox'")
            conn.execute("SELECT inbox.create_inbox('payments_inbox')")
            conn.execute("CREATE TABLE accounts (id text PRIMARY KEY, balance int NOT NULL)")
            conn.execute("INSERT INTO accounts SELECT 'acct-' || i, 0 FROM generate_series(0, 19) i")
            conn.execute("CREATE TABLE ledger (message_id text, account text, amount int)")
        bouncer = PgBouncer(workdir, pg.dir, pg.port, {"crash": ("crash", "transaction")})
        bouncer.start()

        messages = [(f"pay-{i}", f"acct-{i % 20}", 1 + i % 9) for i in range(MESSAGES)]
        broker = Broker(messages, rng)
        chaos = Chaos(pg, bouncer)
        stats, errors, stop = [], [], threading.Event()
        threads = [threading.Thread(target=consumer, args=(broker, bouncer, chaos, stats, errors, stop))
                   for _ in range(CONSUMERS)]
        for t in threads:
            t.start()
        kills = KILLS[:]
        rng.shuffle(kills)
        deadline = time.monotonic() + DEADLINE
        for i, (what, where) in enumerate(kills):
            # At a random point of each stretch of the run, so that work is left for
            # the consumer that must reach an armed point.
            progress = MESSAGES * (i + rng.uniform(0.3, 0.9)) / (len(kills) + 1)
            while applied(stats) < progress and time.monotonic() < deadline:
                time.sleep(0.01)
            if where is None:
                chaos.kill(what, where)
            else:
                chaos.arm(what, where)
                while chaos.armed is not None and time.monotonic() < deadline and not broker.finished():
                    time.sleep(0.02)
        while not broker.finished() and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join()

        eq(errors, [], "consumers met only connection errors")
        failures = [o for o in stats if o.startswith("error")]
        # A redelivery of an acknowledged payment may still be queued: it would only
        # answer duplicate.
        ok(not broker.unacked, f"every payment acknowledged within {DEADLINE} s",
           f"{len(broker.unacked)} unacknowledged; the last errors: {failures[-3:]}")
        eq(sorted(chaos.done, key=repr), sorted(KILLS, key=repr),
           "PgBouncer killed 4 times and the server 3, once each between effect and commit "
           "and between commit and acknowledgement")
        ok(broker.redelivered > 0, f"killed transactions were redelivered ({broker.redelivered})")
        with psycopg.connect(pg.dsn("crash")) as conn:
            ledger = conn.execute("SELECT count(*), count(DISTINCT message_id) FROM ledger").fetchone()
            eq(tuple(ledger), (MESSAGES, MESSAGES), "the ledger holds each payment exactly once")
            balances = dict(conn.execute("SELECT id, balance FROM accounts").fetchall())
            claims = conn.execute("SELECT count(*) FROM payments_inbox").fetchone()[0]
        want = {}
        for _, account, amount in messages:
            want[account] = want.get(account, 0) + amount
        eq(balances, want, "every balance is exact")
        eq(claims, MESSAGES, "one claim per payment")
        ok(stats.count("duplicate") > 0,
           f"redeliveries of committed payments answered duplicate ({stats.count('duplicate')})")
    finally:
        if bouncer is not None:
            bouncer.stop()
        pg.stop()


def main():
    with tempfile.TemporaryDirectory(prefix="inbox_pooler_crash_") as workdir:
        run_scenario(scenario_crashes, workdir)
    return done()


if __name__ == "__main__":
    sys.exit(main())
