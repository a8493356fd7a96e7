#!/bin/sh
# chroot-run.sh CHROOT DIR SCRIPT [ARG...] - SCRIPT (sh -c, with ARG... as
# $1...) run on the machine beside a writable copy of the chroot CHROOT
# (tests/pkg/chroot.sh), which stays as it is: an overlay of CHROOT mounted
# at DIR/root (changes in DIR/upper, DIR/work its work directory), with
# /proc, /sys (the machine's cgroup mounts with it), /dev, and tmpfs on /run
# and /tmp, and the machine's /etc/hosts. SCRIPT finds the root in $R and
# enters it with `chroot "$R" ...`.
#
# Everything is mounted in a mount namespace of its own (unshare -m,
# private propagation): the machine's mounts never change, and the mounts
# go with the namespace's last process, whatever way SCRIPT ends. DIR is
# left for the caller to remove (its processes first: processes still
# running in the root keep the namespace).
#
# Exit: SCRIPT's status; 99 when the root cannot be set up (or bad usage).
set -u
[ $# -ge 3 ] || { echo "usage: $0 CHROOT DIR SCRIPT [ARG...]" >&2; exit 99; }
[ -d "$1/etc" ] || { echo "$0: $1 is not a root directory" >&2; exit 99; }
mkdir -p "$2/upper" "$2/work" "$2/root" || exit 99
L=$1 D=$2 S=$3
shift 3
# shellcheck disable=SC2016
exec unshare -m --propagation private sh -c '
	L=$1 D=$2 S=$3
	shift 3
	R=$D/root
	mount -t overlay overlay -o "lowerdir=$L,upperdir=$D/upper,workdir=$D/work" "$R" &&
		mount -t proc proc "$R/proc" && mount --rbind /sys "$R/sys" && mount --rbind /dev "$R/dev" &&
		mount -t tmpfs tmpfs "$R/run" && mount -t tmpfs tmpfs "$R/tmp" &&
		cp /etc/hosts "$R/etc/hosts" || { echo "chroot-run: cannot set up $R" >&2; exit 99; }
	export R
	sh -c "$S" chroot-run "$@"
' chroot-run "$L" "$D" "$S" "$@"
