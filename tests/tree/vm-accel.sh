#!/bin/sh
# vm-accel.sh - the VM runners' choice of accelerator (tests/vm/accel.sh),
# with a made-up qemu-system-x86_64 first in PATH and a made-up KVM device
# (CGPOOL_VM_KVM_DEV: a file here). The fake qemu records its arguments;
# under `-accel kvm` it hangs without a line of the guest (FAKE_KVM=hang,
# after writing DIRTY into its disk), comes up (FAKE_KVM=up) or exits at
# once with qemu's KVM error (FAKE_KVM=fail); under `-accel tcg` it comes
# up, prints a result for each of FAKE_PAYLOADS, and says VMERROR when its
# disk holds the KVM attempt's DIRTY. Checked: auto without a usable device
# takes TCG and does not create the device; auto with one takes KVM, kills
# a guest that is not up after CGPOOL_VM_KVM_BOOT_TIMEOUT (its processes
# gone) or whose qemu exits at once, and boots it again under TCG from a
# fresh disk; a KVM guest that comes up is kept past that timeout; tcg
# never tries KVM; kvm does not fall back; bad values are refused, by both
# runners with exit 99. Then run-vm.sh whole (as root, with busybox-static,
# cpio and e2fsprogs there; else that part is skipped) through the fallback.
set -u
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
ACCEL=$top/tests/vm/accel.sh
[ -f "$ACCEL" ] || { echo "ERROR: vm-accel.sh: no $ACCEL" >&2; exit 99; }
command -v timeout > /dev/null || { echo "SKIP: vm-accel.sh: no timeout (coreutils)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-vm-accel.XXXXXX") || exit 99
trap 'rm -rf "$T"' EXIT
trap 'exit 99' INT TERM HUP
fails=0
check() { d=$1; shift; if "$@"; then echo "ok: $d"; else echo "FAIL: $d"; fails=$((fails + 1)); fi; }

# ---- the fake qemu and device
mkdir -p "$T/bin" "$T/fake"
cat > "$T/bin/qemu-system-x86_64" << 'EOF'
#!/bin/sh
echo "$*" >> "$FAKE_DIR/calls"
accel= disk= prev=
for a; do
	[ "$prev" = -accel ] && accel=$a
	case $a in file=*) disk=${a#file=} disk=${disk%%,*} ;; esac
	prev=$a
done
mode=up
[ "$accel" = kvm ] && mode=${FAKE_KVM:-hang}
case $mode in
hang)
	echo $$ > "$FAKE_DIR/kvm.pid"
	[ -n "$disk" ] && printf DIRTY | dd of="$disk" bs=1 seek=6291456 conv=notrunc 2> /dev/null
	printf '\033c firmware noise, no line of the guest\r\n'
	sleep 60 &
	echo $! > "$FAKE_DIR/kvm-sleep.pid"
	wait
	;;
fail)
	echo "Could not access KVM kernel module: No such file or directory" >&2
	echo "qemu-system-x86_64: -accel kvm: failed to initialize kvm: No such file or directory" >&2
	exit 1
	;;
up)
	printf '\r\nVMINFO kernel fake (%s)\r\n' "$accel"
	[ -n "$disk" ] && [ "$(dd if="$disk" bs=1 skip=6291456 count=5 2> /dev/null)" = DIRTY ] &&
		printf 'VMERROR the disk holds what the KVM attempt wrote\r\n'
	sleep "${FAKE_UP_SLEEP:-0}"
	for n in ${FAKE_PAYLOADS:-}; do printf 'VMTEST-BEGIN %s\r\nVMTEST %s 0\r\n' "$n" "$n"; done
	printf 'VMDONE\r\n'
	;;
esac
EOF
chmod 755 "$T/bin/qemu-system-x86_64"
: > "$T/kvm"
export FAKE_DIR="$T/fake"
PATH=$T/bin:$PATH
export PATH
unset CGPOOL_VM_ACCEL CGPOOL_VM_KVM_DEV CGPOOL_VM_KVM_BOOT_TIMEOUT FAKE_KVM FAKE_UP_SLEEP FAKE_PAYLOADS

