#!/bin/sh
# The daemon's side of the census: what cgpool saved on this node (runs
# placed against slot cgroups made), the history of the machine's dying
# memcgs and its growth, and the census as Prometheus series. 20 restarts of
# one key go through the daemon; 50 cgroups are then made and removed the
# usual way. Status, metrics and `cgpoolctl dying` must say so, and the
# totals and the history must survive a restart of the daemon and a kill -9.
. "${top_srcdir:-.}/tests/integ/lib.sh"
dying_count_lock

N=20
M=50
dd if=/dev/zero of="$T_DIR/temp" bs=4096 count=1 2> /dev/null
P="$T_MEMMNT$T_ROOT-usual"
OWN=$(own_memcg_dir)

is_int() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
# near A B TOLERANCE: A and B differ by TOLERANCE at most
near() { [ $(($1 - $2)) -le "$3" ] && [ $(($2 - $1)) -le "$3" ]; }
# in_range N LOW HIGH
in_range() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
status() { "$CGPOOLCTL" --json status; }
# the value of a metric line (exact name and labels)
metric() { "$CGPOOLCTL" metrics | awk -v n="$1" '$1 == n { print $2 }'; }
# a number from the "daemon" object of cgpoolctl --json dying
census() { "$CGPOOLCTL" --json dying 2> "$T_DIR/census.err"; }
hist() { census | sed -n "s/.*\"$1\": *\(-\{0,1\}[0-9.]*\).*/\1/p" | head -n 1; }
# the census's own total, its first field (the daemon's history has "total"s too)
census_total() { census | sed -n 's/^{"total": *\([0-9]*\).*/\1/p'; }

write_config "[pool]
warm = 1"
start_daemon
created0=$(status | json slot_cgroups_created)
check "Status starts with 0 runs placed" [ "$(status | json runs_placed)" = 0 ]
check "Status counts the warm slot's cgroup ($created0)" [ "$created0" = 1 ]
check "Status has a census history" sh -c '"$CGPOOLCTL" --json status | grep -q "\"census_history\": *{\"first\": *{\"time\""'
first=$(status | sed -n 's/.*"first": *{"time": *\([0-9]*\).*/\1/p')
check "the history's first sample is from now ($first)" [ "$(($(date +%s) - ${first:-0}))" -le 10 ]

i=0
while [ $i -lt $N ]; do
	"$CGPOOLCTL" exec web -- sh -c 'cat "$1/temp" >> "$1/log"' sh "$T_DIR" || fail "exec run $i exited $?"
	i=$((i + 1))
done
placed=$(status | json runs_placed)
created=$(status | json slot_cgroups_created)
check "$N restarts: $N runs placed (got $placed)" [ "$placed" = $N ]
check "in no more slot cgroups than the warm one and one more (got $created)" [ "$created" -le 2 ]
check "metrics: cgpool_runs_placed_total $N" [ "$(metric cgpool_runs_placed_total)" = $N ]
check "metrics: cgpool_slot_cgroups_created_total $created" [ "$(metric cgpool_slot_cgroups_created_total)" = "$created" ]
"$CGPOOLCTL" dying > "$T_DIR/dying.txt" 2>&1
cat "$T_DIR/dying.txt"
check "dying says what cgpool saved" grep -q "saved by cgpool: $N runs placed in $created slot cgroups made: $((N - created)) memory" "$T_DIR/dying.txt"
check "the text fits 80 columns" awk 'length > 80 { bad = 1 } END { exit bad }' "$T_DIR/dying.txt"

# the census as series: their sum is the census's total, and few of them
before=$(census_total)
check "the census has a total ($before)" is_int "$before"
sum=$("$CGPOOLCTL" metrics | awk '$1 ~ /^cgpool_node_dying_memcgs\{/ { s += $2; n++ } END { print s + 0, n + 0 }')
series=${sum#* }
sum=${sum% *}
check "cgpool_node_dying_memcgs series sum to the census's total ($sum, $before)" near "$sum" "$before" 3
check "1 to 9 cgpool_node_dying_memcgs series ($series)" in_range "$series" 1 9
check "metrics: cgpool_node_memcg_ids_left" is_int "$(metric cgpool_node_memcg_ids_left)"
check "metrics: cgpool_node_census_complete 1" [ "$(metric cgpool_node_census_complete)" = 1 ]

# the usual way, M times: the growth since the first census shows them
mkdir "$P" || hard_error "mkdir $P"
[ "$T_MEMORY" = v2 ] && { echo +memory > "$P/cgroup.subtree_control" || hard_error "enable memory in $P"; }
w0=$(dying_memcgs)
i=0
while [ $i -lt $M ]; do
	mkdir "$P/run$i" && echo $$ > "$P/run$i/cgroup.procs" && cat "$T_DIR/temp" >> "$T_DIR/log"
	echo $$ > "$OWN/cgroup.procs" || hard_error "cannot move back to $OWN"
	rmdir "$P/run$i"
	i=$((i + 1))
done
sleep 2 # the counters lag rmdir
added=$(($(dying_memcgs) - w0))
change=$(hist change_since_first)
echo "the kernel counts $added more dying memcgs; the daemon's history: $change since its first census"
if [ "$added" -ge $((M * 9 / 10)) ]; then
	check "growth since the daemon's first census >= $((M * 9 / 10)) (got $change)" [ "${change:--1}" -ge $((M * 9 / 10)) ]
	check "metrics follow within a second" wait_for 5 sh -c \
		'[ "$("$CGPOOLCTL" metrics | awk "\$1 ~ /^cgpool_node_dying_memcgs\\{/ { s += \$2 } END { print s + 0 }")" -ge '"$((before + M * 9 / 10))"' ]'
else
	echo "note: this kernel freed them at rmdir; the growth is not checked"
fi

# a restart keeps the history and the totals; so does kill -9 (the journal)
"$CGPOOLCTL" exec web -- true || fail "exec before the restart"
stop_daemon
start_daemon
check "after a restart: the history's first sample is the same" \
	[ "$(status | sed -n 's/.*"first": *{"time": *\([0-9]*\).*/\1/p')" = "$first" ]
check "after a restart: $((N + 1)) runs placed" [ "$(status | json runs_placed)" = $((N + 1)) ]
"$CGPOOLCTL" exec web -- true || fail "exec after the restart"
kill -9 "$T_DAEMON_PID"
wait "$T_DAEMON_PID" 2> /dev/null
T_DAEMON_PID=
start_daemon
check "after kill -9: $((N + 2)) runs placed" [ "$(status | json runs_placed)" = $((N + 2)) ]
check "after kill -9: the history's first sample is the same" \
	[ "$(status | sed -n 's/.*"first": *{"time": *\([0-9]*\).*/\1/p')" = "$first" ]

# a history file that is not one: the daemon starts, says so, and begins again
stop_daemon
echo 'not json' > "$T_DIR/state/census.json"
start_daemon
check "a bad census.json is reported" grep -q "census history: .* is not a census history" "$T_DIR/daemon.log"
check "and a new history begins" [ "$(status | sed -n 's/.*"samples": *\([0-9]*\).*/\1/p')" = 1 ]
stop_daemon

rmdir "$P" 2> /dev/null
finish
