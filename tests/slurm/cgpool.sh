#!/bin/sh
# cgpool's SPANK plug-in on a real one-node Slurm cluster: every task of a
# job lands in the job's slot before it runs; CGPOOL_SLURM_JOBS (200) short
# jobs leave no dying memory cgroup and make no more slots than warm + the
# jobs running at once; --mem becomes the run's memory.max (a job over it is
# OOM-killed, the run record says so); a requeued job returns to its slot;
# --cgpool-key names a slot per user; with the daemon down an optional
# plug-in lets the job run with a warning, a required one fails it with the
# reason, and neither hangs (a stopped daemon costs the plug-in's timeout).
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "${top_srcdir:-.}/tests/slurm/lib.sh"
slurm_have
PLUGIN=${top_builddir:-.}/src/slurm/.libs/cgpool.so
[ -f "$PLUGIN" ] || skip "the plug-in was not built (configure found no slurm/spank.h)"
PLUGIN=$(cd "$(dirname "$PLUGIN")" && pwd)/cgpool.so
command -v python3 > /dev/null || skip "python3 not found (the memory hog of the OOM check)"
N=${CGPOOL_SLURM_JOBS:-200}
WARM=2

# status_of KEY FIELD: a field of the key's slot (the first occurrence)
status_of() { "$CGPOOLCTL" --json status "$1" | json "$2"; }
created() { grep -c "created, warm" "$T_DIR/daemon.log"; }
# for wait_for: the key's field is VALUE now
field_is() { test "$(status_of "$1" "$2" 2> /dev/null)" = "$3"; }

write_config "[pool]
warm = $WARM
idle_timeout = 1h"
start_daemon
slurm_start cgpool "required $PLUGIN socket=$T_SOCK" || { fail "the cluster did not start with the plug-in"; finish; exit 1; }

# ---- placement: the task's memory cgroup is a slot of the pool
memcg=$(slurm_task_memcg)
echo "a task's memory cgroup: $memcg"
check "a job's task runs in a slot below the pool root ($memcg)" \
	sh -c "echo '$memcg' | grep -q '/cgpool-$T_NAME-[0-9]*/slot-[0-9]*\$'"
job=$(srun -Q sh -c 'echo $SLURM_JOB_ID')
st=$("$CGPOOLCTL" --json status "slurm.$job")
check "the job's key slurm.$job is known, idle" test "$(echo "$st" | json state)" = idle
check "the job's key slurm.$job is released" test "$(echo "$st" | json released)" = true

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
# srun returns before slurmstepd ends the step and releases the key, so the
# next job may bind while the last one's slot is not free yet: the jobs at
# once are a few, not 1 (alone here: 1-2 slots made for 200 jobs; 8 with the
# whole test suite running beside it)
check "$N jobs: $made slots made (at most warm $WARM + 8 at once)" test "$made" -le $((WARM + 8))
exec 9>&- # the count window is over

# ---- --mem is the run's memory.max
hog='import sys; b = bytearray(256 << 20); [b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; sys.exit(0)'
srun -Q --mem=64M --cgpool-key=hog python3 -c "$hog" 2> "$T_DIR/hog.err"
rc=$?
check "a job with --mem=64M allocating 256M fails (rc $rc)" test $rc -ne 0
ooms=$("$CGPOOLCTL" --json status slurm.0.hog | sed -n 's/.*"oom_kills": *\([0-9]*\).*/\1/p' | head -n 1)
check "its run record shows the OOM kill (oom_kills $ooms)" test "${ooms:-0}" -ge 1
srun -Q --mem=512M --cgpool-key=hog python3 -c "$hog"
check "a job with --mem=512M allocating 256M finishes" test $? -eq 0
check "the same key, the same slot: 2 runs" test "$(status_of slurm.0.hog runs)" = 2

# ---- --cgpool-key: a slot per user
srun -Q --cgpool-key=svc true
srun -Q --cgpool-key=svc true
check "the same user twice: one slot, 2 runs" test "$(status_of slurm.0.svc runs)" = 2
chmod 755 "$T_DIR"
setpriv --reuid=65534 --regid=65534 --clear-groups srun -Q --cgpool-key=svc true ||
	fail "a job of nobody with --cgpool-key=svc"
# slurm.0.svc was released when its step ended: with no warm slot ready,
# nobody's new key may take (recycle) its slot, so compare while both exist
n0=$(status_of slurm.0.svc name 2> /dev/null)
check "another user: another key, not slurm.0.svc's slot while that is bound" \
	sh -c "[ -z '$n0' ] || [ '$n0' != '$(status_of slurm.65534.svc name)' ]"
check "the other user's key has 1 run" test "$(status_of slurm.65534.svc runs)" = 1
srun -Q --cgpool-key=../x true 2> "$T_DIR/badname.err"
check "a bad --cgpool-key is refused" test $? -ne 0
grep -q "cgpool-key" "$T_DIR/badname.err" || fail "no message for a bad --cgpool-key: $(cat "$T_DIR/badname.err")"

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

# ---- the daemon down: optional warns, required fails; neither hangs
stop_daemon
t0=$(date +%s)
out=$(timeout 60 srun -Q echo ran 2> "$T_DIR/req.err")
rc=$?
echo "required, daemon down: rc $rc after $(( $(date +%s) - t0 )) s, stdout '$out', stderr: $(cat "$T_DIR/req.err")"
# srun of 22.05 exits 0 when the launch failed: the task not running is what counts
check "required, daemon down: the task does not run, srun does not hang" sh -c "[ -z '$out' ] && [ $rc -ne 124 ]"
check "required, daemon down: the reason in the job's stderr" grep -q "not placed.*Connection refused (cgpoold at $T_SOCK)" "$T_DIR/req.err"
slurm_stop
slurm_start cgpool "optional $PLUGIN socket=$T_SOCK timeout=2000" || fail "the cluster with an optional plug-in"
t0=$(date +%s)
out=$(timeout 60 srun -Q echo ran 2> "$T_DIR/opt.err")
rc=$?
echo "optional, daemon down: rc $rc after $(( $(date +%s) - t0 )) s, stdout '$out', stderr: $(cat "$T_DIR/opt.err")"
check "optional, daemon down: the job runs" sh -c "[ $rc -eq 0 ] && [ '$out' = ran ]"
check "optional, daemon down: one warning in the job's stderr" \
	test "$(grep -c "cgpool: .*not placed" "$T_DIR/opt.err")" = 1
check "optional, daemon down: the warning says why" grep -q "not placed.*Connection refused (cgpoold at $T_SOCK)" "$T_DIR/opt.err"
# a daemon that accepts nothing (stopped with SIGSTOP): the timeout, not a hang
start_daemon
kill -STOP "$T_DAEMON_PID"
t0=$(date +%s%N)
out=$(timeout 60 srun -Q echo ran 2> "$T_DIR/stuck.err")
took=$(( ($(date +%s%N) - t0) / 1000000 ))
kill -CONT "$T_DAEMON_PID"
echo "optional, daemon stuck: ${took} ms, stdout '$out', stderr: $(cat "$T_DIR/stuck.err")"
check "optional, daemon stuck: the job runs after the 2 s timeout (${took} ms)" sh -c "[ '$out' = ran ] && [ $took -lt 20000 ]"
check "optional, daemon stuck: the warning says it timed out" grep -q "not placed.*timed out" "$T_DIR/stuck.err"
finish
