#!/bin/sh
# vm-runner.sh - runs the payloads inside a systemd test VM (started by
# cgpool-vmtest.service after multi-user.target, output on the serial
# console). Like tests/vm/vm-init.sh: each payload listed in
# /vm/payloads.list (NAME PATH per line) runs under /bin/sh in a leaf
# cgroup, its output framed by `VMTEST-BEGIN NAME` and `VMTEST NAME EXIT-CODE`;
# `VMINFO` lines say what the guest is; the unit powers the VM off when this
# script ends. Cgroups, below the unit's delegated cgroup U:
#   U/init         this script
#   U/test         CGPOOL_TEST_CGROUP: no processes, +memory +pids for its
#                  children
#   U/test/runner  the payload
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
cd /

echo
echo "VMINFO kernel $(uname -r), $(systemctl --version | head -n 1), PID 1 is $(cat /proc/1/comm)"
echo "VMINFO runner started $(cut -d' ' -f1 /proc/uptime) s after the kernel booted"
echo "VMINFO slowest units to start: $(systemd-analyze blame --no-pager 2> /dev/null | head -n 3 | sed 's/^ *//' | paste -sd, -)"

CG=/sys/fs/cgroup
U=$(sed -n 's/^0:://p' /proc/self/cgroup)
mkdir -p "$CG$U/init" "$CG$U/test/runner" &&
	echo $$ > "$CG$U/init/cgroup.procs" &&
	echo "+memory +pids" > "$CG$U/cgroup.subtree_control" &&
	echo "+memory +pids" > "$CG$U/test/cgroup.subtree_control" ||
	echo "VMERROR cannot set up the test cgroups below $U"
T=$CG$U/test

# the packages, where the run brought .debs instead of an installed tree:
# installed as an admin would, with the systemd of this boot running
if [ -d /vm/debs ]; then
	if dpkg -i /vm/debs/*.deb > /var/tmp/dpkg-install.log 2>&1; then
		echo "VMINFO installed: $(dpkg-query -W -f='${Package} ${Version}, ' cgpool libcgpool0 slurm-cgpool 2> /dev/null)"
	else
		sed 's/^/  /' /var/tmp/dpkg-install.log
		echo "VMERROR dpkg -i of the packages failed"
	fi
fi
ldconfig
. /vm/env
export CGPOOL_TEST_CGROUP="$U/test"

# after each payload: nothing may be left running in the runner nor behind
# below the test cgroup
tidy() {
	if [ -n "$(cat "$T/runner/cgroup.procs")" ]; then
		echo "VMWARN $1: processes left running: $(tr '\n' ' ' < "$T/runner/cgroup.procs")"
		echo 1 > "$T/runner/cgroup.kill"
		sleep 0.2
	fi
	left=$(find "$T" -mindepth 1 -type d ! -path "$T/runner")
	[ -n "$left" ] || return 0
	echo "VMWARN $1: cgroups left behind: $(echo $left | sed "s|$CG||g")"
	for d in $left; do [ -f "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill"; done 2> /dev/null
	sleep 0.2
	find "$T" -mindepth 1 -depth -type d ! -path "$T/runner" -exec rmdir {} \; 2> /dev/null
}

uptime_s() { cut -d' ' -f1 /proc/uptime; }
while read -r name path; do
	echo "VMTEST-BEGIN $name"
	t0=$(uptime_s)
	(
		echo 0 > "$T/runner/cgroup.procs" || exit 98
		cd /var/tmp || exit 98
		exec timeout -k 10 "$VM_TEST_TIMEOUT" /bin/sh "$path"
	) < /dev/null 2>&1
	rc=$?
	[ $rc -eq 124 ] && echo "VMWARN $name: killed after ${VM_TEST_TIMEOUT}s"
	t1=$(uptime_s)
	tidy "$name"
	echo "VMINFO $name took $(echo "$t0 $t1" | awk '{ printf "%.1f", $2 - $1 }') s"
	echo "VMTEST $name $rc"
done < /vm/payloads.list
echo "VMINFO $(systemd-analyze time 2> /dev/null | head -n 1)"
echo "VMDONE"
