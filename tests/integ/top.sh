#!/bin/sh
# cgpoolctl top, the live view, in an 80x24 tmux pane: the daemon's line,
# the dying-memcg count and the slots show; more slots than rows end in
# "... N more" with the first line still on top (nothing scrolled), and no
# line is wider than the pane (a 100-byte key is cut); k sorts by key; a run
# started while it is up shows within a refresh (-d 1) and a margin; q ends
# it with exit 0 and the terminal's settings as they were. Then --once (and
# top alone, its output not a terminal) print one frame with no escape byte,
# --json --once one object; without a daemon, and as nobody, the census
# still shows.
. "${top_srcdir:-.}/tests/integ/lib.sh"

command -v tmux > /dev/null 2>&1 || skip "tmux is not installed"

DELAY=1	 # seconds between refreshes
MARGIN=3 # seconds allowed on top of a refresh interval
FILL=30	 # idle keys, more than the pane has rows for
LONGKEY=a.long.$(printf '%093d' 0) # 100 bytes

# tmux -L: a server of this test's own, its socket in the test's directory
TM_SOCK=cgpool-top-$$
TMUX_TMPDIR=$T_DIR
export TMUX_TMPDIR
unset TMUX # even when the test runs inside tmux
tm() { tmux -L "$TM_SOCK" -f "$T_DIR/tmux.conf" "$@"; }
JOBS=
end() {
	tm kill-server > /dev/null 2>&1
	[ -n "$JOBS" ] && kill $JOBS 2> /dev/null
	cleanup
}
trap end EXIT

write_config "[pool]
max_slots = 100
idle_timeout = 1h
[job a.exit3]
exec = sh -c 'exit 3'
restart = no"
start_daemon

# --- slots: two running, one whose job exited 3, FILL idle ones and a long key
"$CGPOOLCTL" exec a.run1 -- sleep 300 > /dev/null 2>&1 9>&- &
JOBS="$JOBS $!"
"$CGPOOLCTL" exec a.run2 -- sleep 300 > /dev/null 2>&1 9>&- &
JOBS="$JOBS $!"
sleep 300 9>&- &
SLEEPER=$!
JOBS="$JOBS $SLEEPER"
i=0
while [ $i -lt $FILL ]; do
	"$CGPOOLCTL" attach "z.fill.$i" $SLEEPER > /dev/null || hard_error "attach z.fill.$i"
	i=$((i + 1))
done
"$CGPOOLCTL" attach "$LONGKEY" $SLEEPER > /dev/null || hard_error "attach the long key"
running() { "$CGPOOLCTL" list | grep -q "^$1  *running "; }
exited3() { "$CGPOOLCTL" --json status a.exit3 | grep -q '"exit_status": *3'; }
wait_for 10 running a.run1 || hard_error "a.run1 is not running"
wait_for 10 running a.run2 || hard_error "a.run2 is not running"
wait_for 10 exited3 || hard_error "the job a.exit3 did not end with exit 3"

# --- the live view in a tmux pane of 80x24 (no status line)
echo "set -g status off" > "$T_DIR/tmux.conf"
cat > "$T_DIR/pane.sh" <<EOF
stty -g > "$T_DIR/stty.before"
"$CGPOOLCTL" --socket "$T_SOCK" top -d $DELAY 2> "$T_DIR/top.err"
rc=\$?
stty -g > "$T_DIR/stty.after"
echo \$rc > "$T_DIR/top.rc"
EOF
tm new-session -d -s top -x 80 -y 24 "sh '$T_DIR/pane.sh'" || hard_error "tmux new-session"
size=$(tm display-message -p -t top '#{pane_width}x#{pane_height}')
[ "$size" = 80x24 ] || hard_error "the tmux pane is $size, not 80x24"

# A whole frame into $T_DIR/screen: the pane's lines, wrapped ones joined (a
# line wider than the pane shows), taken when the frame's last line is drawn
# (there are more slots than rows, so it is "... N more"); a capture that
# comes while a frame is being written is not one.
frame() {
	tm capture-pane -p -J -t top > "$T_DIR/capture" || return 1
	case $(grep -v '^$' "$T_DIR/capture" | tail -n 1) in
	"... "*" more") mv "$T_DIR/capture" "$T_DIR/screen" ;;
	*) return 1 ;;
	esac
}
# has PATTERN...: every pattern (grep -E) in the last whole frame
has() {
	for p; do grep -Eq -- "$p" "$T_DIR/screen" || return 1; done
}
# shows PATTERN...: a whole frame now, with every pattern
shows() { frame && has "$@"; }
dump() { echo "--- the screen:"; cat "$T_DIR/screen"; echo "---"; }

check "the view comes up with the daemon's line and the dying count" \
	wait_for 10 shows '^cgpoold ' '^dying memcgs: [0-9]+ \([+-][0-9]+ since last, [+-][0-9]+ since start\), memcg IDs left: [0-9]+'
