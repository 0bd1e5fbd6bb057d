"""The five consumer designs, side by side.  Each credits accounts in a schema of its own.

handle_batch(conn, payments, crash) runs one delivery of a batch of payments on a
psycopg connection whose search_path is the design's schema, and returns 'applied' or
'duplicate' for each.  `batch` is how many entries one call gets: A, B and D handle one
payment per transaction, C a whole poll of up to 100 in one transaction.  The consumer
XACKs the batch after handle_batch returns, so every design acknowledges only after
COMMIT.  E is different (parallel = True): it hands a poll's entries to worker threads,
each entry in a transaction of its own on the worker's connection, and each worker
XACKs its entry after its COMMIT (handle_entries).  crash(point) is where the chaos may
SIGKILL the process: the named points (and before_ack, in the consumer) are the windows
that matter.  A crash before COMMIT is harmless to every design (the server rolls the
transaction back); the windows after a COMMIT are where the designs differ.

Poison payments (payments.py) fail inside their UPDATE on every attempt.  handle_batch
answers 'failed' for one the design rolled back and leaves pending (the consumer does
not XACK it and reads it again), 'dropped' for one it rolled back and acknowledges all
the same, and 'quarantined' for one the inbox quarantined (acknowledged: no claim will
ever run it).  A and B leave it pending, and so redeliver it forever; D acknowledges
it after the rollback, so it is gone without a trace; C and E record each failed
attempt with inbox.record_failure and acknowledge it once the inbox quarantines it.

Every UPDATE of a balance also sets paid_by to the payments it applies: that column is
the referee's instrument (referee.py), not part of any design.
"""
import queue
import random
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psycopg

CREDIT = "UPDATE accounts SET balance = balance + %s, paid_by = ARRAY[%s] WHERE id = %s"
# The inbox designs' failure path: after the failed attempt rolled back, a transaction
# of its own.  retry: leave it pending; quarantined: acknowledge it.
MAX_ATTEMPTS = 5
RECORD_FAILURE = "SELECT status::text, attempts FROM inbox.record_failure('payments', %s, %s)"
# A poison payment's error: a data exception (class 22, here 22003 bigint out of range).
# Anything else is a bug in the demo and kills the consumer with it.
POISON_ERROR = psycopg.errors.DataError


def first_line(error):
    return (str(error).splitlines() or [type(error).__name__])[0]


class PerMessage:
    """A, B and D: one payment, one transaction.  A payment whose transaction fails is
    rolled back and, by on_poison, left pending to be redelivered ('failed') or
    acknowledged all the same ('dropped')."""
    batch = 1
    on_poison = "failed"

    def setup(self, conn):
        pass

    def handle_batch(self, conn, payments, crash):
        return [self.attempt(conn, payment, crash) for payment in payments]

    def attempt(self, conn, payment, crash):
        try:
            return self.handle(conn, payment, crash)
        except POISON_ERROR:
            conn.rollback()
            return self.on_poison

    @staticmethod
    def credit(conn, payment):
        conn.execute(CREDIT, (payment.amount, payment.id, payment.account))


class NoDedup(PerMessage):
    """Applies every delivery: each redelivery and each resend is applied again."""
    key, title = "a", "A. no dedup"

    def handle(self, conn, payment, crash):
        self.credit(conn, payment)
        crash("before_commit")
        conn.commit()
        return "applied"


class MemorySet(PerMessage):
    """Remembers ids in the process.  Catches a duplicate that arrives while the same
    process is alive; a restart forgets them all, and a redelivery only ever follows
    a restart."""
    key, title = "b", "B. in-memory seen set"

    def __init__(self):
        self.seen = set()

    def handle(self, conn, payment, crash):
        if payment.id in self.seen:
            return "duplicate"
        self.credit(conn, payment)
        crash("before_commit")
        conn.commit()
        self.seen.add(payment.id)
        return "applied"


