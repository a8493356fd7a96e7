#!/bin/sh
# rpm.sh - the RPM packages of cgpool.spec, built as a packager builds them.
#
# Makes `make dist`'s tarball from a clean copy of $top_srcdir (its tracked
# files and the untracked ones git does not ignore: autoreconf, configure,
# make dist in a temporary directory), builds it with `rpmbuild -ta --nodeps`
# into a temporary _topdir (this is Debian: the spec's BuildRequires are
# RHEL/Fedora names no RPM database here holds), runs rpmlint when it is
# there, and checks what the packages hold: each expected file in its
# package, no file in two packages, nothing under /usr/local, no .la,
# cgpool.conf as %config(noreplace), the init services as documentation,
# cgpool-slurm requiring the exact Slurm release it was built against, and
# scriptlets that name cgpoold.service and never cgpoold-slots.scope.
#
# Installs rpm (rpmbuild) and rpmlint with apt-get when they are missing.
# Skips (77) without root, when rpmbuild cannot be installed, not in a git
# checkout, under CGPOOL_HEAVY_TESTS=no (CGPOOL_INTEG=no) and inside
# rpmbuild itself (the spec's own check runs make check). About a minute.
# CGPOOL_RPM_RELEASE=CODENAME (trixie, sid) runs rpmbuild in a chroot of
# that Debian release (tests/pkg/chroot.sh, which holds rpm), so the
# plug-ins are built against its Slurm and cgpool-slurm requires that
# release (24.11.5, 26.05.5); skipped when that chroot cannot be had.
# CGPOOL_RPM_KEEP=1 keeps the work directory. Exit 0 pass, 1 fail, 77 skip.
set -u

