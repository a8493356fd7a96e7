# data.sh - sourced by the benchmarks (common.sh sources it; restart-vm.sh
# too) with top_srcdir set: where they keep their raw data and plots, the
# comment lines that head a data file, and the call of bench/plot.sh. Needs
# no root: tests/tree/bench-plot.sh sources it too.
#
#   BENCH_OUT   the directory of the data files (*.dat) and of the PNGs
#               drawn from them; default bench/out in the checkout; made
#               when missing
#   BENCH_PLOT  no: draw no PNG (the data is still kept)
BENCH_OUT=${BENCH_OUT:-$top_srcdir/bench/out}

# bench_machine: the cores and CPU model of this machine, no host name
bench_machine() {
	echo "$(nproc) cores, $(sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo | head -n 1 | tr -s ' ')"
}

# bench_layout: the cgroup layout (v1, v2 or hybrid) and where the memory
# controller lives
bench_layout() {
	if grep -q '^[0-9]*:memory:' /proc/self/cgroup; then m=v1; else m=v2; fi
	awk -v m="$m" '$3 == "cgroup" { v1 = 1 } $3 == "cgroup2" { v2 = 1 }
		END { printf "%s, memory on cgroup %s\n", v1 && v2 ? "hybrid" : v1 ? "v1" : "v2", m }' /proc/mounts
}

# bench_head BENCH [LINE...]: the comment lines that head a data file: the
# bench, this machine, kernel and layout, then each LINE ("name: value");
# bench/plot.sh reads them for its titles and keys
bench_head() {
	echo "# bench: $1"
	shift
	echo "# machine: $(bench_machine)"
	echo "# kernel: $(uname -r)"
	echo "# layout: $(bench_layout)"
	for l; do echo "# $l"; done
}

# bench_out: make $BENCH_OUT (an absolute path from here on)
bench_out() {
	mkdir -p "$BENCH_OUT" && BENCH_OUT=$(cd "$BENCH_OUT" && pwd) || {
		echo "bench: cannot make the data directory BENCH_OUT=$BENCH_OUT" >&2
		return 1
	}
}

# bench_plot WHAT...: bench/plot.sh's PNG for each WHAT from the data in
# $BENCH_OUT, and a line saying where it is; without gnuplot a line saying
# the plot was skipped (not an error)
bench_plot() {
	[ "${BENCH_PLOT:-yes}" = no ] && return 0
	if ! command -v gnuplot > /dev/null 2>&1; then
		echo "plot: skipped, gnuplot is not installed (setup.sh installs gnuplot-nox); the data is in $BENCH_OUT"
		return 0
	fi
	for w; do
		if png=$(sh "$top_srcdir/bench/plot.sh" -d "$BENCH_OUT" "$w"); then
			echo "plot: $png"
		else
			echo "plot: $w not drawn (bench/plot.sh failed, above); the data is in $BENCH_OUT"
		fi
	done
}
