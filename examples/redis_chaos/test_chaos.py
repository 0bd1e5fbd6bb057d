#!/usr/bin/env python3
"""A short run of the Redis chaos demo (demo.py) with a fixed seed.  Asserts that the
inbox designs (C and E) end exact, and that the run really exercised what it claims to:
consumers were SIGKILLed in every window, C with whole polls in flight, XAUTOCLAIM
redelivered entries, C applied its polls with one claim_apply_many call each and
recognised redelivered payments and payments repeated inside a poll, E's parallel
workers completed offsets out of order, above gaps that SIGKILLs left behind for its
restarts to find in resume_points, and the design without deduplication (A) did apply
duplicates.  B and D are allowed to be right by luck.  The poison payments: C and E
quarantine exactly them, each after MAX_ATTEMPTS failed attempts, none applied, and
every claim path of C answers 'quarantined' to them afterwards; A and B loop on them
until the supervisor gives up, and D drops them.  Also checks the referee itself:
it refuses a balance change that names no payment and counts an id named twice twice.
Prints TAP for prove, one line per assertion.  Connects with the PG* environment
variables; needs a database where idempotent_inbox is installed.  Needs redis-server,
python3-redis and python3-psycopg.
"""
import os
import random
import sys
from collections import Counter

import psycopg
import redis

import demo
import payments
import referee
import report
import supervisor
from designs import MAX_ATTEMPTS, schema_of

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import at_least, died, done, eq, ok, run_scenario  # noqa: E402

# Seed 23 plans, among others, 8 crashes between D's two COMMITs, and for C, whose
# polls are the stream cut into hundreds (11 polls), 2 polls killed before COMMIT and 5
# after COMMIT before XACK, and 4 payments resent into the poll of their first
# delivery; for E, 3 entries killed before COMMIT and 5 after COMMIT before XACK:
# the assertions below do not hang on one lucky kill.
EVENTS, KILLS, SEED, CRASH_RATE = 1000, 4, 23, 0.005
POLL = 100


def server_gone(port):
    try:
        redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1).ping()
    except redis.ConnectionError:
        return True
    return False


def main():
    try:
        outcome = demo.run(EVENTS, KILLS, SEED, CRASH_RATE, say=lambda line: None)
    except Exception:  # noqa: BLE001 - reported as the failure it is
        died("the chaos run finished with every entry acknowledged but the poison of the "
             "designs that loop")
        return done()
    ok(True, "the chaos run finished with every entry acknowledged but the poison of the "
       "designs that loop")
    for line in (demo.summary(outcome) + "\n\n" + report.table(outcome.results)).splitlines():
        print(f"# {line}")

    c, a = outcome.result("c"), outcome.result("a")
    ok(c.actual == c.expected, "C (claim_apply_many): every account's balance is right",
       f"got:  {c.actual}\nwant: {c.expected}")
    ok(c.twice == 0 and c.lost == 0,
       "C (claim_apply_many): the referee saw each payment applied exactly once",
       f"{c.twice} applied twice, {c.lost} lost")
    # demo.run makes its payments first from random.Random(seed).
    made = payments.make_payments(EVENTS, random.Random(SEED), SEED)
    ids = [p.id for p in made if not p.poison]
    poison = sorted(p.id for p in made if p.poison)
    ledger = referee.applications("c")
    ok(ledger == Counter(ids),
       "C (claim_apply_many): the referee's ledger holds every payment id but the poison "
       "ones once, and nothing else",
       f"{len(ledger)} ids, {sum(ledger.values())} rows, want {len(ids)}")
    at_least(outcome.supervisor_kills, 1, "the supervisor SIGKILLed consumers at random times")
    for point, where in demo.POINTS.items():
        at_least(outcome.planned_crashes[point], 1, f"a consumer was SIGKILLed {where}")
    at_least(c.kills, 1, "C's consumer was SIGKILLed")
    batch_path(outcome)
    at_least(outcome.reclaimed["c"], 1, "XAUTOCLAIM redelivered entries to C's restarted consumer")
    offsets_path(outcome, Counter(ids))
    poison_path(outcome, poison)
    ok(sum(a.actual.values()) > sum(a.expected.values()),
       "A (no dedup) ends above the right balance: duplicates were delivered and applied",
       f"A: {sum(a.actual.values())}, expected {sum(a.expected.values())}")
    # A resent poison payment cannot be applied twice: at most one resend per poison.
    at_least(a.twice, outcome.resent - len(poison) + 1,
             "A applied every producer resend and at least one consumer redelivery twice")
    ok(server_gone(outcome.redis_port), "the private Redis server is stopped")
    run_scenario(referee_checks)
    return done()


