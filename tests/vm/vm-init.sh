#!/bin/sh
# vm-init.sh - /init of the test VMs that run-vm.sh builds (busybox sh, PID 1).
# Sets up the cgroup layout /vm/layout names (v2: pure cgroup v2; v1: pure
# cgroup v1 as a legacy-mode node has it, every controller on a hierarchy of
# its own, nothing at unified) with a real disk on /var/tmp, runs the payloads listed
# in /vm/payloads.list (NAME PATH per line) one after the other in the leaf
# cgroup /test/runner, frames each one's output on the console with
# `VMTEST-BEGIN NAME` and `VMTEST NAME EXIT-CODE`, and powers off.
# Setup failures print `VMERROR reason`; run-vm.sh reads all of these.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec < /dev/console > /dev/console 2>&1
dmesg -n 1 # kernel messages off the console; dumped below when a test fails
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /root

# the firmware's escape codes end up on the first line: start a fresh one
echo
echo "VMINFO kernel $(uname -r)"

off() {
	sync
	poweroff -f
	sleep 10
}
die() {
	echo "VMERROR $*"
	dmesg | tail -n 40
	off
}

CG=/sys/fs/cgroup
LAYOUT=$(cat /vm/layout 2> /dev/null || echo v2)
# v1: the hierarchies of a legacy-mode node (systemd's and RHEL 8's), the
# named systemd one included; cpu and cpuacct as links, as systemd makes them
V1_HIERS="cpuset cpu,cpuacct blkio memory devices freezer pids"
if [ "$LAYOUT" = v1 ]; then
	mount -t tmpfs -o mode=755 cgroup $CG || die "cannot mount the tmpfs on $CG"
	for h in $V1_HIERS; do
		mkdir -p $CG/$h && mount -t cgroup -o "$h" cgroup $CG/$h || die "cannot mount the v1 $h hierarchy"
	done
	mkdir -p $CG/systemd && mount -t cgroup -o none,name=systemd cgroup $CG/systemd ||
		die "cannot mount the name=systemd hierarchy"
	ln -s cpu,cpuacct $CG/cpu && ln -s cpu,cpuacct $CG/cpuacct
	# as systemd sets it at boot: a memory cgroup counts its children
	echo 1 > $CG/memory/memory.use_hierarchy || die "cannot set memory.use_hierarchy"
else
	mount -t cgroup2 cgroup2 $CG || die "cannot mount cgroup2 on $CG"
fi

while read -r m; do
	[ -n "$m" ] || continue
	insmod "/vm/modules/$m" 2> /tmp/insmod.err ||
		echo "VMINFO insmod $m: $(cat /tmp/insmod.err) (ignored)"
done < /vm/modules.load

# a real disk, so that page cache can be reclaimed (tmpfs pages cannot
# without swap)
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -b /dev/vda ] || die "no virtio disk /dev/vda (modules: $(tr '\n' ' ' < /vm/modules.load))"
mkdir -p /var/tmp
mount -t ext2 /dev/vda /var/tmp 2> /dev/null || mount -t ext4 /dev/vda /var/tmp ||
	die "cannot mount /dev/vda on /var/tmp"
chmod 1777 /var/tmp

# The payloads run in the leaf /test/runner and create their cgroups below
# /test (CGPOOL_TEST_CGROUP). v2: controllers for the root's children and
# for /test's; /test holds no process, so its children can have controllers
# enabled (the "no internal processes" rule). v1: /test and /test/runner in
# every hierarchy (a new cpuset takes its parent's CPUs and memory nodes).
if [ "$LAYOUT" = v1 ]; then
	HIERS=
	for h in $V1_HIERS systemd; do
		HIERS="$HIERS $CG/$h"
		mkdir -p $CG/$h/test/runner || die "mkdir $CG/$h/test/runner"
	done
	for d in $CG/cpuset/test $CG/cpuset/test/runner; do
		cat $CG/cpuset/cpuset.cpus > $d/cpuset.cpus && cat $CG/cpuset/cpuset.mems > $d/cpuset.mems ||
			die "cannot give $d its CPUs"
	done
	echo "VMINFO cgroup v1 hierarchies: $(awk '$3 == "cgroup" { printf "%s ", $4 }' /proc/mounts)"
