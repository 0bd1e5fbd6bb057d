"""The database side: one schema per design with its accounts table, and the referee.

The referee is a trigger on every design's accounts table that writes down which
payments each balance change applies, in the same transaction as the change: a
rolled-back change leaves no record, a committed one always does.  The UPDATE names
them in the row itself: every design sets the column paid_by to the ids of the payments
it is crediting, one for A, B and D, every fresh payment of the account in the poll
for C's set-based statement.  The trigger runs BEFORE each row's change, writes one
ledger row per id, and empties the column again, so it is never stored: an UPDATE that
changes a balance without naming its payments fails instead of going uncounted, and
one that applies a payment twice (two rows, or the same id twice in one array) is
counted twice.  So besides comparing balances, the demo can say how many payments a
design applied twice and how many it lost.
"""
from collections import Counter

import psycopg

from designs import DESIGNS, schema_of
from payments import ACCOUNTS

REFEREE_SQL = """
DROP SCHEMA IF EXISTS chaos_referee CASCADE;
CREATE SCHEMA chaos_referee;
CREATE TABLE chaos_referee.applied (design text NOT NULL, payment_id text NOT NULL);
CREATE FUNCTION chaos_referee.record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.balance IS DISTINCT FROM OLD.balance AND coalesce(cardinality(NEW.paid_by), 0) = 0 THEN
        RAISE EXCEPTION 'the balance of % changes, but the UPDATE names no payment', NEW.id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'Set paid_by to the ids of the payments the UPDATE applies.';
    END IF;
    -- NOT NULL on payment_id refuses a NULL in the array.
    INSERT INTO chaos_referee.applied SELECT TG_TABLE_SCHEMA, unnest(NEW.paid_by);
    NEW.paid_by := NULL;
    RETURN NEW;
END $$;
"""


def connect(schema=None, autocommit=False):
    """Connects with the PG* environment variables."""
    options = f"-c search_path={schema}" if schema else ""
    return psycopg.connect("", options=options, autocommit=autocommit)


def prepare():
    """Fresh schemas for every design, each account at balance 0."""
    with connect(autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS idempotent_inbox")
        conn.execute(REFEREE_SQL)
        for key, design in DESIGNS.items():
            schema = schema_of(key)
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
            conn.execute(f"SET search_path = {schema}")
            # paid_by is the referee's: the trigger empties it before each row is written.
            conn.execute("""CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL,
                                                   paid_by text[] CHECK (paid_by IS NULL))""")
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO accounts VALUES (%s, 0)", [(a,) for a in ACCOUNTS])
            conn.execute("""CREATE TRIGGER referee BEFORE UPDATE ON accounts FOR EACH ROW
                            EXECUTE FUNCTION chaos_referee.record()""")
            design().setup(conn)
            conn.execute("RESET search_path")


def balances(design_key):
    with connect(autocommit=True) as conn:
        rows = conn.execute(f"SELECT id, balance FROM {schema_of(design_key)}.accounts")
        return dict(rows.fetchall())


def applications(design_key):
    """How many times each payment id reached the design's balances."""
    with connect(autocommit=True) as conn:
        rows = conn.execute("""SELECT payment_id, count(*) FROM chaos_referee.applied
                               WHERE design = %s GROUP BY payment_id""",
                            (schema_of(design_key),))
        return Counter(dict(rows.fetchall()))


def quarantine(design_key):
    """The inbox's quarantine, for the designs built on it: message id -> (state,
    attempts, last error); {} for the others."""
    if not getattr(DESIGNS[design_key], "inbox", False):
        return {}
    with connect(autocommit=True) as conn:
        rows = conn.execute("""SELECT message_id, state, attempts, last_error
                                 FROM inbox.quarantine
                                WHERE inbox = %s::regclass""",
                            (f"{schema_of(design_key)}.payments",))
        return {mid: (state, attempts, error) for mid, state, attempts, error in rows}
