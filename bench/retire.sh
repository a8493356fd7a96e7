#!/bin/sh
# bench/retire.sh [N] [MODE] - retire N slots at once, each holding 1 MiB of
# page cache, and report how long the daemon's event loop stalled at worst
# (cgpool_loop_stall_max_seconds; and the 99th percentile of the loop
# iterations while retiring, where the daemon has the histogram
# cgpool_loop_stall_seconds), the slowest single kernel write, the
# outcomes and the wall time. MODE: auto (default), drain or reparent.
# CLIENTS (default 0): that many clients attach to keys of their own with
# bench/scale-client while the retirements run, and their rate is reported.
#   sh bench/retire.sh 1000 drain 16
N=${1:-200}
MODE=${2:-auto}
CLIENTS=${3:-0}
. "$(dirname "$0")/common.sh"

write_config "[pool]
warm = 0
max_slots = $((N + 2 * CLIENTS + 10))
[retire]
rate = 10000
verify_timeout = 10s"
start_daemon
verdict=$(probe_verdict)

i=0
while [ $i -lt "$N" ]; do
	"$CGPOOLCTL" exec "k$i" -- dd if=/dev/zero of="$T_DIR/f$i" bs=64k count=16 2>/dev/null
	i=$((i + 1))
done
sync
"$CGPOOLCTL" metrics > "$T_DIR/metrics0"

# clients attaching meanwhile (their keys bound first)
if [ "$CLIENTS" -gt 0 ]; then
	"$top_srcdir/bench/scale-client" attach -c "$CLIENTS" -n "$CLIENTS" -p load > /dev/null
	"$CGPOOLCTL" metrics > "$T_DIR/metrics0"
	timeout 120 "$top_srcdir/bench/scale-client" attach -c "$CLIENTS" -t 60 -p load > "$T_DIR/load" &
	LOAD=$!
fi

# all requested back to back (each request returns at once), then wait
t0=$(date +%s%N)
i=0
while [ $i -lt "$N" ]; do
	"$CGPOOLCTL" retire "k$i" --mode "$MODE" > /dev/null || echo "retire k$i failed"
	i=$((i + 1))
done
# the loop stall histogram (daemons that export it) between two metrics
# snapshots: iterations that ran callbacks, p99, how many over 10 and 50 ms
stall_hist() {
	cat "$1" "$2" | awk -F'[ "]' '/^cgpool_loop_stall_seconds_bucket/ {
			if (seen[$2]++) c[idx[$2]] = $NF - c[idx[$2]]; else { idx[$2] = n; le[n] = $2; c[n++] = $NF } }
		END { if (!n) exit; t = c[n - 1];
		      for (j = 0; j < n; j++) { if (le[j] == "0.01") c10 = c[j]; if (le[j] == "0.05") c50 = c[j] }
		      for (m = n - 1; m > 0 && c[m] == c[m - 1]; m--) ;
		      printf "loop iterations that ran callbacks while retiring: %d, longest <= %s s, over 10 ms: %d, over 50 ms: %d\n",
			     t, le[m], t - c10, t - c50 }'
}
in_flight() { "$CGPOOLCTL" metrics | sed -n 's/^cgpool_retirements_in_flight //p'; }
while [ "$(in_flight)" != 0 ]; do sleep 0.05; done
t1=$(date +%s%N)
[ -n "${LOAD:-}" ] && kill -TERM "$LOAD" 2>/dev/null && wait "$LOAD"
"$CGPOOLCTL" metrics > "$T_DIR/metrics"
grep '^cgpool_retirements_total' "$T_DIR/metrics" | sed 's/cgpool_retirements_total{outcome="\(.*\)"} /  \1: /' > "$T_DIR/outcomes"
cat <<EOR
machine: $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r), memory on cgroup $T_MEMORY, lru_reparenting $verdict
retired: $N slots of 1 MiB page cache each, mode $MODE, all requested at once
wall time: $(( (t1 - t0) / 1000000 )) ms
loop stall max while binding the $N keys: $(stall_max "$T_DIR/metrics0") s
loop stall max after retiring them:      $(stall_max "$T_DIR/metrics") s
loop stall p99 while retiring them:      $(stall_p99 "$T_DIR/metrics0" "$T_DIR/metrics")
slowest single kernel write (reclaim/rmdir): $(sed -n 's/^cgpool_kernel_write_max_seconds //p' "$T_DIR/metrics") s
$(stall_hist "$T_DIR/metrics0" "$T_DIR/metrics")
outcomes:
$(cat "$T_DIR/outcomes")
EOR
[ -s "$T_DIR/load" ] && echo "attaching meanwhile ($CLIENTS clients, same keys): $(cat "$T_DIR/load")"
rm -f "$T_DIR"/f*
T_FAILS=0
