# init-common.sh - shared by the tests of cgpoold under an init
# (init-runit.sh, init-s6.sh, init-openrc.sh, init-sysv.sh), sourced after
# lib.sh: one job in a slot that must outlive every stop and death of the
# daemon.

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

# supervised_by SUP DOWN UP LOGGER: what every supervisor test checks, once
# it has started SUP on the shipped service directory and defined svc_pid
# (the daemon's pid, as SUP knows it), svc_down, svc_up, svc_restart,
# held_down (SUP keeps the service down and will not start it) and show_log,
# with the daemon's log in $T_DIR/log/current. DOWN, UP and LOGGER name the
# commands in the check lines. A job started with cgpoolctl exec survives
# kill -9 of the daemon (SUP restarts it and the new daemon adopts the job),
# down and up; a configuration error (exit 78) keeps the service down (its
# finish script) while the job runs on.
supervised_by() {
	sup=$1 down=$2 up=$3 logger=$4
	restarted() { p=$(svc_pid); [ -n "$p" ] && [ "$p" != "$1" ] && daemon_up; }

	wait_for 10 daemon_up || { show_log; hard_error "$sup did not bring cgpoold up"; }
	pid1=$(svc_pid)
	check "$sup runs cgpoold (pid $pid1)" [ "$(cat "/proc/$pid1/comm" 2>/dev/null)" = cgpoold ]
	job_start web || { show_log; return 1; }

	kill -9 "$pid1"
	check "$sup starts cgpoold again after kill -9" wait_for 15 restarted "$pid1"
	pid2=$(svc_pid)
	job_check "after kill -9 of cgpoold and $sup's restart (pid $pid2)"

	svc_down
	check "$down stops cgpoold" wait_for 10 pid_gone "$pid2"
	check "$down: the daemon no longer answers" daemon_down
	job_check "after $down"
	svc_up
	check "$up starts cgpoold again" wait_for 10 daemon_up
	job_check "after $up"
	check "cgpoold's log lines reach $logger" grep -q 'cgpoold: ' "$T_DIR/log/current"

	echo "bogus = 1" >> "$T_DIR/cgpool.conf"
	svc_restart
	check "after a configuration error finish keeps cgpoold down" wait_for 10 held_down
	sleep 2
	check "$sup did not start it again" held_down
	job_check "after cgpoold refused its configuration"
	job_stop
}
