#!/bin/sh
# deb.sh - the Debian packages: build them from a clean copy of the source
# tree and check what they hold.
#
# The copy is what git tracks plus the untracked files it does not ignore
# (the whole tree when it is not a git checkout); it is built in a temp dir
# with `dpkg-buildpackage -us -uc` (source and binary packages), after
# installing the build dependencies with `apt-get build-dep` when they are
# missing. Then:
#  - lintian on the .changes: no E: line (W: lines are shown);
#  - debian/changelog's version, the man pages' .TH lines and the packages'
#    versions are AC_INIT's;
#  - `dpkg-deb -c`: each expected file in its package, every file that
#    `make install` put into debian/tmp (but .la files) in exactly one
#    package, no path in two packages, nothing under /usr/local, no .la;
#  - every file under /etc is a conffile, /etc/cgpool/cgpool.conf among them;
#  - libcgpool0 has its symbols file, slurm-cgpool depends on the exact
#    version of Slurm it was built against;
#  - the maintainer scripts: upgrades restart cgpoold.service after
#    unpacking and never stop it before, removal stops it, no script names
#    the slots' scope (cgpoold-slots.scope), purge removes /etc/cgpool.
# Nothing is installed with dpkg -i.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, CGPOOL_INTEG=no as in
# `configure CGPOOL_HEAVY_TESTS=no`, inside a package build, or
# dpkg-buildpackage, lintian or the build dependencies cannot be installed),
# 99 hard error. CGPOOL_PKG_KEEP=yes keeps the temp dir.
set -u

T_NAME=deb
PASSES=0
FAILS=0
skip() { echo "SKIP: $T_NAME: $*"; exit 77; }
hard_error() { echo "ERROR: $T_NAME: $*"; exit 99; }
pass() { echo "ok: $*"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
check() { d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
# list LINES: the lines joined by blanks
list() { printf '%s\n' "$1" | tr '\n' ' ' | sed 's/ $//'; }
# has_line TEXT LINE: TEXT has the line LINE; has TEXT STRING: TEXT holds STRING
has_line() { printf '%s\n' "$1" | grep -qxF -- "$2"; }
has() { printf '%s\n' "$1" | grep -qF -- "$2"; }
# lacks FILE REGEX: no line of FILE matches
lacks() { ! grep -qE -- "$2" "$1"; }

top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -f "$top/debian/control" ] || hard_error "no debian/control in $top"

[ "${CGPOOL_INTEG:-yes}" != no ] ||
	skip "CGPOOL_INTEG=no (configure CGPOOL_HEAVY_TESTS=no, as make distcheck and debian/rules set it)"
[ -z "${DEB_RULES_REQUIRES_ROOT:-}" ] || skip "inside a package build"
[ "$(id -u)" = 0 ] || skip "needs root to install the build dependencies"

export DEBIAN_FRONTEND=noninteractive
apt_updated=
# apt_install LOG ARGS...: apt-get ARGS, once more after apt-get update;
# waiting for dpkg's lock, which another test or apt run may hold
apt_install() {
	log=$1; shift
	apt-get -y -q -o DPkg::Lock::Timeout=300 "$@" > "$log" 2>&1 && return 0
	[ -z "$apt_updated" ] || return 1
	apt_updated=yes
	apt-get update -q -o DPkg::Lock::Timeout=300 >> "$log" 2>&1 &&
		apt-get -y -q -o DPkg::Lock::Timeout=300 "$@" >> "$log" 2>&1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-deb.XXXXXX") || hard_error "mktemp"
cleanup() {
	if [ "${CGPOOL_PKG_KEEP:-no}" = yes ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 99' INT TERM HUP

for t in dpkg-buildpackage:dpkg-dev lintian:lintian; do
	command -v "${t%%:*}" > /dev/null 2>&1 && continue
	apt_install "$tmp/apt-tools.log" install --no-install-recommends "${t#*:}" ||
		skip "${t%%:*} is missing and ${t#*:} cannot be installed: $(tail -n 1 "$tmp/apt-tools.log")"
done

# ---- the clean copy
src=$tmp/cgpool
mkdir "$src" || hard_error "mkdir $src"
if git -C "$top" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	# files deleted in the work tree but still tracked are left out
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2> /dev/null) | tar -xf - -C "$src" ||
		hard_error "cannot copy the tracked and untracked files of $top"
	how="git's tracked and untracked files"
else
	(cd "$top" && tar --exclude=./.git -cf - .) | tar -xf - -C "$src" || hard_error "cannot copy $top"
	how="the whole tree"
fi
check "the source copy ($how) has debian/ and configure.ac" test -f "$src/debian/rules" -a -f "$src/configure.ac"

# ---- versions: AC_INIT and debian/changelog
ac_version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$src/configure.ac")
deb_version=$(cd "$src" && dpkg-parsechangelog -SVersion 2> /dev/null)
[ -n "$ac_version" ] || hard_error "no version in configure.ac's AC_INIT"
if [ "$deb_version" = "$ac_version" ]; then
	pass "debian/changelog's version $deb_version is AC_INIT's"
else
	fail "debian/changelog's version '$deb_version' is not AC_INIT's '$ac_version' (doc/release.md)"
fi

# the man pages' headers (.TH NAME SECTION DATE "cgpool VERSION")
stale=
for m in "$src"/doc/*.[158]; do
	[ -f "$m" ] || continue
	grep -q "^\.TH .*\"cgpool $ac_version\"" "$m" || stale="$stale ${m##*/}"
done
check "the man pages' .TH lines name cgpool $ac_version${stale:+ (not:$stale)}" test -z "$stale"

# ---- the build: build-debs.sh, which builds this content once and keeps
# what it made for the systemd guests (tests/systemd/check-systemd.sh) too
sh "$top/tests/pkg/build-debs.sh" "$tmp" > "$tmp/build-debs.out" 2>&1
rc=$?
case $rc in
0) pass "dpkg-buildpackage -us -uc ($(sed -n 's/^build-debs: //p' "$tmp/build-debs.out" | tail -n 1))" ;;
77) skip "$(sed -n 's/^build-debs: SKIP: //p' "$tmp/build-debs.out")" ;;
*)
	fail "dpkg-buildpackage -us -uc (build-debs.sh exit $rc); the end of its output:"
	tail -n 60 "$tmp/build-debs.out"
	echo "$T_NAME: $PASSES passed, $FAILS failed"
	exit 1
	;;
