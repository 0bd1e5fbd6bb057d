# shellcheck shell=bash
#
# Citus for the scale-out suite (sourced after common.sh, not run).
#
# Citus is a test dependency only: none of its code is in this repository.  These
# machines cannot download it, so when the server under test has no Citus and its
# source is at hand (shared/deps/citus/ beside the checkout, or INBOX_CITUS_SOURCE),
# it is built once into $CITUS_CACHE/<server version>/ and installed from there: the
# built tree is kept, so installing it again after the server's packages were
# reinstalled is a plain `make install` of seconds rather than a build of minutes.
#
#   citus_ensure PG_CONFIG    Citus installed for that server (built if need be), or
#                             returns 1 with the reason in CITUS_SKIP_REASON.
#
# A caller that gets 1 reports the Citus suite as skipped with that reason: the suite
# never passes without having run.

CITUS_CACHE=${INBOX_CITUS_CACHE:-/var/cache/idempotent_inbox/citus}
# Citus 13.2 supports PostgreSQL 15, 16 and 17.
CITUS_MAJORS=(15 16 17)
# Building Citus needs these besides the server's headers (its README).
CITUS_BUILD_PACKAGES=(liblz4-dev libzstd-dev libkrb5-dev)
CITUS_SKIP_REASON=""
# Set when Citus's source was at hand but building or installing it failed: that is a
# failure of the suite, not a reason to skip it.
CITUS_FAILED=0

# The source tarball: INBOX_CITUS_SOURCE, or the newest citus-*.tar.gz in a
# shared/deps/citus/ found in the checkout's parent directories (shared/ lies beside the
# repository, and beside the directory holding worktrees).
citus_source() {
    local dir=$REPO_ROOT found=""
    if [[ -n ${INBOX_CITUS_SOURCE:-} ]]; then
        printf '%s\n' "$INBOX_CITUS_SOURCE"
        return 0
    fi
    while [[ $dir != / ]]; do
        dir=$(dirname "$dir")
        if compgen -G "$dir/shared/deps/citus/citus-*.tar.gz" >/dev/null; then
            found=$(compgen -G "$dir/shared/deps/citus/citus-*.tar.gz" | sort -V | tail -n 1)
            break
        fi
    done
    [[ -n $found ]] || return 1
    printf '%s\n' "$found"
}

# Citus is installed for pg_config $1 when both its library and its control file are.
citus_installed() {
    local pg_config=$1
    [[ -f $("$pg_config" --pkglibdir)/citus.so &&
       -f $("$pg_config" --sharedir)/extension/citus.control ]]
}

# "15.20" for "PostgreSQL 15.20 (Debian 15.20-0+deb12u1)".
citus_pg_version() { "$1" --version | awk '{ print $2 }'; }

# Build the source tarball $2 for pg_config $1 in the fresh directory $3.  The patches beside the tarball
# (*.patch) are applied when they apply: shared/deps/citus/ has one for PostgreSQL
# 15.20, which declares have_createdb_privilege() itself.
citus_build() {
    local pg_config=$1 tarball=$2 dest=$3 patch jobs
    jobs=${INBOX_CITUS_JOBS:-$(nproc 2>/dev/null || echo 1)}
    as_root mkdir -p "$dest"
    as_root tar -C "$dest" --strip-components=1 -xzf "$tarball" || return 1
    for patch in "$(dirname "$tarball")"/*.patch; do
        [[ -f $patch ]] || continue
        if as_root patch -d "$dest" -p1 --dry-run --forward -s <"$patch" >/dev/null 2>&1; then
            as_root patch -d "$dest" -p1 --forward -s <"$patch" || return 1
        fi
    done
    # libcurl is only for Citus's anonymous usage statistics.
    quietly "configuring Citus" \
        as_root env -C "$dest" ./configure --without-libcurl PG_CONFIG="$pg_config" &&
        quietly "building Citus" as_root make -C "$dest" -j"$jobs"
}

# Citus installed for pg_config $1: already there, or installed from the cached build,
# or built (once) then installed.  Returns 1 with CITUS_SKIP_REASON set when it cannot.
# shellcheck disable=SC2034  # CITUS_SKIP_REASON is read by the callers
citus_ensure() {
    local pg_config=$1 major version tarball name dir lock started
    CITUS_SKIP_REASON=""
    CITUS_FAILED=0
    citus_installed "$pg_config" && return 0
    major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    if [[ " ${CITUS_MAJORS[*]} " != *" $major "* ]]; then
        CITUS_SKIP_REASON="Citus is not installed for PostgreSQL $major, and the Citus release we build (13.2) supports only PostgreSQL ${CITUS_MAJORS[*]}"
        return 1
    fi
    if ! tarball=$(citus_source); then
        CITUS_SKIP_REASON="Citus is not installed ($("$pg_config" --pkglibdir)/citus.so is missing) and its source is not here: set INBOX_CITUS_SOURCE to a citus-*.tar.gz, or put one in shared/deps/citus/ beside the checkout"
        return 1
    fi
    if [[ ! -f $tarball ]]; then
        CITUS_SKIP_REASON="Citus is not installed ($("$pg_config" --pkglibdir)/citus.so is missing) and INBOX_CITUS_SOURCE=$tarball does not exist"
        return 1
    fi
    ensure_these_packages "${CITUS_BUILD_PACKAGES[@]}"
    version=$(citus_pg_version "$pg_config")
    name=$(basename "$tarball" .tar.gz)
    dir=$CITUS_CACHE/$version/$name
    as_root mkdir -p "$CITUS_CACHE/$version"
    # One build at a time per server version: two harness runs may start together.
    lock=$CITUS_CACHE/$version/.lock
    exec {CITUS_LOCK_FD}>>"$lock" 2>/dev/null || exec {CITUS_LOCK_FD}</dev/null
    flock "$CITUS_LOCK_FD" 2>/dev/null || true
    # Citus's configure writes the tree's absolute path into its makefiles, so the
    # tree is built where it stays; .inbox-built marks a finished build, and a tree
    # without it (an interrupted build) is built again from scratch.
    if [[ ! -f $dir/.inbox-built ]]; then
        say "harness: building $name for PostgreSQL $version in $dir (about 4 minutes on 2 cores, once)"
        started=$SECONDS
        as_root rm -rf -- "$dir"
        if ! citus_build "$pg_config" "$tarball" "$dir"; then
            exec {CITUS_LOCK_FD}>&-
            CITUS_SKIP_REASON="building $name from $tarball failed (see above)"
            CITUS_FAILED=1
            return 1
        fi
        as_root touch "$dir/.inbox-built"
        say "harness: built $name in $((SECONDS - started)) s"
    fi
    # The cached tree was configured for some server of this version; PG_CONFIG on the
    # command line installs it into this one (a relocated copy, say).
    if ! quietly "installing Citus" as_root make -C "$dir" PG_CONFIG="$pg_config" install; then
        exec {CITUS_LOCK_FD}>&-
        CITUS_SKIP_REASON="make install of the cached $name build in $dir failed (see above)"
        CITUS_FAILED=1
        return 1
    fi
    exec {CITUS_LOCK_FD}>&-
    citus_installed "$pg_config" || {
        CITUS_SKIP_REASON="$name was installed from $dir but citus.so or citus.control is still missing for $pg_config"
        CITUS_FAILED=1
        return 1
    }
}