class Inbox:
    """idempotent_inbox: a whole poll claimed and applied by one claim_apply_many call.
    The claims of the ids and the effect commit together or not at all, so a redelivery
    after any crash finds the claims exactly when the effect is there.  The statement
    runs once, over the fresh payments only: $1 is their ids, $2 and $3 their accounts
    and amounts, cut to the same positions; a payment repeated inside the poll or
    replayed from an earlier one never reaches it.  It sums per account, because an
    UPDATE ... FROM changes each row once however many payments join it.

    A poison payment makes the whole statement fail.  The poll is rolled back and done
    again one payment per transaction with claim_apply (fallbacks counts such polls):
    the good payments are applied, and the poison one fails alone; its failure is
    recorded with record_failure in a transaction of its own.  'retry' leaves it
    pending, to be redelivered; at the inbox's MAX_ATTEMPTS it is 'quarantined', and
    acknowledged.  Every later delivery of it (a resend, or a redelivery after a kill)
    is answered 'quarantined' by claim_apply_many without reaching the statement, so
    a poll holding it no longer fails."""
    key, title = "c", "C. idempotent_inbox claim_apply_many"
    batch = 100
    inbox = True            # exact by design, not by luck
    # psycopg sends a list of str untyped: the casts type the arrays without the help
    # of the library's parse hook, which a session gets only once the library is loaded.
    # The amounts are numeric, so that a poison amount fails inside the statement, where
    # the sum is stored into the bigint balance, and not in the cast of the arguments.
    CLAIM_APPLY_MANY = """
        SELECT outcome::text FROM inbox.claim_apply_many('payments', %s::text[],
            'UPDATE accounts a SET balance = a.balance + m.total, paid_by = m.ids
               FROM (SELECT account, sum(amount) AS total, array_agg(id) AS ids
                       FROM unnest($1, $2, $3) AS u(id, account, amount)
                      GROUP BY account) m
              WHERE a.id = m.account',
            %s::text[], %s::numeric[])"""
    CLAIM_APPLY = """
        SELECT inbox.claim_apply('payments', %s,
            'UPDATE accounts SET balance = balance + $1, paid_by = ARRAY[$2] WHERE id = $3',
            %s::numeric, %s::text, %s::text)::text"""
    FAILED = {"retry": "failed", "quarantined": "quarantined", "applied": "duplicate"}

    def __init__(self):
        self.fell_back = False

    def setup(self, conn):
        conn.execute("SELECT inbox.create_inbox('payments')")
        conn.execute("SELECT inbox.set_max_attempts('payments', %s)", (MAX_ATTEMPTS,))

    def handle_batch(self, conn, payments, crash):
        self.fell_back = False
        try:
            outcomes = [row[0] for row in conn.execute(
                self.CLAIM_APPLY_MANY, ([p.id for p in payments],
                                        [p.account for p in payments],
                                        [p.amount for p in payments]))]
        except POISON_ERROR:
            conn.rollback()
            self.fell_back = True
            return [self.one(conn, payment) for payment in payments]
        crash("before_commit")
        conn.commit()
        return outcomes

    def one(self, conn, payment):
        """One payment in a transaction of its own; its failure in another."""
        try:
            outcome = conn.execute(self.CLAIM_APPLY, (payment.id, payment.amount, payment.id,
                                                      payment.account)).fetchone()[0]
            conn.commit()
            return outcome
        except POISON_ERROR as error:
            conn.rollback()
            status, _attempts = conn.execute(RECORD_FAILURE,
                                             (payment.id, first_line(error))).fetchone()
            conn.commit()
            return self.FAILED[status]


