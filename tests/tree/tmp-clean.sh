#!/bin/sh
# tmp-clean.sh - tests/unit/clean-run.sh, through which make check runs every
# test binary (LOG_COMPILER), fails a binary that leaves something in the
# temporary directories, names it, and passes on a binary's own status.
#
# Fake binaries (shell scripts in a directory of the build tree, not in
# /tmp) run through it: one that cleans up after itself passes; one that
# leaves a directory with journal.1 in TMPDIR fails whether it passed or
# failed, the leftover named with what it holds; a failing or skipped one
# that leaves nothing keeps its status (1 or 77); a script (.sh) runs as
# it is, with the caller's TMPDIR. As root with a mount
# namespace: one that writes /tmp/NAME or /var/tmp/NAME (paths written in
# it, not TMPDIR) fails naming it, and the real /tmp and /var/tmp never see
# the file.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${top_builddir:-$top}
RUN=$top/tests/unit/clean-run.sh
passes=0 fails=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
no() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { d=$1; shift; if "$@"; then ok "$d"; else no "$d"; fi; }

B=$(mktemp -d "$build/tests/tree/tmp-clean.XXXXXX") || exit 99
trap 'rm -rf "$B"' EXIT
tag=cgpool-tmp-clean-$$
fake() { printf '#!/bin/sh\n%s\n' "$2" > "$B/$1" && chmod +x "$B/$1"; }
fake clean 'd=$(mktemp -d "$TMPDIR/x.XXXXXX") && touch "$d/f" && rm -rf "$d"; exit 0'
fake leaves 'mkdir "$TMPDIR/cgpool-test-list-AbC" && touch "$TMPDIR/cgpool-test-list-AbC/journal.1"; exit 0'
fake leaves-failing 'mkdir "$TMPDIR/left"; exit 1'
fake failing 'exit 1'
fake skipped 'exit 77'
fake hard-tmp "touch /tmp/$tag; exit 0"
fake hard-var "touch /var/tmp/$tag; exit 0"

# run NAME: RC and OUT of the fake through clean-run.sh
run() { OUT=$(sh "$RUN" "$B/$1" 2>&1); RC=$?; echo "$OUT" | sed "s/^/  $1: /"; }

run clean
check "a binary that cleans up passes (exit $RC)" test $RC = 0
run leaves
check "a passing binary that leaves a directory in TMPDIR fails (exit $RC)" test $RC = 1
check "... the leftover named with what it holds" \
	sh -c "echo '$OUT' | grep -qF 'FAIL: leaves left \$TMPDIR/cgpool-test-list-AbC (holding: journal.1)'"
run leaves-failing
check "a failing binary that leaves something fails, named (exit $RC)" \
	sh -c "[ $RC = 1 ] && echo '$OUT' | grep -qF 'left \$TMPDIR/left (empty)'"
run failing
check "a failing binary that leaves nothing keeps its status (exit $RC)" test $RC = 1
run skipped
check "a skipped binary keeps 77 (exit $RC)" test $RC = 77
if echo "$OUT" | grep -q "nothing in TMPDIR, /tmp or /var/tmp"; then
	run hard-tmp
	check "a binary that writes /tmp/$tag fails (exit $RC)" \
		sh -c "[ $RC = 1 ] && echo '$OUT' | grep -qF 'FAIL: hard-tmp left /tmp/$tag'"
	check "... and the real /tmp never had it" test ! -e "/tmp/$tag"
	run hard-var
	check "a binary that writes /var/tmp/$tag fails (exit $RC)" \
		sh -c "[ $RC = 1 ] && echo '$OUT' | grep -qF 'FAIL: hard-var left /var/tmp/$tag'"
	check "... and the real /var/tmp never had it" test ! -e "/var/tmp/$tag"
else
	echo "no mount namespace here (not root): paths outside TMPDIR are not checked"
	rm -f "/tmp/$tag" "/var/tmp/$tag"
fi
fake script.sh 'echo "TMPDIR=${TMPDIR:-unset}"; exit 0'
run script.sh
check "a test script (.sh) runs as it is: its own TMPDIR, no check ($OUT)" \
	sh -c "[ $RC = 0 ] && [ '$OUT' = 'TMPDIR=${TMPDIR:-unset}' ]"
echo "tmp-clean: $passes passed, $fails failed"
[ $fails = 0 ]
