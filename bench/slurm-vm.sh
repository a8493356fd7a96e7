#!/bin/sh
# bench/slurm-vm.sh [RELEASE [N]] - bench/vm-slurm.sh in the systemd guest
# of a Debian release (tests/systemd/run-systemd-vm.sh), with that
# release's kernel, systemd and Slurm: bookworm (Debian 12: 6.1, Slurm
# 22.05), trixie (Debian 13: 6.12, Slurm 24.11) or sid (unstable: 7.x,
# Slurm 26.05; the default). cgpool's packages are built for that release
# (tests/pkg/build-debs.sh, CGPOOL_DEB_RELEASE; cached by content) and
# installed in the guest. N (50) short Slurm jobs a way: Slurm making no
# cgroups, Slurm's task/cgroup, and cgpool's conf/slurm/v2, with their
# p50/p90 submit-to-end, the ratio to no cgroups and the dying memcgs each
# way added. The guest is emulated where the machine has no KVM: compare
# the ratios, not the milliseconds. Run from a checkout as root.
#   sh bench/slurm-vm.sh trixie 100
REL=${1:-sid}
N=${2:-50}
case $REL in
bookworm) KERNEL=stable VMREL= ;;
trixie) KERNEL=trixie VMREL=trixie ;;
sid) KERNEL=unstable VMREL=sid ;;
*) echo "usage: $0 [bookworm|trixie|sid [N]]" >&2; exit 99 ;;
esac
case $N in '' | *[!0-9]*) echo "usage: $0 [bookworm|trixie|sid [N]]" >&2; exit 99 ;; esac
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
cd "$top_srcdir" || exit 99
W=$(mktemp -d "${TMPDIR:-/tmp}/slurm-vm.XXXXXX") || exit 99
trap 'rm -rf "$W"' EXIT
if ! CGPOOL_DEB_RELEASE=$VMREL sh "$top_srcdir/tests/pkg/build-debs.sh" "$W/debs" > "$W/debs.log" 2>&1; then
	tail -n 30 "$W/debs.log"
	echo "bench: the packages for $REL did not build" >&2
	exit 99
fi
CGPOOL_VM_RELEASE=$VMREL CGPOOL_VM_DEBS=$W/debs CGPOOL_VM_ENV="SLURM_VM_BENCH_JOBS=$N" \
	CGPOOL_VM_TEST_TIMEOUT=$((300 + N * 12)) CGPOOL_VM_LOG=$W/log \
	sh "$top_srcdir/tests/systemd/run-systemd-vm.sh" "$KERNEL" "$top_srcdir/bench/vm-slurm.sh" > "$W/run.out"
rc=$?
sed -n 's/^bench: //p' "$W/log"
# what the guest ran under (the runner's last line: under KVM, under TCG)
sed -n 's/.* boot and payloads [0-9]* s \(under [A-Z]*\).*/guest \1/p' "$W/run.out" | tail -n 1
grep '^FAIL' "$W/log"
exit $rc
