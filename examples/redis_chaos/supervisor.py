"""The supervisor: runs one consumer process per design, restarts every consumer that
dies, and adds chaos of its own: SIGKILLs at random times, wherever the victim happens
to be.  It returns once every group has every entry delivered and acknowledged, or
has given up on a design: a group whose only pending entries are poison payments, each
delivered LOOP_DELIVERIES times, would redeliver them forever, and its consumer is
stopped (looping: the entries and their redeliveries).
"""
import os
import signal
import sys
import time
from dataclasses import dataclass, field

import broker
import children

CONSUMER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "consumer.py")
POLL = 0.02
MIN_UPTIME = 0.3            # a consumer younger than this is still importing: not worth a kill
KILL_GAP = (0.1, 0.6)       # seconds between two supervisor kills
LOOP_DELIVERIES = 20        # deliveries of each poison entry before a design counts as looping


@dataclass
class Consumer:
    design_key: str
    incarnation: int
    proc: object
    log: str
    started: float = field(default_factory=time.monotonic)

    @property
    def name(self):
        return f"{self.design_key}-{self.incarnation}"


class ConsumerFailed(RuntimeError):
    pass


class Supervisor:
    def __init__(self, r, port, workdir, design_keys, seed, crash_rate, kills, rng):
        self.r, self.port, self.workdir = r, port, workdir
        self.design_keys, self.seed, self.crash_rate = design_keys, seed, crash_rate
        self.kills_left, self.rng = kills, rng
        self.consumers = {}
        self.killed = dict.fromkeys(design_keys, 0)     # by the supervisor
        self.restarts = dict.fromkeys(design_keys, 0)
        self.drained = {}           # design key -> seconds until its group had every entry
        self.looping = {}           # design key -> (seconds, poison entries, redeliveries)

    def run(self, timeout):
        started = time.monotonic()
        deadline = started + timeout
        try:
            for key in self.design_keys:
                self._start(key, 1)
            next_kill = time.monotonic() + self.rng.uniform(*KILL_GAP)
            while not self._all_drained(started):
                if time.monotonic() > deadline:
                    stuck = [k for k in self.design_keys
                             if k not in self.drained and k not in self.looping]
                    raise ConsumerFailed(f"the consumers did not finish within {timeout:.0f} s: "
                                         f"{', '.join(stuck)} still had entries pending")
                self._restart_the_dead()
                # A kill that finds no consumer worth killing (all just restarted, or
                # done) is tried again at the next poll, not a whole gap later: a short
                # run would otherwise end with no random kill at all.
                if self.kills_left and time.monotonic() >= next_kill and self._kill_one():
                    next_kill = time.monotonic() + self.rng.uniform(*KILL_GAP)
                time.sleep(POLL)
        finally:
            for consumer in self.consumers.values():
                children.stop(consumer.proc)

    def _all_drained(self, started):
        for key in self.design_keys:
            if key in self.drained or key in self.looping:
                continue
            if broker.group_done(self.r, key):
                self.drained[key] = time.monotonic() - started
                continue
            stuck = broker.poison_loop(self.r, key, LOOP_DELIVERIES)
            if stuck:
                self.looping[key] = (time.monotonic() - started, *stuck)
                children.stop(self.consumers.pop(key).proc)
        return len(self.drained) + len(self.looping) == len(self.design_keys)

    def _start(self, key, incarnation):
        log = os.path.join(self.workdir, f"consumer-{key}-{incarnation}.log")
        with open(log, "wb") as out:
            proc = children.spawn(
                [sys.executable, CONSUMER, key, f"{key}-{incarnation}", str(self.port),
                 str(self.seed), str(self.crash_rate)],
                stdout=out, stderr=out)
        self.consumers[key] = Consumer(key, incarnation, proc, log)

    def _restart_the_dead(self):
        for key, consumer in list(self.consumers.items()):
            status = consumer.proc.poll()
            if status is None:
                continue
            # Only SIGKILL is chaos; anything else is a bug in the consumer.
            if status != -signal.SIGKILL:
                with open(consumer.log, errors="replace") as f:
                    raise ConsumerFailed(f"consumer {consumer.name} exited with status "
                                         f"{status}:\n{f.read()[-3000:]}")
            self.restarts[key] += 1
            self._start(key, consumer.incarnation + 1)

    def _kill_one(self):
        now = time.monotonic()
        victims = [c for key, c in sorted(self.consumers.items())
                   if now - c.started >= MIN_UPTIME and c.proc.poll() is None
                   and not broker.group_done(self.r, key)]
        if not victims:
            return False
        victim = self.rng.choice(victims)
        os.kill(victim.proc.pid, signal.SIGKILL)
        self.killed[victim.design_key] += 1
        self.kills_left -= 1
        return True
