#!/bin/sh
# cgpool's Slurm plug-ins on a real one-node Slurm cluster, set up as
# conf/slurm/alone/ ships it (Slurm makes no cgroups): every task of a job
# lands in the job's slot before it runs; CGPOOL_SLURM_JOBS (200) short jobs
# leave no dying memory cgroup and make no more slots than warm + the jobs
# running at once; a key comes from the job's credential only (another user
# who sets SLURM_ARRAY_* to a running job's values gets a slot of its own);
# the job's memory is one limit on one slot for all its tasks; what a job
# leaves behind (setsid strays, batch or srun) is killed when it ends and its
# slot released, however long it ran; scontrol suspend stops what a job
# daemonized (task/cgpool freezes its slot; on Slurm 24.11 and later, which
# call no task plug-in then, the job's task is stopped and what it
# daemonized runs on), resume lets it go on; an
# OOM-killed job is OUT_OF_MEMORY with
# Slurm's line; with the daemon down a required plug-in fails the job (srun
# and batch, with the reason, the node stays up) and an optional one lets it
# run with a warning, neither hangs; PrologFlags=Contain jobs run.
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "${top_srcdir:-.}/tests/slurm/lib.sh"
slurm_have
slurm_have_plugins
command -v python3 > /dev/null || skip "python3 not found (the memory hog of the OOM checks)"
N=${CGPOOL_SLURM_JOBS:-200}
WARM=2

# the v1 or v2 memory limit of the key's slot, in bytes
limit_of() {
	l_p=$(status_of "$1" path)
	cat "$l_p/memory.limit_in_bytes" 2> /dev/null || cat "$l_p/memory.max"
}
node_state() { sinfo -h -N -o %t | head -n 1; }

# a step that outlives the daemon's idle connections (1 s here) is released
# at its end all the same: no connection lives across a step
write_config "connection_idle_timeout = 1s
[pool]
warm = $WARM
idle_timeout = 1h"
start_daemon
slurm_start cgpool || { fail "the cluster did not start with the plug-ins"; finish; exit 1; }

# ---- a node health check: the daemon answers and can place
"$CGPOOLCTL" health > "$T_DIR/health.out"
check "cgpoolctl health: 0 with the daemon up ($(cat "$T_DIR/health.out"))" test $? -eq 0

# ---- placement: the task's memory cgroup is a slot of the pool
memcg=$(slurm_task_memcg)
echo "a task's memory cgroup: $memcg"
check "a job's task runs in a slot below the pool root ($memcg)" \
	sh -c "echo '$memcg' | grep -q '/cgpool-$T_NAME-[0-9]*/slot-[0-9]*/run\$'"
job=$(srun -Q sh -c 'echo $SLURM_JOB_ID')
wait_for 5 field_is "slurm.$job" released true
st=$("$CGPOOLCTL" --json status "slurm.$job")
check "the job's key slurm.$job is known, idle" test "$(echo "$st" | json state)" = idle
check "the job's key slurm.$job is released when the job ends" test "$(echo "$st" | json released)" = true

# ---- many jobs: no dying memcg, slots recycled
dying_count_lock
made0=$(created)
before=$(dying_memcgs)
t0=$(date +%s%N)
slurm_jobs "$N" || fail "a job failed"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 1
after=$(dying_memcgs)
made=$(( $(created) - made0 ))
echo "$N jobs in $ms ms (p50 $(slurm_pct "$T_DIR/jobs.ms" 50) ms); dying memcgs $before -> $after; slots made meanwhile $made"
check "$N jobs wrote $((N * 4)) KiB" test "$(wc -c < "$T_DIR/jobs-cgpool.log")" -eq $((N * 4096))
# machine-wide count on v1: another process may add one or two meanwhile
check "$N jobs: dying memcgs added $((after - before)) (at most 2)" test $((after - before)) -le 2
# srun returns before slurmstepd ends the step and the daemon sees it exit,
# so the next job may bind while the last one's slot is not free yet
check "$N jobs: $made slots made (at most warm $WARM + 8 at once)" test "$made" -le $((WARM + 8))
exec 9>&- # the count window is over

