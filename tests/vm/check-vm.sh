#!/bin/sh
# check-vm.sh [KERNEL...] - the integration tests on real kernels in VMs.
#
# For make check (TESTS) and `make check-vm KERNEL=...`. Installs the build
# into a temporary DESTDIR and boots each kernel under qemu with run-vm.sh,
# running smoke.sh (the harness's self-test) and the integration tests in
# the guest.
#
# Kernels: the arguments, else $CGPOOL_VM_KERNEL, else
# `bullseye:v1 bullseye:v2 stable unstable`, each KERNEL[:LAYOUT] with
# LAYOUT v2 (pure cgroup v2, the default) or v1 (pure cgroup v1).
# `stable`, `unstable` and `bullseye` are fetched by fetch-kernels.sh into
# ${CGPOOL_VM_CACHE:-/var/cache/cgpool-vm} (network only on the first run);
# anything else is a vmlinuz file or a kernel directory as fetch-kernels.sh
# writes them.
# Tests: $INTEG_TESTS (paths relative to top_srcdir, as in Makefile.am), else
# every tests/integ/*.sh that starts with #! (lib.sh and ids.sh are helpers).
# The kernels are fetched first, one at a time, then booted two at a time
# where the machine has two cores or more (each guest is one emulated CPU),
# CGPOOL_VM_JOBS=1 one at a time; each kernel's output is printed whole.
# CGPOOL_VM=no skips it all; run-vm.sh lists the other knobs.
# Exit: 1 when a test failed on some kernel, else 77 when some kernel could
# not be run (reason printed), else 0.
set -u

say() { echo "check-vm: $*"; }
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "${top_srcdir:-$here/../..}" && pwd)
top_builddir=$(cd "${top_builddir:-.}" && pwd)
export top_srcdir
CACHE=${CGPOOL_VM_CACHE:-/var/cache/cgpool-vm}

[ "${CGPOOL_VM:-yes}" != no ] || { say "SKIP: CGPOOL_VM=no"; exit 77; }
[ "$(id -u)" = 0 ] || { say "SKIP: needs root (qemu, apt-get, the kernel cache)"; exit 77; }
[ $# -gt 0 ] || set -- ${CGPOOL_VM_KERNEL:-bullseye:v1 bullseye:v2 stable unstable}

# ---- the build, installed
[ -f "$top_builddir/Makefile" ] || { say "ERROR: no Makefile in $top_builddir (set top_builddir)"; exit 99; }
DEST=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-vm-dest.XXXXXX") || exit 99
chmod 755 "$DEST"
trap 'rm -rf "$DEST"' EXIT
trap 'exit 99' INT TERM HUP
if ! ${MAKE:-make} -C "$top_builddir" install DESTDIR="$DEST" > "$DEST.log" 2>&1; then
	cat "$DEST.log"
	rm -f "$DEST.log"
	say "ERROR: make install DESTDIR=... failed in $top_builddir"
	exit 99
fi
rm -f "$DEST.log"
export CGPOOL_VM_DESTDIR="$DEST"

# ---- the payloads
payloads=$here/smoke.sh
if [ -n "${INTEG_TESTS:-}" ]; then
	for t in $INTEG_TESTS; do payloads="$payloads $top_srcdir/$t"; done
else
	for t in "$top_srcdir"/tests/integ/*.sh; do
		[ "$(head -c 2 "$t")" = '#!' ] && payloads="$payloads $t"
	done
fi

# ---- each kernel
. "$here/results.sh"
run_kernel() {
	kname=${1%:v[12]}
	layout=${1#"$kname"}
	layout=${layout#:}
	case $kname in
	stable | unstable | bullseye)
		sh "$here/fetch-kernels.sh" "$CACHE" "$kname" || return 77
		kernel=$CACHE/$kname
		;;
	*) kernel=$kname ;;
	esac
	CGPOOL_VM_LAYOUT=${layout:-v2} sh "$here/run-vm.sh" "$kernel" $payloads
}
# the kernels fetched first, one at a time (one cache), then the guests two
# at a time where the machine has two cores or more (CGPOOL_VM_JOBS)
for k in "$@"; do
	case ${k%:v[12]} in
	stable | unstable | bullseye) sh "$here/fetch-kernels.sh" "$CACHE" "${k%:v[12]}" > /dev/null 2>&1 ;;
	esac
done
jobs=${CGPOOL_VM_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -gt 2 ] && jobs=2
vm_each_kernel_by "$jobs" check-vm run_kernel "$@"
