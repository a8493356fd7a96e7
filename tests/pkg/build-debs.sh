#!/bin/sh
# build-debs.sh OUTDIR - the Debian packages of this source tree, built once
# per content and shared by the tests that need them (tests/pkg/deb.sh, the
# systemd guests of tests/systemd/check-systemd.sh).
#
# The source is a clean copy of top_srcdir: what git tracks plus the
# untracked files it does not ignore (the whole tree but .git when it is
# not a git checkout). It is built with `dpkg-buildpackage -us -uc` (source
# and binary packages) after `apt-get build-dep` when dpkg-checkbuilddeps
# finds something missing. Everything the build writes beside the source
# (.deb, .dsc, .tar.*, .buildinfo, .changes), its log and installed.list
# (what make install put into debian/tmp) are kept in
# ${CGPOOL_DEB_CACHE:-/var/cache/cgpool-vm/debs}/HASH, HASH being the
# SHA-256 of the copy's files, and copied to OUTDIR; a later call on the
# same content copies them without building.
#
# CGPOOL_DEB_RELEASE=CODENAME (trixie, sid) builds them in a chroot of that
# Debian release (tests/pkg/chroot.sh), against its libraries and its
# libslurm-dev, so its guest installs packages made for its own Slurm; the
# cache then keeps them as HASH-CODENAME. Every build here skips the unit
# tests (DEB_BUILD_OPTIONS=nocheck): make check runs them on the machine,
# and again under the sanitizers in CI, and the guests and the release
# tests run the packages themselves. A packager's build runs them
# (debian/rules: make check with CGPOOL_HEAVY_TESTS=no).
#
# Exit: 0 built (or found), 1 the build failed (its log's end printed), 77
# it cannot be built here (not root, no dpkg-buildpackage, the build
# dependencies cannot be installed; the reason printed), 99 bad usage.
set -u

say() { echo "build-debs: $*"; }
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 99; }
OUT=$1
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -f "$top/debian/control" ] || { say "no debian/control in $top"; exit 99; }
[ "$(id -u)" = 0 ] || { say "SKIP: needs root (apt-get build-dep, the cache)"; exit 77; }
CACHE=${CGPOOL_DEB_CACHE:-/var/cache/cgpool-vm/debs}
mkdir -p "$OUT" "$CACHE" || { say "cannot create $OUT and $CACHE"; exit 99; }
export DEBIAN_FRONTEND=noninteractive

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-debs.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' INT TERM HUP

# apt LOG ARGS...: apt-get ARGS, once more after apt-get update, waiting
# for dpkg's lock (another test or apt run may hold it)
apt() {
	log=$1
	shift
	apt-get -y -q -o DPkg::Lock::Timeout=300 "$@" > "$log" 2>&1 ||
		{ apt-get update -q -o DPkg::Lock::Timeout=300 >> "$log" 2>&1 &&
			apt-get -y -q -o DPkg::Lock::Timeout=300 "$@" >> "$log" 2>&1; }
}

# ---- the clean copy and its hash
src=$tmp/cgpool
mkdir "$src" || exit 99
if git -C "$top" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2> /dev/null) | tar -xf - -C "$src"
else
	(cd "$top" && tar --exclude=./.git -cf - .) | tar -xf - -C "$src"