esac
changes=$(find "$tmp" -maxdepth 1 -name "cgpool_*.changes" | head -n 1)
[ -n "$changes" ] || hard_error "no .changes in $tmp"

# ---- lintian (exit 0: no error, 1: errors, else it did not run)
lintian --info --display-info --pedantic --display-experimental "$changes" > "$tmp/lintian.log" 2>&1
rc=$?
grep -E '^[WIPX]: ' "$tmp/lintian.log" | sed 's/^/  lintian: /'
errors=$(grep -c '^E: ' "$tmp/lintian.log")
if [ "$rc" -gt 1 ]; then
	fail "lintian exited $rc:"
	tail -n 20 "$tmp/lintian.log"
elif [ "$errors" -eq 0 ]; then
	pass "lintian: no error ($(grep -c '^W: ' "$tmp/lintian.log") warnings, $(grep -c '^[IPX]: ' "$tmp/lintian.log") other tags)"
else
	fail "lintian: $errors errors"
	grep '^E: ' "$tmp/lintian.log"
fi

# ---- the file lists
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null)
[ -n "$ma" ] || hard_error "dpkg-architecture gives no DEB_HOST_MULTIARCH"
deb_of() { find "$tmp" -maxdepth 1 -name "${1}_*.deb" | head -n 1; }
# the files and links of a package, one absolute path a line (no directories)
files_of() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { p = $6; sub(/^\./, "", p); print p }'; }
for p in cgpool libcgpool0 libcgpool-dev slurm-cgpool; do
	d=$(deb_of "$p")
	if [ -z "$d" ]; then
		fail "no package $p was built"
		: > "$tmp/$p.files"
		continue
	fi
	files_of "$d" > "$tmp/$p.files"
	v=$(dpkg-deb -f "$d" Version)
	check "$p $v: its version is AC_INIT's" test "$v" = "$ac_version"
done

