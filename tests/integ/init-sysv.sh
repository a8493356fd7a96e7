#!/bin/sh
# cgpoold under the sysvinit script units/cgpoold.init (as installed; only
# its environment points cgpoold at this test's config, socket and pool
# root): start-stop-daemon starts it, status and reload work, a job that
# runs in a slot survives stop, start and restart, and each new daemon
# shows it running in the same slot.
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "$top_srcdir/tests/integ/init-common.sh"
PATH=$PATH:/sbin:/usr/sbin

command -v start-stop-daemon > /dev/null || skip "start-stop-daemon is not installed (Debian's dpkg has it)"
script=${top_builddir:-.}/units/cgpoold.init
[ -x "$script" ] || skip "$script is not built here (make; the VMs have the installed tree only)"

write_config
CGPOOLD_DEFAULTS=$T_DIR/no-defaults
CGPOOLD_CONFIG=$T_DIR/cgpool.conf
CGPOOLD_PIDFILE=$T_DIR/run/cgpoold.pid
CGPOOLD_LOG=$T_DIR/daemon.log
export CGPOOLD CGPOOLD_DEFAULTS CGPOOLD_CONFIG CGPOOLD_PIDFILE CGPOOLD_LOG
run_init() { "$script" "$@" >> "$T_DIR/init.out" 2>&1 9>&-; }
stop_init() { run_init stop; }
show_log() { echo "--- init script"; cat "$T_DIR/init.out"; echo "--- cgpoold's log"; cat "$T_DIR/daemon.log" 2>/dev/null; }
trap 'stop_init; cleanup' EXIT

pidfile_pid() { cat "$CGPOOLD_PIDFILE" 2>/dev/null; }
is_cgpoold() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = cgpoold ]; }

check "cgpoold.init start" run_init start
wait_for 10 daemon_up || { show_log; hard_error "the init script did not bring cgpoold up"; }
pid1=$(pidfile_pid)
check "the pid file names cgpoold (pid $pid1)" is_cgpoold "$pid1"
check "cgpoold.init status: running" run_init status
job_start web || { show_log; finish; exit; }

check "cgpoold.init reload" run_init reload
check "reload: cgpoold reloaded its configuration" wait_for 5 grep -q 'configuration reloaded' "$T_DIR/daemon.log"
check "reload kept the daemon (pid $pid1)" pid_alive "$pid1"

check "cgpoold.init stop" run_init stop
check "stop ends cgpoold" wait_for 10 pid_gone "$pid1"
check "stop: the daemon no longer answers" daemon_down
check "cgpoold.init status: not running" sh -c '! "$0" status > /dev/null 2>&1' "$script"
job_check "after cgpoold.init stop"

check "cgpoold.init start, again" run_init start
check "start brings cgpoold back" wait_for 10 daemon_up
job_check "after cgpoold.init start"
pid2=$(pidfile_pid)
check "cgpoold.init restart" run_init restart
restarted() { p=$(pidfile_pid); [ -n "$p" ] && [ "$p" != "$pid2" ] && daemon_up; }
check "restart runs a new cgpoold" wait_for 10 restarted
job_check "after cgpoold.init restart"

echo "bogus = 1" >> "$CGPOOLD_CONFIG"
check "start with a bad configuration fails (78) and starts nothing" sh -c \
	'"$0" stop > /dev/null 2>&1; "$0" start > /dev/null 2>&1; [ $? -eq 78 ]' "$script"
check "the bad configuration left no daemon" daemon_down
job_check "after a bad configuration"

job_stop
[ "$T_FAILS" -eq 0 ] || show_log
finish
