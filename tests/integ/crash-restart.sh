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
finish
