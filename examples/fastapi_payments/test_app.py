#!/usr/bin/env python3
"""The payments example (app.py) served by a real uvicorn on a free loopback port and
called through httpx, so that two requests really overlap.  Counts the charges the
fake gateway made for each key.  Prints TAP for prove, one line per assertion.
Connects with the PG* environment variables; needs a database where
idempotent_inbox is installed.  Keys carry a per-run prefix, so it can run again.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import httpx

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "..", "..", "test", "python"))
from inbox_tap import connect, done, eq, failures, ok, run_scenario  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GATEWAY_DELAY = 1.5       # long enough to send a second request while the first is charging
RUN = uuid.uuid4().hex[:8]
PAYMENT = {"amount": 1250, "currency": "EUR", "source": "tok_visa"}


def key(name):
    return f"{RUN}-{name}"


def charges(conn, k):
    return conn.execute("SELECT count(*) FROM charges WHERE idempotency_key = %s",
                        (k,)).fetchone()[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(log):
    port = free_port()
    env = dict(os.environ, GATEWAY_DELAY=str(GATEWAY_DELAY))
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1",
         "--port", str(port)], cwd=HERE, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    # uvicorn answers only once the startup hook (setup) has run.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            httpx.get(base + "/docs", timeout=1)
            return proc, base
        except httpx.TransportError:
            time.sleep(0.1)
    return proc, None


def post(client, k, body=PAYMENT):
    headers = {} if k is None else {"Idempotency-Key": k}
    return client.post("/payments", json=body, headers=headers)


def scenario_first_and_replay(client, conn):
    k = key("first")
    r = post(client, k)
    eq(r.status_code, 201, "first call: 201")
    eq(r.json().get("charge", "")[:3], "ch_", "first call: the body holds the charge")
    ok("idempotency-replayed" not in r.headers, "first call: not marked as a replay")
    eq(charges(conn, k), 1, "first call: one charge")

    # The same payment spelled differently: other key order, other whitespace.
    body = json.dumps(dict(reversed(list(PAYMENT.items()))), indent=2)
    again = client.post("/payments", content=body,
                        headers={"Idempotency-Key": k, "Content-Type": "application/json"})
    eq(again.status_code, 201, "replay: 201")
    eq(again.json(), r.json(), "replay: the same body as the first call")
    eq(again.headers.get("idempotency-replayed"), "true", "replay: Idempotency-Replayed: true")
    eq(charges(conn, k), 1, "replay: still one charge")

    other = post(client, k, dict(PAYMENT, amount=9999))
    eq(other.status_code, 422, "same key, another body: 422")
    eq(charges(conn, k), 1, "same key, another body: still one charge")

    second = post(client, key("second"))
    eq(second.status_code, 201, "another key, same body: 201")
    ok(second.json().get("charge") != r.json().get("charge"),
       "another key, same body: a new charge id")
    eq(charges(conn, key("second")), 1, "another key, same body: its own charge")
    eq(charges(conn, k), 1, "another key, same body: the first key still has one charge")


def scenario_concurrent_retry(client, conn):
    k = key("concurrent")
    first = {}

    def send():
        with httpx.Client(base_url=client.base_url, timeout=30) as c:
            first["response"] = post(c, k)

    t = threading.Thread(target=send)
    t.start()
    # Wait until the first request holds the lease: acquire committed its row, and
    # the gateway delay keeps it from finishing while the retry is sent.
    deadline = time.monotonic() + GATEWAY_DELAY
    held = False
    while not held and time.monotonic() < deadline:
        held = conn.execute("SELECT count(*) FROM payments_idempotency "
                            "WHERE message_id = %s AND result IS NULL", (k,)).fetchone()[0] == 1
        time.sleep(0.02)
    ok(held, "concurrent retry: the first request holds the lease")
    retry = post(client, k)
    t.join()
    eq(retry.status_code, 409, "concurrent retry: 409")
    ok(retry.headers.get("retry-after", "").isdigit(), "concurrent retry: Retry-After is set",
       f"headers: {dict(retry.headers)}")
    eq(first["response"].status_code, 201, "concurrent retry: the first request still gets 201")
    eq(charges(conn, k), 1, "concurrent retry: one charge")
    later = post(client, k)
    eq((later.status_code, later.json()), (201, first["response"].json()),
       "retry after the first finished: its stored result")
    eq(charges(conn, k), 1, "retry after the first finished: still one charge")


def scenario_gateway_down(client, conn):
    k = key("gateway-down")
    down = dict(PAYMENT, source="tok_gateway_down")
    eq(post(client, k, down).status_code, 502, "gateway down: 502")
    # 409 here would mean the lease was kept instead of released.
    eq(post(client, k, down).status_code, 502, "gateway down, retry: tried again, 502")
    eq(charges(conn, k), 0, "gateway down: nothing charged")


def scenario_bad_keys(client, conn):
    before = conn.execute("SELECT count(*) FROM charges").fetchone()[0]
    eq(post(client, None).status_code, 400, "missing Idempotency-Key: 400")
    eq(post(client, "").status_code, 400, "empty Idempotency-Key: 400")
    eq(conn.execute("SELECT count(*) FROM charges").fetchone()[0], before,
       "missing or empty key: nothing charged")


def main():
    scenarios = [scenario_first_and_replay, scenario_concurrent_retry,
                 scenario_gateway_down, scenario_bad_keys]
    with tempfile.TemporaryFile(mode="w+") as log:
        proc, base = start_server(log)
        try:
            ok(base is not None, "uvicorn serves the app")
            if base is not None:
                with connect() as conn, httpx.Client(base_url=base, timeout=30) as client:
                    for scenario in scenarios:
                        run_scenario(scenario, client, conn)
                    eq(conn.execute("SELECT count(*) FROM charges WHERE idempotency_key "
                                    "LIKE %s", (RUN + "-%",)).fetchone()[0], 3,
                       "three charges in all: first, second, concurrent")
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            if failures():
                log.seek(0)
                for line in log.read().splitlines():
                    print(f"# server: {line}", file=sys.stderr)
    return done()


if __name__ == "__main__":
    sys.exit(main())