# ---- --mem is the job's limit; an OOM kill is Slurm's OUT_OF_MEMORY
out=$(srun -Q --mem=64M --cgpool-key=hog sh -c "echo \$SLURM_JOB_ID; exec python3 -c '$(hog 256)'" 2> "$T_DIR/hog.err")
rc=$?
oomjob=$(echo "$out" | head -n 1)
check "a job with --mem=64M allocating 256M fails (rc $rc)" test $rc -ne 0
wait_for 10 sh -c "[ \"\$(scontrol -o show job $oomjob | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')\" = OUT_OF_MEMORY ]"
check "scontrol show job $oomjob: OUT_OF_MEMORY (is $(job_state "$oomjob"))" test "$(job_state "$oomjob")" = OUT_OF_MEMORY
check "Slurm's line in the job's stderr" grep -Eq "Detected [1-9][0-9]* oom-kill event\\(s\\) in StepId=$oomjob\\.0\\." "$T_DIR/hog.err"
ooms=$("$CGPOOLCTL" --json status slurm.0.hog | sed -n 's/.*"oom_kills": *\([0-9]*\).*/\1/p' | head -n 1)
check "its run record shows the OOM kill (oom_kills $ooms)" test "${ooms:-0}" -ge 1
wait_for 5 field_is slurm.0.hog state idle
srun -Q --mem=512M --cgpool-key=hog python3 -c "$(hog 256)"
check "a job with --mem=512M allocating 256M finishes" test $? -eq 0
check "the same key, the same slot: 2 runs" test "$(status_of slurm.0.hog runs)" = 2

# ---- one job, one slot, one limit: two tasks share the job's memory
cgs=$(srun -Q -n2 --mem=200M sh -c 'sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup' | sort -u | wc -l)
check "srun -n2: both tasks in one memory cgroup ($cgs)" test "$cgs" = 1
srun -Q -n1 --mem=200M python3 -c "$(hog 150)" 2> /dev/null
check "one task of 150M in a 200M job finishes" test $? -eq 0
srun -Q -n2 --mem=200M python3 -c "import time; exec('''$(hog 150)'''.replace('sys.exit(0)', 'time.sleep(2)'))" 2> /dev/null
check "two tasks of 150M in a 200M job do not both fit (the limit is the job's)" test $? -ne 0

# two overlapping steps of one batch job: the batch step's slot, the job's limit
echo "import time; exec('''$(hog 150)'''.replace('sys.exit(0)', 'time.sleep(3)'))" > "$T_DIR/hold150.py"
cat > "$T_DIR/overlap.sh" <<EOS
#!/bin/sh
sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup > "$T_DIR/ov.batch"
step() {
	srun -Q -n1 --exact --mem=100M sh -c 'sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup; exec python3 "\$0"' \
		"$T_DIR/hold150.py" > "$T_DIR/ov.\$1" 2>&1 && echo "step \$1 ok" >> "$T_DIR/ov.ok"
}
step a & step b &
wait
EOS
: > "$T_DIR/ov.ok"
sbatch --wait -n2 --mem=200M --output="$T_DIR/overlap.out" "$T_DIR/overlap.sh" > /dev/null
ovs=$(for f in batch a b; do head -n 1 "$T_DIR/ov.$f"; done | sort -u)
echo "overlapping steps: memory cgroups $(echo "$ovs" | tr '\n' ' '); $(tr '\n' ' ' < "$T_DIR/ov.ok")"
check "two overlapping steps of a batch job: in the batch step's slot" \
	sh -c "[ $(echo "$ovs" | wc -l) = 1 ] && echo '$ovs' | grep -q '/slot-[0-9]*/run\$'"
check "two overlapping steps of 150M in a 200M job do not both fit ($(wc -l < "$T_DIR/ov.ok") finished)" \
	test "$(wc -l < "$T_DIR/ov.ok")" -lt 2
check "... an OOM kill in the slot ended a step" grep -q "oom-kill\|Out Of Memory" "$T_DIR/ov.a" "$T_DIR/ov.b"

# ---- the key comes from the credential, not from the user's environment
arr=$(sbatch --parsable --array=7 --mem=512M --output=/dev/null --wrap 'sleep 61')
wait_for 20 sh -c "squeue -h -j ${arr}_7 -o %T | grep -q RUNNING" || fail "the array task ${arr}_7 never ran"
vid=$(squeue -h -j "${arr}_7" -o %A)
wait_for 10 field_is "slurm.$vid" state running || fail "slurm.$vid is not running"
vlimit=$(limit_of "slurm.$vid")
vmemcg=$(sed -n 's/^[0-9]*:memory://p' "/proc/$(pgrep -f '^sleep 61$' | head -n 1)/cgroup")
chmod 755 "$T_DIR"
# (and the daemon's socket, root's uid and name: none of them is read from
# the job's environment)
hmemcg=$(SLURM_ARRAY_JOB_ID=$arr SLURM_ARRAY_TASK_ID=7 CGPOOL_SOCKET=/nonexistent/cgpool.sock \
	SLURM_JOB_UID=0 SLURM_JOB_USER=root SLURM_JOB_GID=0 SLURM_STEP_ID=0 \
	setpriv --reuid=65534 --regid=65534 --clear-groups srun -Q --mem=64M sh -c 'sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup')
