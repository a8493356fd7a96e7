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
svc_down() { s6-svc -d "$svc"; }
svc_up() { s6-svc -u "$svc"; }
svc_restart() { s6-svc -r "$svc"; }
held_down() { s=$(s6-svstat "$svc" 2>/dev/null); case $s in down*'want up'*) return 1 ;; down*) return 0 ;; esac; return 1; }

supervised_by s6-supervise "s6-svc -d" "s6-svc -u" s6-log
stop_s6
[ "$T_FAILS" -eq 0 ] || show_log
finish
