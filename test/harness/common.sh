# shellcheck shell=bash
#
# Shared by test/harness/test and test/harness/demo (sourced, not run).
#
# Both entry points must work on a fresh Debian 12 machine, as root or as a user with
# sudo, from any checkout path, even one the postgres user cannot read.  So they:
#   1. install the missing Debian packages,
#   2. copy the tree (without .git or build products) into a private temp dir under /tmp,
#      build and install the extension from that copy,
#   3. hand the copy to postgres and start a throwaway cluster in it, reachable only
#      through a socket inside the temp dir, which is removed on any exit.
# The Debian 'main' cluster on 5432 is never touched or relied on.

set -euo pipefail

# INBOX_PG_MAJOR picks the Debian server packages (15 on Debian 12; the version harness
# sets it inside the chroot of a newer Debian, see versions.sh).  INBOX_PG_BIN points at
# another server build (a relocated copy of the packaged one, say), so that two
# checkouts can install and test side by side.
PG_MAJOR=${INBOX_PG_MAJOR:-15}
PG_BIN=${INBOX_PG_BIN:-/usr/lib/postgresql/$PG_MAJOR/bin}
PG_CONFIG=$PG_BIN/pg_config
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# redis-server and the python3-* packages are for the Redis chaos demo
# (examples/redis_chaos), rabbitmq-server and python3-pika for the outbox pipeline
# (examples/outbox_rabbitmq): make demo runs both and make test runs them briefly.
# Each server runs privately on ports of its own, never as the system's service.
PACKAGES=(make gcc "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR"
          libipc-run-perl libtap-parser-sourcehandler-pgtap-perl
          redis-server python3-redis python3-psycopg rabbitmq-server python3-pika)
# "command:package" pairs: the package is installed only when the command is missing
# from the tests' PATH: such tools often come from elsewhere, like NodeSource's nodejs,
# which bundles npm and conflicts with Debian's.
COMMAND_PACKAGES=()
# Packages that some tests can do without, installed where the release has them; a
# test whose package the release lacks is skipped, saying so (the drivers suite).
OPTIONAL_PACKAGES=()
# pgTAP, unless the version harness provided it otherwise (a release without pgTAP
# for the major: versions.sh).
PGTAP_PACKAGE=${INBOX_PGTAP_PACKAGE-postgresql-$PG_MAJOR-pgtap}
[[ -z $PGTAP_PACKAGE ]] || PACKAGES+=("$PGTAP_PACKAGE")

TMP_ROOT=""         # the private temp dir: socket, server log, data/, src/
SRC=""              # the copy of the tree inside it, owned by postgres once built
PORT=""             # the throwaway cluster's port
CLUSTER_UP=0

