#!/usr/bin/env python3
"""claim_apply called through pg8000, Debian's python3-pg8000, the way an
application calls it: the DB-API's %s placeholders, a Decimal or a datetime
beside str values, no casts.  Whether pg8000 sends a Decimal typed (numeric) or
untyped varies between its versions; the extension's hook types an untyped value
in claim_apply's "any" arguments either way.

Prints TAP for prove, one line per assertion.  Connects with the PG* environment
variables to a database that preloads idempotent_inbox.
"""
import os
import sys
from datetime import datetime, timezone
from decimal import Decimal

import pg8000

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import eq, ok, run_scenarios  # noqa: E402

CREDIT = "UPDATE p8_accounts SET balance = balance + $2 WHERE id = $1"
APPLY5 = "SELECT inbox.claim_apply(%s, %s, %s, %s, %s)"


def connect():
    conn = pg8000.connect(user=os.environ["PGUSER"], database=os.environ["PGDATABASE"],
                          unix_sock=f"{os.environ['PGHOST']}/.s.PGSQL.{os.environ['PGPORT']}")
    conn.autocommit = True
    return conn


def one(conn, query, params=()):
    cur = conn.cursor()
    cur.execute(query, params)
    return cur.fetchone()[0]


def sqlstate(e):
    """Old pg8000 gives the error's fields as a tuple (severity, severity, code,
    message, ...) in the order the server sent them, newer ones as a dict."""
    first = e.args[0] if e.args else None
    if isinstance(first, dict):
        return first.get("C")
    codes = [a for a in e.args[1:] if isinstance(a, str) and len(a) == 5 and a[:2].isdigit()]
    return codes[0] if codes else None


def scenario_setup(conn):
    one(conn, "SELECT inbox.create_inbox('p8_inbox')::text")
    conn.cursor().execute("""CREATE TABLE p8_accounts (id text PRIMARY KEY,
                                 balance numeric(12,2) NOT NULL DEFAULT 0, seen_at timestamptz)""")
    conn.cursor().execute("INSERT INTO p8_accounts (id) VALUES ('alice'), ('bob'), ('carol')")


def scenario_first_call_decimal():
    # Its own connection: the call is the session's first query.
    conn = connect()
    try:
        eq(one(conn, APPLY5, ("p8_inbox", "d-1", CREDIT, "alice", Decimal("12.34"))), "applied",
           "Decimal beside str, first query of a session: applied")
    finally:
        conn.close()


def scenario_values(conn):
    eq(one(conn, APPLY5, ("p8_inbox", "d-1", CREDIT, "alice", Decimal("12.34"))), "duplicate",
       "Decimal beside str: redelivery is a duplicate")
    eq(one(conn, APPLY5, ("p8_inbox", "i-1", CREDIT, "alice", 3)), "applied",
       "int beside str: applied")
    eq(one(conn, APPLY5, ("p8_inbox", "s-1", CREDIT, "alice", "0.66")), "applied",
       "str only: applied")
    eq(one(conn, "SELECT balance::text FROM p8_accounts WHERE id = 'alice'"), "16.00",
       "Decimal, int and str values: each applied once, exactly")
    seen = datetime(2024, 2, 29, 12, 0, 1, tzinfo=timezone.utc)
    eq(one(conn, APPLY5, ("p8_inbox", "t-1", "UPDATE p8_accounts SET seen_at = $2 WHERE id = $1",
                          "bob", seen)), "applied", "datetime beside str: applied")
    eq(one(conn, "SELECT seen_at = '2024-02-29 12:00:01+00' FROM p8_accounts WHERE id = 'bob'"),
       True, "datetime: the same instant is stored")


def scenario_errors(conn):
    try:
        one(conn, APPLY5, ("p8_inbox", "e-1", CREDIT, "carol", "lots"))
        ok(False, "str that is not a number for a numeric $n: 22P02", "no error")
    except pg8000.Error as e:
        eq(sqlstate(e), "22P02", "str that is not a number for a numeric $n: 22P02")


def main():
    return run_scenarios((scenario_setup, scenario_first_call_decimal, scenario_values,
                          scenario_errors), connect)


if __name__ == "__main__":
    sys.exit(main())
