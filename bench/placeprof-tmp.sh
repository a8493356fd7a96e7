. "$(dirname "$0")/common.sh"
write_config "[pool]
warm = 4
max_slots = 100"
start_daemon
"$top_srcdir/bench/scale-client" place -n 300 -k warmup > /dev/null
perf record -g -o /tmp/perf-place.data -p "$T_DAEMON_PID" -- sleep 6 > /dev/null 2>&1 &
sleep 0.3
"$top_srcdir/bench/scale-client" place -n 3000 -k web -b
wait
strace -f -c -p "$T_DAEMON_PID" -o /tmp/strace-place.txt &
sleep 0.5
"$top_srcdir/bench/scale-client" place -n 500 -k web2 -b
kill %1 2>/dev/null; sleep 0.5
T_FAILS=0
