#!/bin/sh
# hostile.sh - a Slurm job stays in its slot and leaves nothing behind, on a
# real one-node cluster set up as conf/slurm/alone/ ships it (beside/ with
# S_HOSTILE_VARIANT=beside, hostile-beside.sh), with the daemon's default
# authorization and the socket open to every user:
# - nobody's job tries to leave its slot through the daemon's socket
#   (cgpoolctl exec into its own keys, after setsid, double-forked, a raw
#   Varlink Attach): each is refused with the reason, every process stays in
#   the job's slot under its --mem, and nothing of it is left 5 s after the
#   job ends;
# - nobody's job leaves 192 MiB in /dev/shm: four later jobs of root each
#   start in a slot holding < 64 MiB, and a --mem=256M job using 200 MiB
#   completes; the log and the metrics say the slot was set aside and why;
# - a second step of an allocation attaches while the first step's stray,
#   frozen (v1 freezer) so that it takes seconds to die, is being killed:
#   the step waits, then runs to its own end, and at the job's end its own
#   stray is killed and the key released.
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "${top_srcdir:-.}/tests/slurm/lib.sh"
slurm_have
slurm_have_plugins
command -v python3 > /dev/null || skip "python3 not found (the raw call and the memory hog)"
VARIANT=${S_HOSTILE_VARIANT:-cgpool}
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

write_config "[pool]
warm = 2
idle_timeout = 1h"
start_daemon
chmod 0711 "$T_DIR"
chmod 0666 "$T_SOCK"
slurm_start "$VARIANT" || { fail "the cluster did not start with the plug-ins"; finish; exit 1; }
W="$T_DIR/work"
mkdir "$W" && chmod 0777 "$W"

# ---- nobody's job tries every way out of its slot
cat > "$W/escape.sh" <<'EOF'
#!/bin/sh
cd "$1"
sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup > job.memcg
"$CGPOOLCTL" exec user.65534.a -- sh -c 'sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup' > a.out 2>&1
echo $? > a.rc
setsid "$CGPOOLCTL" exec user.65534.b -- sleep 4001 > b.out 2>&1
echo $? > b.rc
sh -c '(setsid "$CGPOOLCTL" exec user.65534.c -- sleep 4002 > c.out 2>&1; echo $? > c.rc) &'
python3 hostile.py call "$CGPOOL_SOCKET" Attach '{"key": "user.65534.d", "pids": ["self"]}' > d.out 2>&1
setsid sleep 4003 < /dev/null > /dev/null 2>&1 &
echo $! > stray.pid
while [ ! -e c.rc ]; do sleep 0.05; done
sed -n 's/^[0-9]*:memory://p' "/proc/$(cat stray.pid)/cgroup" > stray.memcg
EOF
chmod 0755 "$W/escape.sh"
cp "${top_srcdir:-.}/tests/integ/hostile.py" "$W/" && chmod 0644 "$W/hostile.py"
as_nobody env CGPOOL_SOCKET="$T_SOCK" CGPOOLCTL="$CGPOOLCTL" srun -Q --mem=128M "$W/escape.sh" "$W" \
	> "$W/escape.out" 2>&1
check "nobody's job ran its tries ($(tr '\n' ' ' < "$W/escape.out"))" test -s "$W/stray.memcg"
jobcg=$(cat "$W/job.memcg")
for t in a b c; do
	check "cgpoolctl exec user.65534.$t inside the job: refused" test "$(cat "$W/$t.rc" 2> /dev/null)" = 1
	grep -q "a job holds" "$W/$t.out" || fail "$t: no reason: $(cat "$W/$t.out" 2> /dev/null)"
	check "user.65534.$t got no slot" sh -c "! '$CGPOOLCTL' status user.65534.$t > /dev/null 2>&1"
done
check "a raw Attach inside the job: PermissionDenied" grep -q PermissionDenied "$W/d.out"
check "the job's setsid stray was in the job's slot ($jobcg)" test "$(cat "$W/stray.memcg")" = "$jobcg"
wait_for 5 sh -c "[ \$(pgrep -fc '^sleep 400[0-9]\$') = 0 ]"
check "5 s after the job: nothing of it left ($(pgrep -fa '^sleep 400[0-9]$' | tr '\n' ' '))" \
	test "$(pgrep -fc '^sleep 400[0-9]$')" = 0

# ---- a job leaves 192 MiB in /dev/shm; the next jobs of another user
shm=/dev/shm/cgpool-$T_NAME-$$
trap 'rm -f "$shm"; cleanup' EXIT
as_nobody srun -Q --mem=256M sh -c "head -c 201326592 /dev/zero > $shm" ||
	fail "nobody's job could not write 192 MiB to /dev/shm"
