"""Judging each design against the known right balances, and printing the table.

The poison payments (payments.py) are left out of the right balances.  A design ends
exact only if it applied none of them and got past every one without losing it: the
inbox quarantines them.  A design that redelivers them forever is stopped by the
supervisor and reported stuck; one that acknowledged them after the failure dropped
them without a trace.
"""
from dataclasses import dataclass, field

from designs import DESIGNS


@dataclass
class Result:
    design_key: str
    expected: dict          # account -> balance
    actual: dict
    twice: int              # extra applications of payments (the referee's count)
    lost: int               # payments never applied
    kills: int              # SIGKILLs of this design's consumers, planned or not
    poison: list = field(default_factory=list)      # the poison payment ids
    poison_applied: int = 0     # ledger rows of poison payments (none can apply)
    quarantined: dict = field(default_factory=dict)     # id -> attempts, quarantined now
    looping: tuple = None   # (seconds, poison entries, redeliveries) if it never drained
    dropped: int = 0        # poison entries acknowledged after their failure

    @property
    def poison_handled(self):
        """Every poison payment quarantined, none applied, the group drained."""
        return (self.looping is None and self.poison_applied == 0
                and set(self.quarantined) == set(self.poison))

    @property
    def title(self):
        return DESIGNS[self.design_key].title

    @property
    def exact(self):
        return (self.actual == self.expected and self.twice == 0 and self.lost == 0
                and self.poison_handled)

    def poison_note(self):
        if self.looping:
            _seconds, entries, redeliveries = self.looping
            return f"loops: {redeliveries} redeliveries"
        if self.dropped:
            return f"{self.dropped} dropped, no record"
        if self.poison and set(self.quarantined) == set(self.poison):
            return f"{len(self.poison)} quarantined"
        if self.poison:
            return f"{len(self.quarantined)} of {len(self.poison)} quarantined"
        return "-"

    def verdict(self):
        if self.exact:
            return "exact" if getattr(DESIGNS[self.design_key], "inbox", False) else \
                "exact (this run, no crash hit its window)"
        diff = sum(self.actual.values()) - sum(self.expected.values())
        what = []
        if self.twice:
            what.append(f"{self.twice} duplicates applied")
        if self.lost:
            what.append(f"{self.lost} payments lost")
        if self.poison_applied:
            what.append(f"{self.poison_applied} poison payments applied")
        if diff == 0 and not what:
            return "STUCK" if self.looping else "LOSES POISON" if self.dropped else "WRONG"
        return f"WRONG ({diff:+d}: {', '.join(what) or 'balances differ'})"


def judge(design_key, expected, actual, applications, payments, kills, quarantine=None,
          looping=None, dropped=0):
    """payments: every payment, the poison ones too; quarantine: referee.quarantine()."""
    poison = [p.id for p in payments if p.poison]
    twice = sum(n - 1 for n in applications.values() if n > 1)
    lost = sum(1 for p in payments if not p.poison and applications[p.id] == 0)
    quarantined = {mid: attempts for mid, (state, attempts, _error) in (quarantine or {}).items()
                   if state == "quarantined"}
    return Result(design_key, expected, actual, twice, lost, kills, poison,
                  sum(applications[pid] for pid in poison), quarantined, looping, dropped)


def table(results):
    lines = [f"{'design':<36} {'kills':>5} {'expected':>9} {'actual':>9}   "
             f"{'poison':<25} verdict"]
    for r in results:
        lines.append(f"{r.title:<36} {r.kills:>5} {sum(r.expected.values()):>9} "
                     f"{sum(r.actual.values()):>9}   {r.poison_note():<25} {r.verdict()}")
    return "\n".join(lines)