say() { printf '%s\n' "$@"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Run a step quietly, showing the tail of its output only when it fails.
quietly() {
    local what=$1 out
    shift
    if ! out=$("$@" 2>&1); then
        printf '%s\n' "$out" | tail -n 40 >&2
        say "harness: $what failed"
        return 1
    fi
}

# Privileged steps: root runs them directly, anyone else through sudo.
as_root() {
    if ((EUID == 0)); then
        "$@"
    else
        command -v sudo >/dev/null || die "run as root, or install sudo: '$*' needs root"
        sudo "$@"
    fi
}

# Run a command as postgres, in directory $1, with a clean environment: the caller's
# PG* variables, locale and MAKEFLAGS must not leak into the tests, and sudo would
# strip most of them anyway, so both paths get exactly the same variables.
as_postgres_in() {
    local dir=$1
    shift
    local -a env=(env -i -C "$dir"
        HOME="${TMP_ROOT:-/tmp}" PATH="$PG_BIN:/usr/local/bin:/usr/bin:/bin"
        LANG=C.UTF-8 PGUSER=postgres PGDATABASE=postgres)
    if [[ -n $PORT ]]; then
        env+=(PGHOST="$TMP_ROOT" PGPORT="$PORT")
    fi
    # The older server the pg_upgrade test upgrades from (versions.sh), if any.
    if [[ -n ${INBOX_UPGRADE_OLD_INSTALL:-} ]]; then
        env+=(INBOX_UPGRADE_OLD_INSTALL="$INBOX_UPGRADE_OLD_INSTALL")
    fi
    if ((EUID == 0)); then
        runuser -u postgres -- "${env[@]}" "$@"
    else
        command -v sudo >/dev/null || die "run as root, or install sudo: the tests run as postgres"
        sudo -u postgres -- "${env[@]}" "$@"
    fi
}

as_postgres() { as_postgres_in / "$@"; }

# The PATH that as_postgres_in gives the tests, without $PG_BIN.
on_test_path() {
    local dir
    for dir in /usr/local/bin /usr/bin /bin; do
        [[ -x $dir/$1 ]] && return 0
    done
    return 1
}

package_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# apt-get update only when something is missing: it is slow and needs the network.
ensure_packages() {
    command -v dpkg-query >/dev/null || die "this harness needs Debian (dpkg-query not found)"
    local missing=() optional=() pkg out pair
    for pkg in "${PACKAGES[@]}"; do
        package_installed "$pkg" || missing+=("$pkg")
    done
    for pair in "${COMMAND_PACKAGES[@]}"; do
        on_test_path "${pair%%:*}" || missing+=("${pair#*:}")
    done
    for pkg in "${OPTIONAL_PACKAGES[@]}"; do
        package_installed "$pkg" || optional+=("$pkg")
    done
    ((${#missing[@]} + ${#optional[@]} == 0)) && return 0
    if ! out=$(as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q 2>&1); then
        printf '%s\n' "$out" >&2
        die "apt-get update failed"
    fi
    for pkg in "${optional[@]}"; do
        if package_available "$pkg"; then
            missing+=("$pkg")
        else
            say "harness: $pkg is not in this release: the tests that need it are skipped"
        fi
    done
    ((${#missing[@]} == 0)) && return 0
    say "harness: installing ${missing[*]}"
    if ! out=$(as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                   --no-install-recommends "${missing[@]}" 2>&1); then
        printf '%s\n' "$out" >&2
        die "apt-get could not install ${missing[*]}"
    fi
}

# Whether apt has a version of package $1 to install (after apt-get update).  Not
# a pipe into grep -q: under pipefail, apt-cache killed by SIGPIPE would say no.
package_available() {
    local policy
    policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
    [[ $policy =~ Candidate:\ [^\(] ]]
}

# ensure_packages for the packages named, and those only.  (`PACKAGES=(a b)
# ensure_packages` would not do: bash makes a list assigned before a command one
# string, "(a b)".)
ensure_these_packages() {
    local -a saved=("${PACKAGES[@]}") saved_commands=("${COMMAND_PACKAGES[@]}")
    local -a saved_optional=("${OPTIONAL_PACKAGES[@]}")
    PACKAGES=("$@")
    COMMAND_PACKAGES=()
    OPTIONAL_PACKAGES=()
    ensure_packages
    PACKAGES=("${saved[@]}")
    COMMAND_PACKAGES=("${saved_commands[@]}")
    OPTIONAL_PACKAGES=("${saved_optional[@]}")
}

# /tmp rather than $TMPDIR: postgres must be able to reach the copy, and a per-user
# TMPDIR (/run/user/1000) is closed to it.  A short path also keeps the socket path
# under the 107-byte limit.
make_copy() {
    TMP_ROOT=$(mktemp -d /tmp/idempotent_inbox.XXXXXX)
    SRC=$TMP_ROOT/src
    mkdir "$SRC"
    # Stale build products or old diffs from the checkout would be mistaken for ours;
    # node_modules is rebuilt from the lockfile by the drivers suite; build/ holds make
    # deb's packages and their build tree.
    tar -C "$REPO_ROOT" -cf - \
        --exclude=.git --exclude=./build --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
        --exclude=./results --exclude=./tmp_check --exclude=./output_iso --exclude=node_modules \
        --exclude='./regression.*' . | tar -C "$SRC" -xf -
}

build_and_install() {
    local out
    # BUILD_CFLAGS lets `make test` build with strict warnings (see test), while the
    # Makefile itself stays free of -Werror.
    if ! out=$(make -s --no-print-directory -C "$SRC" PG_CONFIG="$PG_CONFIG" \
            PG_CFLAGS="${BUILD_CFLAGS:-}" 2>&1); then
        printf '%s\n' "$out" >&2
        die "the extension does not build"
    fi
    # Warnings are worth seeing even when the build succeeds.
    [[ -z $out ]] || printf '%s\n' "$out"
    if ! out=$(as_root make -s --no-print-directory -C "$SRC" PG_CONFIG="$PG_CONFIG" install 2>&1); then
        printf '%s\n' "$out" >&2
        die "make install failed"
    fi
    as_root chown -R postgres:postgres "$TMP_ROOT"
}

# A port is taken when some server listens on it over TCP or has its socket file
# anywhere (a cluster left over from a killed run keeps its socket in its own temp
# dir).  Read /proc rather than ss: minimal images lack iproute2.
port_in_use() {
    local port=$1 hex
    printf -v hex '%04X' "$port"
    grep -q "\.s\.PGSQL\.$port\$" /proc/net/unix && return 0
    awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
                      END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

pick_port() {
    local port=${INBOX_TEST_PORT:-55432} last
    last=$((port + 100))
    while port_in_use "$port"; do
        port=$((port + 1))
        ((port < last)) || die "no free port in ${INBOX_TEST_PORT:-55432}..$last"
    done
    printf '%s\n' "$port"
}

start_cluster() {
    local out
    PORT=$(pick_port)
    if ! out=$(as_postgres initdb -D "$TMP_ROOT/data" -A trust -U postgres \
                   -E UTF8 --locale=C --no-sync 2>&1); then
        printf '%s\n' "$out" >&2
        die "initdb failed"
    fi
    # Only the socket in our temp dir: no TCP, so nothing can collide with other
    # servers on this machine.  fsync=off: the data is thrown away anyway.
    as_postgres tee -a "$TMP_ROOT/data/postgresql.conf" >/dev/null <<EOF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$TMP_ROOT'
fsync = off
# Claims held by a prepared transaction are a case worth testing.
max_prepared_transactions = 10
EOF
    CLUSTER_UP=1
    if ! as_postgres pg_ctl -D "$TMP_ROOT/data" -l "$TMP_ROOT/server.log" -w -t 60 -s start; then
        as_postgres cat "$TMP_ROOT/server.log" >&2 || true
        die "the throwaway cluster did not start"
    fi
}

# Stops our cluster and any other server whose data directory lies in our temp dir:
# TAP tests killed by Ctrl-C never run the code that stops their clusters.
# immediate: the data is about to be deleted, so a checkpoint would be wasted time.
stop_clusters() {
    ((CLUSTER_UP)) || return 0
    # shellcheck disable=SC2016  # expanded by the inner shell
    as_postgres bash -c '
        find "$1" -name postmaster.pid -print0 2>/dev/null |
        while IFS= read -r -d "" pidfile; do
            pg_ctl -D "${pidfile%/postmaster.pid}" -m immediate -w -t 60 -s stop
        done' stop "$TMP_ROOT" >/dev/null 2>&1 || true
    CLUSTER_UP=0
}

cleanup() {
    stop_clusters
    if [[ -n $TMP_ROOT && -d $TMP_ROOT ]]; then
        as_root rm -rf -- "$TMP_ROOT" || printf 'warning: could not remove %s\n' "$TMP_ROOT" >&2
    fi
    TMP_ROOT=""
}

# $1 is the EXIT handler: it runs on success, on error and on Ctrl-C alike, because
# signals become ordinary exits.
install_traps() {
    # shellcheck disable=SC2064  # the handler's name is fixed now, on purpose
    trap "$1" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
}

# Steps 1-3 shared by both entry points.
setup_cluster() {
    ensure_packages
    make_copy
    build_and_install
    start_cluster
}
