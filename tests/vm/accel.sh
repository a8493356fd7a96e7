# accel.sh - sourced by run-vm.sh and ../systemd/run-systemd-vm.sh: the
# accelerator a test guest runs under, and its boot.
#
# CGPOOL_VM_ACCEL picks it: auto (the default), kvm or tcg. auto takes KVM
# (`-accel kvm -cpu host`) when the device CGPOOL_VM_KVM_DEV (default
# /dev/kvm) exists and opens read-write, else TCG (`-accel tcg`: qemu
# emulates the CPU in software, many times slower); kvm refuses to run
# without that device; tcg never tries KVM. Under KVM the guest must show it
# is up within CGPOOL_VM_KVM_BOOT_TIMEOUT seconds (default 120): a console
# line with `VMINFO ` or `VMERROR `, the first thing the guests' own scripts
# print (vm-init.sh in run-vm.sh's guests; in the systemd guests
# initrd-init.sh on an error, else vm-runner.sh once multi-user.target is
# reached). One that does not, or whose qemu exits before, is killed;
# under auto it is booted again from fresh disks under TCG with the whole
# timeout, under kvm not (its payloads then have no result: the run fails).
#
# vm_accel: sets VM_ACCEL (kvm or tcg), VM_ACCEL_NAME (KVM or TCG) and
# VM_ACCEL_WHY (the reason, for the runner's "booting" line), or VM_ACCEL_ERR and returns 1 when
# CGPOOL_VM_ACCEL or CGPOOL_VM_KVM_BOOT_TIMEOUT is not valid or kvm is asked
# for without a usable device.
#
# vm_boot LOG TIMEOUT PREPARE QEMU_ARG...: PREPARE (a command of the runner,
# making the guest's writable disks afresh), then `timeout -k 10 TIMEOUT
# qemu-system-x86_64 ACCEL_ARGS QEMU_ARG...` with stdin from /dev/null and
# the console (qemu's stdout and stderr) in LOG; under KVM the attempt that
# did not come up as above. Sets qrc (timeout's exit status for the last
# attempt), VM_TOOK (its seconds) and VM_ACCEL_USED ("under KVM", "under
# TCG", "under TCG after KVM did not come up in N s" or "... (qemu exited
# with N)"); says with the runner's say when KVM did not come up (the KVM
# attempt's console then in LOG.kvm). vm_boot_stop: a guest still running
# killed (the runner's exit trap calls it).

VM_UP='VM(INFO|ERROR) '
VM_QEMU_PID=

# vm_kvm_usable: the KVM device exists and opens read-write (a redirection
# alone, in a subshell: `<>` would create a missing file, and a failed
# redirection of `:` ends a POSIX shell)
vm_kvm_usable() {
	[ -e "$VM_KVM_DEV" ] && (: <> "$VM_KVM_DEV") 2> /dev/null
}

vm_accel() {
	VM_KVM_DEV=${CGPOOL_VM_KVM_DEV:-/dev/kvm}
	VM_KVM_BOOT_TIMEOUT=${CGPOOL_VM_KVM_BOOT_TIMEOUT:-120}
	VM_ACCEL_MODE=${CGPOOL_VM_ACCEL:-auto}
	VM_ACCEL_ERR=
	case $VM_KVM_BOOT_TIMEOUT in
	'' | *[!0-9]*) VM_ACCEL_ERR="CGPOOL_VM_KVM_BOOT_TIMEOUT=$VM_KVM_BOOT_TIMEOUT: not a number of seconds" ;;
	*) [ "$VM_KVM_BOOT_TIMEOUT" -gt 0 ] || VM_ACCEL_ERR="CGPOOL_VM_KVM_BOOT_TIMEOUT=$VM_KVM_BOOT_TIMEOUT: must be 1 s or more" ;;
	esac
	[ -z "$VM_ACCEL_ERR" ] || return 1
	case $VM_ACCEL_MODE in
	tcg) VM_ACCEL=tcg VM_ACCEL_WHY="CGPOOL_VM_ACCEL=tcg" ;;
	kvm)
		if ! vm_kvm_usable; then
			VM_ACCEL_ERR="CGPOOL_VM_ACCEL=kvm: $VM_KVM_DEV cannot be opened read-write"
			[ -e "$VM_KVM_DEV" ] || VM_ACCEL_ERR="CGPOOL_VM_ACCEL=kvm: no $VM_KVM_DEV"
			return 1
		fi
		VM_ACCEL=kvm VM_ACCEL_WHY="CGPOOL_VM_ACCEL=kvm, no fallback to TCG"
		;;
	auto)
		if vm_kvm_usable; then
			VM_ACCEL=kvm VM_ACCEL_WHY="$VM_KVM_DEV opens; TCG if the guest is not up in $VM_KVM_BOOT_TIMEOUT s"
		elif [ -e "$VM_KVM_DEV" ]; then
			VM_ACCEL=tcg VM_ACCEL_WHY="$VM_KVM_DEV cannot be opened read-write"
		else
			VM_ACCEL=tcg VM_ACCEL_WHY="no $VM_KVM_DEV"
		fi
		;;
	*) VM_ACCEL_ERR="CGPOOL_VM_ACCEL=$VM_ACCEL_MODE: kvm, tcg or auto"; return 1 ;;
	esac
	if [ "$VM_ACCEL" = kvm ]; then VM_ACCEL_NAME=KVM; else VM_ACCEL_NAME=TCG; fi
	return 0
}

