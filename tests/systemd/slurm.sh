#!/bin/sh
# slurm.sh - a run-systemd-vm.sh payload: Slurm on a cgroup v2 node under
# systemd (Debian 12's 252 and Slurm 22.05, one node on loopback), with
# munge, slurmctld and slurmd as the packages' systemd services and cgpoold
# from the shipped units (its slots in cgpoold-slots.scope).
#
# First Slurm's own confinement (proctrack/cgroup + task/cgroup with
# ConstrainRAMSpace=yes, its cgroup/v2 plug-in): the baseline, SLURM_VM_JOBS
# (100) short jobs each leave the groups Slurm made for them dying on a
# kernel without LRU reparenting (before 7.1), about 4 a job. Then the setup
# conf/slurm/v2/ as it ships (its slurm.conf.part, cgroup.conf and
# plugstack.conf, and its cgpool.conf as cgpoold's conf.d/slurm.conf): the
# same jobs run in the job's slot, add at most 1 dying memcg and make no more
# slots than warm + the jobs running at once; --mem is the job's limit on its
# slot (--mem=64M allocating 256 MiB is OUT_OF_MEMORY, --mem=512M
# completes). In both setups a -c1 job's task may run on its one CPU only (a
# taskset to the other fails) and --cpu-bind=cores still binds each task of
# a two-task job to a CPU of its own; with two fake GPUs (gres.conf, major
# 195, no driver) a --gres=gpu:1 job opens its own (ENXIO) and not the other
# (EPERM), even when the user sets SLURM_STEP_GPUS (or SLURM_JOB_GPUS for a
# batch job), a job without --gres
# neither, and a batch job with both still opens both after a step of it
# that had one (ConstrainDevices=yes; devices=yes). Under conf/slurm/v2, scancel of a
# batch job whose script left daemonized processes behind leaves nothing
# within 5 s; systemctl restart cgpoold while a job runs: the job goes on in
# its slot with its limit, and the next job is placed. In both setups
# scontrol suspend stops a process the job daemonized out of its process
# tree (under conf/slurm/v2 task/cgpool freezes the job's slot; nobody may
# freeze it with cgpoolctl), and scontrol resume lets it go on. Under
# conf/slurm/v2 nobody's job cannot leave its slot with cgpoolctl exec
# (plain or after setsid), and a job that leaves 96 MiB in /dev/shm does
# not hand it to the next jobs (its slot is set aside). What
# slurmstepd accounts for a running job (sstat of a batch step that burns 2
# s of CPU, then holds 128 MiB): a MaxRSS within 10% of the same job's under
# task/cgroup with jobacct_gather/cgroup (CPU time is printed, not compared).
# What sacct reports for a completed job, with slurmdbd storing into MariaDB
# (both started here, disabled in the image; JobAcctGatherFrequency=task=1
# in both setups): a batch job on one CPU kept busy for 4 s by a loop in a
# child that exits, beside a dd holding 128 MiB for 6 s, has under
# conf/slurm/v2 (jobacct_gather/linux) a MaxRSS and a TotalCPU within 10%
# of the same job's under task/cgroup (6.1 guest: MaxRSS 136140 against
# 131604 KiB, TotalCPU 4.09 against 4.18 s; 7.2: 138428 against 131608 KiB,
# 4.28 against 4.07 s). jobacct_gather/linux follows the step's process
# tree in /proc: processes the job daemonized out of it are not in its
# numbers; jobacct_gather/cgroup reads the step's cgroup, where they stay
# (not measured). Transparent huge pages are off for these jobs: Slurm's
# cgroup/v2 counts them twice (below).
. "${top_srcdir:-/src}/tests/systemd/lib.sh"

. "$SRC/tests/systemd/slurm-lib.sh"

# gpus VARIANT: with --gres=gpu:1 a job opens its own GPU (ENXIO: past the
# filter) and not the other (EPERM), whatever SLURM_STEP_GPUS the user sets;
# without --gres neither; a batch job with both keeps both after a step of
# it that has one
cat > /var/tmp/gpus.sh << 'EOS'
for d in 0 1; do
	err=$(cat /dev/nvidia$d 2>&1 > /dev/null)
	case $err in
	*"No such device or address"*) echo "nvidia$d ENXIO" ;;
	*"Operation not permitted"*) echo "nvidia$d EPERM" ;;
	*) echo "nvidia$d other: $err" ;;
	esac
