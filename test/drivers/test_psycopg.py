#!/usr/bin/env python3
"""claim_apply, claim_many and try_claim called through psycopg 3 the way an
application calls them: default server-side binding, where a Python str is sent
untyped and int, Decimal, datetime, UUID and Jsonb are sent typed.  A str beside
typed values reaches claim_apply's "any" arguments untyped; the extension's
parse-analysis hook types it, in every session's first query too, because the
harness's database preloads the library (session_preload_libraries).  Prints TAP
for prove, one line per assertion.  Connects with the PG* environment variables;
needs a database where idempotent_inbox is installed.
"""
import os
import sys
import uuid
from datetime import datetime, timezone
from decimal import Decimal

from psycopg import errors
from psycopg.types.json import Jsonb

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import connect, eq, ok, run_scenarios  # noqa: E402

CREDIT = "UPDATE py_accounts SET balance = balance + $2 WHERE id = $1"
APPLY5 = "SELECT inbox.claim_apply(%s, %s, %s, %s, %s)"
# Casting the str still works, as it did before the hook.
APPLY5_TEXT = "SELECT inbox.claim_apply(%s, %s, %s, %s::text, %s)"


def raises(exc_class, fn, name):
    """fn must fail with exc_class (which fixes the SQLSTATE)."""
    try:
        fn()
    except exc_class as e:
        ok(True, f"{name} ({e.sqlstate})")
        return
    except Exception as e:  # noqa: BLE001 - any other error is the failure reported
        ok(False, name, f"raised {type(e).__name__} ({getattr(e, 'sqlstate', None)}): {e}")
        return
    ok(False, name, f"no error, expected {exc_class.__name__}")


def one(conn, query, params=()):
    return conn.execute(query, params).fetchone()[0]


def balance(conn, account):
    return one(conn, "SELECT balance FROM py_accounts WHERE id = %s", (account,))


def setup(conn):
    conn.execute("SELECT inbox.create_inbox('py_text')")
    conn.execute("SELECT inbox.create_inbox('py_uuid', 'uuid')")
    conn.execute("SELECT inbox.create_inbox('py_big', 'bigint')")
    conn.execute("""CREATE TABLE py_accounts (id text PRIMARY KEY,
                        balance numeric(12,2) NOT NULL DEFAULT 0, note jsonb, ref uuid,
                        seen_at timestamptz)""")
    conn.execute("""INSERT INTO py_accounts (id) VALUES ('alice'), ('bob'), ('carol'),
                        ('dave'), ('erin'), ('frank'), ('grace'), ('heidi'), ('ivan')""")


def scenario_strings(conn):
    # Every argument is a str, so every parameter is untyped: the text[] overload.
    args = ("py_text", "s-1", CREDIT, "alice", "10.50")
    eq(one(conn, APPLY5, args), "applied", "all-str args: applied")
    eq(one(conn, APPLY5, args), "duplicate", "all-str args: redelivery is a duplicate")
    eq(balance(conn, "alice"), Decimal("10.50"), "all-str args: effect applied exactly once")


def scenario_ints(conn):
    stmt = "UPDATE py_accounts SET balance = balance + $1 * $2 WHERE id = 'bob'"
    eq(one(conn, APPLY5, ("py_text", "i-1", stmt, 3, 4)), "applied", "all-int args: applied")
    eq(one(conn, APPLY5, ("py_text", "i-1", stmt, 3, 4)), "duplicate",
       "all-int args: redelivery is a duplicate")
    eq(balance(conn, "bob"), Decimal("12.00"), "all-int args: effect applied exactly once")


def scenario_str_cast_with_int(conn):
    eq(one(conn, APPLY5_TEXT, ("py_text", "c-1", CREDIT, "bob", 5)), "applied",
       "%s::text beside int: applied")
    eq(balance(conn, "bob"), Decimal("17.00"), "%s::text beside int: values bound")


def scenario_uuid(conn):
    msg, ref = uuid.uuid4(), uuid.uuid4()
    stmt = "UPDATE py_accounts SET ref = $1 WHERE id = 'carol'"
    eq(one(conn, "SELECT inbox.claim_apply(%s, %s, %s, %s)", ("py_uuid", msg, stmt, ref)),
       "applied", "uuid.UUID message id and argument: applied")
    eq(one(conn, "SELECT inbox.claim_apply(%s, %s, %s, %s)", ("py_uuid", msg, stmt, uuid.uuid4())),
       "duplicate", "uuid.UUID message id: redelivery is a duplicate")
    eq(one(conn, "SELECT ref FROM py_accounts WHERE id = 'carol'"), ref,
       "uuid.UUID argument: stored by the first delivery only")


def scenario_decimal(conn):
    for i in range(3):
        one(conn, APPLY5, ("py_text", f"d-{i}", CREDIT, "carol", Decimal("0.10")))
    eq(balance(conn, "carol"), Decimal("0.30"), "Decimal arguments: exact numeric arithmetic")


