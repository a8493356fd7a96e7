#!/bin/sh
# bench/restart-vm.sh [KERNEL[:LAYOUT] ...] [N] - bench/restart.sh in the
# busybox test VMs (tests/vm/run-vm.sh): N (1000) restarts of a job that
# appends 4 KiB of a file to a log on the guest's disk, the usual way (a
# cgroup made and removed per run) and through cgpoolctl exec against a
# running cgpoold, on each KERNEL (default `bullseye:v1 bullseye:v2`: Debian
# 11's 5.10 on pure cgroup v1 and on pure cgroup v2). For each it prints a
# block of `bench:` lines: kernel release, layout, N, the dying memcgs each
# way added, the kernel memory each added (/proc/meminfo's Percpu, Slab,
# SUnreclaim, KReclaimable: after - before, and per dying memcg of the usual
# way) and the ratio of the per-restart medians cgpool / usual. The guest is
# emulated (TCG) where the machine has no KVM (the report says which):
# compare the ratios, not the microseconds. KERNEL and LAYOUT as for
# tests/vm/check-vm.sh (stable, unstable, bullseye or a kernel directory or
# vmlinuz; v1 or v2, v2 when not given). Run from a built checkout as root.
#   sh bench/restart-vm.sh bullseye:v1 bullseye:v2 1000
# Each guest's raw data (restart.sh's, printed on the console) goes to
# $BENCH_OUT (default bench/out; bench/data.sh) as
# restart-vm-KERNEL-LAYOUT.dying.dat and .lat.dat (a guest run again
# replaces its own files only), and bench/plot.sh draws dying-restarts.png
# there from them and bench/restart.sh's restart.dying.dat of this host
# (skipped without gnuplot, or with BENCH_PLOT=no).
set -u

top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=$(cd "${top_builddir:-$top_srcdir}" && pwd)
export top_srcdir
. "$top_srcdir/bench/data.sh"
VM=$top_srcdir/tests/vm
CACHE=${CGPOOL_VM_CACHE:-/var/cache/cgpool-vm}

N=1000
kernels=
for a in "$@"; do
	case $a in
	*[!0-9]* | '') kernels="$kernels $a" ;;
	*) N=$a ;;
	esac
done
[ -n "$kernels" ] || kernels="bullseye:v1 bullseye:v2"
[ "$N" -gt 0 ] || { echo "restart-vm: N must be at least 1" >&2; exit 99; }
[ "$(id -u)" = 0 ] || { echo "restart-vm: needs root (qemu, make install, the kernel cache)"; exit 77; }
bench_out || exit 99

# ---- the build, installed (run-vm.sh copies tests/, conf/ and bench/ to the
# guest's /src, where restart.sh finds its helpers)
DEST=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-vm-dest.XXXXXX") || exit 99
chmod 755 "$DEST"
OUT=$(mktemp "${TMPDIR:-/tmp}/restart-vm.XXXXXX") || exit 99
trap 'rm -rf "$DEST" "$OUT"' EXIT
trap 'exit 99' INT TERM HUP
if ! ${MAKE:-make} -C "$top_builddir" install DESTDIR="$DEST" > "$OUT" 2>&1; then
	cat "$OUT"
	echo "restart-vm: make install DESTDIR=... failed in $top_builddir"
	exit 99
fi
export CGPOOL_VM_DESTDIR="$DEST"
# busybox's date has no %N: the host's, for the nanosecond clock
export CGPOOL_VM_HOST_TOOLS=date
# the data printed, not plotted (no gnuplot in the guest)
export CGPOOL_VM_ENV="RESTARTS=$N BENCH_DATA_PRINT=yes BENCH_PLOT=no BENCH_OUT=/var/tmp/bench-out"
# under TCG a restart takes about 0.1 s a way (1000 a way: 240-260 s in
# all): the rest is room for a busy host
export CGPOOL_VM_TEST_TIMEOUT=$((600 + N * 1))

# accel_of: KVM or TCG, what the guest ran under (run-vm.sh's last line)
accel_of() { sed -n 's/^run-vm: .* took [0-9]* s under \(KVM\|TCG\).*/\1/p' "$OUT" | tail -n 1; }

