# shellcheck shell=bash
#
# The Citus section of the benchmark (BENCH_ONLY=citus, or make bench-citus): what a
# delegated consumer using inbox.claim_apply_sharded costs next to a hand-written
# delegated function, and next to the same work through the coordinator with an inbox
# that is not co-located with the accounts (two-phase commit); and how many messages
# each worker applies with one worker and with two.  Sourced by run; see README.md.
#
# A coordinator and two workers, each its own cluster in the run's temp dir, reachable
# over their sockets there (the node name Citus stores is that directory, as in
# test/citus/CitusCluster.pm).  fsync stays on, as on the single-node bench cluster.

# shellcheck source-path=SCRIPTDIR source=../harness/citus.sh
source "$BENCH_DIR/../harness/citus.sh"

CITUS_PRELOAD=$((100000 / SCALE))  # claims preloaded into each inbox for redeliveries
CITUS_CLIENTS=8                    # pgbench clients of the throughput runs
declare -A NODE_PORT=()            # coordinator, worker1, worker2 -> port
declare -A CMED=()                 # medians of the last citus_compare
CNOISE=""                          # and its largest spread

# One node: initdb, the configuration, start, CREATE EXTENSION citus.  $1 its name.
start_citus_node() {
    local name=$1 out port
    port=$(pick_port)
    if ! out=$(as_postgres initdb -D "$TMP_ROOT/$name" -A trust -U postgres \
                   -E UTF8 --locale=C 2>&1); then
        printf '%s\n' "$out" >&2
        die "initdb of the Citus $name failed"
    fi
    # Three servers share the machine: a smaller shared_buffers each than the
    # single-node bench cluster's.  Citus commits a transaction that wrote on two
    # workers with two-phase commit, hence the prepared transactions.
    as_postgres tee -a "$TMP_ROOT/$name/postgresql.conf" >/dev/null <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$TMP_ROOT'
fsync = on
synchronous_commit = on
shared_buffers = 128MB
max_wal_size = 4GB
checkpoint_timeout = 30min
shared_preload_libraries = 'citus'
max_prepared_transactions = 100
citus.local_hostname = '$TMP_ROOT'
EOF
    # shellcheck disable=SC2034  # common.sh's: its cleanup stops every node in TMP_ROOT
    CLUSTER_UP=1
    if ! as_postgres pg_ctl -D "$TMP_ROOT/$name" -l "$TMP_ROOT/$name.log" -w -t 60 -s start; then
        as_postgres cat "$TMP_ROOT/$name.log" >&2 || true
        die "the Citus $name did not start"
    fi
    NODE_PORT[$name]=$port
    sql -h "$TMP_ROOT" -p "$port" -c 'CREATE EXTENSION citus'
}

start_citus_cluster() {
    local w
    # shellcheck disable=SC2153  # PG_CONFIG is common.sh's
    if ! citus_ensure "$PG_CONFIG"; then
        die "the citus section needs Citus: $CITUS_SKIP_REASON"
    fi
    start_citus_node coordinator
    start_citus_node worker1
    start_citus_node worker2
    PORT=${NODE_PORT[coordinator]}         # sql and pgbench talk to the coordinator
    sql -c "SELECT citus_set_coordinator_host('$TMP_ROOT', $PORT)" >/dev/null
    for w in worker1 worker2; do
        sql -c "SELECT citus_add_node('$TMP_ROOT', ${NODE_PORT[$w]})" >/dev/null
    done
    if [[ $(stat -f -c %T "$TMP_ROOT") == tmpfs ]]; then
        say "warning: $TMP_ROOT is on tmpfs, so synchronous_commit=on flushes nothing"
    fi
}

# synchronous_commit $1 on every node: a delegated call commits on the worker, in a
# session the coordinator opened, which PGOPTIONS does not reach.
citus_sync() {
    local name
    for name in "${!NODE_PORT[@]}"; do
        sql -h "$TMP_ROOT" -p "${NODE_PORT[$name]}" -c "ALTER SYSTEM SET synchronous_commit = $1" \
            -c 'SELECT pg_reload_conf()' >/dev/null
    done
}

