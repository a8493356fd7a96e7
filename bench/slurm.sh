#!/bin/sh
# bench/slurm.sh [N] - N short Slurm jobs (srun, each appending 4 KiB of a file
# to a log) on a one-node cluster on loopback (tests/slurm/lib.sh), three
# ways in one run on this machine: Slurm making no cgroups (no plug-in), the
# same with cgpool's SPANK plug-in placing every task in the job's slot, and
# Slurm's own task/cgroup + proctrack/cgroup with ConstrainRAMSpace=yes. For
# each: submit-to-end p50/p90 of a job, the ratio of p50 to the no-plug-in
# run, dying memory cgroups added and memory cgroups made. Run from a built
# checkout as root.
#   sh bench/slurm.sh 500
N=${1:-200}
. "$(dirname "$0")/common.sh"
top_builddir=$top_srcdir
. "$top_srcdir/tests/slurm/lib.sh"
slurm_have
PLUGIN=$top_srcdir/src/slurm/.libs/cgpool.so
[ -f "$PLUGIN" ] || hard_error "$PLUGIN not built (configure with libslurm-dev installed, then make)"
[ "$T_MEMORY" = v1 ] || echo "note: memory controller not on v1: Slurm's cgroup/v1 variant is skipped"
dying_count_lock

memcgs() { awk '$1 == "memory" { print $3 }' /proc/cgroups; }
# run VARIANT LABEL [PLUGSTACK_LINE]: prints one line; sets P50
run() {
	slurm_start "$1" "$3" || hard_error "$2: the cluster did not start"
	made0=$(grep -c "created, warm" "$T_DIR/daemon.log")
	d0=$(dying_memcgs)
	slurm_jobs "$N" || hard_error "$2: a job failed"
	sleep 1
	d1=$(dying_memcgs)
	P50=$(slurm_pct "$T_DIR/jobs.ms" 50)
	made=$(( $(grep -c "created, warm" "$T_DIR/daemon.log") - made0 ))
	[ "$2" = cgpool ] || made="$N x (Slurm's own)"
	[ "$2" = none ] && made=0
	printf '%-14s p50 %4s ms  p90 %4s ms  x%-5s  dying memcgs +%-5s  memcgs made %s\n' "$2" "$P50" \
		"$(slurm_pct "$T_DIR/jobs.ms" 90)" "$(awk -v a="$P50" -v b="${BASE:-$P50}" 'BEGIN { printf "%.2f", a / b }')" \
		$((d1 - d0)) "$made"
	slurm_stop
}

write_config "[pool]
warm = 2
idle_timeout = 1h"
start_daemon
echo "$N jobs a way; $(nproc) CPUs, kernel $(uname -r), memory controller on cgroup $T_MEMORY, $(slurmd -V)"
run none none
BASE=$P50
run cgpool cgpool
[ "$T_MEMORY" = v1 ] && run slurm-cgroup task/cgroup
finish > /dev/null
