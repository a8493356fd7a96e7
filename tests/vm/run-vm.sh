#!/bin/sh
# run-vm.sh KERNEL PAYLOAD...
#
# Boots KERNEL under qemu with an initramfs built here (under KVM when
# /dev/kvm opens and the guest comes up in time, else under TCG, software
# emulation: see accel.sh), on pure cgroup v2 (CGPOOL_VM_LAYOUT=v1: pure cgroup v1), runs each PAYLOAD (a shell script) inside and turns the
# results into an exit status: 0 when every payload exited 0 or 77 (skipped),
# 1 otherwise (the whole console log is printed then), 77 when the VM cannot
# be run here (no qemu), 99 on a hard error (bad usage, a bad CGPOOL_VM_ACCEL,
# initramfs not built).
#
# KERNEL is a directory written by fetch-kernels.sh (vmlinuz, release,
# modules.load, modules/), or a vmlinuz file: its modules are then looked up
# in CGPOOL_VM_MODULES (a directory holding lib/modules/<release>, as for
# modprobe -d), beside a .../lib/modules/<release>/vmlinuz, and in
# /lib/modules/<release> and /usr/lib/modules/<release> (release read from
# the bzImage header).
#
# The guest is busybox-static plus:
#   CGPOOL_VM_DESTDIR  a `make install DESTDIR=...` tree, copied to / with the
#                      shared libraries of every ELF file in it (ldd)
#   top_srcdir         the source tree: its tests/, conf/ and bench/ are copied to
#                      /src, and payloads under it run from there
# Inside, /init mounts cgroup2 on /sys/fs/cgroup, enables +memory +pids for
# the root's children and for /test (v1: a tmpfs there with cpuset,
# cpu,cpuacct, blkio, memory, devices, freezer, pids and name=systemd each
# on a hierarchy of its own, /test/runner in each), loads the virtio disk and ext4 modules,
# mounts a fresh ext2 disk on /var/tmp (page cache there can be reclaimed,
# unlike on tmpfs), and runs each payload in the leaf cgroup /test/runner with
#   CGPOOLD CGPOOLCTL  the installed binaries (paths inside the guest)
#   top_srcdir=/src TMPDIR=/var/tmp
#   CGPOOL_TEST_CGROUP=/test   the cgroup (no processes, controllers enabled
#                              for its children) to create test cgroups in
# and the NAME=VALUE words of CGPOOL_VM_ENV. Each payload's output is framed
# on the serial console by `VMTEST-BEGIN NAME` and `VMTEST NAME EXIT-CODE`.
#
# The payloads run under the host's dash (as /usr/local/bin/sh; busybox sh
# with CGPOOL_VM_SHELL=busybox), with busybox's applets as the other tools
# and the host programs named in CGPOOL_VM_HOST_TOOLS (default: setpriv and fincore, as
# the tests need util-linux's) in /usr/local/bin, with their libraries.
#
# Knobs: CGPOOL_VM_MEM (MiB, 512), CGPOOL_VM_DISK_MB (256),
# CGPOOL_VM_TEST_TIMEOUT (s per payload, 240), CGPOOL_VM_TIMEOUT (s for the
# whole VM; 90 + the payloads' share), CGPOOL_VM_LOG (keep the console log
# there), CGPOOL_VM_KEEP=1 (keep the work directory), CGPOOL_VM_QEMU_ARGS,
# CGPOOL_VM_ACCEL (auto, kvm or tcg), CGPOOL_VM_KVM_DEV (/dev/kvm),
# CGPOOL_VM_KVM_BOOT_TIMEOUT (s for a KVM guest's first line, 120).
set -u

me=run-vm
say() { echo "$me: $*"; }
skip() { say "SKIP: $*"; exit 77; }
hard() { say "ERROR: $*" >&2; exit 99; }

