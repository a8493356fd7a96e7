#!/bin/sh
# check-systemd.sh [GUEST...] - cgpoold under a real systemd as PID 1, for
# make check. Each GUEST is a Debian release with its own kernel, systemd
# and Slurm (default: stable trixie unstable):
#   stable    the machine's own release (Debian 12: systemd 252, Slurm
#             22.05) on Debian stable's kernel (6.1)
#   trixie    Debian 13 (systemd 257, Slurm 24.11) on its own kernel (6.12)
#   unstable  Debian unstable (systemd 26x, Slurm 26.05) on its kernel (7.x)
# Each boots once, with the root image of rootfs.sh for its release, through
# run-systemd-vm.sh, and runs there the payloads smoke.sh (the harness:
# systemd up on cgroup v2, the shipped units start the daemon), survive.sh
# (jobs survive restart, stop, SIGKILL and a watchdog abort of the daemon;
# reload with a bad config), slurm.sh (Slurm on the v2 node: Slurm's own
# cgroups, then conf/slurm/v2/) and package.sh (upgrade, reload, remove and
# purge of the packages). The build comes as the Debian packages of
# tests/pkg/build-debs.sh, built for each release in a chroot of it
# (tests/pkg/chroot.sh; the machine's own release on the machine), so each
# guest's Slurm plug-ins are built against its own libslurm-dev, and
# installed with dpkg; where they cannot be built here, as `make install`'s
# tree (package.sh then skips and says why). Two guests boot at a time where
# the machine has two CPUs or more.
# CGPOOL_VM=no skips it. Exit: 1 when a payload failed on some guest, else
# 77 when some guest or its image could not be had (reason printed), else 0.
set -u
say() { echo "check-systemd: $*"; }
here=$(cd "$(dirname "$0")" && pwd)
[ "${CGPOOL_VM:-yes}" != no ] || { say "SKIP: CGPOOL_VM=no"; exit 77; }
[ "$(id -u)" = 0 ] || { say "SKIP: needs root (qemu, debootstrap, the caches)"; exit 77; }
[ $# -gt 0 ] || set -- ${CGPOOL_VM_KERNEL:-stable trixie unstable}

. "$here/../vm/results.sh"
# release_of GUEST: the Debian release of its root image and packages
release_of() {
	case $1 in
	stable) . /etc/os-release && echo "$VERSION_CODENAME" ;;
	unstable) echo sid ;;
	*) echo "$1" ;;
	esac
}
debs=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-sd-debs.XXXXXX") || exit 99
trap 'rm -rf "$debs"' EXIT
for g in "$@"; do
	r=$(release_of "$g")
	[ -d "$debs/$r" ] && continue
	mkdir -p "$debs/$r"
	if CGPOOL_DEB_RELEASE=$r sh "$here/../pkg/build-debs.sh" "$debs/$r" > "$debs/$r.out" 2>&1; then
		say "$r: the guest installs the packages: $(cd "$debs/$r" && ls *.deb | tr '\n' ' ')"
	else
		cat "$debs/$r.out"
		rm -rf "${debs:?}/$r"
		say "$r: no packages (above): the guest gets make install's tree"
	fi
done
# slurm.sh takes about 320 to 390 s in a guest alone (with MariaDB and
# slurmdbd), more with another guest beside it: each payload gets 900 s
run_kernel() {
	r=$(release_of "$1")
	if [ -d "$debs/$r" ]; then export CGPOOL_VM_DEBS=$debs/$r; else unset CGPOOL_VM_DEBS; fi
	if [ "$1" = stable ]; then unset CGPOOL_VM_RELEASE; else export CGPOOL_VM_RELEASE=$r; fi
	CGPOOL_VM_TEST_TIMEOUT=${CGPOOL_VM_TEST_TIMEOUT:-900} sh "$here/run-systemd-vm.sh" "$1" \
		"$here/smoke.sh" "$here/survive.sh" "$here/slurm.sh" "$here/package.sh"
}
jobs=1
[ "$(nproc 2> /dev/null || echo 1)" -ge 2 ] && jobs=2
vm_each_kernel_by "$jobs" check-systemd run_kernel "$@"
