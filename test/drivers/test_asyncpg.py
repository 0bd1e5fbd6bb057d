#!/usr/bin/env python3
"""claim_apply called through asyncpg, Debian's python3-asyncpg, the way an
application calls it: $n placeholders, values as arguments.

asyncpg declares no parameter types: it lets the server infer them all, then
encodes each value by the type the server describes, refusing a value of another
Python type.  With every argument untyped, PostgreSQL picks claim_apply's
VARIADIC text[] overload, so the values are described as text: str values work
(converted to the types the statement gives its $n when the call runs), an int
does not.  One value with a type in SQL ($3::int) makes it the "any" overload,
and the extension's hook gives the other values the types of the statement's $n.

Prints TAP for prove, one line per assertion.  Connects with the PG* environment
variables to a database that preloads idempotent_inbox.
"""
import asyncio
import os
import sys
from decimal import Decimal

import asyncpg

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import died, done, eq, ok  # noqa: E402

CREDIT = "UPDATE apg_accounts SET balance = balance + $1 WHERE id = $2"
# The statement as a constant in the query, as asyncpg users write it.
APPLY_CONST = f"SELECT inbox.claim_apply($1, $2, '{CREDIT}', $3, $4)"
APPLY_CONST_INT = f"SELECT inbox.claim_apply($1, $2, '{CREDIT}', $3::int, $4)"
APPLY_PARAM = "SELECT inbox.claim_apply($1, $2, $3, $4, $5)"


async def connect():
    # asyncpg reads PGHOST, PGPORT, PGUSER and PGDATABASE itself.  Its statement
    # cache prepares named statements on the server: off through a transaction-mode
    # pooler (INBOX_POOL_MODE, set by the pooler suite), as asyncpg's documentation asks.
    if os.environ.get("INBOX_POOL_MODE") == "transaction":
        return await asyncpg.connect(statement_cache_size=0)
    return await asyncpg.connect()


async def balance(conn, account):
    return await conn.fetchval("SELECT balance FROM apg_accounts WHERE id = $1", account)


async def first_call(query, *args):
    """query as the first statement of a new connection."""
    conn = await connect()
    try:
        return await conn.fetchval(query, *args)
    finally:
        await conn.close()


async def scenario_setup(conn):
    await conn.execute("SELECT inbox.create_inbox('apg_inbox')")
    await conn.execute("""CREATE TABLE apg_accounts (id text PRIMARY KEY,
                              balance numeric(12,2) NOT NULL DEFAULT 0)""")
    await conn.execute("""INSERT INTO apg_accounts (id)
                          VALUES ('alice'), ('bob'), ('carol'), ('dave'), ('erin')""")


async def scenario_str_values(conn):
    eq(await first_call(APPLY_CONST, "apg_inbox", "s-1", "5", "alice"), "applied",
       "constant statement, str values, first query of a session: applied")
    eq(await first_call(APPLY_CONST, "apg_inbox", "s-1", "5", "alice"), "duplicate",
       "constant statement, str values: redelivery is a duplicate")
    eq(await conn.fetchval(APPLY_PARAM, "apg_inbox", "s-2", CREDIT, "0.25", "alice"), "applied",
       "statement as a parameter, str values: applied")
    eq(await balance(conn, "alice"), Decimal("5.25"), "str values: converted to numeric, applied once")


async def scenario_int_needs_one_cast(conn):
    # The untyped $4 takes the type of the statement's $2 (text) from the hook.
    eq(await first_call(APPLY_CONST_INT, "apg_inbox", "c-1", 7, "bob"), "applied",
       "constant statement, $3::int: int value applied in a session's first query")
    eq(await conn.fetchval(APPLY_CONST_INT, "apg_inbox", "c-1", 7, "bob"), "duplicate",
       "constant statement, $3::int: redelivery is a duplicate")
    eq(await balance(conn, "bob"), Decimal("7.00"), "$3::int: applied once")


async def scenario_int_without_cast(conn):
    # Every argument untyped: the text[] overload, whose values asyncpg encodes as text.
    for value, name in ((5, "int"), (Decimal("5"), "Decimal")):
        try:
            await conn.fetchval(APPLY_CONST, "apg_inbox", f"x-{name}", value, "carol")
            ok(False, f"{name} value with every argument untyped: DataError", "no error")
        except asyncpg.DataError as e:
            ok(f"expected str, got {name}" in str(e),
               f"{name} value with every argument untyped: DataError, expected str", str(e))
    eq(await conn.fetchval("SELECT inbox.try_claim('apg_inbox', 'x-int')"), "claimed",
       "refused by the driver before anything was claimed")


async def scenario_prepared(conn):
    stmt = await conn.prepare(APPLY_CONST)
    outcomes = [await stmt.fetchval("apg_inbox", f"p-{i % 5}", "1.5", "dave") for i in range(10)]
    eq(outcomes, ["applied"] * 5 + ["duplicate"] * 5,
       "prepared statement reused: 5 applied, then 5 duplicates")
    eq(await balance(conn, "dave"), Decimal("7.50"), "prepared statement: each effect applied once")


async def scenario_reused_param(conn):
    query = "SELECT inbox.claim_apply('apg_inbox', $1, 'SELECT $1::text || $2', $1, 7)"
    try:
        await conn.fetchval(query, "r-1")
        ok(False, "message id reused as a value: AmbiguousParameterError", "no error")
    except asyncpg.exceptions.AmbiguousParameterError as e:
        eq((e.sqlstate, e.args[0]), ("42P08", "could not determine data type of parameter $1"),
           "message id reused as a value: 42P08 for $1")
        ok("$1::text" in (e.hint or "") and "inbox.claim_apply" in (e.hint or ""),
           "message id reused as a value: the hint names inbox.claim_apply and $1::text", e.hint)
    fixed = "SELECT inbox.claim_apply('apg_inbox', $1, 'SELECT $1::text || $2', $1::text, 7)"
    eq(await conn.fetchval(fixed, "r-1"), "applied", "reused, cast as the hint says: applied")


async def scenario_errors(conn):
    try:
        await conn.fetchval(APPLY_CONST, "apg_inbox", "e-1", "lots", "erin")
        ok(False, "str that is not a number for a numeric $n: 22P02", "no error")
    except asyncpg.PostgresError as e:
        eq(e.sqlstate, "22P02", "str that is not a number for a numeric $n: 22P02")
    eq(await conn.fetchval("SELECT inbox.try_claim('apg_inbox', 'e-1')"), "claimed",
       "failed conversion: the claim was rolled back with it")


async def main():
    scenarios = [scenario_setup, scenario_str_values, scenario_int_needs_one_cast,
                 scenario_int_without_cast, scenario_prepared, scenario_reused_param,
                 scenario_errors]
    for scenario in scenarios:
        try:
            conn = await connect()
            try:
                await scenario(conn)
            finally:
                await conn.close()
        except Exception:  # noqa: BLE001 - a scenario that dies is one failure, not the end
            died(f"{scenario.__name__} died")
    return done()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
