# results.sh - sourced by run-vm.sh and ../systemd/run-systemd-vm.sh: what
# a test VM's serial console says about its payloads.
#
# vm_results CONSOLE_LOG QEMU_EXIT: reads the raw console log (payloads
# framed by `VMTEST-BEGIN NAME` and `VMTEST NAME EXIT-CODE`, guest errors as
# `VMERROR ...`) for each name in $NAMES, with $WORK for its text and
# $VM_TIMEOUT for the message when qemu was killed. Sets status (0, or 1
# when a payload failed or gave no result) and summary (a line per payload,
# a failed one's FAIL and ERROR lines under it), and prints the payloads'
# own output, or the whole console log when something failed.
vm_results() {
	tr -d '\r' < "$1" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' > "$WORK/console.txt"
	status=0
	summary=
	for name in $NAMES; do
		rc=$(awk -v n="$name" '$1 == "VMTEST" && $2 == n && NF == 3 { print $3 }' "$WORK/console.txt" | tail -n 1)
		case $rc in
		0) r=PASS ;;
		77) r=SKIP ;;
		"") r="FAIL (no result: the VM stopped or timed out first)"; status=1 ;;
		*) r="FAIL (exit $rc)"; status=1 ;;
		esac
		summary="$summary
  $name: $r"
		# a failed payload's own FAIL and ERROR lines, under its result (the
		# console log above them can be cut short where it is quoted)
		case $r in
		FAIL*)
			lines=$(awk -v n="$name" '$1 == "VMTEST-BEGIN" && $2 == n { on = 1; next }
				on && $1 == "VMTEST" && $2 == n { exit }
				on && /^(FAIL|ERROR)/ { print "    " $0 }' "$WORK/console.txt" | head -n 10)
			[ -z "$lines" ] || summary="$summary
$lines"
			;;
		esac
	done
	if grep -q '^VMERROR' "$WORK/console.txt"; then
		status=1
		summary="$summary
  guest setup: $(sed -n 's/^VMERROR //p' "$WORK/console.txt" | head -n 1)"
	fi
	if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then
		summary="$summary
  qemu killed after ${VM_TIMEOUT}s"
	elif [ "$2" -eq 143 ]; then
		# vm_boot's SIGTERM (tests/vm/accel.sh): a KVM guest that did not
		# come up, under CGPOOL_VM_ACCEL=kvm
		summary="$summary
  qemu killed: the guest did not come up"
	fi
	if [ $status -eq 0 ]; then
		# the payloads' own output, without the boot noise
		sed -n '/^VMTEST-BEGIN /,/^VMTEST [^ ]* [0-9]*$/{p;d}; /^VM[A-Z]* /p' "$WORK/console.txt"
	else
		echo "---- console log"
		cat "$WORK/console.txt"
		echo "---- end of console log"
	fi
}

# vm_each_kernel WHO RUN KERNEL...: RUN KERNEL for each kernel (RUN is a
# command, split on spaces); prints which passed, failed and could not be
# run, and returns 1 when one failed, else 77 when one could not be run
# (RUN exited 77), else 0.
vm_each_kernel() {
	who=$1 run=$2
	shift 2
	failed= skipped= passed=
	for k in "$@"; do
		$run "$k"
		case $? in
		0) passed="$passed $k" ;;
		77) skipped="$skipped $k" ;;
		*) failed="$failed $k" ;;
		esac
	done
	echo "$who: passed on:${passed:- none}; failed on:${failed:- none}; not run on:${skipped:- none}"
	[ -z "$failed" ] || return 1
	[ -z "$skipped" ] || return 77
	return 0
}

# vm_each_kernel_by JOBS WHO RUN KERNEL...: as vm_each_kernel, JOBS kernels
# at a time (each guest is one emulated CPU: one host core), each one's
# output printed whole, in the order of the kernels, once its group is done.
vm_each_kernel_by() {
	by=$1
	shift
	[ "$by" -gt 1 ] && [ $# -gt 3 ] || { vm_each_kernel "$@"; return; }
	who=$1 run=$2
	shift 2
	out=$(mktemp -d "${TMPDIR:-/tmp}/cgpool-vm-each.XXXXXX") || return 99
	i=0 pids=
	for k in "$@"; do
		i=$((i + 1))
		( $run "$k" > "$out/$i.log" 2>&1; echo $? > "$out/$i.rc" ) &
		pids="$pids $!"
		if [ $((i % by)) -eq 0 ] || [ $i -eq $# ]; then
			wait $pids
			pids=
		fi
	done
	failed= skipped= passed=
	i=0
	for k in "$@"; do
		i=$((i + 1))
		cat "$out/$i.log"
		case $(cat "$out/$i.rc" 2>/dev/null) in
		0) passed="$passed $k" ;;
		77) skipped="$skipped $k" ;;
		*) failed="$failed $k" ;;
		esac
	done
	rm -rf "$out"
	echo "$who: passed on:${passed:- none}; failed on:${failed:- none}; not run on:${skipped:- none}"
	[ -z "$failed" ] || return 1
	[ -z "$skipped" ] || return 77
	return 0
}
