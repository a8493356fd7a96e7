#!/bin/sh
# A two-node Slurm cluster on this host (tests/slurm/lib.sh with S_NODES=2:
# slurmd n1 and n2, each with a cgpoold of its own), set up as
# conf/slurm/alone/ ships it, then as conf/slurm/beside/ (v1 memory only):
# a job on both nodes is held by both daemons, each node's part in that
# node's slot. Checked as a user would, from each task's /proc/PID/cgroup
# against each daemon's `cgpoolctl --json status KEY`:
# - srun -N2 -n4: each node's two tasks in that node's slot, whose memory
#   limit is the job's memory per node (--mem);
# - sbatch -N2 with two steps on both nodes, one after the other: the batch
#   script in the first node's slot, each step task in its node's slot, the
#   second step in the same slots as the first; the job COMPLETED;
# - the job's normal end and scancel: a setsid stray on each node (in its
#   node's slot) is dead within 5 s, on both nodes; scontrol suspend freezes
#   the job's slot on both nodes (each slurmd through its own daemon),
#   resume thaws them (22.05: later releases call no task plug-in then);
# - an OOM kill on one node only: the job OUT_OF_MEMORY with Slurm's line,
#   the kill in that node's run record only;
# - with n2's daemon down (`required`): the job fails with the reason naming
#   n2's socket, n1's task runs, neither node is drained;
# - after each job both slots idle and released, and the next job's key
#   lands in the same slots: no slot cgroup made (slot_cgroups_created).
. "${top_srcdir:-.}/tests/integ/lib.sh"
. "${top_srcdir:-.}/tests/slurm/lib.sh"
slurm_have
slurm_have_plugins
S_NODES=2
slurm_have_nodes
command -v python3 > /dev/null || skip "python3 not found (the memory hog of the OOM check)"
S_NODE_CONFIG="[pool]
warm = 1
idle_timeout = 1h"
NODES="n1 n2"

# nstatus NODE KEY FIELD: a field of the key's slot in that node's daemon
nstatus() { nctl "$1" --json status "$2" 2> /dev/null | json "$3"; }
# made NODE: slot cgroups that node's daemon has made so far
made() { nctl "$1" --json status | json slot_cgroups_created; }
# memcg PID: the memory cgroup of a process, as in /proc/PID/cgroup
MEMSED='s/^[0-9]*:memory://p'
[ "$T_MEMORY" = v1 ] || MEMSED='s/^0:://p'
memcg() { sed -n "$MEMSED" "/proc/$1/cgroup" 2> /dev/null; }
# in_slot NODE KEY PID: the process is in the key's slot on that node
in_slot() { i_p=$(nstatus "$1" "$2" path); [ -n "$i_p" ] && [ "$T_MEMMNT$(memcg "$3")" = "$i_p" ]; }
# limit NODE KEY: the memory limit of the key's slot on that node, bytes
limit() { l_p=$(nstatus "$1" "$2" path); cat "$l_p/memory.limit_in_bytes" 2> /dev/null || cat "$l_p/memory.max"; }
# released_on_all KEY: the key idle and released in every node's daemon
released_on_all() {
	for r_n in $NODES; do
		[ "$(nstatus "$r_n" "$1" state)" = idle ] && [ "$(nstatus "$r_n" "$1" released)" = true ] || return 1
	done
}
# tasks_in_slots V FILE KEY: every "NODE PID" line of FILE is a process in
# the key's slot of that node, and every node has one at least
tasks_in_slots() {
	while read -r t_n t_p; do
		t_memcg=$(memcg "$t_p")
		check "$1: task $t_p on $t_n in $t_n's slot of $3 ($t_memcg)" in_slot "$t_n" "$3" "$t_p"
	done < "$2"
	for t_n in $NODES; do
		check "$1: $t_n ran a task of the job" grep -q "^$t_n " "$2"
	done
}
# gone NODE KEY: that node's daemon answers, and no slot is the key's
gone() { g_l=$(nctl "$1" --json list) && ! echo "$g_l" | grep -q "\"key\": *\"$2\""; }
# at WHAT: a line with the seconds since the test's start (where its time goes)
T0=$(date +%s%N)
at() { echo "-- $(( ($(date +%s%N) - T0) / 1000000 )) ms: $*"; }
# frozen_on_all KEY 0|1: the key's slot is (not) frozen on every node
# (cgroup.events of the slot's group on the cgroup2 hierarchy)
UNIFIED=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
frozen_on_all() {
	for f_n in $NODES; do
		f_e="$UNIFIED$(slurm_node_root "$f_n")/$(nstatus "$f_n" "$1" name)/run/cgroup.events"
		grep -qx "frozen $2" "$f_e" 2> /dev/null || return 1
	done
}
# job_done JOBID: the job has left the running states
job_done() { case $(job_state "$1") in PENDING | CONFIGURING | RUNNING | COMPLETING | "") return 1 ;; esac; }

