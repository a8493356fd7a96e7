#!/bin/sh
# run-systemd-vm.sh KERNEL_DIR PAYLOAD...
#
# Boots KERNEL_DIR's kernel under qemu (under KVM when /dev/kvm opens and
# the guest comes up in time, else under TCG, software emulation: see
# ../vm/accel.sh) with systemd as PID 1 on pure cgroup v2, installs this
# build into the guest, runs each PAYLOAD (a shell script) there once the
# system is up, and turns the results into an exit status as
# tests/vm/run-vm.sh does: 0 when every payload exited 0 or 77 (skipped), 1
# otherwise (the whole console log is printed then), 77 when the VM cannot
# be had here (no qemu, no root image), 99 on a hard error (bad usage, a bad
# CGPOOL_VM_ACCEL, the build or the initramfs not made).
#
# KERNEL_DIR is a directory written by tests/vm/fetch-kernels.sh (vmlinuz,
# release, modules.load, modules/), or `stable` / `unstable` / `trixie`:
# fetched into ${CGPOOL_VM_CACHE:-/var/cache/cgpool-vm} by fetch-kernels.sh.
# The root image is of the machine's own Debian release, or of
# CGPOOL_VM_RELEASE (a codename: trixie, sid) when set.
#
# The guest:
#   /dev/vda  the Debian root image of rootfs.sh (cached), through a qcow2
#             copy-on-write overlay, so the cached image is never written
#   /dev/vdb  the run's files: the build's `make install DESTDIR=` tree, the
#             source tree's tests/, conf/ and units/ (as /src), the payloads
#             and the runner, copied into the root by the initramfs
#   initrd    busybox, the virtio/ext4 modules and initrd-init.sh, which
#             switch_roots to /lib/systemd/systemd
# The build: CGPOOL_VM_DEBS when set (a directory of the .debs of
# tests/pkg/build-debs.sh: the guest installs them with dpkg before the
# payloads, as an admin would, -dev and debug packages left out); else
# CGPOOL_VM_DESTDIR when set (a `make install DESTDIR=` tree made
# with --prefix=/usr --sysconfdir=/etc --localstatedir=/var); else this
# script makes one: `make distdir` of the configured tree in top_builddir
# (default: the current directory), configured there with those options in
# a separate build directory, `make`, `make install DESTDIR=`.
#
# In the guest cgpool-vmtest.service (after multi-user.target) runs
# vm-runner.sh: each payload under /bin/sh in a leaf cgroup with
#   CGPOOLD=/usr/sbin/cgpoold CGPOOLCTL=/usr/bin/cgpoolctl
#   top_srcdir=/src TMPDIR=/var/tmp CGPOOL_TEST_CGROUP=<a delegated cgroup>
# and the NAME=VALUE words of CGPOOL_VM_ENV, output framed on the serial
# console by `VMTEST-BEGIN NAME` and `VMTEST NAME EXIT-CODE`; then the VM
# powers off.
#
# Knobs: CGPOOL_VM_MEM (MiB, 1024), CGPOOL_VM_CPUS (2), CGPOOL_VM_TEST_TIMEOUT (s per payload,
# 600: the Slurm payload takes 250-400 s), CGPOOL_VM_TIMEOUT (s for the whole VM; 120 + the payloads' share),
# CGPOOL_VM_LOG (keep the console log there), CGPOOL_VM_KEEP=1 (keep the work
# directory), CGPOOL_VM_QEMU_ARGS, CGPOOL_VM_APPEND (more kernel arguments),
# CGPOOL_ROOTFS_CACHE (rootfs.sh's cache directory), CGPOOL_VM_ACCEL (auto,
# kvm or tcg), CGPOOL_VM_KVM_DEV (/dev/kvm), CGPOOL_VM_KVM_BOOT_TIMEOUT (s for
# a KVM guest's first line, 120: vm-runner.sh's, after multi-user.target).
set -u

me=run-systemd-vm
say() { echo "$me: $*"; }
skip() { say "SKIP: $*"; exit 77; }
hard() { say "ERROR: $*" >&2; exit 99; }