# Runs the variants of one configuration interleaved in rotating order, as compare
# does, into CMED (median messages/s of each variant) and CNOISE (the largest spread).
# A variant is script:workers, e.g. citus_ext:1.  $1 clients, $2 synchronous_commit
# (set on every node beforehand by citus_sync), $3 extra pgbench options.
citus_compare() {
    local clients=$1 sync=$2 extra=$3
    shift 3
    local variants=("$@") n=$# rep i v m noise=0
    declare -A tps=()
    for ((rep = 0; rep < REPS; rep++)); do
        for ((i = 0; i < n; i++)); do
            v=${variants[(i + rep) % n]}
            # shellcheck disable=SC2086
            tps[$v]+="$(pgbench_tps "${v%:*}" "$clients" "$sync" prepared -T "$SECONDS_PER_RUN" \
                        -D workers="${v#*:}" -D preload="$CITUS_PRELOAD" $extra) "
        done
    done
    CMED=()
    for v in "${variants[@]}"; do
        # shellcheck disable=SC2086
        CMED[$v]=$(median ${tps[$v]})
        # shellcheck disable=SC2086
        m=$(spread ${tps[$v]})
        ((m <= noise)) || noise=$m
    done
    if ((REPS > 1)); then CNOISE=$noise%; else CNOISE=-; fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# What the coordinator sends the workers for the messages of script $1 (-D workers=$2):
# 20 fresh messages from one pgbench client, prepared as in the timed runs, with
# citus.log_remote_commands on in that session (Citus reports each command to the
# client as a NOTICE, which pgbench prints): commands per message, and how many of the
# messages committed with two-phase commit.
remote_commands() {
    local out
    if ! out=$(as_postgres env PGOPTIONS="-c citus.log_remote_commands=on" \
                   pgbench -n -c 1 -t 20 -M prepared -f "$SCRIPTS/$1.sql" \
                   -D workers="$2" -D preload="$CITUS_PRELOAD" -D dup_pct=0 2>&1); then
        printf '%s\n' "$out" >&2
        die "pgbench $1 failed"
    fi
    # A prepared transaction's name is citus_<node>_<pid>_<transaction>_<connection>:
    # one distributed transaction prepares on each worker it wrote on.
    printf '%s commands per message; two-phase commit for %s of the 20 (%s PREPARE TRANSACTION)\n' \
        "$(grep -c 'issuing' <<<"$out" | awk '{ printf "%.2f", $1 / 20 }')" \
        "$(grep -oE "issuing PREPARE TRANSACTION 'citus_[0-9]+_[0-9]+_[0-9]+_" <<<"$out" |
           sort -u | wc -l)" \
        "$(grep -c 'issuing PREPARE TRANSACTION' <<<"$out" || true)"
}

# Each applied message added 1 to one balance and wrote one claim; preloaded claims
# applied nothing.  So each group's balances add up to its inboxes' claims beyond the
# preload; anything else means a message was applied twice or without its claim.
check_citus_effects() {
    local out b1 c1 b2 c2
    out=$(sql -F ' ' -c "
        SELECT (SELECT sum(balance) FROM accounts_1w),
               (SELECT count(*) FROM payments_inbox_1w) + (SELECT count(*) FROM hand_inbox_1w)
                   - 2 * $CITUS_PRELOAD,
               (SELECT sum(balance) FROM accounts),
               (SELECT count(*) FROM payments_inbox) + (SELECT count(*) FROM hand_inbox)
                   + (SELECT count(*) FROM noncoloc_inbox) - 3 * $CITUS_PRELOAD")
    read -r b1 c1 b2 c2 <<<"$out"
    line "  effects applied / fresh claims (must be equal): one worker $b1 / $c1," \
        "two workers $b2 / $c2"
    [[ $b1 == "$c1" && $b2 == "$c2" ]] || die "a message was applied twice or without its claim"
}

citus_section() {
    say "" "Citus: a coordinator and two workers on this machine; messages/s through the coordinator," \
        "$CITUS_CLIENTS clients unless it says c=1, prepared.  ext = SELECT consume(acct, id, 1), a function" \
        "delegated to the worker of the account's shard that calls inbox.claim_apply_sharded on a" \
        "co-located inbox; hand = the hand-written delegated function (INSERT ... ON CONFLICT DO NOTHING," \
        "then the UPDATE); noncoloc = inbox.claim_apply on an inbox distributed by message_id, run on" \
        "the coordinator (claim and effect on different workers for about half the messages: 2PC)." \
        "1w = every shard on worker 1; 2w = shards over both workers."
    say "setting up Citus and loading $CITUS_PRELOAD claims into each inbox..."
    sql -v host="$TMP_ROOT" -v worker2="${NODE_PORT[worker2]}" -v preload="$CITUS_PRELOAD" \
        -f "$SCRIPTS/setup_citus.sql" >/dev/null
    line "  shards per worker: $(sql -c "
        SELECT string_agg(format('%s %s', t, per_node), '; ' ORDER BY t)
          FROM (SELECT t, string_agg(format('worker %s: %s', groupid, n), ', ' ORDER BY groupid) AS per_node
                  FROM (SELECT logicalrelid::text AS t, p.groupid, count(*) AS n
                          FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
                         WHERE logicalrelid IN ('accounts_1w'::regclass, 'accounts'::regclass,
                                                'noncoloc_inbox'::regclass)
                         GROUP BY 1, 2) c GROUP BY t) x")"
    local cross
    cross=$(sql -c "
        WITH node AS (SELECT p.shardid, p.groupid FROM pg_dist_placement p)
        SELECT round(100.0 * count(*) FILTER (WHERE a.groupid <> i.groupid) / count(*))
          FROM generate_series(1000000001, 1000010000) g
          JOIN node a ON a.shardid = get_shard_id_for_distribution_column('accounts', 1 + g % 1000)
          JOIN node i ON i.shardid = get_shard_id_for_distribution_column('noncoloc_inbox', g::text)")
    local v
    for v in citus_ext:1 citus_hand:1 citus_ext:2 citus_hand:2 citus_noncoloc:2; do
        pgbench_tps "${v%:*}" 2 on prepared -T 1 -D workers="${v#*:}" \
            -D preload="$CITUS_PRELOAD" -D dup_pct=90 >/dev/null
    done

    line "  remote commands the coordinator sends per message (citus.log_remote_commands):"
    line "    ext       $(remote_commands citus_ext 2)"
    line "    hand      $(remote_commands citus_hand 2)"
    line "    noncoloc  $(remote_commands citus_noncoloc 2)" \
        "($cross% of fresh messages have their claim and their account on different workers)"

    # The configurations: label, clients, synchronous_commit, dup_pct.
    local cfg label clients sync dup rows1=() rows2=()
    for cfg in "fresh c=$CITUS_CLIENTS sync=on|$CITUS_CLIENTS on 0" \
               "fresh c=$CITUS_CLIENTS sync=off|$CITUS_CLIENTS off 0" "fresh c=1 sync=on|1 on 0"; do
        label=${cfg%%|*}
        read -r clients sync dup <<<"${cfg#*|}"
        citus_sync "$sync"
        citus_compare "$clients" "$sync" "-D dup_pct=$dup" \
            citus_ext:2 citus_hand:2 citus_noncoloc:2 citus_ext:1 citus_hand:1
        rows2+=("$(printf '%-24s %10.0f %10.0f %12.0f %10s %13s %7s' "$label" \
            "${CMED[citus_ext:2]}" "${CMED[citus_hand:2]}" "${CMED[citus_noncoloc:2]}" \
            "$(ratio "${CMED[citus_ext:2]}" "${CMED[citus_hand:2]}")" \
            "$(ratio "${CMED[citus_ext:2]}" "${CMED[citus_noncoloc:2]}")" "$CNOISE")")
        rows1+=("$(printf '%-24s %10.0f %10.0f %10.0f %10.0f %10s %10s %10s %10s %7s' "$label" \
            "${CMED[citus_ext:1]}" "$(ratio "${CMED[citus_ext:2]}" 2)" \
            "${CMED[citus_hand:1]}" "$(ratio "${CMED[citus_hand:2]}" 2)" \
            "$(ratio "${CMED[citus_ext:2]}" "${CMED[citus_ext:1]}")" \
            "$(ratio "${CMED[citus_hand:2]}" "${CMED[citus_hand:1]}")" \
            "$(ratio "${CMED[citus_ext:1]}" "${CMED[citus_hand:1]}")" \
            "$(ratio "${CMED[citus_ext:2]}" "${CMED[citus_hand:2]}")" "$CNOISE")")
    done
    # Redeliveries: two workers only.
    citus_sync on
    citus_compare "$CITUS_CLIENTS" on "-D dup_pct=90" citus_ext:2 citus_hand:2 citus_noncoloc:2
    rows2+=("$(printf '%-24s %10.0f %10.0f %12.0f %10s %13s %7s' "dup90 c=$CITUS_CLIENTS sync=on" \
        "${CMED[citus_ext:2]}" "${CMED[citus_hand:2]}" "${CMED[citus_noncoloc:2]}" \
        "$(ratio "${CMED[citus_ext:2]}" "${CMED[citus_hand:2]}")" \
        "$(ratio "${CMED[citus_ext:2]}" "${CMED[citus_noncoloc:2]}")" "$CNOISE")")

    say "" "two workers, messages/s (medians):"
    printf '%-24s %10s %10s %12s %10s %13s %7s\n' config "ext/s" "hand/s" "noncoloc/s" \
        ext/hand ext/noncoloc spread
    printf '%s\n' "${rows2[@]}"
    say "" "per worker, messages/s (medians; 2w per worker = the two-worker total / 2; 2w/1w =" \
        "the totals' ratio, 2.00 = linear scale-out); from the same interleaved runs:"
    printf '%-24s %10s %10s %10s %10s %10s %10s %10s %10s %7s\n' config "ext 1w" "ext 2w/wk" \
        "hand 1w" "hand 2w/wk" "ext 2w/1w" "hand 2w/1w" "e/h 1w" "e/h 2w" spread
    printf '%s\n' "${rows1[@]}"
    check_citus_effects
    citus_stored_section
    citus_dedup_section
    citus_writes_section
    citus_batch_section
    citus_failures_section
}

# One extension script against its hand-written twin, two workers: a warm-up, the
# remote commands of the extension's, then fresh and dup90 messages with 8 clients,
# on, interleaved; prints the table.  $1 the extension's script (citus_<x>_ext), $2
# the hand-written one, $3 and $4 their column headings.
citus_pair_compare() {
    local ext=$1 hand=$2 cfg label clients sync dup rows=() v
    for v in "$ext" "$hand"; do
        pgbench_tps "$v" 2 on prepared -T 1 -D workers=2 -D preload="$CITUS_PRELOAD" \
            -D dup_pct=90 >/dev/null
    done
    line "  remote commands: ${ext#citus_} $(remote_commands "$ext" 2)"
    for cfg in "fresh c=$CITUS_CLIENTS sync=on|$CITUS_CLIENTS on 0" \
               "dup90 c=$CITUS_CLIENTS sync=on|$CITUS_CLIENTS on 90"; do
        label=${cfg%%|*}
        read -r clients sync dup <<<"${cfg#*|}"
        citus_sync "$sync"
        citus_compare "$clients" "$sync" "-D dup_pct=$dup" "$ext:2" "$hand:2"
        rows+=("$(printf '%-24s %12.0f %12.0f %10s %7s' "$label" "${CMED[$ext:2]}" \
            "${CMED[$hand:2]}" "$(ratio "${CMED[$ext:2]}" "${CMED[$hand:2]}")" "$CNOISE")")
    done
    printf '%-24s %12s %12s %10s %7s\n' config "$3" "$4" ext/hand spread
    printf '%s\n' "${rows[@]}"
}

# try_claim_sharded and complete_sharded in a delegated function (stored_ext) next to
# the hand-written delegated function with a result column (stored_hand), two workers.
citus_stored_section() {
    local out b1 c1 n1
    say "" "stored columns, two workers, messages/s (medians): stored_ext = a delegated function" \
        "calling inbox.try_claim_sharded, the UPDATE and inbox.complete_sharded; stored_hand = the" \
        "hand-written one (INSERT ... ON CONFLICT DO NOTHING with the result, then the UPDATE)."
    citus_pair_compare citus_stored_ext citus_stored_hand "stored_ext/s" "stored_hand/s"
    out=$(sql -F ' ' -c "
        SELECT (SELECT sum(balance) FROM stored_accounts),
               (SELECT count(*) FROM keys_inbox) + (SELECT count(*) FROM hand_keys) - 2 * $CITUS_PRELOAD,
               (SELECT count(*) FROM keys_inbox WHERE result IS NULL)")
    read -r b1 c1 n1 <<<"$out"
    line "  effects applied / fresh claims (must be equal): $b1 / $c1; claims without a result: $n1"
    [[ $b1 == "$c1" && $n1 == 0 ]] || die "a payment was applied twice, without its claim or its result"
}

# Rows into a distributed table deduplicated by inbox.dedup_trigger on a co-located
# sharded inbox (dedup_ext) next to the hand-written PL/pgSQL trigger (dedup_hand).
citus_dedup_section() {
    local out r1 s1 d1 r2 s2
    say "" "dedup_trigger, two workers, rows/s (medians): INSERT of one row through the coordinator;" \
        "dedup_ext = a table with inbox.dedup_trigger on a co-located sharded inbox; dedup_hand = the" \
        "PL/pgSQL trigger (INSERT ... ON CONFLICT DO NOTHING into its own table of seen ids)."
    citus_pair_compare citus_dedup_ext citus_dedup_hand "dedup_ext/s" "dedup_hand/s"
    out=$(sql -F ' ' -c "
        SELECT (SELECT count(*) FROM sink_ext), (SELECT count(*) FROM sink_seen) - $CITUS_PRELOAD,
               (SELECT count(DISTINCT (account_id, id)) FROM sink_ext),
               (SELECT count(*) FROM sink_hand), (SELECT count(*) FROM hand_sink_seen) - $CITUS_PRELOAD")
    read -r r1 s1 d1 r2 s2 <<<"$out"
    line "  rows stored / fresh claims (must be equal): dedup_ext $r1 / $s1 ($d1 distinct)," \
        "dedup_hand $r2 / $s2"
    [[ $r1 == "$s1" && $d1 == "$r1" && $r2 == "$s2" ]] || die "a row was stored twice or without its claim"
}

# inbox.upsert and inbox.transition_key in delegated functions (upsert_ext, move_ext)
# next to the hand-written statements in delegated functions (upsert_hand, move_hand).
citus_writes_section() {
    local v answers
    say "" "upsert and transition on a distributed table, two workers, calls/s (medians), each in a" \
        "function delegated to the row's worker: upsert_ext = inbox.upsert, upsert_hand = INSERT ..." \
        "ON CONFLICT DO UPDATE ... WHERE IS DISTINCT FROM; move_ext = inbox.transition_key," \
        "move_hand = the guarded UPDATE (PENDING -> PAID, a replay once moved)."
    for v in citus_upsert_ext citus_upsert_hand citus_move_ext citus_move_hand; do
        pgbench_tps "$v" 2 on prepared -T 1 -D workers=2 -D preload="$CITUS_PRELOAD" \
            -D dup_pct=0 >/dev/null
    done
    answers=$(sql -c "SELECT concat_ws(',', cw_upsert_ext(0, 7), cw_upsert_ext(0, 7),
                                            cw_upsert_hand(0, 7), cw_upsert_hand(0, 7))")
    line "  answers of a new row and its replay: $answers (ext: inserted,unchanged; hand: written,unchanged)"
    [[ $answers == inserted,unchanged,written,unchanged ]] || die "upsert on a distributed table answered $answers"
    citus_sync on
    citus_compare "$CITUS_CLIENTS" on "" citus_upsert_ext:2 citus_upsert_hand:2 \
        citus_move_ext:2 citus_move_hand:2
    printf '%-24s %11s %11s %10s %11s %11s %10s %7s\n' config "upsert_ext" "upsert_hand" ext/hand \
        "move_ext" "move_hand" ext/hand spread
    printf '%-24s %11.0f %11.0f %10s %11.0f %11.0f %10s %7s\n' "c=$CITUS_CLIENTS sync=on" \
        "${CMED[citus_upsert_ext:2]}" "${CMED[citus_upsert_hand:2]}" \
        "$(ratio "${CMED[citus_upsert_ext:2]}" "${CMED[citus_upsert_hand:2]}")" \
        "${CMED[citus_move_ext:2]}" "${CMED[citus_move_hand:2]}" \
        "$(ratio "${CMED[citus_move_ext:2]}" "${CMED[citus_move_hand:2]}")" "$CNOISE"
}

# A poll of 10 messages of one account per call: claim_apply_many_sharded in a delegated
# function (poll_ext) next to the hand-written delegated function (poll_hand).
citus_batch_section() {
    local out b1 c1 b2 c2
    say "" "batches, two workers, polls/s of 10 messages of one account (medians): poll_ext = a" \
        "delegated function calling inbox.claim_apply_many_sharded, whose statement adds the fresh" \
        "ids to the balance; poll_hand = the hand-written one (INSERT ... SELECT unnest ... ON" \
        "CONFLICT DO NOTHING RETURNING, then the UPDATE by the rows returned).  dup90 = 90% of" \
        "polls redelivered."
    citus_pair_compare citus_poll_ext citus_poll_hand "poll_ext/s" "poll_hand/s"
    out=$(sql -F ' ' -c "
        SELECT (SELECT sum(balance) FROM batch_accounts), (SELECT count(*) FROM batch_inbox) - $CITUS_PRELOAD,
               (SELECT sum(balance) FROM hand_batch_accounts), (SELECT count(*) FROM hand_batch) - $CITUS_PRELOAD")
    read -r b1 c1 b2 c2 <<<"$out"
    line "  effects applied / fresh claims (must be equal): poll_ext $b1 / $c1, poll_hand $b2 / $c2"
    [[ $b1 == "$c1" && $b2 == "$c2" ]] || die "a message of a poll was applied twice or without its claim"
}

# A failed delivery recorded by inbox.record_failure_sharded in a delegated function
# (fail_ext) next to the hand-written delegated function (fail_hand), two workers.
citus_failures_section() {
    local v out q1 bad1 q2 bad2
    say "" "failures, two workers, failed deliveries recorded/s (medians), each in a function" \
        "delegated to the account's worker: fail_ext = inbox.record_failure_sharded on an inbox" \
        "with failures tables; fail_hand = a look at the claim, INSERT ... ON CONFLICT DO UPDATE" \
        "of the attempts, and at the fifth the claim that holds the message.  20000 messages," \
        "each failing until quarantined, then answering quarantined."
    for v in citus_fail_ext citus_fail_hand; do
        pgbench_tps "$v" 2 on prepared -T 1 -D workers=2 -D preload="$CITUS_PRELOAD" \
            -D dup_pct=0 >/dev/null
    done
    line "  remote commands: fail_ext $(remote_commands citus_fail_ext 2)"
    citus_sync on
    citus_compare "$CITUS_CLIENTS" on "" citus_fail_ext:2 citus_fail_hand:2
    printf '%-24s %12s %12s %10s %7s\n' config "fail_ext/s" "fail_hand/s" ext/hand spread
    printf '%-24s %12.0f %12.0f %10s %7s\n' "c=$CITUS_CLIENTS sync=on" \
        "${CMED[citus_fail_ext:2]}" "${CMED[citus_fail_hand:2]}" \
        "$(ratio "${CMED[citus_fail_ext:2]}" "${CMED[citus_fail_hand:2]}")" "$CNOISE"
    # Each side: messages quarantined, and those whose count and quarantine disagree.
    out=$(sql -F ' ' -c "
        SELECT (SELECT count(*) FROM fail_inbox_failures WHERE quarantined_at IS NOT NULL),
               (SELECT count(*) FROM fail_inbox_failures
                 WHERE attempts > 5 OR (attempts = 5) <> (quarantined_at IS NOT NULL))
               + (SELECT count(*) FROM fail_inbox WHERE claimed_at <> 'infinity')
               + abs((SELECT count(*) FROM fail_inbox)
                     - (SELECT count(*) FROM fail_inbox_failures WHERE quarantined_at IS NOT NULL)),
               (SELECT count(*) FROM hand_failures WHERE quarantined_at IS NOT NULL),
               (SELECT count(*) FROM hand_failures
                 WHERE attempts > 5 OR (attempts = 5) <> (quarantined_at IS NOT NULL))")
    read -r q1 bad1 q2 bad2 <<<"$out"
    line "  quarantined: fail_ext $q1, fail_hand $q2; rows whose count, quarantine and claim disagree" \
        "(must be 0): $bad1, $bad2"
    [[ $bad1 == 0 && $bad2 == 0 ]] || die "a failure was counted twice or a quarantine lost"
}
