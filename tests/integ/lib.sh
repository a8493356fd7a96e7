# lib.sh - shared helpers for the integration tests (POSIX sh; also runs under
# busybox sh inside the test VMs). Each test gets its own temp dir, socket,
# state dir and a cgroup pool root below the test's own cgroup.

: "${CGPOOLD:?CGPOOLD must name the cgpoold binary}"
: "${CGPOOLCTL:?CGPOOLCTL must name the cgpoolctl binary}"

T_NAME=$(basename "$0" .sh)
T_FAILS=0
T_PASSES=0
T_DAEMON_PID=

skip() { echo "SKIP: $T_NAME: $*"; exit 77; }
hard_error() { echo "ERROR: $T_NAME: $*"; exit 99; }
fail() { echo "FAIL: $*"; T_FAILS=$((T_FAILS + 1)); }
pass() { echo "ok: $*"; T_PASSES=$((T_PASSES + 1)); }
# check DESCRIPTION COMMAND...: pass when COMMAND succeeds
check() { d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
finish() { echo "$T_NAME: $T_PASSES passed, $T_FAILS failed"; [ "$T_FAILS" -eq 0 ]; }

[ "${CGPOOL_INTEG:-yes}" != no ] || skip "CGPOOL_INTEG=no (configure CGPOOL_HEAVY_TESTS=no, as make distcheck sets it)"
[ "$(id -u)" = 0 ] || skip "needs root to create cgroups"

# where the memory controller lives, and this process's cgroup in it
if grep -q '^[0-9]*:memory:' /proc/self/cgroup; then
	T_MEMORY=v1
	T_MEMMNT=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)
	own_memcg() { sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup; }
else
	T_MEMORY=v2
	T_MEMMNT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	own_memcg() { sed -n 's/^0:://p' /proc/self/cgroup; }
	grep -qw memory "$T_MEMMNT/cgroup.controllers" 2>/dev/null || T_MEMMNT=
fi
[ -n "$T_MEMMNT" ] || skip "no usable memory controller"
# The cgroup the test creates its cgroups in: its own, or CGPOOL_TEST_CGROUP
# (a path as in /proc/self/cgroup) where the test's own cgroup cannot have
# children with controllers: on pure cgroup v2 a cgroup that holds processes
# cannot enable controllers for its children (EBUSY, "no internal processes"),
# so the VM tests run in the leaf /test/runner and create their cgroups in /test.
T_OWN=${CGPOOL_TEST_CGROUP:-$(own_memcg)}
[ "$T_OWN" = / ] && T_OWN=

# this test's own scratch space: on a real disk, so page cache can be reclaimed
T_DIR=$(mktemp -d "${TMPDIR:-/var/tmp}/cgpool-$T_NAME.XXXXXX") || hard_error "mktemp"
T_ROOT="$T_OWN/cgpool-$T_NAME-$$"
T_SOCK="$T_DIR/cgpool.sock"
export CGPOOL_SOCKET="$T_SOCK"

# hierarchies where the test's own cgroup path does not exist yet (hybrid
# hosts put the test in different cgroups per hierarchy): the daemon creates
# it there, and cleanup removes it again
T_CREATED=
for mnt in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do
	[ -n "$T_OWN" ] && [ ! -d "$mnt$T_OWN" ] && T_CREATED="$T_CREATED $mnt"
done

# The directory of the calling process's memory cgroup.
own_memcg_dir() { echo "$T_MEMMNT$(own_memcg)"; }

# Dying memory cgroups on the machine (v1: /proc/cgroups counts dying ones
# too, so subtract the live directories) or below the test's cgroup (v2).
dying_memcgs() {
	if [ "$T_MEMORY" = v1 ]; then
		total=$(awk '$1 == "memory" { print $3 }' /proc/cgroups)
		live=$(find "$T_MEMMNT" -type d | wc -l)
		echo $((total - live))
	else
		sed -n 's/^nr_dying_descendants //p' "$T_MEMMNT$T_OWN/cgroup.stat"
	fi
}

# On v1 the dying-memcg count is machine-wide: a test that reads it and the
# tests that make many memory cgroups die (crash-campaign, state-lost) take
# this lock, so they do not run at the same time (make -j). Processes that
# outlive the test must not inherit it: start them with 9>&-.
dying_count_lock() {
	[ "$T_MEMORY" = v1 ] && command -v flock > /dev/null || return 0
	exec 9> "${TMPDIR:-/var/tmp}/cgpool-integ-dying.lock" && flock 9
}

