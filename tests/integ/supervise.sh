#!/bin/sh
# Supervised jobs ([job KEY] with exec =): cgpoold starts them in their
# slot, restarts them by policy in the same slot, stops them whole, runs
# them as the configured user with the configured environment, and keeps
# them across its own kill -9.
. "${top_srcdir:-.}/tests/integ/lib.sh"

RUNS=${CGPOOL_SUPERVISE_RUNS:-200}
ctl() { "$CGPOOLCTL" "$@"; }
field() { ctl --json status "$1" | json "$2"; }
job_state() { field "$1" job_state; }
state_is() { [ "$(job_state "$1")" = "$2" ]; }
nprocs_at_least() { [ "$(field "$1" nprocs)" -ge "$2" ] 2>/dev/null; }
runs_at_least() { [ "$(field "$1" runs)" -ge "$2" ] 2>/dev/null; }
has_nobody=$(id -u nobody 2>/dev/null)

# --- the config: each job below, and one with a user that does not exist
cat > "$T_DIR/flap.sh" <<'EOF'
#!/bin/sh
# one run: where am I, 4 KiB of page cache, exit 1; the last run stays.
# Shell builtins only: a run costs one exec, even in an emulated VM.
while read -r line; do
	case $line in 0::*) echo "$line" >> "$1/where" ;; *:memory:*) mem=$line ;; esac