echo "victim slurm.$vid: $vmemcg, limit $vlimit; nobody with its array ids: $hmemcg"
check "nobody with SLURM_ARRAY_* of root's running task: a slot of its own" \
	sh -c "[ -n '$hmemcg' ] && [ '$hmemcg' != '$vmemcg' ]"
check "the victim's limit unchanged ($(limit_of "slurm.$vid"))" test "$(limit_of "slurm.$vid")" = "$vlimit"
check "the victim's runs unchanged" test "$(status_of "slurm.$vid" runs)" = 1
check "the victim still runs" test "$(status_of "slurm.$vid" state)" = running
scancel "$arr"

# ---- --cgpool-key: a slot per user, one job at a time
srun -Q --cgpool-key=svc true
wait_for 5 field_is slurm.0.svc state idle
srun -Q --cgpool-key=svc true
check "the same user twice: one slot, 2 runs" test "$(status_of slurm.0.svc runs)" = 2
setpriv --reuid=65534 --regid=65534 --clear-groups srun -Q --cgpool-key=svc true ||
	fail "a job of nobody with --cgpool-key=svc"
n0=$(status_of slurm.0.svc name 2> /dev/null)
check "another user: another key, not slurm.0.svc's slot while that is bound" \
	sh -c "[ -z '$n0' ] || [ '$n0' != '$(status_of slurm.65534.svc name)' ]"
check "the other user's key has 1 run" test "$(status_of slurm.65534.svc runs)" = 1
srun -Q --cgpool-key=busy sleep 5 &
bpid=$!
wait_for 10 field_is slurm.0.busy state running
srun -Q --cgpool-key=busy true 2> "$T_DIR/busy.err"
check "a second job with a named key that runs: refused" test $? -ne 0
check "... with the reason" grep -q "runs another job" "$T_DIR/busy.err"
wait "$bpid"
srun -Q --cgpool-key=../x true 2> "$T_DIR/badname.err"
check "a bad --cgpool-key is refused" test $? -ne 0
grep -q "cgpool-key" "$T_DIR/badname.err" || fail "no message for a bad --cgpool-key: $(cat "$T_DIR/badname.err")"

# ---- what a job leaves behind is killed when it ends, its slot released
srun -Q sh -c 'echo $SLURM_JOB_ID > '"$T_DIR/stray.id"'; setsid sleep 3001 < /dev/null > /dev/null 2>&1 &'
sj=$(cat "$T_DIR/stray.id")
wait_for 5 sh -c "[ \$(pgrep -fc '^sleep 3001\$') = 0 ]"
check "srun: a setsid stray is dead within 5 s of the job's end" test "$(strays 3001)" = 0
wait_for 5 field_is "slurm.$sj" state idle
check "srun: its slot idle" test "$(status_of "slurm.$sj" state)" = idle
check "srun: its key released" test "$(status_of "slurm.$sj" released)" = true
bj=$(sbatch --parsable --wait --output=/dev/null --wrap 'setsid sleep 3002 < /dev/null > /dev/null 2>&1 &')
wait_for 5 sh -c "[ \$(pgrep -fc '^sleep 3002\$') = 0 ]"
check "batch: a setsid stray is dead within 5 s of the job's end" test "$(strays 3002)" = 0
wait_for 5 field_is "slurm.$bj" released true
check "batch: its slot idle and released" sh -c "[ '$(status_of "slurm.$bj" state)' = idle ] && [ '$(status_of "slurm.$bj" released)' = true ]"
made0=$(created)
i=0
while [ $i -lt "$N" ]; do
	srun -Q sh -c 'setsid sleep 3003 < /dev/null > /dev/null 2>&1 &' || { fail "stray job $i failed"; break; }
	i=$((i + 1))
done
wait_for 10 sh -c "[ \$(pgrep -fc '^sleep 3003\$') = 0 ]"
made=$(( $(created) - made0 ))
check "$N jobs with strays: none left ($(strays 3003))" test "$(strays 3003)" = 0
check "$N jobs with strays: $made slots made (at most warm $WARM + 8)" test "$made" -le $((WARM + 8))
# a step longer than the daemon's idle connection timeout (1 s here)
lj=$(srun -Q sh -c 'echo $SLURM_JOB_ID; sleep 3')
wait_for 5 field_is "slurm.$lj" released true
check "a step longer than connection_idle_timeout: released at its end" test "$(status_of "slurm.$lj" released)" = true
grep -q "release.*Broken pipe\|EPIPE" "$S_DIR/slurmd.log" && fail "a release failed in slurmd.log"

