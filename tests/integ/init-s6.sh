#!/bin/sh
# cgpoold under s6: s6-svscan supervises the shipped service directory
# units/s6/cgpoold (run, finish, type, log/run as installed; only its ./conf
# points cgpoold at this test's config, socket and pool root). A job runs in
# a slot (cgpoolctl exec); cgpoold is killed with SIGKILL, s6-supervise
# starts it again, the new daemon adopts the job: still running, same slot,
# status running. s6-svc -d stops cgpoold and leaves the job running; s6-svc
# -u brings a daemon back that shows it; a configuration error keeps it down.
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "$top_srcdir/tests/integ/init-common.sh"

for b in s6-svscan s6-supervise s6-svc s6-svstat s6-svscanctl s6-log; do
	command -v "$b" > /dev/null || skip "s6's $b is not installed (apt-get install --no-install-recommends s6)"
done
run=${top_builddir:-.}/units/s6/cgpoold/run
[ -x "$run" ] || skip "$run is not built here (make; the VMs have the installed tree only)"

# the service directory as make install writes it, and its ./conf
scan=$T_DIR/scan
svc=$scan/cgpoold
mkdir -p "$svc/log"
cp "$run" "$svc/run"
cp "$top_srcdir/units/s6/cgpoold/finish" "$top_srcdir/units/s6/cgpoold/type" "$svc/"
cp "$top_srcdir/units/s6/cgpoold/log/run" "$svc/log/run"
write_config
cat > "$svc/conf" <<EOC
CGPOOLD='$CGPOOLD'
CGPOOLD_CONFIG='$T_DIR/cgpool.conf'
CGPOOLD_LOGDIR='$T_DIR/log'
EOC

s6-svscan "$scan" > "$T_DIR/svscan.out" 2>&1 9>&- &
scan_pid=$!
stop_s6() {
	[ -n "$scan_pid" ] || return 0
	s6-svc -d "$svc" > /dev/null 2>&1
	s6-svscanctl -t "$scan" > /dev/null 2>&1
	wait_for 10 pid_gone "$scan_pid" || kill "$scan_pid" 2>/dev/null
	wait "$scan_pid" 2>/dev/null
	scan_pid=
}
show_log() { echo "--- cgpoold's log (s6-log)"; cat "$T_DIR/log/current" 2>/dev/null; }
trap 'stop_s6; cleanup' EXIT

svc_pid() { p=$(s6-svstat -p "$svc" 2>/dev/null) && [ "$p" != -1 ] && [ "$p" != 0 ] && echo "$p"; }
restarted() { p=$(svc_pid); [ -n "$p" ] && [ "$p" != "$1" ] && daemon_up; }

wait_for 10 daemon_up || { show_log; hard_error "s6 did not bring cgpoold up"; }
pid1=$(svc_pid)
check "s6-supervise runs cgpoold (pid $pid1)" [ "$(cat "/proc/$pid1/comm" 2>/dev/null)" = cgpoold ]
job_start web || { show_log; finish; exit; }

kill -9 "$pid1"
check "s6-supervise starts cgpoold again after kill -9" wait_for 15 restarted "$pid1"
pid2=$(svc_pid)
job_check "after kill -9 of cgpoold and s6's restart (pid $pid2)"

s6-svc -d "$svc"
check "s6-svc -d stops cgpoold" wait_for 10 pid_gone "$pid2"
check "s6-svc -d: the daemon no longer answers" daemon_down
job_check "after s6-svc -d"
s6-svc -u "$svc"
check "s6-svc -u starts cgpoold again" wait_for 10 daemon_up
job_check "after s6-svc -u"
check "cgpoold's log lines reach s6-log" grep -q 'cgpoold: ' "$T_DIR/log/current"

# a configuration error (exit 78) keeps the service down (finish), the job runs on
echo "bogus = 1" >> "$T_DIR/cgpool.conf"
s6-svc -r "$svc"
held_down() { s=$(s6-svstat "$svc" 2>/dev/null); case $s in down*'want up'*) return 1 ;; down*) return 0 ;; esac; return 1; }
check "after a configuration error finish keeps cgpoold down" wait_for 10 held_down
sleep 2
check "s6-supervise did not start it again" held_down
job_check "after cgpoold refused its configuration"

job_stop
stop_s6
[ "$T_FAILS" -eq 0 ] || show_log
finish
