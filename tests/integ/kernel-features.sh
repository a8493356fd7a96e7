#!/bin/sh
# What the running kernel offers, as `cgpoolctl probe` tells it, against the
# kernel itself: each feature the probe reports is there (or not) in the
# cgroup files; each one missing has a fallback sentence saying what cgpool
# does instead, and each one present has none; the text output lists the
# fallbacks too. Then the degraded behaviour itself where this kernel needs
# it: a run's memory peak (exact where the kernel resets a watermark per run,
# sampled from memory.current elsewhere, and marked so). The other fallbacks
# have their own tests: the drain without memory.reclaim (retire.sh), the
# stop without cgroup.kill (supervise.sh).
. "${top_srcdir:-.}/tests/integ/lib.sh"

MIB=1048576
start_daemon
probe=$("$CGPOOLCTL" --json probe)
echo "probe: $probe"
feature() { echo "$probe" | sed -n "s/.*\"features\": *{[^}]*\"$1\": *\([a-z]*\).*/\1/p"; }
fallback() { echo "$probe" | sed -n "s/.*\"fallbacks\": *{.*\"$1\": *\"\([^\"]*\)\".*/\1/p"; }

# version_at_least MAJOR MINOR: the running kernel is that release or later
version_at_least() {
	set -- "$1" "$2" $(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
	[ "$3" -gt "$1" ] || { [ "$3" -eq "$1" ] && [ "$4" -ge "$2" ]; }
}

# what the kernel has, read from its files (and from its release for the two
# socket and process interfaces that have no file)
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
has() { if "$@"; then echo true; else echo false; fi; }
if [ "$T_MEMORY" = v2 ]; then
	want_reclaim=$(has test -f "$T_MEMMNT$T_OWN/memory.reclaim")
	want_subsys=$(has grep -q '^nr_dying_subsys_memory' "$T_MEMMNT/cgroup.stat")
else
	want_reclaim=false
	want_subsys=false
fi
# cgroup.kill is on the cgroup2 hierarchy, which v1 memory has only on hybrid hosts
want_kill=false
[ -n "$cg2" ] && [ -n "$(find "$cg2" -mindepth 1 -maxdepth 2 -name cgroup.kill 2> /dev/null | head -n 1)" ] &&
	want_kill=true
want_events=$(has test -n "$cg2")
want_peer=$(has version_at_least 6 5)
want_pidfd=$(has version_at_least 5 3)

for f in cgroup_kill:$want_kill memory_reclaim:$want_reclaim dying_subsys_stat:$want_subsys \
	cgroup_events:$want_events peer_pidfd:$want_peer pidfd_open:$want_pidfd; do
	name=${f%%:*} want=${f#*:}
	got=$(feature "$name")
	check "probe: $name is $want on $(uname -r) (got ${got:-nothing})" [ "$got" = "$want" ]
done

# every feature false has a fallback sentence, every one true none (v1's
# memory_reclaim says what it does instead: memory.force_empty)
for name in cgroup_kill memory_reclaim memory_peak_reset clone_into_cgroup dying_subsys_stat cgroup_events \
	peer_pidfd pidfd_open; do
	got=$(feature "$name") text=$(fallback "$name")
	case $got in
	false) check "probe: $name missing, and the fallback says what instead: ${text:-nothing}" [ -n "$text" ] ;;
	true) check "probe: $name present, no fallback for it" [ -z "$text" ] ;;
	*) fail "probe: no feature $name in the reply" ;;
	esac
done
n=$(echo "$probe" | grep -o '"fallbacks": *{[^}]*}' | grep -o '": *"' | wc -l)
if [ "$n" -gt 0 ]; then
	"$CGPOOLCTL" probe > "$T_DIR/probe.txt"
	check "probe's text lists the fallbacks" grep -q '^fallbacks:' "$T_DIR/probe.txt"
	check "... one line each ($n)" [ "$(sed -n '/^fallbacks:/,/^[a-z]/p' "$T_DIR/probe.txt" | grep -c '^  [a-z_]*: ')" -eq "$n" ]
fi

# --- a run's memory peak: 32 MiB of page cache written, then synced
sampled=false
[ "$T_MEMORY" = v2 ] && [ "$(feature memory_peak_reset)" = false ] && sampled=true
"$CGPOOLCTL" exec peak -- sh -c 'dd if=/dev/zero of="$1" bs=1M count=32 2>/dev/null && sync' sh "$T_DIR/peak" ||
	fail "exec peak"
wait_for 5 sh -c "\"$CGPOOLCTL\" --json status peak | grep -q '\"state\": *\"idle\"'"
"$CGPOOLCTL" --json status peak > "$T_DIR/peak.json"
peak=$(json memory_peak < "$T_DIR/peak.json")
got=$(json memory_peak_sampled < "$T_DIR/peak.json")
echo "peak run: memory_peak $peak, memory_peak_sampled $got"
check "peak: the run's memory_peak is at least 30 MiB ($peak)" [ "${peak:-0}" -ge $((30 * MIB)) ]
check "peak: memory_peak_sampled is $sampled" [ "$got" = "$sampled" ]
rm -f "$T_DIR/peak"
finish
