#!/usr/bin/env python3
"""One consumer process of one design, started (and restarted) by the supervisor.

    consumer.py DESIGN NAME REDIS_PORT SEED CRASH_RATE

On start it first takes back the entries its group left pending (XAUTOCLAIM): those a
killed predecessor had read but not acknowledged.  That is the redelivery.  Then it
reads new entries (XREADGROUP) until it is stopped.  The entries go to the design's
handle_batch() in batches of the design's size (one for A, B and D, a whole poll of up
to 100 for C), and every batch is XACKed only after handle_batch() has committed.  E
takes polls of 40 to handle_entries(), whose worker threads XACK each entry after its
own COMMIT; its offset is the entry's seq field, and its generation the incarnation
in NAME (DESIGN-INCARNATION, counted up by the supervisor at each restart).

The crash plan kills the process with SIGKILL at the design's crash points (and just
before XACK) for a CRASH_RATE share of the payments: a batch crashes at a point if any
of its payments does, so C's crashes hit it with a whole poll in flight; E's workers
ask about their own entry only, so a crash of E hits one entry and kills the others
wherever they are.  Whether a payment crashes at a point depends only on the seed, the
design, the payment and the point, so a run's planned crashes can be reproduced; the
supervisor adds kills at random times on top.
"""
import os
import random
import signal
import sys

import broker
import referee
from designs import DESIGNS, schema_of
from payments import Payment

POLL = 10           # entries per XREADGROUP at least; all of them stay pending until acknowledged
BLOCK_MS = 1000


class CrashPlan:
    def __init__(self, r, design_key, seed, rate):
        self.r, self.design_key, self.seed, self.rate = r, design_key, seed, rate
        self.batch = []
        self.redelivered = False

    def __call__(self, point, batch=None):
        """batch: the payments in flight at this point, the whole batch by default."""
        batch = self.batch if batch is None else batch
        # A redelivered entry never crashes by plan: its plan would repeat forever.
        if self.redelivered or self.rate <= 0:
            return
        if any(self._draw(payment, point) < self.rate for payment in batch):
            # Counted first: once killed, this process can tell nobody anything.
            pipe = self.r.pipeline()
            pipe.hincrby(broker.STATS, f"{self.design_key}:crash:{point}", 1)
            pipe.hincrby(broker.STATS, f"{self.design_key}:crash_in_flight:{point}",
                         len(batch))
            pipe.execute()
            os.kill(os.getpid(), signal.SIGKILL)

    def _draw(self, payment, point):
        return random.Random(f"{self.seed}/{self.design_key}/{payment.id}/{point}").random()


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
    parallel = getattr(design, "parallel", False)
    if parallel:
        design.start(lambda: referee.connect(schema_of(design_key)), r, broker.STATS,
                     int(name.rsplit("-", 1)[1]), seed)

    def process(entries, redelivered):
        for start in range(0, len(entries), design.batch):
            batch = entries[start:start + design.batch]
            crash.batch = [Payment.from_fields(fields) for _entry_id, fields in batch]
            crash.redelivered = redelivered
            if parallel:
                outcomes = design.handle_entries(
                    [(entry_id, payment, int(fields["seq"]))
                     for (entry_id, fields), payment in zip(batch, crash.batch)],
                    crash, lambda entry_id: r.xack(broker.STREAM, group, entry_id),
                    redelivered)
                count(crash.batch, outcomes, redelivered)
                continue
            outcomes = design.handle_batch(conn, crash.batch, crash)
            count(crash.batch, outcomes, redelivered)
            crash("before_ack")
            r.xack(broker.STREAM, group, *[entry_id for entry_id, _fields in batch])

    def count(batch, outcomes, redelivered):
        ids = [p.id for p in batch]
        skipped = [n for n, outcome in enumerate(outcomes) if outcome == "duplicate"]
        pipe = r.pipeline()
        pipe.hincrby(broker.STATS, f"{design_key}:batches", 1)
        pipe.hincrby(broker.STATS, f"{design_key}:entries", len(batch))
        pipe.hincrby(broker.STATS, f"{design_key}:skipped", len(skipped))
        if redelivered:
            pipe.hincrby(broker.STATS, f"{design_key}:skipped_redelivery", len(skipped))
        else:
            # A payment the producer resent into the same batch: one call, two entries.
            pipe.hincrby(broker.STATS, f"{design_key}:skipped_in_batch",
                         sum(1 for n in skipped if ids[n] in ids[:n]))
        pipe.execute()

    pending = reclaim(r, group, name)
    if pending:
        r.hincrby(broker.STATS, f"{design_key}:reclaimed", len(pending))
    forget_dead_consumers(r, group, name)
    process(pending, redelivered=True)
    while True:
        for _stream, entries in r.xreadgroup(group, name, {broker.STREAM: ">"},
                                             count=max(POLL, design.batch), block=BLOCK_MS):
            process(entries, redelivered=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
