#!/usr/bin/env python3
"""A short run of the Redis chaos demo (demo.py) with a fixed seed.  Asserts that the
inbox design (C) ends exact, and that the run really exercised what it claims to:
consumers were SIGKILLed in every window, XAUTOCLAIM redelivered entries, the inbox
recognised redelivered payments, and the design without deduplication (A) did apply
duplicates.  B and D are allowed to be right by luck.  Prints TAP for prove, one line
per assertion.  Connects with the PG* environment variables; needs a database where
idempotent_inbox is installed.  Needs redis-server, python3-redis and python3-psycopg.
"""
import os
import sys

import redis

import demo
import report

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import at_least, died, done, ok  # noqa: E402

# Seed 23 plans, among others, 7 crashes between C's COMMIT and XACK and 8 between D's
# two COMMITs: the assertions below do not hang on one lucky kill.
EVENTS, KILLS, SEED, CRASH_RATE = 1000, 4, 23, 0.005


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
        died("the chaos run finished with every entry acknowledged")
        return done()
    ok(True, "the chaos run finished with every entry acknowledged")
    for line in (demo.summary(outcome) + "\n\n" + report.table(outcome.results)).splitlines():
        print(f"# {line}")

    c, a = outcome.result("c"), outcome.result("a")
    ok(c.actual == c.expected, "C (claim_apply): every account's balance is right",
       f"got:  {c.actual}\nwant: {c.expected}")
    ok(c.twice == 0 and c.lost == 0,
       "C (claim_apply): the referee saw each payment applied exactly once",
       f"{c.twice} applied twice, {c.lost} lost")
    at_least(outcome.supervisor_kills, 1, "the supervisor SIGKILLed consumers at random times")
    for point, where in demo.POINTS.items():
        at_least(outcome.planned_crashes[point], 1, f"a consumer was SIGKILLed {where}")
    at_least(c.kills, 1, "C's consumer was SIGKILLed")
    at_least(outcome.reclaimed["c"], 1, "XAUTOCLAIM redelivered entries to C's restarted consumer")
    at_least(outcome.caught_redeliveries["c"], 1,
             "C's inbox answered 'duplicate' to a redelivered payment")
    ok(sum(a.actual.values()) > sum(a.expected.values()),
       "A (no dedup) ends above the right balance: duplicates were delivered and applied",
       f"A: {sum(a.actual.values())}, expected {sum(a.expected.values())}")
    at_least(a.twice, outcome.resent + 1,
             "A applied every producer resend and at least one consumer redelivery twice")
    ok(server_gone(outcome.redis_port), "the private Redis server is stopped")
    return done()


if __name__ == "__main__":
    sys.exit(main())
