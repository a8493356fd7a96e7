# init-common.sh - shared by the tests of cgpoold under an init
# (init-runit.sh, init-openrc.sh, init-sysv.sh), sourced after lib.sh: one
# job in a slot that must outlive every stop and death of the daemon.

# daemon_up: the daemon answers on this test's socket
daemon_up() { "$CGPOOLCTL" status > /dev/null 2>&1; }
daemon_down() { ! daemon_up; }
# pid_alive PID
pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
pid_gone() { ! pid_alive "$1"; }

job_state() { "$CGPOOLCTL" --json status "$J_KEY" 2>/dev/null | json state; }
job_running() { [ "$(job_state)" = running ]; }

# job_start KEY: a job in KEY's slot, started with cgpoolctl exec as any
# supervisor would; sets J_KEY, J_PID, J_SLOT (its cgroup directory), J_ID
job_start() {
	J_KEY=$1
	"$CGPOOLCTL" exec "$J_KEY" -- sleep 1000 > /dev/null 2>&1 9>&- &
	J_PID=$!
	wait_for 10 job_running || { fail "job $J_KEY did not start running"; return 1; }
	st=$("$CGPOOLCTL" --json status "$J_KEY")
	J_SLOT=$(echo "$st" | json path)
	J_ID=$(echo "$st" | json cgroup_id)
	check "job $J_KEY (pid $J_PID) runs in its slot $J_SLOT" grep -qx "$J_PID" "$J_SLOT/cgroup.procs"
}

# job_check WHEN: the job still runs, in the same slot, and the daemon
# (when it is up) shows it running there
job_check() {
	check "$1: the job (pid $J_PID) is still running" pid_alive "$J_PID"
	check "$1: the job is still in its slot $J_SLOT" grep -qx "$J_PID" "$J_SLOT/cgroup.procs"
	daemon_up || return 0
	st=$("$CGPOOLCTL" --json status "$J_KEY")
	check "$1: cgpoolctl status $J_KEY shows it running" [ "$(echo "$st" | json state)" = running ]
	check "$1: in the same slot (cgroup_id $J_ID)" [ "$(echo "$st" | json cgroup_id)" = "$J_ID" ]
}

# job_stop: end the job (cleanup kills what is left in the pool root anyway)
job_stop() {
	pid_alive "$J_PID" && kill "$J_PID" 2>/dev/null
	wait "$J_PID" 2>/dev/null
	J_PID=
}