# expect PACKAGE PATH [PATH...]: each path (a|b: one of them) is in PACKAGE
expect() {
	pkg=$1; shift
	missing=
	for want in "$@"; do
		found=
		for alt in $(echo "$want" | tr '|' ' '); do
			grep -qxF "$alt" "$tmp/$pkg.files" && found=yes
		done
		[ -n "$found" ] || missing="$missing $want"
	done
	if [ -z "$missing" ]; then pass "$pkg holds its $# expected files"; else fail "$pkg lacks:$missing"; fi
}
units='/lib/systemd/system|/usr/lib/systemd/system'
u() { echo "$units" | sed "s|\(/[a-z/]*system\)|\1/$1|g"; }
expect cgpool /usr/sbin/cgpoold /usr/bin/cgpoolctl \
	"$(u cgpoold.service)" "$(u cgpoold.socket)" \
	/usr/share/cgpool/jobs/systemd-job.service /usr/share/cgpool/jobs/runit-run \
	/usr/share/cgpool/jobs/s6-run /usr/share/cgpool/jobs/openrc-job \
	/etc/cgpool/cgpool.conf \
	/usr/share/man/man8/cgpoold.8.gz /usr/share/man/man1/cgpoolctl.1.gz /usr/share/man/man5/cgpool.conf.5.gz \
	/usr/share/cgpool/init/cgpoold.init /usr/share/cgpool/init/openrc/cgpoold \
	/usr/share/cgpool/init/runit/cgpoold/run /usr/share/cgpool/init/runit/cgpoold/finish \
	/usr/share/cgpool/init/runit/cgpoold/log/run \
	/usr/share/cgpool/init/s6/cgpoold/run /usr/share/cgpool/init/s6/cgpoold/finish \
	/usr/share/cgpool/init/s6/cgpoold/type /usr/share/cgpool/init/s6/cgpoold/log/run \
	/usr/share/doc/cgpool/copyright /usr/share/doc/cgpool/README.Debian \
	/usr/share/doc/cgpool/examples/cgpool.rules.yml /usr/share/doc/cgpool/examples/cgpool.json
expect libcgpool0 "/usr/lib/$ma/libcgpool.so.0" "/usr/lib/$ma/libcgpool.so.0.0.0" \
	/usr/share/doc/libcgpool0/copyright
expect libcgpool-dev /usr/include/cgpool.h "/usr/lib/$ma/libcgpool.so" "/usr/lib/$ma/pkgconfig/cgpool.pc"
expect slurm-cgpool "/usr/lib/$ma/slurm-wlm/cgpool.so" "/usr/lib/$ma/slurm-wlm/task_cgpool.so" \
	/usr/share/doc/slurm-cgpool/examples/plugstack.conf.d/cgpool.conf \
	/usr/share/doc/slurm-cgpool/examples/alone/plugstack.conf

# every .deb built, debug symbols too
: > "$tmp/all.files"
for d in "$tmp"/*.deb; do
	files_of "$d" | sed "s|\$| ${d##*/}|" >> "$tmp/all.files"
done
dups=$(awk '{ print $1 }' "$tmp/all.files" | sort | uniq -d)
if [ -z "$dups" ]; then pass "no path is in two packages"; else fail "paths in two packages: $(list "$dups")"; fi
local_files=$(grep '^/usr/local/' "$tmp/all.files")
check "nothing under /usr/local" test -z "$local_files"
la_files=$(grep '\.la ' "$tmp/all.files")
if [ -z "$la_files" ]; then pass "no .la file"; else fail "shipped .la files: $(list "$la_files")"; fi

# what make install put into debian/tmp, .la files aside: each in exactly one package
if [ -f "$tmp/installed.list" ]; then
	# build-debs.sh's list of debian/tmp; man pages are shipped compressed
	grep -v '\.la$' "$tmp/installed.list" > "$tmp/installed"
	awk '{ p = $1; if (p ~ /^\/usr\/share\/man\//) sub(/\.gz$/, "", p); print p }' "$tmp/all.files" | LC_ALL=C sort > "$tmp/shipped"
	lost=$(comm -23 "$tmp/installed" "$tmp/shipped")
	n=$(wc -l < "$tmp/installed")
	if [ -z "$lost" ]; then
		pass "each of the $n files make install installed is in a package"
	else
		fail "installed by make install but in no package: $(list "$lost")"
	fi
