#!/bin/sh
# A run's limits are never lost: an Attach whose limit the kernel refuses
# (on cgroup v1 a memory limit below what the run uses and cannot reclaim:
# EBUSY) fails with the reason, moves no process, and leaves the running
# run's limits as they were, its processes running; a later Attach with a
# limit that fits applies it. On cgroup v2 the kernel never refuses a lower
# memory.max (it reclaims or OOM-kills to meet it), so there the refusal is
# checked with a limit the slot's hierarchy cannot take. devices.deny denies
# a device to the run only: the next run of the key opens it.
. "${top_srcdir:-.}/tests/integ/lib.sh"
command -v python3 > /dev/null || skip "python3 not found (the memory user of this test)"

write_config "[pool]
warm = 1"
start_daemon

# a process that, once in the slot (v1 charges a page to the cgroup of the
# process that touched it first, and a move takes no charge along), holds
# 64 MiB of anonymous memory (no swap to push it to)
python3 -c 'import os, time, sys
while not os.path.exists(sys.argv[1]): time.sleep(0.05)
b = bytearray(64 << 20)
for i in range(0, len(b), 4096): b[i] = 1
open(sys.argv[2], "w").close()
time.sleep(120)' "$T_DIR/user.go" "$T_DIR/user.ready" 9>&- &
user=$!
sleep 300 9>&- &
other=$!
limit_file() {
	p=$("$CGPOOLCTL" --json status kept | json path)
	if [ -f "$p/memory.limit_in_bytes" ]; then cat "$p/memory.limit_in_bytes"; else cat "$p/memory.max"; fi
}
in_slot() { grep -q "$("$CGPOOLCTL" --json status kept | json path | sed "s|^$T_MEMMNT||")\$" "/proc/$1/cgroup"; }

"$CGPOOLCTL" attach kept --limit memory.max=512M "$user" > /dev/null
check "the run's limit is 512 MiB ($(limit_file))" test "$(limit_file)" = 536870912
touch "$T_DIR/user.go"
wait_for 10 test -f "$T_DIR/user.ready" || fail "the memory user did not start"

if [ "$T_MEMORY" = v1 ]; then
	"$CGPOOLCTL" attach kept --limit memory.max=16M "$other" > /dev/null 2> "$T_DIR/refused.err"
	rc=$?
	echo "an Attach with 16 MiB under 64 MiB used: rc $rc: $(cat "$T_DIR/refused.err")"
	check "an Attach whose limit the kernel refuses fails (rc $rc)" test $rc -ne 0
	check "... with the reason" grep -qi "busy\|memory.max" "$T_DIR/refused.err"
	check "the running run's limit is still 512 MiB ($(limit_file))" test "$(limit_file)" = 536870912
	check "the running run's process still runs" kill -0 "$user"
	check "the refused Attach moved no process" sh -c "! grep -q '$("$CGPOOLCTL" --json status kept | json path | sed "s|^$T_MEMMNT||")\$' /proc/$other/cgroup"
	grep -q "limits of the run are as before the attach\|limit memory.max = 16M" "$T_DIR/daemon.log" ||
		fail "the daemon's log does not say the limit was refused"
else
	echo "cgroup v2: the kernel meets a lower memory.max by reclaim or OOM kill, never refuses it"
	"$CGPOOLCTL" attach kept --limit memory.max=lots "$other" > /dev/null 2> "$T_DIR/refused.err"
	check "an Attach with a limit that is no size fails" test $? -ne 0
	check "the running run's limit is still 512 MiB ($(limit_file))" test "$(limit_file)" = 536870912
fi
"$CGPOOLCTL" attach kept --limit memory.max=256M "$other" > /dev/null
check "an Attach with a limit that fits applies it ($(limit_file))" test "$(limit_file)" = 268435456
check "... and moves its process" in_slot "$other"
kill "$user" "$other" 2> /dev/null
wait "$user" "$other" 2> /dev/null

