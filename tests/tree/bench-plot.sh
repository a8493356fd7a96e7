#!/bin/sh
# bench-plot.sh - bench/plot.sh draws its PNGs from the data that the benches
# write, and fails, saying why, when that data is missing.
#
# The data comes from the benches themselves, in small runs: bench/restart.sh
# with N = 20 (root, a memory controller and a built tree; the dying and
# latency plots are skipped, with the reason, otherwise) and bench/slurm.sh
# with 3 jobs a way (Slurm and the plug-in built as well; about 10 s; the
# favordynmods way left out: SLURM_BENCH_FDM=no). Each PNG must be there,
# non-empty, and start with the PNG signature, and the bench must say where
# it is. Then, without any of it: plot.sh on a directory with
# no data, and with a data file that holds no data, must exit non-zero and
# say so; with gnuplot out of PATH it exits 77 and the benches' bench_plot
# says the plot was skipped. Skipped (77) when gnuplot is not installed.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
PLOT=$top/bench/plot.sh
command -v gnuplot > /dev/null 2>&1 || { echo "SKIP: bench-plot: gnuplot not installed"; exit 77; }
[ -f "$PLOT" ] || { echo "ERROR: bench-plot: no $PLOT"; exit 99; }

fails=0 passes=0
ok() { echo "ok: $*"; passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
W=$(mktemp -d "${TMPDIR:-/var/tmp}/cgpool-bench-plot.XXXXXX") || exit 99
trap 'rm -rf "$W"' EXIT
trap 'exit 99' INT TERM

# png FILE: FILE is there, not empty, and starts with \211PNG\r\n\032\n
png() {
	[ -s "$1" ] && [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ]
}
# plotted WHAT PNG DIR: plot.sh WHAT on DIR draws PNG and prints its path
plotted() {
	out=$(sh "$PLOT" -d "$2" -o "$W/png" "$1" 2> "$W/err")
	rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "$W/png/$3" ] && png "$W/png/$3"; then
		ok "plot.sh $1: $3 ($(wc -c < "$W/png/$3") bytes, PNG signature)"
	else
		bad "plot.sh $1: exit $rc, printed '$out'; $3: $(ls -l "$W/png/$3" 2>&1)"
		sed 's/^/  /' "$W/err"
	fi
}
# run_bench NAME OUTDIR CMD...: a bench into OUTDIR, bounded in time; 0 ran,
# 77 skipped (reason printed), else failed
run_bench() {
	name=$1 out=$2
	shift 2
	mkdir -p "$out"
	BENCH_OUT=$out timeout -k 5 120 "$@" > "$W/$name.log" 2>&1
	rc=$?
	case $rc in
	0) return 0 ;;
	77) echo "skip: $name: $(grep -m 1 '^SKIP' "$W/$name.log" || tail -n 1 "$W/$name.log")"; return 77 ;;
	*) bad "$name exited $rc"; sed 's/^/  /' "$W/$name.log" | tail -n 20; return 1 ;;
	esac
}
# said NAME PNG: the bench said where its PNG is
said() {
	if grep -qx "plot: $W/$1/$2" "$W/$1.log" && png "$W/$1/$2"; then
		ok "$1 says where $2 is"
	else
		bad "$1 does not say 'plot: $W/$1/$2' (or no PNG there):"
		grep '^plot' "$W/$1.log" | sed 's/^/  /'
	fi
}

# ---- bench/restart.sh, 20 restarts: dying-restarts.png, placement-latency.png
mem_v1=no
grep -q '^[0-9]*:memory:' /proc/self/cgroup && mem_v1=yes
if [ "$(id -u)" != 0 ]; then
	echo "skip: restart.sh part: needs root (cgroups)"
elif [ "${CGPOOL_INTEG:-yes}" = no ]; then
	echo "skip: restart.sh part: CGPOOL_INTEG=no (no cgroups made)"