[ $# -ge 2 ] || { echo "usage: $0 KERNEL_DIR_OR_VMLINUZ PAYLOAD..." >&2; exit 99; }
KERNEL=$1
shift
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/accel.sh"
vm_accel || hard "$VM_ACCEL_ERR"
[ "$(id -u)" = 0 ] || skip "needs root (mknod, ldconfig -r, apt-get)"
# payloads and the kernel as absolute paths
for p in "$@"; do
	[ -f "$p" ] || hard "payload $p: no such file"
	set -- "$@" "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"
	shift
done
case $KERNEL in /*) ;; *) KERNEL=$PWD/$KERNEL ;; esac
# the vmlinuz of a fetch-kernels.sh directory: take the directory
[ -f "$KERNEL" ] && [ -f "$(dirname "$KERNEL")/modules.load" ] && KERNEL=$(dirname "$KERNEL")

# ---- host tools, installed from Debian's packages when missing
need=
command -v qemu-system-x86_64 > /dev/null || need="$need qemu-system-x86"
[ -x /bin/busybox ] && /bin/busybox --list 2> /dev/null | grep -qx poweroff &&
	! ldd /bin/busybox > /dev/null 2>&1 || need="$need busybox-static"
command -v cpio > /dev/null || need="$need cpio"
command -v mkfs.ext2 > /dev/null || need="$need e2fsprogs"
command -v modprobe > /dev/null || need="$need kmod"
if [ -n "$need" ]; then
	say "installing$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q $need > /dev/null 2>&1 ||
		{ apt-get update -q > /dev/null 2>&1 && apt-get install -y -q $need > /dev/null 2>&1; } ||
		skip "cannot install$need (apt-get failed)"
fi
command -v qemu-system-x86_64 > /dev/null || skip "no qemu-system-x86_64"

# ---- the kernel and its modules
if [ -d "$KERNEL" ]; then
	KDIR=$(cd "$KERNEL" && pwd)
	VMLINUZ=$KDIR/vmlinuz
	[ -f "$VMLINUZ" ] || hard "$KERNEL: no vmlinuz (not a fetch-kernels.sh directory)"
	RELEASE=$(cat "$KDIR/release" 2> /dev/null)
else
	KDIR=
	VMLINUZ=$KERNEL
	[ -f "$VMLINUZ" ] || hard "$KERNEL: no such file"
	# bzImage: the 16-bit offset at 0x20e points (from 0x200) to the version string
	off=$(od -An -t u2 -j 526 -N 2 "$VMLINUZ" | tr -d ' ')
	RELEASE=$(dd if="$VMLINUZ" bs=1 skip=$((off + 512)) count=128 2> /dev/null | tr '\0' '\n' | head -n 1 | cut -d' ' -f1)
fi
[ -n "$RELEASE" ] || hard "$KERNEL: cannot tell the kernel release"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-vm.XXXXXX") || hard "mktemp"
cleanup() {
	vm_boot_stop
	if [ -n "${CGPOOL_VM_KEEP:-}" ]; then say "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 99' INT TERM HUP
ROOT=$WORK/root
mkdir -p "$ROOT/vm/modules" "$ROOT/vm/payloads"

if [ -n "$KDIR" ]; then
	cp "$KDIR/modules.load" "$ROOT/vm/modules.load" && cp "$KDIR"/modules/* "$ROOT/vm/modules/" 2> /dev/null
	[ -s "$ROOT/vm/modules.load" ] || : > "$ROOT/vm/modules.load"
else
	# modules of a kernel given by hand: under CGPOOL_VM_MODULES, beside a
	# .../lib/modules/<release>/vmlinuz, or installed
	base=
	beside=$(cd "$(dirname "$VMLINUZ")" && pwd)
	case $beside in */lib/modules/"$RELEASE") beside=${beside%/lib/modules/*} ;; *) beside= ;; esac
	for b in "${CGPOOL_VM_MODULES:-}" "$beside" / /usr; do
		[ -n "$b" ] && [ -d "$b/lib/modules/$RELEASE/kernel" ] && { base=$b; break; }
	done
	: > "$ROOT/vm/modules.load"
	if [ -z "$base" ]; then
		say "no modules for $RELEASE found: relying on built-in virtio and ext4"
	else
		[ -f "$base/lib/modules/$RELEASE/modules.dep" ] || depmod -b "$base" "$RELEASE"
		for m in virtio_pci virtio_blk ext4; do
			modprobe -d "$base" -S "$RELEASE" --show-depends "$m" 2> /dev/null
		done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r path; do
			ko=$(basename "$path")
			ko=${ko%.xz}; ko=${ko%.zst}; ko=${ko%.gz}
			name=$(printf '%02d-%s' "$(wc -l < "$ROOT/vm/modules.load")" "$ko")
			case $path in
			*.xz) xz -dc "$path" ;;
			*.zst) zstd -qdc "$path" ;;
			*.gz) gzip -dc "$path" ;;
			*) cat "$path" ;;
			esac > "$ROOT/vm/modules/$name" || exit 1
			echo "$name" >> "$ROOT/vm/modules.load"
		done || hard "cannot unpack the modules of $RELEASE"
	fi
fi

# ---- the root filesystem
cd "$ROOT" || hard "cd $ROOT"
mkdir -p bin dev etc proc sys run tmp var/tmp src usr/lib usr/lib64
DESTDIR=${CGPOOL_VM_DESTDIR:-}
if [ -n "$DESTDIR" ]; then
	[ -d "$DESTDIR" ] || hard "CGPOOL_VM_DESTDIR=$DESTDIR: no such directory"
	(cd "$DESTDIR" && tar cf - .) | tar xf - || hard "cannot copy $DESTDIR"
	chmod 755 . # not the mode of a mktemp -d DESTDIR: / must be open to all
fi
for l in lib lib64; do [ -e "$l" ] || ln -s "usr/$l" "$l"; done
cp /bin/busybox bin/busybox || hard "no /bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "bin/$a" ] || ln -s busybox "bin/$a"
done
mknod -m 600 dev/console c 5 1 2> /dev/null
# Host programs the tests need beyond busybox (util-linux's setpriv, which
# knows --reuid, and fincore), in /usr/local/bin ahead of busybox in the guest's PATH;
# their libraries follow below. Debian's busybox-static sh runs its own
# applets before anything in PATH, so the payloads run under the host's
# dash, installed as /usr/local/bin/sh (CGPOOL_VM_SHELL=busybox: busybox sh).
mkdir -p usr/local/bin
for t in ${CGPOOL_VM_HOST_TOOLS-setpriv fincore}; do
	p=$(command -v "$t") && cp -L "$p" usr/local/bin/ || say "host tool $t not found, not in the guest"
done
GUEST_SH='sh'
if [ "${CGPOOL_VM_SHELL:-dash}" = dash ]; then
	if [ -x /bin/dash ]; then
		cp -L /bin/dash usr/local/bin/sh && GUEST_SH=/usr/local/bin/sh
	else
		say "no /bin/dash on this host: the payloads run under busybox sh"
	fi
fi
printf 'root:x:0:0:root:/root:/bin/sh\n' > etc/passwd
printf 'root:x:0:\n' > etc/group

# shared libraries of every ELF file from DESTDIR and the host tools
# (busybox is static); the DESTDIR's own libraries are found first, as they
# will be in the guest
ldpath=$(find . -name '*.so*' -type f | sed 's|/[^/]*$||; s|^\.|'"$ROOT"'|' | sort -u | tr '\n' ':')
find . -type f \( -perm -u+x -o -name '*.so*' \) | while read -r f; do
	[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	LD_LIBRARY_PATH=$ldpath ldd "$f" 2> /dev/null
done | awk '
	/not found/ { print "MISSING", $1; next }
	$2 == "=>" && $3 ~ /^\// { print $3; next }
	$1 ~ /^\// { print $1 }' | sort -u > "$WORK/libs"
missing=$(sed -n 's/^MISSING //p' "$WORK/libs" | tr '\n' ' ')
[ -z "$missing" ] || hard "shared libraries not found for the guest: $missing"
while read -r lib; do
	case $lib in "$ROOT"/*) continue ;; esac
	cp -L --parents "$lib" . || hard "cannot copy $lib"
done < "$WORK/libs"
find . -name '*.so*' \( -type f -o -type l \) | sed 's|/[^/]*$||; s|^\.||' | sort -u > etc/ld.so.conf
command -v ldconfig > /dev/null && ldconfig -r . 2> /dev/null

guest_bin() {
	p=$(find . -path "*/$1" -type f 2> /dev/null | head -n 1)
	[ -n "$p" ] && echo "${p#.}" || echo "/usr/$1"
}
CGPOOLD_G=$(guest_bin sbin/cgpoold)
CGPOOLCTL_G=$(guest_bin bin/cgpoolctl)

