#!/bin/sh
# Every metric name that the Prometheus rules (doc/prometheus/cgpool.rules.yml)
# and the Grafana dashboard (doc/grafana/cgpool.json) use is one that the
# daemon exports: a daemon runs one job (cgpoolctl exec, so that the per-run
# metrics are there), and the names of the sample lines of cgpoolctl metrics
# (a histogram's _bucket, _sum and _count among them) are what the cgpool_
# names of both files must be among (tests/tree/promql-names.py; it allows
# cgpool: recording rules of the rules file and Prometheus's own up). A
# family with a # TYPE line but no sample now (a gauge by subtree when no
# subtree has any) counts as exported. The v2-only families are not printed
# where the memory controller is on cgroup v1: there they are taken as
# exported, and said so. Each unknown name is listed with the file that
# uses it. With promtool (setup.sh), promtool check metrics lints the text.
. "${top_srcdir:-.}/tests/integ/lib.sh"
command -v python3 > /dev/null || skip "python3 not found (tests/tree/promql-names.py)"
rules=$top_srcdir/doc/prometheus/cgpool.rules.yml
dash=$top_srcdir/doc/grafana/cgpool.json
if [ ! -f "$rules" ] || [ ! -f "$dash" ]; then
	skip "no $rules or $dash (the VM guests carry tests/ only)"
fi

start_daemon
"$CGPOOLCTL" exec names -- true
check "cgpoolctl exec names -- true" [ $? -eq 0 ]
# the node series come from the census, which a worker takes: the first one
# may not be there yet
census_in() { "$CGPOOLCTL" metrics | grep -q '^cgpool_node_census_complete '; }
wait_for 10 census_in || fail "no cgpool_node_census_complete in cgpoolctl metrics after 10 s"
"$CGPOOLCTL" metrics > "$T_DIR/metrics" 2> "$T_DIR/metrics.err"
check "cgpoolctl metrics answers" [ $? -eq 0 ]
[ -s "$T_DIR/metrics.err" ] && sed 's/^/    /' "$T_DIR/metrics.err"

# what node_exporter's textfile collector reads must be well formed
promtool=$(command -v promtool 2> /dev/null) || promtool=/var/cache/cgpool-tools/promtool
if [ -x "$promtool" ]; then
	"$promtool" check metrics < "$T_DIR/metrics" > "$T_DIR/lint" 2>&1
	check "promtool check metrics accepts it" [ $? -eq 0 ]
	sed 's/^/    /' "$T_DIR/lint"
else
	echo "note: no promtool (setup.sh), the exposition is not linted"
fi

# the names of the sample lines and of the # TYPE lines; for a histogram
# its _bucket, _sum and _count (not its bare name: no series has it)
awk '
	$1 == "#" && $2 == "TYPE" && $4 == "histogram" { print $3 "_bucket"; print $3 "_sum"; print $3 "_count"; next }
	$1 == "#" && $2 == "TYPE" { print $3; next }
	/^#/ || NF == 0 { next }
	{ n = $1; sub(/\{.*/, "", n); print n }
' "$T_DIR/metrics" | sort -u > "$T_DIR/names"
echo "cgpoolctl metrics prints $(wc -l < "$T_DIR/names") names"
check "cgpoolctl metrics prints cgpool_slots" grep -qx cgpool_slots "$T_DIR/names"
V2_ONLY="cgpool_node_dying_memory_bytes"
if [ "$T_MEMORY" = v1 ]; then
	for n in $V2_ONLY; do
		grep -qx "$n" "$T_DIR/names" && continue
		echo "note: $n is cgroup v2 only; not checked here (memory on cgroup v1)"
		echo "$n" >> "$T_DIR/names"
	done
fi

python3 "$top_srcdir/tests/tree/promql-names.py" --exported "$T_DIR/names" "$rules" "$dash" > "$T_DIR/unknown"
rc=$?
used=$(python3 "$top_srcdir/tests/tree/promql-names.py" --list "$rules" "$dash" | wc -l)
if [ $rc -eq 0 ]; then
	pass "the $used names the rules and the dashboard use are exported, recorded or up"
else
	fail "names the rules or the dashboard use that cgpoolctl metrics does not print:"
	sed 's/^/    /' "$T_DIR/unknown"
fi
finish
