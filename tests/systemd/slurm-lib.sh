# slurm-lib.sh - sourced by tests/systemd/slurm.sh and bench/vm-slurm.sh
# after tests/systemd/lib.sh, in a systemd guest of run-systemd-vm.sh: a
# one-node Slurm on loopback (Debian 12's slurm-wlm 22.05, munge, slurmctld
# and slurmd as the packages' units), cgpoold from the shipped units with
# conf/slurm/v2's cgpool.conf, two fake GPUs (gres.conf, NVIDIA's major,
# no driver), and:
#   slurm_up VARIANT   the cluster with VARIANT's plug-ins, the node idle
#   jobs VARIANT       N short jobs one after another (dying memcgs added)
# VARIANT: none (no cgroup work: proctrack/linuxproc, task/affinity),
# slurm-cgroup (Slurm's own task/cgroup + proctrack/cgroup with
# ConstrainRAMSpace/Cores/Devices, jobacct_gather/cgroup) or v2
# (conf/slurm/v2 as it ships), or v2-memory (the same without cpuset=yes and
# devices=yes: the job's memory limit alone on its slot). With ACCT_UP set
# (slurmdbd answering: slurm.sh starts it) slurm.conf stores accounting
# through slurmdbd, every task's numbers gathered each second.
CG=/sys/fs/cgroup
N=${SLURM_VM_JOBS:-100}
WARM=2
SETUP=$SRC/conf/slurm/v2
skip() { echo "SKIP: $T_NAME: $*"; exit 77; }
for b in slurmctld slurmd srun sbatch scontrol sinfo munged; do
	command -v $b > /dev/null || skip "$b not in the image (rootfs.sh installs slurm-wlm and munge)"
done
PLUGDIR=$(dirname "$(ls /usr/lib/*/slurm-wlm/task_affinity.so 2> /dev/null | head -n 1)")
[ -f "$PLUGDIR/cgpool.so" ] && [ -f "$PLUGDIR/task_cgpool.so" ] ||
	skip "cgpool's Slurm plug-ins are not installed in $PLUGDIR (the build found no slurm/spank.h)"
[ -f "$SETUP/slurm.conf.part" ] || skip "no $SETUP"
timeout 60 systemctl is-system-running --wait > /dev/null 2>&1
# no Slurm client waits for ever
srun() { timeout 120 /usr/bin/srun "$@"; }

dying() { sed -n 's/^nr_dying_descendants //p' "$CG/cgroup.stat"; }
node_state() { timeout 20 sinfo -h -N -o %t 2> /dev/null | head -n 1; }
job_state() { scontrol -o show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
status_of() { "$CGPOOLCTL" --json status "$1" | json "$2"; }
created() { journalctl -q -o cat -u cgpoold.service | grep -c "created, warm"; }
# the kernel reparents an offline memcg's LRU pages (7.1 and later)
reparents() {
	set -- $(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
	[ "$1" -gt 7 ] || { [ "$1" = 7 ] && [ "$2" -ge 1 ]; }
}
logs() {
	show journalctl -q -o cat -n 30 -u munge -u slurmctld -u slurmd -u cgpoold
	show tail -n 30 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log
	dbd_logs
}
# MariaDB's and slurmdbd's, where slurm.sh started them
dbd_logs() {
	[ -n "$ACCT_TRIED" ] || return 0
	show journalctl -q -o cat -n 30 -u mariadb -u slurmdbd
	show tail -n 30 /var/log/slurm/slurmdbd.log
}

# ---- an IPv4 address besides 127.0.0.1: the guest has no network, and
# Slurm resolves every address (its own listening one too) with getaddrinfo's
# AI_ADDRCONFIG, which answers nothing on a machine with loopback alone
command -v ip > /dev/null || skip "no ip (iproute2) in the image"
ip addr add 127.0.1.1/8 dev lo 2> /dev/null
check "lo has 127.0.1.1 (Slurm's getaddrinfo needs an address besides 127.0.0.1)" \
	sh -c 'ip -4 addr show dev lo | grep -q "inet 127.0.1.1/"'

# ---- munge and cgpoold from their units
check "munge.service started" systemctl start munge.service ||
	{ logs; finish; exit 1; }
systemctl stop cgpoold.socket cgpoold.service 2> /dev/null
mkdir -p /etc/cgpool/conf.d
cp "$SETUP/cgpool.conf" /etc/cgpool/conf.d/slurm.conf
cat > /etc/cgpool/cgpool.conf << EOC
[pool]
warm = $WARM
idle_timeout = 1h
EOC
check "cgpoold.socket started" systemctl start cgpoold.socket
check "cgpoold answers" timeout 30 "$CGPOOLCTL" health

# ---- slurm.conf: the node as slurmd -C sees it, one partition; VARIANT's
# plug-ins; cgroup.conf and plugstack.conf
NODE=$(timeout 30 slurmd -C 2> /dev/null | sed -n 's/^NodeName=[^ ]* //p' | head -n 1)
[ -n "$NODE" ] || skip "slurmd -C did not describe this node"
# the Slurm release (slurmd -V: "slurm-wlm 24.11.5" on Debian; it reads no slurm.conf),
# and whether task/cgpool is told of scontrol suspend there (22.05 only:
# src/slurm/slurm_release.h)
SLURM_VER=$(slurmd -V 2> /dev/null | sed -n 's/^slurm[a-z-]* \([0-9.]*\).*/\1/p')
case $SLURM_VER in 22.05.*) SUSPEND_HOOKS=yes ;; *) SUSPEND_HOOKS=no ;; esac
echo "Slurm $SLURM_VER (task/cgpool's suspend hooks: $SUSPEND_HOOKS)"
# the user slurmctld and slurmdbd run as: the one their packaged units
# name (Debian 13 and later: slurm, with /run/slurmctld and /run/slurmdbd
# as their runtime directories), else root (Debian 12)
SLURM_USER=$(systemctl show -p User --value slurmctld.service 2> /dev/null)
[ -n "$SLURM_USER" ] || SLURM_USER=root
if [ "$SLURM_USER" = root ]; then
	CTLD_PID=/run/slurmctld.pid DBD_PID=/run/slurmdbd.pid