else
	# on v1 the dying count is machine-wide: the lock of the tests that read it
	locked=yes
	if [ $mem_v1 = yes ] && command -v flock > /dev/null; then
		exec 9> "${TMPDIR:-/var/tmp}/cgpool-integ-dying.lock"
		flock -w 60 9 || locked=no
	fi
	if [ $locked = no ]; then
		echo "skip: restart.sh part: the dying-count lock stayed busy for 60 s"
	else
		run_bench restart "$W/restart" sh "$top/bench/restart.sh" 20 9>&-
		rc=$?
		exec 9>&-
		if [ $rc -eq 0 ]; then
			for x in dying lat; do
				n=$(grep -c '^[0-9]' "$W/restart/restart.$x.dat" 2> /dev/null)
				if [ "${n:-0}" -ge 20 ]; then
					ok "restart.sh wrote restart.$x.dat ($n data lines)"
				else
					bad "restart.sh: restart.$x.dat has ${n:-no} data lines, not 20 or more"
				fi
			done
			said restart dying-restarts.png
			said restart placement-latency.png
			plotted dying "$W/restart" dying-restarts.png
			plotted latency "$W/restart" placement-latency.png
		fi
	fi
fi

# ---- bench/slurm.sh, 3 jobs a way: slurm-start.png
if [ "$(id -u)" != 0 ] || [ "${CGPOOL_INTEG:-yes}" = no ]; then
	echo "skip: slurm.sh part: needs root and CGPOOL_INTEG not no"
elif ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null; then
	echo "skip: slurm.sh part: Slurm not installed"
elif [ ! -f "$top/src/slurm/.libs/cgpool.so" ]; then
	echo "skip: slurm.sh part: the plug-in is not built ($top/src/slurm/.libs/cgpool.so)"
elif SLURM_BENCH_FDM=no run_bench slurm "$W/slurm" sh "$top/bench/slurm.sh" 3 3; then
	said slurm slurm-start.png
	plotted slurm "$W/slurm" slurm-start.png
fi

# ---- broken: no data, empty data, no gnuplot
mkdir -p "$W/none" "$W/empty"
for w in dying latency slurm; do
	if sh "$PLOT" -d "$W/none" "$w" > "$W/out" 2> "$W/err"; then
		bad "plot.sh $w with no data exited 0"
	elif grep -q 'no data file' "$W/err" && [ ! -s "$W/out" ]; then
		ok "plot.sh $w with no data fails: $(head -n 1 "$W/err")"
	else
		bad "plot.sh $w with no data: no message ($(cat "$W/err" "$W/out"))"
	fi
done
printf '# bench: restart\n# n: 20\n' > "$W/empty/restart.dying.dat"
if sh "$PLOT" -d "$W/empty" dying > "$W/out" 2> "$W/err"; then
	bad "plot.sh dying with a data file without data exited 0"
elif grep -q 'no data in' "$W/err" && [ ! -e "$W/empty/dying-restarts.png" ]; then
	ok "plot.sh dying with a data file without data fails: $(head -n 1 "$W/err")"
else
	bad "plot.sh dying with a data file without data: $(cat "$W/err")"
fi
sh "$PLOT" -d "$W/none" nonsense > /dev/null 2>&1
rc=$?
[ $rc -eq 64 ] && ok "plot.sh with an unknown plot: usage, 64" || bad "plot.sh with an unknown plot: exit $rc, not 64"
# gnuplot out of PATH: a directory with everything else plot.sh and data.sh
# call before they look for it
mkdir -p "$W/bin"
for t in dirname sh; do ln -s "$(command -v $t)" "$W/bin/$t"; done
PATH=$W/bin sh "$PLOT" -d "$W/none" dying > /dev/null 2> "$W/err"
rc=$?
[ $rc -eq 77 ] && grep -q 'gnuplot is not installed' "$W/err" && ok "plot.sh without gnuplot: 77, says so" ||
	bad "plot.sh without gnuplot: exit $rc ($(cat "$W/err"))"
said=$(top_srcdir=$top BENCH_OUT=$W/none PATH=$W/bin sh -c '. "$top_srcdir/bench/data.sh"; bench_plot dying' 2>&1)
rc=$?
case $rc:$said in
"0:plot: skipped, gnuplot is not installed"*) ok "bench_plot without gnuplot: $said" ;;
*) bad "bench_plot without gnuplot: exit $rc, said '$said'" ;;
esac

echo "bench-plot: $passes passed, $fails failed"
[ $fails -eq 0 ] || exit 1
[ $passes -gt 0 ] || exit 77
exit 0