fi || { say "cannot copy $top"; exit 99; }
hash=$(cd "$src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
REL=${CGPOOL_DEB_RELEASE:-}
[ "$REL" != "$(. /etc/os-release 2> /dev/null && echo "${VERSION_CODENAME:-}")" ] || REL=
C=$CACHE/$hash${REL:+-$REL}
if [ -n "$REL" ]; then
	CH=$(sh "$(dirname "$0")/chroot.sh" "$REL") || { say "SKIP: no $REL build chroot (above)"; exit 77; }
fi

# one builder at a time per cache
if command -v flock > /dev/null; then
	exec 9> "$CACHE/.lock"
	flock 9
fi
# build_in_chroot: the packages built in the release's chroot, its outputs
# copied into tmp as a build on the machine leaves them
build_in_chroot() {
	b=/build/cgpool.$$
	rm -rf "${CH:?}$b" && mkdir -p "$CH$b" && cp -a "$src" "$CH$b/cgpool" || return 1
	mount -t proc proc "$CH/proc" && mount --bind /dev "$CH/dev" || return 1
	chroot "$CH" sh -c "cd $b/cgpool && LC_ALL=C.UTF-8 DEB_BUILD_OPTIONS='nocheck parallel=$(nproc 2> /dev/null || echo 1) ${DEB_BUILD_OPTIONS:-}' dpkg-buildpackage -us -uc -b" \
		> "$tmp/build.log" 2>&1
	rc=$?
	umount "$CH/dev" "$CH/proc"
	# a test that failed in the build: its log, before the build's own end
	if [ $rc -ne 0 ] && [ -f "$CH$b/cgpool/test-suite.log" ]; then
		for t in $(sed -n 's/^FAIL: \([^ ]*\)$/\1/p' "$CH$b/cgpool/test-suite.log"); do
			echo "=== $t.log (in the $REL chroot)"
			tail -n 40 "$CH$b/cgpool/$t.log"
		done >> "$tmp/build.log"
	fi
	if [ $rc -eq 0 ]; then
		find "$CH$b" -maxdepth 1 -type f -exec cp {} "$tmp/" \; &&
			rm -rf "$src/debian/tmp" && cp -a "$CH$b/cgpool/debian/tmp" "$src/debian/tmp" || rc=1
	fi
	rm -rf "${CH:?}$b"
	return $rc
}

if [ ! -f "$C/complete" ] && [ -n "$REL" ]; then
	start=$(date +%s)
	if ! build_in_chroot; then
		tail -n 60 "$tmp/build.log"
		say "dpkg-buildpackage -us -uc -b in the $REL chroot failed (above: the end of its log)"
		exit 1
	fi
fi
if [ ! -f "$C/complete" ] && [ -z "$REL" ]; then
	command -v dpkg-buildpackage > /dev/null ||
		apt "$tmp/apt-tools.log" install --no-install-recommends dpkg-dev ||
		{ say "SKIP: no dpkg-buildpackage, and dpkg-dev cannot be installed"; exit 77; }
	if ! (cd "$src" && dpkg-checkbuilddeps) > "$tmp/builddeps.log" 2>&1; then
		apt "$tmp/apt-builddeps.log" build-dep "$src" ||
			{ say "SKIP: the build dependencies cannot be installed ($(cat "$tmp/builddeps.log")): $(tail -n 1 "$tmp/apt-builddeps.log")"; exit 77; }
	fi
	start=$(date +%s)
	if ! (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc 2> /dev/null || echo 1) ${DEB_BUILD_OPTIONS:-}" \
		dpkg-buildpackage -us -uc) > "$tmp/build.log" 2>&1; then
		tail -n 60 "$tmp/build.log"
		say "dpkg-buildpackage -us -uc failed (above: the end of its log)"
		exit 1
	fi
fi
if [ ! -f "$C/complete" ]; then
	# what make install put into debian/tmp, for deb.sh's file lists
	(cd "$src/debian/tmp" && find . ! -type d | sed 's/^\.//' | LC_ALL=C sort) > "$tmp/installed.list" ||
		{ say "no debian/tmp after the build"; exit 1; }
	rm -rf "$C.new" && mkdir -p "$C.new" &&
		find "$tmp" -maxdepth 1 -type f -exec cp {} "$C.new/" \; &&
		echo "built in $(($(date +%s) - start)) s" > "$C.new/complete" &&
		rm -rf "$C" && mv "$C.new" "$C" || { say "cannot fill the cache $C"; exit 99; }
	say "built $(ls "$C" | grep -c '\.deb$') packages in $(($(date +%s) - start)) s into $C"
	# the cache keeps the eight newest builds (a content built for three releases is three)
	ls -1td "$CACHE"/*/ 2> /dev/null | tail -n +9 | while read -r old; do rm -rf "$old"; done
else
	say "the packages of this content are in $C ($(cat "$C/complete"))"
fi
cp "$C"/* "$OUT/" || { say "cannot copy $C to $OUT"; exit 99; }
rm -f "$OUT/complete"
exit 0
