#!/bin/sh
# tmp-clean.sh - the unit tests and the fuzz replays leave nothing behind in
# the temporary directories.
#
# Each test binary that make check builds (tests/unit/test_*,
# tests/fuzz/fuzz_*_replay; or the ones named as arguments: test_list, ...)
# runs alone with TMPDIR set to a fresh, empty directory. Whatever is in it
# when the binary has exited is named, with the binary that left it, and
# the test fails. As root, where a mount namespace can be made (unshare -m),
# each binary also gets its own empty /tmp and /var/tmp in that namespace
# (TMPDIR is then /tmp/t): a file made at a path written as /tmp or /var/tmp
# in a test, not in TMPDIR, is named too, and nothing that another process
# puts in the real /tmp meanwhile is taken for a test's leftover. A binary
# that fails (exit status not 0 or 77) fails this test too, with the end of
# its output. Skipped (77) when none of the binaries is built.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${top_builddir:-$top}

bins=
if [ $# -gt 0 ]; then
	for n in "$@"; do
		n=${n##*/}
		case $n in
		fuzz_*) f=$build/tests/fuzz/$n ;;
		*) f=$build/tests/unit/$n ;;
		esac
		if [ ! -f "$f" ] || [ ! -x "$f" ]; then echo "ERROR: tmp-clean: $f is not built"; exit 99; fi
		bins="$bins $f"
	done
else
	for f in "$build"/tests/unit/test_* "$build"/tests/fuzz/fuzz_*_replay; do
		case ${f##*/} in *.*) continue ;; esac # sources, objects, logs
		[ -f "$f" ] && [ -x "$f" ] && bins="$bins $f"
	done
fi
[ -n "$bins" ] || { echo "SKIP: tmp-clean: no unit test binary is built in $build"; exit 77; }

W=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-tmp-clean.XXXXXX") || exit 99
trap 'rm -rf "$W"' EXIT
trap 'exit 99' INT TERM
W=$(cd "$W" && pwd -P) || exit 99

# a namespace of our own: root, unshare and mount, a bind mount that works,
# and the tree (the binaries, the fuzz corpus) not in /tmp or /var/tmp,
# which the namespace hides
ns=no
case $(cd "$build" && pwd -P)/:$(cd "$top" && pwd -P)/ in
/tmp/* | /var/tmp/* | */:/tmp/* | */:/var/tmp/*) intmp=yes ;;
*) intmp=no ;;
esac
if [ "$(id -u)" = 0 ] && [ $intmp = no ] && command -v unshare > /dev/null && command -v mount > /dev/null &&
	[ -d /tmp ] && [ ! -L /tmp ] && [ -d /var/tmp ] && [ ! -L /var/tmp ]; then
	mkdir "$W/probe" && unshare -m sh -c 'mount --bind "$1" /tmp' sh "$W/probe" 2> /dev/null && ns=yes
	rmdir "$W/probe"
fi
# the bind mount over the directory that holds $W comes last: the source
# of the other one is reached through it
case $W in
/var/tmp/*) order=tmp ;;
*) order=var ;;
esac
if [ $ns = yes ]; then
	echo "# each binary in a mount namespace: its own /tmp and /var/tmp, TMPDIR=/tmp/t"
else
	echo "# TMPDIR only (not root, no mount namespace, or the tree in /tmp):"
	echo "# what a test makes outside TMPDIR is not seen"
fi

# left DIR WHERE NAME [SKIP]: the entries of DIR (but SKIP), each a leftover
# of the binary NAME, named WHERE/entry with what a directory holds
left() {
	(cd "$1" && find . -mindepth 1 -maxdepth 1 | sed 's|^\./||' | sort) | while IFS= read -r e; do
		[ "$e" = "${4:-}" ] && continue
		held=
		if [ -d "$1/$e" ] && [ ! -L "$1/$e" ]; then
			held=$(cd "$1/$e" && find . -mindepth 1 | sed 's|^\./||' | sort | head -n 20 | paste -sd ' ' -)
			held=" (${held:+holding: }${held:-empty})"
		fi
		echo "FAIL: $3 left $2/$e$held"
	done
}

fails=0 passes=0
for f in $bins; do
	name=${f##*/}
	d=$W/$name
	if [ $ns = yes ]; then
		mkdir -p "$d/tmp/t" "$d/var" && chmod 1777 "$d/tmp" "$d/var" || exit 99
		(cd "$build" && unshare -m sh -c '
			if [ "$2" = tmp ]; then
				mount --bind "$1/tmp" /tmp && mount --bind "$1/var" /var/tmp
			else
				mount --bind "$1/var" /var/tmp && mount --bind "$1/tmp" /tmp
			fi || exit 99
			TMPDIR=/tmp/t; export TMPDIR
			exec "$3"' sh "$d" $order "$f") > "$d.log" 2>&1
	else
		mkdir -p "$d/tmp/t" || exit 99
		(cd "$build" && TMPDIR=$d/tmp/t exec "$f") > "$d.log" 2>&1
	fi
	rc=$?
	{
		case $rc in
		0 | 77) ;;
		*) echo "FAIL: $name exited $rc:"; tail -n 15 "$d.log" | sed 's/^/  /' ;;
		esac
		left "$d/tmp/t" '$TMPDIR' "$name"
		if [ $ns = yes ]; then
			left "$d/tmp" /tmp "$name" t
			left "$d/var" /var/tmp "$name"
		fi
	} > "$d.fail"
	if [ -s "$d.fail" ]; then
		cat "$d.fail"
		fails=$((fails + 1))
	else
		echo "ok: $name (exit $rc) left nothing"
		passes=$((passes + 1))
	fi
done

echo "tmp-clean: $passes clean, $fails failed"
[ $fails -eq 0 ]
