#!/bin/sh
# fetch-kernels.sh CACHE_DIR [stable] [unstable] [bullseye] [trixie]
#
# Obtains and caches the kernels the VM tests boot (stable and unstable by
# default):
#   stable    Debian stable's linux-image-amd64 (the machine's own apt sources)
#   unstable  the newest linux-binary-*-cloud-amd64 of Debian unstable, through
#             a private apt configuration derived from the machine's own
#             sources (suite changed to sid); the system's apt state is not
#             touched
#   bullseye  the newest linux-image-5.10.*-cloud-amd64 of Debian 11, the
#             same way with the suite changed to bullseye (the oldest
#             kernel the archive still serves: no cgroup.kill, memory.peak,
#             memory.reclaim, SO_PEERPIDFD)
#   trixie    the newest linux-image-6.12.*-cloud-amd64 of Debian 13, the
#             same way with the suite changed to trixie (the kernel of the
#             Debian 13 systemd guest, with its Slurm 24.11)
# Packages are unpacked with dpkg -x, never installed. Each kernel ends up in
# CACHE_DIR/<name>/ as
#   vmlinuz         the kernel
#   release         its uname -r
#   package         the package(s) it came from, with versions
#   modules.load    module files in load order (virtio_pci, virtio_blk, ext4
#                   and what they depend on; built-in ones are absent)
#   modules/        those .ko files, decompressed
# A kernel already in the cache is used as it is, without network access
# (CGPOOL_VM_REFRESH=1 fetches again). Exit 0 when every requested kernel is
# there, 77 (with the reason) when one cannot be had, 99 on bad usage.
set -u

MODULES_NEEDED="virtio_pci virtio_blk ext4"

say() { echo "fetch-kernels: $*"; }
warn() { echo "fetch-kernels: $*" >&2; }

[ $# -ge 1 ] || { echo "usage: $0 CACHE_DIR [stable] [unstable] [bullseye] [trixie]" >&2; exit 99; }
CACHE=$1
shift
[ $# -gt 0 ] || set -- stable unstable
for k in "$@"; do
	case $k in stable | unstable | bullseye | trixie) ;; *) echo "$0: unknown kernel '$k' (stable, unstable, bullseye or trixie)" >&2; exit 99 ;; esac
done
mkdir -p "$CACHE" || { warn "cannot create $CACHE"; exit 77; }
CACHE=$(cd "$CACHE" && pwd)

# One fetcher at a time per cache (parallel make check runs share it).
if command -v flock > /dev/null; then
	exec 9> "$CACHE/.lock"
	flock 9
fi

# Host tools: dpkg -x comes with dpkg; modprobe and depmod with kmod.
need_tools() {
	missing=
	command -v modprobe > /dev/null || missing="$missing kmod"
	command -v depmod > /dev/null || missing="$missing kmod"
	command -v xz > /dev/null || missing="$missing xz-utils"
	[ -n "$missing" ] || return 0
	[ "$(id -u)" = 0 ] || return 1
	say "installing$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing > "$CACHE/apt-install.log" 2>&1
}

# dl DIR APTOPTS... -- PKG...: apt-get download into DIR
dl() {
	d=$1
	shift
	(cd "$d" && apt-get -q -o APT::Sandbox::User=root "$@") > "$d/download.log" 2>&1 ||
		{ sed 's/^/    /' "$d/download.log" >&2; return 1; }
}

# apt options of the archive being looked at: none for stable (the machine's
# own configuration), the private sid configuration for unstable
APT_OPTS=

# pkg_field PKG FIELD: a field of the candidate version of PKG
pkg_field() { apt-cache $APT_OPTS show --no-all-versions "$1" 2> /dev/null | sed -n "s/^$2: //p" | head -n 1; }
pkg_exists() { [ -n "$(pkg_field "$1" Package)" ]; }
pkg_version() { pkg_field "$1" Version; }

