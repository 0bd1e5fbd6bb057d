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

An entry whose payment failed (handle_batch's 'failed': rolled back, a poison payment)
is not acknowledged: it stays pending, and every RETRY_MS, between its polls of new
entries, the consumer reads its own pending entries again (XREADGROUP from id 0) and
hands them over once more, as a redelivery.  Every other outcome is acknowledged, 'dropped' and 'quarantined' too.
"""
import os
import random
import signal
import sys
import time

import broker
import referee
from designs import DESIGNS, schema_of
from payments import Payment

POLL = 10           # entries per XREADGROUP at least; all of them stay pending until acknowledged
BLOCK_MS = 1000
RETRY_MS = 50       # a failed entry is read again this often, while new ones flow on
OUTCOMES = ("failed", "dropped", "quarantined")     # counted as {design}:{outcome}


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
        """True if an entry failed and was left pending."""
        failing = False
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
                failing = count(crash.batch, outcomes, redelivered) or failing
                continue
            outcomes = design.handle_batch(conn, crash.batch, crash)
            failing = count(crash.batch, outcomes, redelivered) or failing
            crash("before_ack")
            done = [entry_id for (entry_id, _fields), outcome in zip(batch, outcomes)
                    if outcome != "failed"]
            if done:
                r.xack(broker.STREAM, group, *done)
        return failing

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
        for outcome in OUTCOMES:
            n = outcomes.count(outcome)
            if n:
                pipe.hincrby(broker.STATS, f"{design_key}:{outcome}", n)
        if getattr(design, "fell_back", False):
            pipe.hincrby(broker.STATS, f"{design_key}:fallbacks", 1)
        pipe.execute()
        return "failed" in outcomes

    pending = reclaim(r, group, name)
    if pending:
        r.hincrby(broker.STATS, f"{design_key}:reclaimed", len(pending))
    forget_dead_consumers(r, group, name)
    failing = process(pending, redelivered=True)
    retry_at = time.monotonic() + RETRY_MS / 1000
    while True:
        for _stream, entries in r.xreadgroup(group, name, {broker.STREAM: ">"},
                                             count=max(POLL, design.batch),
                                             block=RETRY_MS if failing else BLOCK_MS):
            failing = process(entries, redelivered=False) or failing
        if failing and time.monotonic() >= retry_at:
            # Our own pending entries, all of them: only those we left unacknowledged
            # after a failure (a poll is acknowledged before the next one is read).
            failing = False
            for _stream, entries in r.xreadgroup(group, name, {broker.STREAM: "0"}):
                failing = process(entries, redelivered=True) or failing
            retry_at = time.monotonic() + RETRY_MS / 1000


if __name__ == "__main__":
    main(*sys.argv[1:])