[ $# -ge 2 ] || { echo "usage: $0 KERNEL_DIR PAYLOAD..." >&2; exit 99; }
KERNEL=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
VMDIR=$HERE/../vm
. "$VMDIR/accel.sh"
vm_accel || hard "$VM_ACCEL_ERR"
[ "$(id -u)" = 0 ] || skip "needs root (apt-get, debootstrap, the caches)"
top_srcdir=$(cd "${top_srcdir:-$HERE/../..}" && pwd)
for p in "$@"; do
	[ -f "$p" ] || hard "payload $p: no such file"
	set -- "$@" "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"
	shift
done
T_START=$(date +%s)

# ---- host tools, installed from Debian's packages when missing
need=
command -v qemu-system-x86_64 > /dev/null || need="$need qemu-system-x86"
command -v qemu-img > /dev/null || need="$need qemu-utils"
[ -x /bin/busybox ] && /bin/busybox --list 2> /dev/null | grep -qx switch_root &&
	! ldd /bin/busybox > /dev/null 2>&1 || need="$need busybox-static"
command -v cpio > /dev/null || need="$need cpio"
command -v mkfs.ext4 > /dev/null || need="$need e2fsprogs"
command -v readelf > /dev/null || need="$need binutils"
if [ -n "$need" ]; then
	say "installing$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q $need > /dev/null 2>&1 ||
		{ apt-get update -q > /dev/null 2>&1 && apt-get install -y -q $need > /dev/null 2>&1; } ||
		skip "cannot install$need (apt-get failed)"
fi
command -v qemu-system-x86_64 > /dev/null || skip "no qemu-system-x86_64"

# ---- the kernel
case $KERNEL in
stable | unstable | trixie)
	CACHE=${CGPOOL_VM_CACHE:-/var/cache/cgpool-vm}
	sh "$VMDIR/fetch-kernels.sh" "$CACHE" "$KERNEL" > /dev/null || skip "no $KERNEL kernel"
	KERNEL=$CACHE/$KERNEL
	;;
esac
[ -f "$KERNEL/vmlinuz" ] && [ -f "$KERNEL/modules.load" ] ||
	hard "$KERNEL: not a kernel directory of fetch-kernels.sh (vmlinuz, modules.load)"
KDIR=$(cd "$KERNEL" && pwd)
RELEASE=$(cat "$KDIR/release" 2> /dev/null)

# ---- the root image
IMAGE=$(sh "$HERE/rootfs.sh" ${CGPOOL_VM_RELEASE:+--release "$CGPOOL_VM_RELEASE"} \
	${CGPOOL_ROOTFS_CACHE:+"$CGPOOL_ROOTFS_CACHE"}) || skip "no ${CGPOOL_VM_RELEASE:-} root image (rootfs.sh)"
IMAGE_DIR=$(dirname "$IMAGE")
T_IMAGE=$(date +%s)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-svm.XXXXXX") || hard "mktemp"
cleanup() {
	vm_boot_stop
	if [ -n "${CGPOOL_VM_KEEP:-}" ]; then say "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 99' INT TERM HUP
P=$WORK/payload
mkdir -p "$P/root" "$P/src" "$P/vm"

# ---- the build, installed into P/root
build() {
	bd=${top_builddir:-$PWD}
	[ -f "$bd/config.status" ] || { say "no configured tree in $bd (set top_builddir or CGPOOL_VM_DESTDIR)"; return 1; }
	${MAKE:-make} -C "$bd" distdir distdir="$WORK/dist" > "$WORK/build.log" 2>&1 || return 1
	# EXTRA_DIST names whole directories (bench): objects and programs
	# built in place come along and would stand in for the build's own
	find "$WORK/dist" -type f \( -name '*.o' -o -name '*.lo' -o -perm -u+x \) | while read -r f; do
		[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || [ "${f%.o}" != "$f" ] && rm -f "$f"
	done
	mkdir -p "$WORK/build" && cd "$WORK/build" &&
		"$WORK/dist/configure" -q --prefix=/usr --sysconfdir=/etc --localstatedir=/var >> "$WORK/build.log" 2>&1 &&
		${MAKE:-make} -j"$(nproc)" >> "$WORK/build.log" 2>&1 &&
		${MAKE:-make} install DESTDIR="$P/root" >> "$WORK/build.log" 2>&1
}
if [ -n "${CGPOOL_VM_DEBS:-}" ]; then
	mkdir -p "$P/vm/debs"
	for deb in "$CGPOOL_VM_DEBS"/*.deb; do
		case ${deb##*/} in *-dev_* | *-dbgsym_*) continue ;; esac
		cp "$deb" "$P/vm/debs/" || hard "cannot copy $deb"
	done
	[ -n "$(ls "$P/vm/debs")" ] || hard "CGPOOL_VM_DEBS=$CGPOOL_VM_DEBS: no .deb there"
