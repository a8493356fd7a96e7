#!/bin/sh
# bench/supervise.sh [N] - restart latency of a supervised job: from its
# exit to the next instance running, p50 and p99, for cgpoold's own
# supervision ([job] restart = always, restart_sec = 0: every start in the
# same slot) against a supervisor that gives every start a fresh cgroup in
# every hierarchy (mkdir, fork, move in, exec; rmdir after), in one run on
# this machine, with the dying memory cgroups each leaves. Both run the same
# job (bench/restart-stamp job: stamps its start and its exit, exits 1).
# Run from a built checkout as root.
#   sh bench/supervise.sh 1000
N=${1:-500}
. "$(dirname "$0")/common.sh"
STAMP=$top_srcdir/bench/restart-stamp
[ -x "$STAMP" ] || hard_error "$STAMP not built (run make)"

# latencies FILE OUT: "S(n+1) - E(n)" in microseconds, one per restart
latencies() {
	awk '$1 == "E" { e = $2; next } $1 == "S" && e { printf "%.1f\n", ($2 - e) / 1000 }' "$1" > "$2"
}
# stats FILE: "p50 p99" in microseconds
stats() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.0f %.0f\n", v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.999)] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

write_config "[job stamp]
exec = $STAMP job $T_DIR/pooled.log
restart = always
restart_sec = 0
start_limit = off
autostart = no
stdout = null
stderr = null"
start_daemon
lines() { [ -f "$T_DIR/pooled.log" ] && grep -c '^S' "$T_DIR/pooled.log" || echo 0; }
enough() { [ "$(lines)" -gt "$N" ]; }

# ---- cgpoold: N restarts into one slot
before=$(dying_memcgs)
"$CGPOOLCTL" run stamp > /dev/null || hard_error "run stamp"
wait_for $((N / 10 + 60)) enough || echo "  (only $(lines) starts within the time allowed)"
"$CGPOOLCTL" stop stamp > /dev/null
sleep 1
pooled_dying=$(( $(dying_memcgs) - before ))
latencies "$T_DIR/pooled.log" "$T_DIR/pooled.us"

# ---- a fresh cgroup per start, in every hierarchy the daemon uses
dirs=
for mnt in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do
	[ -d "$mnt$T_ROOT" ] && dirs="${dirs:+$dirs,}$mnt$T_ROOT"
done
before=$(dying_memcgs)
"$STAMP" fresh -n $((N + 1)) "$dirs" -- "$T_DIR/fresh.log" || hard_error "fresh supervisor failed"
fresh_dying=$(( $(dying_memcgs) - before ))
latencies "$T_DIR/fresh.log" "$T_DIR/fresh.us"

set -- $(stats "$T_DIR/pooled.us")
p50=$1 p99=$2
set -- $(stats "$T_DIR/fresh.us")
f50=$1 f99=$2

echo
echo "== supervise: $N restarts each, $(nproc) cores, kernel $(uname -r), memory $T_MEMORY, hierarchies: $(echo "$dirs" | tr ',' '\n' | wc -l)"
printf '%-44s %8s %8s\n' "restart latency (exit -> next running), us" p50 p99
printf '%-44s %8s %8s\n' "cgpoold [job], same slot" "$p50" "$p99"
printf '%-44s %8s %8s\n' "fresh cgroup per start" "$f50" "$f99"
printf '%-44s %8s %8s\n' "ratio cgpoold / fresh" "$(ratio "$p50" "$f50")" "$(ratio "$p99" "$f99")"
printf '%-44s %8s\n' "dying memcgs added, cgpoold" "$pooled_dying"
printf '%-44s %8s\n' "dying memcgs added, fresh cgroup per start" "$fresh_dying"
finish
