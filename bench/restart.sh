#!/bin/sh
# bench/restart.sh [N] - per-restart latency (median, p99) and dying memory
# cgroups added, the usual way (mkdir a cgroup per run, rmdir after) against
# cgpoolctl exec, in one run on this machine. Run from a built checkout as root.
#   sh bench/restart.sh 1000
N=${1:-200}
. "$(dirname "$0")/common.sh"

dd if=/dev/zero of="$T_DIR/temp" bs=4096 count=1 2>/dev/null
ns() { date +%s%N; }

# stats FILE: "median p99 mean" in microseconds, from nanosecond samples
stats() {
	sort -n "$1" | awk '{ v[NR] = $1; s += $1 }
		END { m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.99 + 0.999)];
		      printf "%.0f %.0f %.0f\n", m / 1000, p / 1000, s / NR / 1000 }'
}

naive="$T_MEMMNT$T_OWN/cgpool-bench-$$"
mkdir "$naive"
before=$(dying_memcgs)
i=0
while [ $i -lt "$N" ]; do
	t=$(ns)
	mkdir "$naive/run$i"
	sh -c 'echo $$ > "$1/cgroup.procs" && cat "$2/temp" >> "$2/log"' sh "$naive/run$i" "$T_DIR"
	rmdir "$naive/run$i"
	echo $(( $(ns) - t )) >> "$T_DIR/naive.ns"
	i=$((i + 1))
done
rmdir "$naive"
naive_dying=$(( $(dying_memcgs) - before ))

start_daemon
probe_verdict > /dev/null # the probe removes a cgroup of its own: let it settle
before=$(dying_memcgs)
i=0
while [ $i -lt "$N" ]; do
	t=$(ns)
	"$CGPOOLCTL" exec web -- sh -c 'cat "$1/temp" >> "$1/log2"' sh "$T_DIR"
	echo $(( $(ns) - t )) >> "$T_DIR/cgpool.ns"
	i=$((i + 1))
done
cgpool_dying=$(( $(dying_memcgs) - before ))
runs=$("$CGPOOLCTL" --json status web | json runs)

set -- $(stats "$T_DIR/naive.ns"); nm=$1 np=$2 na=$3
set -- $(stats "$T_DIR/cgpool.ns"); cm=$1 cp=$2 ca=$3
cat <<EOR
machine: $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r), memory controller on cgroup $T_MEMORY
restarts: $N (job: append a 4 KiB file to a log)
                 median_us  p99_us  mean_us  dying_memcgs_added
usual way        $nm $np $na $naive_dying
cgpoolctl exec   $cm $cp $ca $cgpool_dying
ratio cgpool/usual (median latency): $(awk "BEGIN { printf \"%.2f\", $cm / $nm }")
runs counted by cgpool: $runs
EOR
rm -f "$T_DIR/log" "$T_DIR/log2"
T_FAILS=0
