# mirror.sh - sourced: the machine's own Debian archive, for the scripts that
# fetch from another suite of it (rootfs.sh, tests/pkg/chroot.sh).
#
# mirror_of SOURCES_FILE CODENAME: "URI KEYRING" of the main archive in
# SOURCES_FILE (a deb822 .sources file or a sources.list): the stanza, or
# line, whose first suite is CODENAME. Prints nothing when there is none.
mirror_of() {
	if [ "${1%.sources}" != "$1" ]; then
		awk -v cn="$2" 'BEGIN { RS = "" }
			{
				uri = ""; key = ""; main = 0
				n = split($0, l, "\n")
				for (i = 1; i <= n; i++) {
					if (l[i] ~ /^#/) continue
					split(l[i], w, /[ \t]+/)
					if (w[1] == "URIs:") uri = w[2]
					if (w[1] == "Suites:" && w[2] == cn) main = 1
					if (w[1] == "Signed-By:") key = w[2]
				}
				if (main && uri != "") { print uri, key; exit }
			}' "$1"
	else
		awk -v cn="$2" '$1 == "deb" {
				i = 2; key = ""
				if ($2 ~ /^\[/) {
					for (; $i !~ /\]$/; i++) if ($i ~ /signed-by=/) key = $i
					if ($i ~ /signed-by=/) key = $i
					i++
				}
				sub(/.*signed-by=/, "", key); sub(/\]$/, "", key)
				if ($(i + 1) == cn) { print $i, key; exit }
			}' "$1"
	fi
}

# machine_mirror: sets MIRROR and KEYRING from the machine's own apt sources
# (CGPOOL_VM_APT_SOURCES, else debian.sources, else sources.list) and
# HOST_CODENAME from /etc/os-release; returns 1 with the reason on stderr
# when there is none.
machine_mirror() {
	HOST_CODENAME=$(. /etc/os-release 2> /dev/null && echo "${VERSION_CODENAME:-}")
	[ -n "$HOST_CODENAME" ] || { echo "no VERSION_CODENAME in /etc/os-release" >&2; return 1; }
	src=${CGPOOL_VM_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
	[ -f "$src" ] || src=/etc/apt/sources.list
	[ -f "$src" ] || { echo "no apt sources ($src)" >&2; return 1; }
	set -- $(mirror_of "$src" "$HOST_CODENAME")
	MIRROR=${1:-}
	KEYRING=${2:-}
	[ -n "$MIRROR" ] || { echo "no apt source for '$HOST_CODENAME' in $src" >&2; return 1; }
	return 0
}

# mirror_debootstrap LOG VARIANT SUITE ROOT [ARG...]: debootstrap
# --variant=VARIANT --components=main [ARG...] of SUITE from MIRROR (with
# KEYRING: machine_mirror) into ROOT, its output in LOG; debootstrap is
# installed with apt-get first when missing. On failure the ends of LOG and
# of debootstrap's own log go to stderr; returns 1, or 2 when debootstrap
# cannot be installed.
mirror_debootstrap() {
	md_log=$1 md_var=$2 md_suite=$3 md_root=$4
	shift 4
	if ! command -v debootstrap > /dev/null; then
		echo "installing debootstrap" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap > /dev/null 2>&1 ||
			{ apt-get update -q > /dev/null 2>&1 &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap > /dev/null 2>&1; } ||
			return 2
	fi
	md_kr=
	[ -n "$KEYRING" ] && [ -f "$KEYRING" ] && md_kr="--keyring=$KEYRING"
	# shellcheck disable=SC2086
	debootstrap --variant="$md_var" --components=main $md_kr "$@" "$md_suite" "$md_root" "$MIRROR" > "$md_log" 2>&1 &&
		return 0
	tail -n 30 "$md_log" >&2
	[ -f "$md_root/debootstrap/debootstrap.log" ] && tail -n 30 "$md_root/debootstrap/debootstrap.log" >&2
	return 1
}

# mirror_unmount ROOT: what debootstrap or a chroot's build mounted below
# ROOT (proc, sys, dev/pts, dev), unmounted lazily; never left behind
mirror_unmount() {
	for mu_m in proc sys dev/pts dev; do
		mountpoint -q "$1/$mu_m" 2> /dev/null && umount -l "$1/$mu_m"
	done
	return 0
}
