# lib.sh - sourced by the systemd VM payloads (smoke.sh, survive.sh): the
# check helpers, the installed binaries, and the skip when PID 1 is not
# systemd (run them with run-systemd-vm.sh).
T_NAME=$(basename "$0" .sh)
T_FAILS=0
T_PASSES=0
fail() { echo "FAIL: $*"; T_FAILS=$((T_FAILS + 1)); }
pass() { echo "ok: $*"; T_PASSES=$((T_PASSES + 1)); }
check() { d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
show() { echo "---- $*"; "$@" 2>&1 | sed 's/^/  /'; }
json() { sed -n "s/.*\"$1\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}[,}].*/\1/p" | head -n 1; }
wait_for() { n=$(($1 * 10)); shift; while ! "$@"; do n=$((n - 1)); [ $n -gt 0 ] || return 1; sleep 0.1; done; }
finish() { echo "$T_NAME: $T_PASSES passed, $T_FAILS failed"; [ "$T_FAILS" -eq 0 ]; }

[ "$(cat /proc/1/comm)" = systemd ] ||
	{ echo "SKIP: $T_NAME: PID 1 is $(cat /proc/1/comm), not systemd (run it with run-systemd-vm.sh)"; exit 77; }
CGPOOLD=${CGPOOLD:-/usr/sbin/cgpoold}
CGPOOLCTL=${CGPOOLCTL:-/usr/bin/cgpoolctl}
SRC=${top_srcdir:-/src}