def batch_path(outcome):
    """C took its polls whole: one claim_apply_many call per poll, crashes with a poll in
    flight, and the duplicates answered inside the call."""
    def c(name):
        return outcome.stat("c", name)

    entries, calls = c("entries"), c("batches")
    # A fresh poll holds 100 entries, all but the stream's last; a restart's reclaimed
    # entries are at most one poll (C has one poll pending at a time).  One call per
    # entry would make this 1.
    ok(calls > 0 and entries / calls >= POLL / 2,
       "C applied its polls with one claim_apply_many call each",
       f"{entries} entries in {calls} calls")
    for point in ("before_commit", "before_ack"):
        crashes, in_flight = c(f"crash:{point}"), c(f"crash_in_flight:{point}")
        # Only the stream's last poll is short.
        ok(crashes >= 1 and in_flight >= crashes * POLL / 2,
           f"C was SIGKILLed {demo.POINTS[point]} with a whole poll in flight",
           f"{crashes} planned crashes, {in_flight} entries in flight")
    # A poll killed after COMMIT comes back whole, and every entry of it is a duplicate.
    at_least(outcome.caught_redeliveries["c"], POLL * c("crash:before_ack"),
             "C's claim_apply_many answered 'duplicate' to every payment of a poll "
             "redelivered after COMMIT")
    at_least(c("skipped_in_batch"), 1,
             "C's claim_apply_many answered 'duplicate' to a payment resent into the same poll")


def offsets_path(outcome, want_ledger):
    """E: exact, every payment once, with its offsets completed out of order on parallel
    workers, SIGKILLs leaving gaps that resume_points reports, and claim_offset's false
    for redeliveries and resends."""
    e = outcome.result("e")

    def stat(name):
        return outcome.stat("e", name)

    ok(e.actual == e.expected, "E (claim_offset, parallel): every account's balance is right",
       f"got:  {e.actual}\nwant: {e.expected}")
    ok(e.twice == 0 and e.lost == 0,
       "E (claim_offset, parallel): the referee saw each payment applied exactly once",
       f"{e.twice} applied twice, {e.lost} lost")
    ledger = referee.applications("e")
    ok(ledger == want_ledger,
       "E (claim_offset, parallel): the referee's ledger holds every payment id but the "
       "poison ones once, and nothing else",
       f"{len(ledger)} ids, {sum(ledger.values())} rows, want {len(want_ledger)}")
    # Counted inside each transaction after its claim: the watermark, which counts the
    # transaction's own offset, was below it.  In order, this would be 0.
    at_least(stat("above_watermark"), EVENTS // 10,
             "E's workers completed offsets out of order, above the partition's watermark")
    at_least(stat("max_gaps"), 2, "E's partition had more than one gap at once")
    for point in ("before_commit", "before_ack"):
        at_least(stat(f"crash:{point}"), 1,
                 f"E was SIGKILLed {demo.POINTS[point]} of one entry, its other workers "
                 "wherever they were")
    at_least(stat("resume_completed"), 1,
             "a restarted E consumer found offsets completed above a gap in resume_points")
    applied, mismatch = stat("resume_applied"), stat("resume_mismatch")
    ok(applied >= 1 and mismatch == 0,
       "claim_offset answered false to every redelivered entry resume_points called applied",
       f"{applied} redelivered entries resume_points called applied, {mismatch} answered true")
    at_least(stat("skipped_resend"), 1,
             "claim_offset answered false to a payment resent by the producer")
    with referee.connect(schema_of("e"), autocommit=True) as conn:
        rows = conn.execute("""SELECT "offset", completed_above, gaps, generation
                                 FROM inbox.streams
                                WHERE inbox = 'payments'::regclass""").fetchall()
    ok(len(rows) == 1 and rows[0][:3] == (EVENTS - 1, 0, 0) and rows[0][3] > 1,
       "E's partition ends with its watermark at the last offset, no gap, and a restart's "
       "generation", f"inbox.streams: {rows}")


