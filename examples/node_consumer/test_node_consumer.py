#!/usr/bin/env python3
"""The node-postgres consumer (consumer.js) installed from its committed lockfile into
a temp dir and fed batches with redeliveries on stdin: the sample batch, the same
batch replayed whole, and a batch with a message that fails.  Checks the acks and
counts it prints against the balances and claims in the database.  Prints TAP for
prove, one line per assertion.  Connects with the PG* environment variables; needs a
database where idempotent_inbox is installed.  Works in its own schema, recreated on
every run.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from decimal import Decimal

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import connect, died, done, eq, ok, own_schema, run_scenario  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = "node_consumer"
SAMPLE_BALANCES = {"alice": Decimal("57.25"), "bob": Decimal("20.00"), "carol": Decimal("100.00")}
SAMPLE_ACKS = [("pay-1", "applied"), ("pay-2", "applied"), ("pay-1", "duplicate"),
               ("pay-3", "applied"), ("pay-2", "duplicate"), ("pay-4", "applied"),
               ("pay-1", "duplicate")]


def install(workdir):
    """Copy the example as a user would and install pg from the lockfile."""
    for name in ("package.json", "package-lock.json", "consumer.js"):
        shutil.copy(os.path.join(HERE, name), workdir)
    # HOME may not be writable (the harness runs as postgres): keep npm's cache here.
    env = dict(os.environ, npm_config_cache=os.path.join(workdir, ".npm"))
    proc = subprocess.run(
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund",
         "--no-update-notifier", "--loglevel=error"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=600)
    ok(proc.returncode == 0, "npm ci installs pg from the committed lockfile",
       proc.stdout + proc.stderr)
    return proc.returncode == 0


class Run:
    """One consumer run: exit status, the acks and nacks in order, the summary line."""

    def __init__(self, workdir, messages):
        env = dict(os.environ, PGOPTIONS=f"-c search_path={SCHEMA}")
        proc = subprocess.run(["node", "consumer.js"], cwd=workdir, env=env, input=messages,
                              capture_output=True, text=True, timeout=120)
        self.rc = proc.returncode
        self.output = f"stdout:\n{proc.stdout}stderr:\n{proc.stderr}"
        self.acks = re.findall(r"^ack (\S+) \((\w+)\)$", proc.stdout, re.M)
        self.nacks = re.findall(r"^nack (\S+): (\w+) ", proc.stderr, re.M)
        summary = re.findall(r"^applied \d+, duplicate \d+, failed \d+$", proc.stdout, re.M)
        self.summary = summary[-1] if summary else None

    def check(self, rc, summary, label):
        ok(self.rc == rc and self.summary == summary, f"{label}: exit {rc}, prints '{summary}'",
           f"exit status {self.rc}\n{self.output}")


def lines(*messages):
    return "".join(json.dumps(dict(zip(("id", "account", "amount"), m))) + "\n"
                   for m in messages)


def balances(conn):
    return dict(conn.execute(f"SELECT id, balance FROM {SCHEMA}.accounts").fetchall())


def claimed(conn):
    return [r[0] for r in conn.execute(
        f"SELECT message_id FROM {SCHEMA}.payments_inbox ORDER BY message_id")]


def scenario_sample(conn, workdir):
    with open(os.path.join(HERE, "messages.jsonl")) as f:
        sample = f.read()
    run = Run(workdir, sample)
    run.check(0, "applied 4, duplicate 3, failed 0", "sample batch")
    eq(run.acks, SAMPLE_ACKS, "sample batch: each delivery acked in order, first applied, "
       "redeliveries duplicate")
    eq(balances(conn), SAMPLE_BALANCES, "sample batch: each payment credited once")
    eq(claimed(conn), ["pay-1", "pay-2", "pay-3", "pay-4"], "sample batch: one claim per id")

    # A restarted consumer whose acks were all lost gets the whole batch again.
    run = Run(workdir, sample)
    run.check(0, "applied 0, duplicate 7, failed 0", "whole batch replayed")
    eq(run.acks, [(i, "duplicate") for i, _ in SAMPLE_ACKS],
       "whole batch replayed: every delivery acked as a duplicate")
    eq(balances(conn), SAMPLE_BALANCES, "whole batch replayed: balances unchanged")


def scenario_failure(conn, workdir):
    # pay-6 would overdraw carol (CHECK balance >= 0); pay-7 after it proves the
    # rollback left the pooled connection usable.
    run = Run(workdir, lines(("pay-5", "bob", -5), ("pay-6", "carol", -500),
                             ("pay-1", "alice", 50), ("pay-7", "bob", 1)))
    run.check(1, "applied 2, duplicate 1, failed 1", "failing message")
    eq(run.nacks, [("pay-6", "23514")], "failing message: not acked, its SQLSTATE logged")
    eq(run.acks, [("pay-5", "applied"), ("pay-1", "duplicate"), ("pay-7", "applied")],
       "failing message: the others acked")
    eq(balances(conn), dict(SAMPLE_BALANCES, bob=Decimal("16.00")),
       "failing message: its effect rolled back, the others applied")
    eq("pay-6" in claimed(conn), False,
       "failing message: its claim rolled back too, so a redelivery can apply it")


def main():
    workdir = tempfile.mkdtemp(prefix="node_consumer.")
    try:
        if install(workdir):
            with connect() as conn:
                own_schema(conn, SCHEMA)
                for scenario in (scenario_sample, scenario_failure):
                    run_scenario(scenario, conn, workdir)
    except Exception:  # noqa: BLE001 - no npm, no server: reported, not a crash
        died("setup died")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return done()


if __name__ == "__main__":
    sys.exit(main())
