#!/bin/sh
# The LRU-reparenting probe on a node without a usable probe_dir (diskless
# nodes, read-only roots): it falls back to memfd pages, says so in
# probe_medium and its evidence, and still reaches the kernel's verdict: the
# same one as with a file on a real disk (7.1+ reparents shmem pages as it
# does page cache; 6.1 reparents neither).
. "${top_srcdir:-.}/tests/integ/lib.sh"

probe_json() { "$CGPOOLCTL" --json probe; }
write_config "[retire]
probe_dir = $T_DIR/missing"
start_daemon

v=$(probe_verdict)
out=$(probe_json)
echo "memfd probe: $out"
check "probe_dir missing: the probe used memfd pages" [ "$(echo "$out" | json probe_medium)" = memfd ]
check "probe_dir missing: a verdict, not unknown (got $v)" sh -c "[ $v = yes ] || [ $v = no ]"
check "the evidence names the memfd" sh -c "echo '$(echo "$out" | json lru_reparenting_evidence)' | grep -q memfd"
check "the fallback is logged" grep -q "using memfd pages" "$T_DIR/daemon.log"

# the same kernel, probed with a file on a real disk: the same verdict
write_config "[retire]
probe_dir = $T_DIR"
"$CGPOOLCTL" reload > /dev/null || fail "reload"
out=$("$CGPOOLCTL" --json probe --wait)
echo "file probe: $out"
fv=$(echo "$out" | json lru_reparenting)
# a file round that ends pinned is checked again with a memfd (its group can
# wait on writeback past the deadline on a loaded machine): then the evidence
# tells both rounds
medium=$(echo "$out" | json probe_medium)
ev=$(echo "$out" | json lru_reparenting_evidence)
check "probe_dir usable: the probe used a file there ($medium)" sh -c "[ '$medium' = 'file:$T_DIR' ] ||
	{ [ '$medium' = memfd ] && echo '$ev' | grep -q 'page cache (file:$T_DIR)'; }"
check "file and memfd probes agree ($fv, $v)" [ "$fv" = "$v" ]

# what the kernels under test are known to do
rel=$(uname -r)
major=${rel%%.*}
minor=${rel#*.}
minor=${minor%%[!0-9]*}
if [ "$major" -gt 7 ] || { [ "$major" -eq 7 ] && [ "$minor" -ge 1 ]; }; then
	check "kernel $rel (7.1+): memfd verdict yes" [ "$v" = yes ]
elif [ "$major" -lt 7 ]; then
	check "kernel $rel (before 7.1): memfd verdict no" [ "$v" = no ]
fi
finish
