#!/usr/bin/env python3
"""The outbox pipeline under chaos: producers -> outbox -> relay -> RabbitMQ -> consumer.

    python3 pipeline.py [--orders 2000] [--seconds 40] [--seed 7]

Producers (two processes) take orders: each transaction inserts into shop_orders and
emits one event per order into the outbox shop_outbox, keyed by account, in the same
transaction.  Two relays (relay.py) publish the outbox to a durable RabbitMQ topic
exchange with publisher confirms; a consumer (consumer.py) applies each event to the
receiving side with inbox.claim_apply and acks after COMMIT.  Meanwhile a chaos loop
SIGKILLs, at random, a relay, the consumer, the broker or the whole PostgreSQL server,
and starts it again; the relays and the consumer also kill themselves now and then in
the windows that matter (after the broker confirmed, before relay_ack; after COMMIT,
before the broker ack).

At the end every committed order must have been applied exactly once downstream, each
account's balance must be the sum of its orders, and each account's events must have
been applied in the order their transactions committed.  PostgreSQL and RabbitMQ are
private to the run (services.py): needs initdb/pg_ctl on PATH, the extension installed,
rabbitmq-server, python3-psycopg and python3-pika.
"""
import argparse
import os
import random
import sys
import tempfile
import time

import psycopg

import services

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "redis_chaos"))
import children  # noqa: E402

EXCHANGE, QUEUE, TOPIC = "shop.events", "payments", "payments.captured"
ACCOUNTS = 25

SCHEMA = """
CREATE EXTENSION idempotent_inbox;
-- The producing side: orders, and the outbox their events go through.
CREATE TABLE shop_orders (order_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                          account text NOT NULL, amount bigint NOT NULL);
SELECT inbox.create_outbox('shop_outbox');
-- The receiving side (in the same database, for the check): an inbox keyed by the
-- events' message ids, a ledger with one row per applied order, the balances.
SELECT inbox.create_inbox('recv_inbox', 'uuid');
CREATE TABLE recv_ledger (order_id bigint PRIMARY KEY, account text NOT NULL,
                          amount bigint NOT NULL, event_id bigint NOT NULL,
                          applied bigint GENERATED ALWAYS AS IDENTITY);
CREATE TABLE recv_balances (account text PRIMARY KEY, balance bigint NOT NULL);
CREATE TABLE recv_deliveries (outcome text NOT NULL);
"""


def produce(dsn, orders, seed, pace):
    """Take orders until `orders` have committed, one to three per transaction, and
    emit an event for each in the same transaction, pausing about `pace` seconds
    between transactions so that the chaos meets a flow of them.  A crash makes the
    last commit uncertain: what counts is shop_orders, never this process's memory."""
    rnd = random.Random(seed)
    db = None
    while True:
        try:
            if db is None:
                db = psycopg.connect(dsn, autocommit=True)
            if db.execute("SELECT count(*) FROM shop_orders").fetchone()[0] >= orders:
                return
            with db.transaction():
                for _ in range(rnd.randint(1, 3)):
                    account = f"acct-{rnd.randrange(ACCOUNTS):02d}"
                    amount = rnd.randint(1, 1000)
                    db.execute("""WITH o AS (INSERT INTO shop_orders (account, amount)
                                             VALUES (%s, %s) RETURNING order_id)
                                  SELECT inbox.emit('shop_outbox', %s, %s,
                                             jsonb_build_object('order_id', order_id, 'amount', %s))
                                    FROM o""", (account, amount, TOPIC, account, amount))
            time.sleep(rnd.uniform(0, 2 * pace))
        except psycopg.OperationalError:
            db = None
            time.sleep(0.2)


def setup_broker(rabbit):
    import pika
    conn = pika.BlockingConnection(rabbit.parameters())
    ch = conn.channel()
    ch.exchange_declare(EXCHANGE, "topic", durable=True)
    ch.queue_declare(QUEUE, durable=True)
    ch.queue_bind(QUEUE, EXCHANGE, routing_key="payments.#")
    conn.close()


