#!/bin/sh
# hostile.sh - a local user who is neither root nor in socket_group
# (cgpool.conf(5), AUTHORIZATION): it cannot join root's key, pick a class
# not marked unprivileged, or take more than its share of the pool; it can
# use its own namespace (user.<uid>.*); root can still bind once the others
# took all they may. 128 idle connections of one user do not stop root's
# cgpoolctl exec; 2,000 pipelined Status requests on one connection do not
# delay another client's Attach past 50 ms; an Attach of an exited caller's
# pid, reused by a root process, through the connection it left behind, is
# refused. The unprivileged users: nobody (65534) and 65533 (no passwd
# entry), through setpriv; the raw-socket parts need python3.
. "$(dirname "$0")/lib.sh"

command -v setpriv > /dev/null 2>&1 || skip "setpriv is missing"
as_user() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
chmod 0711 "$T_DIR" # the socket is reachable by everybody, as in /run/cgpool

# 16 slots: 2 kept for root, 12 at most per user
write_config "[pool]
warm = 1
max_slots = 16
max_slots_per_user = 12
[class open]
unprivileged = yes
[class closed]
"
start_daemon

"$CGPOOLCTL" exec root.job -- sleep 300 > /dev/null 2>&1 &
ROOT_JOB=$!
wait_for 5 sh -c '"$CGPOOLCTL" status root.job | grep -q running' || hard_error "root.job did not start"

out=$(as_user 65534 "$CGPOOLCTL" exec root.job -- true 2>&1)
check "nobody cannot join root's key" [ $? -ne 0 ]
echo "$out" | grep -q "permission denied" || fail "no PermissionDenied for root's key: $out"
check "root's key keeps one process" [ "$("$CGPOOLCTL" --json status root.job | json nprocs)" = 1 ]

out=$(as_user 65534 "$CGPOOLCTL" exec user.65534.a --class closed -- true 2>&1)
check "nobody cannot pick a class not marked unprivileged" [ $? -ne 0 ]
out=$(as_user 65534 "$CGPOOLCTL" exec user.6553.a -- true 2>&1)
check "nobody cannot use a key outside user.65534.*" [ $? -ne 0 ]
check "nobody can use user.65534.* with an unprivileged class" \
	as_user 65534 "$CGPOOLCTL" exec user.65534.a --class open -- true
check "the key records its owner" [ "$("$CGPOOLCTL" --json status user.65534.a | json owner_uid)" = 65534 ]
out=$(as_user 65534 "$CGPOOLCTL" exec user.65534.a --limit memory.max=max -- true 2>&1)
check "nobody cannot set limits for its run, even on its own key" [ $? -ne 0 ]
echo "$out" | grep -q "may set limits" || fail "no PermissionDenied for limits: $out"
out=$(as_user 65534 "$CGPOOLCTL" exec user.65534.a --limit "devices.deny=none" -- true 2>&1)
check "nobody cannot set the device filter of its run either" [ $? -ne 0 ]
echo "$out" | grep -q "may set limits" || fail "no PermissionDenied for devices.deny: $out"
out=$(as_user 65533 "$CGPOOLCTL" exec user.65534.a -- true 2>&1)
check "uid 65533 cannot join nobody's key" [ $? -ne 0 ]

i=2
while [ $i -le 12 ]; do
	as_user 65534 "$CGPOOLCTL" exec user.65534.k$i -- true > /dev/null 2>&1 || fail "bind $i of nobody refused"
	i=$((i + 1))
done
out=$(as_user 65534 "$CGPOOLCTL" --json exec user.65534.k13 -- true 2>&1)
check "nobody cannot exceed max_slots_per_user" [ $? -ne 0 ]
echo "$out" | grep -q max_slots_per_user || fail "PoolFull without reason max_slots_per_user: $out"
# 1 (root) + 12 (nobody) + 1 (65533): the last two are root's
check "uid 65533 binds one key of its own" as_user 65533 "$CGPOOLCTL" exec user.65533.a -- true
out=$(as_user 65533 "$CGPOOLCTL" --json exec user.65533.b -- true 2>&1)
check "unprivileged binds leave the reserved slots alone" [ $? -ne 0 ]
echo "$out" | grep -q reserved || fail "PoolFull without reason reserved: $out"
check "root binds after the others filled their share" "$CGPOOLCTL" exec root.after1 -- true
check "root binds the last slot" "$CGPOOLCTL" exec root.after2 -- true

# the state file keeps the owner across a restart
stop_daemon
start_daemon
check "owner_uid survives a restart" [ "$("$CGPOOLCTL" --json status user.65534.a | json owner_uid)" = 65534 ]
out=$(as_user 65533 "$CGPOOLCTL" exec user.65534.a -- true 2>&1)
check "and still guards the key after it" [ $? -ne 0 ]

if ! command -v python3 > /dev/null 2>&1; then
	echo "python3 is missing: connection, pipelining and pid-reuse parts skipped"
else
	for k in root.after1 root.after2 user.65533.a user.65534.k9 user.65534.k10 user.65534.k11 user.65534.k12; do "$CGPOOLCTL" retire "$k" --wait > /dev/null; done
	python3 "$top_srcdir/tests/integ/hostile.py" idle "$T_SOCK" 128 "$T_DIR/idle.ready" &
	IDLE=$!
	wait_for 20 test -s "$T_DIR/idle.ready" || fail "the idle connections were not opened"
	echo "nobody holds $(cat "$T_DIR/idle.ready") idle connections"
	check "root's cgpoolctl exec works while nobody holds 128 connections" \
		"$CGPOOLCTL" exec root.conn -- true
	kill "$IDLE" 2>/dev/null
	wait "$IDLE" 2>/dev/null

	check "an Attach waits at most 50 ms behind 2,000 pipelined Status requests" \
		python3 "$top_srcdir/tests/integ/hostile.py" pipeline "$T_SOCK" root.fair
	python3 "$top_srcdir/tests/integ/hostile.py" pid-reuse "$T_SOCK" user.65534.reuse
	case $? in
	0) pass "an exited caller's reused pid is not moved through its old connection" ;;
	77) echo "pid-reuse part skipped" ;;
	*) fail "an exited caller's reused pid was moved through its old connection" ;;
	esac
fi

kill "$ROOT_JOB" 2>/dev/null
finish
