#!/bin/sh
# The state file deleted, truncated or corrupted (the daemon killed) while
# three jobs run: the next daemon keeps the three slots bound (to an orphan
# key, orphan.slot-N) with their processes inside, and new keys get other
# slots.
. "${top_srcdir:-.}/tests/integ/lib.sh"
dying_count_lock

# the memory cgroup path of a process
memcg_of() { sed -n "s/^[0-9]*:memory://p; s/^0:://p" "/proc/$1/cgroup" | head -n 1; }
slot_of_pid() { memcg_of "$1" | sed -n 's|.*/\(slot-[0-9]*\)/run$|\1|p'; }

round() {
	how=$1
	start_daemon
	pids=
	for k in a b c; do
		"$CGPOOLCTL" exec "job-$k" -- sleep 300 9>&- &
		pids="$pids $!"
	done
	for p in $pids; do wait_for 5 sh -c "[ -n \"\$(sed -n 's|.*/\(slot-[0-9]*\)/run$|\1|p' /proc/$p/cgroup)\" ]"; done
	slots=
	for p in $pids; do slots="$slots $(slot_of_pid "$p")"; done
	kill -9 "$T_DAEMON_PID"
	wait "$T_DAEMON_PID" 2>/dev/null
	T_DAEMON_PID=
	case $how in
	deleted) rm -f "$T_DIR"/state/* ;;
	truncated) for f in "$T_DIR"/state/*; do : > "$f"; done ;;
	corrupted) for f in "$T_DIR"/state/*; do printf '{"version": 2, "slots": [{"name": 17, "key": [' > "$f"; done ;;
	esac
	start_daemon
	set -- $slots
	for p in $pids; do
		s=$1; shift
		check "$how: pid $p still in $s" [ "$(slot_of_pid "$p")" = "$s" ]
		st=$("$CGPOOLCTL" --json status "orphan.$s")
		check "$how: $s is bound to orphan.$s and running" [ "$(echo "$st" | json state)" = running ]
	done
	news=
	for k in x y z; do
		"$CGPOOLCTL" exec "new-$k" -- sleep 300 9>&- &
		news="$news $!"
	done
	for p in $news; do
		wait_for 5 sh -c "[ -n \"\$(sed -n 's|.*/\(slot-[0-9]*\)/run$|\1|p' /proc/$p/cgroup)\" ]"
		n=$(slot_of_pid "$p")
		case " $slots " in
		*" $n "*) fail "$how: a new key got $n, which holds another job" ;;
		"  ") fail "$how: new key pid $p is in no slot" ;;
		*) pass "$how: a new key got $n, a slot of its own" ;;
		esac
	done
	kill $pids $news 2>/dev/null
	wait $pids $news 2>/dev/null
	stop_daemon
	rm -rf "$T_DIR/state"
	remove_root
}

round deleted
round truncated
round corrupted
finish