elif [ -n "${CGPOOL_VM_DESTDIR:-}" ]; then
	[ -d "$CGPOOL_VM_DESTDIR" ] || hard "CGPOOL_VM_DESTDIR=$CGPOOL_VM_DESTDIR: no such directory"
	(cd "$CGPOOL_VM_DESTDIR" && tar cf - .) | (cd "$P/root" && tar xf -) || hard "cannot copy $CGPOOL_VM_DESTDIR"
elif ! (build); then
	tail -n 40 "$WORK/build.log"
	hard "cannot build and install the tree (--prefix=/usr) in $WORK/build"
fi
chmod 755 "$P/root"
# the image has a merged /usr (/lib -> usr/lib): what make install put in
# /lib (the systemd units) goes below /usr, so the copy keeps the symlink
for d in lib lib64 bin sbin; do
	[ -d "$P/root/$d" ] && [ ! -L "$P/root/$d" ] || continue
	mkdir -p "$P/root/usr/$d" && cp -a "$P/root/$d/." "$P/root/usr/$d/" && rm -rf "${P:?}/root/$d" ||
		hard "cannot move /$d of the install tree below /usr"
done
[ -n "${CGPOOL_VM_DEBS:-}" ] || [ -x "$P/root/usr/sbin/cgpoold" ] ||
	hard "the installed tree has no /usr/sbin/cgpoold (not --prefix=/usr?)"
T_BUILD=$(date +%s)

# every library the installed ELF files need is in the image or the tree
find "$P/root" -type f \( -perm -u+x -o -name '*.so*' \) | while read -r f; do
	readelf -d "$f" 2> /dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u > "$WORK/needed"
find "$P/root" -name '*.so*' -printf '%f\n' | sort -u | cat - "$IMAGE_DIR/libs" | sort -u > "$WORK/have"
missing=$(comm -23 "$WORK/needed" "$WORK/have" | tr '\n' ' ')
[ -z "$missing" ] || hard "libraries not in the root image (add their packages to rootfs.sh): $missing"

# ---- the source tree's tests and the payloads
for d in tests conf units; do
	[ -d "$top_srcdir/$d" ] && cp -R "$top_srcdir/$d" "$P/src/"