i=0
while [ $i -lt 4 ]; do
	srun -Q --mem=256M sh -c 'f=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)
		m=$(awk "\$3 == \"cgroup\" && \$4 ~ /(^|,)memory(,|\$)/ { print \$2; exit }" /proc/mounts)
		[ -n "$m" ] || m=$(awk "\$3 == \"cgroup2\" { print \$2; exit }" /proc/mounts)
		cat "$m$f/memory.usage_in_bytes" 2> /dev/null || cat "$m$f/memory.current"' > "$W/start.$i" 2>&1
	i=$((i + 1))
done
for i in 0 1 2 3; do
	b=$(head -n 1 "$W/start.$i")
	check "root's job $i started in a slot holding ${b:-?} bytes (< 64 MiB)" \
		sh -c "[ -n '$b' ] && [ '$b' -lt 67108864 ]"
done
srun -Q --mem=256M python3 -c "$(hog 200)"
check "a --mem=256M job using 200 MiB completes" test $? -eq 0
grep -q "not recycled: [0-9]* bytes still charged after the scrub" "$T_DIR/daemon.log"
check "the log says the slot was not recycled, and why" test $? -eq 0
aside=$("$CGPOOLCTL" metrics | sed -n 's/^cgpool_slots_set_aside_total //p')
check "cgpool_slots_set_aside_total counts it ($aside)" test "${aside:-0}" -ge 1
check "the slot is set aside, listed as leftover.*" sh -c "'$CGPOOLCTL' list | grep -q '^leftover\\.slot-'"
rm -f "$shm"

# ---- a second step while the first step's stray is being killed
fz=$(awk '$3 == "cgroup" && $4 ~ /(^|,)freezer(,|$)/ { print $2; exit }' /proc/mounts)
if [ -z "$fz" ] || [ "$VARIANT" = beside ]; then
	echo "no v1 freezer of our own here (or Slurm's proctrack uses it): the waiting step is not tried"
else
	FZ="$fz$(sed -n 's/^[0-9]*:freezer://p' /proc/self/cgroup)/cgpool-$T_NAME-$$"
	mkdir -p "$FZ"
	trap 'rm -f "$shm"; echo THAWED > "$FZ/freezer.state" 2>/dev/null; sleep 0.2; rmdir "$FZ" 2>/dev/null; cleanup' EXIT
	job=$(salloc --no-shell -N1 --mem=128M 2>&1 | sed -n 's/.*allocation \([0-9]*\).*/\1/p')
	[ -n "$job" ] || hard_error "salloc --no-shell gave no job"
	# step 1: a stray that cannot die until the test thaws it
	srun -Q --jobid="$job" sh -c "setsid sleep 4010 < /dev/null > /dev/null 2>&1 & p=\$!
		while [ \"\$(cat /proc/\$p/comm)\" != sleep ]; do sleep 0.01; done
		echo \$p > $FZ/tasks; echo FROZEN > $FZ/freezer.state"
	wait_for 5 grep -q "job slurm:$job.* ended on this node" "$T_DIR/daemon.log" ||
		fail "step 1's end did not end the job on the node"
	echo "step 1's stray: $(pgrep -fa '^sleep 4010$'); freezer $(cat "$FZ/freezer.state") with $(cat "$FZ/tasks" | tr '\n' ' ')"
	check "step 1's stray is still there, frozen" test "$(pgrep -fc '^sleep 4010$')" = 1
	# step 2 arrives now; the stray dies 1.5 s later
	srun -Q --jobid="$job" sh -c 'sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup; setsid sleep 4011 < /dev/null > /dev/null 2>&1 & echo step2-ran' \
		> "$W/step2.out" 2> "$W/step2.err" &
	s2=$!
	sleep 1.5
	echo THAWED > "$FZ/freezer.state"
	wait "$s2"
	rc=$?
	check "step 2 ran to its own end (rc $rc: $(tr '\n' ' ' < "$W/step2.err"))" sh -c "[ $rc = 0 ] && grep -q step2-ran '$W/step2.out'"
	check "step 2's task was in the job's slot" grep -q "/slot-[0-9]*/run\$" "$W/step2.out"
	check "the daemon made step 2 wait for the stray" grep -q "waits until what job slurm:$job" "$T_DIR/daemon.log"
	check "step 1's stray is gone" test "$(pgrep -fc '^sleep 4010$')" = 0
	# no holder between two steps of an allocation: each step's end is the
	# job's end on this node, so step 2's stray goes with it
	wait_for 5 sh -c "[ \$(pgrep -fc '^sleep 4011\$') = 0 ]"
	check "5 s after step 2's end, its stray is gone" test "$(pgrep -fc '^sleep 4011$')" = 0
	scancel "$job"
	wait_for 5 field_is "slurm.$job" released true || ! "$CGPOOLCTL" status "slurm.$job" > /dev/null 2>&1
	check "the job's key is released at its end" test $? -eq 0
fi
slurm_stop
finish