done
EOS
gpus() {
	out=$(SLURM_STEP_GPUS=0,1 srun -Q --gres=gpu:1 sh -c 'echo "mine ${SLURM_STEP_GPUS:-none}"; sh /var/tmp/gpus.sh')
	echo "$1: --gres=gpu:1 (the user set SLURM_STEP_GPUS=0,1):" $out
	mine=$(echo "$out" | sed -n 's/^mine //p')
	other=$((1 - ${mine:-0}))
	check "$1: --gres=gpu:1 opens its GPU nvidia$mine (ENXIO: no driver)" \
		sh -c "echo '$out' | grep -qx 'nvidia$mine ENXIO'"
	check "$1: and not the other, nvidia$other (EPERM)" sh -c "echo '$out' | grep -qx 'nvidia$other EPERM'"
	out=$(SLURM_STEP_GPUS=0,1 srun -Q sh /var/tmp/gpus.sh)
	echo "$1: no --gres:" $out
	check "$1: a job without --gres opens no GPU" test "$(echo "$out" | grep -c EPERM)" -eq 2
	jid=$(sbatch --parsable --gres=gpu:2 -o /var/tmp/gpus2.out \
		--wrap 'srun -Q --gres=gpu:1 true; sh /var/tmp/gpus.sh')
	timeout 60 sh -c "until [ \"\$(scontrol -o show job $jid | grep -o 'JobState=[A-Z]*')\" = JobState=COMPLETED ]; do sleep 0.5; done"
	echo "$1: batch job $jid with gpu:2, after a step with gpu:1:" $(cat /var/tmp/gpus2.out)
	check "$1: a batch job with both GPUs opens both after a step of it with one" \
		test "$(grep -c ENXIO /var/tmp/gpus2.out)" -eq 2
	jid=$(SLURM_JOB_GPUS=0,1 sbatch --parsable --gres=gpu:1 -o /var/tmp/gpus1.out --wrap 'sh /var/tmp/gpus.sh')
	timeout 60 sh -c "until [ \"\$(scontrol -o show job $jid | grep -o 'JobState=[A-Z]*')\" = JobState=COMPLETED ]; do sleep 0.5; done"
	echo "$1: batch job $jid with gpu:1 (the user set SLURM_JOB_GPUS=0,1):" $(cat /var/tmp/gpus1.out)
	check "$1: a batch job with one GPU opens one, whatever SLURM_JOB_GPUS the user set" \
		test "$(grep -c ENXIO /var/tmp/gpus1.out)" -eq 1 -a "$(grep -c EPERM /var/tmp/gpus1.out)" -eq 1
	# 23.11 and later: a step of srun --external-launcher (what mpirun
	# starts) has the whole job's resources, and slurmstepd gives it the
	# job's GPUs, not the SLURM_STEP_GPUS the user set
	case $SLURM_VER in 22.05.*) return 0 ;; esac
	jid=$(sbatch --parsable --gres=gpu:1 -o /var/tmp/gpus3.out \
		--wrap 'SLURM_STEP_GPUS=0,1 srun -Q --external-launcher sh -c "echo mine \${SLURM_STEP_GPUS:-none}; sh /var/tmp/gpus.sh"')
	timeout 60 sh -c "until [ \"\$(scontrol -o show job $jid | grep -o 'JobState=[A-Z]*')\" = JobState=COMPLETED ]; do sleep 0.5; done"
	echo "$1: batch job $jid with gpu:1, an --external-launcher step (the user set SLURM_STEP_GPUS=0,1):" $(cat /var/tmp/gpus3.out)
	check "$1: an --external-launcher step opens the job's one GPU only, whatever SLURM_STEP_GPUS the user set" \
		test "$(grep -c ENXIO /var/tmp/gpus3.out)" -eq 1 -a "$(grep -c EPERM /var/tmp/gpus3.out)" -eq 1
}

# cpus VARIANT: a -c1 job is confined to one CPU (a taskset to any other
# is refused or changes nothing); --cpu-bind=cores binds the two tasks of a
# -n2 job to a CPU each
cat > /var/tmp/cpus.sh << 'EOS'
allowed() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status; }
own=$(allowed)
echo "$own"
for c in $(seq 0 $(($(nproc --all) - 1))); do
	[ "$c" = "$own" ] && continue
	if taskset -p -c "$c" $$ > /dev/null 2>&1; then echo "other $c: now $(allowed)"; else echo "other $c: refused"; fi
done
EOS
cpus() {
	out=$(srun -Q -c1 sh /var/tmp/cpus.sh)
	echo "$1: a -c1 job's task: $(echo "$out" | tr '\n' ' ')"
	one=$(echo "$out" | head -n 1)
	check "$1: a -c1 job's task may run on one CPU ($one)" sh -c "echo '$one' | grep -qx '[0-9][0-9]*'"
	check "$1: a taskset to another CPU is refused or changes nothing" \
		test "$(echo "$out" | grep '^other' | grep -cv ": refused\$\|: now $one\$")" -eq 0 -a \
		"$(echo "$out" | grep -c '^other')" -ge 1
	out=$(srun -Q -n2 -c1 --cpu-bind=cores sh -c 'echo $SLURM_LOCALID $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)' | sort)
	echo "$1: a -n2 --cpu-bind=cores job's tasks: $(echo "$out" | tr '\n' ' ')"
	check "$1: --cpu-bind=cores binds each task to a CPU of its own" \
		test "$(echo "$out" | awk '$2 ~ /^[0-9]+$/ { print $2 }' | sort -u | wc -l)" -eq 2
}

