#!/bin/sh
# chroot.sh RELEASE [CACHE_DIR] - a build chroot of Debian RELEASE (trixie,
# sid: another suite of the machine's own archive) holding this tree's
# build dependencies as that release has them, its libslurm-dev above all:
# tests/pkg/build-debs.sh builds the packages there when
# CGPOOL_DEB_RELEASE names a release other than the machine's, so the
# Slurm plug-ins are built against the Slurm that release's guest runs.
# It also holds that release's Slurm daemons and clients (slurmctld,
# slurmd, slurm-client, munge) and what the Slurm tests run (python3, ss,
# procps): tests/slurm/releases.sh runs the host's Slurm tests in it, with
# the release's packages of cgpool installed in an overlay of it
# (tests/pkg/chroot-run.sh); and rpm, for tests/pkg/rpm.sh's
# CGPOOL_RPM_RELEASE.
# A policy-rc.d in it refuses to start any service it installs.
#
# debootstrap --variant=buildd from the machine's own mirror (read from its
# apt sources at run time; the suite changed to RELEASE), then `apt-get
# build-dep` of debian/control inside it. The chroot keeps that mirror in
# its sources.list (apt-get build-dep needs it); it is never booted.
#
# Cached in CACHE_DIR (default /var/cache/cgpool-vm/chroot) as
# RELEASE-KEY/root, KEY hashing the release, debian/control's
# Build-Depends and this script's version; a cached chroot is used as it
# is, without network access. Prints the chroot's path on stdout (progress
# on stderr). Exit: 0, 77 when it cannot be had here (reason on stderr), 99
# on bad usage.
set -u

VERSION=3
RUN_PKGS="slurmctld slurmd slurm-client munge python3 procps iproute2 rpm"
say() { echo "chroot: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 RELEASE [CACHE_DIR]" >&2; exit 99; }
REL=$1
case $REL in *[!a-z0-9-]* | "") echo "$0: bad release name '$REL'" >&2; exit 99 ;; esac
CACHE=${2:-/var/cache/cgpool-vm/chroot}
HERE=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$HERE/../..}
[ -f "$top/debian/control" ] || { echo "$0: no debian/control in $top" >&2; exit 99; }
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot)"
mkdir -p "$CACHE" || skip "cannot create $CACHE"
CACHE=$(cd "$CACHE" && pwd)

. "$HERE/../vm/mirror.sh"
machine_mirror 2> "$CACHE/.mirror.err" || skip "$(cat "$CACHE/.mirror.err")"
BD=$(sed -n '/^Build-Depends:/,/^[A-Z]/{/^ /p}' "$top/debian/control")
KEY=$(printf '%s\n' "$VERSION" "$REL" "$BD" "$RUN_PKGS" | sha256sum | cut -c1-16)
OUT=$CACHE/$REL-$KEY

# One builder at a time per cache; the others wait and take its chroot.
if command -v flock > /dev/null; then
	exec 9> "$CACHE/.lock"
	flock 9
fi
if [ -f "$OUT/complete" ]; then
	echo "$OUT/root"
	exit 0
fi

T=$CACHE/.tmp-$REL-$KEY.$$
R=$T/root
cleanup() {
	mirror_unmount "$R"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 77' INT TERM HUP
rm -rf "$T" && mkdir -p "$R" || skip "cannot create $T"

say "building a $REL build chroot (cache key $KEY)"
t0=$(date +%s)
mirror_debootstrap "$T/debootstrap.log" buildd "$REL" "$R"
case $? in
0) ;;
2) skip "cannot install debootstrap (apt-get failed)" ;;
*) skip "debootstrap $REL failed" ;;
esac
echo "deb $MIRROR $REL main" > "$R/etc/apt/sources.list"
# the machine's apt settings for a mirror whose Release files are past
# their Valid-Until (a snapshot of the archive), as its own apt reads it
apt-config dump 2> /dev/null | grep -E '^Acquire::Check-(Valid-Until|Date) ' > "$R/etc/apt/apt.conf.d/99cgpool-mirror"
mkdir -p "$R/tmp/cgpool-bd/debian" && cp "$top/debian/control" "$R/tmp/cgpool-bd/debian/" || skip "cannot copy debian/control"
printf '#!/bin/sh\nexit 101\n' > "$R/usr/sbin/policy-rc.d" && chmod 0755 "$R/usr/sbin/policy-rc.d"
mount -t proc proc "$R/proc" && mount --bind /dev "$R/dev" || skip "cannot mount /proc and /dev in $R"
if ! chroot "$R" sh -c 'export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
	apt-get -q update && apt-get -y -q --no-install-recommends build-dep /tmp/cgpool-bd &&
	apt-get -y -q --no-install-recommends install '"$RUN_PKGS"' && apt-get clean' \
	> "$T/build-dep.log" 2>&1; then
	tail -n 30 "$T/build-dep.log" >&2
	skip "the build dependencies or $RUN_PKGS cannot be installed in the $REL chroot"
fi
umount "$R/dev" "$R/proc"
rm -rf "$R/tmp/cgpool-bd"
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' > "$T/packages"
echo "$(($(date +%s) - t0))" > "$T/build-time"
rm -rf "$OUT" && mv "$T" "$OUT" && touch "$OUT/complete" || skip "cannot store the chroot in $OUT"
say "$REL build chroot in $(cat "$OUT/build-time") s: $(sed -n 's/^libslurm-dev /libslurm-dev /p' "$OUT/packages")"
echo "$OUT/root"
