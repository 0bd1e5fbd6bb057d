"""TAP for the Python tests that make test runs through prove, one line per assertion.

Shared by test/drivers/test_psycopg.py and examples/*/test_*.py, each run as
`prove --exec /usr/bin/python3 FILE` from the repository root, and by hand as
`python3 FILE` from anywhere.  They find this module through their own path:

    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "..", "..", "test", "python"))
    from inbox_tap import connect, done, eq, ok

stdout carries the "ok N - name" lines and, last, the plan "1..N" (done() prints it);
a failed assertion's diagnostics go to stderr as "# " lines.  A scenario that raises
is one failed assertion, not the end of the file (run_scenario, died).  connect() opens a
psycopg 3 connection from the PG* environment variables, which the harness sets to a
database where idempotent_inbox is installed.
"""
import os
import sys
import traceback

import psycopg

_count = 0
_failed = 0


def ok(passed, name, diag=""):
    """One assertion: "ok N - name" or "not ok N - name" with diag on stderr."""
    global _count, _failed
    _count += 1
    if not passed:
        _failed += 1
    print(f"{'ok' if passed else 'not ok'} {_count} - {name}")
    if not passed:
        # As Test::More says it, so that make test can name the assertion (its
        # stdout, with the "not ok" line, stays inside prove).
        print(f"#   Failed test '{name}'", file=sys.stderr)
    if not passed and diag:
        for line in str(diag).splitlines():
            print(f"# {line}", file=sys.stderr)
    sys.stdout.flush()


def eq(got, want, name):
    ok(got == want, name, f"got:  {got!r}\nwant: {want!r}")


def at_least(got, least, name):
    ok(got >= least, name, f"got {got}, want at least {least}")


def died(name):
    """Inside an except block: the exception is one failed assertion, with its traceback."""
    ok(False, name, traceback.format_exc())


def run_scenario(scenario, *args):
    """scenario(*args); if it raises, "SCENARIO died" fails and the file goes on."""
    try:
        scenario(*args)
    except Exception:  # noqa: BLE001 - one failure, not the end
        died(f"{scenario.__name__} died")


def run_scenarios(scenarios, connect_fn):
    """Each scenario in turn: one that takes an argument gets a new connection from
    connect_fn(), closed afterwards; one that takes none opens its own, with other
    settings.  A scenario that raises is one failure, not the end.  Returns done()."""
    for scenario in scenarios:
        try:
            if scenario.__code__.co_argcount:
                conn = connect_fn()
                try:
                    scenario(conn)
                finally:
                    conn.close()
            else:
                scenario()
        except Exception:  # noqa: BLE001 - one failure, not the end
            died(f"{scenario.__name__} died")
    return done()


def failures():
    return _failed


def done():
    """Print the plan; the exit status for sys.exit: 1 if any assertion failed."""
    print(f"1..{_count}")
    return 1 if _failed else 0


def connect(autocommit=True):
    """A connection to the database the PG* environment variables name.  Through a
    transaction-mode pooler (INBOX_POOL_MODE=transaction, set by the pooler suite)
    without server-side prepared statements, as such a pooler needs."""
    pooled = os.environ.get("INBOX_POOL_MODE") == "transaction"
    return psycopg.connect("", autocommit=autocommit,
                           prepare_threshold=None if pooled else 5)


def own_schema(conn, schema):
    """Drop and create schema, so that a test can run again on the same database."""
    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    conn.execute(f"CREATE SCHEMA {schema}")