class Pipeline:
    def __init__(self, workdir, args):
        self.args = args
        self.rnd = random.Random(args.seed)
        self.pg = services.Postgres(workdir)
        self.rabbit = services.RabbitMQ(workdir)
        self.workdir = workdir
        self.kills = {"relay": 0, "consumer": 0, "broker": 0, "server": 0}
        self.procs = {}
        self.victims = []

    def dsn(self):
        return self.pg.dsn()

    def spawn(self, name, argv):
        log = open(os.path.join(self.workdir, f"{name}.log"), "a")
        self.procs[name] = children.spawn([sys.executable, *argv], stdout=log, stderr=log, cwd=HERE)

    def start_relay(self, n):
        self.spawn(f"relay{n}", [os.path.join(HERE, "relay.py"), "--dsn", self.dsn(),
                                 "--outbox", "shop_outbox", "--amqp-port", str(self.rabbit.port),
                                 "--exchange", EXCHANGE, "--batch", "50", "--lease", "3 seconds",
                                 "--crash-before-ack", str(self.args.self_crash),
                                 "--seed", str(self.rnd.randrange(1 << 30))])

    def start_consumer(self):
        self.spawn("consumer", [os.path.join(HERE, "consumer.py"), "--dsn", self.dsn(),
                                "--amqp-port", str(self.rabbit.port), "--queue", QUEUE,
                                "--crash-after-commit", str(self.args.self_crash),
                                "--seed", str(self.rnd.randrange(1 << 30))])

    def restart_dead(self):
        """A relay or consumer that killed itself (or was killed) starts again."""
        for name, proc in list(self.procs.items()):
            if proc.poll() is not None and not name.startswith("producer"):
                if name == "consumer":
                    self.start_consumer()
                else:
                    self.start_relay(int(name[-1]))

    def chaos_once(self):
        # Each kind of victim in turn, in a shuffled order, so that every kind is hit.
        if not self.victims:
            self.victims = ["relay", "relay", "consumer", "consumer", "broker", "server"]
            self.rnd.shuffle(self.victims)
        victim = self.victims.pop()
        self.kills[victim] += 1
        if victim == "relay":
            proc = self.procs[f"relay{self.rnd.randint(1, 2)}"]
            proc.kill()
            proc.wait()
        elif victim == "consumer":
            self.procs["consumer"].kill()
            self.procs["consumer"].wait()
        elif victim == "broker":
            self.rabbit.restart()
        else:
            self.pg.kill9()

    def chaos_due(self, started):
        """The chaos lasts the seconds asked for, and on until every kind of victim has
        been hit: on a loaded machine a broker's or a server's restart can take most of
        the time, and a run that never killed one would prove nothing about it."""
        return time.monotonic() - started < self.args.seconds or min(self.kills.values()) == 0

    def count(self, sql):
        with psycopg.connect(self.dsn()) as db:
            return db.execute(sql).fetchone()[0]

    def drained(self):
        try:
            return self.count("""SELECT (SELECT count(*) FROM shop_orders)
                                        = (SELECT count(*) FROM recv_ledger)
                                    AND NOT EXISTS (SELECT FROM shop_outbox WHERE sent_at IS NULL)""")
        except psycopg.OperationalError:
            return False

    def run(self):
        self.pg.start()
        with psycopg.connect(self.pg.dsn("postgres"), autocommit=True) as db:
            db.execute("CREATE DATABASE outbox_demo")
        with psycopg.connect(self.dsn(), autocommit=True) as db:
            db.execute(SCHEMA)
        self.rabbit.start()
        setup_broker(self.rabbit)
        for n in (1, 2):
            self.start_relay(n)
        self.start_consumer()
        for n in (1, 2):
            # Two producers of two orders per transaction on average share the orders.
            pace = self.args.seconds / max(self.args.orders / 4, 1)
            self.spawn(f"producer{n}", ["-c", f"import pipeline; pipeline.produce({self.dsn()!r}, "
                                        f"{self.args.orders}, {self.rnd.randrange(1 << 30)}, {pace})"])
        started = time.monotonic()
        next_chaos = started + self.rnd.uniform(1, 3)
        while any(self.procs[p].poll() is None for p in ("producer1", "producer2")) or \
                self.chaos_due(started):
            if time.monotonic() > next_chaos and self.chaos_due(started):
                self.chaos_once()
                next_chaos = time.monotonic() + self.rnd.uniform(1, 2.5)
            self.restart_dead()
            time.sleep(0.1)
            if time.monotonic() - started > self.args.seconds + 120:
                raise RuntimeError("the producers did not finish")
        self.chaos_over = time.monotonic()
        deadline = time.monotonic() + 120
        while not self.drained():
            if os.environ.get("OUTBOX_PIPELINE_DEBUG"):
                print(self.count("SELECT format('%s orders, %s applied, %s unsent, %s leased', "
                                 "(SELECT count(*) FROM shop_orders), (SELECT count(*) FROM recv_ledger), "
                                 "(SELECT count(*) FROM shop_outbox WHERE sent_at IS NULL), "
                                 "(SELECT count(*) FROM shop_outbox WHERE sent_at IS NULL AND lease IS NOT NULL))"),
                      {n: p.poll() for n, p in self.procs.items()}, file=sys.stderr)
            if time.monotonic() > deadline:
                raise RuntimeError("the pipeline did not drain within 120 s of the last kill")
            self.restart_dead()
            time.sleep(0.5)
        self.drain_seconds = time.monotonic() - self.chaos_over
        return self.verdict()

    def verdict(self):
        with psycopg.connect(self.dsn()) as db:
            q = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
            v = {
                "orders": q("SELECT count(*) FROM shop_orders"),
                "events": q("SELECT count(*) FROM shop_outbox"),
                "applied": q("SELECT count(*) FROM recv_ledger"),
                "lost": q("SELECT count(*) FROM shop_orders o WHERE NOT EXISTS "
                          "(SELECT FROM recv_ledger l WHERE l.order_id = o.order_id)"),
                "phantoms": q("SELECT count(*) FROM recv_ledger l WHERE NOT EXISTS "
                              "(SELECT FROM shop_orders o WHERE o.order_id = l.order_id)"),
                "wrong_balances": q("""SELECT count(*) FROM (SELECT account, sum(amount) AS s
                                         FROM shop_orders GROUP BY account) o
                                       FULL JOIN recv_balances b USING (account)
                                      WHERE o.s IS DISTINCT FROM b.balance"""),
                # Applied out of order: a later event of an account applied before an
                # earlier one (event ids of a key grow in commit order).
                "out_of_order": q("""SELECT count(*) FROM (SELECT event_id, lag(event_id)
                                        OVER (PARTITION BY account ORDER BY applied) AS prev
                                        FROM recv_ledger) x WHERE prev > event_id"""),
                "duplicates": q("SELECT count(*) FROM recv_deliveries WHERE outcome = 'duplicate'"),
                "republished": q("SELECT count(*) FROM shop_outbox WHERE attempts > 1"),
            }
        v["kills"] = dict(self.kills)
        v["drain_seconds"] = round(self.drain_seconds, 1)
        return v

    def stop(self):
        for proc in self.procs.values():
            children.stop(proc, grace=2)
        self.rabbit.stop()
        self.pg.stop()