# ---- requeue: the job's next run lands in its slot
rq=$(sbatch --parsable --requeue --wrap 'sleep 60' --output=/dev/null)
wait_for 20 field_is "slurm.$rq" state running || fail "requeue: slurm.$rq never ran"
id1=$(status_of "slurm.$rq" cgroup_id)
scontrol requeue "$rq"
wait_for 20 sh -c "squeue -h -j $rq -o %T | grep -q PENDING" || fail "requeue: job $rq not pending again"
wait_for 20 field_is "slurm.$rq" state idle || fail "requeue: the first run of slurm.$rq did not end"
# slurmd refuses a credential made in the second its job's last one was
# revoked (the requeue): start the job again a second later. The main
# scheduling loop runs every 2 s (lib.sh), so it starts soon after.
sleep 2
scontrol update jobid="$rq" starttime=now
wait_for 60 field_is "slurm.$rq" runs 2 || fail "requeue: no second run of slurm.$rq (runs $(status_of "slurm.$rq" runs), job $(squeue -h -j $rq -o %T))"
check "requeued: the second run in the same slot (cgroup_id $id1)" test "$(status_of "slurm.$rq" cgroup_id)" = "$id1"
scancel "$rq"
# ---- scontrol suspend: task/cgpool freezes the job's slot, with what the
# job daemonized out of its process tree (which Slurm's SIGSTOP misses)
lines() { { wc -l < "$T_DIR/susp.log"; } 2> /dev/null || echo 0; }
sp=$(sbatch --parsable --output=/dev/null --wrap "setsid sh -c '(while :; do echo x >> $T_DIR/susp.log; sleep 0.1; done) &' < /dev/null > /dev/null 2>&1; exec sleep 3005")
wait_for 20 sh -c "[ \$({ wc -l < '$T_DIR/susp.log'; } 2> /dev/null || echo 0) -ge 5 ]"
check "suspend: job $sp's daemonized writer writes ($(lines) lines)" test "$(lines)" -ge 5
task=$(pgrep -f '^sleep 3005$' | head -n 1)
scontrol suspend "$sp"
sleep 3 # slurmstepd's own SIGSTOP comes 2 s after its SIGTSTP
a=$(lines)
sleep 2
if [ "$S_SUSPEND_HOOKS" = yes ]; then
	check "suspend: the writer is stopped ($a, then $(lines) lines 2 s later)" test "$(lines)" -eq "$a"
	check "suspend: slurmd's log says task/cgpool froze the job's slot" grep -q "task/cgpool: job $sp: 1 slot(s) frozen" "$S_DIR/slurmd.log"
else
	# Slurm 24.11 and later call no task plug-in on suspend: slurmstepd
	# stops what proctrack/linuxproc tracks (the job's process tree), and
	# what the job daemonized runs on (doc/slurm.md)
	check "suspend: Slurm $S_VER: the job's own task is stopped (state $(ps -o stat= -p "$task"))" \
		sh -c "ps -o stat= -p '$task' | grep -q '^T'"
	check "suspend: ... the writer the job daemonized is not, as doc/slurm.md says ($a, then $(lines) lines 2 s later)" \
		test "$(lines)" -gt "$a"
	check "suspend: ... and no freeze in slurmd's log" sh -c "! grep -q 'task/cgpool: job $sp: .*frozen' '$S_DIR/slurmd.log'"
	a=$(lines)
fi
scontrol resume "$sp"
sleep 2
check "resume: the writer goes on ($a, then $(lines) lines)" test "$(lines)" -gt "$a"
[ "$S_SUSPEND_HOOKS" = yes ] ||
	check "resume: the job's task runs again (state $(ps -o stat= -p "$task"))" sh -c "ps -o stat= -p '$task' | grep -qv '^T'"
scancel "$sp"
wait_for 10 sh -c "! pgrep -f '^sleep 3005\$' > /dev/null && ! pgrep -f '[s]usp.log' > /dev/null"
check "suspend: nothing of the job left after scancel" sh -c "! pgrep -f '[s]usp.log' > /dev/null"

# the refused second job of a running named key fails its task: expected
grep "error.*cgpool\|cgpool.*error" "$S_DIR/slurmd.log" | grep -v "task_init() failed\|cgpool-key" > "$T_DIR/errors"
check "no other cgpool error in slurmd's log" test ! -s "$T_DIR/errors"
cat "$T_DIR/errors"

