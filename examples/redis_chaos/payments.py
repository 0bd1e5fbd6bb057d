"""The payment events, and the producer that puts them on the stream.

Each payment credits one account with a small amount and carries a unique id, so the
right balance of every account is known in advance: the sum of its payments, each
counted once.

The producer is at-least-once too: a small share of the payments is sent a second
time a little later, as a producer does when the reply to its XADD was lost and it
retries.  The stream then holds the same payment id in two entries.  Only a consumer
that remembers ids can tell; a consumer restart cannot cause these duplicates.

Each entry also carries the payment's sequence number (field seq: 0, 1, 2, ... in
the order of the payments), the offset that design E records.  The producer numbers
payments, not entries: a resend carries the number of its first send, as a retried
send does with a producer that numbers its messages (Kafka's idempotent producer).
"""
from dataclasses import dataclass

from broker import STREAM

ACCOUNTS = [f"acct-{n:02d}" for n in range(1, 11)]
RESEND_DISTANCE = 200       # at most this many entries between a payment and its resend


@dataclass(frozen=True)
class Payment:
    id: str
    account: str
    amount: int

    def fields(self):
        return {"id": self.id, "account": self.account, "amount": str(self.amount)}

    @classmethod
    def from_fields(cls, fields):
        return cls(fields["id"], fields["account"], int(fields["amount"]))


def make_payments(count, rng):
    return [Payment(f"pay-{n:06d}", rng.choice(ACCOUNTS), rng.randint(1, 100))
            for n in range(1, count + 1)]


def expected_balances(payments):
    balances = dict.fromkeys(ACCOUNTS, 0)
    for p in payments:
        balances[p.account] += p.amount
    return balances


def publish(r, payments, rng, resend_rate):
    """XADD every payment in order, plus the resends; returns how many were resent."""
    entries = [(float(n), n, p) for n, p in enumerate(payments)]
    entries += [(n + rng.uniform(1, RESEND_DISTANCE), n, p)
                for n, p in enumerate(payments) if rng.random() < resend_rate]
    entries.sort(key=lambda entry: entry[0])
    pipe = r.pipeline(transaction=False)
    for _, seq, p in entries:
        pipe.xadd(STREAM, {**p.fields(), "seq": str(seq)})
    pipe.execute()
    return len(entries) - len(payments)
