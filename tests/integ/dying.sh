#!/bin/sh
# cgpoolctl dying, the census of dying memory cgroups, with no daemon
# running. 100 cgroups made the usual way below the test's own cgroup (mkdir,
# this shell moves in, appends a 4 KiB file on the disk to a log, moves back,
# rmdir); then the census must find them: on cgroup v2 as a subtree of its
# own (this test's pool root) holding them, on v1 in the machine-wide total.
# A kernel that freed them at rmdir (LRU reparenting) has nothing to find:
# there the census must agree with the kernel's own counter. As nobody it
# answers or says what it cannot read.
. "${top_srcdir:-.}/tests/integ/lib.sh"
dying_count_lock

N=100
# no daemon: a socket nobody listens on
export CGPOOL_SOCKET="$T_DIR/none.sock"
dd if=/dev/zero of="$T_DIR/temp" bs=4096 count=1 2> /dev/null
P="$T_MEMMNT$T_ROOT"
OWN=$(own_memcg_dir)

is_int() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
# near A B TOLERANCE: A and B differ by TOLERANCE at most
near() { [ $(($1 - $2)) -le "$3" ] && [ $(($2 - $1)) -le "$3" ]; }
census() { "$CGPOOLCTL" --json dying 2> "$T_DIR/census.err"; }
# the census's count for the subtree $T_ROOT (0 when it is not listed)
subtree_dying() {
	n=$(census | sed -n "s|.*{\"path\": *\"$T_ROOT\", *\"dying\": *\([0-9]*\)[,}].*|\1|p")
	echo "${n:-0}"
}
# the kernel's own witness: the pool root's counter (v2, the one the census
# names as its source) or the lib's machine-wide count (v1)
witness() {
	if [ "$T_MEMORY" = v2 ]; then
		sed -n "s/^$key //p" "$P/cgroup.stat"
	else
		dying_memcgs
	fi
}

check "no daemon answers at $CGPOOL_SOCKET" sh -c '! "$CGPOOLCTL" status > /dev/null 2>&1'
out=$(census)
rc=$?
check "cgpoolctl --json dying answers without a daemon (exit $rc: $(cat "$T_DIR/census.err"))" [ $rc -eq 0 ]
before=$(echo "$out" | json total)
layout=$(echo "$out" | json layout)
source=$(echo "$out" | json source)
echo "before: total $before, layout $layout, source $source"
check "total is an integer ($before)" is_int "$before"
check "memcg_ids_left is an integer" is_int "$(echo "$out" | json memcg_ids_left)"
is_int "$before" || before=0
check "the text output fits 80 columns" sh -c '"$CGPOOLCTL" dying 2>/dev/null | awk "length > 80 { bad = 1 } END { exit bad }"'

mkdir "$P" || hard_error "mkdir $P"
key=nr_dying_descendants
if [ "$T_MEMORY" = v2 ]; then
	echo +memory > "$P/cgroup.subtree_control" || hard_error "enable memory in $P"
	case $source in *nr_dying_subsys_memory) key=nr_dying_subsys_memory ;; esac
else
	key="machine-wide, /proc/cgroups"
fi
w0=$(witness)
i=0
errors=0
while [ $i -lt $N ]; do
	if mkdir "$P/run$i"; then
		echo $$ > "$P/run$i/cgroup.procs" && cat "$T_DIR/temp" >> "$T_DIR/log" || errors=$((errors + 1))
		echo $$ > "$OWN/cgroup.procs" || hard_error "cannot move back to $OWN"
		rmdir "$P/run$i" || errors=$((errors + 1))
	else
		errors=$((errors + 1))
	fi
	i=$((i + 1))
done
check "$N cgroups made and removed the usual way ($errors errors)" [ $errors -eq 0 ]

# the count lags rmdir: poll until the kernel's own counter holds still
last=-1 same=0 i=0
while [ $i -lt 50 ] && [ $same -lt 10 ]; do
	w=$(witness)
	if [ "$w" = "$last" ]; then same=$((same + 1)); else same=0; fi
	last=$w
	sleep 0.1
	i=$((i + 1))
done
added=$((w - w0))
echo "the kernel counts $added more dying memory cgroups ($key)"

if [ "$T_MEMORY" = v2 ]; then
	got=$(subtree_dying)
	total=$(census | json total)
	if [ "$added" -ge 90 ]; then
		check "census names $T_ROOT with >= 90 dying (got $got)" [ "$got" -ge 90 ]
		check "census total >= 90 (got $total)" [ "$total" -ge 90 ]
		# each holds at least the page of the log it was first to write
		held=$(census | sed -n "s|.*{\"path\": *\"$T_ROOT\", *\"dying\": *[0-9]*, *\"memory_bytes\": *\([0-9]*\)}.*|\1|p")
		check "census: the memory they hold below $T_ROOT is >= 90 pages (got ${held:-none} bytes)" \
			[ "${held:-0}" -ge $((90 * 4096)) ]
	else
		echo "note: the kernel freed them at rmdir; the census must agree with it"
		check "census for $T_ROOT ($got) agrees with the kernel ($w)" near "$got" "$w" 2
	fi
else
	total=$(census | json total)
	rose=$((total - before))
	if [ "$added" -ge 90 ]; then
		check "census total rose by >= 90 (got $rose)" [ "$rose" -ge 90 ]
	else
		echo "note: the kernel freed them at rmdir; the census must agree with it"
		check "census total ($total) agrees with the kernel ($w)" near "$total" "$w" 3
	fi
	check "v1 names no subtree" sh -c '"$CGPOOLCTL" --json dying | grep -q "\"subtrees\": *\[\]"'
fi
"$CGPOOLCTL" dying

# as nobody: an answer, or what it could not read; never a crash
if command -v setpriv > /dev/null 2>&1; then
	who="--reuid=nobody --regid=nogroup"
	setpriv $who --clear-groups true 2> /dev/null || who="--reuid=65534 --regid=65534"
	setpriv $who --clear-groups "$CGPOOLCTL" dying > "$T_DIR/nobody.out" 2> "$T_DIR/nobody.err"
	rc=$?
	echo "as nobody (exit $rc):"
	cat "$T_DIR/nobody.out" "$T_DIR/nobody.err"
	check "as nobody it exits 0 or 1 (got $rc)" [ $rc -le 1 ]
	if [ $rc -eq 1 ]; then
		check "as nobody, exit 1 says why" [ -s "$T_DIR/nobody.err" ]
	else
		check "as nobody, exit 0 prints a total" grep -q '^dying memory cgroups: [0-9]' "$T_DIR/nobody.out"
	fi
else
	echo "note: no setpriv here, the census as nobody is not tried"
fi

rm -f "$T_DIR/log"
sync
echo 1 > /proc/sys/vm/drop_caches
sleep 1
echo "after deleting the log: $(witness) ($key)"
finish
