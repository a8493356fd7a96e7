#!/bin/sh
# Bad input gets one clear error and the daemon keeps serving.
. "${top_srcdir:-.}/tests/integ/lib.sh"

write_config "[pool]
warm = 1
max_slots = 4"
chmod 755 "$T_DIR" # unprivileged callers reach the socket
start_daemon

# expect_err EXIT PATTERN COMMAND...: COMMAND exits EXIT and stderr matches PATTERN
expect_err() {
	code=$1 pat=$2; shift 2
	"$@" > "$T_DIR/out" 2> "$T_DIR/err"
	got=$?
	if [ "$got" -eq "$code" ] && grep -q -- "$pat" "$T_DIR/err"; then
		pass "$* -> $code, $(head -n 1 "$T_DIR/err")"
	else
		fail "$* -> exit $got (want $code), stderr: $(cat "$T_DIR/err") (want /$pat/)"
	fi
}

long=$(printf '%0129d' 0)
expect_err 1 "invalid key" "$CGPOOLCTL" exec "" -- true
expect_err 1 "may not contain '/'" "$CGPOOLCTL" exec / -- true
expect_err 1 "may not contain '/'" "$CGPOOLCTL" exec a/b -- true
expect_err 1 'may not be "." or ".."' "$CGPOOLCTL" exec .. -- true
expect_err 1 "control characters" "$CGPOOLCTL" exec "$(printf 'a\tb')" -- true
expect_err 1 "longer than 128 bytes" "$CGPOOLCTL" exec "$long" -- true
expect_err 1 "no such key" "$CGPOOLCTL" status nosuchkey
expect_err 1 "no such key" "$CGPOOLCTL" release nosuchkey
expect_err 64 "" "$CGPOOLCTL" attach web notapid
expect_err 64 "" "$CGPOOLCTL" frobnicate

# processes that do not exist, or that the caller may not move
sleep 300 &
victim=$!
nopid=$((victim + 100000))
kill -0 "$nopid" 2>/dev/null && nopid=4194303
expect_err 1 "no such process" "$CGPOOLCTL" attach web "$nopid"
if command -v setpriv > /dev/null; then
	expect_err 1 "permission denied" setpriv --reuid=65534 --regid=65534 --clear-groups "$CGPOOLCTL" attach web "$victim"
	# but anyone may move itself, into a key of its own (user_keys)
	chmod 0711 "$T_DIR"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CGPOOLCTL" exec user.65534.selfmove -- cat /proc/self/cgroup)
	check "an unprivileged process may move itself (exec)" sh -c "echo '$out' | grep -q '$T_ROOT/slot-'"
else
	echo "note: setpriv missing, permission checks not run"
fi
kill "$victim"

# a full pool: max_slots = 4 (selfmove holds one)
"$CGPOOLCTL" exec k1 -- true
"$CGPOOLCTL" exec k2 -- true
"$CGPOOLCTL" exec k3 -- true
expect_err 1 "pool is full" "$CGPOOLCTL" exec k4 -- true
check "bound keys still work when the pool is full" "$CGPOOLCTL" exec k1 -- true

# malformed, oversize and unknown protocol messages, and a slow client
if command -v python3 > /dev/null; then
	python3 "$top_srcdir/tests/integ/varlink-abuse.py" "$T_SOCK" && pass "protocol abuse answered, daemon serving" ||
		fail "protocol abuse"
else
	echo "note: python3 missing, raw protocol checks not run"
fi
check "daemon still alive" kill -0 "$T_DAEMON_PID"
check "daemon still serves list" "$CGPOOLCTL" list
finish