T_NAME=rpm
top=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd) || exit 99
PASSES=0
FAILS=0
say() { echo "$T_NAME: $*"; }
skip() { echo "SKIP: $T_NAME: $*"; exit 77; }
pass() { echo "ok: $*"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
finish() {
	say "$PASSES passed, $FAILS failed"
	[ "$FAILS" -eq 0 ] && exit 0
	exit 1
}
# the last lines of a log, indented, after a failure
show_log() { tail -n "${2:-25}" "$1" | sed 's/^/    /'; }
# none FOUND WHAT: pass "no WHAT" when FOUND is empty, else fail with FOUND
none() {
	if [ -z "$1" ]; then pass "no $2"; else fail "$2: $(echo "$1" | tr '\n' ' ')"; fi
}

[ "${CGPOOL_INTEG:-yes}" != no ] || skip "CGPOOL_INTEG=no (configure CGPOOL_HEAVY_TESTS=no, as make distcheck sets it)"
[ -z "${RPM_BUILD_ROOT:-}" ] || skip "running inside rpmbuild (the package's own check)"
[ "$(id -u)" = 0 ] || skip "needs root (apt-get install rpm rpmlint)"
command -v git > /dev/null || skip "git is not installed (the clean copy is made from git ls-files)"
git -C "$top" rev-parse --git-dir > /dev/null 2>&1 || skip "$top is not a git checkout"
# the builds below are a packager's, not part of the calling make check:
# neither its make's jobserver nor the tests' environment reaches them
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES MAKE top_srcdir top_builddir CGPOOLD CGPOOLCTL INTEG_TESTS

# apt_install PKG: install a Debian package, refreshing the lists once if needed
apt_install() {
	command -v apt-get > /dev/null || return 1
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1" > /dev/null 2>&1 ||
		{ apt-get update -q > /dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1" > /dev/null 2>&1; }
}
command -v rpmbuild > /dev/null || apt_install rpm || true
command -v rpmbuild > /dev/null || skip "rpmbuild is not installed and apt-get could not install rpm"
command -v rpmlint > /dev/null || apt_install rpmlint || true
have_rpmlint=yes
command -v rpmlint > /dev/null || have_rpmlint=no
# the machine's rpmlint reads the packages of the machine's rpm only (those
# of Debian unstable's: "fatal error ... list index out of range")
if [ -n "${CGPOOL_RPM_RELEASE:-}" ] && [ "$have_rpmlint" = yes ]; then
	have_rpmlint=no
	say "rpmlint not run: the machine's rpmlint does not read packages built by $CGPOOL_RPM_RELEASE's rpm"
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-rpm.XXXXXX") || exit 99
if [ -n "${CGPOOL_RPM_KEEP:-}" ]; then
	trap 'say "work directory kept: $W"' EXIT
else
	trap 'rm -rf "$W"' EXIT
fi
trap 'exit 99' INT TERM HUP
start=$(date +%s)

# ---- the tarball, from a clean copy of the tree
mkdir "$W/src" "$W/top" || exit 99
# tracked files (a tracked file deleted in the work tree is left out) and
# untracked ones that .gitignore does not name
git -C "$top" ls-files -z --cached --others --exclude-standard |
	tar -C "$top" --null -T - --ignore-failed-read -cf - 2> "$W/copy.log" |
	tar -C "$W/src" -xf - || { fail "copy of $top (git ls-files | tar)"; show_log "$W/copy.log"; finish; }
if ! (cd "$W/src" && autoreconf -fi && ./configure && make dist) > "$W/dist.log" 2>&1; then
	fail "autoreconf, configure and make dist in a clean copy"; show_log "$W/dist.log"; finish
fi
version=$(sed -n "s/^PACKAGE_VERSION='\(.*\)'$/\1/p" "$W/src/config.status" | head -n 1)
[ -n "$version" ] || version=$(sed -n 's/^VERSION = //p' "$W/src/Makefile")
tarball=$W/src/cgpool-$version.tar.gz
if [ -f "$tarball" ] && tar -tzf "$tarball" | grep -qx "cgpool-$version/cgpool.spec"; then
	pass "make dist: cgpool-$version.tar.gz holds cgpool.spec"
else
	fail "make dist made no cgpool-$version.tar.gz with cgpool.spec in it"; finish
fi

# ---- the packages
# With Slurm's headers the plug-ins are built and cgpool-slurm is checked;
# the Slurm release is then the one of the headers (SLURM_VERSION_NUMBER), as
# the spec finds it where no RPM provides slurm-devel. Under
# CGPOOL_RPM_RELEASE the headers are those of that release's chroot, where
# rpmbuild runs.
CH=
if [ -n "${CGPOOL_RPM_RELEASE:-}" ]; then
	CH=$(sh "$top/tests/pkg/chroot.sh" "$CGPOOL_RPM_RELEASE" 2> "$W/chroot.log") ||
		{ show_log "$W/chroot.log"; skip "no $CGPOOL_RPM_RELEASE chroot (tests/pkg/chroot.sh)"; }
	[ -x "$CH/usr/bin/rpmbuild" ] || skip "the $CGPOOL_RPM_RELEASE chroot has no rpmbuild (tests/pkg/chroot.sh)"
	say "building in the $CGPOOL_RPM_RELEASE chroot $CH"
fi
slurm_h=$CH$(rpm --eval '%{_includedir}')/slurm/slurm_version.h
slurm_version=
if [ -f "$(dirname "$slurm_h")/spank.h" ] && [ -f "$slurm_h" ]; then
	n=$(awk '$2 == "SLURM_VERSION_NUMBER" { print $3 }' "$slurm_h")
	[ -n "$n" ] && slurm_version=$(printf '%d.%02d.%d' $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255)))
fi
with_slurm=--with
[ -n "$slurm_version" ] || { with_slurm=--without; say "no Slurm headers: cgpool-slurm is not built"; }
# Debian's brp-compress is a bash script (read -d '') that rpmbuild runs with
# /bin/sh, dash here, where it compresses nothing: run it with bash, so the man
# pages are gzipped as rpmbuild does on RHEL.
set --
if command -v bash > /dev/null && grep -q "read -r -d ''" "$CH$(rpm --eval '%{_rpmconfigdir}')/brp-compress" 2>/dev/null; then
	set -- --define "__brp_compress bash %{_rpmconfigdir}/brp-compress %{?_prefix}"
