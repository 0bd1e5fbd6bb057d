# shellcheck shell=bash
#
# Newer PostgreSQL majors for the test harness (sourced by test/harness/test, after
# common.sh).  Debian 12 packages only PostgreSQL 15; newer releases of Debian package
# the newer majors, so each runs in a debootstrap chroot of the release that has it:
#
#   17  trixie        18  sid        19  experimental (sid plus experimental's sources)
#
# A chroot is made once and cached under $CHROOT_CACHE (a second run reuses it): the
# base system, then the server and the build tools.  Each run then builds the
# extension from the current tree inside the chroot and runs test/harness/suites
# there, exactly as on the host.  The chroots are a test harness only: a user's build
# against their own pg_config needs none of it.
#
# Inside every chroot, /opt/inbox-pg15 holds a copy of the host's PostgreSQL 15 with
# this tree's extension built into it, so that the pg_upgrade test upgrades a real 15
# cluster to the chroot's major.

CHROOT_CACHE=${INBOX_CHROOT_CACHE:-/var/cache/idempotent_inbox/chroots}
DEBIAN_MIRROR=${INBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
HOST_MAJOR=15
NEWEST_MAJOR=19
TESTED_MAJORS=(15 17 18 19)
# What make test runs: the host's, the newest, and 17, the newest whose packaged
# release can pg_upgrade a cluster of the host's (Debian's 18.6 and 19rc1 predate
# 15.20 and refuse the column options it writes: test/t/040_pg_upgrade.pl).
DEFAULT_MAJORS=(15 17 19)
# Where the copy of PostgreSQL 15 lives inside each chroot, and the install path the
# pg_upgrade test is given (PostgreSQL::Test::Cluster's install_path: bin/ and lib/).
OLD_INSTALL_ROOT=/opt/inbox-pg15
OLD_INSTALL_PATH=$OLD_INSTALL_ROOT/usr/lib/postgresql/$HOST_MAJOR
# Where the repository is bound, read-only, inside a chroot.
CHROOT_REPO=/mnt/idempotent_inbox

release_of() {
    case $1 in
        17) echo trixie ;;
        18) echo sid ;;
        19) echo experimental ;;
        *) return 1 ;;
    esac
}

# experimental is not a whole release: it is sid plus a few newer packages.
base_release_of() {
    case $1 in
        experimental) echo sid ;;
        *) echo "$1" ;;
    esac
}

# Run a command inside chroot $1 as root, with /proc, /dev and /sys mounted and the
# repository bound read-only at $CHROOT_REPO.  The mounts live in a private mount
# namespace, so they vanish with the command, whatever way it ends.
in_chroot() {
    local root=$1
    shift
    # shellcheck disable=SC2016  # expanded by the inner shell
    as_root unshare --mount --propagation private -- bash -c '
        set -e
        root=$1 repo=$2 target=$3
        shift 3
        mount -t proc proc "$root/proc"
        mount -t sysfs sysfs "$root/sys"
        mount --rbind /dev "$root/dev"
        mkdir -p "$root$target"
        mount --bind "$repo" "$root$target"
        mount -o remount,bind,ro "$root$target"
        exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
    ' in_chroot "$root" "$REPO_ROOT" "$CHROOT_REPO" "$@"
}

# The base system of release $1, made in a scratch directory and renamed into place
# only when complete, so that an interrupted run never leaves a half-made chroot.
make_base_chroot() {
    local release=$1 root=$CHROOT_CACHE/$1 scratch
    [[ -f $root/.inbox-base ]] && return 0
    ensure_these_packages debootstrap
    scratch=$root.partial
    # --one-file-system: never reach into something mounted in a half-made chroot.
    as_root rm -rf --one-file-system -- "$scratch"
    as_root mkdir -p "$CHROOT_CACHE"
    say "harness: debootstrap $(base_release_of "$release") into $root (about a minute)"
    # debootstrap mounts /proc in its target; in a private mount namespace that mount
    # goes when debootstrap does, even when it is killed.
    quietly "debootstrap of $release" \
        as_root unshare --mount --propagation private -- \
        debootstrap --variant=minbase "$(base_release_of "$release")" "$scratch" \
        "$DEBIAN_MIRROR" || return 1
    # shellcheck disable=SC2016  # expanded by the inner shell
    as_root bash -c '
        set -e
        root=$1 release=$2 mirror=$3
        # The mirror serves frozen snapshots whose Release files are past their
        # valid-until dates; the packages are still signed.
        echo "Acquire::Check-Valid-Until \"false\";" >"$root/etc/apt/apt.conf.d/99inbox-valid-until"
        if [[ $release == experimental ]]; then
            echo "deb $mirror experimental main" >"$root/etc/apt/sources.list.d/experimental.list"
        fi
        # No service starts inside the chroot, and installing the server creates no
        # default cluster: the tests start their own.
        printf "#!/bin/sh\nexit 101\n" >"$root/usr/sbin/policy-rc.d"
        chmod 755 "$root/usr/sbin/policy-rc.d"
        mkdir -p "$root/etc/postgresql-common"
        echo "create_main_cluster = false" >"$root/etc/postgresql-common/createcluster.conf"
        cp /etc/resolv.conf "$root/etc/resolv.conf"
        touch "$root/.inbox-base"
    ' base "$scratch" "$release" "$DEBIAN_MIRROR"
    as_root mv -- "$scratch" "$root"
}

