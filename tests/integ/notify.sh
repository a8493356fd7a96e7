#!/bin/sh
# sd_notify without systemd: a datagram socket of our own (tests/notify-sink)
# plays the service manager. READY=1 comes once the control socket accepts
# connections, with a STATUS= line; STATUS= follows the pool (a run starts,
# ends) at most once a second and only when it changed; WATCHDOG=1 every
# WATCHDOG_USEC/2 when WATCHDOG_PID names the daemon, never when it names
# another process; `cgpoolctl reload` sends RELOADING=1 with MONOTONIC_USEC
# (CLOCK_MONOTONIC now), then READY=1; SIGTERM sends STOPPING=1.
. "${top_srcdir:-.}/tests/integ/lib.sh"

SINK=${top_builddir:-.}/tests/notify-sink
[ -x "$SINK" ] || skip "no $SINK (built by make)"
NLOG="$T_DIR/notify.log"
NSOCK="$T_DIR/notify.sock"
WD_USEC=400000

"$SINK" "$NSOCK" "$T_SOCK" > "$NLOG" 2> "$T_DIR/sink.err" 9>&- &
sink_pid=$!
stop_sink() { [ -n "$sink_pid" ] && kill "$sink_pid" 2>/dev/null; wait "$sink_pid" 2>/dev/null; sink_pid=; }
trap 'stop_sink; cleanup' EXIT
wait_for 5 test -S "$NSOCK" || hard_error "notify-sink did not bind $NSOCK: $(cat "$T_DIR/sink.err")"

# start_notified WATCHDOG_PID: the daemon with NOTIFY_SOCKET and WATCHDOG_USEC
# ("self": its own pid, through the shell that execs it)
start_notified() {
	NOTIFY_SOCKET="$NSOCK" WATCHDOG_USEC=$WD_USEC sh -c \
		'if [ "$1" = self ]; then WATCHDOG_PID=$$; else WATCHDOG_PID=$1; fi; export WATCHDOG_PID; shift; exec "$@"' \
		sh "$1" "$CGPOOLD" --config "$T_DIR/cgpool.conf" >> "$T_DIR/daemon.log" 2>&1 9>&- &
	T_DAEMON_PID=$!
}
count() { grep -c "$1" "$NLOG"; }
# the sink's timestamps of the lines matching a pattern, one a line
stamps() { grep "$1" "$NLOG" | cut -d' ' -f1; }

write_config
start_notified self
wait_for 10 grep -q 'READY=1' "$NLOG" || { cat "$T_DIR/daemon.log"; hard_error "no READY=1"; }
check "one READY=1 at start" [ "$(count 'READY=1')" = 1 ]
check "READY=1 only once the control socket accepts" grep -q 'READY=1.* socket=up$' "$NLOG"
check "READY=1 carries STATUS" grep -q 'READY=1|STATUS=[0-9]* slots: [0-9]* warm, 0 running, 0 idle, 0 retiring; lru_reparenting ' "$NLOG"
check "the control socket answers" "$CGPOOLCTL" status

# --- the watchdog: 2 s of it
sleep 2.2
n=$(count '^[0-9]* WATCHDOG=1$')
gaps=$(stamps '^[0-9]* WATCHDOG=1$' | awk 'NR > 1 { g = $1 - prev; if (g < min || min == "") min = g; if (g > max) max = g } { prev = $1 } END { print min + 0, max + 0 }')
echo "watchdog: $n messages, gaps (min max) $gaps us, WATCHDOG_USEC $WD_USEC"
between() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
check "WATCHDOG=1 about every WATCHDOG_USEC/2 (got $n in ~2.2 s)" between "$n" 8 13
set -- $gaps
check "watchdog gaps near $((WD_USEC / 2)) us (min $1, max $2)" \
	sh -c "[ $1 -ge $((WD_USEC / 2 - 50000)) ] && [ $2 -le $((WD_USEC / 2 + 150000)) ]"

# --- STATUS follows the runs
"$CGPOOLCTL" exec web -- sleep 2 > /dev/null 2>&1 9>&- &
exec_pid=$!
check "STATUS says 1 running while web runs" wait_for 5 grep -q 'STATUS=.* 1 running, ' "$NLOG"
wait "$exec_pid"
check "STATUS says 1 idle once it ended" wait_for 5 grep -q 'STATUS=.* 0 running, 1 idle, ' "$NLOG"
sleep 1.2
# only changes, at most one a second (STATUS alone: not READY's)
grep -v 'READY=1' "$NLOG" | grep 'STATUS=' | sed 's/|/ /g' > "$T_DIR/status"
echo "STATUS lines:"; cat "$T_DIR/status"
check "no STATUS line repeats the one before" awk '{ t = $0; sub(/^[0-9]* /, "", t) } NR > 1 && t == prev { exit 1 } { prev = t }' "$T_DIR/status"
check "STATUS lines at least ~1 s apart" awk -v first="$(stamps 'READY=1' | head -n 1)" \
	'BEGIN { prev = first } $1 - prev < 900000 { exit 1 } { prev = $1 }' "$T_DIR/status"

# --- reload
before=$(wc -l < "$NLOG")
"$CGPOOLCTL" reload > /dev/null || fail "cgpoolctl reload"
wait_for 5 sh -c "tail -n +$((before + 1)) '$NLOG' | grep -q 'READY=1'"
tail -n +$((before + 1)) "$NLOG" | grep -v 'WATCHDOG=1$' > "$T_DIR/reload"
echo "reload:"; cat "$T_DIR/reload"
check "reload: RELOADING=1 with MONOTONIC_USEC first" grep -q '^[0-9]* RELOADING=1|MONOTONIC_USEC=[0-9]*$' "$T_DIR/reload"
check "reload: then READY=1 with STATUS" sh -c "sed -n 2p '$T_DIR/reload' | grep -q ' READY=1|STATUS=.* slots: '"
check "reload: MONOTONIC_USEC is CLOCK_MONOTONIC now (within 2 s of its arrival)" awk -F'[ =|]' \
	'NR == 1 { d = $1 - $5; if (d < 0) d = -d; exit !(d < 2000000) }' "$T_DIR/reload"

# --- stop
stop_daemon
check "STOPPING=1 on SIGTERM" wait_for 2 grep -q '^[0-9]* STOPPING=1$' "$NLOG"

# --- WATCHDOG_PID names another process: no watchdog
: > "$NLOG"
start_notified 1
wait_for 10 grep -q 'READY=1' "$NLOG" || hard_error "no READY=1 after the restart"
sleep 1
check "no WATCHDOG=1 when WATCHDOG_PID is not the daemon" [ "$(count 'WATCHDOG=1')" = 0 ]
check "the restarted daemon reports the idle slot" grep -q 'READY=1|STATUS=.* 1 idle, ' "$NLOG"
stop_daemon
finish