# vm_qemu LOG TIMEOUT kvm|tcg QEMU_ARG...: qemu started in the background
# under timeout (its pid in VM_QEMU_PID; timeout passes a signal on to qemu)
vm_qemu() {
	vm_log=$1 vm_to=$2 vm_a=$3
	shift 3
	if [ "$vm_a" = kvm ]; then set -- -accel kvm -cpu host "$@"; else set -- -accel tcg "$@"; fi
	timeout -k 10 "$vm_to" qemu-system-x86_64 "$@" < /dev/null > "$vm_log" 2>&1 &
	VM_QEMU_PID=$!
}

# vm_wait: qrc from the guest's end (no "Terminated" from the shell when
# it was killed)
vm_wait() {
	wait "$VM_QEMU_PID" 2> /dev/null
	qrc=$?
	VM_QEMU_PID=
}

vm_boot_stop() {
	[ -n "$VM_QEMU_PID" ] || return 0
	kill -TERM "$VM_QEMU_PID" 2> /dev/null
	vm_wait
}

# vm_up_within LOG SECONDS: 0 once LOG shows the guest up, 1 when qemu
# ended before, 2 when SECONDS passed first (the sleep reaps qemu when it
# ends, so kill -0 then fails)
vm_up_within() {
	vm_i=0
	while :; do
		grep -Eq "$VM_UP" "$1" 2> /dev/null && return 0
		if ! kill -0 "$VM_QEMU_PID" 2> /dev/null; then
			grep -Eq "$VM_UP" "$1" 2> /dev/null && return 0
			return 1
		fi
		[ $vm_i -lt "$2" ] || return 2
		sleep 1
		vm_i=$((vm_i + 1))
	done
}

# vm_last_line LOG: the last line of LOG with text, without escape codes
vm_last_line() {
	sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' "$1" | tr -d '\r' | grep -v '^[[:space:]]*$' |
		tail -n 1 | tr -cd '[:print:]' | cut -c1-200
}

vm_boot() {
	vm_blog=$1 vm_bto=$2 vm_prep=$3
	shift 3
	if [ "$VM_ACCEL" = kvm ]; then
		$vm_prep
		vm_t0=$(date +%s)
		vm_qemu "$vm_blog" "$vm_bto" kvm "$@"
		vm_up_within "$vm_blog" "$VM_KVM_BOOT_TIMEOUT"
		case $? in
		0)
			vm_wait
			VM_TOOK=$(($(date +%s) - vm_t0)) VM_ACCEL_USED="under KVM"
			return 0
			;;
		1)
			vm_wait
			vm_short="(qemu exited with $qrc)"
			vm_why=": qemu exited with $qrc after $(($(date +%s) - vm_t0)) s, saying: $(vm_last_line "$vm_blog")"
			;;
		*)
			vm_boot_stop
			vm_short="in $VM_KVM_BOOT_TIMEOUT s"
			vm_why=" in $VM_KVM_BOOT_TIMEOUT s"
			;;
		esac
		VM_TOOK=$(($(date +%s) - vm_t0))
		if [ "$VM_ACCEL_MODE" = kvm ]; then
			say "KVM guest did not come up$vm_why: not booted again (CGPOOL_VM_ACCEL=kvm)"
			VM_ACCEL_USED="under KVM, which did not come up $vm_short"
			return 0
		fi
		say "KVM guest did not come up$vm_why: booting again under TCG"
		mv "$vm_blog" "$vm_blog.kvm"
	fi
	$vm_prep
	vm_t0=$(date +%s)
	vm_qemu "$vm_blog" "$vm_bto" tcg "$@"
	vm_wait
	VM_TOOK=$(($(date +%s) - vm_t0))
	if [ "$VM_ACCEL" = kvm ]; then
		VM_ACCEL_USED="under TCG after KVM did not come up $vm_short"
	else
		VM_ACCEL_USED="under TCG"
	fi
}
