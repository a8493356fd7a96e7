#!/bin/sh
# config.sh - golden tests of `cgpoold --check-config`.
#
# - every conf/*.conf must pass: exit 0, nothing on stderr;
# - every tests/conf/bad/NAME.conf must fail: exit 78, and stderr exactly
#   tests/conf/bad/NAME.expected. They are checked from inside tests/conf/bad/
#   as `--config NAME.conf`, so FILE in the messages is "NAME.conf" (the unit
#   test tests/unit/test_conf.c checks the same files the same way).
#
# To add a case: write NAME.conf, run `cgpoold --check-config --config
# NAME.conf 2>NAME.expected` in tests/conf/bad/ and read NAME.expected.
# Never put a conf.d/ directory in tests/conf/bad/: every case would read it.
#
# Exit: 0 pass, 1 fail, 77 skip (cgpoold has no --check-config), 99 hard error.

: "${CGPOOLD:?CGPOOLD is not set (run this through make check)}"
: "${top_srcdir:?top_srcdir is not set (run this through make check)}"

if [ ! -x "$CGPOOLD" ]; then
	echo "config.sh: $CGPOOLD: not built" >&2
	exit 99
fi
if ! "$CGPOOLD" --help 2>&1 | grep -q -e '--check-config'; then
	echo "config.sh: SKIP: $CGPOOLD --help does not mention --check-config" >&2
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-config.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

fail=0
ngood=0
nbad=0

for f in "$top_srcdir"/conf/*.conf; do
	[ -e "$f" ] || continue
	ngood=$((ngood + 1))
	"$CGPOOLD" --check-config --config "$f" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ]; then
		echo "FAIL: $f: exit $rc (expected 0 and no errors):"
		cat "$tmp/err"
		fail=1
	else
		echo "ok: $f"
	fi
done

cd "$top_srcdir/tests/conf/bad" || exit 99
for f in *.conf; do
	[ -e "$f" ] || continue
	nbad=$((nbad + 1))
	name=${f%.conf}
	if [ ! -f "$name.expected" ]; then
		echo "FAIL: tests/conf/bad/$f: no $name.expected beside it"
		fail=1
		continue
	fi
	"$CGPOOLD" --check-config --config "$f" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 78 ]; then
		echo "FAIL: tests/conf/bad/$f: exit $rc, expected 78; stderr:"
		cat "$tmp/err"
		fail=1
	elif ! diff -u "$name.expected" "$tmp/err" >"$tmp/diff"; then
		echo "FAIL: tests/conf/bad/$f: stderr differs from $name.expected:"
		cat "$tmp/diff"
		fail=1
	else
		echo "ok: tests/conf/bad/$f"
	fi
done

if [ "$ngood" -eq 0 ] || [ "$nbad" -eq 0 ]; then
	echo "config.sh: no files found under $top_srcdir/conf or tests/conf/bad" >&2
	exit 99
fi
echo "config.sh: $ngood good and $nbad bad files checked"
exit "$fail"
