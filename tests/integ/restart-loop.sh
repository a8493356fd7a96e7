#!/bin/sh
# 200 restarts of a job that appends a file to a log, each into a new cgroup
# (the usual way) and through cgpoolctl exec. The usual way leaves dying
# memory cgroups behind on kernels that do not reparent LRU pages; cgpool
# adds none, and every run lands in the same cgroup.
. "${top_srcdir:-.}/tests/integ/lib.sh"
dying_count_lock

N=${RESTARTS:-200}
dd if=/dev/zero of="$T_DIR/temp" bs=4096 count=1 2>/dev/null

start_daemon
reparenting=$(probe_verdict)

# --- the usual way: mkdir a cgroup per run, rmdir after
naive="$T_MEMMNT$T_OWN/cgpool-naive-$$"
mkdir "$naive" || hard_error "mkdir $naive"
# on v2 the runs get memory cgroups of their own only with memory enabled here
if [ "$T_MEMORY" = v2 ]; then
	echo +memory > "$naive/cgroup.subtree_control" || hard_error "enable memory in $naive"
fi
before=$(dying_memcgs)
i=0
while [ $i -lt $N ]; do
	mkdir "$naive/run$i"
	sh -c 'echo $$ > "$1/cgroup.procs" && cat "$2/temp" >> "$2/log"' sh "$naive/run$i" "$T_DIR"
	rmdir "$naive/run$i"
	i=$((i + 1))
done
rmdir "$naive"
naive_added=$(( $(dying_memcgs) - before ))
echo "usual way: $N restarts left $naive_added dying memory cgroups (lru_reparenting: $reparenting)"
if [ "$reparenting" = unknown ]; then
	fail "the daemon's probe could not tell whether this kernel reparents LRU pages"
elif [ "$reparenting" = yes ]; then
	check "usual way leaves (almost) no dying memcgs on a reparenting kernel" [ "$naive_added" -lt $((N / 10)) ]
else
	check "usual way leaves ~$N dying memcgs on this kernel (got $naive_added)" [ "$naive_added" -ge $((N * 3 / 4)) ]
fi

# --- through cgpool: every run records the inode of the cgroup it runs in
before=$(dying_memcgs)
t0=$(date +%s)
i=0
while [ $i -lt $N ]; do
	"$CGPOOLCTL" exec web -- sh -c '. "$1"; stat -c %i "$(own_memcg_dir)" >> "$2/ids"; cat "$2/temp" >> "$2/log2"' \
		sh "$top_srcdir/tests/integ/ids.sh" "$T_DIR" || fail "exec run $i exited $?"
	i=$((i + 1))
done
t1=$(date +%s)
cgpool_added=$(( $(dying_memcgs) - before ))
echo "cgpool: $N restarts in $((t1 - t0)) s left $cgpool_added dying memory cgroups"
if [ "$T_MEMORY" = v1 ]; then
	# v1 counts dying memcgs machine-wide: a cgroup of another process of
	# the machine removed meanwhile shows up too
	check "cgpool adds no dying memory cgroups (got $cgpool_added, machine-wide)" [ "$cgpool_added" -le 2 ]
else
	check "cgpool adds no dying memory cgroups (got $cgpool_added)" [ "$cgpool_added" -le 0 ]
fi

status=$("$CGPOOLCTL" --json status web)
id=$(echo "$status" | json cgroup_id)
path=$(echo "$status" | json path)
check "every run of web saw one cgroup" [ "$(sort -u "$T_DIR/ids" | wc -l)" -eq 1 ]
check "that cgroup is the slot's cgroup_id ($id)" [ "$(sort -u "$T_DIR/ids")" = "$id" ]
check "the slot's path is that cgroup" [ "$(stat -c %i "$path")" = "$id" ]
check "$N runs recorded" [ "$(wc -l < "$T_DIR/ids")" -eq "$N" ]
wait_for 5 sh -c '"$CGPOOLCTL" --json status web | grep -q "\"state\": *\"idle\""'
runs=$(echo "$("$CGPOOLCTL" --json status web)" | json runs)
check "status web counts $N runs (got $runs)" [ "$runs" = "$N" ]

rm -f "$T_DIR/log" "$T_DIR/log2"
finish
