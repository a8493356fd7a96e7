#!/bin/sh
# survive.sh - a run-systemd-vm.sh payload: cgpoold under a real systemd as
# PID 1 (Debian 12's 252, cgroup v2), started by socket activation from the
# shipped units; two jobs in their slots (one supervised by cgpoold, one
# started with cgpoolctl exec) survive everything that happens to the
# daemon: systemctl restart, systemctl stop and re-activation by the socket,
# SIGKILL of the main process and Restart=on-failure, a watchdog abort. After
# each the daemon is active again, both jobs run in the same slots and
# status says so. The slots live in cgpoold-slots.scope, the service cgroup
# holds the daemon alone. systemctl reload with a bad config keeps the
# daemon and its config, and the journal names FILE:LINE. A keeper killed
# while the daemon runs is replaced; the scope outlives every job.
. "${top_srcdir:-/src}/tests/systemd/lib.sh"

CG=/sys/fs/cgroup
timeout 60 systemctl is-system-running --wait > /dev/null 2>&1

# ---- the shipped units, a config with a supervised job, a short watchdog
# (a daemon another payload started goes first: its config is not ours)
systemctl stop cgpoold.socket cgpoold.service 2> /dev/null
U=/etc/systemd/system
rm -f "$U/cgpoold.service" "$U/cgpoold.socket" # the installed ones, from /usr/lib/systemd/system
mkdir -p "$U/cgpoold.service.d" /etc/cgpool
printf '[Service]\nWatchdogSec=3s\nTimeoutAbortSec=3s\n' > "$U/cgpoold.service.d/test.conf"
cat > /etc/cgpool/cgpool.conf << 'EOC'
[pool]
warm = 1
[job sup]
exec = /bin/sleep 100000
restart = always
[job low]
exec = /bin/sh -c 'id -un > /var/tmp/low.id; exec /bin/sleep 100000'
user = nobody
[job writer]
exec = /bin/sh -c 'echo ok > /etc/cgpool-job-wrote && mkdir -p /home/j && echo ok > /home/j/wrote && exec /bin/sleep 100000'
EOC
systemctl daemon-reload
check "cgpoold.socket started" systemctl start cgpoold.socket
check "the service is not running before the first client" test "$(systemctl is-active cgpoold.service)" != active
out=$(timeout 30 "$CGPOOLCTL" status 2>&1)
check "the first client starts cgpoold and is served" test $? -eq 0
echo "$out" | sed 's/^/  /'
check "cgpoold.service is active" test "$(systemctl is-active cgpoold.service)" = active

# the jobs
"$CGPOOLCTL" exec web -- /bin/sleep 100000 < /dev/null > /dev/null 2>&1 &
web=$!
wait_for 10 sh -c "'$CGPOOLCTL' --json status web | grep -q '\"state\": *\"running\"'" || fail "web did not start"
wait_for 10 sh -c "'$CGPOOLCTL' --json status sup | grep -q '\"job_state\": *\"running\"'" || fail "sup did not start"
web_id=$("$CGPOOLCTL" --json status web | json cgroup_id)
sup_id=$("$CGPOOLCTL" --json status sup | json cgroup_id)
sup_pid=$("$CGPOOLCTL" --json status sup | json main_pid)
echo "web: pid $web, slot $web_id: $(cat /proc/$web/cgroup); sup: pid $sup_pid, slot $sup_id"

# ---- the layout: the daemon alone in its service cgroup, the slots in their scope
main=$(systemctl show -p MainPID --value cgpoold)
ucg=$(systemctl show -p ControlGroup --value cgpoold)
check "the service cgroup holds the daemon alone ($(tr '\n' ' ' < "$CG$ucg/cgroup.procs"))" \
	test "$(cat "$CG$ucg/cgroup.procs")" = "$main"
check "the service cgroup has no controllers for children ('$(cat "$CG$ucg/cgroup.subtree_control")')" \
	test -z "$(cat "$CG$ucg/cgroup.subtree_control")"
check "web runs in cgpoold-slots.scope" grep -q "^0::/system.slice/cgpoold-slots.scope/slot-" /proc/$web/cgroup
check "the scope is a unit of its own, active" test "$(systemctl is-active cgpoold-slots.scope)" = active
# the hardening is in effect, and jobs do not suffer from it
capbnd=$(awk '/^CapBnd/ { print $2 }' /proc/$main/status)
check "ProtectKernelModules: no CAP_SYS_MODULE (CapBnd $capbnd)" sh -c "! [ \$(( 0x$capbnd >> 16 & 1 )) = 1 ]"
check "ProtectClock: no CAP_SYS_TIME" sh -c "! [ \$(( 0x$capbnd >> 25 & 1 )) = 1 ]"
check "CAP_SETUID, CAP_KILL and CAP_SYS_PTRACE kept (jobs as users, stop, adoption)" \
	sh -c "[ \$(( 0x$capbnd >> 7 & 1 )) = 1 ] && [ \$(( 0x$capbnd >> 5 & 1 )) = 1 ] && [ \$(( 0x$capbnd >> 19 & 1 )) = 1 ]"
for p in ProtectKernelModules ProtectKernelLogs ProtectClock ProtectHostname LockPersonality; do
	check "$p=yes in the running unit" test "$(systemctl show -p $p --value cgpoold)" = yes
done
wait_for 10 test -s /var/tmp/low.id || fail "job low did not start"
check "a job with user = nobody runs as nobody ($(cat /var/tmp/low.id 2> /dev/null))" test "$(cat /var/tmp/low.id 2> /dev/null)" = nobody
wait_for 10 test -s /home/j/wrote || fail "job writer did not write"
check "a job writes to /etc and /home (no ProtectSystem, ProtectHome)" test -s /etc/cgpool-job-wrote -a -s /home/j/wrote

