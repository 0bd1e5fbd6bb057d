#!/usr/bin/env python3
"""relay.py: publish an outbox's events to RabbitMQ, at least once, in commit order
per key.

    PGHOST=... PGDATABASE=... python3 relay.py --outbox shop_outbox --amqp-port 5672 \\
        --exchange shop.events

Each round takes a batch with inbox.relay_take (a lease), publishes every event to a
durable topic exchange (routing key = the event's topic) with publisher confirms, and
marks the batch sent with inbox.relay_ack only once the broker has confirmed every
message of it.  So a crash anywhere loses nothing:
  - killed before the broker confirmed: the lease runs out and a relay takes the
    events again;
  - killed after the confirm, before relay_ack: the same, and the broker gets those
    messages twice.  Each carries the event's stable message_id, so the consumer's
    inbox answers the second copy as a duplicate.
A broker that refuses a message (no queue bound to its topic, or a nack) gets it back
later: the relay gives back the rest of the batch with a delay, and the later events
of the same keys wait behind it.  Several relays may run against one outbox.

Only Debian's python3-psycopg and python3-pika.  --crash-before-ack RATE makes the
relay SIGKILL itself, with that probability per batch, between the broker's confirms
and relay_ack: the window the chaos test wants to hit.
"""
import argparse
import json
import os
import random
import signal
import sys
import time

import pika
import psycopg
from psycopg.rows import namedtuple_row

TAKE = """SELECT event_id, message_id, topic, key, payload, payload_bytes, headers,
                 attempt, lease
            FROM inbox.relay_take(%s, %s, %s::interval)"""


def message(row, outbox):
    """The AMQP message of one event: its body as it was emitted, the stable id, and
    the event's headers plus what a consumer may want to log."""
    if row.payload_bytes is not None:
        body, content_type = bytes(row.payload_bytes), "application/octet-stream"
    else:
        body, content_type = json.dumps(row.payload).encode(), "application/json"
    headers = dict(row.headers)
    headers.update({"x-outbox": outbox, "x-event-id": row.event_id,
                    "x-attempt": row.attempt})
    if row.key is not None:
        headers["x-key"] = row.key
    return body, pika.BasicProperties(message_id=str(row.message_id), delivery_mode=2,
                                      content_type=content_type, headers=headers)


class Relay:
    def __init__(self, args):
        self.args = args
        self.db = None
        self.channel = None
        self.amqp = None
        self.published = 0

    def connect(self):
        if self.db is None:
            self.db = psycopg.connect(self.args.dsn, autocommit=True, row_factory=namedtuple_row)
        if self.channel is None:
            self.amqp = pika.BlockingConnection(pika.ConnectionParameters(
                self.args.amqp_host, self.args.amqp_port, heartbeat=2,
                blocked_connection_timeout=10, socket_timeout=5))
            self.channel = self.amqp.channel()
            self.channel.confirm_delivery()
            self.channel.exchange_declare(self.args.exchange, "topic", durable=True)

    def drop_amqp(self):
        try:
            if self.amqp is not None and self.amqp.is_open:
                self.amqp.close()
        except pika.exceptions.AMQPError:
            pass
        self.amqp = self.channel = None

    def publish(self, rows):
        """Publish rows in order; returns the ids the broker confirmed before it refused
        one or the connection broke, and the error (None if all went)."""
        confirmed = []
        for row in rows:
            body, props = message(row, self.args.outbox)
            try:
                # Blocks until the broker confirms; mandatory: an unroutable message
                # comes back as an error instead of vanishing.
                self.channel.basic_publish(self.args.exchange, row.topic, body, props,
                                           mandatory=True)
            except (pika.exceptions.UnroutableError, pika.exceptions.NackError) as e:
                return confirmed, e
            except pika.exceptions.AMQPError as e:
                self.drop_amqp()
                return confirmed, e
            confirmed.append(row.event_id)
        return confirmed, None

    def round(self):
        """One batch; returns how many events it took."""
        self.connect()
        rows = self.db.execute(TAKE, (self.args.outbox, self.args.batch, self.args.lease)).fetchall()
        if not rows:
            return 0
        lease = rows[0].lease
        confirmed, error = self.publish(rows)
        if error is None and random.random() < self.args.crash_before_ack:
            os.kill(os.getpid(), signal.SIGKILL)
        if confirmed:
            self.db.execute("SELECT inbox.relay_ack(%s, %s, %s)",
                            (self.args.outbox, lease, confirmed))
        if error is not None:
            print(f"relay: broker refused or lost event {rows[len(confirmed)].event_id}: "
                  f"{type(error).__name__}; giving the rest back", file=sys.stderr)
            self.db.execute("SELECT inbox.relay_release(%s, %s, NULL, %s::interval)",
                            (self.args.outbox, lease, self.args.retry_after))
        self.published += len(confirmed)
        return len(rows)

    def run(self):
        idle_since = time.monotonic()
        backoff = 0.1
        while True:
            try:
                taken = self.round()
                backoff = 0.1
            except psycopg.OperationalError as e:
                # The server went away (a crash, a restart): our lease, if any, runs
                # out and the events are taken again.
                print(f"relay: database: {e}".strip(), file=sys.stderr)
                self.db = None
                taken = 0
                time.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
            except pika.exceptions.AMQPError as e:
                print(f"relay: broker: {type(e).__name__}", file=sys.stderr)
                self.drop_amqp()
                taken = 0
                time.sleep(backoff)
                backoff = min(backoff * 2, 2.0)
            if taken:
                idle_since = time.monotonic()
            elif self.args.exit_when_idle and time.monotonic() - idle_since > self.args.exit_when_idle:
                return
            else:
                time.sleep(self.args.poll)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    p.add_argument("--outbox", required=True)
    p.add_argument("--amqp-host", default="127.0.0.1")
    p.add_argument("--amqp-port", type=int, default=5672)
    p.add_argument("--exchange", required=True)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--lease", default="10 seconds", help="how long a batch is ours")
    p.add_argument("--retry-after", default="1 second",
                   help="how long a refused event waits before it is sent again")
    p.add_argument("--poll", type=float, default=0.05, help="seconds between empty takes")
    p.add_argument("--exit-when-idle", type=float, default=0,
                   help="exit after this many seconds without events (0: run forever)")
    p.add_argument("--crash-before-ack", type=float, default=0.0)
    p.add_argument("--seed", type=int)
    args = p.parse_args(argv)
    random.seed(args.seed)
    Relay(args).run()


if __name__ == "__main__":
    main()
