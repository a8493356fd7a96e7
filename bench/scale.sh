#!/bin/sh
# bench/scale.sh [N] - the daemon at scale, in one run: binds and attaches per
# second at 100 bound keys and at N (ratio N/100), the fill from 100 to N, the
# daemon's RSS, list/status/metrics latency, event-loop stalls, restart
# placement against the usual way (mkdir, move in, move out, rmdir) at N keys
# (interleaved, then back to back with CPU time), and a reload that lowers
# max_slots to 1000 while list is asked for.
# Run from a built checkout as root (bench/scale-client is built by make).
# The latency of each interleaved placement cycle at N keys goes to
# $BENCH_OUT/scale.place.dat (default bench/out; bench/data.sh: cycle, usual
# way µs, cgpool µs), and bench/plot.sh draws placement-latency.png there
# (with bench/restart.sh's restart.lat.dat when that is there too; skipped
# without gnuplot, or with BENCH_PLOT=no).
#   sh bench/scale.sh 10000
#   CGPOOLD=/path/cgpoold CGPOOLCTL=/path/cgpoolctl sh bench/scale.sh 2000
N=${1:-10000}
. "$(dirname "$0")/common.sh"
CLIENT=${SCALE_CLIENT:-$top_srcdir/bench/scale-client}
[ -x "$CLIENT" ] || hard_error "$CLIENT not built (run make)"
bench_out || hard_error "no data directory"

B1=400        # new keys bound by 1 client in each bind measurement
B16=800       # ... by 16 clients (50 each)
ATTACH_SECS=5 # each attach measurement
PLACE=500     # restart-placement cycles each way
# the fill starts after the 100 keys and the first bind round
[ "$N" -ge $((200 + B1 + B16)) ] 2>/dev/null || hard_error "N must be a number of at least $((200 + B1 + B16))"
WARM=$((B1 + B16)) # every bind of a round finds a warm slot ready
PHASE_SECS=300  # bound on one measurement
FILL_SECS=1800  # bound on the fill from 100 to N
# the N keys, both bind rounds, the warm slots and the placement key
write_config "[pool]
warm = $WARM
max_slots = $((N + 2 * (B1 + B16) + WARM + 16))
idle_timeout = 24h"

# ---- helpers
ctl() { timeout -k 5 60 "$CGPOOLCTL" "$@"; }
status_field() { ctl --json status | sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p"; }
# the pool's slots in all (status has other "total"s: the census history's)
status_slots() { ctl --json status | sed -n 's/.*"slots": *{"total": *\([0-9]*\).*/\1/p'; }
bound() { echo $(( $(status_field running) + $(status_field idle) )); }
rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$T_DAEMON_PID/status"; }
# field FILE NAME: the value of NAME=VALUE in the result line in FILE
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
wait_warm() {
	n=1200
	while [ "$(status_field warm)" -lt "$WARM" ] 2>/dev/null && [ $n -gt 0 ]; do n=$((n - 1)); sleep 0.1; done
	[ $n -gt 0 ] || echo "  (warm slots still below $WARM after 120 s)"
}

# run SECS OUT CMD...: CMD bounded in time, its stdout in OUT; on failure $why
# says why (a result line with errors=... counts as run: the caller shows it)
run() {
	secs=$1 out=$2; shift 2
	timeout -k 5 "$secs" "$@" > "$out" 2> "$T_DIR/err"
	rc=$?
	[ -s "$T_DIR/err" ] && sed 's/^/  stderr: /' "$T_DIR/err" | head -n 3
	[ -s "$out" ] && grep -q '=' "$out" && return 0
	case $rc in
	124 | 137) why="timed out after ${secs} s" ;;
	*) why=$(tail -n 1 "$T_DIR/err"); why=${why:-exit status $rc} ;;
	esac
	return 1
}

# load NAME SECS ARGS...: a scale-client measurement, printed and kept in
# $T_DIR/NAME; its per_sec in $rate ("failed" when it did not run)
load() {
	name=$1 secs=$2; shift 2
	if run "$secs" "$T_DIR/$name" "$CLIENT" "$@"; then
		rate=$(field "$T_DIR/$name" per_sec)
		printf '  %-22s %s\n' "$name" "$(cat "$T_DIR/$name")"
	else
		rate=failed
		printf '  %-22s failed (%s)\n' "$name" "$why"
	fi
}

snapshot() { ctl metrics > "$T_DIR/metrics.$1" 2>/dev/null || : > "$T_DIR/metrics.$1"; }

