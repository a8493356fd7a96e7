#!/bin/sh
# A busy node. Beside the daemon and below its pool root: a service in a
# cgroup of its own, an empty memory cgroup made and removed 10 times a second, cgroups that held page cache
# dying and being freed as their files go, a process in the pool root itself
# writing 1 MiB every 100 ms (where the kernel lets one be there: memory on
# v1), and tens of retirements in flight. Through all of it the probe at
# start and CGPOOL_BUSY_PROBES (10) probe --wait give the kernel's answer
# (no; yes from 7.1, which reparents a removed group's LRU pages), the
# retirements in mode reparent end pinned (reparented from 7.1), those in
# mode drain take their pages and end drained (pinned where the groups dying
# beside them hold the count up: below), and once the churn stops the dying
# count the daemon reports is the kernel's.
. "${top_srcdir:-.}/tests/integ/lib.sh"
dying_count_lock

PROBES=${CGPOOL_BUSY_PROBES:-10}
RETIRE_EACH=${CGPOOL_BUSY_RETIRE:-10}
MIB=1048576
kv=$(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
set -- $kv
if [ "$1" -gt 7 ] || { [ "$1" = 7 ] && [ "$2" -ge 1 ]; }; then want=yes; kept=reparented; else want=no; kept=pinned; fi
echo "kernel $(uname -r), memory on $T_MEMORY: lru_reparenting should be $want"

write_config "[retire]
verify_timeout = 20s
rate = 50"
R=$T_MEMMNT$T_ROOT
mkdir -p "$R" || hard_error "mkdir $R"
[ "$T_MEMORY" = v2 ] && echo "+memory" > "$R/cgroup.subtree_control"

# --- the churn, each part a loop of its own until $T_DIR/stop
: > "$T_DIR/churn-pids"
# a service beside the daemon's slots, in a cgroup of its own below the root
mkdir "$R/beside" || hard_error "mkdir $R/beside"
sh -c 'echo $$ > "$1/cgroup.procs" && while [ ! -e "$2/stop" ]; do sleep 0.2; done' sh "$R/beside" "$T_DIR" 9>&- &
echo $! >> "$T_DIR/churn-pids"
# an empty memcg made and removed 10 times a second
(
	i=0
	while [ ! -e "$T_DIR/stop" ]; do
		mkdir "$R/empty-$i" 2>/dev/null && rmdir "$R/empty-$i"
		i=$((i + 1))
		sleep 0.1
	done
) 9>&- &
echo $! >> "$T_DIR/churn-pids"
# groups that held page cache: 2 MiB written in each, removed (dying while
# the pages live), the file deleted a second later (then freed)
(
	i=0
	while [ ! -e "$T_DIR/stop" ]; do
		g="$R/cache-$i"
		mkdir "$g" 2>/dev/null || { sleep 0.2; continue; }
		sh -c 'echo $$ > "$1/cgroup.procs" && dd if=/dev/zero of="$2" bs=1M count=2 2>/dev/null' sh "$g" \
			"$T_DIR/cache-$i"
		rmdir "$g"
		sleep 1
		rm -f "$T_DIR/cache-$i"
		i=$((i + 1))
	done
) 9>&- &
echo $! >> "$T_DIR/churn-pids"
# a process in the pool root writing 1 MiB every 100 ms (v2 lets no process
# live in a cgroup that gives its children memory)
if [ "$T_MEMORY" = v1 ]; then
	sh -c 'echo $$ > "$1/cgroup.procs" || exit 1
		i=0
		while [ ! -e "$2/stop" ]; do
			dd if=/dev/zero of="$2/root-$((i % 20))" bs=1M count=1 2>/dev/null
			i=$((i + 1))
			sleep 0.1
		done' sh "$R" "$T_DIR" 9>&- &
	echo $! >> "$T_DIR/churn-pids"
	root_writer=yes
else
	root_writer="no (v2: no process in a cgroup that gives its children memory)"
fi
sleep 1

start_daemon
check "cgpoold says at start, in one line, that its pool root is shared" \
	grep -q "pool root .* is shared: .* not cgpool's.*give cgpoold a root of its own" "$T_DIR/daemon.log"
v=$(probe_verdict)
ev=$("$CGPOOLCTL" --json probe | jstr lru_reparenting_evidence)
echo "probe at start: $v ($ev)"
check "the probe at start says $want on a busy node (writer in the root: $root_writer)" [ "$v" = $want ]
case $ev in *"cgpool-lru-probe/r"*": "*) pass "its evidence is what its own place read" ;; *) fail "evidence: $ev" ;; esac

# --- retirements in flight: RETIRE_EACH in mode reparent, as many in mode
# drain, each slot holding 4 MiB of page cache
i=0
while [ $i -lt "$RETIRE_EACH" ]; do
	for m in reparent drain; do
		"$CGPOOLCTL" exec "$m-$i" -- dd if=/dev/zero of="$T_DIR/slot-$m-$i" bs=1M count=4 2>/dev/null ||
			fail "exec $m-$i"
	done
	i=$((i + 1))
