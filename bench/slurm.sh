#!/bin/sh
# bench/slurm.sh [N [STEPS]] - N short Slurm jobs (srun, each appending 4 KiB
# of a file to a log) on a one-node cluster on loopback (tests/slurm/lib.sh),
# four ways in one run on this machine: Slurm making no cgroups (no plug-in),
# cgpool alone (conf/slurm/alone: the plug-ins place every task in the job's
# slot), the same with favordynmods = yes (cgpool fdm, where the kernel has
# it; the cgroup2 mount's options are put back after), cgpool beside Slurm's cgroups (conf/slurm/beside: proctrack/cgroup,
# task/cgroup for cores and devices), and Slurm's own task/cgroup +
# proctrack/cgroup with ConstrainRAMSpace=yes. For each: submit-to-end
# p50/p90 of a job, the ratio of p50 to the no-plug-in run, dying memory
# cgroups added and memory cgroups made. Then, with cgpool alone, a burst:
# STEPS (100) steps of one batch job started at once (srun --overlap), and
# how many of them failed. Run from a built checkout as root.
#   sh bench/slurm.sh 500
# Each job's submit-to-end time goes to $BENCH_OUT (default bench/out;
# bench/data.sh), a file per way: slurm-1-none.jobs.dat, slurm-2-cgpool...
# (job, ms; those of an earlier run are removed first), and bench/plot.sh
# draws slurm-start.png there (skipped without gnuplot, or with BENCH_PLOT=no).
# SLURM_BENCH_FDM=no leaves the favordynmods way out (the host's cgroup2
# mount is not reconfigured: tests/tree/bench-plot.sh, beside other tests).
N=${1:-200}
STEPS=${2:-100}
. "$(dirname "$0")/common.sh"
top_builddir=$top_srcdir
. "$top_srcdir/tests/slurm/lib.sh"
slurm_have
PLUGIN=$top_srcdir/src/slurm/.libs/cgpool.so
[ -f "$PLUGIN" ] || hard_error "$PLUGIN not built (configure with libslurm-dev installed, then make)"
slurm_have_plugins
[ "$T_MEMORY" = v1 ] || echo "note: memory controller not on v1: Slurm's cgroup/v1 variant is skipped"
dying_count_lock
bench_out || hard_error "no data directory"
rm -f "$BENCH_OUT"/slurm-*.jobs.dat
WAY=0

memcgs() { awk '$1 == "memory" { print $3 }' /proc/cgroups; }
# run VARIANT LABEL [PLUGSTACK_LINE]: prints one line; sets P50
run() {
	slurm_start "$1" "$3" || hard_error "$2: the cluster did not start"
	made0=$(grep -c "created, warm" "$T_DIR/daemon.log")
	d0=$(dying_memcgs)
	slurm_jobs "$N" || hard_error "$2: a job failed"
	sleep 1
	d1=$(dying_memcgs)
	WAY=$((WAY + 1))
	case $2 in
	none) setup="no cgroups (no plug-in)" ;;
	cgpool) setup="cgpool alone" ;;
	"cgpool fdm") setup="cgpool alone, favordynmods" ;;
	"cgpool beside") setup="cgpool beside Slurm's cgroups" ;;
	task/cgroup) setup="Slurm's task/cgroup + proctrack/cgroup" ;;
	*) setup=$2 ;;
	esac
	{
		bench_head slurm "setup: $setup" "n: $N" "slurm: $(slurmd -V)" \
			"dying: $((d1 - d0))" "columns: job, srun's submit to end, ms"
		awk '{ print NR, $1 }' "$T_DIR/jobs.ms"
	} > "$BENCH_OUT/slurm-$WAY-$(echo "$2" | tr -c 'A-Za-z0-9\n' '-').jobs.dat"
	P50=$(slurm_pct "$T_DIR/jobs.ms" 50)
	made=$(( $(grep -c "created, warm" "$T_DIR/daemon.log") - made0 ))
	case $2 in cgpool*) ;; *) made="$N x (Slurm's own)" ;; esac
	[ "$2" = none ] && made=0
	printf '%-14s p50 %4s ms  p90 %4s ms  x%-5s  dying memcgs +%-5s  memcgs made %s\n' "$2" "$P50" \
		"$(slurm_pct "$T_DIR/jobs.ms" 90)" "$(awk -v a="$P50" -v b="${BASE:-$P50}" 'BEGIN { printf "%.2f", a / b }')" \
		$((d1 - d0)) "$made"
	[ "$2" = cgpool ] && burst
	slurm_stop
}

# burst: STEPS steps of one batch job at once; prints the time and failures
burst() {
	b_t0=$(date +%s%N)
	b_job=$(sbatch --parsable --wait --mem=8G --output="$T_DIR/burst.out" --wrap "
		for i in \$(seq $STEPS); do (srun --overlap -Q -n1 true || echo failed) & done; wait")
	b_ms=$(( ($(date +%s%N) - b_t0) / 1000000 ))
	printf '%-14s %s steps of one job at once: %s ms, %s failed (job %s %s)\n' burst "$STEPS" "$b_ms" \
		"$(grep -c failed "$T_DIR/burst.out")" "$b_job" "$(scontrol -o show job "$b_job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')"
}

write_config "[pool]
warm = 2
idle_timeout = 1h"
start_daemon
echo "$N jobs a way; $(nproc) CPUs, kernel $(uname -r), memory controller on cgroup $T_MEMORY, $(slurmd -V)"
run none none
BASE=$P50
run cgpool cgpool
# cgpool again with favordynmods = yes (Linux 6.0+), then the cgroup2
# mount's options as they were (a reconfiguration with the old ones: cgpoold
# never takes the option away)
U=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
U_OPTS=$(awk -v m="$U" '$5 == m { sub(/.* - cgroup2 [^ ]* /, ""); print; exit }' /proc/self/mountinfo)
fdm_restore() {
	python3 - "$U" "$U_OPTS" << 'EOP'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(433, -100, sys.argv[1].encode(), 1)  # fspick
for o in sys.argv[2].split(","):
    if o not in ("rw", "ro", "favordynmods"):
        libc.syscall(431, fd, 0, o.encode(), None, 0)  # fsconfig SET_FLAG
if fd < 0 or libc.syscall(431, fd, 7, None, None, 0) < 0:  # RECONFIGURE
    sys.exit("the cgroup2 mount's options not put back: " + os.strerror(ctypes.get_errno()))
EOP
}
case ,$U_OPTS, in
*,favordynmods,*) echo "note: $U has favordynmods already: the cgpool run above had it" ;;
*)
	if [ -n "$U" ] && command -v python3 > /dev/null && [ "${SLURM_BENCH_FDM:-yes}" != no ]; then
		stop_daemon
		write_config "[daemon]
favordynmods = yes
[pool]
warm = 2
idle_timeout = 1h"
		start_daemon
		grep -q "reconfigured with favordynmods" "$T_DIR/daemon.log" &&
			run cgpool "cgpool fdm"
		fdm_restore
	fi
	;;
esac
[ "$T_MEMORY" = v1 ] && run beside "cgpool beside"
[ "$T_MEMORY" = v1 ] && run slurm-cgroup task/cgroup
echo "data: $BENCH_OUT/slurm-*.jobs.dat"
bench_plot slurm
finish > /dev/null
