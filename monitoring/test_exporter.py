#!/usr/bin/env python3
"""monitoring/postgres_exporter.yaml served by Debian's prometheus-postgres-exporter:
a private cluster with the library preloaded (the counters need it), an inbox given
claims, duplicates, a fingerprint conflict, a takeover, a purge and a quarantine, and
the exporter started on a loopback port of its own with the query file.  Reads its
/metrics page and checks every series against inbox.stats, their types, and that
monitoring/alerts.yaml uses only series the page has.  Prints TAP for prove.
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.join(HERE, "..", "test", "python"))
sys.path.append(os.path.join(HERE, "..", "examples", "outbox_rabbitmq"))
import psycopg  # noqa: E402
import yaml  # noqa: E402
from inbox_tap import done, eq, ok, run_scenario  # noqa: E402
import services  # noqa: E402  (the outbox pipeline's private cluster)
import children  # noqa: E402

EXPORTER = "/usr/bin/prometheus-postgres-exporter"
QUERIES = os.path.join(HERE, "postgres_exporter.yaml")
ALERTS = os.path.join(HERE, "alerts.yaml")
PREFIX = "idempotent_inbox_"
SERIES = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')


def metrics_page(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
        return page.read().decode()


def wait_for_series(port, timeout=60):
    """The page once the exporter has run our query on it."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            last = metrics_page(port)
            if PREFIX + "claims_total{" in last:
                return last
        except OSError as e:
            last = str(e)
        time.sleep(0.5)
    raise RuntimeError(f"no {PREFIX}claims_total within {timeout} s; last page:\n{last[-2000:]}")


def parse(page):
    """{(name, inbox): value} of our series, and {name: type} from the TYPE lines."""
    values, types = {}, {}
    for line in page.splitlines():
        if line.startswith("# TYPE " + PREFIX):
            _, _, name, kind = line.split()
            types[name] = kind
            continue
        m = SERIES.match(line)
        if m and m.group(1).startswith(PREFIX):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            values[(m.group(1), labels.get("inbox"))] = float(m.group(3))
    return values, types


def make_traffic(dsn):
    """Every counter and gauge of the query file moved at least once, on mon.orders."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS mon CASCADE")
        conn.execute("CREATE SCHEMA mon")
        conn.execute("SELECT inbox.create_inbox('mon.orders', 'text', '1 hour')")
        conn.execute("SELECT inbox.create_inbox('mon.idle')")
        for mid in ("a", "b", "c", "a", "b"):
            conn.execute("SELECT inbox.claim('mon.orders', %s)", (mid,))
        conn.execute("SELECT inbox.claim('mon.orders', 'f', '\\x01'::bytea)")
        try:
            conn.execute("SELECT inbox.claim('mon.orders', 'f', '\\x02'::bytea)")
        except psycopg.Error as e:
            if e.sqlstate != "22I01":
                raise
        conn.execute("SELECT inbox.acquire('mon.orders', 'lease', '1 millisecond')")
        time.sleep(0.05)
        conn.execute("SELECT inbox.acquire('mon.orders', 'lease', '1 hour')")
        # An old claim for purge to delete, and one kept as the oldest.
        conn.execute("INSERT INTO mon.orders (message_id, claimed_at) "
                     "VALUES ('old', now() - interval '2 hours')")
        conn.execute("SELECT inbox.purge('mon.orders')")
        conn.execute("UPDATE mon.orders SET claimed_at = now() - interval '10 minutes' "
                     "WHERE message_id = 'a'")
        conn.execute("SELECT inbox.set_max_attempts('mon.orders', 1)")
        conn.execute("SELECT inbox.record_failure('mon.orders', 'poison', 'boom')")


def scenario_exporter(workdir):
    pg = services.Postgres(workdir, "shared_preload_libraries = 'idempotent_inbox'\n")
    pg.start()
    exporter = None
    try:
        subprocess.run(["createdb", "-h", pg.dir, "-p", str(pg.port), "-U", "postgres",
                        "inbox_metrics"], check=True)
        dsn = pg.dsn("inbox_metrics")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION idempotent_inbox")
        make_traffic(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            stats = conn.execute(
                "SELECT s.inbox::text, s.claims, s.duplicates, s.fingerprint_conflicts, "
                "s.takeovers, s.purged, s.quarantined, "
                "date_part('epoch', now() - s.oldest_claim) FROM inbox.stats s").fetchall()
        by_inbox = {row[0]: row for row in stats}
        orders = by_inbox["mon.orders"]
        ok(orders[1] >= 4 and orders[2] == 2 and orders[3] == 1 and orders[4] == 1
           and orders[5] == 1 and orders[6] == 1,
           "the traffic moved every counter of inbox.stats", repr(orders))

        port = services.free_port()
        log = open(os.path.join(workdir, "exporter.log"), "w")
        env = dict(os.environ, DATA_SOURCE_NAME=f"{dsn} sslmode=disable")
        exporter = children.spawn([EXPORTER, f"--web.listen-address=127.0.0.1:{port}",
                                   f"--extend.query-path={QUERIES}",
                                   "--disable-default-metrics", "--disable-settings-metrics"],
                                  env=env, stdout=log, stderr=subprocess.STDOUT)
        values, types = parse(wait_for_series(port))

        for column, index in (("claims_total", 1), ("duplicates_total", 2),
                              ("fingerprint_conflicts_total", 3), ("takeovers_total", 4),
                              ("purged_total", 5)):
            eq(values.get((PREFIX + column, "mon.orders")), float(orders[index]),
               f"{PREFIX}{column} is inbox.stats' count")
        eq(values.get((PREFIX + "quarantined", "mon.orders")), 1.0,
           "the quarantined gauge counts the poison message")
        eq(values.get((PREFIX + "retention_seconds", "mon.orders")), 3600.0,
           "retention_seconds is the inbox's window")
        age = values.get((PREFIX + "oldest_claim_age_seconds", "mon.orders"))
        ok(age is not None and 600 <= age < 600 + 120,
           "oldest_claim_age_seconds is the age of the oldest claim kept", repr(age))
        eq(values.get((PREFIX + "claims_total", "mon.idle")), 0.0,
           "an inbox without traffic has its series too, at zero")
        idle_age = values.get((PREFIX + "oldest_claim_age_seconds", "mon.idle"))
        ok(idle_age is not None and idle_age != idle_age,
           "an empty inbox's oldest claim age is NaN", repr(idle_age))
        wrong = {name: kind for name, kind in types.items()
                 if kind != ("counter" if name.endswith("_total") else "gauge")}
        eq((len(types), wrong), (13, {}),
           "the 13 series are typed: every *_total a counter, every other one a gauge")

        with open(ALERTS) as f:
            rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]
        used = {name for r in rules for name in re.findall(PREFIX + r"\w+", r["expr"])}
        exposed = {name for name, _ in values}
        eq(sorted(used - exposed), [], "alerts.yaml uses only series the exporter exposes")
        ok(len(rules) >= 2 and all(r.get("alert") and r.get("annotations") for r in rules),
           "every alert has a name and an annotation", repr(rules))
    finally:
        if exporter is not None:
            children.stop(exporter)
        pg.stop()


def main():
    ok(os.access(EXPORTER, os.X_OK), f"{EXPORTER} is installed")
    with tempfile.TemporaryDirectory(prefix="inbox_exporter_") as workdir:
        run_scenario(scenario_exporter, workdir)
    return done()


if __name__ == "__main__":
    sys.exit(main())