# prepare TMP: TMP/root holds the unpacked packages; make TMP a kernel dir
prepare() {
	t=$1
	vmlinuz=
	for f in "$t"/root/boot/vmlinuz-* "$t"/root/usr/lib/modules/*/vmlinuz "$t"/root/lib/modules/*/vmlinuz; do
		[ -f "$f" ] && { vmlinuz=$f; break; }
	done
	[ -n "$vmlinuz" ] || { warn "no vmlinuz in the packages"; return 1; }
	case $vmlinuz in
	*/boot/vmlinuz-*) release=${vmlinuz##*/vmlinuz-} ;;
	*) release=$(basename "$(dirname "$vmlinuz")") ;;
	esac
	if [ -d "$t/root/usr/lib/modules/$release/kernel" ]; then
		base=$t/root/usr
	elif [ -d "$t/root/lib/modules/$release/kernel" ]; then
		base=$t/root
	else
		warn "no modules for $release in the packages"
		return 1
	fi
	cp "$vmlinuz" "$t/vmlinuz" || return 1
	echo "$release" > "$t/release"
	depmod -b "$base" "$release" 2> "$t/depmod.log" || { cat "$t/depmod.log" >&2; return 1; }
	mkdir -p "$t/modules"
	: > "$t/modules.load"
	n=0
	for m in $MODULES_NEEDED; do
		out=$(modprobe -d "$base" -S "$release" --show-depends "$m" 2>&1)
		case $out in
		*"not found"*)
			# no modules.builtin to tell: then it is built in, or the
			# guest will fail to find its disk and say so
			[ -f "$base/lib/modules/$release/modules.builtin" ] &&
				{ warn "$release: module $m not found"; return 1; }
			say "$release: $m is not a module, taken as built in"
			continue
			;;
		esac
		echo "$out" | while read -r verb path _; do
			[ "$verb" = insmod ] || continue
			ko=$(basename "$path")
			ko=${ko%.xz}
			ko=${ko%.zst}
			ko=${ko%.gz}
			grep -qx "[0-9]*-$ko" "$t/modules.load" && continue
			n=$(wc -l < "$t/modules.load")
			name=$(printf '%02d-%s' "$n" "$ko")
			case $path in
			*.xz) xz -dc "$path" > "$t/modules/$name" ;;
			*.zst) zstd -qdc "$path" > "$t/modules/$name" ;;
			*.gz) gzip -dc "$path" > "$t/modules/$name" ;;
			*) cp "$path" "$t/modules/$name" ;;
			esac || exit 1
			echo "$name" >> "$t/modules.load"
		done || { warn "$release: cannot unpack the modules for $m"; return 1; }
	done
	rm -rf "$t/root" "$t"/*.deb "$t/depmod.log"
}

# install_kernel NAME TMP: move a prepared TMP into place
install_kernel() {
	rm -rf "${CACHE:?}/$1"
	mv "$2" "$CACHE/$1" || return 1
	touch "$CACHE/$1/complete"
}

unpack() {
	t=$1
	mkdir -p "$t/root"
	for deb in "$t"/*.deb; do
		dpkg -x "$deb" "$t/root" || { warn "dpkg -x $deb failed"; return 1; }
	done
}

fetch_stable() {
	pkg=
	for try in 1 2; do
		pkg=$(apt-cache depends linux-image-amd64 2> /dev/null |
			sed -n 's/^ *Depends: \(linux-image-[^ <>]*\)$/\1/p' | head -n 1)
		[ -n "$pkg" ] && break
		[ $try = 1 ] && apt-get -q update > "$CACHE/apt-update.log" 2>&1
	done
	[ -n "$pkg" ] || { warn "stable: apt knows no linux-image-amd64"; return 1; }
	release=${pkg#linux-image-}
	t=$CACHE/.tmp-stable.$$
	rm -rf "$t" && mkdir -p "$t"
	pkgs=$pkg
	for p in "linux-modules-$release" "linux-base-$release"; do
		pkg_exists "$p" && pkgs="$pkgs $p"
	done
	dl "$t" download $pkgs || { warn "stable: apt-get download $pkgs failed"; rm -rf "$t"; return 1; }
	for p in $pkgs; do echo "$p $(pkg_version "$p")"; done > "$t/package"
	unpack "$t" && prepare "$t" && install_kernel stable "$t" || { rm -rf "$t"; return 1; }
}

# suite_apt_setup SUITE: the private apt configuration for another suite of
# the machine's own archive (sid, bullseye, trixie), from the machine's own sources:
# the stanza (or line) of the main archive, i.e. whose suite list starts with
# the machine's codename, with the suite changed to SUITE.
suite_apt_setup() {
	suite=$1
	a=$CACHE/apt-$suite
	codename=$(. /etc/os-release 2> /dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$codename" ] || { warn "unstable: no VERSION_CODENAME in /etc/os-release"; return 1; }
	mkdir -p "$a/sources.list.d" "$a/preferences.d" "$a/state/lists/partial" "$a/cache/archives/partial" || return 1
	[ -f "$a/state/status" ] || : > "$a/state/status"
	src=${CGPOOL_VM_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
	rm -f "$a/sources.list.d/"*
	if [ -f "$src" ] && [ "${src%.sources}" != "$src" ]; then
		out=$a/sources.list.d/$suite.sources
		awk -v cn="$codename" -v suite="$suite" 'BEGIN { RS = ""; ORS = "\n\n" }
			{
				main = 0; out = ""
				n = split($0, l, "\n")
				for (i = 1; i <= n; i++) {
					if (l[i] ~ /^#/) continue
					if (l[i] ~ /^Suites:/) {
						split(l[i], s, /[ \t]+/)
						if (s[2] == cn) main = 1
						l[i] = "Suites: " suite
					}
					if (l[i] ~ /^Types:/) l[i] = "Types: deb"
					out = out l[i] "\n"
				}
				if (main && !done) { printf "%s", out; done = 1 }
			}' "$src" > "$out"
	else
		src=/etc/apt/sources.list
		out=$a/sources.list.d/$suite.list
		[ -f "$src" ] && awk -v cn="$codename" -v suite="$suite" '
			$1 == "deb" {
				i = 2
				if ($2 ~ /^\[/) { opts = ""; while ($i !~ /\]$/) { opts = opts $i " "; i++ } ; opts = opts $i " "; i++ }
				if ($(i + 1) == cn) { print "deb " opts $i " " suite " main"; exit }
			}' "$src" > "$out"
	fi
	[ -s "$out" ] ||
		{ warn "$suite: no apt source for '$codename' in $src to derive it from"; return 1; }
	APT_OPTS="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$a/sources.list.d
		-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=$a/preferences.d
		-o Dir::State=$a/state -o Dir::State::status=$a/state/status -o Dir::Cache=$a/cache
		-o Acquire::Languages=none"
	apt-get -q $APT_OPTS update > "$a/update.log" 2>&1 &&
		! grep -q -e '^E: ' -e '^W: Failed to fetch' "$a/update.log" ||
		{ sed 's/^/    /' "$a/update.log" >&2; warn "apt-get update for $suite failed"; return 1; }
}

# newest PKG... (on stdin, one a line): the one with the highest version
newest() {
	best=
	bestv=
	while read -r p; do
		v=$(pkg_version "$p")
		[ -n "$v" ] || continue
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$bestv"; then
			best=$p
			bestv=$v
		fi
	done
	echo "$best"
}

# fetch_suite_kernel NAME PKG: the kernel package PKG, with its modules and
# base files (modules.builtin) where they are packaged apart, into CACHE/NAME
fetch_suite_kernel() {
	name=$1 pkg=$2
	release=${pkg#linux-binary-}
	release=${release#linux-image-}
	pkgs=$pkg
	for p in "linux-modules-$release" "linux-base-$release"; do
		pkg_exists "$p" && pkgs="$pkgs $p"
	done
	t=$CACHE/.tmp-$name.$$
	rm -rf "$t" && mkdir -p "$t"
	dl "$t" $APT_OPTS download $pkgs || { warn "$name: apt-get download $pkgs failed"; rm -rf "$t"; return 1; }
	for p in $pkgs; do echo "$p $(pkg_version "$p")"; done > "$t/package"
	unpack "$t" && prepare "$t" && install_kernel "$name" "$t" || { rm -rf "$t"; return 1; }
}

fetch_unstable() {
	suite_apt_setup sid || return 1
	# the kernel image alone (newer packaging), else the whole linux-image
	pkg=$(apt-cache $APT_OPTS search --names-only '^linux-binary-.*-cloud-amd64$' |
		awk '{ print $1 }' | grep -v -- '-unsigned-' | newest)
	[ -n "$pkg" ] || pkg=$(apt-cache $APT_OPTS search --names-only '^linux-image-[0-9].*-cloud-amd64$' |
		awk '{ print $1 }' | grep -v -- '-unsigned$' | newest)
	[ -n "$pkg" ] || { warn "unstable: no linux-binary-*-cloud-amd64 nor linux-image-*-cloud-amd64 in sid"; return 1; }
	fetch_suite_kernel unstable "$pkg"
}

# fetch_newest NAME SUITE PATTERN: the newest kernel package of SUITE whose
# name matches PATTERN (no -unsigned nor -dbg one), into CACHE/NAME
fetch_newest() {
	suite_apt_setup "$2" || return 1
	pkg=$(apt-cache $APT_OPTS search --names-only "$3" |
		awk '{ print $1 }' | grep -v -- '-unsigned$' | grep -v -- '-dbg$' | newest)
	[ -n "$pkg" ] || { warn "$1: no package $3 in $2"; return 1; }
	fetch_suite_kernel "$1" "$pkg"
}

fetch_bullseye() { fetch_newest bullseye bullseye '^linux-image-5\.10\.[0-9.-]*-cloud-amd64$'; }
fetch_trixie() { fetch_newest trixie trixie '^linux-image-6\.12\.[0-9a-z.+-]*-cloud-amd64$'; }

status=0
for k in "$@"; do
	if [ -f "$CACHE/$k/complete" ] && [ -z "${CGPOOL_VM_REFRESH:-}" ]; then
		:
	elif ! command -v apt-get > /dev/null || ! command -v dpkg > /dev/null; then
		say "SKIP $k: no apt-get/dpkg to fetch it with"
		status=77
		continue
	elif ! need_tools; then
		say "SKIP $k: kmod and xz-utils are needed and could not be installed"
		status=77
		continue
	else
		say "fetching the $k kernel"
		if ! "fetch_$k"; then
			say "SKIP $k: the kernel could not be had (see above)"
			status=77
			continue
		fi
	fi
	say "$k: $(cat "$CACHE/$k/release") from $(tr '\n' ' ' < "$CACHE/$k/package")in $CACHE/$k," \
		"modules: $(tr '\n' ' ' < "$CACHE/$k/modules.load")"
done
exit $status