else
	CTLD_PID=/run/slurmctld/slurmctld.pid DBD_PID=/run/slurmdbd/slurmdbd.pid
fi
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
chown "$SLURM_USER" /var/spool/slurmctld /var/log/slurm
# two fake GPUs: NVIDIA's major, no driver (an open that passes the device
# filter fails with ENXIO, one it stops with EPERM)
for i in 0 1; do
	[ -c /dev/nvidia$i ] || mknod /dev/nvidia$i c 195 $i
done
printf 'AutoDetect=off\nName=gpu File=/dev/nvidia[0-1]\n' > /etc/slurm/gres.conf
slurm_conf() {
	case $1 in
	none)
		plugins="ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/linux"
		printf 'CgroupPlugin=cgroup/v2\n' > /etc/slurm/cgroup.conf
		: > /etc/slurm/plugstack.conf
		;;
	slurm-cgroup)
		plugins="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup"
		printf 'CgroupPlugin=cgroup/v2\nConstrainCores=yes\nConstrainRAMSpace=yes\nConstrainDevices=yes\n' > /etc/slurm/cgroup.conf
		: > /etc/slurm/plugstack.conf
		;;
	v2)
		plugins=$(grep -v '^#' "$SETUP/slurm.conf.part")
		cp "$SETUP/cgroup.conf" "$SETUP/plugstack.conf" /etc/slurm/
		;;
	v2-contain)
		plugins="$(grep -v '^#' "$SETUP/slurm.conf.part")
PrologFlags=Contain"
		cp "$SETUP/cgroup.conf" "$SETUP/plugstack.conf" /etc/slurm/
		;;
	v2-memory)
		plugins=$(grep -v '^#' "$SETUP/slurm.conf.part")
		cp "$SETUP/cgroup.conf" /etc/slurm/
		sed 's/ cpuset=yes\| devices=yes//g' "$SETUP/plugstack.conf" > /etc/slurm/plugstack.conf
		;;
	esac
	cat > /etc/slurm/slurm.conf << EOC
ClusterName=vm
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=$SLURM_USER
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
$plugins
$(grep -v '^#' "$SRC/tests/slurm/cluster.conf.part" | grep -v '^AccountingStorageType=')
$([ -n "$ACCT_UP" ] || echo AccountingStorageType=accounting_storage/none)
${ACCT_UP:+AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherFrequency=task=1}
DefMemPerCPU=128
GresTypes=gpu
NodeName=$(hostname -s) NodeAddr=127.0.0.1 $NODE Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOC
}

# slurm_up VARIANT: the cluster with VARIANT's plug-ins, the node idle
# (0), or the logs shown (1)
slurm_up() {
	systemctl stop slurmd slurmctld 2> /dev/null
	slurm_conf "$1"
	rm -f /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log
	echo "starting slurmctld and slurmd with $1"
	systemctl start slurmctld slurmd || { logs; return 1; }
	# a deadline, not a count of tries: sinfo waits for a slurmctld that
	# does not answer
	timeout 60 sh -c 'until [ "$(sinfo -h -N -o %t 2> /dev/null | head -n 1)" = idle ]; do sleep 0.2; done' &&
		return 0
	echo "the node is not idle after 60 s (state '$(node_state)')"
	logs
	return 1
}

# jobs VARIANT: N short jobs one after another, each appending 4 KiB to
# /var/tmp/jobs-VARIANT.log (its page cache charged to the job's memcg);
# prints the dying memcgs added; fails on the first job that fails
jobs() {
	dd if=/dev/urandom of=/var/tmp/4k bs=4096 count=1 2> /dev/null
	before=$(dying)
	t0=$(date +%s%N)
	i=0
	while [ $i -lt "$N" ]; do
		srun -Q -N1 -n1 dd if=/var/tmp/4k of="/var/tmp/jobs-$1.log" bs=4096 \
			oflag=append conv=notrunc status=none 2> /var/tmp/job.err ||
			{ echo "job $i failed: $(cat /var/tmp/job.err)"; return 1; }
		i=$((i + 1))
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	sleep 1
	echo "$1: $N jobs in $ms ms ($((ms / N)) ms a job); dying memcgs $before -> $(dying)" >&2
	echo $(($(dying) - before))
}
