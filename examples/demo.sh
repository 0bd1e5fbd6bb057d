#!/usr/bin/env bash
#
# The idempotent_inbox demo.  Payment p1 (+50 to account acct-7) is delivered twice to
# three consumers, each with its own schema holding an accounts table and an inbox:
#   A  runs the UPDATE for every delivery                            -> 100, the bug
#   B  runs it through inbox.claim_apply                             -> 50
#   C  like B, but its backend is killed with kill -9 after applying, before COMMIT;
#      the server runs crash recovery and p1 is redelivered           -> 50
#
# `make demo` runs it on a throwaway cluster.  Run by hand, it needs PGHOST and PGPORT
# of a server on this machine and must run as that server's OS user (to kill the
# backend).  The kill makes the server restart every session: never point it at a
# server you care about.

set -euo pipefail

: "${PGHOST:?set PGHOST and PGPORT to a throwaway server (make demo does)}"
: "${PGPORT:?set PGHOST and PGPORT to a throwaway server (make demo does)}"
export PGDATABASE=inbox_demo
export PGOPTIONS='-c client_min_messages=warning'
# shellcheck disable=SC2016  # $1 and $2 are the statement's parameters, not shell's
STATEMENT='UPDATE accounts SET balance = balance + $1 WHERE id = $2'
SERVER_LOG=${INBOX_DEMO_SERVER_LOG:-}
WORK=$(mktemp -d)
CONSUMER_C=""       # the background psql of consumer C's first delivery

on_exit() {
    [[ -z $CONSUMER_C ]] || kill "$CONSUMER_C" 2>/dev/null || true
    rm -rf -- "$WORK"
}
trap on_exit EXIT

say() { printf '%s\n' "$@"; }
fail() { printf 'demo failed: %s\n' "$*" >&2; exit 1; }

# One session per call, as a consumer process would open; -At prints bare values.
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
in_schema() { local schema=$1; shift; sql -c "SET search_path = $schema" "$@"; }
balance() { sql -c "SELECT balance FROM $1.accounts WHERE id = 'acct-7'"; }

setup() {
    sql -d postgres -c 'DROP DATABASE IF EXISTS inbox_demo WITH (FORCE)' \
                    -c 'CREATE DATABASE inbox_demo'
    sql >/dev/null <<'SQL'
CREATE EXTENSION idempotent_inbox;
CREATE SCHEMA consumer_a;
CREATE SCHEMA consumer_b;
CREATE SCHEMA consumer_c;
CREATE TABLE consumer_a.accounts (id text PRIMARY KEY, balance int NOT NULL);
CREATE TABLE consumer_b.accounts (LIKE consumer_a.accounts INCLUDING ALL);
CREATE TABLE consumer_c.accounts (LIKE consumer_a.accounts INCLUDING ALL);
INSERT INTO consumer_a.accounts VALUES ('acct-7', 0);
INSERT INTO consumer_b.accounts VALUES ('acct-7', 0);
INSERT INTO consumer_c.accounts VALUES ('acct-7', 0);
SELECT inbox.create_inbox('consumer_b.payments');
SELECT inbox.create_inbox('consumer_c.payments');
SQL
}

claim_apply_p1() {
    printf "SELECT inbox.claim_apply('payments', 'p1', '%s', 50, 'acct-7')" "$STATEMENT"
}

consumer_a() {
    say "A. no deduplication: each delivery runs"
    say "     UPDATE accounts SET balance = balance + 50 WHERE id = 'acct-7'"
    local n
    for n in 1 2; do
        in_schema consumer_a -c "UPDATE accounts SET balance = balance + 50 WHERE id = 'acct-7'"
        say "   delivery $n: updated"
    done
}

consumer_b() {
    say "" "B. claim_apply: each delivery runs"
    say "     SELECT inbox.claim_apply('payments', 'p1',"
    say "            '$STATEMENT', 50, 'acct-7')"
    local n
    for n in 1 2; do
        say "   delivery $n: $(in_schema consumer_b -c "$(claim_apply_p1)")"
    done
}