fi
# rpmbuild_here ARG...: rpmbuild on the machine, or in an overlay of the
# release's chroot (tests/pkg/chroot-run.sh) with the tarball and _topdir
# in its /tmp, the packages copied back to $W/top
rpmbuild_here() {
	if [ -z "$CH" ]; then
		rpmbuild -ta --nodeps --define "_topdir $W/top" "$@" "$tarball"
		return
	fi
	# shellcheck disable=SC2016
	sh "$top/tests/pkg/chroot-run.sh" "$CH" "$W/chroot" '
		t=$1 out=$2
		shift 2
		cp "$t" "$R/tmp/" && chroot "$R" rpmbuild -ta --nodeps --define "_topdir /tmp/top" "$@" "/tmp/${t##*/}" &&
			cp -a "$R/tmp/top/." "$out/"' "$tarball" "$W/top" "$@"
}
if rpmbuild_here "$with_slurm" slurm "$@" > "$W/rpmbuild.log" 2>&1; then
	pass "rpmbuild -ta --nodeps cgpool-$version.tar.gz ($(find "$W/top/RPMS" -name '*.rpm' | wc -l) binary packages)"
else
	fail "rpmbuild -ta --nodeps cgpool-$version.tar.gz ($W/rpmbuild.log)"; show_log "$W/rpmbuild.log" 40; finish
fi
# the spec's check: the unit tests ran and passed
units=$(grep -c '^PASS: tests/unit/' "$W/rpmbuild.log")
if [ "$units" -gt 0 ] && grep -q '^# FAIL: *0$' "$W/rpmbuild.log" && grep -q '^# ERROR: *0$' "$W/rpmbuild.log"; then
	pass "the check section ran the unit tests: $units passed, none failed"
else
	fail "the check section: $units unit tests passed, or some failed"
fi

arch=$(rpm --eval '%{_arch}')
rpmfile() { echo "$W/top/RPMS/$arch/$1-$version-1.$arch.rpm"; }
pkgs="cgpool cgpool-libs cgpool-devel"
[ -n "$slurm_version" ] && pkgs="$pkgs cgpool-slurm"
for p in $pkgs; do
	[ -f "$(rpmfile "$p")" ] || { fail "no package $p-$version-1.$arch.rpm"; finish; }
done
srpm=$W/top/SRPMS/cgpool-$version-1.src.rpm
[ -f "$srpm" ] || { fail "no source package cgpool-$version-1.src.rpm"; finish; }
extra=$(find "$W/top/RPMS" -name '*.rpm' | sed 's|.*/||' | grep -Ev '^cgpool(-libs|-devel|-slurm)?-[0-9]|-debug(info|source)-')
none "$extra" "package besides $pkgs (and the SRPM)"

# ---- rpmlint
# Debian's rpmlint runs its upstream defaults, which carry openSUSE's and
# Mandriva's policies. The filters below are those of rpmlint's own Fedora
# configuration (configs/Fedora/fedora.toml in rpm-software-management/rpmlint)
# for the errors these packages draw, plus one:
#   no-signature          packages are signed by the build system, not here
#   no-packager-tag, no-group-tag  Fedora's guidelines use neither tag
#   lib-package-without-%mklibname  Mandriva's library naming
#   non-versioned-file-in-library-package  openSUSE's library policy
#     (libcgpool0 packages); here /usr/lib/.build-id in cgpool-libs
#   missing-hash-section  (not in Fedora's filters) the SysV DT_HASH table:
#     Debian's and RHEL's toolchains link --hash-style=gnu, so no library
#     of theirs has one; glibc resolves symbols through .gnu.hash
# and Fedora's CompressExtension: man pages are gzipped, not bzip2ed.
if [ "$have_rpmlint" = yes ]; then
	cat > "$W/rpmlint.toml" <<-'EOF'
	CompressExtension = "gz"
	Filters = [
	    ' no-signature',
	    ' no-packager-tag',
	    '.*no-group-tag.*',
	    ' lib-package-without-%mklibname',
	    '.*non-versioned-file-in-library-package.*',
	    ' missing-hash-section ',
	]
	EOF
	# shellcheck disable=SC2046
	rpmlint -c "$W/rpmlint.toml" $(for p in $pkgs; do rpmfile "$p"; done) "$srpm" > "$W/rpmlint.log" 2>&1
	summary=$(grep -E '[0-9]+ errors?, [0-9]+ warnings?' "$W/rpmlint.log" | tail -n 1)
	errors=$(echo "$summary" | sed -n 's/.* \([0-9][0-9]*\) errors*,.*/\1/p')
	if [ "$errors" = 0 ]; then
		pass "rpmlint: $(echo "$summary" | sed 's/^ *//; s/; has taken.*//')"
	else
		fail "rpmlint: ${summary:-no summary line}"
		grep -E ': E: ' "$W/rpmlint.log" | sed 's/^/    /'
		[ -n "$summary" ] || show_log "$W/rpmlint.log"
	fi
