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
# the machine has two CPUs or more, and a guest's packages are built while
# the guests before it run.
# CGPOOL_VM=no skips it. Exit: 1 when a payload failed on some guest, else
# 77 when some guest or its image could not be had (reason printed), else 0.
set -u
say() { echo "check-systemd: $*"; }
here=$(cd "$(dirname "$0")" && pwd)
[ "${CGPOOL_VM:-yes}" != no ] || { say "SKIP: CGPOOL_VM=no"; exit 77; }
[ "$(id -u)" = 0 ] || { say "SKIP: needs root (qemu, debootstrap, the caches)"; exit 77; }
[ $# -gt 0 ] || set -- ${CGPOOL_VM_KERNEL:-stable trixie unstable}

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
# build_debs RELEASE: the packages for RELEASE into debs/RELEASE (once per
# release), or make install's tree for its guests when they cannot be built
build_debs() {
	[ -e "$debs/$1.done" ] && return 0
	mkdir -p "$debs/$1"
	if CGPOOL_DEB_RELEASE=$1 sh "$here/../pkg/build-debs.sh" "$debs/$1" > "$debs/$1.out" 2>&1; then
		say "$1: the guest installs the packages: $(cd "$debs/$1" && ls *.deb | tr '\n' ' ')"
	else
		cat "$debs/$1.out"
		rm -rf "${debs:?}/$1"
		say "$1: no packages (above): the guest gets make install's tree"
	fi
	touch "$debs/$1.done"
}
# slurm.sh takes about 300 to 400 s in a guest alone (with MariaDB and
# slurmdbd), more with another guest beside it: each payload gets 900 s
run_kernel() {
	r=$(release_of "$1")
	if [ -d "$debs/$r" ]; then export CGPOOL_VM_DEBS=$debs/$r; else unset CGPOOL_VM_DEBS; fi
	if [ "$1" = stable ]; then unset CGPOOL_VM_RELEASE; else export CGPOOL_VM_RELEASE=$r; fi
	CGPOOL_VM_TEST_TIMEOUT=${CGPOOL_VM_TEST_TIMEOUT:-900} sh "$here/run-systemd-vm.sh" "$1" \
		"$here/smoke.sh" "$here/survive.sh" "$here/slurm.sh" "$here/package.sh"
}
# At most JOBS guests run at once (each is emulated on the host's CPUs). A
# guest's packages are built once a place for it is free, beside at most
# JOBS - 1 guests: a build beside two emulated guests on two CPUs slowed
# slurm.sh from 450 to 720 s of its 900. The output of each guest is
# printed whole, in the order of the guests, at the end.
jobs=1
[ "$(nproc 2> /dev/null || echo 1)" -ge 2 ] && jobs=2
out=$debs/out
mkdir -p "$out"
running() { n=0; for g in "$@"; do [ -e "$out/$g.rc" ] || n=$((n + 1)); done; echo $n; }
started=
for g in "$@"; do
	t0=$(date +%s)
	while [ "$(running $started)" -ge "$jobs" ]; do sleep 2; done
	t1=$(date +%s)
	build_debs "$(release_of "$g")"
	say "$g: waited $((t1 - t0)) s for a place, its packages took $(($(date +%s) - t1)) s"
	( run_kernel "$g" > "$out/$g.log" 2>&1; echo $? > "$out/$g.rc" ) &
	started="$started $g"
done
wait
failed= skipped= passed=
for g in "$@"; do
	cat "$out/$g.log"
	case $(cat "$out/$g.rc" 2> /dev/null) in
	0) passed="$passed $g" ;;
	77) skipped="$skipped $g" ;;
	*) failed="$failed $g" ;;
	esac
done
say "passed on:${passed:- none}; failed on:${failed:- none}; not run on:${skipped:- none}"
[ -z "$failed" ] || exit 1
[ -z "$skipped" ] || exit 77
exit 0