# kernel_keeps_writer: 0 when this kernel keeps a memory cgroup dying that
# wrote a file, after the strongest reclaim the kernel offers and rmdir: the
# naive way, without the daemon. A process in a new cgroup below the test's
# writes 8 MiB and syncs; memory.reclaim (else memory.high lowered to 0, or
# v1 memory.force_empty) takes what reclaim can; then rmdir, and the dying
# count is read after 1 s (it lags rmdir) and watched 3 s more. On 5.10, in both layouts, a few pages that the
# write charged to the group besides the file's own (none of the file's stay
# in the page cache) are taken by no reclaim, not even drop_caches, and keep
# it dying: a drain cannot do better than the kernel lets it.
kernel_keeps_writer() {
	kw=$T_MEMMNT$T_OWN/cgpool-writer-$$
	kw_before=$(dying_memcgs)
	mkdir "$kw" || return 1
	sh -c 'echo $$ > "$1/cgroup.procs" && dd if=/dev/zero of="$2" bs=1M count=8 2>/dev/null && sync' sh \
		"$kw" "$T_DIR/writer"
	if [ -f "$kw/memory.force_empty" ]; then
		echo 0 > "$kw/memory.force_empty"
	elif [ -f "$kw/memory.reclaim" ]; then
		echo 16M > "$kw/memory.reclaim" 2> /dev/null
	else
		echo 0 > "$kw/memory.high"
	fi
	rmdir "$kw" || return 1
	kw_freed() { [ "$(dying_memcgs)" -le "$kw_before" ]; }
	sleep 1
	wait_for 3 kw_freed
	kw_kept=$?
	# its group must not go away later, in the middle of the caller's
	# counts: dropped now, and waited for (5.10 keeps it for good)
	rm -f "$T_DIR/writer"
	if [ $kw_kept -ne 0 ]; then
		sync
		echo 1 > /proc/sys/vm/drop_caches
		wait_for 5 kw_freed
	fi
	[ $kw_kept -ne 0 ]
}

# Bytes of memory charged below the pool root to no live cgroup: the pages
# of removed groups that still exist (v1 keeps a removed memcg's LRU pages
# charged to it until they go). Scoped to this test's pool, unlike the
# machine-wide /proc/cgroups count, which every other cgroup on the machine
# moves. v1 only (v2 has cgroup.stat for the same question).
orphan_bytes_v1() {
	awk -v root="$T_MEMMNT$T_ROOT/memory.stat" '
		FNR == 1 { f = FILENAME }
		$1 == "total_cache" || $1 == "total_rss" { tot[f] += $2 }
		f == root && ($1 == "cache" || $1 == "rss") { own += $2 }
		END { kids = 0; for (x in tot) if (x != root) kids += tot[x]; print tot[root] - own - kids }
	' "$T_MEMMNT$T_ROOT/memory.stat" $(find "$T_MEMMNT$T_ROOT" -mindepth 2 -maxdepth 2 -name memory.stat)
}

# write_config [EXTRA_INI]: a config for this test's daemon
write_config() {
	cat > "$T_DIR/cgpool.conf" <<EOC
[daemon]
socket = $T_SOCK
state_dir = $T_DIR/state
root = $T_ROOT
log_level = info
$1
EOC
}

start_daemon() {
	[ -f "$T_DIR/cgpool.conf" ] || write_config
	"$CGPOOLD" --config "$T_DIR/cgpool.conf" >> "$T_DIR/daemon.log" 2>&1 9>&- &
	T_DAEMON_PID=$!
	i=0
	while ! "$CGPOOLCTL" status > /dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$T_DAEMON_PID" 2>/dev/null; then
			cat "$T_DIR/daemon.log"
			hard_error "cgpoold did not come up"
		fi
		sleep 0.1
	done
}

stop_daemon() {
	[ -n "$T_DAEMON_PID" ] || return 0
	kill "$T_DAEMON_PID" 2>/dev/null
	wait "$T_DAEMON_PID" 2>/dev/null
	T_DAEMON_PID=
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds
wait_for() {
	n=$(($1 * 10)); shift
	while ! "$@"; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}

# json FIELD: a top-level scalar field of the JSON object on stdin
json() { sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}[,}].*/\1/p" | head -n 1; }
# jstr FIELD: a top-level string field (without quotes in it) of the JSON
# object on stdin, whole (json stops at the first comma)
jstr() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -n 1; }

# The daemon's lru_reparenting verdict, once its probe has run (unknown
# after 30 s means it could not tell).
probe_verdict() {
	n=300
	while v=$("$CGPOOLCTL" --json probe | json lru_reparenting) && [ "$v" = unknown ] && [ $n -gt 0 ]; do
		n=$((n - 1))
		sleep 0.1
	done
	echo "$v"
}

# Remove every cgroup below the pool root in every hierarchy, deepest first,
# killing what still runs there.
remove_root() {
	for mnt in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do
		d="$mnt$T_ROOT"
		[ -d "$d" ] || continue
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
		sleep 0.1
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$d" ] && echo "warning: $d left behind" >&2
	done
	for mnt in $T_CREATED; do
		d="$mnt$T_OWN"
		while [ "$d" != "$mnt" ] && rmdir "$d" 2>/dev/null; do d=$(dirname "$d"); done
	done
}

cleanup() {
	stop_daemon
	remove_root
	[ -n "$T_KEEP" ] || rm -rf "$T_DIR"
}
trap cleanup EXIT
trap 'exit 99' INT TERM
