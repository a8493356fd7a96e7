#!/bin/sh
# smoke.sh - self-test of the systemd VM harness (a run-systemd-vm.sh
# payload): systemd is PID 1 and the system comes up on cgroup v2, then the
# source tree's units/cgpoold.service and cgpoold.socket are installed as a
# package would (@sbindir@ substituted), the daemon is started by systemd and
# answers, a command runs in a slot, and the layout is printed: where the
# daemon and the slots live.
# survive.sh checks what happens to jobs when the daemon goes.
. "${top_srcdir:-/src}/tests/systemd/lib.sh"

pass "PID 1 is systemd ($(systemctl --version | head -n 1))"

state=$(timeout 60 systemctl is-system-running --wait 2>&1)
case $state in
running | degraded) pass "system is $state" ;;
*) fail "system is '$state' (want running or degraded)" ;;
esac
[ "$state" = degraded ] && show systemctl --failed --no-legend
CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
check "cgroup2 mounted on /sys/fs/cgroup, no v1 hierarchy" \
	test "$CG" = /sys/fs/cgroup -a -z "$(awk '$3 == "cgroup"' /proc/mounts)"
echo "root controllers: $(cat "$CG/cgroup.controllers"); system.slice gives: $(cat "$CG/system.slice/cgroup.subtree_control")"

# ---- the units, as the build would install them
U=/etc/systemd/system
# the packages (or make install) put them in systemd's unit directory
I=/usr/lib/systemd/system
for u in cgpoold.service cgpoold.socket; do
	check "$u is installed into $I" test -f "$I/$u"
done
grep -q '@[a-z]*@' "$I/cgpoold.service" "$I/cgpoold.socket" && fail "placeholders left in the units"
check "the config was installed (/etc/cgpool/cgpool.conf)" test -f /etc/cgpool/cgpool.conf
check "systemctl daemon-reload" systemctl daemon-reload
# --man=no: the test image has no man pages (Documentation=man:... would fail)
out=$(systemd-analyze verify --man=no "$I/cgpoold.service" "$I/cgpoold.socket" 2>&1)
check "systemd-analyze verify: the units are clean${out:+ ($out)}" test -z "$out"
sed "s|@bindir@|$(dirname "$CGPOOLCTL")|g" "$SRC/units/jobs/systemd-job.service" > "$U/cgpool-example-job.service"
out=$(systemd-analyze verify --man=no "$U/cgpool-example-job.service" 2>&1)
check "systemd-analyze verify: the job template is clean${out:+ ($out)}" test -z "$out"
if timeout 60 systemctl start cgpoold; then
	pass "systemctl start cgpoold"
else
	fail "systemctl start cgpoold"
fi
show systemctl status --no-pager cgpoold.service cgpoold.socket
out=$(timeout 20 "$CGPOOLCTL" status 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
check "cgpoolctl status answers" test $rc -eq 0
out=$(timeout 20 "$CGPOOLCTL" exec smoke -- true 2>&1)
rc=$?
[ -n "$out" ] && echo "$out" | sed 's/^/  /'
check "cgpoolctl exec smoke -- true" test $rc -eq 0
slot=$(timeout 20 "$CGPOOLCTL" exec smoke -- cat /proc/self/cgroup 2>&1)
echo "slot of key smoke: $slot"

# ---- the layout
pid=$(systemctl show -p MainPID --value cgpoold)
echo "daemon pid ${pid:-?}: $(cat "/proc/$pid/cgroup" 2> /dev/null)"
ucg=$(systemctl show -p ControlGroup --value cgpoold)
if [ -n "$ucg" ] && [ -d "$CG$ucg" ]; then
	echo "unit cgroup $ucg: procs [$(tr '\n' ' ' < "$CG$ucg/cgroup.procs")]," \
		"controllers [$(cat "$CG$ucg/cgroup.controllers")], subtree_control [$(cat "$CG$ucg/cgroup.subtree_control")]"
	find "$CG$ucg" -mindepth 1 -type d | sed "s|^$CG|  |"
fi
show "$CGPOOLCTL" list

finish
