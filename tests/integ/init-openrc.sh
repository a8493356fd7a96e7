#!/bin/sh
# cgpoold under OpenRC's supervise-daemon: openrc-run runs the shipped
# service units/openrc/cgpoold (as /etc/init.d/cgpoold is installed; only
# its conf.d file points cgpoold at this test's config, socket and pool
# root). A job runs in a slot (cgpoolctl exec); cgpoold is killed with
# SIGKILL, supervise-daemon starts it again, the new daemon adopts the job:
# still running, same slot, status running. reload keeps the daemon; stop
# stops cgpoold and leaves the job running; start brings a daemon back that
# shows it.
#
# The host is not booted by OpenRC: the test runs in a mount namespace of
# its own, with an empty OpenRC state directory (/run/openrc, a tmpfs) and
# an rc.conf that adds rc_sys="prefix" to the host's, so that openrc-run
# moves no process into cgroups of its own (it would otherwise move the
# service to the root of the cgroup v1 hierarchies and make
# /sys/fs/cgroup/unified/cgpoold); cgpoold and the job stay below the
# test's cgroup, as in every integration test.
if [ -z "${CGPOOL_OPENRC_NS:-}" ] && [ "$(id -u)" = 0 ] && [ "${CGPOOL_INTEG:-yes}" != no ]; then
	for b in openrc-run supervise-daemon; do
		command -v "$b" > /dev/null 2>&1 || [ -x "/sbin/$b" ] || [ -x "/usr/sbin/$b" ] || {
			echo "SKIP: init-openrc: OpenRC's $b is not installed (apt-get install --no-install-recommends openrc)"
			exit 77
		}
	done
	command -v unshare > /dev/null || { echo "SKIP: init-openrc: unshare (util-linux) is not installed"; exit 77; }
	CGPOOL_OPENRC_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "$top_srcdir/tests/integ/init-common.sh"
PATH=$PATH:/sbin:/usr/sbin

svc_in=${top_builddir:-.}/units/openrc/cgpoold
[ -x "$svc_in" ] || skip "$svc_in is not built here (make; the VMs have the installed tree only)"
[ -f /etc/rc.conf ] || skip "no /etc/rc.conf: OpenRC is not installed as Debian's package installs it"

# OpenRC's state and configuration for this test only (mount namespace)
[ -d /run/openrc ] || mount -t tmpfs -o mode=0755 cgpool-openrc-test /run || hard_error "mount /run"
mount -t tmpfs -o mode=0755 cgpool-openrc-test /run/openrc || hard_error "mount /run/openrc"
for d in daemons exclusive failed hotplugged inactive options scheduled started starting stopping tmp wasinactive; do
	mkdir -p "/run/openrc/$d"
done
touch /run/openrc/softlevel
{ cat /etc/rc.conf; echo 'rc_sys="prefix"'; } > "$T_DIR/rc.conf"
mount --bind "$T_DIR/rc.conf" /etc/rc.conf || hard_error "mount --bind rc.conf"

# the service as make install writes it, and its conf.d file
mkdir -p "$T_DIR/init.d" "$T_DIR/conf.d"
svc=$T_DIR/init.d/cgpoold
cp "$svc_in" "$svc"
write_config
cat > "$T_DIR/conf.d/cgpoold" <<EOC
cgpoold_command='$CGPOOLD'
cgpoold_config='$T_DIR/cgpool.conf'
cgpoold_log='$T_DIR/daemon.log'
pidfile='$T_DIR/supervise-daemon.pid'
EOC

run_svc() { "$svc" "$@" >> "$T_DIR/openrc.out" 2>&1; }
stop_svc() { "$svc" stop > /dev/null 2>&1; }
supervisor_gone() { ! pid_alive "$(cat "$T_DIR/supervise-daemon.pid" 2>/dev/null)"; }
stop_openrc() {
	stop_svc
	supervisor_gone || kill "$(cat "$T_DIR/supervise-daemon.pid")" 2>/dev/null
	umount /etc/rc.conf 2>/dev/null
}
show_log() { echo "--- openrc-run"; cat "$T_DIR/openrc.out"; echo "--- cgpoold's log"; cat "$T_DIR/daemon.log" 2>/dev/null; }
trap 'stop_openrc; cleanup' EXIT

# the daemon's pid, as supervise-daemon records it
svc_pid() { cat /run/openrc/options/cgpoold/child_pid 2>/dev/null; }
restarted() { p=$(svc_pid); [ -n "$p" ] && [ "$p" != "$1" ] && daemon_up; }
is_cgpoold() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = cgpoold ]; }

check "openrc-run cgpoold start" run_svc start
wait_for 10 daemon_up || { show_log; hard_error "supervise-daemon did not bring cgpoold up"; }
wait_for 5 is_cgpoold "$(svc_pid)"
pid1=$(svc_pid)
check "supervise-daemon runs cgpoold (pid $pid1)" is_cgpoold "$pid1"
job_start web || { show_log; finish; exit; }

kill -9 "$pid1"
check "supervise-daemon starts cgpoold again after kill -9" wait_for 15 restarted "$pid1"
pid2=$(svc_pid)
job_check "after kill -9 of cgpoold and supervise-daemon's restart (pid $pid2)"

check "openrc-run cgpoold reload" run_svc reload
sleep 0.5
check "reload kept the daemon (pid $pid2)" [ "$(svc_pid)" = "$pid2" ]
check "reload: it answers" wait_for 5 daemon_up
check "reload: cgpoold reloaded its configuration" grep -qi 'reload' "$T_DIR/daemon.log"

check "openrc-run cgpoold stop" run_svc stop
check "stop ends cgpoold" wait_for 10 pid_gone "$pid2"
check "stop: the daemon no longer answers" daemon_down
job_check "after openrc-run cgpoold stop"
check "openrc-run cgpoold start, again" run_svc start
check "start brings cgpoold back" wait_for 10 daemon_up
job_check "after openrc-run cgpoold start"
check "cgpoold's log lines reach cgpoold_log" grep -q 'cgpoold: ' "$T_DIR/daemon.log"

job_stop
stop_openrc
[ "$T_FAILS" -eq 0 ] || show_log
finish
