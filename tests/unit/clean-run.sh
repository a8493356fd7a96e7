#!/bin/sh
# clean-run.sh BINARY [ARG...] - make check's LOG_COMPILER: a test binary
# (tests/unit/test_*, tests/fuzz/fuzz_*_replay) runs with TMPDIR set to a
# fresh, empty directory, and whatever is in it when BINARY has exited is
# named and fails the test, so no unit test leaves files behind (a test
# case that fails must clean up too). A test script (*.sh) runs as it is.
#
# As root, where a mount namespace can be made (unshare -m), BINARY also
# gets its own empty /tmp and /var/tmp (bind mounts in that namespace of
# directories made in the real ones; TMPDIR is then /tmp/t): a file made at
# a path written as /tmp or /var/tmp is named too, and nothing another
# process puts in the real /tmp meanwhile is taken for a leftover. Without
# root, or when the binary lies below /tmp or /var/tmp (hidden then),
# TMPDIR alone is checked.
#
# Exit: BINARY's status when it left nothing; 1 when it left something
# (BINARY passed or failed); 99 when the directories cannot be made.
set -u
[ $# -ge 1 ] || { echo "usage: $0 BINARY [ARG...]" >&2; exit 99; }
# the test scripts, which make check hands here too, run as they are: they
# start daemons, clusters and guests and keep their own files
case $1 in *.sh) exec "$@" ;; esac
name=${1##*/}

V=
W=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-clean-run.XXXXXX") || exit 99
trap 'rm -rf "$W" $V' EXIT
trap 'exit 99' INT TERM
W=$(cd "$W" && pwd -P) || exit 99

# a namespace of our own: root, unshare and mount, a bind mount that works,
# and the binary and the working directory (the fuzz corpus) not in /tmp
# or /var/tmp, which the namespace hides
case $(cd "$(dirname "$1")" && pwd -P)/:$(pwd -P)/ in
/tmp/* | /var/tmp/* | */:/tmp/* | */:/var/tmp/*) ns=no ;;
*) ns=yes ;;
esac
if [ $ns = yes ]; then
	ns=no
	if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null && command -v mount > /dev/null &&
		[ -d /tmp ] && [ ! -L /tmp ] && [ -d /var/tmp ] && [ ! -L /var/tmp ]; then
		mkdir "$W/probe" && unshare -m sh -c 'mount --bind "$1" /tmp' sh "$W/probe" 2> /dev/null && ns=yes
		rmdir "$W/probe"
	fi
fi
# the bind mount over the directory that holds $W comes last: the source
# of the other one is reached through it
case $W in
/var/tmp/*) order=tmp ;;
*) order=var ;;
esac

# left DIR WHERE [SKIP]: the entries of DIR (but SKIP), each named as a
# leftover of BINARY, WHERE/entry with what a directory holds
left() {
	(cd "$1" && find . -mindepth 1 -maxdepth 1 | sed 's|^\./||' | sort) | while IFS= read -r e; do
		[ "$e" = "${3:-}" ] && continue
		held=
		if [ -d "$1/$e" ] && [ ! -L "$1/$e" ]; then
			held=$(cd "$1/$e" && find . -mindepth 1 | sed 's|^\./||' | sort | head -n 20 | paste -sd ' ' -)
			held=" (${held:+holding: }${held:-empty})"
		fi
		echo "FAIL: $name left $2/$e$held"
	done
}

if [ $ns = yes ]; then
	# the binary's /var/tmp in the real /var/tmp: on the same file system
	# (test_cg needs page cache it can reclaim, not tmpfs)
	V=$(mktemp -d /var/tmp/cgpool-clean-run.XXXXXX) || exit 99
	mkdir -p "$W/tmp/t" "$V/var" && chmod 1777 "$W/tmp" "$V/var" || exit 99
	unshare -m sh -c '
		d=$1 v=$2 order=$3
		shift 3
		if [ "$order" = tmp ]; then
			mount --bind "$d/tmp" /tmp && mount --bind "$v/var" /var/tmp
		else
			mount --bind "$v/var" /var/tmp && mount --bind "$d/tmp" /tmp
		fi || exit 99
		TMPDIR=/tmp/t
		export TMPDIR
		exec "$@"' sh "$W" "$V" $order "$@"
	rc=$?
	{
		left "$W/tmp/t" '$TMPDIR'
		left "$W/tmp" /tmp t
		left "$V/var" /var/tmp
	} > "$W/left"
else
	mkdir -p "$W/tmp/t" || exit 99
	TMPDIR=$W/tmp/t "$@"
	rc=$?
	left "$W/tmp/t" '$TMPDIR' > "$W/left"
fi
if [ -s "$W/left" ]; then
	cat "$W/left"
	exit 1
fi
[ $ns = yes ] && echo "# clean-run: $name left nothing in TMPDIR, /tmp or /var/tmp" ||
	echo "# clean-run: $name left nothing in TMPDIR (what it makes outside TMPDIR is not seen here)"
exit $rc
