#!/bin/sh
# modules.sh - the daemon's modules depend on each other without a cycle.
#
# A module is the files of src/cgpoold/ that share a name up to the first '_'
# (pool.c, pool_attach.c, pool.h and pool_internal.h are the module pool);
# module A uses B when a file of A includes a header of B. The uses must
# form no cycle: a cycle is printed with the includes that make it, and the
# test fails. With -v the modules and their uses are printed too.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$top/src/cgpoold
[ -d "$src" ] || { echo "modules.sh: no $src" >&2; exit 99; }
verbose=${1:-}

module() { b=${1##*/}; b=${b%.*}; echo "${b%%_*}"; }

edges=$(mktemp) || exit 99
trap 'rm -f "$edges"' EXIT
for f in "$src"/*.c "$src"/*.h; do
	m=$(module "$f")
	sed -n 's/^#include "\([a-z0-9_]*\)\.h".*/\1/p' "$f" | while read -r h; do
		[ -f "$src/$h.h" ] || continue # config.h and the like
		hm=$(module "$h")
		[ "$hm" = "$m" ] || echo "$m $hm ${f##*/} $h.h"
	done
done | sort -u > "$edges"

[ "$verbose" = -v ] && awk '{ print $1 " uses " $2 " (" $3 " includes " $4 ")" }' "$edges"
n=$(cut -d' ' -f1,2 "$edges" | sort -u | wc -l)
loops=$(cut -d' ' -f1,2 "$edges" | sort -u | tsort 2>&1 > /dev/null | sed -n 's/^tsort: \([a-z0-9]*\)$/\1/p')
if [ -n "$loops" ]; then
	echo "FAIL: the modules' uses ($n) form a cycle through: $(echo $loops)"
	for m in $loops; do
		awk -v m="$m" -v set=" $(echo $loops) " 'index(set, " " $2 " ") && $1 == m { print "  " $1 " uses " $2 ": " $3 " includes " $4 }' "$edges"
	done
	exit 1
fi
echo "PASS: $(cut -d' ' -f1 "$edges" | sort -u | wc -l) modules, $n uses, no cycle"
exit 0
