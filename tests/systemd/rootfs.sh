#!/bin/sh
# rootfs.sh [--release CODENAME] [CACHE_DIR] - the root filesystem image of
# the systemd test VMs.
#
# Builds, once, a Debian root filesystem (the machine's own release, Debian
# 12 "bookworm" here, so systemd 252; or CODENAME: trixie, sid, another
# suite of the machine's own archive) with systemd as init, as an ext4 image:
# debootstrap --variant=minbase from the machine's own apt sources (the
# mirror is read from them at run time and written nowhere), plus systemd and
# the libraries cgpoold and cgpoolctl load, and that release's Slurm. No
# docs, man pages nor locales.
#
# The image is cached in CACHE_DIR (default /var/cache/cgpool-vm/systemd-rootfs)
# under a key that hashes the package list, the release and this script's
# version; a cached image is used as it is, without network access.
# CACHE_DIR/<key>/ holds
#   rootfs.img    the ext4 image (sparse; boot it read-only or through an overlay)
#   packages      the installed packages with their versions
#   libs          the shared libraries in the image (file names), so a runner
#                 can tell whether a build's binaries will find theirs
#   build-time    seconds the build took
# Prints the image's path on stdout (progress goes to stderr).
# Exit: 0, 77 when the image cannot be built here (reason on stderr), 99 on
# bad usage.
set -u

VERSION=4
# systemd as PID 1, what cgpoold (libev, inih, jansson, libsystemd,
# libcgroup) and the tests (procps, util-linux) need at run time, and a
# one-node Slurm (slurm-wlm: slurmctld, slurmd, the clients; munge) for the
# Slurm payload, iproute2 for its address, and Slurm's accounting for its
# sacct checks (slurmdbd, storing into MariaDB); both services are disabled
# in the image (below)
PACKAGES="systemd systemd-sysv dbus libev4 libinih1 libjansson4 libsystemd0 libcgroup2 procps util-linux slurm-wlm munge iproute2 slurmdbd mariadb-server"
# the releases after Debian 12 name two of those libraries anew (the 64-bit
# time_t transition; libcgroup 3)
packages_of() {
	case $1 in
	bookworm | bullseye) echo "$PACKAGES" ;;
	*) echo "$PACKAGES" | sed 's/ libev4 / libev4t64 /; s/ libcgroup2 / libcgroup3 /' ;;
	esac
}
# free space left in the image for the tests' files (MiB)
SPARE_MB=${CGPOOL_ROOTFS_SPARE_MB:-384}

say() { echo "rootfs: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }

CODENAME=
if [ "${1:-}" = --release ]; then
	CODENAME=${2:-}
	[ -n "$CODENAME" ] || { echo "usage: $0 [--release CODENAME] [CACHE_DIR]" >&2; exit 99; }
	shift 2
fi
[ $# -le 1 ] || { echo "usage: $0 [--release CODENAME] [CACHE_DIR]" >&2; exit 99; }
CACHE=${1:-/var/cache/cgpool-vm/systemd-rootfs}
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, apt-get)"
mkdir -p "$CACHE" || skip "cannot create $CACHE"
CACHE=$(cd "$CACHE" && pwd)

. "$(dirname "$0")/../vm/mirror.sh"
machine_mirror 2> "$CACHE/.mirror.err" || skip "$(cat "$CACHE/.mirror.err")"
CODENAME=${CODENAME:-$HOST_CODENAME}
PACKAGES=$(packages_of "$CODENAME")
KEY=$(printf '%s\n' "$VERSION" "$CODENAME" $PACKAGES | sha256sum | cut -c1-16)
OUT=$CACHE/$KEY

# One builder at a time per cache; the others wait and take its image.
if command -v flock > /dev/null; then
	exec 9> "$CACHE/.lock"
	flock 9
fi
if [ -f "$OUT/complete" ]; then
	echo "$OUT/rootfs.img"
	exit 0
fi

command -v mkfs.ext4 > /dev/null || skip "no mkfs.ext4 (e2fsprogs)"

T=$CACHE/.tmp-$KEY.$$
R=$T/root
cleanup() {
	mirror_unmount "$R"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 77' INT TERM HUP
rm -rf "$T" && mkdir -p "$R" || skip "cannot create $T"

say "building a $CODENAME image with$(printf ' %s' $PACKAGES) (cache key $KEY)"
t0=$(date +%s)
mirror_debootstrap "$T/debootstrap.log" minbase "$CODENAME" "$R" --include="$(echo $PACKAGES | tr ' ' ,)"
case $? in
0) ;;
2) skip "cannot install debootstrap (apt-get failed)" ;;
*) skip "debootstrap failed" ;;
esac
t1=$(date +%s)