# Consumer C's first delivery: a session that applies p1, reports its backend pid, and
# then sits inside its open transaction.  \o closes each file, so the shell can read
# them while the session is still waiting.
start_doomed_delivery() {
    sql >"$WORK/c.log" 2>&1 <<SQL &
SET search_path = consumer_c;
BEGIN;
\o $WORK/c.outcome
$(claim_apply_p1);
\o $WORK/c.pid
SELECT pg_backend_pid();
\o
SELECT pg_sleep(60);
COMMIT;
SQL
    CONSUMER_C=$!
    local tries=0
    until [[ -s $WORK/c.pid ]]; do
        kill -0 "$CONSUMER_C" 2>/dev/null || fail "consumer C's session ended early: $(<"$WORK/c.log")"
        ((++tries < 200)) || fail "consumer C never reported its backend pid"
        sleep 0.05
    done
}

# Wait for the killed backend to be reaped (the postmaster then starts crash
# recovery), then for the server to accept connections again.
wait_for_recovery() {
    local pid=$1 tries=0
    while kill -0 "$pid" 2>/dev/null; do
        ((++tries < 200)) || fail "backend $pid survived kill -9"
        sleep 0.05
    done
    wait "$CONSUMER_C" 2>/dev/null || true
    CONSUMER_C=""
    tries=0
    until pg_isready -q; do
        ((++tries < 600)) || fail "the server did not come back after crash recovery"
        sleep 0.05
    done
}

# The server's own account of the crash, when make demo told us where its log is.
show_server_log() {
    local from=$1
    [[ -r $SERVER_LOG ]] || return 0
    tail -n "+$from" "$SERVER_LOG" |
        grep -E 'terminated by signal 9|automatic recovery in progress|ready to accept connections' |
        sed -E 's/^.*(LOG|WARNING): +/   server log: /'
}

consumer_c() {
    say "" "C. claim_apply, and the backend is killed with kill -9 before COMMIT"
    local pid log_from=1 start ms claims
    start_doomed_delivery
    pid=$(<"$WORK/c.pid")
    say "   delivery 1: BEGIN; claim_apply(...) -> $(<"$WORK/c.outcome") in backend $pid, not committed"
    say "               balance seen by other sessions meanwhile: $(balance consumer_c)"
    [[ -r $SERVER_LOG ]] && log_from=$(($(wc -l <"$SERVER_LOG") + 1))
    say "   kill -9 $pid"
    start=${EPOCHREALTIME/./}
    kill -9 "$pid" || fail "could not kill backend $pid: run as the server's OS user"
    wait_for_recovery "$pid"
    ms=$(((${EPOCHREALTIME/./} - start) / 1000))
    show_server_log "$log_from"
    say "   server accepting connections again after $((ms / 1000)).$((ms % 1000 / 100)) s"
    claims=$(sql -c "SELECT count(*) FROM consumer_c.payments WHERE message_id = 'p1'")
    say "   after recovery: balance $(balance consumer_c), claims of p1: $claims (effect and claim were lost together)"
    say "   delivery 2 (redelivery): $(in_schema consumer_c -c "$(claim_apply_p1)")"
    say "   delivery 3 (redelivery): $(in_schema consumer_c -c "$(claim_apply_p1)")"
}

# Expected vs actual final balances; the exit status says whether they all match.
report() {
    local row name schema expected actual ok=1
    say "" "$(printf '%-30s %8s %8s' consumer expected actual)"
    for row in "A. no deduplication:consumer_a:100" \
               "B. claim_apply:consumer_b:50" \
               "C. claim_apply + kill -9:consumer_c:50"; do
        IFS=: read -r name schema expected <<<"$row"
        actual=$(balance "$schema")
        printf '%-30s %8s %8s%s\n' "$name" "$expected" "$actual" \
            "$([[ $schema == consumer_a ]] && echo '   (the duplicate was applied)')"
        [[ $actual == "$expected" ]] || ok=0
    done
    say ""
    ((ok)) || fail "some balances are wrong"
    say "all balances correct"
}

main() {
    say "idempotent_inbox demo: payment p1 (+50 to acct-7) is delivered twice to each consumer" ""
    setup
    consumer_a
    consumer_b
    consumer_c
    report
}

main "$@"
