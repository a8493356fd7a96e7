#!/bin/sh
# The limit of tasks per step (CGPOOL_MAX_PIDS local tasks of a step on a
# node; doc/slurm.md): a step of 1,100 tasks on the one node is placed whole
# in one Attach (every task's memory cgroup is the job's slot; cgpoold took
# at most 1,024 pids an Attach before); a step of CGPOOL_MAX_PIDS + 1 tasks
# fails before any of them runs its program, with the reason in the job's
# stderr, and the node stays up. The node has 2 CPUs: the steps overcommit
# them (srun --overcommit, MaxTasksPerNode raised). slurmstepd holds about
# six descriptors a task while it starts them: the second step needs a hard
# RLIMIT_NOFILE for that, else that part is skipped (and said so).
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "${top_srcdir:-.}/tests/slurm/lib.sh"
slurm_have
slurm_have_plugins
LIMIT=$(sed -n 's/^#define CGPOOL_MAX_PIDS \([0-9]*\).*/\1/p' "${top_srcdir:-.}/src/lib/cgpool.h")
[ -n "$LIMIT" ] || hard_error "no CGPOOL_MAX_PIDS in src/lib/cgpool.h"
OVER=$((LIMIT + 1))
NOFILE=$((OVER * 6 + 1024))
[ "$(cat /proc/sys/kernel/pid_max)" -gt $((OVER * 2 + 1000)) ] || skip "pid_max is too low for $OVER tasks"
# slurmd and its slurmstepd inherit this shell's limit
ulimit -Hn "$NOFILE" 2> /dev/null
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge "$NOFILE" ] && ulimit -n "$NOFILE" 2> /dev/null

write_config "[pool]
warm = 1"
start_daemon
S_EXTRA_CONF="MaxTasksPerNode=$((OVER + 10))"
slurm_start cgpool || { fail "the cluster did not start with the plug-ins"; finish; exit 1; }

# ---- 1,100 tasks: one slot for all
t0=$(date +%s%N)
srun -Q -O -n1100 --mem=2G sh -c 'echo "$SLURM_JOB_ID $(sed -n "s/^[0-9]*:memory://p" /proc/$$/cgroup)"' \
	> "$T_DIR/1100.out" 2> "$T_DIR/1100.err"
rc=$?
echo "1,100 tasks: srun exit $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
head -n 3 "$T_DIR/1100.err"
check "a step of 1,100 tasks runs (srun exit $rc)" [ "$rc" -eq 0 ]
check "every one of the 1,100 tasks ran ($(wc -l < "$T_DIR/1100.out"))" [ "$(wc -l < "$T_DIR/1100.out")" -eq 1100 ]
job=$(head -n 1 "$T_DIR/1100.out" | cut -d' ' -f1)
slot=$(sort -u "$T_DIR/1100.out")
echo "their memory cgroups: $(echo "$slot" | cut -d' ' -f2 | sort -u | tr '\n' ' ')"
check "all of them in one memory cgroup" [ "$(echo "$slot" | wc -l)" -eq 1 ]
path=$(status_of "slurm.$job" path)
check "that cgroup is the slot of slurm.$job ($path)" \
	sh -c 'case "$1" in *"$2") exit 0 ;; esac; exit 1' _ "$path" "${slot#* }"

# ---- one task over the limit: nothing of the step runs, the job's stderr says why
if [ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge "$NOFILE" ]; then
	rm -f "$T_DIR/ran"
	t0=$(date +%s%N)
	srun -Q -O -n$OVER --mem=4G --input=none --output=/dev/null --error="$T_DIR/over.task.err" \
		sh -c "echo ran >> '$T_DIR/ran'" > "$T_DIR/over.out" 2> "$T_DIR/over.err"
	rc=$?
	echo "$OVER tasks: srun exit $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
	check "a step of $OVER tasks fails (srun exit $rc)" [ "$rc" -ne 0 ]
	check "none of its tasks ran ($(cat "$T_DIR/ran" 2> /dev/null | wc -l))" [ ! -e "$T_DIR/ran" ]
	check "the job's stderr says why" grep -q \
		"cgpool: job [0-9]*: $OVER tasks of the step on this node, and cgpool places at most $LIMIT" \
		"$T_DIR/over.task.err"
	check "the node stays up ($(sinfo -h -N -o %t | head -n 1))" sh -c 'sinfo -h -N -o %t | grep -qv drain'
	check "a step after it runs" srun -Q true
else
	echo "SKIPPED: a step of $OVER tasks: slurmstepd needs about $NOFILE descriptors, the hard limit here is $(ulimit -Hn)"
fi
finish