done < /proc/self/cgroup
[ -n "${mem:-}" ] && echo "$mem" >> "$1/where.v1"
printf '%4096s' '' > "$1/data.$$"
n=0
[ -f "$1/count" ] && read -r n < "$1/count"
n=$((n + 1))
echo "$n" > "$1/count"
[ "$n" -ge "$2" ] && exec sleep 1000
exit 1
EOF
cat > "$T_DIR/stubborn.sh" <<'EOF'
#!/bin/sh
# ignores SIGTERM and forks 20 children that ignore it too
trap '' TERM
i=0
while [ $i -lt 20 ]; do sh -c "trap '' TERM; while :; do sleep 1; done" & i=$((i + 1)); done
echo started > "$1/stubborn.ready"
while :; do sleep 1; done
EOF
cat > "$T_DIR/forker.sh" <<'EOF'
#!/bin/sh
# ignores SIGTERM and forks 500 children as fast as it can, one after the
# other: a stop lands while it forks
trap '' TERM
echo started > "$1/forker.ready"
i=0
while [ $i -lt 500 ]; do sleep 1000 & i=$((i + 1)); done
while :; do sleep 1; done
EOF
cat > "$T_DIR/whoami.sh" <<'EOF'
#!/bin/sh
echo "uid=$(id -u) gid=$(id -g) pwd=$(pwd) greeting=$GREETING key=$CGPOOL_KEY"
exec sleep 1000
EOF
chmod 755 "$T_DIR"/*.sh
chmod 755 "$T_DIR" # the job of user nobody reads its script here
mkdir -p "$T_DIR/work" && chmod 777 "$T_DIR/work"
user_part=
if [ -n "$has_nobody" ]; then
	user_part="user = nobody
group = nogroup"
	getent group nogroup > /dev/null 2>&1 || user_part="user = nobody"
fi
write_config "[job flap]
exec = $T_DIR/flap.sh $T_DIR $RUNS
restart = always
restart_sec = 0
start_limit = off
autostart = no
[job clean]
exec = sh -c 'exit 0'
restart = on-failure
restart_sec = 0
autostart = no
[job once]
exec = sh -c 'exit 3'
restart = no
autostart = no
[job crashy]
exec = sh -c 'exit 2'
restart = always
restart_sec = 0
start_limit = 3/10s
autostart = no
[job stubborn]
exec = $T_DIR/stubborn.sh $T_DIR
stop_timeout = 2s
autostart = no
[job forker]
exec = $T_DIR/forker.sh $T_DIR
stop_timeout = 1s
autostart = no
[job who]
exec = $T_DIR/whoami.sh
$user_part
working_directory = $T_DIR/work
environment = GREETING=hello \"UNUSED=a b\"
environment = GREETING=\"hello world\"
stdout = append:$T_DIR/who.out
autostart = no
[job steady]
exec = sleep 1000
restart = always
restart_sec = 0
[job talker]
exec = sh -c 'i=0; while :; do echo \"tick \$i\"; i=\$((i + 1)); sleep 0.2; done'
autostart = no"

# a user that does not exist: a config error with its line
printf '[job bad]\nexec = /bin/true\nuser = no-such-user-cgpool\n' > "$T_DIR/bad.conf"
out=$("$CGPOOLD" --config "$T_DIR/bad.conf" --check-config 2>&1)
check "a missing user is a config error at its line ($out)" sh -c "echo '$out' | grep -q 'bad.conf:3: user: no such user'"

start_daemon
check "autostart: steady runs once the daemon is up" wait_for 5 state_is steady running
check "autostart = no: flap is stopped" state_is flap stopped
check "list shows a supervised key that never started" sh -c "\"$CGPOOLCTL\" list | grep -Eq '^flap +stopped'"
check "list --json too" sh -c "\"$CGPOOLCTL\" --json list | grep -q '\"job_state\": *\"stopped\"'"

# --- restart = always: RUNS runs, one slot, every run in it, nothing dying
if [ "$T_MEMORY" = v1 ]; then base=$(dying_memcgs); else base=$(dying_memcgs); fi
ctl run flap > /dev/null || fail "run flap"
check "flap: $RUNS runs" wait_for $((RUNS / 2 + 30)) runs_at_least flap "$RUNS"
after=$(dying_memcgs)
check "flap: runs = $RUNS exactly (the last one stays)" [ "$(field flap runs)" -eq "$RUNS" ]
check "flap: restarts = $((RUNS - 1))" [ "$(field flap restarts)" -eq $((RUNS - 1)) ]
# where: the cgroup2 line of each run; pure v1 has none (no cgroup2
# hierarchy), only where.v1
w=$T_DIR/where
[ -s "$w" ] || w=$T_DIR/where.v1
check "flap: every run was in one cgroup ($(sort -u "$w" | head -n 1))" [ "$(sort -u "$w" | wc -l)" -eq 1 ]
check "flap: ... the key's slot" grep -q "/$(field flap name)/run\$" "$w"
check "flap: a line from each run" [ "$(wc -l < "$w")" -eq "$RUNS" ]
if [ -s "$T_DIR/where" ] && [ -f "$T_DIR/where.v1" ]; then
	check "flap: every run in the slot on the v1 memory hierarchy too" \
		sh -c "[ \$(sort -u '$T_DIR/where.v1' | wc -l) -eq 1 ] && grep -q '/$(field flap name)/run\$' '$T_DIR/where.v1'"
fi
ctl --json status flap > "$T_DIR/flap.json"
ended=$(grep -o '"exit_status": *[0-9][0-9]*' "$T_DIR/flap.json" | wc -l)
ones=$(grep -o '"exit_status": *1\b' "$T_DIR/flap.json" | wc -l)
check "flap: every ended run recorded exit_status 1 ($ones of $ended)" sh -c "[ $ended -ge 6 ] && [ $ones -eq $ended ]"
echo "flap: dying memcgs $base -> $after over $RUNS runs"
check "flap: no dying memcg added by $RUNS restarts" [ "$after" -le $((base + 2)) ]
ctl stop flap > /dev/null
rm -f "$T_DIR"/data.*

# the same restarts the way a fresh-cgroup supervisor does them
lru=$(probe_verdict)
base=$(dying_memcgs)
i=0
while [ $i -lt "$RUNS" ]; do
	d="$T_MEMMNT$T_ROOT/fresh-$i"
	mkdir "$d" || break
	sh -c 'echo $$ > "$1/cgroup.procs"; printf "%4096s" "" > "$2/fresh.$$"' sh "$d" "$T_DIR"
	rmdir "$d"
	i=$((i + 1))
done
fresh=$(( $(dying_memcgs) - base ))
echo "a fresh cgroup per start: $fresh dying memcgs added by $i starts (lru_reparenting $lru)"
if [ "$lru" = no ]; then
	check "a fresh cgroup per start leaves most of them dying ($fresh of $i)" [ "$fresh" -ge $((i * 3 / 4)) ]
fi
rm -f "$T_DIR"/fresh.*

# --- policies
ctl run clean > /dev/null
check "on-failure: an exit 0 is not restarted" wait_for 5 state_is clean stopped
check "on-failure: ... one run" [ "$(field clean runs)" -eq 1 ]
ctl run once > /dev/null
check "no: an exit 3 is not restarted, the job is failed" wait_for 5 state_is once failed
check "no: ... one run" [ "$(field once runs)" -eq 1 ]
ctl run crashy > /dev/null
check "start limit: a job crashing fast ends up failed" wait_for 10 state_is crashy failed
runs=$(field crashy runs)
check "start limit: ... after 3 starts ($runs)" [ "$runs" -eq 3 ]
ctl run crashy > /dev/null
check "run clears failed: it starts again" wait_for 5 runs_at_least crashy $((runs + 1))
wait_for 10 state_is crashy failed

# --- stop: a job that ignores SIGTERM and forks
ctl run stubborn > /dev/null
wait_for 10 test -f "$T_DIR/stubborn.ready"
n=$(field stubborn nprocs)
check "stubborn: its 20 children are in the slot ($n processes)" [ "$n" -ge 21 ]
t0=$(date +%s)
ctl stop stubborn > /dev/null
check "stop: the slot is empty within stop_timeout + 1 s" wait_for 3 state_is stubborn stopped
echo "stubborn: stopped in $(( $(date +%s) - t0 )) s, $(field stubborn nprocs) processes left"
check "stop: no process left" [ "$(field stubborn nprocs)" -eq 0 ]

# --- stop while the job forks: cgroup.kill where the kernel has it, else
# the slot frozen and SIGKILL rounds until it is empty
ctl run forker > /dev/null
wait_for 10 test -f "$T_DIR/forker.ready"
wait_for 5 nprocs_at_least forker 20
ctl stop forker > /dev/null
check "forker: stopped, its slot empty, while it forked" wait_for 10 state_is forker stopped
echo "forker: $(field forker nprocs) processes left; $(grep -o 'job forker: stop_timeout passed, .*' "$T_DIR/daemon.log" | tail -n 1)"
check "forker: no process left" [ "$(field forker nprocs)" -eq 0 ]
if [ "$("$CGPOOLCTL" --json probe | json cgroup_kill)" = true ]; then
	check "forker: killed through cgroup.kill" grep -q 'job forker: stop_timeout passed, cgroup.kill written' "$T_DIR/daemon.log"
else
	check "forker: killed by SIGKILL rounds (no cgroup.kill here)" \
		grep -q 'job forker: stop_timeout passed, SIGKILL sent to every process of the slot' "$T_DIR/daemon.log"
fi

# --- user, group, environment, working directory, stdout = append:
echo "an earlier line" > "$T_DIR/who.out"
ctl run who > /dev/null
check "who: its line is appended to stdout's file" wait_for 5 grep -q greeting "$T_DIR/who.out"
check "who: append: keeps what the file held" grep -q "an earlier line" "$T_DIR/who.out"
line=$(grep greeting "$T_DIR/who.out")
echo "who: $line"
if [ -n "$has_nobody" ]; then
	check "who: runs as user nobody" sh -c "echo '$line' | grep -q 'uid=$has_nobody '"
	gid=$(getent group nogroup | cut -d: -f3)
	[ -n "$gid" ] && check "who: with group nogroup" sh -c "echo '$line' | grep -q 'gid=$gid '"
fi
check "who: in its working_directory" sh -c "echo '$line' | grep -q 'pwd=$T_DIR/work '"
check "who: the later environment setting wins" sh -c "echo '$line' | grep -q 'greeting=hello world key=who'"

# --- kill -9 of the daemon with 3 jobs running
echo $((RUNS - 1)) > "$T_DIR/count"
ctl run flap > /dev/null # its first run now is its last (sleep 1000)
wait_for 10 state_is flap running
ctl run talker > /dev/null
ticks() { grep -c '^talker\[[0-9]*\]: tick' "$T_DIR/daemon.log"; }
check "talker: its output reaches the daemon's log, a line each" wait_for 5 sh -c "[ \$(grep -c '^talker\[[0-9]*\]: tick' '$T_DIR/daemon.log') -ge 2 ]"
pid_talker=$(field talker main_pid)
for k in steady who flap; do
	eval "pid_$k=$(field $k main_pid) slot_$k=$(field $k name)"
done
kill -9 "$T_DAEMON_PID"
wait "$T_DAEMON_PID" 2>/dev/null
T_DAEMON_PID=
sleep 0.5 # the talker writes into its pipe while no daemon reads it
check "kill -9: the jobs kept running without the daemon" kill -0 "$pid_steady" "$pid_who" "$pid_flap" "$pid_talker"
before=$(ticks)
start_daemon
for k in steady who flap; do
	eval "p=\$pid_$k s=\$slot_$k"
	check "kill -9: $k is adopted, running in its slot" \
		sh -c "[ \"\$(\"$CGPOOLCTL\" --json status $k | sed -n 's/.*\"main_pid\": *\([0-9]*\).*/\1/p')\" = $p ] && \"$CGPOOLCTL\" --json status $k | grep -q '\"name\": *\"$s\"' && \"$CGPOOLCTL\" --json status $k | grep -q '\"job_state\": *\"running\"'"
