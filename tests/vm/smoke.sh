#!/bin/sh
# smoke.sh - self-test of the VM harness (a run-vm.sh payload): the naive
# restart loop of the LRU-reparenting cover letter, on cgroup v2 or on the
# memory hierarchy of a pure v1 layout. 201 times:
# a new cgroup below $CGPOOL_TEST_CGROUP, this shell moves in, appends a 4 KiB
# file to a log on the real disk (the page cache is charged to that cgroup),
# moves back, rmdir. Then the dying cgroups left behind, polled from the
# parent's cgroup.stat (v1: /proc/cgroups' memory count less the live
# directories; the count lags rmdir), and again after the log is
# deleted (which frees the pages that pin them).
# Expected: ~201 on kernels without LRU reparenting (6.1), ~0-1 with it (7.1+),
# and back to ~0 after the delete everywhere. It checks that the VM really
# reproduces what the daemon is about; it asserts by kernel version, which the
# daemon itself must not do (it probes).
N=${SMOKE_RESTARTS:-201}
T_FAILS=0
T_PASSES=0
fail() { echo "FAIL: $*"; T_FAILS=$((T_FAILS + 1)); }
pass() { echo "ok: $*"; T_PASSES=$((T_PASSES + 1)); }

[ -n "${CGPOOL_TEST_CGROUP:-}" ] || { echo "SKIP: smoke: needs CGPOOL_TEST_CGROUP (run it with run-vm.sh)"; exit 77; }
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -n "$CG" ]; then
	LAYOUT=v2
	grep -qw memory "$CG$CGPOOL_TEST_CGROUP/cgroup.subtree_control" ||
		{ echo "SKIP: smoke: memory not enabled in $CGPOOL_TEST_CGROUP"; exit 77; }
	OWN=$CG$(sed -n 's/^0:://p' /proc/self/cgroup)
else
	LAYOUT=v1
	CG=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)
	[ -n "$CG" ] || { echo "SKIP: smoke: neither cgroup2 nor a v1 memory hierarchy is mounted"; exit 77; }
	OWN=$CG$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
fi
P=$CG$CGPOOL_TEST_CGROUP
D=$(mktemp -d "${TMPDIR:-/var/tmp}/smoke.XXXXXX") || exit 99
trap 'rm -rf "$D"; rmdir "$P"/smoke-t* 2> /dev/null' EXIT

echo "kernel $(uname -r), $LAYOUT, tmp on $(df "$D" | awk 'NR == 2 { print $1 }')"
stat_of() { sed -n "s/^$1 //p" "$P/cgroup.stat"; }
# dying: the dying memcgs below P (v1: on the machine, which is the same
# here: nothing else makes memory cgroups in the guest)
dying() {
	if [ $LAYOUT = v2 ]; then
		stat_of nr_dying_descendants
	else
		echo $(($(awk '$1 == "memory" { print $3 }' /proc/cgroups) - $(find "$CG" -type d | wc -l)))
	fi
}
# counts N: the dying count, polled until it holds still for 1 s (5 s at most)
counts() {
	last=-1 same=0 i=0
	while [ $i -lt 50 ]; do
		c=$(dying)
		if [ "$c" = "$last" ]; then same=$((same + 1)); else same=0; fi
		[ $same -ge 10 ] && break
		last=$c
		sleep 0.1
		i=$((i + 1))
	done
	m=
	[ $LAYOUT = v1 ] || m=$(stat_of nr_dying_subsys_memory)
	echo "$c${m:+ (nr_dying_subsys_memory $m)}"
}

dd if=/dev/zero of="$D/temp" bs=4096 count=1 2> /dev/null
before=$(dying)
t0=$(date +%s)
i=0
errors=0
while [ $i -lt $N ]; do
	mkdir "$P/smoke-t$i" &&
		echo $$ > "$P/smoke-t$i/cgroup.procs" &&
		cat "$D/temp" >> "$D/log" &&
		echo $$ > "$OWN/cgroup.procs" &&
		rmdir "$P/smoke-t$i" || errors=$((errors + 1))
	i=$((i + 1))
done
t1=$(date +%s)
[ $errors = 0 ] && pass "$N restarts through mkdir/move/rmdir" || fail "$errors of $N restarts failed"
after=$(counts)
echo "SMOKE $(uname -r) $LAYOUT: $N restarts in $((t1 - t0)) s; dying memcgs below $CGPOOL_TEST_CGROUP: before $before, after $after"
dying=${after%% *}
added=$((dying - before))
rel=$(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
set -- $rel
if [ "$1" -lt 6 ] || { [ "$1" = 6 ] && [ "$2" -lt 12 ]; }; then
	[ $added -ge $((N * 3 / 4)) ] && pass "no reparenting here: the naive loop pinned $added memcgs" ||
		fail "expected ~$N dying memcgs on $(uname -r), got $added (is the page cache charged?)"
elif [ "$1" -gt 7 ] || { [ "$1" = 7 ] && [ "$2" -ge 1 ]; }; then
	[ $added -lt $((N / 10)) ] && pass "reparenting kernel: the naive loop left $added dying memcgs" ||
		fail "expected few dying memcgs on $(uname -r), got $added"
else
	echo "note: no expectation for $(uname -r)"
fi

rm -f "$D/log"
sync
gone=$(counts)
echo "SMOKE $(uname -r): after deleting the log: $gone"
if [ "${gone%% *}" -gt $((before + 2)) ]; then
	# what is left is the filesystem's metadata (bitmaps, indirect blocks
	# in the disk's page cache) charged to the runs: drop the clean caches
	echo 1 > /proc/sys/vm/drop_caches
	gone=$(counts)
	echo "SMOKE $(uname -r): after dropping the page cache too: $gone"
fi
# (one or two may still be on their way out)
[ "${gone%% *}" -le $((before + N / 20)) ] && pass "dying memcgs freed once their pages are gone" ||
	fail "dying memcgs stay after the pages are deleted ($gone)"
echo "smoke: $T_PASSES passed, $T_FAILS failed"
[ $T_FAILS = 0 ]