# report SPEC LAYOUT: the bench: block of one guest, from run-vm.sh's output
report() {
	awk -v spec="$1" -v layout="$2" -v n="$N" -v mib="${CGPOOL_VM_MEM:-512}" -v acc="$(accel_of)" '
		function sgn(x) { return x ~ /^[-+]/ ? x : "+" x }
		/^VMINFO kernel / { rel = $3 }
		/^machine: / { mem = $NF; cpus = $2 }
		/median_us/ { tab = 1 }
		/^kernel memory added/ { tab = 2; fields = $0; sub(/.*: /, "", fields) }
		tab == 1 && /^usual way / { ud = $6; um = $3 }
		tab == 1 && /^cgpoolctl exec / { cd = $6; cm = $3 }
		/^ratio cgpool\/usual/ { ratio = $NF }
		/^runs counted by cgpool: / { runs = $NF }
		tab == 2 && /^usual way / { uk = $3 " " $4 " " $5 " " $6 }
		tab == 2 && /^cgpoolctl exec / { ck = $3 " " $4 " " $5 " " $6 }
		/^usual way, per dying memcg: / { pk = $6 " " $7 " " $8 " " $9 }
		/^VMINFO .*restart\.sh took / { took = $(NF - 1) }
		/^run-vm: .* took [0-9]+ s/ { for (i = 1; i < NF; i++) if ($i == "took") boot = $(i + 1) }
		END {
			if (ratio == "") exit 1
			printf "bench: %s: kernel %s, layout %s (memory on cgroup %s), N = %d restarts a way\n", spec, rel, layout, mem, n
			printf "bench:   guest: %s CPU(s), %s MiB, %s; %s s (boot and payload), restart.sh %s s\n", cpus, mib, acc, boot, took
			printf "bench:   %-40s %10s %10s\n", "", "usual", "cgpool"
			printf "bench:   %-40s %10s %10s\n", "dying memcgs added", sgn(ud), sgn(cd)
			split(fields, f, " "); split(uk, u, " "); split(ck, c, " "); split(pk, p, " ")
			for (i = 1; i <= 4; i++)
				printf "bench:   %-40s %10s %10s   usual: %s kB per dying memcg\n", "meminfo " f[i] " after - before, kB", u[i], c[i], p[i]
			printf "bench:   %-40s %10s %10s\n", "p50 per restart, us", um, cm
			printf "bench:   %-40s %10s   (runs counted by cgpool: %s)\n", "p50 ratio cgpool / usual", ratio, runs
		}' "$OUT"
}

# keep_data SPEC: the guest's data files from run-vm.sh's output, as
# $BENCH_OUT/restart-vm-SPEC.*.dat with this machine in their heads and the
# guest beside it
keep_data() {
	slug=$(basename "$1" | tr -c 'A-Za-z0-9.\n' '-')
	machine=$(bench_machine)
	awk -v dir="$BENCH_OUT" -v slug="$slug" -v machine="$machine" -v mib="${CGPOOL_VM_MEM:-512}" -v acc="$(accel_of)" '
		/^BENCHDATA-BEGIN restart\./ { f = dir "/restart-vm-" slug substr($2, 8); printf "" > f; next }
		/^BENCHDATA-END/ { if (f != "") close(f); f = ""; next }
		f == "" { next }
		/^# machine: / { n = $3; print "# machine: " machine > f
			printf "# guest: %s, %s vCPU, %s MiB\n", acc, n, mib > f; next }
		/^# label: / { print "# label: guest" > f; next }
		{ print > f }' "$OUT"
	for x in dying lat; do
		[ -s "$BENCH_OUT/restart-vm-$slug.$x.dat" ] || { echo "bench: $1: no $x data in the guest's output"; return 1; }
	done
	echo "bench:   data: $BENCH_OUT/restart-vm-$slug.dying.dat, .lat.dat"
}

# run SPEC: one guest (names of its own: vm_each_kernel's loop uses k)
run() {
	kname=${1%:v[12]}
	layout=${1#"$kname"}
	layout=${layout#:}
	spec=$kname:${layout:=v2}
	case $kname in
	stable | unstable | bullseye)
		sh "$VM/fetch-kernels.sh" "$CACHE" "$kname" > "$OUT" 2>&1 || { cat "$OUT"; return 77; }
		kernel=$CACHE/$kname
		;;
	*) kernel=$kname ;;
	esac
	CGPOOL_VM_LAYOUT=$layout sh "$VM/run-vm.sh" "$kernel" "$top_srcdir/bench/restart.sh" > "$OUT" 2>&1
	rc=$?
	[ $rc -eq 0 ] && report "$spec" "$layout" && keep_data "$spec" && return 0
	echo "bench: $spec: no figures (run-vm.sh exit $rc):"
	grep -E '^(run-vm|FAIL|ERROR|SKIP|VMERROR|VMWARN)' "$OUT" | sed 's/^/bench:   /'
	[ $rc -eq 77 ] && return 77
	return 1
}

. "$VM/results.sh"
vm_each_kernel restart-vm run $kernels
rc=$?
bench_plot dying
exit $rc