done
check "kill -9: the talker's output reaches the new daemon's log" wait_for 5 sh -c "[ \$(grep -c '^talker\[[0-9]*\]: tick' '$T_DIR/daemon.log') -gt $((before + 2)) ]"
check "kill -9: ... from the same process" [ "$(field talker main_pid)" = "$pid_talker" ]
ctl stop talker > /dev/null
ctl stop who > /dev/null
check "kill -9: stop of an adopted job works" wait_for 5 state_is who stopped
kill -9 "$pid_steady"
check "kill -9: a crash of an adopted job is restarted (restart = always)" \
	wait_for 5 sh -c "p=\$(\"$CGPOOLCTL\" --json status steady | sed -n 's/.*\"main_pid\": *\([0-9]*\).*/\1/p'); [ -n \"\$p\" ] && [ \"\$p\" != $pid_steady ]"
check "kill -9: ... in the same slot" [ "$(field steady name)" = "$slot_steady" ]
ctl stop flap > /dev/null
wait_for 5 state_is flap stopped

# --- reload: a job gone from the config is stopped, a new one starts
pid=$(field steady main_pid)
sed -i 's/^\[job steady\]$/[job fresh]/' "$T_DIR/cgpool.conf"
ctl reload > /dev/null || fail "reload"
check "reload: the removed job's process is stopped" wait_for 5 sh -c "! kill -0 $pid 2>/dev/null"
check "reload: the added job (autostart) runs" wait_for 5 state_is fresh running
check "reload: the removed job is no longer supervised" sh -c "! \"$CGPOOLCTL\" run steady 2>/dev/null"
ctl stop fresh > /dev/null
rm -f "$T_DIR"/data.* "$T_DIR"/where*
finish
