#!/bin/sh
# bench/plot.sh [-d DIR] [-o PNGDIR] WHAT... - PNG plots (gnuplot, 900x500)
# of the raw data that the benchmarks keep in DIR (default $BENCH_OUT, else
# bench/out), written to PNGDIR (default DIR); prints each PNG's path.
# WHAT is one or more of:
#   dying    dying-restarts.png: the dying memcgs each way added over the
#            restarts, the usual way dashed and cgpoolctl exec solid, a pair
#            of lines per DIR/restart*.dying.dat (bench/restart.sh's
#            restart.dying.dat on this machine, bench/restart-vm.sh's
#            restart-vm-KERNEL-LAYOUT.dying.dat for its guests)
#   latency  placement-latency.png: the distribution (CDF, log x) of the
#            latency of each restart in DIR/restart.lat.dat (bench/restart.sh
#            on this machine) and of each placement in DIR/scale.place.dat
#            (bench/scale.sh), each way; one of the two is enough
#   slurm    slurm-start.png: the distribution of the time from srun to the
#            job's end, a line per setup (DIR/slurm-*.jobs.dat, bench/slurm.sh)
# The titles name the machine (cores and CPU model), the kernels and the
# cgroup layouts, from the comment lines that head each data file
# (bench_head in bench/data.sh). pngcairo, else gnuplot's png terminal.
# Exit status: 0 drawn; 1 a data file missing or empty, or gnuplot failed
# (why, on stderr); 64 usage; 77 gnuplot not installed.
#   sh bench/plot.sh -d bench/out dying latency slurm
set -u
me=plot.sh
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BENCH_OUT:-$top_srcdir/bench/out}
PNGDIR=

usage() {
	echo "usage: $0 [-d DIR] [-o PNGDIR] dying|latency|slurm..." >&2
	exit 64
}
err() { echo "$me: $*" >&2; }
while getopts d:o: o; do
	case $o in
	d) DIR=$OPTARG ;;
	o) PNGDIR=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
for w; do
	case $w in dying | latency | slurm) ;; *) usage ;; esac
done
command -v gnuplot > /dev/null 2>&1 || { err "gnuplot is not installed (setup.sh installs gnuplot-nox): no plot"; exit 77; }
[ -d "$DIR" ] || { err "no data directory $DIR"; exit 1; }
PNGDIR=${PNGDIR:-$DIR}
mkdir -p "$PNGDIR" || exit 1

if gnuplot -e 'set terminal pngcairo' > /dev/null 2>&1; then
	TERMINAL='set terminal pngcairo size 900,500 noenhanced font "sans,10"'
else
	TERMINAL='set terminal png size 900,500 noenhanced'
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-plot.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM HUP

COLORS="#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #8c564b #17becf #7f7f7f"
color() { echo "$COLORS" | awk -v i="$1" '{ print $((i - 1) % NF + 1) }'; }

# hv FILE NAME: the value of the "# NAME: value" line in FILE's head
hv() { sed -n "s/^# $2: //p" "$1" | head -n 1; }
# ks RELEASE: a kernel release without Debian's flavour
ks() { echo "$1" | sed 's/-cloud-amd64$//; s/-amd64$//'; }
# ls_ LAYOUT: "v1", "v2" or "hybrid (memory v1)"
ls_() { echo "$1" | sed 's/^\(v[12]\), memory on cgroup \1$/\1/; s/, memory on cgroup \(v[12]\)/ (memory \1)/'; }
# q TEXT: TEXT as a gnuplot double-quoted string (a newline as \n); qf
# PATH: PATH single-quoted
q() { printf '"%s"' "$(printf '%s\n' "$1" | awk '{ gsub(/[\\"]/, "\\\\&"); printf "%s%s", (NR > 1 ? "\\n" : ""), $0 }')"; }
qf() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"; }
# pct FILE COLUMN P: the P-th percentile (nearest rank) of a column's numbers
pct() {
	awk -v c="$2" '!/^#/ && NF >= c && $c != "-" { print $c }' "$1" | sort -n |
		awk -v p="$3" '{ v[NR] = $1 } END { if (NR) { r = int((NR * p + 99) / 100); printf "%.0f\n", v[r < 1 ? 1 : r] } }'
}
# need FILE: FILE exists and holds data lines
need() {
	[ -f "$1" ] || { err "no data file $1"; return 1; }
	grep -q '^[0-9]' "$1" || { err "no data in $1"; return 1; }
}
# setups FILE...: "kernel layout" of each file, the distinct ones, "; "-joined
setups() {
	for f; do echo "$(ks "$(hv "$f" kernel)") $(ls_ "$(hv "$f" layout)")"; done |
		awk '!seen[$0]++ { printf "%s%s", n++ ? "; " : "", $0 }'
}
# machines FILE...: the distinct machines of the files
machines() {
	for f; do hv "$f" machine; done | awk '!seen[$0]++ { printf "%s%s", n++ ? "; " : "", $0 }'
}