# The server, its headers and pgTAP for major $1 inside its chroot.  experimental
# packages no pgTAP for 19: the newest pgTAP of the release is installed, and its
# files (SQL only, no library) are linked into 19's extension directory.
install_server_in_chroot() {
    local major=$1 release root
    release=$(release_of "$major")
    root=$CHROOT_CACHE/$release
    [[ -f $root/.inbox-pg$major ]] && return 0
    say "harness: installing PostgreSQL $major into the $release chroot"
    # shellcheck disable=SC2016  # expanded by the inner shell
    quietly "installing PostgreSQL $major in $release" in_chroot "$root" bash -c '
        set -e
        major=$1 release=$2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        packages=("postgresql-$major" "postgresql-client-$major" "postgresql-server-dev-$major")
        # From experimental, only the server, its client and libpq; everything else
        # stays sid'"'"'s ("-t experimental" would drag in half of experimental).
        if [[ $release == experimental ]]; then
            packages+=(libpq5 libpq-dev)
            packages=("${packages[@]/%//experimental}")
        fi
        apt-get install -y -q --no-install-recommends "${packages[@]}" make gcc ca-certificates
        if apt-cache show "postgresql-$major-pgtap" >/dev/null 2>&1; then
            apt-get install -y -q --no-install-recommends "postgresql-$major-pgtap"
        else
            pgtap=$(apt-cache pkgnames | grep -E "^postgresql-[0-9]+-pgtap$" | sort -V | tail -n 1)
            apt-get install -y -q --no-install-recommends "$pgtap"
            pgtap_dir=/usr/share/postgresql/$(echo "$pgtap" | cut -d- -f2)/extension
            for f in "$pgtap_dir"/pgtap*; do
                ln -sf "$f" "/usr/share/postgresql/$major/extension/"
            done
        fi
        touch /.inbox-pg$major
    ' install "$major" "$release"
}

# /opt/inbox-pg15 inside chroot $1: a copy of the host's PostgreSQL 15 (made once),
# with this tree's extension built by the host's compiler into it (every run), and
# the host libraries it needs that the chroot's newer release no longer ships (ICU's
# sonames move with every release) in a directory of their own on the loader's path.
prepare_old_install() {
    local root=$1 dest out
    dest=$root$OLD_INSTALL_ROOT
    if [[ ! -f $dest/.inbox-copied ]]; then
        as_root rm -rf --one-file-system -- "$dest"
        as_root mkdir -p "$dest/usr/lib/postgresql" "$dest/usr/share/postgresql"
        as_root cp -a "/usr/lib/postgresql/$HOST_MAJOR" "$dest/usr/lib/postgresql/"
        as_root cp -a "/usr/share/postgresql/$HOST_MAJOR" "$dest/usr/share/postgresql/"
        as_root mkdir -p "$dest/usr/include"
        as_root cp -a /usr/include/postgresql "$dest/usr/include/"
        copy_missing_libraries "$root" || return 1
        as_root touch "$dest/.inbox-copied"
    fi
    # pg_config in the copy relocates itself: the extension installs into the copy.
    if ! out=$(make -s --no-print-directory -C "$SRC" \
                   PG_CONFIG="$dest/usr/lib/postgresql/$HOST_MAJOR/bin/pg_config" clean all 2>&1 &&
               as_root make -s --no-print-directory -C "$SRC" \
                   PG_CONFIG="$dest/usr/lib/postgresql/$HOST_MAJOR/bin/pg_config" install 2>&1 &&
               make -s --no-print-directory -C "$SRC" \
                   PG_CONFIG="$dest/usr/lib/postgresql/$HOST_MAJOR/bin/pg_config" clean 2>&1); then
        printf '%s\n' "$out" >&2
        say "harness: building the extension for the PostgreSQL $HOST_MAJOR copy failed"
        return 1
    fi
}

