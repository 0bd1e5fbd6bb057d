"""The four consumer designs, side by side.  Each credits accounts in a schema of its own.

handle(conn, payment, crash) runs one delivery on a psycopg connection whose search_path
is the design's schema, and returns 'applied' or 'duplicate'.  The consumer XACKs the
entry after handle returns, so every design acknowledges only after COMMIT.
crash(point) is where the chaos may SIGKILL the process: the named points (and
before_ack, in the consumer) are the windows that matter.  A crash before COMMIT is harmless to every design (the server
rolls the transaction back); the windows after a COMMIT are where the designs differ.
"""
CREDIT = "UPDATE accounts SET balance = balance + %s WHERE id = %s"


def referee_tag(conn, payment):
    """Names the payment the next UPDATE of accounts belongs to, so that the referee
    (referee.py) can count how often each payment really reached the balances.  It is
    the demo's instrument, not part of any design."""
    conn.execute("SELECT set_config('chaos.payment_id', %s, true)", (payment.id,))


class NoDedup:
    """Applies every delivery: each redelivery and each resend is applied again."""
    key, title = "a", "A. no dedup"

    def setup(self, conn):
        pass

    def handle(self, conn, payment, crash):
        referee_tag(conn, payment)
        conn.execute(CREDIT, (payment.amount, payment.account))
        crash("before_commit")
        conn.commit()
        return "applied"


class MemorySet:
    """Remembers ids in the process.  Catches a duplicate that arrives while the same
    process is alive; a restart forgets them all, and a redelivery only ever follows
    a restart."""
    key, title = "b", "B. in-memory seen set"

    def __init__(self):
        self.seen = set()

    def setup(self, conn):
        pass

    def handle(self, conn, payment, crash):
        if payment.id in self.seen:
            return "duplicate"
        referee_tag(conn, payment)
        conn.execute(CREDIT, (payment.amount, payment.account))
        crash("before_commit")
        conn.commit()
        self.seen.add(payment.id)
        return "applied"


class Inbox:
    """idempotent_inbox: the claim of the id and the effect commit together or not at all,
    so a redelivery after any crash finds the claim exactly when the effect is there."""
    key, title = "c", "C. idempotent_inbox claim_apply"
    # The payment id is untyped text, the amount a typed int: type the account too.
    CLAIM_APPLY = ("SELECT inbox.claim_apply('payments', %s,"
                   " 'UPDATE accounts SET balance = balance + $1 WHERE id = $2', %s, %s::text)")

    def setup(self, conn):
        conn.execute("SELECT inbox.create_inbox('payments')")

    def handle(self, conn, payment, crash):
        referee_tag(conn, payment)
        outcome = conn.execute(self.CLAIM_APPLY,
                               (payment.id, payment.amount, payment.account)).fetchone()[0]
        crash("before_commit")
        conn.commit()
        return outcome


class SeparateStep:
    """Durable ids, but recorded in a transaction of their own after the effect's: a
    crash between the two commits leaves an applied payment whose id was never saved."""
    key, title = "d", "D. id recorded in a separate step"

    def setup(self, conn):
        conn.execute("CREATE TABLE seen_ids (payment_id text PRIMARY KEY)")

    def handle(self, conn, payment, crash):
        if conn.execute("SELECT 1 FROM seen_ids WHERE payment_id = %s",
                        (payment.id,)).fetchone():
            conn.commit()
            return "duplicate"
        referee_tag(conn, payment)
        conn.execute(CREDIT, (payment.amount, payment.account))
        crash("before_commit")
        conn.commit()
        crash("before_record")
        conn.execute("INSERT INTO seen_ids VALUES (%s)", (payment.id,))
        conn.commit()
        return "applied"


DESIGNS = {d.key: d for d in (NoDedup, MemorySet, Inbox, SeparateStep)}


def schema_of(design_key):
    return f"chaos_{design_key}"
