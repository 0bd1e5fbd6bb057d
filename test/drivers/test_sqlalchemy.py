#!/usr/bin/env python3
"""claim_apply called through SQLAlchemy over psycopg2 (Debian's
python3-sqlalchemy and python3-psycopg2) the way an application calls it:
text() with named parameters.  psycopg2 binds on the client, so each value
reaches the server as a literal: a str as an untyped string, a Decimal or an int
as a number, a datetime as a typed timestamp.

Prints TAP for prove, one line per assertion.  Connects with the PG* environment
variables to a database that preloads idempotent_inbox.
"""
import os
import sys
from datetime import datetime, timezone
from decimal import Decimal

from sqlalchemy import create_engine, exc, text

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import died, done, eq, ok  # noqa: E402

CREDIT = "UPDATE sa_accounts SET balance = balance + $2 WHERE id = $1"
APPLY = text("SELECT inbox.claim_apply(:inbox, :message_id, :statement, :account, :amount)")


def engine():
    # libpq reads PGHOST, PGPORT, PGUSER and PGDATABASE: the URL names only the dialect.
    return create_engine("postgresql+psycopg2://", future=True)


def apply(conn, message_id, account, amount, statement=CREDIT):
    return conn.execute(APPLY, {"inbox": "sa_inbox", "message_id": message_id,
                                "statement": statement, "account": account,
                                "amount": amount}).scalar()


def scalar(conn, sql):
    return conn.execute(text(sql)).scalar()


def main():
    eng = engine()
    try:
        with eng.begin() as conn:
            conn.execute(text("SELECT inbox.create_inbox('sa_inbox')"))
            conn.execute(text("""CREATE TABLE sa_accounts (id text PRIMARY KEY,
                                      balance numeric(12,2) NOT NULL DEFAULT 0,
                                      seen_at timestamptz)"""))
            conn.execute(text("INSERT INTO sa_accounts (id) VALUES ('alice'), ('bob')"))
        with eng.begin() as conn:
            eq(apply(conn, "d-1", "alice", Decimal("2.50")), "applied", "Decimal beside str: applied")
            eq(apply(conn, "d-1", "alice", Decimal("2.50")), "duplicate",
               "Decimal beside str: redelivery is a duplicate")
            eq(apply(conn, "i-1", "alice", 4), "applied", "int beside str: applied")
            eq(apply(conn, "s-1", "alice", "0.5"), "applied", "str only: applied")
        with eng.begin() as conn:
            eq(scalar(conn, "SELECT balance::text FROM sa_accounts WHERE id = 'alice'"), "7.00",
               "each effect applied once, in its committed transaction")
        seen = datetime(2024, 2, 29, 12, 0, 1, tzinfo=timezone.utc)
        with eng.begin() as conn:
            eq(apply(conn, "t-1", "bob", seen, "UPDATE sa_accounts SET seen_at = $2 WHERE id = $1"),
               "applied", "datetime beside str: applied")
            eq(scalar(conn, "SELECT seen_at FROM sa_accounts WHERE id = 'bob'"), seen,
               "datetime: the same instant is stored")
        # A rolled-back transaction takes its claim with it.
        with eng.connect() as conn:
            with conn.begin() as tx:
                apply(conn, "r-1", "bob", 100)
                tx.rollback()
        with eng.begin() as conn:
            eq(apply(conn, "r-1", "bob", 1), "applied", "rolled back, then redelivered: applied")
        try:
            with eng.begin() as conn:
                apply(conn, "e-1", "bob", "lots")
            ok(False, "str that is not a number for a numeric $n: 22P02", "no error")
        except exc.DBAPIError as e:
            eq(e.orig.pgcode, "22P02", "str that is not a number for a numeric $n: 22P02")
    except Exception:  # noqa: BLE001 - dying is one failure, reported as such
        died("test_sqlalchemy died")
    finally:
        eng.dispose()
    return done()


if __name__ == "__main__":
    sys.exit(main())
