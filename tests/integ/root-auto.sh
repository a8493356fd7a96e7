#!/bin/sh
# root = auto: the pool root is the daemon's own cgroup (what systemd
# delegates). The daemon is started inside a cgroup of this test's in every
# hierarchy; on cgroup v2 it must move itself into a leaf of its own, since a
# cgroup with processes cannot enable controllers for its children.
. "${top_srcdir:-.}/tests/integ/lib.sh"

mounts=$(awk '($3 == "cgroup" && $4 ~ /(^|,)(memory|pids)(,|$)/) || $3 == "cgroup2" { print $2 }' /proc/mounts)
for mnt in $mounts; do
	mkdir -p "$mnt$T_ROOT" || hard_error "mkdir $mnt$T_ROOT"
	if [ -f "$mnt/cgroup.subtree_control" ] && [ "$T_MEMORY" = v2 ]; then
		# the parent hands memory and pids down to our cgroup
		for c in memory pids; do
			grep -qw "$c" "$mnt$T_OWN/cgroup.subtree_control" ||
				echo "+$c" > "$mnt$T_OWN/cgroup.subtree_control" || hard_error "enable $c in $mnt$T_OWN"
		done
	fi
done
cat > "$T_DIR/cgpool.conf" <<EOC
[daemon]
socket = $T_SOCK
state_dir = $T_DIR/state
root = auto
EOC
sh -c 'for m in $1; do echo $$ > "$m$2/cgroup.procs" || exit 99; done; exec "$3" --config "$4"' sh \
	"$mounts" "$T_ROOT" "$CGPOOLD" "$T_DIR/cgpool.conf" >> "$T_DIR/daemon.log" 2>&1 &
T_DAEMON_PID=$!
is_up() { "$CGPOOLCTL" status > /dev/null 2>&1; }
wait_for 10 is_up || { cat "$T_DIR/daemon.log"; hard_error "cgpoold did not come up"; }

status=$("$CGPOOLCTL" --json status)
check "the pool root is the daemon's own cgroup ($T_ROOT)" [ "$(echo "$status" | json root)" = "$T_ROOT" ]
daemon_cg=$(sed -n 's/^0:://p' "/proc/$T_DAEMON_PID/cgroup")
if [ "$T_MEMORY" = v2 ]; then
	check "on v2 the daemon moved into the leaf $T_ROOT/cgpoold (is in $daemon_cg)" [ "$daemon_cg" = "$T_ROOT/cgpoold" ]
	check "memory is enabled for the slots" grep -qw memory "$T_MEMMNT$T_ROOT/cgroup.subtree_control"
fi
out=$("$CGPOOLCTL" exec web -- sh -c '. "$1"; own_memcg_dir' sh "$top_srcdir/tests/integ/ids.sh")
path=$("$CGPOOLCTL" --json status web | json path)
check "a job runs in a slot below the root ($out)" [ "$out" = "$path" ]
case "$path" in "$T_MEMMNT$T_ROOT/slot-"*) pass "the slot is a child of the root" ;; *) fail "slot path $path" ;; esac
check "the daemon's own leaf is not listed as a slot" sh -c "! \"$CGPOOLCTL\" list | grep -q cgpoold"
finish
