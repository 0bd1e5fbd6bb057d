#!/usr/bin/env python3
"""A short run of the outbox pipeline (pipeline.py) with a fixed seed, under chaos:
producers emit into an outbox in the transactions that take the orders, two relays
publish to a private RabbitMQ with publisher confirms, a consumer applies with
claim_apply and acks after COMMIT, while a relay, the consumer, the broker and the
PostgreSQL server are each SIGKILLed at least once, and the relays and the consumer
kill themselves in the windows between effect and acknowledgement.

Asserts that every committed order was applied downstream exactly once (none lost,
none twice, no phantom of a rolled-back order), that every balance is exact and every
account's events were applied in commit order; and that the run exercised what it
claims: every kind of kill happened, events were published more than once and the
inbox answered the redeliveries as duplicates.  Prints TAP for prove.  Runs its own
PostgreSQL cluster and broker (services.py); needs rabbitmq-server, python3-pika and
python3-psycopg, and skips (saying why) where rabbitmq-server is not installed.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "..", "test", "python"))
from inbox_tap import at_least, died, done, eq, ok  # noqa: E402

import services  # noqa: E402

if not os.path.exists(services.RABBITMQ_SERVER):
    print("1..0 # SKIP rabbitmq-server is not installed")
    sys.exit(0)

import pipeline  # noqa: E402

try:
    v = pipeline.run(pipeline.options(["--orders", "600", "--seconds", "15", "--seed", "11",
                                       "--self-crash", "0.03"]))
except Exception:  # noqa: BLE001 - one failure, with the logs on stderr
    died("the pipeline ran to the end and drained")
    sys.exit(done())

ok(v["orders"] >= 600, f"the producers committed {v['orders']} orders")
eq(v["events"], v["orders"], "one event per committed order in the outbox")
eq(v["lost"], 0, "no committed order lost downstream")
eq(v["phantoms"], 0, "no order applied that was not committed")
eq(v["applied"], v["orders"], "every order applied exactly once downstream")
eq(v["wrong_balances"], 0, "every account's balance is the sum of its orders")
eq(v["out_of_order"], 0, "each account's events applied in the order they committed")
for kind in ("relay", "consumer", "broker", "server"):
    at_least(v["kills"][kind], 1, f"the {kind} was SIGKILLed mid-run")
at_least(v["republished"], 1, "some events were published more than once (a relay died or its broker did)")
at_least(v["duplicates"], 1, "the consumer's inbox answered redelivered events as duplicates")
sys.exit(done())