# suspend VARIANT: scontrol suspend stops what the job daemonized (a
# writer outside its process tree), resume lets it go on
lines() { wc -l < /var/tmp/susp.log 2> /dev/null || echo 0; }
suspend() {
	rm -f /var/tmp/susp.log
	jid=$(sbatch --parsable -o /dev/null --wrap 'setsid sh -c "(while :; do echo x >> /var/tmp/susp.log; sleep 0.1; done) &"; exec sleep 1003')
	timeout 60 sh -c 'until [ "$(wc -l < /var/tmp/susp.log 2> /dev/null || echo 0)" -ge 5 ]; do sleep 0.2; done'
	check "$1: job $jid's daemonized writer writes ($(lines) lines)" test "$(lines)" -ge 5
	if [ "$1" = v2 ]; then
		slot=$(status_of "slurm.$jid" path)
		out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$CGPOOLCTL" freeze "slurm:$jid" 2>&1)
		check "$1: nobody may freeze the job's slot ($out)" sh -c "echo '$out' | grep -q 'only root and members of socket_group'"
		check "$1: ... and the slot is not frozen" grep -qx "frozen 0" "$slot/cgroup.events"
	fi
	check "$1: scontrol suspend $jid" scontrol suspend "$jid"
	# slurmstepd sends SIGTSTP, then SIGSTOP (task/cgroup: the freeze) 2 s later
	sleep 3
	a=$(lines)
	sleep 2
	b=$(lines)
	task=$(pgrep -f '^sleep 1003$' | head -n 1)
	if [ "$1" = v2 ] && [ "$SUSPEND_HOOKS" = no ]; then
		# Slurm 24.11 and later call no task plug-in on suspend: slurmstepd
		# stops what its proctrack plug-in tracks (linuxproc: the job's
		# process tree), and what the job daemonized runs on (doc/slurm.md)
		check "$1: Slurm $SLURM_VER: the job's own task is stopped (state $(ps -o stat= -p "$task"))" \
			sh -c "ps -o stat= -p '$task' | grep -q '^T'"
		check "$1: ... the writer the job daemonized is not, as doc/slurm.md says ($a then $b lines 2 s later)" \
			test "$a" -lt "$b"
		check "$1: ... and the job's slot is not frozen" grep -qx "frozen 0" "$slot/cgroup.events"
		check "$1: scontrol resume $jid" scontrol resume "$jid"
		sleep 2
		check "$1: resumed, the job's task runs ($(ps -o stat= -p "$task"))" sh -c "ps -o stat= -p '$task' | grep -qv '^T'"
	else
		check "$1: suspended, the writer is stopped ($a then $b lines 2 s later)" test "$a" -eq "$b"
		[ "$1" = v2 ] && check "$1: the job's slot is frozen" grep -qx "frozen 1" "$slot/cgroup.events"
		check "$1: scontrol resume $jid" scontrol resume "$jid"
		sleep 2
		check "$1: resumed, the writer goes on ($b then $(lines) lines)" test "$(lines)" -gt "$b"
	fi
	scancel "$jid"
	timeout 30 sh -c "while pgrep -f '^sleep 1003\$' > /dev/null; do sleep 0.1; done"
	pkill -f 'echo x >> /var/tmp/susp.log' 2> /dev/null
}

