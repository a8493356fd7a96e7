#!/bin/sh
# cgpoolctl list on a pool of 2,000 keys: well over what one reply could hold
# before List streamed (~4,300 slots filled its 1 MiB), and enough replies to
# exercise the daemon's back-pressure. Every key shows up once, in the table
# (a header first) and in the --json array. A user who is neither root nor
# in socket_group and leaves List streams unread: they count against its
# max_connections_per_user and the daemon closes them after
# connection_idle_timeout (tests/integ/hostile.py streams).
. "${top_srcdir:-.}/tests/integ/lib.sh"

# 2,000 keys where python3 binds them on one connection; where a cgpoolctl
# process per key is all there is (the test VMs, under emulation), 300
if command -v python3 > /dev/null; then N=${LIST_KEYS:-2000}; else N=${LIST_KEYS:-300}; fi
write_config "connection_idle_timeout = 2s
max_connections_per_user = 2
[pool]
warm = 1
max_slots = $((N + 100))
idle_timeout = 1h"
start_daemon

sleep 600 &
SLEEPER=$!
trap 'kill $SLEEPER 2>/dev/null; cleanup' EXIT

# bind N keys: the sleeper moves from slot to slot, leaving each idle
if command -v python3 > /dev/null; then
	python3 - "$T_SOCK" "$N" "$SLEEPER" <<'PYEOF' || hard_error "binding $N keys failed"
import json, socket, sys
path, n, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
buf = b""
for i in range(n):
    req = {"method": "io.cgpool.Manager.Attach", "parameters": {"key": "many.%d" % i, "pids": [pid]}}
    s.sendall(json.dumps(req).encode() + b"\0")
    while b"\0" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("connection closed at key %d" % i)
        buf += chunk
    msg, buf = buf.split(b"\0", 1)
    if "error" in json.loads(msg):
        sys.exit("attach many.%d: %s" % (i, msg.decode()))
PYEOF
else
	i=0
	while [ $i -lt "$N" ]; do
		"$CGPOOLCTL" attach "many.$i" "$SLEEPER" > /dev/null || hard_error "attach many.$i"
		i=$((i + 1))
	done
fi

i=0
while [ $i -lt "$N" ]; do echo "many.$i"; i=$((i + 1)); done | sort > "$T_DIR/want"

"$CGPOOLCTL" list > "$T_DIR/list.txt"
check "cgpoolctl list succeeds" [ $? -eq 0 ]
check "the header comes first" sh -c "head -n 1 '$T_DIR/list.txt' | grep -q '^KEY  *STATE  *RUNS  *MEMORY  *PATH$'"
lines=$(wc -l < "$T_DIR/list.txt")
check "a line per slot: $lines lines for $N keys" [ "$lines" -ge $((N + 1)) ]
awk 'NR > 1 && $1 ~ /^many\./ { print $1 }' "$T_DIR/list.txt" | sort > "$T_DIR/got.txt"
check "every key once in the table" cmp -s "$T_DIR/want" "$T_DIR/got.txt"

"$CGPOOLCTL" --json list > "$T_DIR/list.json"
check "cgpoolctl --json list succeeds" [ $? -eq 0 ]
if command -v python3 > /dev/null; then
	python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
assert isinstance(a, list), "not an array"
for k in sorted(s["key"] for s in a if s["key"] and s["key"].startswith("many.")):
    print(k)' "$T_DIR/list.json" | sort > "$T_DIR/got.json"
	check "--json list is one array with every key once" cmp -s "$T_DIR/want" "$T_DIR/got.json"
else
	check "--json list is one array" sh -c "head -c 1 '$T_DIR/list.json' | grep -q '\['"
	n=$(grep -o '"key":"many\.[0-9]*"' "$T_DIR/list.json" | sort -u | wc -l)
	check "--json list has every key ($n)" [ "$n" -eq "$N" ]
fi
if command -v python3 > /dev/null; then
	chmod 0711 "$T_DIR"
	check "nobody's unread List streams count against its share and end when idle" \
		python3 "$top_srcdir/tests/integ/hostile.py" streams "$T_SOCK" 2 2
fi
check "the daemon still serves" "$CGPOOLCTL" status > /dev/null
finish