done
i=0
while [ $i -lt "$RETIRE_EACH" ]; do
	for m in reparent drain; do
		"$CGPOOLCTL" --json retire "$m-$i" --mode $m --wait > "$T_DIR/out-$m-$i" 2>&1 9>&- &
	done
	i=$((i + 1))
done

# --- meanwhile, probe --wait again and again
p=1
while [ $p -le "$PROBES" ]; do
	out=$("$CGPOOLCTL" --json probe --wait)
	v=$(echo "$out" | json lru_reparenting)
	echo "probe --wait $p: $v ($(echo "$out" | jstr lru_reparenting_evidence))"
	[ "$v" = $want ] || fail "probe --wait $p said $v, the kernel: $want"
	p=$((p + 1))
done
[ "$T_FAILS" = 0 ] && pass "$PROBES probe --wait on a busy node: $want every time"
wait_for 60 sh -c "[ \$(grep -l outcome \"$T_DIR\"/out-* 2>/dev/null | wc -l) -ge $((RETIRE_EACH * 2)) ]" ||
	fail "retirements still unfinished after 60 s"

bad=0
for f in "$T_DIR"/out-reparent-*; do
	o=$(json outcome < "$f")
	[ "$o" = $kept ] || { bad=$((bad + 1)); echo "${f##*/out-}: $o, want $kept: $(cat "$f")"; }
done
check "$RETIRE_EACH reparent retirements in flight together: $kept each" [ $bad = 0 ]
# drained: each retirement is judged by its slot's own directory, so the
# groups dying beside it move no verdict: every drain retirement is drained,
# or pinned only with the pages no reclaim took still charged to it (5.10
# leaves a few after a write, see doc/kernels.md), which its verdict reports
bad=0 drained=0
for f in "$T_DIR"/out-drain-*; do
	o=$(json outcome < "$f")
	[ "$(json drained_bytes < "$f")" -ge $((3 * MIB)) ] || { bad=$((bad + 1)); echo "${f##*/out-}: too little drained: $(cat "$f")"; }
	case $o in
	drained) drained=$((drained + 1)) ;;
	pinned)
		echo "${f##*/out-}: pinned: $(cat "$f")"
		[ "$(json lru_bytes < "$f")" -gt 0 ] || bad=$((bad + 1)) ;;
	*) bad=$((bad + 1)); echo "${f##*/out-}: $o, want drained: $(cat "$f")" ;;
	esac
done
echo "drain retirements: $drained of $RETIRE_EACH drained, the others pinned by pages no reclaim took"
check "$RETIRE_EACH drain retirements in flight together: each drained its pages, $drained drained, none pinned without pages left" \
	test $bad = 0 -a $drained -ge 1

# each verdict says what it rests on: its slot's own directory as read (on a
# kernel that keeps a removed group with its pages: the pinned run below it)
noev=0
for f in "$T_DIR"/out-*; do
	ev=$(jstr evidence < "$f")
	n=${f##*/out-}
	case $ev in *"its own directory slot-"*" (nothing else in it): "*) ;; *) noev=$((noev + 1)); echo "$n: evidence '$ev'" ;; esac
	case $n:$want:$ev in
	reparent-*:no:*": 0 dying below it"* | reparent-*:no:*": 0 bytes of LRU still charged"*)
		noev=$((noev + 1)); echo "$n: pinned, but its evidence says freed: '$ev'" ;;
	esac
done
echo "evidence of reparent-0: $(jstr evidence < "$T_DIR/out-reparent-0")"
echo "evidence of drain-0: $(jstr evidence < "$T_DIR/out-drain-0")"
check "every retirement says what its verdict rests on: its own directory" [ $noev = 0 ]

# --- the churn stops; the count the daemon reports is the kernel's
touch "$T_DIR/stop"
for p in $(cat "$T_DIR/churn-pids"); do wait "$p" 2>/dev/null; done
rm -f "$T_DIR"/cache-* "$T_DIR"/root-*
kernel_dying() {
	if [ "$T_MEMORY" = v1 ]; then
		dying_memcgs
	else
		d=$(sed -n 's/^nr_dying_descendants //p' "$R/cgroup.stat")
		for own in cgpool-lru-probe cgpool-wb-cleanup; do
			[ -f "$R/$own/cgroup.stat" ] && d=$((d - $(sed -n 's/^nr_dying_descendants //p' "$R/$own/cgroup.stat")))
		done
		echo "$d"
	fi
}
same() {
	a=$("$CGPOOLCTL" --json status | json dying_memcgs)
	b=$(kernel_dying)
	[ "$a" = "$b" ]
}
check "the daemon's dying count is the kernel's ($(kernel_dying))" wait_for 10 same
echo "daemon: $("$CGPOOLCTL" --json status | json dying_memcgs), kernel: $(kernel_dying)"

stop_daemon
for f in "$T_DIR"/slot-*; do rm -f "$f"; done
sync
echo 1 > /proc/sys/vm/drop_caches
remove_root
finish
