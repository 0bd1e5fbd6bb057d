#!/usr/bin/env python3
"""The psql consumer (consumer.sql) fed CSV batches on stdin: the sample batch, a
redelivery overlapping it, a batch that fails part-way and its redelivery.  Checks
the per-message outcomes and counts psql prints against the balances and claims in
the database.  Prints TAP for prove, one line per assertion.  Connects with the PG*
environment variables; needs a database where idempotent_inbox is installed.  Works
in its own schema, recreated on every run.
"""
import csv
import io
import os
import subprocess
import sys
from decimal import Decimal

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import connect, died, done, eq, ok, own_schema, run_scenario  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "psql_consumer"
SAMPLE_BALANCES = {"alice": Decimal("57.25"), "bob": Decimal("20.00"), "carol": Decimal("100.00")}


class Run:
    """One psql run: exit status, whether it acked, outcomes by message, the counts."""

    def __init__(self, batch):
        env = dict(os.environ, PGOPTIONS=f"-c search_path={SCHEMA}")
        # --csv only to parse the output; the script is run as a user would run it.
        proc = subprocess.run(["psql", "-X", "--csv", "-f", "consumer.sql"], cwd=HERE, env=env,
                              input=batch, capture_output=True, text=True, timeout=120)
        self.rc = proc.returncode
        self.output = f"stdout:\n{proc.stdout}stderr:\n{proc.stderr}"
        self.stderr = proc.stderr
        rows = list(csv.reader(io.StringIO(proc.stdout)))
        self.acked = ["ack batch"] in rows
        self.outcomes = [(r[1], r[4]) for r in rows if len(r) == 5 and r[0].isdigit()]
        self.counts = [tuple(map(int, r)) for r in rows if len(r) == 2 and r[0].isdigit()]

    def check(self, outcomes, counts, label):
        ok(self.rc == 0 and self.acked, f"{label}: committed and acked",
           f"exit status {self.rc}\n{self.output}")
        eq(self.outcomes, outcomes, f"{label}: one outcome per delivery, in order")
        eq(self.counts, [counts], f"{label}: prints applied and duplicate counts")


def batch(*messages):
    return "id,account,amount\n" + "".join(f"{i},{a},{n}\n" for i, a, n in messages)


def balances(conn):
    return dict(conn.execute(f"SELECT id, balance FROM {SCHEMA}.accounts").fetchall())


def claimed(conn):
    return [r[0] for r in conn.execute(
        f"SELECT message_id FROM {SCHEMA}.payments_inbox ORDER BY message_id")]


def scenario_sample(conn):
    with open(os.path.join(HERE, "messages.csv")) as f:
        run = Run(f.read())
    run.check([("pay-1", "applied"), ("pay-2", "applied"), ("pay-1", "duplicate"),
               ("pay-3", "applied"), ("pay-2", "duplicate"), ("pay-4", "applied"),
               ("pay-1", "duplicate")], (4, 3), "sample batch")
    eq(balances(conn), SAMPLE_BALANCES, "sample batch: each payment credited once")
    eq(claimed(conn), ["pay-1", "pay-2", "pay-3", "pay-4"], "sample batch: one claim per id")


def scenario_redelivery(conn):
    # The broker redelivers the tail of the last batch with new messages behind it.
    run = Run(batch(("pay-3", "alice", "7.25"), ("pay-4", "carol", "100"),
                    ("pay-5", "bob", "5"), ("pay-5", "bob", "5")))
    run.check([("pay-3", "duplicate"), ("pay-4", "duplicate"), ("pay-5", "applied"),
               ("pay-5", "duplicate")], (1, 3), "overlapping redelivery")
    eq(balances(conn), dict(SAMPLE_BALANCES, bob=Decimal("25.00")),
       "overlapping redelivery: only the new payment credited")


def scenario_failure(conn):
    before = balances(conn)
    failing = [("pay-6", "alice", "10"), ("pay-7", "carol", "-500"), ("pay-8", "bob", "1")]
    run = Run(batch(*failing))
    ok(run.rc != 0 and not run.acked and "accounts_balance_check" in run.stderr,
       "failing batch: pay-7 would overdraw carol, psql stops before the ack", run.output)
    eq(balances(conn), before, "failing batch: pay-6, applied before the failure, rolled back")
    eq([i for i in claimed(conn) if i in ("pay-6", "pay-7", "pay-8")], [],
       "failing batch: no claim kept")

    # Redelivered behind a deposit that covers pay-7: everything applies, nothing twice.
    run = Run(batch(("pay-9", "carol", "500"), *failing))
    run.check([("pay-9", "applied"), ("pay-6", "applied"), ("pay-7", "applied"),
               ("pay-8", "applied")], (4, 0), "failing batch redelivered")
    eq(balances(conn), {"alice": Decimal("67.25"), "bob": Decimal("26.00"),
                        "carol": Decimal("100.00")},
       "failing batch redelivered: each payment credited once")


def main():
    try:
        with connect() as conn:
            own_schema(conn, SCHEMA)
            for scenario in (scenario_sample, scenario_redelivery, scenario_failure):
                run_scenario(scenario, conn)
    except Exception:  # noqa: BLE001 - no server: reported, not a crash
        died("setup died")
    return done()


if __name__ == "__main__":
    sys.exit(main())
