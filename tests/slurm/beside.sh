#!/bin/sh
# cgpool beside Slurm's own cgroups, set up as conf/slurm/beside/ ships it
# (proctrack/cgroup, task/cgroup with ConstrainCores and ConstrainDevices,
# no memory cgroup of Slurm's) on the real one-node cluster: every task is in
# Slurm's cpuset group with its job's CPUs and in the job's cgpool memory
# slot; CGPOOL_SLURM_BESIDE_JOBS (100) jobs add no dying memory cgroup and
# make no memory cgroup of Slurm's; scancel kills a job's setsid children
# through Slurm's freezer; scontrol suspend stops what a job daemonized
# (Slurm's freezer), resume lets it go on; an OOM kill is OUT_OF_MEMORY; slurmd's log has no
# error of the plug-in. Then the same cluster with ConstrainRAMSpace=yes: the
# plug-in says once, at slurmd's start, that the setup would fight it.
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "${top_srcdir:-.}/tests/slurm/lib.sh"
[ "$T_MEMORY" = v1 ] || skip "the beside setup is for nodes with the memory controller on cgroup v1"
slurm_have
slurm_have_plugins
for c in cpuset freezer devices; do
	awk -v c="$c" '$3 == "cgroup" && $4 ~ "(^|,)" c "(,|$)" { f = 1 } END { exit !f }' /proc/mounts ||
		skip "no v1 $c hierarchy (Slurm's task/cgroup and proctrack/cgroup need it)"
done
command -v python3 > /dev/null || skip "python3 not found (the memory hog of the OOM check)"
N=${CGPOOL_SLURM_BESIDE_JOBS:-100}
WARM=2

# cgpool lines at error level in slurmd's log
plugin_errors() { grep -c "error: cgpool" "$S_DIR/slurmd.log" 2> /dev/null || true; }

write_config "[pool]
warm = $WARM
idle_timeout = 1h"
start_daemon
slurm_start beside || { fail "the cluster did not start with the beside setup"; finish; exit 1; }

# ---- a task: Slurm's cpuset with the job's CPUs, cgpool's memory slot
srun -Q -c1 sh -c 'cat /proc/self/cgroup
c=$(sed -n "s/^[0-9]*:cpuset://p" /proc/self/cgroup)
echo "group-cpus $(cat /sys/fs/cgroup/cpuset$c/cpuset.cpus)"
echo "allowed $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"' > "$T_DIR/task.out" 2>&1
cat "$T_DIR/task.out"
cpuset=$(sed -n 's/^[0-9]*:cpuset://p' "$T_DIR/task.out")
memcg=$(sed -n 's/^[0-9]*:memory://p' "$T_DIR/task.out")
freezer=$(sed -n 's/^[0-9]*:freezer://p' "$T_DIR/task.out")
gcpus=$(sed -n 's/^group-cpus //p' "$T_DIR/task.out")
allowed=$(sed -n 's/^allowed //p' "$T_DIR/task.out")
check "the task is in Slurm's cpuset group of its step ($cpuset)" \
	sh -c "echo '$cpuset' | grep -q '/job_[0-9]*/step_0'"
check "the task is in Slurm's freezer group of its step ($freezer)" \
	sh -c "echo '$freezer' | grep -q '/job_[0-9]*/step_0'"
check "the task's memory cgroup is a cgpool slot ($memcg)" \
	sh -c "echo '$memcg' | grep -q '/cgpool-$T_NAME-[0-9]*/slot-[0-9]*/run\$'"
ncpus=$(echo "$gcpus" | awk -F, '{ n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }')
check "its cpuset group has the job's one CPU ($gcpus)" test "$ncpus" = 1
check "the task may run on that CPU only ($allowed)" test "$allowed" = "$gcpus"

# ---- many jobs: no dying memcg, no memory cgroup of Slurm's, slots recycled
dying_count_lock
made0=$(created)
before=$(dying_memcgs)
slurm_jobs "$N" || fail "a job failed"
sleep 1
after=$(dying_memcgs)
made=$(( $(created) - made0 ))
echo "$N jobs (p50 $(slurm_pct "$T_DIR/jobs.ms" 50) ms); dying memcgs $before -> $after; slots made meanwhile $made"
check "$N jobs wrote $((N * 4)) KiB" test "$(wc -c < "$T_DIR/jobs-beside.log")" -eq $((N * 4096))
check "$N jobs: dying memcgs added $((after - before)) (at most 2)" test $((after - before)) -le 2
check "$N jobs: no memory cgroup of Slurm's ($(slurm_job_cgroups) job groups)" test "$(slurm_job_cgroups)" = 0
check "$N jobs: $made slots made (at most warm $WARM + 8 at once)" test "$made" -le $((WARM + 8))

