#!/usr/bin/env python3
"""consumer.py: apply the messages of a RabbitMQ queue exactly once, with
inbox.claim_apply, and acknowledge each to the broker only after COMMIT.

The downstream side of the pipeline: each payment event credits an account in the
receiving tables (recv_ledger, recv_balances) in the same transaction as the claim of
its message_id in the inbox recv_inbox.  The broker redelivers what was not acked (a
consumer killed before or after COMMIT, a broker restart, the relay publishing an
event twice): the claim answers 'duplicate' and the credit does not run again.

Manual acks, a prefetch window, only Debian's python3-psycopg and python3-pika.
--crash-after-commit RATE makes the consumer SIGKILL itself, with that probability
per message, between COMMIT and the broker ack.
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

# $1 the event's message id is the inbox key; the effect records the event id so that
# the test can check each account's order.
APPLY = """SELECT inbox.claim_apply('recv_inbox', %s::uuid,
    'WITH credit AS (INSERT INTO recv_ledger (order_id, account, amount, event_id)
                     VALUES ($1, $2, $3, $4) RETURNING account, amount)
     INSERT INTO recv_balances AS b (account, balance)
     SELECT account, amount FROM credit
     ON CONFLICT (account) DO UPDATE SET balance = b.balance + excluded.balance',
    %s::bigint, %s::text, %s::bigint, %s::bigint)"""


def consume(args):
    db = None
    outcomes = {}
    idle_since = time.monotonic()
    while True:
        amqp = None
        try:
            if db is None:
                db = psycopg.connect(args.dsn, autocommit=True)
            amqp = pika.BlockingConnection(pika.ConnectionParameters(
                args.amqp_host, args.amqp_port, heartbeat=2,
                blocked_connection_timeout=10, socket_timeout=5))
            channel = amqp.channel()
            channel.basic_qos(prefetch_count=args.prefetch)
            for method, props, body in channel.consume(args.queue, inactivity_timeout=0.5):
                if method is None:
                    if args.exit_when_idle and time.monotonic() - idle_since > args.exit_when_idle:
                        print(f"consumer: {outcomes}", file=sys.stderr)
                        return outcomes
                    continue
                idle_since = time.monotonic()
                event = json.loads(body)
                with db.transaction():
                    outcome = db.execute(APPLY, (props.message_id, event["order_id"],
                                                 props.headers["x-key"], event["amount"],
                                                 props.headers["x-event-id"])).fetchone()[0]
                    # For the report: every delivery that reached a COMMIT, and its answer.
                    db.execute("INSERT INTO recv_deliveries (outcome) VALUES (%s)", (outcome,))
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                if random.random() < args.crash_after_commit:
                    os.kill(os.getpid(), signal.SIGKILL)
                channel.basic_ack(method.delivery_tag)
        except psycopg.OperationalError as e:
            # The transaction is gone with the server; the broker redelivers the message.
            print(f"consumer: database: {e}".strip(), file=sys.stderr)
            db = None
        except pika.exceptions.AMQPError as e:
            print(f"consumer: broker: {type(e).__name__}", file=sys.stderr)
        finally:
            try:
                if amqp is not None and amqp.is_open:
                    amqp.close()
            except pika.exceptions.AMQPError:
                pass
        time.sleep(0.2)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    p.add_argument("--amqp-host", default="127.0.0.1")
    p.add_argument("--amqp-port", type=int, default=5672)
    p.add_argument("--queue", required=True)
    p.add_argument("--prefetch", type=int, default=20)
    p.add_argument("--exit-when-idle", type=float, default=0)
    p.add_argument("--crash-after-commit", type=float, default=0.0)
    p.add_argument("--seed", type=int)
    args = p.parse_args(argv)
    random.seed(args.seed)
    consume(args)


if __name__ == "__main__":
    main()