else
	say "rpmlint is not installed and apt-get could not install it: not run"
fi

# ---- the file lists
libdir=$(rpm --eval '%{_libdir}')
unitdir=$(rpm --eval '%{?_unitdir}%{!?_unitdir:/usr/lib/systemd/system}')
man='(\.gz|\.bz2|\.xz|\.zst)?'
: > "$W/all.list"
for p in $pkgs; do
	rpm -qp --qf '[%{FILEMODES:perms} %{FILEFLAGS:fflags} %{FILENAMES}\n]' "$(rpmfile "$p")" > "$W/$p.files" 2> /dev/null
	# the files without the directories
	awk '$1 !~ /^d/ { print $NF }' "$W/$p.files" > "$W/$p.list"
	cat "$W/$p.list" >> "$W/all.list"
done
# expect PKG ERE...: each ERE matches a file of PKG
expect() {
	p=$1; shift
	missing=
	for re in "$@"; do
		grep -Eq "^$re\$" "$W/$p.list" || missing="$missing $re"
	done
	if [ -z "$missing" ]; then pass "$p holds its $# files"; else fail "$p lacks:$missing"; fi
}
expect cgpool /usr/sbin/cgpoold /usr/bin/cgpoolctl \
	"$unitdir/cgpoold\.service" "$unitdir/cgpoold\.socket" \
	/etc/cgpool/cgpool\.conf \
	/usr/share/cgpool/jobs/systemd-job\.service /usr/share/cgpool/jobs/runit-run \
	/usr/share/cgpool/jobs/s6-run /usr/share/cgpool/jobs/openrc-job \
	/usr/share/cgpool/init/cgpoold\.init /usr/share/cgpool/init/openrc/cgpoold \
	/usr/share/cgpool/init/runit/cgpoold/run /usr/share/cgpool/init/runit/cgpoold/finish \
	/usr/share/cgpool/init/runit/cgpoold/log/run \
	/usr/share/cgpool/init/s6/cgpoold/run /usr/share/cgpool/init/s6/cgpoold/finish \
	/usr/share/cgpool/init/s6/cgpoold/type /usr/share/cgpool/init/s6/cgpoold/log/run \
	"/usr/share/man/man1/cgpoolctl\.1$man" "/usr/share/man/man5/cgpool\.conf\.5$man" \
	"/usr/share/man/man8/cgpoold\.8$man"
expect cgpool-libs "$libdir/libcgpool\.so\.0" "$libdir/libcgpool\.so\.0\.0\.0"
expect cgpool-devel /usr/include/cgpool\.h "$libdir/libcgpool\.so" "$libdir/pkgconfig/cgpool\.pc"
[ -n "$slurm_version" ] && expect cgpool-slurm "$libdir/slurm/cgpool\.so" "$libdir/slurm/task_cgpool\.so"
# what must not be where: the daemon's files outside cgpool, the library's
# outside cgpool-libs, development files outside cgpool-devel
misplaced=
for p in $pkgs; do
	case $p in
	cgpool) re="^$libdir/|^/usr/include/" ;;
	cgpool-libs) re='^/usr/(s?bin|include)/|^/etc/|\.so$|/slurm/' ;;
	cgpool-devel) re='^/usr/s?bin/|^/etc/|\.so\.[0-9]|/slurm/' ;;
	cgpool-slurm) re="^/usr/s?bin/|^/etc/|^$libdir/lib|^/usr/include/" ;;
	esac
	bad=$(grep -E "$re" "$W/$p.list" | grep -v '^/usr/lib/\.build-id/' | tr '\n' ,)
	[ -z "$bad" ] || misplaced="$misplaced $p:$bad"
done
none "$misplaced" "file in a package it does not belong to"

