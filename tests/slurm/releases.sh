#!/bin/sh
# releases.sh - the setups a v1 or hybrid node runs (conf/slurm/alone and
# conf/slurm/beside) with the Slurm of other Debian releases, on this
# machine's own cgroups: Debian 13's Slurm 24.11 and unstable's 26.05 (the
# machine's own release, Debian 12 with 22.05, is what the other tests in
# tests/slurm/ run).
#
# For each release in CGPOOL_SLURM_RELEASES (default "trixie sid"):
# - a chroot of that release holding its Slurm daemons, clients and munge
#   (tests/pkg/chroot.sh, cached);
# - cgpool's packages built for that release (tests/pkg/build-debs.sh with
#   CGPOOL_DEB_RELEASE, cached by content: the systemd guest of that
#   release installs the same files), installed with dpkg in an overlay of
#   the chroot, so the plug-ins are the ones slurm-cgpool puts in Slurm's
#   plug-in directory, and cgpoold and cgpoolctl the packaged ones;
# - in an overlay of the chroot (tests/pkg/chroot-run.sh: /proc, /sys with
#   the machine's cgroup mounts, /dev; all gone with its namespace), the Slurm
#   tests CGPOOL_SLURM_RELEASE_TESTS (default: cgpool.sh beside.sh
#   hostile.sh hostile-beside.sh multinode.sh; cgpool.sh and beside.sh
#   with CGPOOL_SLURM_RELEASE_JOBS jobs, 50) run as they run on the
#   machine, each in the cgroup of this test, with top_srcdir the tests
#   copied into the chroot and no build tree (tests/slurm/lib.sh then
#   takes the installed plug-ins).
# Each test's log is printed, then its verdict and time per release. A
# release that cannot be had here (no chroot, packages that cannot be
# built: not root, no network for a first build) is skipped with the
# reason; the test fails when a test fails in any release, or when a
# release's packages fail to build or install.
# Exit 0, 1, 77 when no release could be had, 99 on a hard error.
set -u

say() { echo "releases: $*"; }
top=$(cd "${top_srcdir:-.}" && pwd)
RELEASES=${CGPOOL_SLURM_RELEASES:-trixie sid}
TESTS=${CGPOOL_SLURM_RELEASE_TESTS:-cgpool.sh beside.sh hostile.sh hostile-beside.sh multinode.sh}
# the job counts of cgpool.sh and beside.sh (200 and 100 on the machine's
# own release): 4 dying memcgs a job under Slurm's own groups, so 50 jobs
# tell a leak as well. Left to the machine's own run, to keep make check
# short: tasks.sh (the plug-in's limit of tasks per step, which no release
# changes) and baseline.sh (Slurm's own groups leaving dying memcgs, which
# each release's systemd guest shows; CGPOOL_SLURM_RELEASE_TESTS=baseline.sh
# runs it here: 4 a job on v1 with 24.11 and 26.05 alike)
JOBS=${CGPOOL_SLURM_RELEASE_JOBS:-50}
# the seconds a test may take (timeout: 124 is a failure); 160 s the longest here
LIMIT=${CGPOOL_SLURM_RELEASE_TIMEOUT:-600}
[ "${CGPOOL_INTEG:-yes}" != no ] ||
	{ echo "SKIP: releases: CGPOOL_INTEG=no (configure CGPOOL_HEAVY_TESTS=no, as make distcheck and the packages' builds set it)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: releases: needs root (chroot, mounts)"; exit 77; }
command -v unshare > /dev/null || { echo "SKIP: releases: no unshare (util-linux)"; exit 77; }
grep -qw overlay /proc/filesystems || modprobe overlay 2> /dev/null ||
	{ echo "SKIP: releases: no overlay file system"; exit 77; }
for t in $TESTS; do
	[ -f "$top/tests/slurm/$t" ] || { echo "releases: no test tests/slurm/$t" >&2; exit 99; }
done