check "the column names show" has '^KEY +STATE +RUNS +MEMORY +LAST$'
tm send-keys -t top k
check "k sorts by key" wait_for 5 shows 'sort: key;'
check "the running slots show" has '^a\.run1 +running +1 ' '^a\.run2 +running +1 '
check "the last run's exit status shows" has '^a\.exit3 +idle +1 .* exit 3$'
check "the long key is cut to fit" has '^a\.long\.0+~ +[a-z]+ +1 '
check "more slots than rows: ... N more" has '^\.\.\. [0-9]+ more$'
dump
check "at most 24 lines" [ "$(wc -l < "$T_DIR/screen")" -le 24 ]
check "nothing scrolled: the daemon's line is the first" sh -c "head -n 1 '$T_DIR/screen' | grep -q '^cgpoold '"
check "no line is wider than 80 columns" awk 'length > 80 { bad = 1 } END { exit bad }' "$T_DIR/screen"

# a new run shows within a refresh interval and the margin
t0=$(date +%s.%N)
"$CGPOOLCTL" exec a.new -- sleep 300 > /dev/null 2>&1 9>&- &
JOBS="$JOBS $!"
wait_for $((DELAY + MARGIN)) shows '^a\.new +running +1 '
rc=$?
took=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
check "a run started later shows within ${DELAY}s + ${MARGIN}s (took ${took}s)" [ $rc -eq 0 ]
[ $rc -eq 0 ] || dump

# q quits: the pane's process ends, the terminal as it was
tm send-keys -t top q
ended() { [ -s "$T_DIR/top.rc" ]; }
check "q ends it" wait_for 5 ended
check "exit status 0 (got $(cat "$T_DIR/top.rc" 2> /dev/null))" [ "$(cat "$T_DIR/top.rc" 2> /dev/null)" = 0 ]
check "the terminal's settings are restored" cmp -s "$T_DIR/stty.before" "$T_DIR/stty.after"
check "nothing on standard error" [ ! -s "$T_DIR/top.err" ]
gone() { ! tm has-session -t top 2> /dev/null; }
check "the pane is gone" wait_for 5 gone
tm kill-server > /dev/null 2>&1

# --- one frame as text: --once, and a pipe for standard output
ONCE_DYING='^dying memcgs: [0-9]+, memcg IDs left: [0-9]+$' # one frame: no change to show
no_escape() { [ "$(tr -dc '\033' < "$1" | wc -c)" -eq 0 ]; }
"$CGPOOLCTL" top --once > "$T_DIR/once" 2>&1
rc=$?
check "--once exits 0 (got $rc)" [ $rc -eq 0 ]
cat "$T_DIR/once"
check "--once prints the slot lines" grep -Eq '^a\.run1 +running ' "$T_DIR/once"
check "--once prints every slot" [ "$(grep -c '^z\.fill\.' "$T_DIR/once")" -eq $FILL ]
check "--once prints the long key whole" grep -q "^$LONGKEY " "$T_DIR/once"
check "--once prints the dying count" grep -Eq "$ONCE_DYING" "$T_DIR/once"
check "--once prints no escape byte" no_escape "$T_DIR/once"
timeout 20 "$CGPOOLCTL" top < /dev/null > "$T_DIR/plain" 2>&1
rc=$?
check "standard output not a terminal: one frame, then exit 0 (got $rc)" [ $rc -eq 0 ]
check "standard output not a terminal: the slot lines" grep -Eq '^a\.run1 +running ' "$T_DIR/plain"
check "standard output not a terminal: no escape byte" no_escape "$T_DIR/plain"
"$CGPOOLCTL" --json top --once > "$T_DIR/once.json"
rc=$?
check "--json --once exits 0 (got $rc)" [ $rc -eq 0 ]
check "--json --once: one object with census and slots" \
	grep -Eq '^\{"census": *\{.*"total": *[0-9]+.*"slots": *\[.*"key": *"a\.run1"' "$T_DIR/once.json"
check "--json --once: the last run of a.exit3" grep -Eq '"exit_status": *3' "$T_DIR/once.json"
"$CGPOOLCTL" top --delay 0 > /dev/null 2>&1
rc=$?
check "--delay 0 is a usage error (exit $rc)" [ $rc -eq 64 ]

# --- as nobody (no access to this test's socket), then without a daemon
if command -v setpriv > /dev/null 2>&1; then
	who="--reuid=nobody --regid=nogroup"
	setpriv $who --clear-groups true 2> /dev/null || who="--reuid=65534 --regid=65534"
	setpriv $who --clear-groups "$CGPOOLCTL" top --once > "$T_DIR/nobody" 2>&1
	rc=$?
	echo "as nobody (exit $rc):"
	cat "$T_DIR/nobody"
	check "as nobody --once exits 0" [ $rc -eq 0 ]
	check "as nobody --once prints the census" grep -Eq '^dying memcgs: ([0-9]+|unknown)' "$T_DIR/nobody"
else
	echo "note: no setpriv here, --once as nobody is not tried"
fi
stop_daemon
"$CGPOOLCTL" top --once > "$T_DIR/nodaemon" 2>&1
rc=$?
check "without a daemon --once exits 0 (got $rc)" [ $rc -eq 0 ]
cat "$T_DIR/nodaemon"
check "without a daemon it says so" grep -q "^daemon not reachable at $T_SOCK" "$T_DIR/nodaemon"
check "without a daemon the census shows" grep -Eq "$ONCE_DYING" "$T_DIR/nodaemon"
finish