# ---- make it a quiet, fast test guest
chroot "$R" dpkg-query -W -f '${Package} ${Version}\n' > "$T/packages"
# a fixed identity: an empty machine-id makes every boot a first boot
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$R/etc/machine-id"
echo >> "$R/etc/machine-id"
echo cgpool-vm > "$R/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 cgpool-vm\n' > "$R/etc/hosts"
echo '# / is mounted by the initramfs' > "$R/etc/fstab"
passwd -R "$R" -d root > /dev/null 2>&1 || sed -i 's/^root:[^:]*:/root::/' "$R/etc/shadow"
S=$R/etc/systemd/system
ln -sf /lib/systemd/system/multi-user.target "$S/default.target"
# no logins on the consoles (the serial console carries the results), no
# periodic maintenance
for u in serial-getty@.service getty@.service console-getty.service \
	apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
	e2scrub_reap.service fstrim.timer systemd-timesyncd.service; do
	ln -sf /dev/null "$S/$u"
done
# MariaDB and slurmdbd start only where a payload starts them (slurm.sh):
# the other payloads boot without a database server taking memory and CPU
# time of the emulated guest. Their packages' postinst enable the services
# and MariaDB's socket (which would start the server at the first
# connection); they are disabled, not masked (slurm.sh starts them), here
# in the build, so every image of a cache key has the same units enabled
# whatever the maintainer scripts did, and no symlink to them is left.
# slurmctld and slurmd likewise: Debian 13's slurmd.service has no
# ConditionPathExists on slurm.conf, and a slurmd started without one
# looks for its controller until systemd's start timeout (90 s of every
# boot).
for u in mariadb.service mariadb.socket slurmdbd.service slurmctld.service slurmd.service; do
	[ -f "$R/lib/systemd/system/$u" ] || continue
	chroot "$R" systemctl disable --quiet "$u" > /dev/null 2>&1
	left=$(find "$R/etc/systemd/system" -type l -lname "*/$u" 2> /dev/null)
	[ -z "$left" ] || rm -f $left
done
mkdir -p "$R/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nForwardToConsole=no\n' > "$R/etc/systemd/journald.conf.d/cgpool-vm.conf"
# nothing that names the mirror stays in the image, nor what only apt needs
rm -f "$R/etc/apt/sources.list" "$R"/etc/apt/sources.list.d/*
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/* "$R"/var/log/* "$R/debootstrap"
# the log directories the packages' daemons need (removed with /var/log/*
# above, made by the packages' postinst only): munged does not start without
# its own
if [ -d "$R/etc/munge" ]; then
	mkdir -p "$R/var/log/munge" "$R/var/log/slurm" &&
		chroot "$R" chown munge:munge /var/log/munge && chmod 700 "$R/var/log/munge" ||
		skip "cannot make /var/log/munge in the image"
fi
rm -rf "$R"/usr/share/doc/* "$R"/usr/share/man/* "$R"/usr/share/info/* \
	"$R"/usr/share/locale/* "$R"/usr/share/lintian "$R"/usr/share/bug
host=$(echo "$MIRROR" | sed -n 's|^[a-z+]*://\([^/:]*\).*|\1|p')
if [ -n "$host" ]; then
	left=$(grep -rlIF "$host" "$R/etc" "$R/var" 2> /dev/null)
	[ -z "$left" ] || rm -f $left
fi

find "$R" \( -name '*.so' -o -name '*.so.*' \) \( -type f -o -type l \) -printf '%f\n' | sort -u > "$T/libs"
mb=$(du -sm "$R" | cut -f1)
truncate -s "$((mb * 5 / 4 + SPARE_MB))M" "$T/rootfs.img" &&
	mkfs.ext4 -q -F -L cgpool-root -d "$R" "$T/rootfs.img" > "$T/mkfs.log" 2>&1 ||
	{ cat "$T/mkfs.log" >&2; skip "mkfs.ext4 -d failed"; }
t2=$(date +%s)
echo "$((t2 - t0))" > "$T/build-time"

rm -rf "$OUT" && mkdir -p "$OUT" &&
	mv "$T/rootfs.img" "$T/packages" "$T/libs" "$T/build-time" "$OUT/" &&
	touch "$OUT/complete" || skip "cannot store the image in $OUT"
say "$CODENAME image: $mb MiB of files, image $(du -m "$OUT/rootfs.img" | cut -f1) MiB used of" \
	"$(du -m --apparent-size "$OUT/rootfs.img" | cut -f1) MiB;" \
	"$(sed -n 's/^systemd //p' "$OUT/packages" | head -n 1 | sed 's/^/systemd /');" \
	"debootstrap $((t1 - t0)) s, total $((t2 - t0)) s"
echo "$OUT/rootfs.img"
