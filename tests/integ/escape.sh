#!/bin/sh
# escape.sh - a job's process stays in the job's slot. Root places a job as
# a scheduler does (Attach with job and hold, the task running as nobody);
# from inside the job nobody tries to leave through the daemon's socket:
# cgpoolctl exec into a key of its own, the same after setsid, from a
# double-forked child, and a raw Varlink Attach. Each is refused, every
# process stays in the job's slot, no key of nobody's gets a slot, and 5 s
# after the job's holder exits nothing of the job is left. A process in a
# slot root bound without a job is held the same way; a process of nobody's
# in no slot, or in a slot of its own, still moves as cgpool.conf(5) grants.
# Needs python3 (the raw call and the job's Attach) and setpriv.
. "$(dirname "$0")/lib.sh"

command -v setpriv > /dev/null 2>&1 || skip "setpriv is missing"
command -v python3 > /dev/null 2>&1 || skip "python3 is missing"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
chmod 0711 "$T_DIR"
mkdir "$T_DIR/job" && chown 65534:65534 "$T_DIR/job"
J="$T_DIR/job"

write_config "[pool]
warm = 1"
start_daemon

# varlink METHOD PARAMS: one call on the daemon's socket, the reply on stdout
cp "$(dirname "$0")/hostile.py" "$J/" && chmod 0644 "$J/hostile.py"
varlink() { python3 "$J/hostile.py" call "$T_SOCK" "$1" "$2"; }

# the job's task: nobody's shell, waiting for the job to place it, then
# trying every way out
cat > "$J/task.sh" <<'EOF'
#!/bin/sh
cd "$1"
cat /proc/self/cgroup > task.cgroup
while [ ! -e go ]; do sleep 0.05; done
"$CGPOOLCTL" exec user.65534.a -- sh -c 'cat /proc/self/cgroup > a.cgroup' > a.out 2>&1
echo $? > a.rc
setsid "$CGPOOLCTL" exec user.65534.b -- sh -c 'cat /proc/self/cgroup > b.cgroup' > b.out 2>&1
echo $? > b.rc
sh -c '(setsid "$CGPOOLCTL" exec user.65534.c -- true > c.out 2>&1; echo $? > c.rc) &'
python3 hostile.py call "$CGPOOL_SOCKET" Attach '{"key": "user.65534.d", "pids": ["self"]}' > d.out 2>&1
setsid sleep 300 &
echo $! > stray.pid
touch done
exec sleep 300
EOF
chmod 0755 "$J/task.sh"

sleep 300 &
HOLDER=$!
# setpriv itself, not a function: $! must be the task's own pid
setpriv --reuid=65534 --regid=65534 --clear-groups env CGPOOL_SOCKET="$T_SOCK" CGPOOLCTL="$CGPOOLCTL" "$J/task.sh" "$J" &
TASK=$!
out=$(varlink Attach "{\"key\": \"job.77\", \"pids\": [$TASK], \"job\": \"sched:77:65534\", \"hold\": $HOLDER}")
echo "$out" | grep -q '"job": *"sched:77:65534"' || hard_error "the job was not placed: $out"
SLOT=$("$CGPOOLCTL" --json status job.77 | json name)
touch "$J/go"
wait_for 20 test -e "$J/done" || fail "the task did not finish its tries"
wait_for 5 test -e "$J/c.rc" || fail "the double-forked try did not finish"

in_job_slot() { grep -q "/$SLOT\$" "/proc/$1/cgroup" 2>/dev/null || grep -q "/$SLOT/" "/proc/$1/cgroup" 2>/dev/null; }
for t in a b c; do
	check "cgpoolctl exec user.65534.$t from inside the job is refused" [ "$(cat "$J/$t.rc" 2>/dev/null)" != 0 ]
	grep -q "a job holds" "$J/$t.out" || fail "$t: no reason given: $(cat "$J/$t.out" 2>/dev/null)"
	check "user.65534.$t has no slot" sh -c '! "$CGPOOLCTL" status user.65534.'$t' > /dev/null 2>&1'
done
grep -q PermissionDenied "$J/d.out"
check "a raw Attach from inside the job is refused" [ $? -eq 0 ]
check "the task is still in the job's slot" in_job_slot "$TASK"
check "its setsid stray is in the job's slot" in_job_slot "$(cat "$J/stray.pid")"
n=$("$CGPOOLCTL" --json status job.77 | json nprocs)
check "the task and its stray, and nothing else, are in the job's slot ($n)" [ "$n" = 2 ]
grep -q "refused to uid 65534" "$T_DIR/daemon.log" || fail "the daemon did not log the refusals"

# the job ends: nothing of it is left 5 s later
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null
job_empty() {
	[ "$("$CGPOOLCTL" --json status job.77 2>/dev/null | json nprocs)" = 0 ] ||
		! "$CGPOOLCTL" status job.77 > /dev/null 2>&1
}
wait_for 5 job_empty
check "5 s after the job's end its slot is empty" [ $? -eq 0 ]
# gone, or a zombie nobody reaped yet (it runs nothing)
dead() { ! [ -e "/proc/$1/stat" ] || [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat")" = Z ]; }
check "the task is gone" dead "$TASK"
check "the stray is gone" dead "$(cat "$J/stray.pid")"

# a slot root bound without a job holds nobody's process the same way
"$CGPOOLCTL" exec root.svc -- setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$CGPOOLCTL" exec user.65534.e -- true > "$J/e.out" 2>&1
check "nobody in a slot root bound cannot leave it" [ $? -ne 0 ]
grep -q "root bound" "$J/e.out" || fail "no reason for root.svc: $(cat "$J/e.out")"

# what nobody may do outside any job is as before
check "nobody in no slot may use its own key" as_nobody "$CGPOOLCTL" exec user.65534.f -- true
check "nobody in its own slot may move to another of its keys" \
	as_nobody "$CGPOOLCTL" exec user.65534.g -- "$CGPOOLCTL" exec user.65534.h -- true
finish