W=$(mktemp -d "${TMPDIR:-/var/tmp}/cgpool-releases.XXXXXX") || exit 99
# leftovers: any process whose root is one of the chroots (the tests stop
# their clusters; this is for a test killed half way)
strays_in() {
	for s_p in /proc/[0-9]*; do
		case $(readlink "$s_p/root" 2> /dev/null) in "$1"*) echo "${s_p#/proc/}" ;; esac
	done
}
cleanup() {
	for r in "$W"/*/root; do
		[ -d "$r" ] || continue
		s=$(strays_in "$r")
		[ -z "$s" ] || { say "killing what is left in $r: $s"; kill -9 $s 2> /dev/null; }
	done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 99' INT TERM HUP

FAILED=0
HAD=0
for rel in $RELEASES; do
	D=$W/$rel
	mkdir -p "$D/debs" || exit 99
	if ! chroot=$(sh "$top/tests/pkg/chroot.sh" "$rel" 2> "$D/chroot.err"); then
		cat "$D/chroot.err"
		say "$rel: SKIP: no chroot of $rel here"
		continue
	fi
	t0=$(date +%s)
	CGPOOL_DEB_RELEASE=$rel sh "$top/tests/pkg/build-debs.sh" "$D/debs" > "$D/debs.log" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		tail -n 40 "$D/debs.log"
		if [ $rc -eq 77 ]; then
			say "$rel: SKIP: the packages cannot be built here"
			continue
		fi
		say "$rel: FAIL: the packages did not build"
		FAILED=1
		continue
	fi
	HAD=1
	say "$rel: packages in $(($(date +%s) - t0)) s"
	mkdir -p "$D/src" &&
		(cd "$top" && tar --exclude='*.log' --exclude='*.trs' -cf - tests/integ tests/slurm conf/slurm src/lib/cgpool.h) |
		tar -xf - -C "$D/src" || exit 99
	ls "$D"/debs/*.deb | grep -v -- -dbgsym_ > "$D/debs.list"

	# the release's session, in an overlay of its chroot (tests/pkg/chroot-run.sh)
	# shellcheck disable=SC2016
	sh "$top/tests/pkg/chroot-run.sh" "$chroot" "$D" '
		set -u
		D=$1 TESTS=$2 JOBS=$3 LIMIT=$4
		mkdir -p "$R/var/tmp/debs" "$R/src" && cp $(cat "$D/debs.list") "$R/var/tmp/debs/" &&
			cp -a "$D/src/." "$R/src/" || exit 99
		if ! chroot "$R" sh -c "dpkg -i /var/tmp/debs/*.deb" > "$D/install.log" 2>&1; then
			cat "$D/install.log"
			echo "releases: the packages did not install"
			exit 1
		fi
		chroot "$R" slurmd -V > "$D/version" 2>&1
		chroot "$R" dpkg-query -W -f "\${Package} \${Version}\n" cgpool slurm-cgpool slurmd >> "$D/version" 2>&1
		for t in $TESTS; do
			s=$(date +%s)
			timeout -k 10 "$LIMIT" chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 \
				top_srcdir=/src top_builddir=/src CGPOOLD=/usr/sbin/cgpoold CGPOOLCTL=/usr/bin/cgpoolctl \
				CGPOOL_SLURM_JOBS=$JOBS CGPOOL_SLURM_BESIDE_JOBS=$JOBS \
				sh "/src/tests/slurm/$t" > "$D/$t.log" 2>&1
			echo "$t $? $(($(date +%s) - s))" >> "$D/results"
		done
	' "$D" "$TESTS" "$JOBS" "$LIMIT"
	rc=$?
	[ $rc -eq 0 ] || { say "$rel: FAIL: the session ended with $rc"; FAILED=1; }
	say "$rel: $(head -n 1 "$D/version" 2> /dev/null); $(sed -n 2,9p "$D/version" 2> /dev/null | tr '\n' ';')"
	[ -f "$D/results" ] || continue
	while read -r t trc secs; do
		case $trc in
		0) v=PASS ;;
		77) v=SKIP ;;
		*) v=FAIL FAILED=1 ;;
		esac
		echo "---- $rel: $t.log"
		cat "$D/$t.log"
		echo "$rel: $v $t ($secs s): $(tail -n 1 "$D/$t.log")" >> "$W/summary"
		grep -E '^(SKIP|FAIL|NOT CHECKED)' "$D/$t.log" | sed "s/^/$rel: $t: /" >> "$W/summary"
	done < "$D/results"
done
[ -f "$W/summary" ] && sed 's/^/releases: /' "$W/summary"
[ $HAD = 1 ] || { echo "SKIP: releases: no release could be had here"; exit 77; }
exit $FAILED