# attach_round TAG PREFIX: the four attach measurements on keys PREFIX-<c>-0/1
attach_round() {
	load "attach-same-1-$1" $PHASE_SECS attach -c 1 -t $ATTACH_SECS -p "$2"; eval "as1_$1=\$rate"
	load "attach-same-16-$1" $PHASE_SECS attach -c 16 -t $ATTACH_SECS -p "$2"; eval "as16_$1=\$rate"
	load "attach-alt-1-$1" $PHASE_SECS attach -a -c 1 -t $ATTACH_SECS -p "$2"; eval "aa1_$1=\$rate"
	load "attach-alt-16-$1" $PHASE_SECS attach -a -c 16 -t $ATTACH_SECS -p "$2"; eval "aa16_$1=\$rate"
}
# bind_round TAG: new keys with 1 and with 16 clients
bind_round() {
	wait_warm
	load "bind-1-$1" $PHASE_SECS bind -c 1 -n $B1 -t $((PHASE_SECS - 20)) -p "b1-$1"; eval "b1_$1=\$rate"
	wait_warm
	load "bind-16-$1" $PHASE_SECS bind -c 16 -n $B16 -t $((PHASE_SECS - 20)) -p "b16-$1"; eval "b16_$1=\$rate"
}

# ---- start
start_daemon
t0=$(date +%s)
wait_warm
"$CGPOOLCTL" --json status > "$T_DIR/status0"
hier=$(sed -n 's/.*"hierarchy": *"\([^"]*\)".*/\1/p' "$T_DIR/status0")
mem=$(sed -n 's/.*"memory": *"\([^"]*\)".*/\1/p' "$T_DIR/status0")
cat <<EOR
machine: $(nproc) cores ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)), $(free -g | awk '/^Mem:/ { print $2 }') GiB, kernel $(uname -r)
cgroups: $hier, memory on $mem; hierarchies used: $(awk '$3 == "cgroup2" || ($3 == "cgroup" && $4 ~ /(^|,)(memory|pids)(,|$)/) { printf "%s%s (%s)", n++ ? ", " : "", $2, $3 }' /proc/mounts)
daemon: $CGPOOLD
config: N = $N, warm = $WARM, max_slots = $((N + 2 * (B1 + B16) + WARM + 16)), idle_timeout = 24h
binds per measurement: $B1 (1 client), $B16 (16 clients); attach measurements $ATTACH_SECS s each
EOR

# ---- at 100 keys
echo
echo "== at 100 bound keys"
load fill-100 $PHASE_SECS bind -c 16 -n 100 -p k100
snapshot a100
rss_100=$(rss_kib)
attach_round 100 k100
bind_round 100
snapshot b100
echo "  bound keys: $(bound), daemon RSS at 100 keys: $rss_100 KiB"
stall_p99_100=$(stall_p99 "$T_DIR/metrics.a100" "$T_DIR/metrics.b100")
echo "  loop stall p99: $stall_p99_100, max since start: $(stall_max "$T_DIR/metrics.b100") s"

# ---- fill to N
echo
have=$(bound)
fill=$((N - have))
echo "== filling from $have to $N keys (16 clients)"
load fill-N $FILL_SECS bind -c 16 -n $fill -t $((FILL_SECS - 30)) -p kN
fill_rate=$rate
snapshot fN
stall_p99_fill=$(stall_p99 "$T_DIR/metrics.b100" "$T_DIR/metrics.fN")
echo "  bound keys: $(bound); loop stall p99: $stall_p99_fill, max since start: $(stall_max "$T_DIR/metrics.fN") s"

# ---- at N keys
echo
nb=$(bound)
echo "== at $nb bound keys"
rss_N=$(rss_kib)
attach_round N kN
slots=$(status_slots)
if run 120 "$T_DIR/list" "$CLIENT" firstline -- "$CGPOOLCTL" list && [ "$(field "$T_DIR/list" status)" = 0 ]; then
	list_first=$(field "$T_DIR/list" first_ms) list_total=$(field "$T_DIR/list" total_ms)
	list_lines=$(( $(field "$T_DIR/list" lines) - 1 ))
	list_ok=$([ "$list_lines" = "$slots" ] && echo yes || echo "NO, $slots slots")
	echo "  cgpoolctl list: first line $list_first ms, total $list_total ms, $list_lines slot lines (header aside; equal to the slots: $list_ok)"
else
	[ -s "$T_DIR/list" ] && why="cgpoolctl exit status $(field "$T_DIR/list" status): $(tail -n 1 "$T_DIR/err")"
	list_first=failed list_total=failed list_lines=- list_ok=-
	echo "  cgpoolctl list: failed ($why)"
