#!/bin/sh
# bench/slurm-vm.sh [KERNEL [N]] - bench/vm-slurm.sh in a systemd guest
# (tests/systemd/run-systemd-vm.sh; KERNEL stable = Debian 12's 6.1,
# unstable = sid's 7.x, the default): N (50) short Slurm jobs a way, Slurm
# making no cgroups, Slurm's task/cgroup, and cgpool's conf/slurm/v2, with
# their p50/p90 submit-to-end and the ratio to no cgroups. The guest is
# emulated (TCG): compare the ratios, not the milliseconds. Run from a built
# checkout as root.
#   sh bench/slurm-vm.sh unstable 100
KERNEL=${1:-unstable}
N=${2:-50}
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$top_srcdir" || exit 99
LOG=$(mktemp /tmp/slurm-vm.XXXXXX)
CGPOOL_VM_ENV="SLURM_VM_BENCH_JOBS=$N" CGPOOL_VM_TEST_TIMEOUT=$((300 + N * 12)) CGPOOL_VM_LOG=$LOG \
	sh "$top_srcdir/tests/systemd/run-systemd-vm.sh" "$KERNEL" "$top_srcdir/bench/vm-slurm.sh" > /dev/null
rc=$?
sed -n 's/^bench: //p' "$LOG"
grep '^FAIL' "$LOG"
rm -f "$LOG"
exit $rc
