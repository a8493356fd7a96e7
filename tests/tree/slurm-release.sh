#!/bin/sh
# slurm-release.sh - configure builds the Slurm plug-ins only for a release
# whose task plug-in interface it knows (src/slurm/slurm_release.h): with
# Slurm's headers saying 23.02.5 (a release between the known ones) it
# stops with the reason and names the releases it knows; with headers
# saying 24.11.5 it builds the plug-ins for release 24.11 and says so. The
# headers are made up here (slurm/slurm_version.h, slurm/spank.h and
# slurm/slurm.h, first in the include path); configure runs in a copy of
# what it reads.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -x "$top/configure" ] || { echo "SKIP: slurm-release.sh: no configure in $top (autoreconf first)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-slurm-release.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
fails=0
check() { d=$1; shift; if "$@"; then echo "ok: $d"; else echo "FAIL: $d"; fails=$((fails + 1)); fi; }

mkdir -p "$T/src" && (cd "$top" && cp -R configure config.h.in Makefile.in cgpool.spec.in build-aux m4 "$T/src/" &&
	mkdir -p "$T/src/src/lib" "$T/src/src/cgpoold" && cp src/lib/cgpool.pc.in "$T/src/src/lib/" &&
	cp src/cgpoold/cgpoold.c "$T/src/src/cgpoold/") || { echo "ERROR: cannot copy what configure reads"; exit 99; }
headers() { # DIR VERSION_NUMBER
	mkdir -p "$1/slurm"
	printf '#define SLURM_VERSION_NUMBER %s\n' "$2" > "$1/slurm/slurm_version.h"
	printf '#include <slurm/slurm_version.h>\n' > "$1/slurm/spank.h"
	: > "$1/slurm/slurm.h"
}
headers "$T/2302" 0x170205
headers "$T/2411" 0x180b05
conf() { # INCLUDE_DIR: configure's output and config.log's end, exit status kept
	(cd "$T/src" && ./configure -q --with-slurm CPPFLAGS="-I$1" > "$T/out" 2>&1)
	rc=$?
	cat "$T/out"
	return $rc
}

conf "$T/2302"
rc=$?
check "configure refuses Slurm 23.02.5 (exit $rc)" test $rc -ne 0
check "... naming the release and the ones it knows" grep -q "Slurm 23.02.5 .*know the task plug-in interfaces of Slurm 22.05, 24.11 and 26.05" "$T/out"
conf "$T/2411" > /dev/null
rc=$?
check "configure takes Slurm 24.11.5 (exit $rc)" test $rc -eq 0
check "... and builds the plug-ins for release 24.11" grep -q "SLURM_RELEASE='24.11'" "$T/src/config.log"
check "... and says so" grep -q "Slurm 24.11.5: the plug-ins are built for release 24.11" "$T/src/config.log"
echo "slurm-release: $fails failed"
[ $fails -eq 0 ]