fi
t=$(date +%s%N)
if timeout -k 5 120 "$CGPOOLCTL" --json list > "$T_DIR/list.json" 2> "$T_DIR/err"; then
	jlist_ms=$(( ($(date +%s%N) - t) / 1000000 ))
	jlist_n=$(python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
print(len(v) if isinstance(v, list) else "not-an-array")' "$T_DIR/list.json" 2>/dev/null || echo invalid)
	jlist_ok=$([ "$jlist_n" -ge "$N" ] 2>/dev/null && echo yes || echo no)
	echo "  cgpoolctl --json list: $jlist_ms ms, one JSON array of $jlist_n items (>= $N: $jlist_ok)"
else
	jlist_ms="failed" jlist_n=- jlist_ok=-
	echo "  cgpoolctl --json list: failed ($(tail -n 1 "$T_DIR/err"))"
fi
load status-N 120 call io.cgpool.Manager.Status '{"key":"kN-0-0"}' 50
st_p50=$(field "$T_DIR/status-N" p50_ms) st_max=$(field "$T_DIR/status-N" max_ms)
load metrics-N 120 call io.cgpool.Manager.Metrics '{}' 20
me_p50=$(field "$T_DIR/metrics-N" p50_ms) me_max=$(field "$T_DIR/metrics-N" max_ms)
load place-N $PHASE_SECS place -n $PLACE -k place -o "$T_DIR/place-N.raw"
if [ -s "$T_DIR/place-N.raw" ]; then
	{
		bench_head scale "label: host" "n: $PLACE" "what: placement alone at $nb keys" \
			"columns: cycle, latency us (interleaved): usual way (mkdir, move in, move out, rmdir), cgpool (Attach, move out)"
		cat "$T_DIR/place-N.raw"
	} > "$BENCH_OUT/scale.place.dat"
	echo "  data: $BENCH_OUT/scale.place.dat"
fi
bind_round N
snapshot bN
stall_p99_N=$(stall_p99 "$T_DIR/metrics.fN" "$T_DIR/metrics.bN")
echo "  bound keys: $(bound), daemon RSS at $nb keys: $rss_N KiB"
echo "  loop stall p99: $stall_p99_N, max since start: $(stall_max "$T_DIR/metrics.bN") s"

# ---- placement back to back: all cgpool cycles, then all of the usual way
# (each way's deferred kernel work falls in its own phase), with CPU time
load place-bb-N $PHASE_SECS place -b -n $((PLACE * 4)) -k place-bb -P "$T_DAEMON_PID"

# ---- reload: max_slots lowered to LOW while list is asked for (removals
# at RELOAD_RATE a second: at the default 20, 10,000 take over 8 minutes)
LOW=1000 RELOAD_RATE=${RELOAD_RATE:-1000}
echo
echo "== reload: max_slots $((N + 2 * (B1 + B16) + WARM + 16)) -> $LOW, $(status_slots) slots, retire rate $RELOAD_RATE/s"
write_config "[pool]
warm = 100
max_slots = $LOW
idle_timeout = 24h
[retire]
rate = $RELOAD_RATE"
snapshot r0
out0=$(grep '^cgpool_retirements_total' "$T_DIR/metrics.r0")
t=$(date +%s%N)
kill -HUP "$T_DAEMON_PID"
nlist=0 nlist_ok=0 : > "$T_DIR/list-firsts"
while :; do
	if run 60 "$T_DIR/rl" "$CLIENT" firstline -- "$CGPOOLCTL" list && [ "$(field "$T_DIR/rl" status)" = 0 ]; then
		nlist_ok=$((nlist_ok + 1))
		field "$T_DIR/rl" first_ms >> "$T_DIR/list-firsts"
	fi
	nlist=$((nlist + 1))
	total=$(status_slots) retiring=$(status_field retiring)
	[ "${retiring:-1}" = 0 ] && [ "${total:-$LOW}" -le $LOW ] && break
	[ $(( ($(date +%s%N) - t) / 1000000000 )) -ge $FILL_SECS ] && { echo "  (not done after $FILL_SECS s)"; break; }
	sleep 0.5
done
reload_s=$(awk -v t="$(( $(date +%s%N) - t ))" 'BEGIN { printf "%.1f", t / 1e9 }')
snapshot r1
reload_stall=$(stall_p99 "$T_DIR/metrics.r0" "$T_DIR/metrics.r1")
over10=$(stall_over "$T_DIR/metrics.r0" "$T_DIR/metrics.r1" 0.01)
over50=$(stall_over "$T_DIR/metrics.r0" "$T_DIR/metrics.r1" 0.05)
list_med=$(sort -n "$T_DIR/list-firsts" | awk '{ v[n++] = $1 } END { if (n) print v[int(n / 2)]; else print "-" }')
list_max=$(sort -n "$T_DIR/list-firsts" | tail -n 1)
outcomes=$(grep '^cgpool_retirements_total' "$T_DIR/metrics.r1" | while read -r m v; do
	b=$(echo "$out0" | awk -v m="$m" '$1 == m { print $2 }')
	d=$((v - ${b:-0}))
	[ "$d" -gt 0 ] && printf '%s %s ' "$d" "$(echo "$m" | sed 's/.*outcome="\([^"]*\)".*/\1/')"
done)
echo "  done after $reload_s s: $(status_slots) slots; retired: ${outcomes:-none}"
echo "  cgpoolctl list during it: $nlist_ok of $nlist answered; first line median $list_med ms, max ${list_max:--} ms"
echo "  loop stall p99: $reload_stall; iterations over 10 ms: $over10, over 50 ms: $over50"

# ---- summary
P="$T_DIR/place-N"
pf() { v=$(field "$P" "$1"); echo "${v:-failed}"; }
echo
echo "== summary: N = $N (measured at $nb bound keys), $(nproc) cores, kernel $(uname -r), $hier/$mem, $(( $(date +%s) - t0 )) s"
printf '%-40s %12s %12s %8s\n' "" "at 100" "at N" "N/100"
row() { printf '%-40s %12s %12s %8s\n' "$1" "$2" "$3" "$(ratio "$3" "$2")"; }
row "binds/s, new keys, 1 client" "$b1_100" "$b1_N"
row "binds/s, new keys, 16 clients" "$b16_100" "$b16_N"
row "attach/s, same key, 1 client" "$as1_100" "$as1_N"
row "attach/s, same key, 16 clients" "$as16_100" "$as16_N"
row "attach/s, two keys alternately, 1 client" "$aa1_100" "$aa1_N"
row "attach/s, two keys alternately, 16 cl." "$aa16_100" "$aa16_N"
row "daemon RSS, KiB" "$rss_100" "$rss_N"
printf '%-40s %12s\n' "fill $have -> $N, keys/s (16 clients)" "$fill_rate"
printf '%-40s %s / %s / %s\n' "loop stall p99: at 100 / fill / at N" "$stall_p99_100" "$stall_p99_fill" "$stall_p99_N"
printf '%-40s %s s\n' "loop stall max (since start)" "$(stall_max "$T_DIR/metrics.bN")"
printf '%-40s %s / %s ms, %s lines (= slots: %s)\n' "list at N: first line / total" "$list_first" "$list_total" "$list_lines" "$list_ok"
printf '%-40s %s ms, %s items (>= N: %s)\n' "list --json at N: total" "$jlist_ms" "$jlist_n" "$jlist_ok"
printf '%-40s %s / %s ms\n' "Status KEY at N: p50 / max" "${st_p50:-failed}" "${st_max:-failed}"
printf '%-40s %s / %s ms\n' "Metrics at N: p50 / max" "${me_p50:-failed}" "${me_max:-failed}"
printf '%-40s %s / %s us\n' "placement at N, cgpool: p50 / p99" "$(pf cgpool_p50_us)" "$(pf cgpool_p99_us)"
printf '%-40s %s / %s us\n' "placement at N, usual way: p50 / p99" "$(pf usual_p50_us)" "$(pf usual_p99_us)"
printf '%-40s %s / %s\n' "placement ratio cgpool/usual: p50 / p99" "$(pf ratio_p50)" "$(pf ratio_p99)"
P="$T_DIR/place-bb-N"
printf '%-40s %s / %s us\n' "back to back, cgpool: p50 / p99" "$(pf cgpool_p50_us)" "$(pf cgpool_p99_us)"
printf '%-40s %s / %s us\n' "back to back, usual way: p50 / p99" "$(pf usual_p50_us)" "$(pf usual_p99_us)"
printf '%-40s %s / %s\n' "back to back ratio: p50 / p99" "$(pf ratio_p50)" "$(pf ratio_p99)"
printf '%-40s %s (client %s + daemon %s) / %s us, %s\n' "CPU per placement: cgpool / usual" "$(pf cgpool_cpu_us)" \
	"$(pf client_us)" "$(pf daemon_us)" "$(pf usual_cpu_us)" "$(pf cpu_ratio)"
printf '%-40s %s / %s us, %s\n' "machine busy per placement: cg / usual" "$(pf cgpool_busy_us)" "$(pf usual_busy_us)" \
	"$(pf busy_ratio)"
printf '%-40s %s s, list answered %s of %s (first line median %s ms)\n' "reload to $LOW slots, rate $RELOAD_RATE/s" "$reload_s" \
	"$nlist_ok" "$nlist" "$list_med"
printf '%-40s %s; over 10 ms: %s, over 50 ms: %s\n' "loop stall during the reload: p99" "$reload_stall" "$over10" "$over50"
echo
bench_plot latency
T_FAILS=0
