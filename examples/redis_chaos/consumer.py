#!/usr/bin/env python3
"""One consumer process of one design, started (and restarted) by the supervisor.

    consumer.py DESIGN NAME REDIS_PORT SEED CRASH_RATE

On start it first takes back the entries its group left pending (XAUTOCLAIM): those a
killed predecessor had read but not acknowledged.  That is the redelivery.  Then it
reads new entries (XREADGROUP) until it is stopped.  Every entry is XACKed only after
the design's handle() has committed.

The crash plan kills the process with SIGKILL at the design's crash points (and just
before XACK) for a CRASH_RATE share of the payments.  Whether a payment crashes at a
point depends only on the seed, the design, the payment and the point, so a run's
planned crashes can be reproduced; the supervisor adds kills at random times on top.
"""
import os
import random
import signal
import sys

import broker
import referee
from designs import DESIGNS, schema_of
from payments import Payment

BATCH = 10          # entries per XREADGROUP; all of them stay pending until acknowledged
BLOCK_MS = 1000


class CrashPlan:
    def __init__(self, r, design_key, seed, rate):
        self.r, self.design_key, self.seed, self.rate = r, design_key, seed, rate
        self.payment = None
        self.redelivered = False

    def __call__(self, point):
        # A redelivered entry never crashes by plan: its plan would repeat forever.
        if self.redelivered or self.rate <= 0:
            return
        draw = random.Random(f"{self.seed}/{self.design_key}/{self.payment.id}/{point}")
        if draw.random() < self.rate:
            # Counted first: once killed, this process can tell nobody anything.
            self.r.hincrby(broker.STATS, f"{self.design_key}:crash:{point}", 1)
            os.kill(os.getpid(), signal.SIGKILL)


def reclaim(r, group, name):
    """Every entry pending in the group, now owned by us.  Min idle 0: its owner is dead
    (one consumer per group runs at a time), so there is no reason to wait."""
    entries, cursor = [], "0-0"
    while True:
        cursor, claimed, *_ = r.xautoclaim(broker.STREAM, group, name, 0, cursor, count=100)
        entries += claimed
        if cursor == "0-0":
            return entries


def forget_dead_consumers(r, group, name):
    """Tidy the group: the consumers before us are gone and own nothing any more."""
    for consumer in r.xinfo_consumers(broker.STREAM, group):
        if consumer["name"] != name and consumer["pending"] == 0:
            r.xgroup_delconsumer(broker.STREAM, group, consumer["name"])


def main(design_key, name, port, seed, rate):
    design = DESIGNS[design_key]()
    r = broker.connect(port)
    conn = referee.connect(schema_of(design_key))
    group = broker.group_of(design_key)
    crash = CrashPlan(r, design_key, seed, float(rate))

    def process(entry_id, fields, redelivered):
        crash.payment = Payment.from_fields(fields)
        crash.redelivered = redelivered
        outcome = design.handle(conn, crash.payment, crash)
        if outcome == "duplicate":
            r.hincrby(broker.STATS, f"{design_key}:skipped", 1)
            if redelivered:
                r.hincrby(broker.STATS, f"{design_key}:skipped_redelivery", 1)
        crash("before_ack")
        r.xack(broker.STREAM, group, entry_id)

    pending = reclaim(r, group, name)
    if pending:
        r.hincrby(broker.STATS, f"{design_key}:reclaimed", len(pending))
    forget_dead_consumers(r, group, name)
    for entry_id, fields in pending:
        process(entry_id, fields, redelivered=True)
    while True:
        for _stream, entries in r.xreadgroup(group, name, {broker.STREAM: ">"},
                                             count=BATCH, block=BLOCK_MS):
            for entry_id, fields in entries:
                process(entry_id, fields, redelivered=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
