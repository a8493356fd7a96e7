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
