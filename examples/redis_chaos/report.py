"""Judging each design against the known right balances, and printing the table."""
from dataclasses import dataclass

from designs import DESIGNS


@dataclass
class Result:
    design_key: str
    expected: dict          # account -> balance
    actual: dict
    twice: int              # extra applications of payments (the referee's count)
    lost: int               # payments never applied
    kills: int              # SIGKILLs of this design's consumers, planned or not

    @property
    def title(self):
        return DESIGNS[self.design_key].title

    @property
    def exact(self):
        return self.actual == self.expected and self.twice == 0 and self.lost == 0

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
        return f"WRONG ({diff:+d}: {', '.join(what) or 'balances differ'})"


def judge(design_key, expected, actual, applications, payment_ids, kills):
    twice = sum(n - 1 for n in applications.values() if n > 1)
    lost = sum(1 for pid in payment_ids if applications[pid] == 0)
    return Result(design_key, expected, actual, twice, lost, kills)


def table(results):
    lines = [f"{'design':<36} {'kills':>5} {'expected':>9} {'actual':>9}   verdict"]
    for r in results:
        lines.append(f"{r.title:<36} {r.kills:>5} {sum(r.expected.values()):>9} "
                     f"{sum(r.actual.values()):>9}   {r.verdict()}")
    return "\n".join(lines)
