#!/bin/sh
# bench/restart.sh [N] - per-restart latency (median, p99) and dying memory
# cgroups added, the usual way (mkdir a cgroup per run in every hierarchy
# cgpool places a job in, rmdir after) against cgpoolctl exec, in one run on
# this machine, with the kernel memory each way adds (/proc/meminfo's
# Percpu, Slab, SUnreclaim, KReclaimable, after - before) and the usual
# way's per dying memcg. N: the argument, else $RESTARTS, else 200. Run from
# a built checkout as root (bench/restart-vm.sh runs it in the test VMs).
#   sh bench/restart.sh 1000
# Its raw data goes to $BENCH_OUT (default bench/out; bench/data.sh):
#   restart.dying.dat  the dying memcgs each way added, read every
#                      $DYING_EVERY restarts (default N / 100, at least 1)
#                      and at the end: restart, usual way, cgpool
#   restart.lat.dat    each restart's latency, µs: restart, usual way, cgpool
# then bench/plot.sh draws dying-restarts.png and placement-latency.png
# there (skipped without gnuplot, or with BENCH_PLOT=no). With
# BENCH_DATA_PRINT=yes the data files are printed too, each between
# `BENCHDATA-BEGIN NAME` and `BENCHDATA-END` (restart-vm.sh's guests).
N=${1:-${RESTARTS:-200}}
. "$(dirname "$0")/common.sh"
EVERY=${DYING_EVERY:-$((N / 100))}
[ "$EVERY" -ge 1 ] 2>/dev/null || EVERY=1
bench_out || hard_error "no data directory"

dd if=/dev/zero of="$T_DIR/temp" bs=4096 count=1 2>/dev/null
ns() { date +%s%N; }

# stats FILE: "median p99 mean" in microseconds, from nanosecond samples
stats() {
	sort -n "$1" | awk '{ v[NR] = $1; s += $1 }
		END { m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.99 + 0.999)];
		      printf "%.0f %.0f %.0f\n", m / 1000, p / 1000, s / NR / 1000 }'
}
# kmem: "Percpu Slab SUnreclaim KReclaimable" from /proc/meminfo, kB ("-"
# for a field this kernel does not have)
KMEM_FIELDS="Percpu Slab SUnreclaim KReclaimable"
kmem() {
	awk -v f="$KMEM_FIELDS" '{ v[$1] = $2 }
		END { n = split(f, k, " "); for (i = 1; i <= n; i++) printf "%s%s", (k[i] ":") in v ? v[k[i] ":"] : "-", i < n ? " " : "\n" }' /proc/meminfo
}
# kmem_delta BEFORE AFTER [DIV]: (after - before) per field, divided by DIV
kmem_delta() {
	awk -v b="$1" -v a="$2" -v d="${3:-}" 'BEGIN {
		n = split(b, x, " "); split(a, y, " ")
		for (i = 1; i <= n; i++) {
			if (x[i] == "-" || y[i] == "-") s = "-"
			else if (d == "") s = sprintf("%+d", y[i] - x[i])
			else if (d > 0) s = sprintf("%.2f", (y[i] - x[i]) / d)
			else s = "-"
			printf "%s%s", s, i < n ? " " : "\n"
		}
	}'
}

# the usual way's cgroup in every hierarchy cgpool places a job in: memory
# and pids, wherever they are, and a hybrid host's controller-less cgroup2
naive_dirs=
for mnt in $(awk '$3 == "cgroup2" || ($3 == "cgroup" && $4 ~ /(^|,)(memory|pids)(,|$)/) { print $2 }' /proc/mounts); do
	d="$mnt$T_OWN/cgpool-bench-$$"
	mkdir -p "$d" || hard_error "mkdir $d"
	naive_dirs="$naive_dirs $d"
done
# on v2 the runs get memory (and pids) cgroups of their own only with the
# controllers enabled for them
if [ "$T_MEMORY" = v2 ]; then
	for c in memory pids; do
		grep -qw "$c" "$T_MEMMNT$T_OWN/cgpool-bench-$$/cgroup.controllers" || continue
		echo "+$c" > "$T_MEMMNT$T_OWN/cgpool-bench-$$/cgroup.subtree_control" || hard_error "enable $c for the runs"
	done
