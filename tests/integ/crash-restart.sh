#!/bin/sh
# kill -9 the daemon while jobs run, start it again: every key finds its slot,
# running jobs are untouched, runs keep counting, and a run that ended while
# the daemon was down is closed.
. "${top_srcdir:-.}/tests/integ/lib.sh"

state_of() { "$CGPOOLCTL" --json status "$1" | json state; }
is_state() { [ "$(state_of "$1")" = "$2" ]; }

start_daemon
"$CGPOOLCTL" exec web -- sleep 300 &
job=$!
wait_for 5 is_state web running || fail "web did not start running"
"$CGPOOLCTL" exec short -- sleep 2 &
short=$!
wait_for 5 is_state short running || fail "short did not start running"
id_before=$("$CGPOOLCTL" --json status web | json cgroup_id)
short_id=$("$CGPOOLCTL" --json status short | json cgroup_id)

kill -9 "$T_DAEMON_PID"
wait "$T_DAEMON_PID" 2>/dev/null
T_DAEMON_PID=
check "the job survives the daemon's death" kill -0 "$job"
wait "$short" # ends while the daemon is down

start_daemon
status=$("$CGPOOLCTL" --json status web)
check "web is still running after the restart" [ "$(echo "$status" | json state)" = running ]
check "web keeps its slot (cgroup_id $id_before)" [ "$(echo "$status" | json cgroup_id)" = "$id_before" ]
check "web still counts 1 run" [ "$(echo "$status" | json runs)" = 1 ]
status=$("$CGPOOLCTL" --json status short)
check "short, which ended while the daemon was down, is idle" [ "$(echo "$status" | json state)" = idle ]
check "short keeps its slot" [ "$(echo "$status" | json cgroup_id)" = "$short_id" ]
check "short's run has an end time" sh -c "\"$CGPOOLCTL\" --json status short | grep -q '\"ended\": *[0-9]'"

kill "$job"
wait "$job" 2>/dev/null
check "web goes idle when its job ends" wait_for 5 is_state web idle
"$CGPOOLCTL" exec web -- true || fail "exec web again"
wait_for 5 is_state web idle
status=$("$CGPOOLCTL" --json status web)
check "the next run of web lands in the same slot" [ "$(echo "$status" | json cgroup_id)" = "$id_before" ]
check "runs keeps counting across the daemon restart (2)" [ "$(echo "$status" | json runs)" = 2 ]

# a second restart, clean this time, with nothing running
stop_daemon
start_daemon
check "after a clean stop and start web keeps 2 runs" [ "$("$CGPOOLCTL" --json status web | json runs)" = 2 ]

# a slot an older cgpoold made (no run: its process, and a 64 MiB limit, in
# the slot's directory itself), found at the next start: its process is moved
# into a run of its own, and the slot serves no other run: once empty it is
# retired, its directory removed
stop_daemon
sleep 300 &
old=$!
for mnt in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do
	[ -d "$mnt$T_ROOT" ] || continue
	mkdir "$mnt$T_ROOT/slot-90" && echo "$old" > "$mnt$T_ROOT/slot-90/cgroup.procs" || fail "a flat slot in $mnt"
done
if [ $T_MEMORY = v1 ]; then
	echo 67108864 > "$T_MEMMNT$T_ROOT/slot-90/memory.limit_in_bytes"
else
	echo 67108864 > "$T_MEMMNT$T_ROOT/slot-90/memory.max"
fi
start_daemon
check "a slot an older cgpoold made: its process is moved into its run" \
	grep -q "$T_ROOT/slot-90/run\$" "/proc/$old/cgroup"
check "... in every hierarchy" sh -c "! grep -q '$T_ROOT/slot-90\$' /proc/$old/cgroup"
check "... and runs on under an orphan key" is_state orphan.slot-90 running
check "the daemon says why it will retire it" grep -q "slot-90.*older cgpoold" "$T_DIR/daemon.log"
kill "$old"
wait "$old" 2>/dev/null
check "once empty it is retired and its directory removed" wait_for 30 test ! -d "$T_MEMMNT$T_ROOT/slot-90"
check "its retirement is verified like any other" \
	sh -c "grep -q 'retire slot-90.*: \(drained\|released\|reparented\)' '$T_DIR/daemon.log'"
finish