# acct VARIANT: sstat's MaxRSS (KiB) and CPU time (s) of a running batch
# step that burnt 2 s of CPU and holds 128 MiB (tail keeps a line that does
# not end), as "RSS CPU" in ACCT_VARIANT
acct() {
	rm -f /var/tmp/acct.ready
	jid=$(sbatch --parsable -o /dev/null --mem=512M --wrap 'timeout 2 sh -c "while :; do :; done"; { head -c 134217728 /dev/zero; touch /var/tmp/acct.ready; exec sleep 1004; } | tail -n 1')
	timeout 60 sh -c 'until [ -e /var/tmp/acct.ready ]; do sleep 0.2; done'
	sleep 1
	line=$(sstat -n -P -j "$jid.batch" -o MaxRSS,MinCPU 2>&1 | head -n 1)
	scancel "$jid"
	timeout 30 sh -c "while pgrep -f '^sleep 1004\$' > /dev/null; do sleep 0.1; done"
	# 123456K; mm:ss.mmm or hh:mm:ss
	rss=$(echo "$line" | awk -F'|' '{ v = $1; u = substr(v, length(v)); n = v + 0;
		if (u == "M") n *= 1024; else if (u == "G") n *= 1048576; printf "%d", n }')
	cpu=$(echo "$line" | awk -F'|' '{ n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.1f", s }')
	echo "$1: sstat of job $jid.batch: '$line': MaxRSS $rss KiB, CPU $cpu s"
	check "$1: sstat's MaxRSS of the job is at least its 128 MiB ($rss KiB)" test "${rss:-0}" -ge 131072
	# jobacct_gather/linux polls /proc: for a running step it misses the CPU
	# time of children that exited between polls (1.0 to 2.0 s seen for the
	# 2 s burn); only the cgroup's cpu.stat has it all
	[ "$1" = slurm-cgroup ] &&
		check "$1: sstat's CPU time of the job is at least its 2 s ($cpu s)" awk -v c="$cpu" 'BEGIN { exit !(c >= 1.8) }'
	eval "ACCT_$(echo "$1" | tr -c 'a-z0-9\n' _)='$rss $cpu'"
}

# sacct_job VARIANT: what sacct reports, from slurmdbd, for a completed
# batch job on one CPU that kept it busy for 4 s: a loop in a child that
# exits, beside dd reading 128 MiB of zeros into its buffer, which it holds
# for 6 s (blocked on a pipe nobody reads). The batch step's MaxRSS (KiB)
# and TotalCPU (s), as "RSS CPU" in SACCT_VARIANT. The loop takes whatever
# CPU time dd leaves in those 4 s, so TotalCPU is about 4 s however fast the
# emulated CPU runs dd's page faults. (A 2 s loop followed by 128 MiB copied
# through a pipe did not compare: the copy took 2.5 to 4.7 s of CPU time as
# the load of other VMs on the host varied, 6.75 against 4.53 s in all.)
sacct_job() {
	if [ -n "${ACCT_BROKEN:-}" ]; then
		echo "NOT CHECKED: $1: sacct (slurmdbd cannot use this image's MariaDB, above)"
		return 1
	elif [ -z "$ACCT_UP" ]; then
		fail "$1: no sacct numbers: slurmdbd is not up (its and MariaDB's logs above)"
		return 1
	fi
	jid=$(sbatch --parsable -o /dev/null --mem=512M --wrap 'dd if=/dev/zero bs=128M count=1 status=none | sleep 6 & timeout 4 sh -c "while :; do :; done"; wait')
	end=$(($(date +%s) + 120))
	while case $(job_state "$jid") in PENDING | CONFIGURING | RUNNING | COMPLETING) true ;; *) false ;; esac; do
		[ "$(date +%s)" -lt $end ] || break
		sleep 0.5
	done
	# the record reaches slurmdbd after the job ends; the batch step's
	# MaxRSS is in it once slurmstepd sent the step's end: 30 s for that
	end=$(($(date +%s) + 30))
	while :; do
		line=$(timeout 30 sacct -n -P -j "$jid" -o JobID,MaxRSS,TotalCPU,UserCPU,SystemCPU 2>&1 | grep "^$jid\.batch|")
		[ -n "$(echo "$line" | cut -s -d'|' -f2)" ] && break
		[ "$(date +%s)" -lt $end ] || break
		sleep 0.5
	done
	state=$(timeout 30 sacct -n -P -X -j "$jid" -o State 2> /dev/null | head -n 1)
	check "$1: sacct has job $jid as COMPLETED ($state)" test "$state" = COMPLETED
	# 123456K; [dd-][hh:]mm:ss[.mmm]
	rss=$(echo "$line" | awk -F'|' '{ v = $2; u = substr(v, length(v)); n = v + 0;
		if (u == "M") n *= 1024; else if (u == "G") n *= 1048576; printf "%d", n }')
	cpu=$(echo "$line" | awk -F'|' '{ v = $3; d = 0; if (v ~ /-/) { d = v + 0; sub(/^[0-9]*-/, "", v) }
		n = split(v, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.2f", s + d * 86400 }')
	echo "$1: sacct of job $jid: '$line': MaxRSS $rss KiB, TotalCPU $cpu s"
	check "$1: sacct's MaxRSS of the job is at least its 128 MiB ($rss KiB)" test "${rss:-0}" -ge 131072
	check "$1: sacct's TotalCPU of the job is about its 4 s ($cpu s)" awk -v c="${cpu:-0}" 'BEGIN { exit !(c >= 3.6 && c <= 5) }'
	eval "SACCT_$(echo "$1" | tr -c 'a-z0-9\n' _)='$rss $cpu'"
}

# Slurm's cgroup/v2 (22.05) counts a step's transparent huge pages twice:
# memory.stat's anon, which has them, plus its anon_thp (sacct_job's dd
# buffer in huge pages: a MaxRSS of 260624 KiB under jobacct_gather/cgroup
# against 136328 under jobacct_gather/linux in the 6.1 guest, 260628
# against 138900 in the 7.2 one). The jobs of acct and sacct_job run with
# THP off, so both plug-ins count the same pages.
THP=/sys/kernel/mm/transparent_hugepage/enabled
THP_WAS=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $THP 2> /dev/null)
thp() { [ -z "$THP_WAS" ] || echo "$1" > $THP; }
echo "transparent huge pages: ${THP_WAS:-none} (never for the accounting jobs)"