# what systemd and the journal say about it
st=$(systemctl show -p StatusText --value cgpoold)
check "systemctl shows the daemon's STATUS ($st)" sh -c "echo '$st' | grep -q 'slots: .*running'"
journalctl --sync
check "journalctl CGPOOL_KEY=web shows its bind and run start" \
	sh -c "journalctl --no-pager -o cat CGPOOL_KEY=web CGPOOL_EVENT=bind | grep -q . &&
		journalctl --no-pager -o cat CGPOOL_KEY=web CGPOOL_EVENT=run-start | grep -q ."
check "the journal has job-start of sup with its slot" \
	sh -c "journalctl --no-pager -o verbose CGPOOL_KEY=sup CGPOOL_EVENT=job-start | grep -q 'CGPOOL_SLOT=slot-'"
nofile=$(awk '/^Max open files/ { print $4 }' /proc/$main/limits)
check "the daemon may open 65536 files (LimitNOFILE; got $nofile)" test "$nofile" -ge 65536
show systemd-cgls --no-pager /system.slice/cgpoold-slots.scope

# after EVENT: the daemon active again and both jobs where they were
survived() {
	wait_for 30 sh -c "[ \"\$(systemctl is-active cgpoold.service)\" = active ] && '$CGPOOLCTL' status > /dev/null 2>&1" ||
		{ fail "$1: cgpoold is $(systemctl is-active cgpoold.service), not back"; journalctl --no-pager -n 15 -u cgpoold; return; }
	new=$(systemctl show -p MainPID --value cgpoold)
	check "$1: a new daemon (pid $new, was $main)" test "$new" != "$main"
	main=$new
	check "$1: web (pid $web) still runs" kill -0 "$web"
	check "$1: sup (pid $sup_pid) still runs" kill -0 "$sup_pid"
	st=$("$CGPOOLCTL" --json status web)
	check "$1: status web: running in the same slot" \
		test "$(echo "$st" | json state)" = running -a "$(echo "$st" | json cgroup_id)" = "$web_id"
	st=$("$CGPOOLCTL" --json status sup)
	check "$1: status sup: job running, the same main pid and slot" test "$(echo "$st" | json job_state)" = running \
		-a "$(echo "$st" | json main_pid)" = "$sup_pid" -a "$(echo "$st" | json cgroup_id)" = "$sup_id"
}

timeout 60 systemctl restart cgpoold
check "systemctl restart returns 0" test $? -eq 0
survived "restart"

timeout 60 systemctl stop cgpoold
check "systemctl stop: the daemon is gone" test "$(systemctl is-active cgpoold.service)" != active
check "systemctl stop: web still runs" kill -0 "$web"
timeout 30 "$CGPOOLCTL" status > /dev/null 2>&1
survived "stop, then a client re-activates it by the socket"

systemctl kill -s KILL --kill-who=main cgpoold
sleep 1
survived "SIGKILL of the main process, Restart=on-failure"

kill -STOP "$main"
echo "daemon $main stopped; the watchdog (3 s) fires, then SIGABRT, then SIGKILL after 3 s"
wait_for 30 sh -c "[ \"\$(systemctl show -p MainPID --value cgpoold)\" != $main ]" || fail "watchdog: no new daemon"
survived "watchdog abort"
journalctl --sync
check "the journal saw the watchdog" sh -c "journalctl --no-pager -u cgpoold | grep -qi watchdog"

# ---- reload with a bad config: the daemon and the old config stay
cp /etc/cgpool/cgpool.conf /tmp/good.conf
printf 'warm = lots\n' >> /etc/cgpool/cgpool.conf
check "bad reload: systemctl reload fails" sh -c '! systemctl reload cgpoold'
check "bad reload: the daemon is still active" test "$(systemctl is-active cgpoold.service)" = active
check "bad reload: the same daemon" test "$(systemctl show -p MainPID --value cgpoold)" = "$main"
journalctl --sync
check "bad reload: the journal says FILE:LINE" sh -c "journalctl --no-pager -u cgpoold | grep -q '/etc/cgpool/cgpool.conf:[0-9]*: .*warm'"
cp /tmp/good.conf /etc/cgpool/cgpool.conf
check "good reload" systemctl reload cgpoold
check "status still answers" "$CGPOOLCTL" status > /dev/null

# ---- the scope's keeper killed while the daemon runs: a new one takes its
# place, and the scope outlives every job
K=$CG/system.slice/cgpoold-slots.scope/keeper
keeper=$(head -n 1 "$K/cgroup.procs")
check "the scope's keeper runs (pid $keeper)" test "$(cat "/proc/$keeper/comm" 2>/dev/null)" = cgpool-keeper
kill -9 "$keeper"
new_keeper() { k=$(head -n 1 "$K/cgroup.procs" 2>/dev/null); [ -n "$k" ] && [ "$k" != "$keeper" ]; }
check "a new keeper within 10 s of kill -9" wait_for 10 new_keeper
k=$(head -n 1 "$K/cgroup.procs")
check "the new keeper holds none of the daemon's descriptors (only 0, 1, 2)" \
	test "$(ls "/proc/$k/fd" | tr '\n' ' ')" = "0 1 2 "
journalctl --sync
check "the journal says the keeper was replaced" sh -c "journalctl --no-pager -u cgpoold | grep -q 'its keeper was gone'"
kill "$web" 2> /dev/null
for j in sup low writer; do "$CGPOOLCTL" stop $j > /dev/null 2>&1; done
sleep 1
check "no job left: the scope is still active" test "$(systemctl is-active cgpoold-slots.scope)" = active
check "and the pool still places a job" "$CGPOOLCTL" exec after-keeper -- true
finish