none "$(sort "$W/all.list" | uniq -d)" "file in two packages"
for p in $pkgs; do awk '{ print $NF }' "$W/$p.files"; done > "$W/all.paths"
none "$(grep '^/usr/local' "$W/all.paths" | head -n 5)" "file or directory under /usr/local"
none "$(grep '\.la$' "$W/all.list")" "libtool archive (.la)"

flags=$(awk '$NF == "/etc/cgpool/cgpool.conf" { print $2 }' "$W/cgpool.files")
case $flags in
*c*n* | *n*c*) pass "cgpool.conf is %config(noreplace) (flags $flags)" ;;
*) fail "cgpool.conf is not %config(noreplace) (flags '$flags')" ;;
esac
none "$(awk '$NF ~ /^\/usr\/share\/cgpool\/init\// && $1 !~ /^d/ && $2 !~ /d/ { print $NF }' "$W/cgpool.files")" \
	"OpenRC, runit, s6 or sysvinit service that is not %doc"
nox=$(awk '$1 !~ /^d/ && $NF ~ /^\/usr\/share\/cgpool\/(init\/(cgpoold\.init|openrc\/cgpoold|(runit|s6)\/cgpoold\/(log\/)?(run|finish))|jobs\/(runit-run|s6-run|openrc-job))$/ && $1 !~ /^-..x/ { print $NF }' "$W/cgpool.files")
none "$nox" "service or job script that is not executable"

# ---- dependencies
if [ -n "$slurm_version" ]; then
	req=$(rpm -qp --requires "$(rpmfile cgpool-slurm)" 2> /dev/null | grep -E '^slurm(\(|[[:space:]]|$)')
	if echo "$req" | grep -Eqx "slurm(\([^)]*\))? = $slurm_version"; then
		pass "cgpool-slurm requires $req (the headers' release)"
	else
		fail "cgpool-slurm requires '$(echo "$req" | tr '\n' ' ')', not exactly slurm = $slurm_version"
	fi
fi
odd=$(for p in $pkgs; do rpm -qp --requires "$(rpmfile "$p")" 2> /dev/null; done | grep -E '^/(s?bin|usr/s?bin)/' | grep -Ev '^/(usr/)?(s?bin)/(sh|ldconfig|pkg-config)$' | sort -u)
none "$odd" "package requiring an interpreter beyond sh (another init's)"

# ---- scriptlets
rpm -qp --scripts "$(rpmfile cgpool)" > "$W/cgpool.scripts" 2> /dev/null
# section NAME: the text of one scriptlet of cgpool
section() { awk -v s="$1 scriptlet" 'index($0, s) == 1 { on = 1; next } / scriptlet( \(|$)/ { on = 0 } on' "$W/cgpool.scripts"; }
if section postinstall | grep -q 'cgpoold\.service' && section postinstall | grep -q 'cgpoold\.socket'; then
	pass "postinstall names cgpoold.socket and cgpoold.service"
else
	fail "postinstall does not name both units"
fi
if section preuninstall | grep -q 'cgpoold\.service'; then
	pass "preuninstall names cgpoold.service"
else
	fail "preuninstall does not name cgpoold.service"
fi
# restart: try-restart (systemctl), or mark-restart (systemd-update-helper)
if section postuninstall | grep -Eq '(restart|mark-restart).*cgpoold\.service'; then
	pass "postuninstall restarts cgpoold.service on upgrade"
else
	fail "postuninstall does not restart cgpoold.service"
fi
for p in $pkgs; do rpm -qp --scripts --triggers "$(rpmfile "$p")" 2> /dev/null; done > "$W/all.scripts"
if grep -n 'cgpoold-slots' "$W/all.scripts" > "$W/slots" || grep -Eq '(stop|kill|disable).*\.scope' "$W/all.scripts"; then
	fail "a scriptlet names the slots' scope: $(cat "$W/slots")"
else
	pass "no scriptlet names cgpoold-slots.scope or stops a scope"
fi
if rpm -qp --scripts "$(rpmfile cgpool-libs)" 2> /dev/null | grep -q ldconfig; then
	pass "cgpool-libs runs ldconfig"
else
	fail "cgpool-libs has no ldconfig scriptlet"
fi

say "$(($(date +%s) - start)) s"
finish
