#!/bin/sh
# A job that a real runit supervises lands in one slot across its restarts:
# runsv runs a service whose run script is `exec cgpoolctl exec svc -- ...`;
# its process is killed again and again, runsv restarts it, and every
# instance is in the same slot; runs counts them.
. "${top_srcdir:-.}/tests/integ/lib.sh"

KILLS=${CGPOOL_RUNIT_KILLS:-50}
runsv=$(command -v runsv) || skip "runit's runsv is not installed (apt-get install --no-install-recommends runit)"
case $(readlink -f "$runsv") in
*busybox*) skip "runsv here is busybox's applet, not runit" ;;
esac

start_daemon
svc="$T_DIR/sv/svc"
mkdir -p "$svc"
cat > "$svc/run" <<EOF
#!/bin/sh
export CGPOOL_SOCKET="$T_SOCK"
exec "$CGPOOLCTL" exec svc -- sh -c 'echo \$\$ >> "$T_DIR/pids"; exec sleep 1000'
EOF
chmod 755 "$svc/run"
"$runsv" "$svc" > "$T_DIR/runsv.log" 2>&1 &
runsv_pid=$!
stop_runsv() {
	[ -n "$runsv_pid" ] || return 0
	sv -w 5 down "$svc" > /dev/null 2>&1
	kill "$runsv_pid" 2>/dev/null
	wait "$runsv_pid" 2>/dev/null
	runsv_pid=
}
trap 'stop_runsv; cleanup' EXIT

lines() { [ -f "$T_DIR/pids" ] && wc -l < "$T_DIR/pids" || echo 0; }
at_least() { [ "$(lines)" -ge "$1" ]; }
in_slot() { grep -qx "$1" "$T_MEMMNT$slot_dir/cgroup.procs" 2>/dev/null; }

check "runsv started the service once" wait_for 10 at_least 1
slot_dir=$("$CGPOOLCTL" --json status svc | json path)
slot_dir=${slot_dir#"$T_MEMMNT"}
ok=0
i=1
while [ $i -le "$KILLS" ]; do
	pid=$(tail -n 1 "$T_DIR/pids")
	in_slot "$pid" && ok=$((ok + 1))
	# runsv waits a second before restarting a service that lived less
	sleep 1
	kill -9 "$pid"
	wait_for 10 at_least $((i + 1)) || break
	i=$((i + 1))
done
pid=$(tail -n 1 "$T_DIR/pids")
in_slot "$pid" && ok=$((ok + 1))
n=$(lines)
echo "runit: $((i - 1)) kills, $n instances, $ok of them seen in the slot $slot_dir"
check "runsv restarted it after each of the $KILLS kills" [ "$n" -eq $((KILLS + 1)) ]
check "every instance was in the key's one slot" [ "$ok" -eq "$n" ]
"$CGPOOLCTL" --json status svc > "$T_DIR/svc.json"
runs=$(json runs < "$T_DIR/svc.json")
check "runs = $((KILLS + 1)) (one per instance, $runs)" [ "$runs" -eq $((KILLS + 1)) ]
check "the slot did not change" grep -q "\"path\": *\"$T_MEMMNT$slot_dir\"" "$T_DIR/svc.json"
stop_runsv
finish
