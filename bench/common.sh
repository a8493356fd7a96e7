# common.sh - sourced by the benchmarks: the binaries to measure, where the
# raw data and plots go (data.sh: BENCH_OUT, BENCH_PLOT), then the
# integration tests' helpers (temp dir, pool root below our cgroup, daemon).
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
CGPOOLD=${CGPOOLD:-$top_srcdir/src/cgpoold/cgpoold}
CGPOOLCTL=${CGPOOLCTL:-$top_srcdir/src/cgpoolctl/cgpoolctl}
# in a build tree src/cgpoolctl/cgpoolctl is libtool's wrapper script, whose
# start-up would be measured too: use the real binary beside it, with the
# client library of the same build (src/lib/.libs)
if [ -x "$(dirname "$CGPOOLCTL")/.libs/cgpoolctl" ]; then
	LD_LIBRARY_PATH="$(dirname "$CGPOOLCTL")/../lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	CGPOOLCTL="$(dirname "$CGPOOLCTL")/.libs/cgpoolctl"
	export LD_LIBRARY_PATH
fi
export top_srcdir CGPOOLD CGPOOLCTL
. "$top_srcdir/bench/data.sh"
. "$top_srcdir/tests/integ/lib.sh"

# stall_p99 BEFORE AFTER: from two snapshots of the daemon's metrics, the upper
# bound of the cgpool_loop_stall_seconds bucket that holds the 99th percentile
# of the loop iterations in between, and their number; "n/a" when the daemon
# has no such histogram, "none" when no iteration was counted
stall_p99() {
	grep -q '^cgpool_loop_stall_seconds_bucket' "$2" || { echo n/a; return; }
	awk '/^cgpool_loop_stall_seconds_bucket\{/ {
		le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le)
		if (FILENAME == ARGV[1]) b[le] = $2; else { a[le] = $2; order[++n] = le }
	}
	END {
		tot = a["+Inf"] - b["+Inf"]
		if (tot <= 0) { print "none"; exit }
		for (i = 1; i <= n; i++)
			if (a[order[i]] - b[order[i]] >= 0.99 * tot) { printf "<=%s s (%d iterations)\n", order[i], tot; exit }
	}' "$1" "$2"
}
# stall_max METRICS: the longest loop iteration since the daemon started, s
stall_max() { sed -n 's/^cgpool_loop_stall_max_seconds //p' "$1"; }
# stall_over BEFORE AFTER LE: loop iterations between two metrics snapshots
# that took longer than LE seconds (a bucket bound: 0.01, 0.05, ...)
stall_over() {
	awk -v le="$3" '/^cgpool_loop_stall_seconds_bucket\{/ {
		b = $1; sub(/.*le="/, "", b); sub(/".*/, "", b)
		if (b == le || b == "+Inf") v[FILENAME, b] = $2
	}
	END { printf "%d\n", (v[ARGV[2], "+Inf"] - v[ARGV[1], "+Inf"]) - (v[ARGV[2], le] - v[ARGV[1], le]) }' "$1" "$2"
}