# a running job's limit changed by its scheduler (Limit, cgpoolctl limit):
# root places a job as Slurm's plug-in does (Attach with job and hold),
# then sets its slots' memory.max; nobody may not, devices.deny is not
# Limit's, and a value the kernel refuses (v1: below what the run uses)
# leaves the slot's limit as it was
command -v setpriv > /dev/null 2>&1 || skip "setpriv is missing"
chmod 0711 "$T_DIR" # nobody reaches the socket
says() { printf '%s\n' "$1" | grep -q -- "$2"; }
job_limit() {
	p=$("$CGPOOLCTL" --json status job.88 | json path)
	if [ -f "$p/memory.limit_in_bytes" ]; then cat "$p/memory.limit_in_bytes"; else cat "$p/memory.max"; fi
}
python3 -c 'import os, sys, time
while not os.path.exists(sys.argv[1]): time.sleep(0.05)
b = bytearray(48 << 20)
for i in range(0, len(b), 4096): b[i] = 1
open(sys.argv[2], "w").close()
time.sleep(120)' "$T_DIR/job.go" "$T_DIR/job.ready" 9>&- &
jtask=$!
sleep 300 9>&- &
jholder=$!
out=$(python3 "${top_srcdir:-.}/tests/integ/hostile.py" call "$T_SOCK" Attach "{\"key\": \"job.88\", \"pids\": [$jtask], \"limits\": {\"memory.max\": \"512M\"}, \"job\": \"sched:88:0\", \"hold\": $jholder}")
echo "$out" | grep -q '"job": *"sched:88:0"' || hard_error "the job was not placed: $out"
touch "$T_DIR/job.go" # v1 charges a page where it is touched first: in the slot
wait_for 10 test -f "$T_DIR/job.ready" || fail "the job's memory user did not start"
check "the job's run starts with 512 MiB ($(job_limit))" test "$(job_limit)" = 536870912
out=$("$CGPOOLCTL" limit sched:88 --limit memory.max=384M 2>&1)
check "cgpoolctl limit sets the job's slot's memory.max ($out)" test "$(job_limit)" = 402653184
check "... and names the slot's key" says "$out" 'sched:88: memory.max=384M (job.88)'
check "the daemon's log says so" grep -q "job sched:88:0: limit memory.max = .* for this run" "$T_DIR/daemon.log"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CGPOOLCTL" limit sched:88 --limit memory.max=8G 2>&1)
check "nobody may change a job's limit ($out)" says "$out" 'only root and members of socket_group'
check "... and the limit is still 384 MiB" test "$(job_limit)" = 402653184
out=$("$CGPOOLCTL" limit sched:88 --limit "devices.deny=c 1:5" 2>&1)
check "devices.deny is not Limit's ($out)" says "$out" "devices.deny is the job's from its first Attach"
out=$("$CGPOOLCTL" limit sched:99 --limit memory.max=1G 2>&1)
check "a job with no slot here changes nothing ($out)" says "$out" 'no slot of this job here'
out=$("$CGPOOLCTL" limit sched:88 --limit memory.max=lots 2>&1)
check "a value that is no size is refused ($out)" says "$out" 'memory.max: invalid size'
check "... and the limit is still 384 MiB" test "$(job_limit)" = 402653184
if [ "$T_MEMORY" = v1 ]; then
	out=$("$CGPOOLCTL" limit sched:88 --limit memory.max=16M 2>&1)
	check "v1: a limit below what the job uses is refused ($out)" says "$out" 'a limit was refused'
	check "... and the limit is still 384 MiB ($(job_limit))" test "$(job_limit)" = 402653184
	check "... the job's process still runs" kill -0 "$jtask"
fi
kill "$jtask" "$jholder" 2> /dev/null
wait "$jtask" "$jholder" 2> /dev/null

# devices.deny: a device filter on the slot's cgroup2 directory (v2 and
# hybrid); /dev/zero (c 1:5) denied for the run, /dev/null not; the next
# run of the key has no filter
if ! grep -q " cgroup2 " /proc/self/mounts; then
	"$CGPOOLCTL" exec dev --limit "devices.deny=c 1:5" -- true 2> "$T_DIR/dev.err"
	check "no cgroup2 here: an Attach with devices.deny fails" test $? -ne 0
	check "... saying it is not supported ($(cat "$T_DIR/dev.err"))" grep -qi "not supported" "$T_DIR/dev.err"
else
	out=$("$CGPOOLCTL" exec dev --limit "devices.deny=c 1:5,b 7:*" -- \
		sh -c 'head -c1 /dev/zero > /dev/null 2>&1 && echo zero-open || echo zero-denied; echo x > /dev/null && echo null-open' 2>&1)
	echo "with devices.deny = c 1:5,b 7:*: $out"
	check "devices.deny = c 1:5: /dev/zero cannot be opened in the slot" sh -c "echo '$out' | grep -qx zero-denied"
	check "... and /dev/null can" sh -c "echo '$out' | grep -qx null-open"
	check "the daemon's log has the run's filter" grep -q "limit devices.deny = c 1:5,b 7:\* for this run" "$T_DIR/daemon.log"
	out=$("$CGPOOLCTL" exec dev -- sh -c 'head -c1 /dev/zero > /dev/null 2>&1 && echo zero-open || echo zero-denied' 2>&1)
	check "the next run of the key opens /dev/zero ($out)" test "$out" = zero-open
	"$CGPOOLCTL" exec dev --limit "devices.deny=c 1" -- true 2> "$T_DIR/dev.err"
	check "an Attach with a bad devices.deny fails" test $? -ne 0
	check "... saying why ($(cat "$T_DIR/dev.err"))" grep -q "devices.deny" "$T_DIR/dev.err"
fi
finish