else
	fail "no list of debian/tmp from build-debs.sh: cannot compare with make install"
fi

# ---- control files
ctrl() { dpkg-deb -I "$(deb_of "$1")" "$2" 2> /dev/null; }
conffiles=$(ctrl cgpool conffiles)
check "cgpool: /etc/cgpool/cgpool.conf is a conffile" has_line "$conffiles" /etc/cgpool/cgpool.conf
awk '$1 ~ /^\/etc\// { print $1, $2 }' "$tmp/all.files" | while read -r f d; do
	dpkg-deb -I "$tmp/$d" conffiles 2> /dev/null | grep -qxF -- "$f" || echo "$f"
done > "$tmp/etc-not-conf"
etc_not_conf=$(list "$(cat "$tmp/etc-not-conf")")
check "every file under /etc is a conffile${etc_not_conf:+ (not: $etc_not_conf)}" test -z "$etc_not_conf"

symbols=$(ctrl libcgpool0 symbols)
if echo "$symbols" | grep -q '^libcgpool\.so\.0 libcgpool0 ' && echo "$symbols" | grep -q '^ cgpool_connect@Base '; then
	pass "libcgpool0: symbols file for libcgpool.so.0 ($(echo "$symbols" | grep -c '@Base') symbols)"
else
	fail "libcgpool0: no symbols file for libcgpool.so.0"
fi
dev_dep=$(dpkg-deb -f "$(deb_of libcgpool-dev)" Depends)
check "libcgpool-dev depends on libcgpool0 (= $ac_version)" has "$dev_dep" "libcgpool0 (= $ac_version)"

slurm_v=$(dpkg-query -W -f='${Version}' "libslurm-dev:$(dpkg-architecture -qDEB_HOST_ARCH)" 2> /dev/null)
slurm_dep=$(dpkg-deb -f "$(deb_of slurm-cgpool)" Depends)
if [ -n "$slurm_v" ] && has "$slurm_dep" "slurm-wlm-basic-plugins (= $slurm_v)"; then
	pass "slurm-cgpool depends on slurm-wlm-basic-plugins (= $slurm_v), the Slurm it was built against"
else
	fail "slurm-cgpool's Depends '$slurm_dep' names no exact Slurm version (built against '$slurm_v')"
fi

# ---- maintainer scripts
ctrl cgpool postinst > "$tmp/postinst"
ctrl cgpool prerm > "$tmp/prerm"
ctrl cgpool postrm > "$tmp/postrm"
ctrl cgpool preinst > "$tmp/preinst"
check "postinst restarts cgpoold.service on upgrade" \
	grep -qE "(_dh_action=(try-)?restart|deb-systemd-invoke (try-)?restart)" "$tmp/postinst"
check "postinst starts cgpoold.socket" grep -q "deb-systemd-invoke start 'cgpoold.socket'" "$tmp/postinst"
check "postinst never restarts the socket" lacks "$tmp/postinst" 'restart.*cgpoold\.socket'
check "nothing stops cgpoold before the upgrade unpacks (no stop in preinst)" \
	lacks "$tmp/preinst" 'deb-systemd-invoke stop'
stops_on_remove() {
	# shellcheck disable=SC2016
	grep -qF '[ "$1" = remove ]' "$tmp/prerm" && grep -qF "deb-systemd-invoke stop 'cgpoold.service'" "$tmp/prerm"
}
check "prerm stops cgpoold.service on remove only" stops_on_remove
cat "$tmp/postinst" "$tmp/prerm" "$tmp/postrm" "$tmp/preinst" > "$tmp/scripts"
check "no maintainer script names cgpoold-slots.scope" lacks "$tmp/scripts" 'cgpoold-slots'
check "postrm purge removes /etc/cgpool and /var/lib/cgpool" has "$(cat "$tmp/postrm")" 'rm -rf /etc/cgpool /var/lib/cgpool'

echo "$T_NAME: $PASSES passed, $FAILS failed"
[ "$FAILS" -eq 0 ]