else
	HIERS=$CG
	echo "+memory +pids" > $CG/cgroup.subtree_control || die "cannot enable memory and pids at $CG"
	mkdir -p $CG/test/runner || die "mkdir $CG/test/runner"
	echo "+memory +pids" > $CG/test/cgroup.subtree_control || die "cannot enable memory and pids at $CG/test"
	echo "VMINFO cgroup2 controllers: $(cat $CG/cgroup.controllers); /test gives: $(cat $CG/test/cgroup.subtree_control)"
	grep -q '^nr_dying_subsys_memory' $CG/cgroup.stat 2> /dev/null && echo "VMINFO cgroup.stat has nr_dying_subsys_memory"
fi
[ -f $CG/test/cgroup.kill ] || echo "VMINFO no cgroup.kill (v1, or a kernel before 5.14)"

. /vm/env

# RUNNER: the runner's cgroup in the memory hierarchy (v1) or cgroup2
if [ "$LAYOUT" = v1 ]; then RUNNER=$CG/memory/test/runner; else RUNNER=$CG/test/runner; fi

# kill_in DIR: every process of the cgroup DIR killed (cgroup.kill where the
# kernel has it, else SIGKILL to each)
kill_in() {
	echo 1 > "$1/cgroup.kill" 2> /dev/null || xargs -r kill -9 < "$1/cgroup.procs" 2> /dev/null
}

# after each payload: nothing may be left running in the runner nor
# behind below /test
tidy() {
	if [ -n "$(cat $RUNNER/cgroup.procs)" ]; then
		echo "VMWARN $1: processes left running: $(tr '\n' ' ' < $RUNNER/cgroup.procs)"
		kill_in $RUNNER
		sleep 0.2
	fi
	left=
	for h in $HIERS; do
		left="$left $(find $h/test -mindepth 1 -type d ! -path $h/test/runner)"
	done
	[ -n "$(echo $left)" ] || return 0
	echo "VMWARN $1: cgroups left behind: $(echo $left | sed "s|$CG||g")"
	for d in $left; do kill_in "$d"; done
	sleep 0.2
	for h in $HIERS; do
		find $h/test -mindepth 1 -depth -type d ! -path $h/test/runner -exec rmdir {} \; 2> /dev/null
	done
}

# runner_join: this process into /test/runner of every hierarchy
runner_join() {
	for h in $HIERS; do
		echo 0 > $h/test/runner/cgroup.procs || return 1
	done
}

# watchdog PID NAME: TERM to PID after VM_TEST_TIMEOUT seconds, then kill
# all that runs in the runner; ends by itself within 1 s once PID is gone
watchdog() {
	i=0
	while kill -0 "$1" 2> /dev/null; do
		if [ $i -ge "$VM_TEST_TIMEOUT" ]; then
			echo "VMWARN $2: killed after ${VM_TEST_TIMEOUT}s"
			kill -TERM "$1"
			sleep 10
			kill_in $RUNNER
			return
		fi
		sleep 1
		i=$((i + 1))
	done
}

failed=0
while read -r name path; do
	echo "VMTEST-BEGIN $name"
	t0=$(date +%s)
	(
		runner_join || exit 98
		cd /var/tmp || exit 98
		exec "$VM_SHELL" "$path"
	) < /dev/null 2>&1 &
	pid=$!
	watchdog $pid "$name" &
	wd=$!
	wait $pid
	rc=$?
	t1=$(date +%s)
	wait $wd
	tidy "$name"
	echo "VMINFO $name took $((t1 - t0)) s"
	echo "VMTEST $name $rc"
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || failed=1
done < /vm/payloads.list

if [ $failed = 1 ]; then
	echo "VMDMESG-BEGIN"
	dmesg
	echo "VMDMESG-END"
fi
echo "VMDONE"
off