fi
before=$(dying_memcgs)
kb0=$(kmem)
echo "0 0" > "$T_DIR/naive.dying"
i=0
while [ $i -lt "$N" ]; do
	t=$(ns)
	for d in $naive_dirs; do mkdir "$d/run$i"; done
	sh -c 'r=$1 t=$2; shift 2; for d; do echo $$ > "$d/$r/cgroup.procs" || exit 1; done; cat "$t/temp" >> "$t/log"' \
		sh "run$i" "$T_DIR" $naive_dirs
	for d in $naive_dirs; do rmdir "$d/run$i"; done
	echo $(( $(ns) - t )) >> "$T_DIR/naive.ns"
	i=$((i + 1))
	# the count so far, outside the timed part (the last one after the sleep)
	[ $((i % EVERY)) -eq 0 ] && [ $i -lt "$N" ] && echo "$i $(( $(dying_memcgs) - before ))" >> "$T_DIR/naive.dying"
done
for d in $naive_dirs; do rmdir "$d"; done
sleep 1 # RCU callbacks and the offline work of the last removals
naive_dying=$(( $(dying_memcgs) - before ))
naive_kmem=$(kmem_delta "$kb0" "$(kmem)")
echo "$N $naive_dying" >> "$T_DIR/naive.dying"

start_daemon
probe_verdict > /dev/null # the probe removes a cgroup of its own: let it settle
before=$(dying_memcgs)
kb0=$(kmem)
echo "0 0" > "$T_DIR/cgpool.dying"
i=0
while [ $i -lt "$N" ]; do
	t=$(ns)
	"$CGPOOLCTL" exec web -- sh -c 'cat "$1/temp" >> "$1/log2"' sh "$T_DIR"
	echo $(( $(ns) - t )) >> "$T_DIR/cgpool.ns"
	i=$((i + 1))
	[ $((i % EVERY)) -eq 0 ] && [ $i -lt "$N" ] && echo "$i $(( $(dying_memcgs) - before ))" >> "$T_DIR/cgpool.dying"
done
sleep 1
cgpool_dying=$(( $(dying_memcgs) - before ))
cgpool_kmem=$(kmem_delta "$kb0" "$(kmem)")
echo "$N $cgpool_dying" >> "$T_DIR/cgpool.dying"
runs=$("$CGPOOLCTL" --json status web | json runs)

set -- $(stats "$T_DIR/naive.ns"); nm=$1 np=$2 na=$3
set -- $(stats "$T_DIR/cgpool.ns"); cm=$1 cp=$2 ca=$3
cat <<EOR
machine: $(nproc) cores, $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r), memory controller on cgroup $T_MEMORY
restarts: $N (job: append a 4 KiB file to a log); usual way's cgroups in: $(echo $naive_dirs | sed "s|$T_OWN/cgpool-bench-$$||g")
                 median_us  p99_us  mean_us  dying_memcgs_added
usual way        $nm $np $na $naive_dying
cgpoolctl exec   $cm $cp $ca $cgpool_dying
ratio cgpool/usual (median latency): $(awk "BEGIN { printf \"%.2f\", $cm / $nm }")
runs counted by cgpool: $runs
kernel memory added, kB (/proc/meminfo after - before): $KMEM_FIELDS
usual way        $naive_kmem
cgpoolctl exec   $cgpool_kmem
usual way, per dying memcg: $(kmem_delta "0 0 0 0" "$naive_kmem" "$naive_dying")
EOR

# ---- the raw data, then the plots
D=$BENCH_OUT/restart
{
	bench_head restart "label: host" "n: $N" "every: $EVERY" \
		"columns: restart, dying memcgs added so far: usual way, cgpoolctl exec"
	awk 'NR == FNR { u[$1] = $2; next } { print $1, (($1 in u) ? u[$1] : "-"), $2 }' \
		"$T_DIR/naive.dying" "$T_DIR/cgpool.dying"
} > "$D.dying.dat"
{
	bench_head restart "label: host" "n: $N" "what: restart (a job process started) in its cgroup" \
		"columns: restart, latency us: usual way, cgpoolctl exec"
	awk 'NR == FNR { u[FNR] = $1; next } { printf "%d %.1f %.1f\n", FNR, u[FNR] / 1000, $1 / 1000 }' \
		"$T_DIR/naive.ns" "$T_DIR/cgpool.ns"
} > "$D.lat.dat"
echo "data: $D.dying.dat $D.lat.dat"
if [ "${BENCH_DATA_PRINT:-no}" = yes ]; then
	for f in "$D.dying.dat" "$D.lat.dat"; do
		echo "BENCHDATA-BEGIN ${f##*/}"
		cat "$f"
		echo "BENCHDATA-END"
	done
fi
bench_plot dying latency
rm -f "$T_DIR/log" "$T_DIR/log2"
T_FAILS=0