# ---- the daemon down: required fails the job (srun and batch), the node stays up
stop_daemon
"$CGPOOLCTL" health > /dev/null 2>&1
check "cgpoolctl health: non-zero with the daemon down" test $? -ne 0
t0=$(date +%s)
out=$(timeout 60 srun -Q echo ran 2> "$T_DIR/req.err")
rc=$?
echo "required, daemon down: rc $rc after $(( $(date +%s) - t0 )) s, stdout '$out', stderr: $(cat "$T_DIR/req.err")"
check "required, daemon down: the task does not run, srun fails, no hang" sh -c "[ -z '$out' ] && [ $rc -ne 0 ] && [ $rc -ne 124 ]"
check "required, daemon down: the reason in the job's stderr" grep -q "not placed.*Connection refused (cgpoold at $T_SOCK)" "$T_DIR/req.err"
bf=$(sbatch --parsable --output="$T_DIR/batch.out" --error="$T_DIR/batch.err" --wrap "touch $T_DIR/batch.ran")
wait_for 20 sh -c "squeue -h -j $bf | grep -q . && false || true; [ \"\$(scontrol -o show job $bf | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')\" = FAILED ]"
check "required, daemon down: the batch job FAILED (is $(job_state "$bf"))" test "$(job_state "$bf")" = FAILED
check "required, daemon down: the batch script never ran" test ! -e "$T_DIR/batch.ran"
check "required, daemon down: the reason in the batch job's stderr" grep -q "not placed.*Connection refused" "$T_DIR/batch.err"
check "required, daemon down: the node is not drained ($(node_state))" sh -c "node=\$(sinfo -h -N -o %t | head -n 1); [ \"\$node\" = idle ] || [ \"\$node\" = mix ]"
slurm_stop

# ---- PrologFlags=Contain: the extern step holds no task; jobs run
start_daemon
S_EXTRA_CONF="PrologFlags=Contain"
slurm_start cgpool || fail "the cluster with PrologFlags=Contain"
memcg=$(slurm_task_memcg)
check "Contain: the task in a slot ($memcg)" sh -c "echo '$memcg' | grep -q '/slot-[0-9]*/run\$'"
cj=$(sbatch --parsable --wait --output=/dev/null --wrap 'setsid sleep 3004 < /dev/null > /dev/null 2>&1 &')
wait_for 5 sh -c "[ \$(pgrep -fc '^sleep 3004\$') = 0 ]"
check "Contain: a batch job's stray is dead after the job" test "$(strays 3004)" = 0
check "Contain: no error line of the plug-in in slurmd's log" sh -c "! grep -i 'error.*cgpool\|cgpool.*error\|spank.*failed' '$S_DIR/slurmd.log'"
slurm_stop
S_EXTRA_CONF=

# ---- optional: the job runs with a warning; a stuck daemon costs one timeout
stop_daemon
slurm_start cgpool "optional cgpool.so timeout=2000" || fail "the cluster with an optional plug-in"
t0=$(date +%s)
out=$(timeout 60 srun -Q echo ran 2> "$T_DIR/opt.err")
rc=$?
echo "optional, daemon down: rc $rc after $(( $(date +%s) - t0 )) s, stdout '$out', stderr: $(cat "$T_DIR/opt.err")"
check "optional, daemon down: the job runs" sh -c "[ $rc -eq 0 ] && [ '$out' = ran ]"
check "optional, daemon down: one warning in the job's stderr" \
	test "$(grep -c "cgpool: .*not placed" "$T_DIR/opt.err")" = 1
check "optional, daemon down: the warning says why" grep -q "not placed.*Connection refused (cgpoold at $T_SOCK)" "$T_DIR/opt.err"
# a daemon that accepts nothing (stopped with SIGSTOP): one timeout for the step
start_daemon
kill -STOP "$T_DAEMON_PID"
t0=$(date +%s%N)
out=$(timeout 60 srun -Q -n2 echo ran 2> "$T_DIR/stuck.err")
took=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -CONT "$T_DAEMON_PID"
echo "optional, daemon stuck: ${took} ms, stdout '$out', stderr: $(cat "$T_DIR/stuck.err")"
check "optional, daemon stuck: both tasks run after one 2 s timeout (${took} ms)" \
	sh -c "[ '$(echo "$out" | grep -c ran)' = 2 ] && [ $took -lt 4000 ]"
check "optional, daemon stuck: the warning says it timed out" grep -q "not placed.*timed out" "$T_DIR/stuck.err"
finish