# ---- accel.sh's functions
# boot NAME [VAR=VALUE...]: vm_accel and vm_boot in a shell of their own,
# with the VAR=VALUEs in its environment; what they set and say in
# $T/NAME.out, the console in $T/NAME.log, qemu's calls in $T/NAME.calls,
# PREPARE's runs in $T/NAME.prep, the seconds taken in $T/NAME.s
boot() {
	n=$1
	shift
	rm -f "$FAKE_DIR"/*
	t0=$(date +%s)
	env "$@" sh -c '
		. "$1"
		n=$2
		say() { echo "say: $*"; }
		prepare() { echo x >> "$n.prep"; rm -f "$n.disk"; truncate -s 8M "$n.disk"; }
		vm_accel || { echo "error: $VM_ACCEL_ERR"; exit 99; }
		echo "accel: $VM_ACCEL ($VM_ACCEL_WHY)"
		vm_boot "$n.log" 30 prepare -m 64 -drive "file=$n.disk,format=raw,if=virtio"
		echo "qrc: $qrc"
		echo "used: $VM_ACCEL_USED"
		echo "took: $VM_TOOK"
	' sh "$ACCEL" "$T/$n" > "$T/$n.out" 2>&1
	echo $? > "$T/$n.rc"
	echo $(($(date +%s) - t0)) > "$T/$n.s"
	cp "$FAKE_DIR/calls" "$T/$n.calls" 2> /dev/null || : > "$T/$n.calls"
}
has() { grep -q -- "$2" "$T/$1.out"; }
calls() { grep -c -- "-accel $2" "$T/$1.calls"; }
# gone PIDFILE: the process is no more, or a zombie (an orphan waits for
# PID 1 to reap it)
gone() {
	[ -s "$FAKE_DIR/$1" ] || return 1
	p=$(cat "$FAKE_DIR/$1")
	kill -0 "$p" 2> /dev/null || return 0
	[ "$(sed 's/.*) //' "/proc/$p/stat" 2> /dev/null | cut -c1)" = Z ]
}
cnt() { [ "$(wc -l < "$T/$1")" -eq "$2" ]; }
secs() { s=$(cat "$T/$1.s"); test "$s" "$2" "$3"; }

# (a) auto, no usable device: TCG
boot nodev CGPOOL_VM_KVM_DEV="$T/no-such-kvm"
check "auto without the device: TCG" has nodev "accel: tcg (no $T/no-such-kvm)"
check "... qemu run once, under -accel tcg" test "$(calls nodev tcg)/$(calls nodev kvm)" = 1/0
check "... the guest ran: $(sed -n 's/^used: //p' "$T/nodev.out")" has nodev "used: under TCG$"
check "... the device was not created by the check" test ! -e "$T/no-such-kvm"
mkdir "$T/kvmdir"
boot dirdev CGPOOL_VM_KVM_DEV="$T/kvmdir"
check "auto with a device that does not open read-write: TCG" has dirdev "accel: tcg ($T/kvmdir cannot be opened read-write)"
check "... qemu run once, under -accel tcg" test "$(calls dirdev tcg)/$(calls dirdev kvm)" = 1/0

# (b) auto, a usable device, a KVM guest that never comes up
boot hang CGPOOL_VM_KVM_DEV="$T/kvm" CGPOOL_VM_KVM_BOOT_TIMEOUT=2 FAKE_KVM=hang FAKE_UP_SLEEP=0
check "auto with a usable device: KVM" has hang "accel: kvm ($T/kvm opens"
check "... under -accel kvm -cpu host first" sh -c 'head -n 1 "$1" | grep -q -- "^-accel kvm -cpu host "' sh "$T/hang.calls"
check "... then again under -accel tcg" test "$(calls hang kvm)/$(calls hang tcg)" = 1/1
check "... saying why" has hang "say: KVM guest did not come up in 2 s: booting again under TCG"
check "... after the boot timeout, not the guest's 60 s ($(cat "$T/hang.s") s)" secs hang -lt 20
check "... and not before it" secs hang -ge 2
check "... the hung qemu is gone" gone kvm.pid
check "... and its child" gone kvm-sleep.pid
check "... the disks made afresh for the TCG boot" cnt hang.prep 2
check "... which did not see the KVM attempt's disk" test -z "$(grep VMERROR "$T/hang.log")"
check "... the TCG guest's console in LOG, the KVM attempt's in LOG.kvm" sh -c 'grep -q "VMINFO kernel fake (tcg)" "$1.log" && grep -q "firmware noise" "$1.log.kvm"' sh "$T/hang"
check "... named in the end: $(sed -n 's/^used: //p' "$T/hang.out")" has hang "used: under TCG after KVM did not come up in 2 s$"
check "... qemu exit 0" has hang "qrc: 0"

# (b) a qemu that exits at once with its KVM error
boot fail CGPOOL_VM_KVM_DEV="$T/kvm" CGPOOL_VM_KVM_BOOT_TIMEOUT=30 FAKE_KVM=fail
check "qemu failing under KVM: booted again under TCG" test "$(calls fail kvm)/$(calls fail tcg)" = 1/1
check "... at once, not after the boot timeout ($(cat "$T/fail.s") s)" secs fail -lt 10
check "... saying qemu's error" has fail "say: KVM guest did not come up: qemu exited with 1 after [0-9]* s, saying: qemu-system-x86_64: -accel kvm: failed to initialize kvm.*: booting again under TCG"
check "... named in the end" has fail "used: under TCG after KVM did not come up (qemu exited with 1)$"

# (c) a KVM guest that comes up is kept, past the boot timeout
boot up CGPOOL_VM_KVM_DEV="$T/kvm" CGPOOL_VM_KVM_BOOT_TIMEOUT=1 FAKE_KVM=up FAKE_UP_SLEEP=3
check "a KVM guest that comes up: one qemu, under KVM" test "$(calls up kvm)/$(calls up tcg)" = 1/0
check "... run to its end past the boot timeout" sh -c 'grep -q VMDONE "$1"' sh "$T/up.log"
check "... no fallback said" test -z "$(grep 'say:' "$T/up.out")"
check "... named in the end" has up "used: under KVM$"
check "... qemu exit 0" has up "qrc: 0"

# (d) tcg never tries KVM; kvm does not fall back; bad values refused
boot tcg CGPOOL_VM_ACCEL=tcg CGPOOL_VM_KVM_DEV="$T/kvm" FAKE_KVM=up
check "CGPOOL_VM_ACCEL=tcg with a usable device: TCG only" test "$(calls tcg tcg)/$(calls tcg kvm)" = 1/0
check "... named in the end" has tcg "used: under TCG$"
boot kvmonly CGPOOL_VM_ACCEL=kvm CGPOOL_VM_KVM_DEV="$T/kvm" CGPOOL_VM_KVM_BOOT_TIMEOUT=1 FAKE_KVM=hang
check "CGPOOL_VM_ACCEL=kvm, guest not up: killed, no TCG" test "$(calls kvmonly kvm)/$(calls kvmonly tcg)" = 1/0
check "... saying so" has kvmonly "say: KVM guest did not come up in 1 s: not booted again (CGPOOL_VM_ACCEL=kvm)"
check "... the hung qemu is gone" gone kvm.pid
boot kvmnodev CGPOOL_VM_ACCEL=kvm CGPOOL_VM_KVM_DEV="$T/no-such-kvm"
check "CGPOOL_VM_ACCEL=kvm without the device: refused, no qemu" sh -c 'grep -q "error: CGPOOL_VM_ACCEL=kvm: no $2$" "$1.out" && [ ! -s "$1.calls" ]' sh "$T/kvmnodev" "$T/no-such-kvm"
boot bad CGPOOL_VM_ACCEL=fast CGPOOL_VM_KVM_DEV="$T/kvm"
check "CGPOOL_VM_ACCEL=fast: refused, no qemu" sh -c 'grep -q "error: CGPOOL_VM_ACCEL=fast: kvm, tcg or auto" "$1.out" && [ ! -s "$1.calls" ]' sh "$T/bad"
boot badto CGPOOL_VM_KVM_BOOT_TIMEOUT=2m CGPOOL_VM_KVM_DEV="$T/kvm"
check "CGPOOL_VM_KVM_BOOT_TIMEOUT=2m: refused" has badto "error: CGPOOL_VM_KVM_BOOT_TIMEOUT=2m: not a number of seconds"
: > "$T/p.sh"
for r in vm/run-vm.sh systemd/run-systemd-vm.sh; do
	out=$(CGPOOL_VM_ACCEL=fast sh "$top/tests/$r" "$T/no-such-kernel" "$T/p.sh" 2>&1)
	rc=$?
	check "${r#*/} with CGPOOL_VM_ACCEL=fast: exit 99 (got $rc) with the reason" \
		sh -c '[ "$1" -eq 99 ] && echo "$2" | grep -q "ERROR: CGPOOL_VM_ACCEL=fast: kvm, tcg or auto"' sh "$rc" "$out"
