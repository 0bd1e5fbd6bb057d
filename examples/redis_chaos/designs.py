"""The four consumer designs, side by side.  Each credits accounts in a schema of its own.

handle_batch(conn, payments, crash) runs one delivery of a batch of payments on a
psycopg connection whose search_path is the design's schema, and returns 'applied' or
'duplicate' for each.  `batch` is how many entries one call gets: A, B and D handle one
payment per transaction, C a whole poll of up to 100 in one transaction.  The consumer
XACKs the batch after handle_batch returns, so every design acknowledges only after
COMMIT.  crash(point) is where the chaos may SIGKILL the process: the named points (and
before_ack, in the consumer) are the windows that matter.  A crash before COMMIT is
harmless to every design (the server rolls the transaction back); the windows after a
COMMIT are where the designs differ.

Every UPDATE of a balance also sets paid_by to the payments it applies: that column is
the referee's instrument (referee.py), not part of any design.
"""
CREDIT = "UPDATE accounts SET balance = balance + %s, paid_by = ARRAY[%s] WHERE id = %s"


class PerMessage:
    """A, B and D: one payment, one transaction."""
    batch = 1

    def setup(self, conn):
        pass

    def handle_batch(self, conn, payments, crash):
        return [self.handle(conn, payment, crash) for payment in payments]

    @staticmethod
    def credit(conn, payment):
        conn.execute(CREDIT, (payment.amount, payment.id, payment.account))


class NoDedup(PerMessage):
    """Applies every delivery: each redelivery and each resend is applied again."""
    key, title = "a", "A. no dedup"

    def handle(self, conn, payment, crash):
        self.credit(conn, payment)
        crash("before_commit")
        conn.commit()
        return "applied"


class MemorySet(PerMessage):
    """Remembers ids in the process.  Catches a duplicate that arrives while the same
    process is alive; a restart forgets them all, and a redelivery only ever follows
    a restart."""
    key, title = "b", "B. in-memory seen set"

    def __init__(self):
        self.seen = set()

    def handle(self, conn, payment, crash):
        if payment.id in self.seen:
            return "duplicate"
        self.credit(conn, payment)
        crash("before_commit")
        conn.commit()
        self.seen.add(payment.id)
        return "applied"


class Inbox:
    """idempotent_inbox: a whole poll claimed and applied by one claim_apply_many call.
    The claims of the ids and the effect commit together or not at all, so a redelivery
    after any crash finds the claims exactly when the effect is there.  The statement
    runs once, over the fresh payments only: $1 is their ids, $2 and $3 their accounts
    and amounts, cut to the same positions; a payment repeated inside the poll or
    replayed from an earlier one never reaches it.  It sums per account, because an
    UPDATE ... FROM changes each row once however many payments join it."""
    key, title = "c", "C. idempotent_inbox claim_apply_many"
    batch = 100
    # psycopg sends a list of str untyped: the casts type the arrays without the help
    # of the library's parse hook, which a session gets only once the library is loaded.
    CLAIM_APPLY_MANY = """
        SELECT outcome::text FROM inbox.claim_apply_many('payments', %s::text[],
            'UPDATE accounts a SET balance = a.balance + m.total, paid_by = m.ids
               FROM (SELECT account, sum(amount) AS total, array_agg(id) AS ids
                       FROM unnest($1, $2, $3) AS u(id, account, amount)
                      GROUP BY account) m
              WHERE a.id = m.account',
            %s::text[], %s::int[])"""

    def setup(self, conn):
        conn.execute("SELECT inbox.create_inbox('payments')")

    def handle_batch(self, conn, payments, crash):
        outcomes = [row[0] for row in conn.execute(
            self.CLAIM_APPLY_MANY, ([p.id for p in payments], [p.account for p in payments],
                                    [p.amount for p in payments]))]
        crash("before_commit")
        conn.commit()
        return outcomes


class SeparateStep(PerMessage):
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
        self.credit(conn, payment)
        crash("before_commit")
        conn.commit()
        crash("before_record")
        conn.execute("INSERT INTO seen_ids VALUES (%s)", (payment.id,))
        conn.commit()
        return "applied"


DESIGNS = {d.key: d for d in (NoDedup, MemorySet, Inbox, SeparateStep)}


def schema_of(design_key):
    return f"chaos_{design_key}"