def poison_path(outcome, poison):
    """The poison payments: quarantined by the inbox designs after MAX_ATTEMPTS, never
    applied; redelivered forever by A and B, dropped by D."""
    ok(len(poison) == max(1, round(EVENTS * payments.POISON_RATE)) == len(outcome.poison),
       "the producer sent poison payments", f"{poison}")
    for key, name in (("c", "C (claim_apply_many)"), ("e", "E (claim_offset, parallel)")):
        quarantine = outcome.quarantine[key]
        ok(sorted(quarantine) == poison
           and all(state == "quarantined" and attempts == MAX_ATTEMPTS
                   and error == "bigint out of range"
                   for state, attempts, error in quarantine.values()),
           f"{name}: inbox.quarantine holds exactly the poison payments, each quarantined "
           f"after {MAX_ATTEMPTS} failed attempts", f"{quarantine}, want {poison}")
        ledger = referee.applications(key)
        eq(sum(ledger[pid] for pid in poison), 0,
           f"{name}: the referee's ledger has no row for a poison payment")
        with referee.connect(schema_of(key), autocommit=True) as conn:
            stats = conn.execute("""SELECT quarantined FROM inbox.stats
                                     WHERE inbox = 'payments'::regclass""").fetchone()
        eq(stats and stats[0], len(poison), f"{name}: inbox.stats counts them quarantined")
        ok(outcome.result(key).exact and key in outcome.drained,
           f"{name}: exact, and its group drained past the poison")
    at_least(outcome.stat("c", "fallbacks"), 1,
             "C redid a poll holding a poison payment one payment at a time")
    # Afterwards every claim path answers 'quarantined' and runs nothing: the statement
    # would fail if it ran.
    with referee.connect(schema_of("c")) as conn:
        one = conn.execute("""SELECT inbox.claim_apply('payments', %s::text,
                                  'SELECT 1/0')::text,
                                     (SELECT outcome::text FROM inbox.claim_apply_many(
                                          'payments', ARRAY[%s::text], 'SELECT 1/0')),
                                     inbox.try_claim('payments', %s::text)::text,
                                     inbox.claim('payments', %s::text)""",
                           (poison[0],) * 4).fetchone()
        conn.rollback()
    eq(list(one), ["quarantined", "quarantined", "quarantined", False],
       "C's claim_apply, claim_apply_many, try_claim and claim answer a quarantined "
       "payment without running it")
    for key in ("a", "b"):
        looping = outcome.looping.get(key)
        ok(looping is not None and looping[1] >= len(poison)
           and looping[2] >= looping[1] * (supervisor.LOOP_DELIVERIES - 1)
           and not outcome.result(key).exact,
           f"{key.upper()} loops on the poison: its poison entries were redelivered "
           f"{supervisor.LOOP_DELIVERIES - 1} times each and more, and never drained",
           f"{looping}")
    d = outcome.result("d")
    ok("d" in outcome.drained and d.dropped >= len(poison) and not d.quarantined
       and not d.exact,
       "D drops the poison: acknowledged after the failure, no record of it",
       f"dropped {d.dropped}, poison {len(poison)}")
    ok("quarantined" in demo.verdict(outcome),
       "the verdict names the quarantined poison payments", demo.verdict(outcome))


def referee_checks():
    """The referee's instrument on its own: paid_by must name what an UPDATE applies,
    and each id named is one application."""
    with referee.connect(schema_of("a")) as conn:
        try:
            conn.execute("UPDATE accounts SET balance = balance + 1 WHERE id = 'acct-01'")
            ok(False, "the referee refuses a balance change that names no payment")
        except psycopg.errors.IntegrityConstraintViolation:
            ok(True, "the referee refuses a balance change that names no payment")
        conn.rollback()
        conn.execute("""UPDATE accounts SET balance = balance + 2,
                                            paid_by = ARRAY['probe', 'probe']
                         WHERE id = 'acct-01'""")
        eq(conn.execute("""SELECT count(*) FROM chaos_referee.applied
                            WHERE payment_id = 'probe'""").fetchone()[0], 2,
           "the referee counts a payment named twice in one UPDATE as applied twice")
        eq(conn.execute("SELECT count(*) FROM accounts WHERE paid_by IS NOT NULL").fetchone()[0],
           0, "the referee's column is never stored")
        conn.rollback()


if __name__ == "__main__":
    sys.exit(main())