def scenario_jsonb_and_none(conn):
    note = {"tags": ["a", "b"], "n": 1, "nested": {"quote": "it's \"x\""}}
    stmt = "UPDATE py_accounts SET note = $2 WHERE id = $1"
    eq(one(conn, APPLY5, ("py_text", "j-1", stmt, "dave", Jsonb(note))), "applied",
       "Jsonb argument beside str: applied")
    eq(one(conn, "SELECT note FROM py_accounts WHERE id = 'dave'"), note,
       "Jsonb argument: stored intact")
    # None is sent untyped, like a str: fine beside strings.
    eq(one(conn, APPLY5, ("py_text", "n-1", stmt, "dave", None)), "applied",
       "None argument beside str: applied")
    eq(one(conn, "SELECT note IS NULL FROM py_accounts WHERE id = 'dave'"), True,
       "None argument: bound as NULL")


def scenario_server_prepared(conn):
    # psycopg prepares a query server-side from its prepare_threshold-th execution
    # on; ten runs cover both the unprepared and the prepared path, for the text[]
    # overload (str arguments) and the "any" one (int arguments).
    typed = "UPDATE py_accounts SET balance = balance + $1 WHERE id = 'frank'"
    outcomes = [one(conn, APPLY5, ("py_text", f"p-{i}", CREDIT, "erin", "1.25")) for i in range(10)]
    outcomes += [one(conn, "SELECT inbox.claim_apply(%s, %s, %s, %s)", ("py_text", f"q-{i}", typed, 2))
                 for i in range(10)]
    eq(outcomes, ["applied"] * 20, "10 executions per query, prepared after the threshold: all applied")
    again = [one(conn, APPLY5, ("py_text", f"p-{i}", CREDIT, "erin", "1.25")) for i in range(10)]
    eq(again, ["duplicate"] * 10, "prepared statement: redeliveries are duplicates")
    eq((balance(conn, "erin"), balance(conn, "frank")), (Decimal("12.50"), Decimal("20.00")),
       "prepared statement: each effect applied exactly once")
    prepared = one(conn, """SELECT count(*) FROM pg_prepared_statements
                             WHERE statement LIKE '%%inbox.claim_apply%%'""")
    # Through a transaction pooler connect() turns preparing off (inbox_tap.py), and
    # the backend may hold statements another client prepared: nothing to count.
    if os.environ.get("INBOX_POOL_MODE") != "transaction":
        ok(prepared >= 2, "psycopg really prepared both queries on the server", f"{prepared} prepared")


def scenario_mixed_types(conn):
    # Each call is the first query of its own connection: the untyped str is typed
    # by the hook that session_preload_libraries loaded, not by an earlier call.
    def first_call(args):
        with connect() as fresh:
            return one(fresh, APPLY5, args)
    eq(first_call(("py_text", "x-1", CREDIT, "heidi", 7)), "applied",
       "str beside int, first query of a session: applied")
    eq(first_call(("py_text", "x-1", CREDIT, "heidi", 7)), "duplicate",
       "str beside int: redelivery is a duplicate")
    eq(first_call(("py_text", "x-2", CREDIT, "heidi", Decimal("0.35"))), "applied",
       "str beside Decimal, first query of a session: applied")
    eq(balance(conn, "heidi"), Decimal("7.35"), "str beside int and Decimal: each applied once")
    seen = datetime(2024, 2, 29, 23, 59, 58, 250000, tzinfo=timezone.utc)
    eq(first_call(("py_text", "x-3", "UPDATE py_accounts SET seen_at = $2 WHERE id = $1",
                   "heidi", seen)), "applied",
       "str beside datetime, first query of a session: applied")
    eq(one(conn, "SELECT seen_at FROM py_accounts WHERE id = 'heidi'"), seen,
       "datetime argument: the same instant is stored")


def scenario_reused_param(conn):
    # One %(name)s used as the message id and as a value is one $n, typed text as
    # the id and left unknown as the value: PostgreSQL refuses it before the
    # extension sees it, and the hint names the parameter and the cast.
    query = "SELECT inbox.claim_apply(%(inbox)s, %(id)s, 'SELECT $1::text || $2', %(id)s, 7)"
    fixed = "SELECT inbox.claim_apply(%(inbox)s, %(id)s, 'SELECT $1::text || $2', %(id)s::text, 7)"
    try:
        conn.execute(query, {"inbox": "py_text", "id": "reused-1"})
        ok(False, "message id reused as a value: AmbiguousParameter", "no error")
    except errors.AmbiguousParameter as e:
        eq((e.sqlstate, e.diag.message_primary), ("42P08", "could not determine data type of parameter $2"),
           "message id reused as a value: 42P08 for $2")
        hint = e.diag.message_hint or ""
        ok("$2::text" in hint and "inbox.claim_apply" in hint,
           "message id reused as a value: the hint names inbox.claim_apply and $2::text", hint)
    eq(one(conn, fixed, {"inbox": "py_text", "id": "reused-1"}), "applied",
       "message id reused as a value, cast as the hint says: applied")


