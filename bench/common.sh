# common.sh - sourced by the benchmarks: the binaries to measure, then the
# integration tests' helpers (temp dir, pool root below our cgroup, daemon).
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
CGPOOLD=${CGPOOLD:-$top_srcdir/src/cgpoold}
CGPOOLCTL=${CGPOOLCTL:-$top_srcdir/src/cgpoolctl}
# in a build tree src/cgpoolctl is libtool's wrapper script, whose start-up
# would be measured too: use the real binary beside it
if [ -x "$(dirname "$CGPOOLCTL")/.libs/cgpoolctl" ]; then
	LD_LIBRARY_PATH="$(dirname "$CGPOOLCTL")/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	CGPOOLCTL="$(dirname "$CGPOOLCTL")/.libs/cgpoolctl"
	export LD_LIBRARY_PATH
fi
export top_srcdir CGPOOLD CGPOOLCTL
. "$top_srcdir/tests/integ/lib.sh"
