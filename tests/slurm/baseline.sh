#!/bin/sh
# The baseline cgpool's Slurm plug-in is measured against: CGPOOL_SLURM_JOBS
# (200) short jobs, one after another, under Slurm's own task/cgroup +
# proctrack/cgroup with ConstrainRAMSpace=yes leave at least two dying memory
# cgroups each (user, job, step and task groups, pinned by the page cache the
# job wrote); the same jobs with Slurm making no cgroups at all (the cluster
# cgpool's plug-in runs in, here without the plug-in) put their tasks in no
# memory cgroup of Slurm's. Prints for both: dying memory cgroups added,
# jobs/s, and the median submit-to-end time of a job.
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "${top_srcdir:-.}/tests/slurm/lib.sh"
[ "$T_MEMORY" = v1 ] || skip "Slurm's cgroup/v1 variant needs the memory controller on cgroup v1"
slurm_have
dying_count_lock

N=${CGPOOL_SLURM_JOBS:-200}

# matches STRING REGEX: STRING matches REGEX (expr's, anchored at the start)
matches() { expr "$1" : "$2" > /dev/null; }

# run_variant VARIANT: start the cluster, run the jobs, stop it; sets
# R_DYING (dying memory cgroups added), R_MS (all jobs), R_P50, R_P90,
# R_MAX (ms a job)
run_variant() {
	slurm_start "$1"
	before=$(dying_memcgs)
	t0=$(date +%s%N)
	if ! slurm_jobs "$N"; then
		fail "$1: a job failed"
		finish
		exit 1
	fi
	R_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
	wait_for 10 test "$(slurm_job_cgroups)" = 0 || echo "warning: $1: job cgroups left after 10 s" >&2
	after=$(dying_memcgs)
	R_DYING=$((after - before))
	R_P50=$(slurm_pct "$T_DIR/jobs.ms" 50)
	R_P90=$(slurm_pct "$T_DIR/jobs.ms" 90)
	R_MAX=$(slurm_pct "$T_DIR/jobs.ms" 100)
	check "$1: $N jobs wrote $((N * 4)) KiB" test "$(wc -c < "$T_DIR/jobs-$1.log")" -eq $((N * 4096))
	# where a task runs: below the test's cgroup with Slurm's groups, in no
	# group of Slurm's without them
	memcg=$(slurm_task_memcg)
	case $1 in
	slurm-cgroup)
		check "$1: the task's memory cgroup $memcg is Slurm's, below $T_OWN" \
			matches "$memcg" "$T_OWN/$S_CGNAME/slurm.*/job_[0-9]*/step_0/task_0\$" ;;
	none)
		check "$1: the task's memory cgroup $memcg is none of Slurm's" \
			test -n "$memcg" -a "${memcg#*/slurm}" = "$memcg" ;;
	esac
	slurm_stop
	check "$1: Slurm's cgroups removed" test -z "$(slurm_cg_dirs | while read -r c d; do [ -d "$d" ] && echo "$d"; done)"
	echo "$1: $N jobs: dying memcgs +$R_DYING ($(awk -v d="$R_DYING" -v n="$N" 'BEGIN { printf "%.2f", d / n }') a job)," \
		"$(awk -v n="$N" -v ms="$R_MS" 'BEGIN { printf "%.1f", n * 1000 / ms }') jobs/s, submit to end p50 $R_P50 ms, p90 $R_P90 ms, max $R_MAX ms"
}

run_variant slurm-cgroup
check "slurm-cgroup: at least 2 dying memcgs a job ($R_DYING for $N jobs)" test "$R_DYING" -ge $((2 * N))
run_variant none
finish