# Copies each library the 15 binaries and modules want and the chroot lacks, until
# none is missing (a copied library may want others).
copy_missing_libraries() {
    local root=$1 libdir=/usr/local/lib/inbox-pg15 pass missing name path
    as_root mkdir -p "$root$libdir"
    echo "$libdir" | as_root tee "$root/etc/ld.so.conf.d/inbox-pg15.conf" >/dev/null
    for pass in 1 2 3 4 5; do
        as_root chroot "$root" /sbin/ldconfig
        # shellcheck disable=SC2016  # expanded by the inner shell
        missing=$(as_root chroot "$root" /bin/sh -c '
            for f in "$1"/bin/* "$1"/lib/*.so '"$libdir"'/*; do
                [ -f "$f" ] && ldd "$f" 2>/dev/null
            done | sed -n "s/^[[:space:]]*\([^ ]*\) => not found.*/\1/p" | sort -u
        ' ldd "$OLD_INSTALL_PATH")
        [[ -z $missing ]] && return 0
        for name in $missing; do
            path=$(ldconfig -p | awk -v n="$name" '$1 == n && /x86-64/ { print $NF; exit }')
            [[ -n $path ]] || { say "harness: $name is missing on the host too"; return 1; }
            as_root cp -L "$path" "$root$libdir/$name"
        done
    done
    say "harness: libraries for PostgreSQL $HOST_MAJOR still missing in $root: $missing"
    return 1
}

# The chroot trusts the certificate authorities the host added to its own (a proxy
# that inspects TLS, say), so that npm inside reaches its registry as npm outside
# does; and npm there is told the bundle, as the host's npm may be.
share_host_trust() {
    local root=$1 f
    compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null || return 0
    if [[ ! -x $root/usr/sbin/update-ca-certificates ]]; then
        quietly "installing ca-certificates in $root" in_chroot "$root" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends ca-certificates || return 1
    fi
    as_root mkdir -p "$root/usr/local/share/ca-certificates"
    for f in /usr/local/share/ca-certificates/*.crt; do
        as_root cp "$f" "$root/usr/local/share/ca-certificates/"
    done
    quietly "update-ca-certificates in $root" \
        as_root chroot "$root" update-ca-certificates || return 1
    if [[ -f /etc/npmrc ]] && grep -q '^cafile=' /etc/npmrc; then
        echo "cafile=/etc/ssl/certs/ca-certificates.crt" | as_root tee "$root/etc/npmrc" >/dev/null
    fi
}

# Everything chroot-side for major $1: base system, server, the PostgreSQL 15 copy.
prepare_chroot() {
    local major=$1 release
    release=$(release_of "$major") || { say "harness: no chroot knows PostgreSQL $major"; return 1; }
    make_base_chroot "$release" &&
        install_server_in_chroot "$major" &&
        share_host_trust "$CHROOT_CACHE/$release" &&
        prepare_old_install "$CHROOT_CACHE/$release"
}

# Run every suite against major $1 inside its chroot.
run_suites_in_chroot() {
    local major=$1 root pgtap_package=
    root=$CHROOT_CACHE/$(release_of "$major")
    # Linked by install_server_in_chroot when the release packages no pgTAP of its own.
    [[ -L $root/usr/share/postgresql/$major/extension/pgtap.control ]] ||
        pgtap_package="postgresql-$major-pgtap"
    in_chroot "$root" env INBOX_PG_MAJOR="$major" INBOX_PGTAP_PACKAGE="$pgtap_package" \
        INBOX_CITUS_SKIP="the Citus suite runs on the host's PostgreSQL $HOST_MAJOR only" \
        INBOX_UPGRADE_OLD_INSTALL="$OLD_INSTALL_PATH" ${INBOX_TEST_PORT:+INBOX_TEST_PORT=$INBOX_TEST_PORT} \
        ${INBOX_SUITES:+"INBOX_SUITES=$INBOX_SUITES"} \
        bash "$CHROOT_REPO/test/harness/suites"
}