done
: > "$P/vm/payloads.list"
n=0
NAMES=
for p in "$@"; do
	case $p in
	"$top_srcdir"/*)
		name=${p#"$top_srcdir"/}
		guest=/src/$name
		[ -f "$P$guest" ] || { mkdir -p "$(dirname "$P$guest")" && cp "$p" "$P$guest"; }
		;;
	*)
		n=$((n + 1))
		name=$(basename "$p")
		mkdir -p "$P/vm/payloads/$n"
		guest=/vm/payloads/$n/$name
		cp "$p" "$P$guest"
		;;
	esac
	case " $NAMES " in *" $name "*) hard "payload $name given twice" ;; esac
	NAMES="$NAMES $name"
	echo "$name $guest" >> "$P/vm/payloads.list"
done
TEST_TIMEOUT=${CGPOOL_VM_TEST_TIMEOUT:-600}
{
	echo "export CGPOOLD=/usr/sbin/cgpoold CGPOOLCTL=/usr/bin/cgpoolctl"
	echo "export top_srcdir=/src TMPDIR=/var/tmp"
	echo "VM_TEST_TIMEOUT=$TEST_TIMEOUT"
	for w in ${CGPOOL_VM_ENV:-}; do
		case $w in
		[A-Za-z_]*=*) printf "export %s='%s'\n" "${w%%=*}" "${w#*=}" ;;
		*) hard "CGPOOL_VM_ENV: '$w' is not NAME=VALUE" ;;
		esac
	done
} > "$P/vm/env"
cp "$HERE/vm-runner.sh" "$HERE/cgpool-vmtest.service" "$P/vm/" || hard "no vm-runner.sh next to $0"
mb=$(du -sm "$P" | cut -f1)
truncate -s "$((mb * 5 / 4 + 16))M" "$WORK/payload.img" &&
	mkfs.ext4 -q -F -d "$P" "$WORK/payload.img" > "$WORK/mkfs.log" 2>&1 ||
	{ cat "$WORK/mkfs.log"; hard "mkfs.ext4 -d of the payload disk failed"; }

# ---- the initramfs: busybox, the modules, initrd-init.sh
I=$WORK/initrd
mkdir -p "$I/bin" "$I/dev" "$I/proc" "$I/sys" "$I/modules"
cp /bin/busybox "$I/bin/busybox" || hard "no /bin/busybox"
for a in $(/bin/busybox --list); do [ -e "$I/bin/$a" ] || ln -s busybox "$I/bin/$a"; done
mknod -m 600 "$I/dev/console" c 5 1 2> /dev/null
cp "$KDIR/modules.load" "$I/modules.load" && { cp "$KDIR"/modules/* "$I/modules/" 2> /dev/null || :; }
cp "$HERE/initrd-init.sh" "$I/init" && chmod 755 "$I/init" || hard "no initrd-init.sh next to $0"
(cd "$I" && find . | cpio -o -H newc --quiet | gzip -1) > "$WORK/initrd.gz" || hard "cpio failed"

# ---- the root image through an overlay, made afresh for each boot (a KVM
# guest that did not come up may have written to it), and boot
fresh_overlay() {
	rm -f "$WORK/root.qcow2"
	qemu-img create -q -f qcow2 -F raw -b "$IMAGE" "$WORK/root.qcow2" || hard "qemu-img create of the overlay failed"
}
VM_TIMEOUT=${CGPOOL_VM_TIMEOUT:-$((120 + $# * TEST_TIMEOUT))}
LOG=$WORK/console.log
say "booting $RELEASE with systemd (${CGPOOL_VM_RELEASE:-the machine's release}), payloads:$NAMES (timeout ${VM_TIMEOUT}s) under $VM_ACCEL_NAME ($VM_ACCEL_WHY)"
vm_boot "$LOG" "$VM_TIMEOUT" fresh_overlay -m "${CGPOOL_VM_MEM:-1024}" -smp "${CGPOOL_VM_CPUS:-2}" \
	-nodefaults -nographic -no-reboot -monitor none -serial stdio -nic none \
	-kernel "$KDIR/vmlinuz" -initrd "$WORK/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1 systemd.unified_cgroup_hierarchy=1 systemd.show_status=false ${CGPOOL_VM_APPEND:-}" \
	-drive "file=$WORK/root.qcow2,format=qcow2,if=virtio" \
	-drive "file=$WORK/payload.img,format=raw,if=virtio,readonly=on" \
	${CGPOOL_VM_QEMU_ARGS:-}
[ -n "${CGPOOL_VM_LOG:-}" ] && cp "$LOG" "$CGPOOL_VM_LOG"

# ---- results
. "$HERE/../vm/results.sh"
vm_results "$LOG" "$qrc"
say "$RELEASE: image $((T_IMAGE - T_START)) s, build $((T_BUILD - T_IMAGE)) s, boot and payloads $VM_TOOK s $VM_ACCEL_USED, total $(($(date +%s) - T_START)) s (qemu exit $qrc)$summary"
exit $status