done

# ---- run-vm.sh whole, through the fallback, where it would install nothing
why=
[ "$(id -u)" = 0 ] || why="not root"
[ -x /bin/busybox ] && /bin/busybox --list 2> /dev/null | grep -qx poweroff && ! ldd /bin/busybox > /dev/null 2>&1 ||
	why="${why:+$why, }no static /bin/busybox"
for t in cpio mkfs.ext2 modprobe; do command -v $t > /dev/null || why="${why:+$why, }no $t"; done
if [ -n "$why" ]; then
	echo "skip: run-vm.sh through the fallback ($why)"
else
	mkdir -p "$T/kernel/modules" "$T/runtmp" && : > "$T/kernel/vmlinuz" && : > "$T/kernel/modules.load" &&
		echo 0.0-fake > "$T/kernel/release" && echo 'exit 0' > "$T/p.sh" || exit 99
	rm -f "$FAKE_DIR"/*
	out=$(env -u top_srcdir TMPDIR="$T/runtmp" CGPOOL_VM_KVM_DEV="$T/kvm" CGPOOL_VM_KVM_BOOT_TIMEOUT=2 \
		FAKE_KVM=hang FAKE_PAYLOADS=p.sh CGPOOL_VM_HOST_TOOLS= CGPOOL_VM_SHELL=busybox CGPOOL_VM_DISK_MB=8 \
		sh "$top/tests/vm/run-vm.sh" "$T/kernel" "$T/p.sh" 2>&1)
	rc=$?
	check "run-vm.sh through the fallback: exit 0 (got $rc)" test $rc -eq 0
	check "... said it boots under KVM" sh -c 'echo "$1" | grep -q "^run-vm: booting 0.0-fake .* under KVM ($2 opens"' sh "$out" "$T/kvm"
	check "... said why it boots again" sh -c 'echo "$1" | grep -q "^run-vm: KVM guest did not come up in 2 s: booting again under TCG$"' sh "$out"
	check "... the payload passed, on a fresh disk" sh -c 'echo "$1" | grep -q "^  p.sh: PASS$" && ! echo "$1" | grep -q VMERROR' sh "$out"
	check "... its last line names the accelerator" sh -c 'echo "$1" | grep -q "^run-vm: 0.0-fake (v2): boot and payloads took [0-9]* s under TCG after KVM did not come up in 2 s (qemu exit 0)$"' sh "$out"
	check "... the hung qemu is gone" gone kvm.pid
	check "... nothing left in TMPDIR" test -z "$(ls -A "$T/runtmp")"
	[ $fails -eq 0 ] || echo "$out" | sed 's/^/  | /'
fi

echo "vm-accel: $fails failed"
[ $fails -eq 0 ]