def scenario_claim_many(conn):
    query = "SELECT * FROM inbox.claim_many(%s, %s)"
    fresh = [r[0] for r in conn.execute(query, ("py_text", ["b1", "b2", "b1", "b,3"]))]
    eq(fresh, ["b1", "b2", "b,3"], "claim_many, list of str: fresh ids in input order, once each")
    fresh = [r[0] for r in conn.execute(query, ("py_text", ["b,3", "b4"]))]
    eq(fresh, ["b4"], "claim_many, list of str: claimed ids are left out")
    fresh = [r[0] for r in conn.execute(query, ("py_big", [7, 2**40, 7]))]
    eq(fresh, [7, 2**40], "claim_many, list of int: fresh ids as int")
    fresh = [r[0] for r in conn.execute(query, ("py_big", [2**40, 8]))]
    eq(fresh, [8], "claim_many, list of int: claimed ids are left out")
    ids = [uuid.uuid4(), uuid.uuid4()]
    fresh = [r[0] for r in conn.execute(query, ("py_uuid", ids + ids[:1]))]
    eq(fresh, ids, "claim_many, list of uuid.UUID: fresh ids as UUID")


def scenario_try_claim():
    with connect(autocommit=False) as holder, connect() as other:
        eq(one(holder, "SELECT inbox.try_claim(%s, %s)", ("py_text", "t-1")), "claimed",
           "try_claim: first claim")
        eq(one(other, "SELECT inbox.try_claim(%s, %s)", ("py_text", "t-1")), "in_progress",
           "try_claim: held by an open transaction elsewhere is in_progress")
        holder.commit()
        eq(one(other, "SELECT inbox.try_claim(%s, %s)", ("py_text", "t-1")), "duplicate",
           "try_claim: once committed, a duplicate")
        eq(one(other, "SELECT inbox.try_claim(%s, %s)", ("py_big", 2**40 + 1)), "claimed",
           "try_claim: int id on a bigint inbox")


def scenario_rollback_then_redeliver():
    with connect(autocommit=False) as conn:
        args = ("py_text", "r-1", CREDIT, "grace", "4.00")
        eq(one(conn, APPLY5, args), "applied", "rollback: applied inside the transaction")
        conn.rollback()
        eq(one(conn, APPLY5, args), "applied", "rollback: redelivery applies again")
        conn.commit()
        eq(one(conn, APPLY5, args), "duplicate", "rollback: after commit, a duplicate")
        conn.commit()
        eq(balance(conn, "grace"), Decimal("4.00"), "rollback: effect applied exactly once")


def scenario_errors(conn):
    raises(errors.NullValueNotAllowed,
           lambda: conn.execute(APPLY5, ("py_text", None, CREDIT, "grace", "1")),
           "NULL message id: NullValueNotAllowed")
    raises(errors.UndefinedParameter,
           lambda: conn.execute("SELECT inbox.claim_apply(%s, %s, %s, %s)",
                                ("py_text", "e-1", CREDIT, "grace")),
           "statement needs more arguments than given: UndefinedParameter")
    raises(errors.WrongObjectType,
           lambda: conn.execute(APPLY5, ("py_accounts", "e-2", CREDIT, "grace", "1")),
           "not an inbox: WrongObjectType")
    raises(errors.InvalidTextRepresentation,
           lambda: conn.execute(APPLY5, ("py_text", "e-3", CREDIT, "grace", "lots")),
           "str that is not a number for a numeric $n: InvalidTextRepresentation")
    # A failing effect takes its claim down with it, so the message can be retried.
    raises(errors.UniqueViolation,
           lambda: conn.execute(APPLY5, ("py_text", "e-4",
                                         "INSERT INTO py_accounts (id, balance) VALUES ($1, $2)",
                                         "grace", "1")),
           "failing effect: its error reaches the driver")
    eq(one(conn, APPLY5, ("py_text", "e-4", CREDIT, "grace", "1")), "applied",
       "failing effect: the claim was rolled back, the retry applies")


def main():
    scenarios = [scenario_strings, scenario_ints, scenario_str_cast_with_int, scenario_uuid,
                 scenario_decimal, scenario_jsonb_and_none, scenario_server_prepared,
                 scenario_mixed_types, scenario_reused_param, scenario_claim_many, scenario_try_claim,
                 scenario_rollback_then_redeliver, scenario_errors]
    with connect() as conn:
        setup(conn)
    return run_scenarios(scenarios, connect)


if __name__ == "__main__":
    sys.exit(main())