# ---- scancel kills what a job left running, through Slurm's freezer
sj=$(sbatch --parsable --output=/dev/null --wrap 'setsid sleep 3011 < /dev/null > /dev/null 2>&1 & sleep 300')
wait_for 20 sh -c "[ \$(pgrep -fc '^sleep 3011\$') = 1 ]" || fail "the batch job's setsid child did not start"
frz=$(sed -n 's/^[0-9]*:freezer://p' "/proc/$(pgrep -f '^sleep 3011$' | head -n 1)/cgroup" 2> /dev/null)
check "the setsid child is in Slurm's freezer group of the job ($frz)" sh -c "echo '$frz' | grep -q '/job_$sj/'"
scancel "$sj"
wait_for 5 sh -c "[ \$(pgrep -fc '^sleep 3011\$') = 0 ]"
check "scancel: the job's setsid child is dead within 5 s" test "$(strays 3011)" = 0
wait_for 10 field_is "slurm.$sj" released true
check "scancel: its slot idle and released" sh -c "[ '$(status_of "slurm.$sj" state)' = idle ] && [ '$(status_of "slurm.$sj" released)' = true ]"

# ---- scontrol suspend stops what a job daemonized out of its process tree
# too, on every release: Slurm's freezer group holds it (22.05's task/cgpool
# freezes the slot as well; 24.11 and later call no task plug-in then)
lines() { { wc -l < "$T_DIR/susp.log"; } 2> /dev/null || echo 0; }
sp=$(sbatch --parsable --output=/dev/null --wrap "setsid sh -c '(while :; do echo x >> $T_DIR/susp.log; sleep 0.1; done) &' < /dev/null > /dev/null 2>&1; exec sleep 3013")
wait_for 20 sh -c "[ \$({ wc -l < '$T_DIR/susp.log'; } 2> /dev/null || echo 0) -ge 5 ]"
check "suspend: job $sp's daemonized writer writes ($(lines) lines)" test "$(lines)" -ge 5
scontrol suspend "$sp"
sleep 3 # slurmstepd's own SIGSTOP comes 2 s after its SIGTSTP
a=$(lines)
sleep 2
check "suspend (Slurm $S_VER): the daemonized writer is stopped ($a, then $(lines) lines 2 s later)" test "$(lines)" -eq "$a"
scontrol resume "$sp"
sleep 2
check "resume: the writer goes on ($a, then $(lines) lines)" test "$(lines)" -gt "$a"
scancel "$sp"
wait_for 10 sh -c "! pgrep -f '^sleep 3013\$' > /dev/null && ! pgrep -f '[s]usp.log' > /dev/null"
check "suspend: nothing of the job left after scancel" sh -c "! pgrep -f '[s]usp.log' > /dev/null"

# ---- an OOM kill in the slot is Slurm's OUT_OF_MEMORY
out=$(srun -Q --mem=64M sh -c "echo \$SLURM_JOB_ID; exec python3 -c '$(hog 256)'" 2> "$T_DIR/hog.err")
oomjob=$(echo "$out" | head -n 1)
wait_for 10 sh -c "[ \"\$(scontrol -o show job $oomjob | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')\" = OUT_OF_MEMORY ]"
check "an OOM-killed job: OUT_OF_MEMORY (is $(job_state "$oomjob"))" test "$(job_state "$oomjob")" = OUT_OF_MEMORY
check "Slurm's line in the job's stderr" grep -Eq "Detected [1-9][0-9]* oom-kill event\\(s\\) in StepId=$oomjob\\.0\\." "$T_DIR/hog.err"
check "no error of the plug-in in slurmd's log ($(plugin_errors))" test "$(plugin_errors)" = 0
slurm_stop

# ---- a setup that would fight the plug-in is named once, at slurmd's
# start; and swap=50: the job's memory+swap is its memory and half again
S_EXTRA_CGROUP_CONF="ConstrainRAMSpace=yes"
slurm_start beside "required cgpool.so swap=50" ||
	{ fail "the cluster did not start with ConstrainRAMSpace=yes"; finish; exit 1; }
srun -Q true && srun -Q true
check "ConstrainRAMSpace=yes: one line in slurmd's log ($(plugin_errors))" test "$(plugin_errors)" = 1
check "... that names the setting" grep -q "error: cgpool: task/cgroup with ConstrainRAMSpace=yes" "$S_DIR/slurmd.log"
if [ -f "$T_MEMMNT$T_OWN/memory.memsw.limit_in_bytes" ]; then
	sw=$(srun -Q --mem=64M sh -c 'c=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)
		cat "$0$c/memory.limit_in_bytes" "$0$c/memory.memsw.limit_in_bytes"' "$T_MEMMNT" | tr '\n' ' ')
	check "swap=50, --mem=64M: memory 64 MiB, memory+swap 96 MiB ($sw)" test "$sw" = "67108864 100663296 "
else
	echo "no swap accounting on this kernel: the swap limit is not checked"
fi
finish
