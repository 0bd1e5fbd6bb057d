#!/usr/bin/env python3
"""Redis chaos demo: five consumer designs under SIGKILL, and only the inbox stays exact.

A private Redis server carries payment events on a stream to five consumer groups, one
per design (designs.py): C and E use the inbox, C by payment id a poll at a time, E by
offset on parallel workers that complete the entries out of order.  Each group's
consumer runs as a separate process that is killed with SIGKILL over and over, by its
crash plan and by the supervisor; every kill is followed by a restart that takes back
the pending entries and processes them again.  A few payments are poison: crediting
one fails on every attempt.  The inbox designs quarantine them after MAX_ATTEMPTS
(inbox.record_failure) and move on; A and B redeliver them forever, until the
supervisor gives up on them, and D drops them.  At the end every entry has been
acknowledged by every group (but the poison ones of a design that loops), and the table
compares each design's balances with the right ones, which leave the poison out.

    PGDATABASE=mydb python3 demo.py [--events N] [--kills K] [--seed S] [--long]

Needs redis-server, python3-redis and python3-psycopg, and a database (named by the PG*
variables) where idempotent_inbox is installed or may be created.  It replaces the
schemas chaos_a .. chaos_e and chaos_referee there.  Exits 0 if and only if designs C
and E are exact, every poison payment quarantined: A, B and D are expected to be wrong.
"""
import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass

import psycopg
import redis

import broker
import children
import payments
import referee
import report
from designs import DESIGNS, MAX_ATTEMPTS

# The designs built on the inbox: exact by design, and the run fails if one is not.
INBOX_DESIGNS = [key for key, design in DESIGNS.items() if getattr(design, "inbox", False)]
from supervisor import Supervisor

POINTS = {"before_commit": "before COMMIT",
          "before_ack": "after COMMIT before XACK",
          "before_record": "between D's two COMMITs"}


@dataclass
class Outcome:
    results: list           # report.Result, one per design
    payments: int
    resent: int
    supervisor_kills: int
    planned_crashes: dict   # point -> count, all designs together
    reclaimed: dict         # design key -> entries taken back by XAUTOCLAIM
    caught_redeliveries: dict   # design key -> redelivered entries it skipped as duplicates
    seconds: float
    drained: dict           # design key -> seconds until its group had every entry acknowledged
    redis_port: int
    stats: dict             # the consumers' counters (broker.STATS), as ints
    poison: list            # the poison payment ids
    looping: dict           # design key -> (seconds, poison entries, redeliveries)
    quarantine: dict        # design key -> referee.quarantine() at the end

    def result(self, design_key):
        return next(r for r in self.results if r.design_key == design_key)

    def stat(self, design_key, name):
        return self.stats.get(f"{design_key}:{name}", 0)

    @property
    def kills(self):
        return self.supervisor_kills + sum(self.planned_crashes.values())


def run(events, kills, seed, crash_rate, resend_rate=0.02, say=print):
    """The whole run, quiet but for say(line); returns an Outcome."""
    started = time.monotonic()
    # Far beyond what a run needs on two cores: only stuck consumers hit it.
    timeout = 120 + 0.1 * events
    rng = random.Random(seed)
    all_payments = payments.make_payments(events, rng, seed)
    expected = payments.expected_balances(all_payments)
    keys = list(DESIGNS)
    referee.prepare()
    with tempfile.TemporaryDirectory(prefix="redis_chaos.") as workdir, \
            broker.RedisServer(workdir) as server:
        r = server.client()
        broker.create_groups(r, keys)
        resent = payments.publish(r, all_payments, rng, resend_rate)
        say(f"{events} payments to {len(payments.ACCOUNTS)} accounts through a private Redis "
            f"stream at 127.0.0.1:{server.port}")
        poison = [p.id for p in all_payments if p.poison]
        say(f"(the producer sent {resent} of them twice, and {len(poison)} are poison), one "
            f"consumer group and process per design,")
        say(f"each XACKing only after COMMIT; SIGKILLs at random times and planned points "
            f"(seed {seed}) ...")
        sup = Supervisor(r, server.port, workdir, keys, seed, crash_rate, kills, rng)
        sup.run(timeout)
        stats = {name: int(n) for name, n in r.hgetall(broker.STATS).items()}

    def stat(name):
        return stats.get(name, 0)

    results, quarantine = [], {}
    for key in keys:
        crashes = sum(stat(f"{key}:crash:{point}") for point in POINTS)
        quarantine[key] = referee.quarantine(key)
        results.append(report.judge(key, expected, referee.balances(key),
                                    referee.applications(key), all_payments,
                                    sup.killed[key] + crashes, quarantine[key],
                                    sup.looping.get(key), stat(f"{key}:dropped")))
    return Outcome(
        results=results, payments=events, resent=resent,
        supervisor_kills=sum(sup.killed.values()),
        planned_crashes={point: sum(stat(f"{k}:crash:{point}") for k in keys) for point in POINTS},
        reclaimed={k: stat(f"{k}:reclaimed") for k in keys},
        caught_redeliveries={k: stat(f"{k}:skipped_redelivery") for k in keys},
        seconds=time.monotonic() - started, drained=sup.drained, redis_port=server.port,
        stats=stats, poison=poison, looping=sup.looping, quarantine=quarantine)


