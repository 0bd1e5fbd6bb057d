"""A payment endpoint that honours an Idempotency-Key header, built on
inbox.acquire / inbox.finish / inbox.release.

    POST /payments   Idempotency-Key: <any string>   {"amount": 1000, "currency": "EUR", "source": "tok_visa"}

    201  the charge was made, body is the payment
    201  with Idempotency-Replayed: true: the key was seen before, body is the stored payment
    409  an earlier request with this key is still running: retry after Retry-After seconds
    422  the key was used before with a different body
    502  the gateway failed: nothing was charged and the key is free for a retry
    400  no Idempotency-Key header

The charge is a call to an outside system, so it cannot share a transaction with the
database.  The inbox gives each key a lease instead: acquire it and commit, call the
gateway, then store the result with finish (or give the key back with release).  A
request that dies in between leaves a lease that expires after LEASE, and the next retry
takes it over.  LEASE must therefore be longer than the gateway's own timeout.

Run it (needs the idempotent_inbox extension in the database the PG* variables name):

    PGDATABASE=shop uvicorn app:app
"""
import os
import time
import uuid

import psycopg
from fastapi import FastAPI, Header, HTTPException
from fastapi.responses import JSONResponse
from psycopg.types.json import Jsonb
from pydantic import BaseModel, Field

INBOX = "payments_idempotency"
LEASE = "30 seconds"
RETRY_AFTER = "1"                     # seconds; most payments finish well within it
GATEWAY_DELAY = float(os.environ.get("GATEWAY_DELAY", "0.2"))

# SQLSTATEs raised by idempotent_inbox that the client caused.
KEY_REUSED = "22I01"                  # same key, different fingerprint
BAD_KEY = {"22023", "22001"}          # empty key, key over 1024 bytes

app = FastAPI(title="payments with idempotency keys")


class Payment(BaseModel):
    amount: int = Field(gt=0, description="in minor units (cents)")
    currency: str = Field(min_length=3, max_length=3)
    source: str


class GatewayError(Exception):
    pass


def connect():
    """One short autocommit connection per request, configured by the PG* variables.
    Autocommit matters: acquire must be committed before the gateway is called, or a
    concurrent retry would wait on our row lock instead of seeing in_progress."""
    return psycopg.connect("", autocommit=True)


@app.on_event("startup")
def setup():
    with connect() as conn:
        if conn.execute("SELECT to_regclass(%s) IS NULL", (INBOX,)).fetchone()[0]:
            conn.execute("SELECT inbox.create_inbox(%s)", (INBOX,))
        conn.execute("""CREATE TABLE IF NOT EXISTS charges (
                            id text PRIMARY KEY,
                            idempotency_key text NOT NULL,
                            amount integer NOT NULL,
                            currency text NOT NULL,
                            charged_at timestamptz NOT NULL DEFAULT now())""")


def charge_card(conn, key, payment):
    """Stands in for a payment gateway.  The charges table plays the gateway's ledger,
    so that every charge it made can be counted.  The source "tok_gateway_down" makes
    it fail the way an unreachable gateway would: after the delay, charging nothing."""
    time.sleep(GATEWAY_DELAY)
    if payment.source == "tok_gateway_down":
        raise GatewayError("payment gateway unreachable")
    charge_id = "ch_" + uuid.uuid4().hex[:16]
    conn.execute("INSERT INTO charges (id, idempotency_key, amount, currency) "
                 "VALUES (%s, %s, %s, %s)",
                 (charge_id, key, payment.amount, payment.currency))
    return charge_id


@app.post("/payments", status_code=201)
def create_payment(payment: Payment, idempotency_key: str | None = Header(None)):
    if idempotency_key is None:
        raise HTTPException(400, "the Idempotency-Key header is required")

    with connect() as conn:
        try:
            # The fingerprint is taken from the validated body, so a retry that
            # reorders the JSON keys or spaces it differently is still the same request.
            status, token, result = conn.execute(
                "SELECT status, token, result FROM inbox.acquire(%s, %s::text, %s, "
                "inbox.fingerprint(%s::jsonb))",
                (INBOX, idempotency_key, LEASE, Jsonb(payment.dict()))).fetchone()
        except psycopg.Error as e:
            if e.sqlstate == KEY_REUSED:
                raise HTTPException(422, "this Idempotency-Key was used with another body")
            if e.sqlstate in BAD_KEY:
                raise HTTPException(400, e.diag.message_primary)
            raise

        if status == "completed":
            return JSONResponse(result, status_code=201,
                                headers={"Idempotency-Replayed": "true"})
        if status == "in_progress":
            raise HTTPException(409, "a request with this Idempotency-Key is in progress",
                                headers={"Retry-After": RETRY_AFTER})

        # status == "acquired": this request owns the key until finish or release.
        try:
            charge_id = charge_card(conn, idempotency_key, payment)
        except GatewayError as e:
            # Nothing was charged: free the key so the client's retry tries again.
            # Any other error keeps the lease until it expires: money may have moved.
            conn.execute("SELECT inbox.release(%s, %s::text, %s::bigint)",
                         (INBOX, idempotency_key, token))
            raise HTTPException(502, str(e))

        result = {"id": f"pay_{token}", "charge": charge_id, "status": "succeeded",
                  **payment.dict()}
        # The token fences us: had our lease expired and another request taken the key
        # over, finish raises 55I01 instead of overwriting that request's result.
        conn.execute("SELECT inbox.finish(%s, %s::text, %s::bigint, %s)",
                     (INBOX, idempotency_key, token, Jsonb(result)))
        return result