# multinode V MARK: the checks with the cluster up; MARK (4 digits, distinct
# per setup) names the strays' sleeps
multinode() {
	v=$1 m=$2
	at "$v: srun -N2 -n4"
	# ---- srun -N2 -n4: each node's tasks in its slot, the node's --mem as its limit
	rm -f "$T_DIR/go" "$T_DIR/tasks"
	srun -Q -N2 -n4 --mem=100M sh -c 'echo "$SLURMD_NODENAME $$" >> "$0/tasks"; echo $SLURM_JOB_ID > "$0/srun.id"
		while [ ! -e "$0/go" ]; do sleep 0.1; done' "$T_DIR" &
	spid=$!
	wait_for 20 sh -c "[ -f '$T_DIR/tasks' ] && [ \$(wc -l < '$T_DIR/tasks') -ge 4 ]" || fail "$v: srun -N2 -n4: not 4 tasks"
	j=$(cat "$T_DIR/srun.id")
	echo "$v: job $j's tasks: $(tr '\n' ' ' < "$T_DIR/tasks")"
	tasks_in_slots "$v: srun -N2 -n4" "$T_DIR/tasks" "slurm.$j"
	for nd in $NODES; do
		check "$v: srun -N2 -n4: 2 tasks on $nd" test "$(grep -c "^$nd " "$T_DIR/tasks")" = 2
		check "$v: $nd's slot of slurm.$j: the job's --mem=100M ($(limit "$nd" "slurm.$j"))" \
			test "$(limit "$nd" "slurm.$j")" = 104857600
		check "$v: $nd's slot of slurm.$j: running, 1 run" \
			sh -c "[ '$(nstatus "$nd" "slurm.$j" state)' = running ] && [ '$(nstatus "$nd" "slurm.$j" runs)' = 1 ]"
	done
	p1=$(nstatus n1 "slurm.$j" path)
	p2=$(nstatus n2 "slurm.$j" path)
	check "$v: two slots, one a node ($p1, $p2)" sh -c "[ -n '$p1' ] && [ -n '$p2' ] && [ '$p1' != '$p2' ]"
	touch "$T_DIR/go"
	wait "$spid"
	check "$v: srun -N2 -n4 exits 0" test $? -eq 0
	wait_for 5 released_on_all "slurm.$j"
	check "$v: slurm.$j idle and released on both nodes after the job" released_on_all "slurm.$j"

	at "$v: the next job"
	# ---- the next job's key recycles: it takes a slot the node had (a warm
	# one; the released slot of slurm.$j is scrubbed into the warm one's
	# place), and no node makes a slot cgroup
	c1=$(made n1) c2=$(made n2)
	for nd in $NODES; do nctl "$nd" --json list | tr '{' '\n' | sed -n 's/.*"path": *"\([^"]*\)".*/\1/p' > "$T_DIR/slots.$nd"; done
	srun -Q -N2 -n2 sh -c 'echo "$SLURMD_NODENAME $SLURM_JOB_ID"; echo "$SLURMD_NODENAME $(sed -n "$0" /proc/self/cgroup)" >&2' \
		"$MEMSED" > "$T_DIR/next.out" 2> "$T_DIR/next.cg"
	k=$(awk 'NR == 1 { print $2 }' "$T_DIR/next.out")
	for nd in $NODES; do
		ncg=$(sed -n "s/^$nd //p" "$T_DIR/next.cg")
		check "$v: the next job slurm.$k on $nd: in a slot $nd had before it ($ncg)" grep -qx "$T_MEMMNT$ncg" "$T_DIR/slots.$nd"
		check "$v: ... which $nd's daemon holds for slurm.$k" test "$(nstatus "$nd" "slurm.$k" path)" = "$T_MEMMNT$ncg"
		wait_for 5 gone "$nd" "slurm.$j"
		check "$v: ... and the slot slurm.$j had on $nd is recycled (the key holds none)" gone "$nd" "slurm.$j"
	done
	check "$v: the next job made no slot cgroup (n1 $c1 -> $(made n1), n2 $c2 -> $(made n2))" \
		sh -c "[ '$(made n1)' = '$c1' ] && [ '$(made n2)' = '$c2' ]"
	wait_for 5 released_on_all "slurm.$k"
	check "$v: slurm.$k released on both nodes" released_on_all "slurm.$k"

	at "$v: sbatch -N2"
	# ---- sbatch -N2: the batch script on the first node, a step on both
	# (two steps one after the other: on n2, where the job holds nothing
	# between them, its part ends with the first and starts again)
	rm -f "$T_DIR/bgo" "$T_DIR/bgo1" "$T_DIR/b.tasks" "$T_DIR/b.tasks1" "$T_DIR/b.batch"
	cat > "$T_DIR/batch.sh" <<EOS
#!/bin/sh
echo "\$SLURMD_NODENAME \$\$" > "$T_DIR/b.batch"
for s in '' 1; do
	srun -Q -N2 -n2 sh -c 'echo "\$SLURMD_NODENAME \$\$" >> "$T_DIR/b.tasks\$0"; while [ ! -e "$T_DIR/bgo\$0" ]; do sleep 0.1; done' "\$s"
done
EOS
	b=$(sbatch --parsable -N2 --mem=100M --output="$T_DIR/batch.out" "$T_DIR/batch.sh")
	wait_for 30 sh -c "[ -f '$T_DIR/b.tasks' ] && [ \$(wc -l < '$T_DIR/b.tasks') -ge 2 ]" ||
		fail "$v: sbatch -N2: its step did not start ($(job_state "$b"))"
	echo "$v: batch job $b: script $(cat "$T_DIR/b.batch"), step tasks $(tr '\n' ' ' < "$T_DIR/b.tasks")"
	read -r bn bp < "$T_DIR/b.batch"
	check "$v: sbatch -N2: the batch script runs on n1 ($bn)" test "$bn" = n1
	check "$v: sbatch -N2: the batch script in n1's slot of slurm.$b" in_slot n1 "slurm.$b" "$bp"
	tasks_in_slots "$v: sbatch -N2, step 0" "$T_DIR/b.tasks" "slurm.$b"
	for nd in $NODES; do
		check "$v: sbatch -N2: $nd's slot limit is the job's --mem=100M" test "$(limit "$nd" "slurm.$b")" = 104857600
	done
	b1=$(nstatus n1 "slurm.$b" path) b2=$(nstatus n2 "slurm.$b" path)
	touch "$T_DIR/bgo"
	wait_for 30 sh -c "[ -f '$T_DIR/b.tasks1' ] && [ \$(wc -l < '$T_DIR/b.tasks1') -ge 2 ]" ||
		fail "$v: sbatch -N2: its second step did not start ($(job_state "$b"))"
	tasks_in_slots "$v: sbatch -N2, step 1" "$T_DIR/b.tasks1" "slurm.$b"
	check "$v: sbatch -N2, step 1: in the slots of step 0 ($b1, $b2)" \
		sh -c "[ '$(nstatus n1 "slurm.$b" path)' = '$b1' ] && [ '$(nstatus n2 "slurm.$b" path)' = '$b2' ]"
	check "$v: sbatch -N2, step 1: the batch script still in n1's slot" in_slot n1 "slurm.$b" "$bp"
	touch "$T_DIR/bgo1"
	wait_for 30 job_done "$b"
	check "$v: sbatch -N2: COMPLETED (is $(job_state "$b"))" test "$(job_state "$b")" = COMPLETED
	wait_for 5 released_on_all "slurm.$b"
	check "$v: slurm.$b idle and released on both nodes" released_on_all "slurm.$b"

	at "$v: the end kills strays"
	# ---- the job's end kills what it left on both nodes
	rm -f "$T_DIR/go"
	srun -Q -N2 -n2 sh -c 'echo $SLURM_JOB_ID > "$0/end.id"; setsid sleep '"${m}0"'$SLURM_NODEID < /dev/null > /dev/null 2>&1 &
		while [ ! -e "$0/go" ]; do sleep 0.1; done' "$T_DIR" &
	spid=$!
	wait_for 20 sh -c "[ \$(pgrep -fc '^sleep ${m}0[01]\$') = 2 ]" || fail "$v: the strays did not start"
	j=$(cat "$T_DIR/end.id")
	for i in 0 1; do
		nd=n$((i + 1)) s=$(pgrep -f "^sleep ${m}0$i\$" | head -n 1)
		check "$v: end: $nd's stray (pid $s) in $nd's slot of slurm.$j" in_slot "$nd" "slurm.$j" "$s"
	done
	touch "$T_DIR/go"
	wait "$spid"
	wait_for 5 sh -c "[ \$(pgrep -fc '^sleep ${m}0[01]\$') = 0 ]"
	check "$v: end: the strays on both nodes are dead within 5 s ($(strays "${m}00"), $(strays "${m}01") left)" \
		sh -c "[ $(strays "${m}00") = 0 ] && [ $(strays "${m}01") = 0 ]"
	wait_for 5 released_on_all "slurm.$j"
	check "$v: end: slurm.$j idle and released on both nodes" released_on_all "slurm.$j"

	at "$v: scancel"
	# ---- scancel of a batch job kills what it left on both nodes (the
	# strays out of the step's process tree, where Slurm's linuxproc misses them)
	b=$(sbatch --parsable -N2 --output=/dev/null --wrap "srun -Q -N2 -n2 sh -c '(setsid sleep ${m}1\$SLURM_NODEID < /dev/null > /dev/null 2>&1 &); exec sleep 300'")
	wait_for 30 sh -c "[ \$(pgrep -fc '^sleep ${m}1[01]\$') = 2 ]" || fail "$v: scancel: the strays did not start ($(job_state "$b"))"
	for i in 0 1; do
		nd=n$((i + 1)) s=$(pgrep -f "^sleep ${m}1$i\$" | head -n 1)
		check "$v: scancel: $nd's stray (pid $s) in $nd's slot of slurm.$b" in_slot "$nd" "slurm.$b" "$s"
	done
	# scontrol suspend: each node's slurmd freezes its node's slot through
	# its own daemon (task/cgpool), resume thaws both
	# (Slurm 24.11 and later call no task plug-in on suspend: doc/slurm.md)
	if [ -n "$UNIFIED" ] && [ "$S_SUSPEND_HOOKS" = yes ]; then
		scontrol suspend "$b"
		wait_for 10 frozen_on_all "slurm.$b" 1
		check "$v: suspend: the job's slot frozen on both nodes" frozen_on_all "slurm.$b" 1
		for nd in $NODES; do
			check "$v: suspend: $nd's slurmd froze its slot" \
				grep -q "task/cgpool: job $b: 1 slot(s) frozen" "$(slurm_node_log "$nd")"
		done
		scontrol resume "$b"
		wait_for 10 frozen_on_all "slurm.$b" 0
		check "$v: resume: the job's slot thawed on both nodes" frozen_on_all "slurm.$b" 0
	fi
	scancel "$b"
	wait_for 5 sh -c "[ \$(pgrep -fc '^sleep ${m}1[01]\$') = 0 ]"
	check "$v: scancel: the strays on both nodes are dead within 5 s ($(strays "${m}10"), $(strays "${m}11") left)" \
		sh -c "[ $(strays "${m}10") = 0 ] && [ $(strays "${m}11") = 0 ]"
	wait_for 10 released_on_all "slurm.$b"
	check "$v: scancel: slurm.$b idle and released on both nodes" released_on_all "slurm.$b"

	at "$v: OOM on one node"
	# ---- an OOM kill on one node makes the job OUT_OF_MEMORY
	out=$(srun -Q -N2 -n2 --mem=64M sh -c 'echo $SLURM_JOB_ID; if [ "$SLURM_NODEID" = 1 ]; then echo $SLURMD_NODENAME > "$0/hog.node"; exec python3 -c "$1"; fi' \
		"$T_DIR" "$(hog 256)" 2> "$T_DIR/hog.err")
	rc=$?
	o=$(echo "$out" | head -n 1)
	hn=$(cat "$T_DIR/hog.node")
	check "$v: OOM: srun -N2 --mem=64M with 256M allocated on $hn fails (rc $rc)" test $rc -ne 0
	wait_for 10 sh -c "[ \"\$(scontrol -o show job $o | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')\" = OUT_OF_MEMORY ]"
	check "$v: OOM: scontrol show job $o: OUT_OF_MEMORY (is $(job_state "$o"))" test "$(job_state "$o")" = OUT_OF_MEMORY
	check "$v: OOM: Slurm's line in the job's stderr" \
		grep -Eq "Detected [1-9][0-9]* oom-kill event\\(s\\) in StepId=$o\\.0\\." "$T_DIR/hog.err"
	for nd in $NODES; do
		ok=$(nctl "$nd" --json status "slurm.$o" | sed -n 's/.*"oom_kills": *\([0-9]*\).*/\1/p' | head -n 1)
		if [ "$nd" = "$hn" ]; then
			check "$v: OOM: $nd's run record of slurm.$o has the kill (oom_kills $ok)" test "${ok:-0}" -ge 1
		else
			check "$v: OOM: $nd's run record of slurm.$o has none (oom_kills $ok)" test "${ok:-x}" = 0
		fi
	done
	wait_for 5 released_on_all "slurm.$o"
	check "$v: OOM: slurm.$o idle and released on both nodes" released_on_all "slurm.$o"

	for nd in $NODES; do
		grep "error.*cgpool\|cgpool.*error" "$(slurm_node_log "$nd")" > "$T_DIR/errors"
		check "$v: no error of the plug-ins in $nd's slurmd log" test ! -s "$T_DIR/errors"
		cat "$T_DIR/errors"
	done

	at "$v: n2's daemon down"
	# ---- required, n2's daemon down: the job fails with n2's reason, n1's
	# task runs, no node is drained
	dp=$(nctl n2 --json status | json pid)
	kill "$dp"
	wait_for 10 sh -c "! CGPOOL_SOCKET='$(slurm_node_sock n2)' '$CGPOOLCTL' status > /dev/null 2>&1"
	out=$(srun -Q -N2 -n2 sh -c 'echo "ran $SLURMD_NODENAME"' 2> "$T_DIR/down.err")
	rc=$?
	echo "$v: n2's daemon down: rc $rc, stdout '$(echo "$out" | tr '\n' ' ')', stderr: $(cat "$T_DIR/down.err")"
	check "$v: n2's daemon down: srun -N2 fails (rc $rc)" test $rc -ne 0
	check "$v: n2's daemon down: n1's task ran, n2's did not" test "$out" = "ran n1"
	check "$v: n2's daemon down: the reason names n2's socket" \
		grep -q "not placed.*Connection refused (cgpoold at $(slurm_node_sock n2))" "$T_DIR/down.err"
	wait_for 10 sh -c "[ \$(sinfo -h -N -o %t | grep -c '^idle\$') = 2 ]"
	check "$v: n2's daemon down: no node drained ($(sinfo -h -N -o '%N %t' | tr '\n' ' '))" \
		test "$(sinfo -h -N -o %t | grep -c '^idle$')" = 2
}

at "start"
slurm_start cgpool || { fail "the cluster did not start with the plug-ins"; finish; exit 1; }
multinode alone 31
at "alone: done"
slurm_stop
if [ "$T_MEMORY" = v1 ] && [ -n "$(slurm_cg_dirs | grep -w freezer)" ] && [ -n "$(slurm_cg_dirs | grep -w cpuset)" ]; then
	slurm_start beside || { fail "the cluster did not start with the beside setup"; finish; exit 1; }
	multinode beside 32
	at "beside: done"
	slurm_stop
else
	echo "the beside setup needs the memory, cpuset and freezer controllers on cgroup v1: not run"
fi
finish