# ---- accounting: MariaDB and slurmdbd (both disabled in the image, so
# the other payloads boot without them), slurmdbd storing into MariaDB
# through its socket as the database user slurm; the cluster registered.
# Without them ACCT_UP stays empty, slurm.conf keeps accounting_storage/none
# and every sacct check fails with the reason.
ACCT_UP=
ACCT_TRIED=yes
t_acct=$(date +%s)
mkdir -p /etc/slurm /var/log/slurm
# a small buffer pool: the guest has 1 GiB and the jobs take 512 MiB
[ -d /etc/mysql/mariadb.conf.d ] &&
	printf '[mysqld]\ninnodb_buffer_pool_size = 32M\n' > /etc/mysql/mariadb.conf.d/90-cgpool-vm.cnf
cat > /etc/slurm/slurmdbd.conf << EOC
AuthType=auth/munge
DbdHost=localhost
SlurmUser=$SLURM_USER
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=cgpool-vm
StorageLoc=slurm_acct_db
PidFile=$DBD_PID
LogFile=/var/log/slurm/slurmdbd.log
EOC
# slurmdbd refuses a config others can read, or not SlurmUser's
chown "$SLURM_USER:" /etc/slurm/slurmdbd.conf && chmod 600 /etc/slurm/slurmdbd.conf
in_db() { timeout 30 sacctmgr -n -P list cluster format=cluster 2> /dev/null | grep -qx vm; }
DB=$(command -v mariadb || command -v mysql)
if ! command -v slurmdbd > /dev/null || [ -z "$DB" ]; then
	fail "slurmdbd or mariadb not in the image (rootfs.sh installs slurmdbd and mariadb-server)"
elif ! check "mariadb.service started" timeout 300 systemctl start mariadb.service; then
	dbd_logs
elif ! check "MariaDB: the user slurm for slurmdbd" timeout 60 "$DB" -e \
	"CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'cgpool-vm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"; then
	dbd_logs
elif ! check "slurmdbd.service started" systemctl start slurmdbd.service; then
	dbd_logs
else
	# sacctmgr reads where slurmdbd is from slurm.conf; slurmdbd makes its
	# tables before it answers
	ACCT_UP=yes
	slurm_conf slurm-cgroup
	if ! timeout 300 sh -c 'until timeout 30 sacctmgr -n list cluster > /dev/null 2>&1; do
			systemctl -q is-active slurmdbd.service || exit 1
			sleep 1
		done'; then
		ACCT_UP=
		# Debian 13's slurmdbd (24.11.5) cannot use its own MariaDB 11.8
		# through its libmariadb3: the first query it makes fails in the
		# client library (error 5027), and slurmdbd exits. The sacct
		# checks are not made there; any other failure is one.
		if grep -q "_check_mysql_concat_is_sane: null result" /var/log/slurm/slurmdbd.log 2> /dev/null &&
			grep -q "mysql_query failed: 5027" /var/log/slurm/slurmdbd.log; then
			echo "NOT CHECKED: sacct: slurmdbd $(slurmdbd -V 2> /dev/null | cut -d' ' -f2) exits at its first query to this image's MariaDB ($(sed -n 's/.*mysql_query failed: \(5027 .*\)/\1/p' /var/log/slurm/slurmdbd.log | head -n 1))"
			ACCT_BROKEN=yes
		else
			fail "slurmdbd answers sacctmgr"
			dbd_logs
		fi
	else
		pass "slurmdbd answers sacctmgr"
		in_db || timeout 60 sacctmgr -i add cluster vm > /dev/null 2>&1
		check "the cluster vm is in the accounting database" in_db || { ACCT_UP=; dbd_logs; }
	fi
fi
echo "MariaDB and slurmdbd: $(($(date +%s) - t_acct)) s"

