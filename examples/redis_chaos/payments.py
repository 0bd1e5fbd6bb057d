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

A few payments are poison (about one in 200, chosen from the seed): their amount is
corrupt, 2^63, one more than a bigint holds, so every attempt to credit it fails inside
the UPDATE, whatever the balance, with "bigint out of range": a genuine SQL error that
rolls the transaction back.  No
delivery can ever apply one, so the right balances leave them out: a design ends
right only if it applies none of them and still gets past them.
"""
import random
from dataclasses import dataclass

from broker import STREAM

ACCOUNTS = [f"acct-{n:02d}" for n in range(1, 11)]
RESEND_DISTANCE = 200       # at most this many entries between a payment and its resend
POISON_RATE = 0.005         # share of the payments that are poison (at least one)
POISON_AMOUNT = 2**63       # no balance can hold it: "bigint out of range"


@dataclass(frozen=True)
class Payment:
    id: str
    account: str
    amount: int

    @property
    def poison(self):
        return self.amount == POISON_AMOUNT

    def fields(self):
        return {"id": self.id, "account": self.account, "amount": str(self.amount)}

    @classmethod
    def from_fields(cls, fields):
        return cls(fields["id"], fields["account"], int(fields["amount"]))


def make_payments(count, rng, seed, poison_rate=POISON_RATE):
    """The payments, a poison_rate share of them poison.  The poison is drawn from a
    generator of its own, so that rng draws what it drew before there was poison."""
    made = [Payment(f"pay-{n:06d}", rng.choice(ACCOUNTS), rng.randint(1, 100))
            for n in range(1, count + 1)]
    if poison_rate <= 0 or not made:
        return made
    chosen = set(random.Random(f"{seed}/poison").sample(
        range(count), max(1, round(count * poison_rate))))
    return [Payment(p.id, p.account, POISON_AMOUNT) if n in chosen else p
            for n, p in enumerate(made)]


def expected_balances(payments):
    """Every payment but the poison, each counted once."""
    balances = dict.fromkeys(ACCOUNTS, 0)
    for p in payments:
        if not p.poison:
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