# draw NAME: gnuplot on $TMP/NAME.gp (the head added here), the PNG checked
draw() {
	png=$PNGDIR/$1.png
	{
		echo "set encoding utf8"
		echo "$TERMINAL"
		printf 'set output %s\n' "$(qf "$png.tmp")"
		echo 'set datafile missing "-"'
		echo "set grid"
		cat "$TMP/$1.gp"
	} > "$TMP/$1.all.gp"
	if ! gnuplot "$TMP/$1.all.gp" 2> "$TMP/$1.err" || [ ! -s "$png.tmp" ]; then
		sed 's/^/  gnuplot: /' "$TMP/$1.err" >&2
		err "$1.png not drawn"
		rm -f "$png.tmp"
		return 1
	fi
	mv "$png.tmp" "$png" && echo "$png"
}

plot_dying() {
	set --
	[ -f "$DIR/restart.dying.dat" ] && set -- "$DIR/restart.dying.dat"
	for f in "$DIR"/restart-vm-*.dying.dat; do [ -f "$f" ] && set -- "$@" "$f"; done
	[ $# -gt 0 ] || { err "no data file $DIR/restart.dying.dat nor $DIR/restart-vm-*.dying.dat (bench/restart.sh, bench/restart-vm.sh write them)"; return 1; }
	for f; do need "$f" || return 1; done
	ns=$(for f; do hv "$f" n; done | sort -u)
	[ "$(echo "$ns" | wc -l)" -eq 1 ] && over="$ns restarts" || over="the restarts"
	host= guests= gl=
	for f; do
		s="$(ks "$(hv "$f" kernel)") $(ls_ "$(hv "$f" layout)")"
		case $(hv "$f" label) in
		host) host="host kernel $s" ;;
		*) guests="$guests${guests:+, }$s"; gl=$(hv "$f" guest) ;;
		esac
	done
	sub=$(machines "$@")
	[ -n "$host" ] && sub="$sub: $host"
	[ -n "$guests" ] && sub="$sub
guests emulated on it ($gl): $guests"
	{
		printf 'set title %s\n' "$(q "Dying memory cgroups over $over: a new cgroup per run (dashed) against cgpoolctl exec (solid)
$sub")"
		echo 'set xlabel "restarts"'
		echo 'set ylabel "dying memory cgroups added"'
		echo "set key top left"
		# room below the lines at 0 and above the highest
		awk '!/^#/ { for (i = 2; i <= 3; i++) if ($i != "-") { if (n++ == 0 || $i < lo) lo = $i; if (n == 1 || $i > hi) hi = $i } }
			END { d = hi - lo; if (d < 10) d = 10; printf "set yrange [%g:%g]\n", lo - d * 0.03, hi + d * 0.05 }' "$@"
		printf 'plot '
		i=0
		for f; do
			i=$((i + 1))
			c=$(color $i)
			l="$(hv "$f" label) $(ks "$(hv "$f" kernel)") $(ls_ "$(hv "$f" layout)")"
			# one key entry a pair; markers of its own, at intervals
			# of its own, where the lines of several lie on each other
			p="lw 2 lc rgb \"$c\" pt $((i + 3)) ps 1.2 pi $((7 + 2 * i))"
			[ $i -gt 1 ] && printf ', \\\n     '
			printf '%s using 1:2 with linespoints %s dt 2 title %s, \\\n     ' "$(qf "$f")" "$p" \
				"$(q "$l: $(awk '!/^#/ { u = $2; c = $3 } END { print "usual way " u ", cgpool " c }' "$f") at the end")"
			printf '%s using 1:3 with linespoints %s dt 1 notitle' "$(qf "$f")" "$p"
		done
		echo
	} > "$TMP/dying-restarts.gp"
	draw dying-restarts
}

