"""The broker: a private Redis server, and the stream the payments travel on.

Redis streams with consumer groups are a real at-least-once broker: an entry a consumer
has read stays pending in its group until the consumer XACKs it, and a consumer that
restarts takes the pending entries back (XAUTOCLAIM) and processes them again.  Every
design gets a consumer group of its own, so each one sees every payment.

The server is ours alone: loopback only, a free port, no persistence, its files in our
temp dir, stopped when the demo ends.
"""
import os
import shutil
import socket
import subprocess
import time

import redis

import children

STREAM = "payments"
STATS = "chaos:stats"       # counters the consumers leave behind (they may be killed)


def group_of(design_key):
    return f"design-{design_key}"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """with RedisServer(dir) as server: server.client() ... (stopped on any exit)."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.port = None
        self.proc = None

    def __enter__(self):
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server not found: apt-get install redis-server")
        # The port can be taken between our probe and Redis's bind: try another one.
        for _ in range(5):
            self.port = _free_port()
            self.proc = children.spawn(
                ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port),
                 "--save", "", "--appendonly", "no", "--dir", self.workdir,
                 "--logfile", os.path.join(self.workdir, "redis.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ready():
                return self
            children.stop(self.proc)
        raise RuntimeError(f"redis-server did not start; see {self.workdir}/redis.log")

    def __exit__(self, *exc):
        children.stop(self.proc)

    def _wait_ready(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                return self.client().ping()
            except redis.ConnectionError:
                time.sleep(0.05)
        return False

    def client(self):
        return connect(self.port)


def connect(port):
    return redis.Redis(host="127.0.0.1", port=port, decode_responses=True)


def create_groups(r, design_keys):
    r.delete(STREAM, STATS)
    for key in design_keys:
        r.xgroup_create(STREAM, group_of(key), id="0", mkstream=True)


def group_done(r, design_key):
    """Every entry of the stream delivered to the group and acknowledged."""
    last = r.xinfo_stream(STREAM)["last-generated-id"]
    for group in r.xinfo_groups(STREAM):
        if group["name"] == group_of(design_key):
            return group["pending"] == 0 and group["last-delivered-id"] == last
    raise KeyError(design_key)


def poison_loop(r, design_key, deliveries):
    """(entries, redeliveries) if the group is stuck on poison: every entry delivered,
    every one but some poison payments acknowledged, and each of those delivered at
    least `deliveries` times; None otherwise.  Redeliveries counts the deliveries after
    the first of each of them (XPENDING's delivery counter).  The stream, the group
    and its pending entries are read in one MULTI: read one after the other, a
    consumer could acknowledge its last poison entry in between, and an empty list
    of pending entries would look like a group stuck on nothing."""
    from payments import Payment    # payments imports this module
    pipe = r.pipeline(transaction=True)
    pipe.xinfo_stream(STREAM)
    pipe.xinfo_groups(STREAM)
    pipe.xpending_range(STREAM, group_of(design_key), "-", "+", 1000)
    stream, groups, pending = pipe.execute()
    group = next(g for g in groups if g["name"] == group_of(design_key))
    if (group["last-delivered-id"] != stream["last-generated-id"]
            or not 0 < group["pending"] == len(pending)):
        return None
    if any(p["times_delivered"] < deliveries for p in pending):
        return None
    for p in pending:
        entry = r.xrange(STREAM, p["message_id"], p["message_id"])
        if not entry or not Payment.from_fields(entry[0][1]).poison:
            return None
    return len(pending), sum(p["times_delivered"] - 1 for p in pending)
