#!/bin/sh
# cgpoold under a real runit: runsv runs the shipped service directory
# units/runit/cgpoold (run, finish, log/run as installed; only its ./conf
# points cgpoold at this test's config, socket and pool root). A job runs in
# a slot (cgpoolctl exec); cgpoold is killed with SIGKILL, runsv starts it
# again, the new daemon adopts the job: still running, same slot, status
# running. sv down stops cgpoold and leaves the job running; sv up brings a
# daemon back that shows it; a configuration error keeps it down (finish).
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "$top_srcdir/tests/integ/init-common.sh"

runsv=$(command -v runsv) || skip "runit's runsv is not installed (apt-get install --no-install-recommends runit)"
case $(readlink -f "$runsv") in
*busybox*) skip "runsv here is busybox's applet, not runit" ;;
esac
command -v svlogd > /dev/null || skip "runit's svlogd is not installed"
run=${top_builddir:-.}/units/runit/cgpoold/run
[ -x "$run" ] || skip "$run is not built here (make; the VMs have the installed tree only)"

# the service directory as make install writes it, and its ./conf
svc=$T_DIR/sv/cgpoold
mkdir -p "$svc/log"
cp "$run" "$svc/run"
cp "$top_srcdir/units/runit/cgpoold/finish" "$svc/finish"
cp "$top_srcdir/units/runit/cgpoold/log/run" "$svc/log/run"
write_config
cat > "$svc/conf" <<EOC
CGPOOLD='$CGPOOLD'
CGPOOLD_CONFIG='$T_DIR/cgpool.conf'
CGPOOLD_LOGDIR='$T_DIR/log'
EOC

"$runsv" "$svc" > "$T_DIR/runsv.out" 2>&1 9>&- &
runsv_pid=$!
stop_runsv() {
	[ -n "$runsv_pid" ] || return 0
	sv -w 10 exit "$svc" > /dev/null 2>&1
	wait_for 10 pid_gone "$runsv_pid" || kill "$runsv_pid" 2>/dev/null
	wait "$runsv_pid" 2>/dev/null
	runsv_pid=
}
show_log() { echo "--- cgpoold's log (svlogd)"; cat "$T_DIR/log/current" 2>/dev/null; }
trap 'stop_runsv; cleanup' EXIT

svc_pid() { cat "$svc/supervise/pid" 2>/dev/null; }
svc_down() { sv -w 10 down "$svc" > /dev/null 2>&1; }
svc_up() { sv up "$svc" > /dev/null 2>&1; }
svc_restart() { sv restart "$svc" > /dev/null 2>&1; }
held_down() { s=$(sv status "$svc" 2>/dev/null); case $s in down:*'normally up'*'want up'*) return 1 ;; down:*'normally up'*) return 0 ;; esac; return 1; }

supervised_by runsv "sv down" "sv up" svlogd
stop_runsv
[ "$T_FAILS" -eq 0 ] || show_log
finish