# the source tree's tests and example configs
SRC=${top_srcdir:-}
if [ -n "$SRC" ]; then
	SRC=$(cd "$SRC" && pwd) || hard "top_srcdir=$top_srcdir: no such directory"
	for d in tests conf bench; do
		[ -d "$SRC/$d" ] && cp -R "$SRC/$d" src/
	done
fi

# payloads: under top_srcdir they run from /src (so their helpers are found),
# others are copied to /vm/payloads/N/
: > vm/payloads.list
n=0
NAMES=
for p in "$@"; do
	ap=$p
	case ${SRC:-/nonexistent}/:$ap in
	"$SRC"/:"$SRC"/*)
		name=${ap#"$SRC"/}
		guest=/src/$name
		[ -f ".$guest" ] || { mkdir -p "$(dirname ".$guest")" && cp "$ap" ".$guest"; }
		;;
	*)
		n=$((n + 1))
		name=$(basename "$p")
		mkdir -p "vm/payloads/$n"
		guest=/vm/payloads/$n/$name
		cp "$ap" ".$guest"
		;;
	esac
	case " $NAMES " in *" $name "*) hard "payload $name given twice" ;; esac
	NAMES="$NAMES $name"
	echo "$name $guest" >> vm/payloads.list
done
NPAYLOADS=$#

TEST_TIMEOUT=${CGPOOL_VM_TEST_TIMEOUT:-240}
LAYOUT=${CGPOOL_VM_LAYOUT:-v2}
case $LAYOUT in v1 | v2) ;; *) hard "CGPOOL_VM_LAYOUT=$LAYOUT: v1 or v2" ;; esac
echo "$LAYOUT" > vm/layout
{
	echo "export CGPOOLD='$CGPOOLD_G' CGPOOLCTL='$CGPOOLCTL_G'"
	echo "export top_srcdir=/src TMPDIR=/var/tmp CGPOOL_TEST_CGROUP=/test"
	# the crash campaign's rounds in a (slow, emulated) VM
	echo "export CGPOOL_CRASH_ROUNDS=${CGPOOL_VM_CRASH_ROUNDS:-5}"
	echo "VM_TEST_TIMEOUT=$TEST_TIMEOUT"
	echo "VM_SHELL=$GUEST_SH"
	for w in ${CGPOOL_VM_ENV:-}; do
		case $w in
		[A-Za-z_]*=*) printf "export %s='%s'\n" "${w%%=*}" "${w#*=}" ;;
		*) hard "CGPOOL_VM_ENV: '$w' is not NAME=VALUE" ;;
		esac
	done
} > vm/env
cp "$HERE/vm-init.sh" init || hard "no vm-init.sh next to $0"
chmod 755 init

(find . | cpio -o -H newc --quiet | gzip -1) > "$WORK/initrd.gz" || hard "cpio failed"
cd "$WORK" || hard "cd $WORK"
rm -rf "$ROOT"
# the disk for /var/tmp, made afresh for each boot (a KVM guest that did
# not come up may have written to it)
fresh_disk() {
	rm -f "$WORK/disk.img"
	truncate -s "${CGPOOL_VM_DISK_MB:-256}M" "$WORK/disk.img" &&
		mkfs.ext2 -q -F "$WORK/disk.img" > /dev/null 2>&1 || hard "mkfs.ext2 failed"
}

# ---- boot
VM_TIMEOUT=${CGPOOL_VM_TIMEOUT:-$((90 + NPAYLOADS * TEST_TIMEOUT))}
LOG=$WORK/console.log
say "booting $RELEASE ($LAYOUT) with$( [ -n "$DESTDIR" ] || echo "out") the daemon, payloads:$NAMES (timeout ${VM_TIMEOUT}s) under $VM_ACCEL_NAME ($VM_ACCEL_WHY)"
vm_boot "$LOG" "$VM_TIMEOUT" fresh_disk -m "${CGPOOL_VM_MEM:-512}" \
	-nographic -no-reboot -monitor none -serial stdio \
	-kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1" \
	-drive "file=$WORK/disk.img,format=raw,if=virtio" \
	${CGPOOL_VM_QEMU_ARGS:-}
[ -n "${CGPOOL_VM_LOG:-}" ] && cp "$LOG" "$CGPOOL_VM_LOG"

# ---- results
. "$HERE/results.sh"
vm_results "$LOG" "$qrc"
say "$RELEASE ($LAYOUT): boot and payloads took $VM_TOOK s $VM_ACCEL_USED (qemu exit $qrc)$summary"
exit $status