# ---- the baseline: Slurm's own cgroups
if slurm_up slurm-cgroup; then
	echo "the node is idle"
	where=$(srun -Q cat /proc/self/cgroup)
	echo "a task of Slurm's: $where"
	# the job's group is job_<id>, or from 26.05 its SLUID (s and 13
	# letters and digits; CgroupJobIdPaths=yes gives job_<id> back)
	check "task/cgroup puts a task in Slurm's job_*/step_*/.../task_* group" \
		sh -c "echo '$where' | grep -q '/\\(job_[0-9]*\\|s[0-9A-Z]\\{8,\\}\\)/step_0/.*task_0\$'"
	cpus slurm-cgroup
	gpus slurm-cgroup
	suspend slurm-cgroup
	thp never
	acct slurm-cgroup
	sacct_job slurm-cgroup
	thp "$THP_WAS"
	added=$(jobs slurm-cgroup) || fail "a job failed under task/cgroup"
	if reparents; then
		check "task/cgroup on $(uname -r), a kernel that reparents: $N jobs left $added dying memcgs (few)" \
			test "${added:-999}" -lt $((N / 10))
	else
		check "task/cgroup: $N jobs left $added dying memcgs (about 4 a job: at least $((3 * N)))" \
			test "${added:-0}" -ge $((3 * N))
	fi
else
	fail "the cluster did not come up with Slurm's cgroup plug-ins"
fi

# ---- cgpool's v2 setup
if ! slurm_up v2; then
	fail "the cluster did not come up with conf/slurm/v2"
	finish
	exit 1
fi
where=$(srun -Q cat /proc/self/cgroup)
echo "a task under conf/slurm/v2: $where"
check "a job's task runs in a slot of cgpoold-slots.scope ($where)" \
	sh -c "echo '$where' | grep -q '^0::/.*cgpoold-slots.scope/slot-[0-9]*/run\$'"
cpus v2
gpus v2
suspend v2
thp never
acct v2
sacct_job v2
thp "$THP_WAS"
set -- ${ACCT_slurm_cgroup:-0 0} ${ACCT_v2:-0 0}
check "v2: MaxRSS within 10% of task/cgroup's ($3 vs $1 KiB)" awk -v a="$1" -v b="$3" 'BEGIN { exit !(a > 0 && b >= a * 0.9 && b <= a * 1.1) }'
# CPU time is not compared: jobacct_gather/linux polls /proc and, for a
# running step, misses what exited children (head) used, which the step's
# cgroup cpu.stat holds (6.0 s against 2.0 s in the 6.1 guest, 5.0 against
# 1.0 in the 7.2 one)
echo "CPU time of the running job by sstat: v2 $4 s, task/cgroup $2 s"
# a completed job's numbers from slurmdbd
set -- ${SACCT_slurm_cgroup:-0 0} ${SACCT_v2:-0 0}
if [ -z "${ACCT_BROKEN:-}" ]; then
	check "v2: sacct MaxRSS within 10% of task/cgroup's ($3 vs $1 KiB)" \
		awk -v a="$1" -v b="$3" 'BEGIN { exit !(a > 0 && b >= a * 0.9 && b <= a * 1.1) }'
	check "v2: sacct TotalCPU within 10% of task/cgroup's ($4 vs $2 s)" \
		awk -v a="$2" -v b="$4" 'BEGIN { exit !(a > 0 && b >= a * 0.9 && b <= a * 1.1) }'
fi
made0=$(created)
echo "slots made before the jobs: $made0"
added=$(jobs v2) || fail "a job failed under conf/slurm/v2"
made=$(($(created) - made0))
check "conf/slurm/v2: $N jobs left $added dying memcgs (at most 1)" test "${added:-999}" -le 1
check "conf/slurm/v2: $N jobs made $made slots (at most warm $WARM + 8 at once)" test "$made" -le $((WARM + 8))
check "conf/slurm/v2: $N jobs wrote $((N * 4)) KiB" test "$(wc -c < /var/tmp/jobs-v2.log)" -eq $((N * 4096))

# ---- --mem is the job's limit on its slot
hog="head -c 268435456 /dev/zero | tail -n 1 | wc -c"
out=$(srun -Q --mem=64M sh -c "echo \$SLURM_JOB_ID; $hog" 2> /var/tmp/hog.err)
rc=$?
oomjob=$(echo "$out" | head -n 1)
check "--mem=64M allocating 256 MiB fails (srun exit $rc)" test $rc -ne 0
wait_for 10 sh -c "scontrol -o show job $oomjob | grep -q JobState=OUT_OF_MEMORY"
check "the job is OUT_OF_MEMORY (is $(job_state "$oomjob"))" test "$(job_state "$oomjob")" = OUT_OF_MEMORY
# the OOM killer may take tail, then head: "Detected 2 oom-kill event(s)"
# (3 of 25 such jobs under task/cgroup in the 7.2 guest)
check "Slurm's oom-kill line in the job's stderr" grep -Eq "Detected [1-9][0-9]* oom-kill event\\(s\\) in StepId=$oomjob\\.0\\." /var/tmp/hog.err
out=$(srun -Q --mem=512M sh -c "echo \$SLURM_JOB_ID; $hog" 2> /var/tmp/hog.err)
rc=$?
check "--mem=512M allocating 256 MiB completes (srun exit $rc, $(echo "$out" | tail -n 1) bytes)" \
	test $rc -eq 0 -a "$(echo "$out" | tail -n 1)" = 268435456

