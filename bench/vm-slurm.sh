#!/bin/sh
# vm-slurm.sh - a run-systemd-vm.sh payload, booted by bench/slurm-vm.sh:
# the jobs of bench/slurm.sh in a systemd guest on pure cgroup v2 (the
# guest's Slurm, one node on loopback, tests/systemd/slurm-lib.sh), three
# ways one after another in one boot: Slurm making no cgroups (none), Slurm's
# own task/cgroup + proctrack/cgroup (slurm-cgroup) and conf/slurm/v2 as it
# ships (cgpool), and the same with the job's memory limit alone on the slot
# (cgpool memory: no cpuset=yes, no devices=yes). For each: submit-to-end
# p50/p90 of a job, the ratio of p50 to none's, dying memcgs added. Where
# the guest is emulated (TCG) only the ratios within one boot mean anything.
. "${top_srcdir:-/src}/tests/systemd/lib.sh"
. "$SRC/tests/systemd/slurm-lib.sh"
N=${SLURM_VM_BENCH_JOBS:-50}

# p-th percentile of the numbers in FILE
pct() { sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { i = int((NR * p + 99) / 100); if (i < 1) i = 1; print v[i] }'; }

# timed VARIANT LABEL: N jobs as jobs() runs them, each timed from submit to end
timed() {
	slurm_up "$1" || { fail "$2: the cluster did not come up"; return 1; }
	srun -Q true > /dev/null 2>&1 # the first job of a cluster starts its caches
	dd if=/dev/urandom of=/var/tmp/4k bs=4096 count=1 2> /dev/null
	: > "/var/tmp/ms-$1"
	d0=$(dying)
	i=0
	while [ $i -lt "$N" ]; do
		t0=$(date +%s%N)
		srun -Q -N1 -n1 dd if=/var/tmp/4k of="/var/tmp/bench-$1.log" bs=4096 oflag=append conv=notrunc \
			status=none || { fail "$2: job $i failed"; return 1; }
		echo $((($(date +%s%N) - t0) / 1000000)) >> "/var/tmp/ms-$1"
		i=$((i + 1))
	done
	sleep 1
	p50=$(pct "/var/tmp/ms-$1" 50)
	[ "$1" = none ] && BASE=$p50
	printf 'bench: %-13s p50 %5s ms  p90 %5s ms  x%-5s  dying memcgs %+d\n' "$2" "$p50" "$(pct "/var/tmp/ms-$1" 90)" \
		"$(awk -v a="$p50" -v b="${BASE:-$p50}" 'BEGIN { printf "%.2f", a / b }')" $(($(dying) - d0))
	pass "$2: $N jobs"
}

echo "bench: $N jobs a way; $(nproc) CPUs, kernel $(uname -r), pure cgroup v2, $(slurmd -V)"
timed none none
timed slurm-cgroup task/cgroup
timed v2 cgpool
timed v2-memory "cgpool memory"
systemctl stop slurmd slurmctld
finish