class SeparateStep(PerMessage):
    """Durable ids, but recorded in a transaction of their own after the effect's: a
    crash between the two commits leaves an applied payment whose id was never saved.
    A payment that fails is rolled back and acknowledged, so that it cannot hold the
    stream up: it is dropped, and nothing in the database says so."""
    key, title = "d", "D. id recorded in a separate step"
    on_poison = "dropped"

    def setup(self, conn):
        conn.execute("CREATE TABLE seen_ids (payment_id text PRIMARY KEY)")

    def handle(self, conn, payment, crash):
        if conn.execute("SELECT 1 FROM seen_ids WHERE payment_id = %s",
                        (payment.id,)).fetchone():
            conn.commit()
            return "duplicate"
        self.credit(conn, payment)
        crash("before_commit")
        conn.commit()
        crash("before_record")
        conn.execute("INSERT INTO seen_ids VALUES (%s)", (payment.id,))
        conn.commit()
        return "applied"


class ParallelOffsets:
    """idempotent_inbox's offsets, completed in any order: a poll's entries are shared
    out to WORKERS threads, each with a connection of its own, and every entry is one
    transaction: claim_offset records its offset and the payment is credited only if
    the answer is true, and both commit together; the worker XACKs the entry after its
    COMMIT.  The workers take the entries in a shuffled order and dawdle a little before
    COMMIT, so offsets complete above the partition's watermark, leaving gaps below
    them, and a SIGKILL leaves some done above gaps and others not: the partition's
    completed offsets record exactly which.

    The offset is the payment's sequence number on the stream, which the producer puts
    in each entry (field seq: 0, 1, 2, ...; a Redis entry id is not a dense integer).
    The producer numbers payments, not entries, so its resend of a payment carries the
    number of the first send, and claim_offset answers false to it as to a
    redelivery.  The stream is one partition (0) of the topic 'payments'; the
    generation is the consumer's incarnation, which grows with each restart, so the
    restarted consumer fences the partition against its predecessor's backends.

    A restarted consumer reads inbox.resume_points: the watermark, and the offsets
    completed above it.  A consumer could skip those without a transaction; this one
    hands its redelivered entries to claim_offset all the same and counts whether the
    two agree (every entry resume_points calls applied must answer false).

    A poison payment fails inside the transaction, which takes its claim_offset back
    with it: the offset stays open, a gap below the offsets completed above it.  The
    worker records the failure by payment id with record_failure, in a transaction of
    its own, and leaves the entry pending ('retry'); once the inbox quarantines the
    payment, the worker completes its offset with claim_offset alone, without the
    effect, so that the watermark moves past it, and acknowledges the entry.  The
    payment stays in inbox.quarantine, and a later delivery of its offset is answered
    false."""
    key = "e"
    batch = 40              # entries per poll, shared out to the workers
    workers = 4
    title = f"E. claim_offset, {workers} parallel workers"
    parallel = True
    inbox = True
    TOPIC, PARTITION = "payments", 0
    JITTER = 0.003          # seconds a worker may wait before COMMIT
    CLAIM = "SELECT inbox.claim_offset('payments', %s, %s, %s, generation => %s)"
    PROGRESS = """SELECT "offset", gaps FROM inbox.streams
                   WHERE inbox = 'payments'::regclass AND topic = %s AND "partition" = %s"""
    RESUME = """SELECT "offset", completed FROM inbox.resume_points('payments', %s)
                 WHERE "partition" = %s"""
    # HSET a counter to ARGV[2] if that is larger: the most gaps a worker saw.
    MAX_SCRIPT = """local v = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
                    if tonumber(ARGV[2]) > v then
                        redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
                    end"""

    def setup(self, conn):
        conn.execute("SELECT inbox.create_inbox('payments')")
        conn.execute("SELECT inbox.set_max_attempts('payments', %s)", (MAX_ATTEMPTS,))

    def start(self, connect, r, stats_key, incarnation, seed):
        """Once per process: the workers' connections, and where the partition stands."""
        self.r, self.stats_key, self.generation = r, stats_key, incarnation
        self.rng = random.Random(f"{seed}/{self.key}/{incarnation}")
        self.connections = queue.Queue()
        for _ in range(self.workers):
            self.connections.put(connect())
        self.pool = ThreadPoolExecutor(self.workers)
        conn = self.connections.get()
        row = conn.execute(self.RESUME, (self.TOPIC, self.PARTITION)).fetchone()
        conn.commit()
        self.connections.put(conn)
        watermark, completed = row if row else (None, [])
        self.resumed_watermark = -1 if watermark is None else watermark
        self.resumed_completed = set(completed or [])
        pipe = r.pipeline()
        pipe.hincrby(stats_key, f"{self.key}:resume_completed", len(self.resumed_completed))
        pipe.hincrby(stats_key, f"{self.key}:resumed_above_gap", 1 if completed else 0)
        pipe.execute()

    def applied_at_resume(self, seq):
        return seq <= self.resumed_watermark or seq in self.resumed_completed

    def handle_entries(self, entries, crash, ack, redelivered):
        """entries: [(entry id, Payment, seq)] of one poll; returns 'applied',
        'duplicate', 'failed' or 'quarantined' for each, in their order, once every
        worker is done with the poll."""
        order = list(range(len(entries)))
        self.rng.shuffle(order)
        twice = {seq for seq, n in Counter(seq for _e, _p, seq in entries).items() if n > 1}
        futures = {n: self.pool.submit(self._one, *entries[n], crash, ack, redelivered,
                                       entries[n][2] in twice)
                   for n in order}
        return [futures[n].result() for n in range(len(entries))]

    def _one(self, entry_id, payment, seq, crash, ack, redelivered, twice_in_poll):
        """One entry, on whichever worker runs it: 'applied' if it was fresh."""
        conn = self.connections.get()
        try:
            try:
                fresh = conn.execute(self.CLAIM, (self.TOPIC, self.PARTITION, seq,
                                                  self.generation)).fetchone()[0]
                above, gaps = False, 0
                if fresh:
                    PerMessage.credit(conn, payment)
                    # Inside the transaction: the watermark counts our own offset.
                    watermark, gaps = conn.execute(self.PROGRESS,
                                                   (self.TOPIC, self.PARTITION)).fetchone()
                    above = watermark is None or watermark < seq
            except POISON_ERROR as error:
                conn.rollback()
                return self._failed(conn, entry_id, payment, seq, error, ack)
            time.sleep(self.rng.uniform(0, self.JITTER))
            crash("before_commit", [payment])
            conn.commit()
            crash("before_ack", [payment])
            ack(entry_id)
        except BaseException:
            conn.rollback()
            raise
        finally:
            self.connections.put(conn)
        # Counted per entry, so that a kill loses the counts of the entries in flight only.
        stats = Counter(fresh=fresh, above_watermark=above)
        if not fresh and not redelivered:
            stats["skipped_resend"] = 1
            # Both sends of the payment were in this poll, on two workers at once.
            stats["skipped_same_poll"] = twice_in_poll
        if redelivered and self.applied_at_resume(seq):
            stats["resume_applied"] = 1
            stats["resume_mismatch"] = fresh
        pipe = self.r.pipeline()
        for name, n in stats.items():
            if n:
                pipe.hincrby(self.stats_key, f"{self.key}:{name}", int(n))
        pipe.eval(self.MAX_SCRIPT, 1, self.stats_key, f"{self.key}:max_gaps", gaps)
        pipe.execute()
        return "applied" if fresh else "duplicate"

    def _failed(self, conn, entry_id, payment, seq, error, ack):
        """After a poison payment's transaction rolled back: 'failed' (left pending)
        or 'quarantined' (its offset completed without the effect, and acknowledged)."""
        status, _attempts = conn.execute(RECORD_FAILURE,
                                         (payment.id, first_line(error))).fetchone()
        conn.commit()
        if status == "retry":
            return "failed"
        if status == "quarantined":
            conn.execute(self.CLAIM, (self.TOPIC, self.PARTITION, seq, self.generation))
            conn.commit()
        ack(entry_id)
        return "quarantined" if status == "quarantined" else "duplicate"


DESIGNS = {d.key: d for d in (NoDedup, MemorySet, Inbox, SeparateStep, ParallelOffsets)}


def schema_of(design_key):
    return f"chaos_{design_key}"