def run(args):
    with tempfile.TemporaryDirectory(prefix="outbox_pipeline_") as workdir:
        pipeline = Pipeline(workdir, args)
        try:
            return pipeline.run()
        except Exception:
            for name in sorted(os.listdir(workdir)):
                if name.endswith(".log"):
                    with open(os.path.join(workdir, name)) as f:
                        tail = f.read()[-2000:]
                    print(f"--- {name} ---\n{tail}", file=sys.stderr)
            raise
        finally:
            pipeline.stop()


def options(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--orders", type=int, default=2000, help="orders each producer waits for")
    p.add_argument("--seconds", type=float, default=30, help="how long the chaos lasts at least")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--self-crash", type=float, default=0.01,
                   help="probability per batch or message that a relay or the consumer kills itself")
    return p.parse_args(argv)


def main():
    children.exit_on_signals()
    args = options()
    print(f"outbox pipeline: {args.orders} orders, chaos for at least {args.seconds:.0f} s, "
          f"seed {args.seed}")
    v = run(args)
    print(f"  orders committed {v['orders']}, events {v['events']}, applied downstream "
          f"{v['applied']}")
    print(f"  kills: {', '.join(f'{k} {n}' for k, n in v['kills'].items())}; "
          f"self-kills in the ack windows: see republished/duplicates")
    print(f"  events published more than once {v['republished']}, duplicate deliveries "
          f"answered by the inbox {v['duplicates']}, drained {v['drain_seconds']} s after the last kill")
    exact = v["orders"] > 0 and v["lost"] == 0 and v["phantoms"] == 0 and v["wrong_balances"] == 0 \
        and v["applied"] == v["orders"] and v["out_of_order"] == 0
    print(f"  lost {v['lost']}, applied twice or phantom {v['phantoms']}, wrong balances "
          f"{v['wrong_balances']}, applied out of order {v['out_of_order']}")
    print("verdict: exactly once, in order per account" if exact else "verdict: WRONG")
    sys.exit(0 if exact else 1)


if __name__ == "__main__":
    main()
