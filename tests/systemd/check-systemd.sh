#!/bin/sh
# check-systemd.sh [KERNEL...] - cgpoold under a real systemd as PID 1, for
# make check: boots each kernel (default: stable unstable, fetched as
# check-vm.sh does) once with the Debian 12 root image of rootfs.sh through
# run-systemd-vm.sh, and runs there the payloads smoke.sh (the harness:
# systemd up on cgroup v2, the shipped units start the daemon) and
# survive.sh (jobs survive restart, stop, SIGKILL and a watchdog abort of
# the daemon; reload with a bad config) and slurm.sh (Slurm on the v2 node:
# Slurm's own cgroups, then conf/slurm/v2/), then package.sh (upgrade,
# reload, remove and purge of the packages). The build comes as the Debian
# packages of tests/pkg/build-debs.sh (built once for both kernels), which
# the guest installs with dpkg; where they cannot be built here, as `make
# install`'s tree (package.sh then skips and says why).
# CGPOOL_VM=no skips it. Exit: 1 when a payload failed on some kernel, else
# 77 when some kernel or the image could not be had (reason printed), else 0.
set -u
say() { echo "check-systemd: $*"; }
here=$(cd "$(dirname "$0")" && pwd)
[ "${CGPOOL_VM:-yes}" != no ] || { say "SKIP: CGPOOL_VM=no"; exit 77; }
[ "$(id -u)" = 0 ] || { say "SKIP: needs root (qemu, debootstrap, the caches)"; exit 77; }
[ $# -gt 0 ] || set -- ${CGPOOL_VM_KERNEL:-stable unstable}

. "$here/../vm/results.sh"
# slurm.sh takes about 320 to 390 s in a guest (with MariaDB and slurmdbd,
# another VM on the host): each payload gets 600 s
debs=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-sd-debs.XXXXXX") || exit 99
trap 'rm -rf "$debs"' EXIT
if sh "$here/../pkg/build-debs.sh" "$debs" > "$debs/build-debs.out" 2>&1; then
	export CGPOOL_VM_DEBS=$debs
	say "the guests install the packages: $(cd "$debs" && ls *.deb | tr '\n' ' ')"
else
	cat "$debs/build-debs.out"
	say "no packages (above): the guests get make install's tree"
fi
run_kernel() {
	CGPOOL_VM_TEST_TIMEOUT=${CGPOOL_VM_TEST_TIMEOUT:-600} sh "$here/run-systemd-vm.sh" "$1" \
		"$here/smoke.sh" "$here/survive.sh" "$here/slurm.sh" "$here/package.sh"
}
vm_each_kernel check-systemd run_kernel "$@"