# ---- scancel reaches what the job daemonized
strays() { pgrep -fc "^sleep $1\$" 2> /dev/null || true; }
jid=$(sbatch --parsable -o /dev/null --wrap 'setsid sleep 1001 & setsid sh -c "sleep 1001 &"; exec sleep 1001')
timeout 60 sh -c "until [ \$(pgrep -fc '^sleep 1001\$') -ge 3 ]; do sleep 0.2; done"
check "batch job $jid runs with 3 sleeps, 2 of them daemonized ($(strays 1001))" test "$(strays 1001)" -ge 3
t0=$(date +%s%N)
scancel "$jid"
timeout 30 sh -c "while pgrep -f '^sleep 1001\$' > /dev/null; do sleep 0.1; done"
ms=$((($(date +%s%N) - t0) / 1000000))
check "scancel: nothing of the job left after $ms ms (at most 5000)" test "$(strays 1001)" -eq 0 -a $ms -le 5000

# ---- a job's task stays in its slot: nobody's job tries cgpoolctl exec
# into keys of its own (plain and after setsid), refused with the reason;
# its strays stay in the job's slot and die with the job
mkdir -p /var/tmp/esc && chmod 0777 /var/tmp/esc
rm -f /var/tmp/esc/*
setpriv --reuid=65534 --regid=65534 --clear-groups srun -Q --mem=64M sh -c '
	cd /var/tmp/esc
	cat /proc/self/cgroup > job.cg
	cgpoolctl exec user.65534.a -- cat /proc/self/cgroup > a.out 2>&1; echo $? > a.rc
	setsid cgpoolctl exec user.65534.b -- sleep 1003 > b.out 2>&1; echo $? > b.rc
	setsid sleep 1004 < /dev/null > /dev/null 2>&1 & cat /proc/$!/cgroup > stray.cg' > /dev/null 2>&1
for t in a b; do
	check "v2: nobody's cgpoolctl exec user.65534.$t inside a job is refused" test "$(cat /var/tmp/esc/$t.rc)" = 1
	check "... with the reason ($(head -c 160 /var/tmp/esc/$t.out))" grep -q "a job holds" /var/tmp/esc/$t.out
done
check "v2: the job's stray was in the job's slot" cmp -s /var/tmp/esc/job.cg /var/tmp/esc/stray.cg
timeout 5 sh -c "while pgrep -f '^sleep 100[34]\$' > /dev/null; do sleep 0.1; done"
check "v2: nothing of nobody's job left 5 s after it" test "$(pgrep -fc '^sleep 100[34]$')" -eq 0

# ---- a job leaves 96 MiB in /dev/shm (the guest has 512 MiB): the next
# jobs start in slots holding < 32 MiB, the slot is set aside
shm=/dev/shm/cgpool-leftover
setpriv --reuid=65534 --regid=65534 --clear-groups srun -Q --mem=160M sh -c "head -c 100663296 /dev/zero > $shm" ||
	fail "v2: nobody's job could not write 96 MiB to /dev/shm"
for i in 1 2; do
	b=$(srun -Q --mem=160M sh -c 'cat /sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)/memory.current')
	check "v2: root's job $i started in a slot holding ${b:-?} bytes (< 32 MiB)" \
		sh -c "[ -n '$b' ] && [ '$b' -lt 33554432 ]"
done
check "v2: cgpoold's log says the slot was not recycled" \
	sh -c "journalctl -q -o cat -u cgpoold.service | grep -q 'not recycled: [0-9]* bytes still charged after the scrub'"
check "v2: the slot is set aside (leftover.*)" sh -c "$CGPOOLCTL list | grep -q '^leftover\\.slot-'"
rm -f "$shm"

# ---- a running job's memory lowered through Slurm (26.05 and later:
# scontrol update MinMemoryNode of a running job, which Slurm allows only
# with PrologFlags=Contain; task/cgpool's update_mem_limit): its slot's
# memory.max follows
case $SLURM_VER in
2[6-9].* | [3-9][0-9].*)
	slurm_up v2-contain || fail "the cluster did not come up with conf/slurm/v2 and PrologFlags=Contain"
	jid=$(sbatch --parsable --mem=512M -o /dev/null --wrap 'exec sleep 1004')
	timeout 60 sh -c "until [ \$(pgrep -fc '^sleep 1004\$') -ge 1 ]; do sleep 0.2; done"
	slot=$(status_of "slurm.$jid" path)
	check "v2: job $jid's slot starts with its --mem=512M ($(cat "$slot/memory.max" 2> /dev/null))" \
		test "$(cat "$slot/memory.max" 2> /dev/null)" = 536870912
	out=$(scontrol update JobId="$jid" MinMemoryNode=256 2>&1)
	check "v2: scontrol update JobId=$jid MinMemoryNode=256 on the running job ($out)" test -z "$out"
	check "v2: the slot's memory.max follows: 256 MiB within 30 s ($(cat "$slot/memory.max" 2> /dev/null))" \
		wait_for 30 sh -c "test \"\$(cat '$slot/memory.max')\" = 268435456"
	check "v2: cgpoold's log says why" sh -c \
		"journalctl -q -o cat -u cgpoold.service | grep -q 'job slurm:$jid:[0-9]*: limit memory.max = '"
	scancel "$jid"
	timeout 30 sh -c "while pgrep -f '^sleep 1004\$' > /dev/null; do sleep 0.1; done"
	slurm_up v2 || fail "the cluster did not come up with conf/slurm/v2 again"
	;;
*) echo "Slurm $SLURM_VER: a running job's memory does not change (26.05 and later)" ;;
esac

# ---- a restart of cgpoold while a job runs
jid=$(sbatch --parsable --mem=96M -o /dev/null --wrap 'exec sleep 1002')
timeout 60 sh -c "until [ \$(pgrep -fc '^sleep 1002\$') -ge 1 ]; do sleep 0.2; done"
slot=$(status_of "slurm.$jid" path)
echo "job $jid in $slot: memory.max $(cat "$slot/memory.max" 2> /dev/null)"
check "job $jid's slot has its memory.max (96M)" test "$(cat "$slot/memory.max" 2> /dev/null)" = 100663296
check "systemctl restart cgpoold" systemctl restart cgpoold.service
sleep 2
check "after the restart job $jid runs ($(job_state "$jid"))" test "$(job_state "$jid")" = RUNNING
check "its sleep is still in the slot" sh -c "grep -qx \"\$(pgrep -f '^sleep 1002\$')\" '$slot/cgroup.procs'"
check "the slot keeps memory.max 96M ($(cat "$slot/memory.max" 2> /dev/null))" \
	test "$(cat "$slot/memory.max" 2> /dev/null)" = 100663296
check "cgpoold knows the key is running ($(status_of "slurm.$jid" state))" test "$(status_of "slurm.$jid" state)" = running
where=$(srun -Q cat /proc/self/cgroup)
check "the next job is placed in a slot ($where)" sh -c "echo '$where' | grep -q 'cgpoold-slots.scope/slot-[0-9]*/run\$'"
scancel "$jid"
timeout 30 sh -c "while pgrep -f '^sleep 1002\$' > /dev/null; do sleep 0.1; done"
check "the job ends at scancel" test "$(strays 1002)" -eq 0