plot_latency() {
	set --
	for f in "$DIR/restart.lat.dat" "$DIR/scale.place.dat"; do [ -f "$f" ] && set -- "$@" "$f"; done
	[ $# -gt 0 ] || { err "no data file $DIR/restart.lat.dat nor $DIR/scale.place.dat (bench/restart.sh, bench/scale.sh write them)"; return 1; }
	for f; do need "$f" || return 1; done
	{
		printf 'set title %s\n' "$(q "Latency distribution, the usual way (dashed) against cgpool (solid)
$(machines "$@"), kernel $(setups "$@")")"
		echo 'set xlabel "latency, µs (log scale)"'
		echo 'set ylabel "fraction at or below"'
		echo "set logscale x"
		echo "set yrange [0:1]"
		echo "set key outside below center horizontal maxrows $#"
		printf 'plot '
		i=0
		for f; do
			i=$((i + 1))
			c=$(color $i)
			w="$(hv "$f" what) ($(hv "$f" n) a way)"
			[ $i -gt 1 ] && printf ', \\\n     '
			printf '%s using 2:(1.0) smooth cnormal with lines lw 2 dt 2 lc rgb "%s" title %s, \\\n     ' \
				"$(qf "$f")" "$c" "$(q "$w, usual way: p50 $(pct "$f" 2 50), p99 $(pct "$f" 2 99) µs")"
			printf '%s using 3:(1.0) smooth cnormal with lines lw 2 dt 1 lc rgb "%s" title %s' \
				"$(qf "$f")" "$c" "$(q "$w, cgpool: p50 $(pct "$f" 3 50), p99 $(pct "$f" 3 99) µs")"
		done
		echo
	} > "$TMP/placement-latency.gp"
	draw placement-latency
}

plot_slurm() {
	set --
	for f in "$DIR"/slurm-*.jobs.dat; do [ -f "$f" ] && set -- "$@" "$f"; done
	[ $# -gt 0 ] || { err "no data file $DIR/slurm-*.jobs.dat (bench/slurm.sh writes them)"; return 1; }
	for f; do need "$f" || return 1; done
	ns=$(for f; do hv "$f" n; done | sort -u)
	[ "$(echo "$ns" | wc -l)" -eq 1 ] && jobs="$ns jobs a setup" || jobs="per setup"
	{
		printf 'set title %s\n' "$(q "$(hv "$1" slurm): time from srun to the job's end, $jobs, one after another
$(machines "$@"), kernel $(setups "$@")")"
		echo "set xlabel \"srun's submit to end, ms\""
		echo 'set ylabel "fraction of jobs at or below"'
		# from a little below the fastest job to a little above the slowest
		awk '!/^#/ && NF >= 2 { if (n++ == 0 || $2 < lo) lo = $2; if (n == 1 || $2 > hi) hi = $2 }
			END { d = hi - lo; if (d < 1) d = 1; printf "set xrange [%g:%g]\n", (lo - d * 0.05 < 0 ? 0 : lo - d * 0.05), hi + d * 0.05 }' "$@"
		echo "set yrange [0:1]"
		echo "set key outside below center horizontal maxrows $((($# + 1) / 2))"
		printf 'plot '
		i=0
		for f; do
			i=$((i + 1))
			[ $i -gt 1 ] && printf ', \\\n     '
			printf '%s using 2:(1.0) smooth cnormal with lines lw 2 lc rgb "%s" title %s' "$(qf "$f")" "$(color $i)" \
				"$(q "$(hv "$f" setup): p50 $(pct "$f" 2 50), p90 $(pct "$f" 2 90), max $(pct "$f" 2 100) ms$(d=$(hv "$f" dying); [ -z "$d" ] || echo "; dying memcgs added: $d")")"
		done
		echo
	} > "$TMP/slurm-start.gp"
	draw slurm-start
}

rc=0
for w; do
	"plot_$w" || rc=1
done
exit $rc