def summary(outcome):
    planned = sum(outcome.planned_crashes.values())
    where = ", ".join(f"{n} {POINTS[point]}" for point, n in outcome.planned_crashes.items())
    drained = ", ".join(f"{DESIGNS[k].title[0]} {s:.1f} s"
                        for k, s in sorted(outcome.drained.items()))
    drained += " (each group, until every entry was acknowledged)"
    if outcome.looping:
        drained += "\n         never: " + ", ".join(
            f"{DESIGNS[k].title[0]} (given up at {s:.1f} s, its poison still pending)"
            for k, (s, _e, _r) in sorted(outcome.looping.items()))
    poison = len(outcome.poison)

    def letters(keys):
        return " and ".join(DESIGNS[k].title[0] for k in keys)

    def each(values):
        return " and ".join(str(v) for v in values)

    quarantined = ", ".join(
        f"{DESIGNS[k].title[0]} "
        f"{sum(1 for state, *_ in outcome.quarantine[k].values() if state == 'quarantined')}"
        for k in INBOX_DESIGNS)
    others = []
    if outcome.looping:
        loops = sorted(outcome.looping)
        others.append(f"{letters(loops)} redelivered theirs "
                      f"{each(outcome.looping[k][2] for k in loops)} times until given up")
    droppers = [k for k in DESIGNS if outcome.stat(k, "dropped")]
    if droppers:
        others.append(f"{letters(droppers)} acknowledged "
                      f"{each(outcome.stat(k, 'dropped') for k in droppers)} after the failure")

    def c(name):
        return outcome.stat("c", name)

    def e(name):
        return outcome.stat("e", name)

    # A restart's resume_points and claim_offset must agree: true for none of these.
    resumed = f"all {e('resume_applied')} that resume_points listed as applied"
    if e("resume_mismatch"):
        resumed = (f"but true to {e('resume_mismatch')} of the {e('resume_applied')} that "
                   f"resume_points listed as applied")

    return (f"chaos: {outcome.kills} SIGKILLs, {outcome.supervisor_kills} at random times, "
            f"{planned} planned:\n       {where}\n"
            f"redelivery: after the restarts XAUTOCLAIM took back "
            f"{sum(outcome.reclaimed.values())} pending entries ({outcome.seconds:.0f} s)\n"
            f"batches: C committed {c('batches')} claim_apply_many calls for {c('entries')} "
            f"entries; {c('skipped_redelivery')} redelivered\n"
            f"         and {c('skipped_in_batch')} resent inside one poll came back 'duplicate'\n"
            f"offsets: E's {DESIGNS['e'].workers} workers completed {e('fresh')} offsets, "
            f"{e('above_watermark')} of them above the watermark\n"
            f"         (up to {e('max_gaps')} gaps at once); restarts found "
            f"{e('resume_completed')} offsets completed above a gap;\n"
            f"         claim_offset answered false to {e('skipped_resend')} resends and "
            f"{e('skipped_redelivery')} redelivered entries,\n         {resumed}\n"
            f"poison: {poison} payments fail on every attempt ('bigint out of range');\n"
            f"         {letters(INBOX_DESIGNS)} redelivered them "
            f"{each(outcome.stat(k, 'failed') for k in INBOX_DESIGNS)} times, recording each "
            f"failure,\n         and quarantined each at its attempt {MAX_ATTEMPTS} "
            f"(inbox.quarantine: {quarantined});\n"
            f"         C redid {outcome.stat('c', 'fallbacks')} polls one payment at a time"
            + "".join(f";\n         {other}" for other in others) + "\n"
            f"drained: {drained}")


def inbox_exact(outcome):
    return all(outcome.result(key).exact for key in INBOX_DESIGNS)


def verdict(outcome):
    wrong = [outcome.result(key) for key in INBOX_DESIGNS if not outcome.result(key).exact]
    if wrong:
        return "verdict: FAILED: " + "; ".join(f"{r.title} is {r.verdict()}" for r in wrong)
    inboxes = " and ".join(key.upper() for key in INBOX_DESIGNS)
    lucky = [r.title[0] for r in outcome.results if r.design_key not in INBOX_DESIGNS and r.exact]
    poison = len(outcome.poison)
    good = outcome.payments - poison
    line = (f"verdict: only {inboxes}, the inbox designs, are exact: {good} payments, each "
            f"applied once,\n         and {poison} poison ones quarantined, despite "
            f"{outcome.kills} SIGKILLs")
    if lucky:
        line = (f"verdict: {inboxes}, the inbox designs, are exact, {poison} poison payments "
                f"quarantined; {' and '.join(lucky)} escaped this run (try --long or another "
                f"--seed)")
    stuck = [DESIGNS[k].title[0] for k in sorted(outcome.looping)]
    dropping = [r.title[0] for r in outcome.results if r.dropped]
    others = []
    if stuck:
        others.append(f"{' and '.join(stuck)} loop{'s' if len(stuck) == 1 else ''} on them")
    if dropping:
        others.append(f"{' and '.join(dropping)} dropped them")
    if others:
        line += " (" + ", ".join(others) + ")"
    return line


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=3000, help="payments to produce")
    parser.add_argument("--kills", type=int, default=10,
                        help="SIGKILLs the supervisor sends at random times")
    parser.add_argument("--crash-rate", type=float, default=0.002,
                        help="share of payments that crash a consumer at each planned point")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--long", action="store_true",
                        help="20000 payments and 60 random kills (about five minutes)")
    opts = parser.parse_args()
    if opts.long:
        opts.events, opts.kills = max(opts.events, 20000), max(opts.kills, 60)
    children.exit_on_signals()
    try:
        outcome = run(opts.events, opts.kills, opts.seed, opts.crash_rate,
                      say=lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print("interrupted: Redis and the consumers are stopped", file=sys.stderr)
        return 130
    except (RuntimeError, psycopg.Error, redis.RedisError) as e:
        print(f"demo failed: {e}", file=sys.stderr)
        return 2
    print("", summary(outcome), "", report.table(outcome.results), "", verdict(outcome),
          sep="\n")
    return 0 if inbox_exact(outcome) else 1


if __name__ == "__main__":
    sys.exit(main())
