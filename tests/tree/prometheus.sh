#!/bin/sh
# prometheus.sh - the Prometheus rules (doc/prometheus/cgpool.rules.yml) and
# the Grafana dashboard (doc/grafana/cgpool.json) hold together:
#  - promtool check rules accepts the rules;
#  - promtool test rules passes their unit tests (cgpool.rules.test.yml),
#    which make every alert fire and keep look-alike series quiet: each alert
#    of the rules file must have a case that fires it and one that does not,
#    and carry for:, a severity label, a summary and a description;
#  - the dashboard is valid JSON, every panel has a target and every target
#    an expr;
#  - every name the rules and the dashboard use is a cgpool_ metric, a
#    cgpool: recording rule of the rules file, or Prometheus's own up
#    (tests/tree/promql-names.py). Whether cgpoolctl metrics prints those
#    cgpool_ names is tests/integ/metric-names.sh's question: it needs a
#    daemon, so root.
# Needs promtool (in PATH or /var/cache/cgpool-tools, where setup.sh puts it)
# and python3; exits 77 without them.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
rules=$top/doc/prometheus/cgpool.rules.yml
unit=$top/doc/prometheus/cgpool.rules.test.yml
dash=$top/doc/grafana/cgpool.json

skip() { echo "SKIP: prometheus.sh: $*"; exit 77; }
fails=0
passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { echo "ok: $*"; passes=$((passes + 1)); }

promtool=$(command -v promtool 2> /dev/null) || promtool=/var/cache/cgpool-tools/promtool
[ -x "$promtool" ] || skip "promtool not found in PATH or /var/cache/cgpool-tools (setup.sh extracts it from Debian's prometheus package)"
command -v python3 > /dev/null || skip "python3 not found"
for f in "$rules" "$unit" "$dash"; do
	[ -f "$f" ] || { echo "ERROR: prometheus.sh: no $f"; exit 99; }
done
out=$(mktemp) || exit 99
trap 'rm -f "$out"' EXIT
echo "promtool: $("$promtool" --version 2>&1 | head -n 1)"

# run DESCRIPTION COMMAND...: pass when COMMAND succeeds, else fail and show its output
run() {
	d=$1
	shift
	if "$@" > "$out" 2>&1; then
		pass "$d"
	else
		fail "$d"
		sed 's/^/    /' "$out"
	fi
}

run "promtool check rules cgpool.rules.yml" "$promtool" check rules "$rules"
# from elsewhere: rule_files are named relative to the test file
# shellcheck disable=SC2016
run "promtool test rules cgpool.rules.test.yml" sh -c 'cd / && "$1" test rules "$2"' sh "$promtool" "$unit"

# each alert: for:, severity, summary and description in the rules file
alerts=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\) *$/\1/p' "$rules")
[ -n "$alerts" ] || fail "no alert in $rules"
if awk '
	function done_alert() {
		if (name == "") return
		for (k in need) if (!(k in seen)) { print name ": no " k; bad = 1 }
		delete seen
	}
	BEGIN { need["for"]; need["severity"]; need["summary"]; need["description"] }
	/^ *- (alert|record|name):/ { done_alert(); name = "" }
	/^ *- alert:/ { name = $3 }
	name != "" && /^ *for: *[0-9]/ { seen["for"] }
	name != "" && /^ *severity: *(critical|warning|info) *$/ { seen["severity"] }
	name != "" && /^ *summary:/ { seen["summary"] }
	name != "" && /^ *description:/ { seen["description"] }
	END { done_alert(); exit bad }
' "$rules" > "$out" 2>&1; then
	pass "every alert has for:, a severity label, summary and description ($(echo "$alerts" | paste -s -d ' ' -))"
else
	fail "alerts without for:, severity, summary or description"
	sed 's/^/    /' "$out"
fi

# each alert: a unit test case that fires it and one that keeps it quiet
awk '
	function flush() { if (cur != "") { if (hasexp) fired[cur] = 1; else quiet[cur] = 1 } cur = ""; hasexp = 0 }
	/^ *- eval_time:/ { flush() }
	/^ *alertname:/ { cur = $2 }
	/^ *- exp_labels:/ { hasexp = 1 }
	/^ *- (series|name|interval):/ { flush() }
	END { flush(); for (a in fired) print a, "fires"; for (a in quiet) print a, "quiet" }
' "$unit" > "$out"
missing=
for a in $alerts; do
	grep -qx "$a fires" "$out" || missing="$missing $a(never fires)"
	grep -qx "$a quiet" "$out" || missing="$missing $a(never quiet)"
done
if [ -z "$missing" ]; then
	pass "every alert fires in one unit test case and stays quiet in another"
else
	fail "alerts the unit tests do not cover:$missing"
fi

run "the dashboard is valid JSON" python3 -m json.tool "$dash"
run "every panel has a target, every target an expr; every name is cgpool_, a cgpool: recording rule, or up" \
	python3 "$top/tests/tree/promql-names.py" "$rules" "$dash"
n=$(python3 "$top/tests/tree/promql-names.py" --list "$rules" "$dash" | wc -l)
echo "names used: $n"

echo "prometheus: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