# ---- favordynmods = yes: the cgroup2 mount gets the option and keeps its
# others (the guest is not booted again after this payload: the option
# stays until it powers off)
super() { awk '$5 == "/sys/fs/cgroup" { sub(/.* - cgroup2 [^ ]* /, ""); print }' /proc/self/mountinfo; }
before=$(super)
printf '[daemon]\nfavordynmods = yes\n' > /etc/cgpool/conf.d/favordynmods.conf
check "systemctl restart cgpoold with favordynmods = yes" systemctl restart cgpoold.service
after=$(super)
echo "the cgroup2 mount's options: before $before, after $after"
check "the cgroup2 mount has favordynmods ($after)" sh -c "echo '$after' | tr , '\n' | grep -qx favordynmods"
for o in $(echo "$before" | tr , ' '); do
	check "... and still $o" sh -c "echo '$after' | tr , '\n' | grep -qx '$o'"
done
check "cgpoold's log says so" sh -c "journalctl -q -o cat -u cgpoold.service | grep -q 'favordynmods: /sys/fs/cgroup reconfigured with favordynmods'"
where=$(srun -Q cat /proc/self/cgroup)
check "a job is placed in a slot ($where)" sh -c "echo '$where' | grep -q 'cgpoold-slots.scope/slot-[0-9]*/run\$'"
rm -f /etc/cgpool/conf.d/favordynmods.conf

[ "$T_FAILS" -eq 0 ] || logs
systemctl stop slurmd slurmctld
finish
