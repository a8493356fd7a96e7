# lib.sh - a Slurm cluster of one node (or S_NODES) for the Slurm tests;
# sourced after tests/integ/lib.sh (T_DIR, T_OWN, T_MEMMNT, check/fail/finish,
# skip).
#
# ## Notes
# - slurm_start VARIANT [PLUGSTACK_LINE] starts munged, slurmctld and slurmd
#   (each -D/-F in the background, pids kept) for this test only: generated
#   slurm.conf, cgroup.conf and plugstack.conf in $T_DIR/slurm, its own munge
#   key and socket, two free TCP ports, the node on 127.0.0.1 with what
#   `slurmd -C` reports, one default partition; state, spool, pid and log
#   files in the same dir (the logs: $T_DIR/slurm/*.log, *.out). It returns
#   once the node is idle. SLURM_CONF is exported, so every client command
#   (srun, sbatch, scontrol, sinfo, squeue) talks to this cluster only.
# - VARIANT cgpool: the shipped setup conf/slurm/alone/ as it is (its
#   slurm.conf.part, cgroup.conf and plugstack.conf, with cgpool.so and
#   task/cgpool found in PluginDir = the build's src/slurm/.libs, then
#   Slurm's own); Slurm makes no cgroups, a job's tasks are placed by the
#   plug-in only. PLUGSTACK_LINE, when given, replaces the plugstack.conf
#   line; S_EXTRA_CONF (lines) goes into slurm.conf (PrologFlags=Contain),
#   S_EXTRA_CGROUP_CONF at the end of cgroup.conf.
#   slurmd runs with CGPOOL_SOCKET=$T_SOCK, the socket the plug-in uses
#   when its line names none.
#   VARIANT beside: the shipped setup conf/slurm/beside/ the same way:
#   Slurm's proctrack/cgroup and task/cgroup (cores, devices) in groups of
#   Slurm's, memory in cgpool's slot.
#   VARIANT none: the same without cgpool (no plug-in at all).
#   VARIANT slurm-cgroup: Slurm's own proctrack/cgroup + task/cgroup with
#   ConstrainRAMSpace=yes on cgroup/v1: every job leaves four dying memory
#   cgroups (uid_*, job_*, step_*, task_*), pinned by the page cache it wrote.
# - Cgroups only below the test's own cgroup: Slurm's cgroup/v1 plug-in makes
#   slurm_<node>/uid_*/job_*/... right below CgroupMountpoint/<controller>.
#   slurmd (and every slurmstepd it forks, which inherits its mount
#   namespace) runs in a private mount namespace (unshare -m --propagation
#   private) in which $T_DIR/slurm/cgroup/<controller> is a bind mount of
#   <controller mount>$T_OWN/slurm-<test>-<pid>, and CgroupMountpoint points
#   there. The host's mounts never change, the namespace goes with its last
#   process, and slurm_stop removes those groups. Both variants run slurmd
#   that way, so even a stray cgroup stays below the test's cgroup.
# - slurm_stop finds what is left of the cluster's processes by that mount
#   namespace (slurmstepd daemonizes away from slurmd), never by name, so
#   other clusters on the machine are left alone.
# - Jobs run with srun (~40-50 ms each here); sbatch --wait polls the job's
#   state and takes 2 s a job (10 s for the first).
# - Back-to-back jobs start at once only with DefMemPerCPU set (without it a
#   job takes all of the node's memory, so the next waits for the previous
#   one to finish completing) and batch_sched_delay=0 (else a job that had to
#   wait is started by the next scheduler pass, 1-3 s later).
# - S_NODES=N (set after sourcing this file, before slurm_start; default 1):
#   N nodes n1..nN on 127.0.0.1, each a slurmd of its own (`slurmd -N nI`,
#   Debian's slurmd is built with --enable-multiple-slurmd; slurm_have_nodes
#   skips otherwise) with its own Port, spool, pid and log
#   ($S_DIR/slurmd-nI.log), in a mount namespace of its own, and with a
#   cgpoold of its own started by slurm_start, as tests/integ/lib.sh starts
#   the test's: socket, state dir, config and log in $S_DIR/nI/, pool root
#   $T_OWN/cgpool-<test>-<pid>-nI, S_NODE_CONFIG (ini lines) added to its
#   config; that node's slurmd runs with CGPOOL_SOCKET of its own daemon
#   (slurm_node_sock nI). The test's own daemon (T_SOCK) is not used then.
#   slurm_stop stops them all and removes their pool roots. With S_NODES=1
#   (the default) the one node is named as the host, its files are
#   slurmd.log and slurmd.pid, and slurmd talks to the test's daemon.
# - slurmd loads the plug-ins of plugstack.conf at its own start: a
#   `required` one that fails to load stops slurmd ("Failed to load plugin
#   ... Aborting"), so slurm_start returns 1 then instead of skipping.

: "${T_DIR:?source tests/integ/lib.sh first}"
S_DIR="$T_DIR/slurm"
S_CGNAME="slurm-$T_NAME-$$"
S_CONTROLLERS="memory freezer cpuset devices cpuacct"
S_MUNGED_PID=
S_CTLD_PID=
S_SLURMD_PID=
S_SLURMD_PIDS=
S_NODES=1
S_NODE_DAEMON_PIDS=
S_NODE_CONFIG=
S_VARIANT=
S_EXTRA_CONF=
S_EXTRA_CGROUP_CONF=
S_CONF_DIR="${top_srcdir:-.}/conf/slurm"
S_SETUP=
S_BUILT_PLUGINS=$(cd "${top_builddir:-.}/src/slurm/.libs" 2>/dev/null && pwd)
# the Slurm release (slurmd -V: "slurm-wlm 24.11.5" on Debian; it reads no
# slurm.conf), and whether task/cgpool is told of scontrol suspend there
# (22.05 only: src/slurm/slurm_release.h)
S_VER=$(slurmd -V 2> /dev/null | sed -n 's/^slurm[a-z-]* \([0-9.]*\).*/\1/p')
case $S_VER in 22.05.*) S_SUSPEND_HOOKS=yes ;; *) S_SUSPEND_HOOKS=no ;; esac

# slurm_sys_plugindir: the directory holding Slurm's own plug-ins
slurm_sys_plugindir() {
	for s_d in /usr/lib/*/slurm-wlm /usr/lib/*/slurm /usr/lib64/slurm /usr/lib/slurm; do
		[ -f "$s_d/task_affinity.so" ] && { echo "$s_d"; return 0; }
	done
	return 1
}

# slurm_have: the binaries the cluster needs, or skip with the reason
slurm_have() {
	for s_b in munged mungekey slurmctld slurmd srun sbatch scontrol sinfo squeue unshare; do
		command -v "$s_b" > /dev/null 2>&1 ||
			skip "$s_b not found (apt-get install --no-install-recommends slurm-wlm libslurm-dev munge)"
	done
	# the free ports of slurm_free_port: without ss every port looks free
	command -v ss > /dev/null 2>&1 || skip "ss not found (apt-get install iproute2): no free TCP port can be told"
}

# slurm_have_plugins: cgpool's plug-ins and Slurm's own, or skip with the
# reason; S_PLUGIN_DIR, slurm.conf's PluginDir: the build's plug-ins first,
# then Slurm's own, or Slurm's own alone where the build has none and the
# installed package (slurm-cgpool) put them there (tests/slurm/releases.sh)
slurm_have_plugins() {
	s_sys=$(slurm_sys_plugindir) || skip "Slurm's own plug-ins (task_affinity.so) not found"
	if [ -f "$S_BUILT_PLUGINS/cgpool.so" ] && [ -f "$S_BUILT_PLUGINS/task_cgpool.so" ]; then
		S_PLUGIN_DIR=$S_BUILT_PLUGINS:$s_sys
	elif [ -z "$S_BUILT_PLUGINS" ] && [ -f "$s_sys/cgpool.so" ] && [ -f "$s_sys/task_cgpool.so" ]; then
		S_PLUGIN_DIR=$s_sys
	else
		skip "the plug-ins were not built (configure found no slurm/spank.h)"
	fi
}

# slurm_have_nodes: several slurmd on one host, or skip with the reason
slurm_have_nodes() {
	slurmd -h 2>&1 | grep -q -- '-N node' ||
		skip "this slurmd was built without --enable-multiple-slurmd (no -N): one host cannot be $S_NODES nodes"
}

# slurm_node_names: the cluster's node names, one a line
slurm_node_names() {
	if [ "$S_NODES" -le 1 ]; then
		hostname -s
	else
		s_i=1
		while [ $s_i -le "$S_NODES" ]; do echo "n$s_i"; s_i=$((s_i + 1)); done
	fi
}
# slurm_node_sock NODE: the socket of that node's cgpoold
slurm_node_sock() { if [ "$S_NODES" -le 1 ]; then echo "$T_SOCK"; else echo "$S_DIR/$1/cgpool.sock"; fi; }
# slurm_node_root NODE: the pool root (as in /proc/self/cgroup) of that node's cgpoold
slurm_node_root() { if [ "$S_NODES" -le 1 ]; then echo "$T_ROOT"; else echo "$T_ROOT-$1"; fi; }
# slurm_node_log NODE: that node's slurmd log
slurm_node_log() { if [ "$S_NODES" -le 1 ]; then echo "$S_DIR/slurmd.log"; else echo "$S_DIR/slurmd-$1.log"; fi; }
# nctl NODE ARGS...: cgpoolctl talking to that node's daemon
nctl() { n_s=$(slurm_node_sock "$1"); shift; CGPOOL_SOCKET="$n_s" "$CGPOOLCTL" "$@"; }

# status_of KEY FIELD: a field of the key's slot (the first occurrence)
status_of() { "$CGPOOLCTL" --json status "$1" | json "$2"; }
# created: how many slots the daemon made so far (its log)
created() { grep -c "created, warm" "$T_DIR/daemon.log"; }
# for wait_for: the key's field is VALUE now
field_is() { test "$(status_of "$1" "$2" 2> /dev/null)" = "$3"; }
# strays MARK: how many processes run "sleep MARK"
strays() { pgrep -fc "^sleep $1\$" 2> /dev/null || true; }
# job_state JOBID: Slurm's state of the job (RUNNING, OUT_OF_MEMORY, ...)
job_state() { scontrol -o show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# hog MIB: a python3 program that touches MIB MiB of memory and exits 0
hog() { echo "import sys; b = bytearray($1 << 20); [b.__setitem__(i, 1) for i in range(0, len(b), 4096)]; sys.exit(0)"; }

# slurm_free_port: S_PORT, a TCP port no socket uses (ss) and not handed out
# before (in this shell: not from a command substitution, whose S_PORTS
# would be lost), below the kernel's range of ephemeral ports
# (ip_local_port_range), so no outgoing connection of the jobs' clients
# takes it between this check and the daemon's bind
slurm_free_port() {
	s_lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2> /dev/null)
	[ "${s_lo:-0}" -gt 12000 ] || s_lo=32768
	while :; do
		s_p=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (s_lo - 10000) + 10000 ))
		case " $S_PORTS " in *" $s_p "*) continue ;; esac
		ss -Htan "( sport = :$s_p )" | grep -q . && continue
		S_PORTS="$S_PORTS $s_p"
		S_PORT=$s_p
		return 0
	done
}

# slurm_cg_dirs: the cgroup directories Slurm's hierarchy is bound to, one
# per v1 controller that is mounted on its own
slurm_cg_dirs() {
	for s_c in $S_CONTROLLERS; do
		s_mnt=$(awk -v c="$s_c" '$3 == "cgroup" { n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] == c) { print $2; exit } }' /proc/mounts)
		[ -n "$s_mnt" ] && echo "$s_c $s_mnt$T_OWN/$S_CGNAME"
	done
}

# slurm_cpuset_fill MOUNT REL: every cpuset from MOUNT down to MOUNT/REL
# that has no CPUs or memory nodes gets its parent's (a new v1 cpuset starts
# empty, and no task can enter it)
slurm_cpuset_fill() {
	s_p=$1 s_rest=${2#/}
	while [ -n "$s_rest" ]; do
		s_c=$s_p/${s_rest%%/*}
		case $s_rest in */*) s_rest=${s_rest#*/} ;; *) s_rest= ;; esac
		for s_f in cpuset.cpus cpuset.mems; do
			[ -n "$(cat "$s_c/$s_f")" ] || cat "$s_p/$s_f" > "$s_c/$s_f" || return 1
		done
		s_p=$s_c
	done
}

# slurm_cg_make: make those directories (the test's own cgroup path too
# where a hierarchy lacks it: T_CREATED has that removed at exit)
slurm_cg_make() {
	slurm_cg_dirs | while read -r s_c s_d; do
		mkdir -p "$s_d" "$S_DIR/cgroup/$s_c" || return 1
		if [ "$s_c" = cpuset ]; then
			s_mnt=${s_d%"$T_OWN/$S_CGNAME"}
			slurm_cpuset_fill "$s_mnt" "$T_OWN/$S_CGNAME" || return 1
		fi
	done
}

# slurm_rm_cgroup DIR: remove a cgroup directory and every group below it,
# deepest first, killing what still runs there
slurm_rm_cgroup() {
	s_k=50
	while [ -d "$1" ] && [ $s_k -gt 0 ]; do
		# shellcheck disable=SC2038
		find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
		find "$1" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$1" ] && sleep 0.1
		s_k=$((s_k - 1))
	done
	[ -d "$1" ] && echo "warning: $1 left behind" >&2
	return 0
}

# slurm_cg_remove: remove the groups Slurm made and the bound directories
slurm_cg_remove() {
	slurm_cg_dirs | while read -r s_c s_d; do
		slurm_rm_cgroup "$s_d"
	done
	return 0
}

# slurm_node_lines HOST HARDWARE: S_NODE_LINES, slurm.conf's NodeName lines
# (several nodes: each on this host with a port of its own)
slurm_node_lines() {
	if [ "$S_NODES" -le 1 ]; then
		S_NODE_LINES="NodeName=$1 NodeAddr=127.0.0.1 $2 State=UNKNOWN"
		return 0
	fi
	S_NODE_LINES=
	for s_n in $(slurm_node_names); do
		slurm_free_port
		S_NODE_LINES="${S_NODE_LINES}NodeName=$s_n NodeHostname=$1 NodeAddr=127.0.0.1 Port=$S_PORT $2 State=UNKNOWN
"
	done
}

# slurm_write_conf VARIANT PLUGSTACK_LINE
slurm_write_conf() {
	s_host=$(hostname -s)
	s_node=$(slurmd -C 2>/dev/null | sed -n 's/^NodeName=[^ ]* //p' | head -n 1)
	[ -n "$s_node" ] || return 1
	s_suffix=
	[ "$S_NODES" -le 1 ] || s_suffix=-%n
	slurm_free_port
	s_ctld_port=$S_PORT
	slurm_free_port
	s_slurmd_port=$S_PORT
	slurm_node_lines "$s_host" "$s_node"
	case $1 in
	none)
		s_plugins="ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/linux" ;;
	cgpool|beside)
		s_plugins="$(grep -v '^#' "$S_SETUP/slurm.conf.part")
PluginDir=$S_PLUGIN_DIR
$S_EXTRA_CONF" ;;
	slurm-cgroup)
		s_plugins="ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/linux" ;;
	*) echo "slurm_start: unknown variant $1" >&2; return 1 ;;
	esac
	cat > "$S_DIR/slurm.conf" <<EOC
ClusterName=cgpool$$
SlurmctldHost=$s_host(127.0.0.1)
SlurmctldPort=$s_ctld_port
SlurmdPort=$s_slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S_DIR/munge/munge.sock
StateSaveLocation=$S_DIR/state
SlurmdSpoolDir=$S_DIR/spool/%n
SlurmctldPidFile=$S_DIR/slurmctld.pid
SlurmdPidFile=$S_DIR/slurmd$s_suffix.pid
SlurmctldLogFile=$S_DIR/slurmctld.log
SlurmdLogFile=$S_DIR/slurmd$s_suffix.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$S_DIR/plugstack.conf
$s_plugins
$(grep -v '^#' "${top_srcdir:-.}/tests/slurm/cluster.conf.part")
DefMemPerCPU=256
$S_NODE_LINES
PartitionName=test Nodes=$(slurm_node_names | paste -sd, -) Default=YES MaxTime=INFINITE State=UP
EOC
	# a shipped setup's cgroup.conf as it is; the mount point is the test's
	if [ -n "$S_SETUP" ]; then
		cat "$S_SETUP/cgroup.conf" > "$S_DIR/cgroup.conf"
	else
		printf 'ConstrainCores=no\nConstrainDevices=no\n' > "$S_DIR/cgroup.conf"
	fi
	cat >> "$S_DIR/cgroup.conf" <<EOC
CgroupPlugin=cgroup/v1
CgroupMountpoint=$S_DIR/cgroup
CgroupAutomount=no
EOC
	[ "$1" = slurm-cgroup ] && printf 'ConstrainRAMSpace=yes\nConstrainSwapSpace=no\n' >> "$S_DIR/cgroup.conf"
	[ -n "$S_EXTRA_CGROUP_CONF" ] && printf '%s\n' "$S_EXTRA_CGROUP_CONF" >> "$S_DIR/cgroup.conf"
	if [ -n "$2" ]; then
		printf '%s\n' "$2" > "$S_DIR/plugstack.conf"
	elif [ -n "$S_SETUP" ]; then
		cp "$S_SETUP/plugstack.conf" "$S_DIR/plugstack.conf"
	else
		: > "$S_DIR/plugstack.conf"
	fi
}

# slurm_start_munge: munged with its own key, socket, pid, seed and log
slurm_start_munge() {
	mkdir -p "$S_DIR/munge" && chmod 755 "$S_DIR/munge" || return 1
	dd if=/dev/urandom of="$S_DIR/munge/munge.key" bs=1024 count=1 2>/dev/null &&
		chmod 400 "$S_DIR/munge/munge.key" || return 1
	munged -F --force --socket="$S_DIR/munge/munge.sock" \
		--key-file="$S_DIR/munge/munge.key" --pid-file="$S_DIR/munge/munged.pid" \
		--seed-file="$S_DIR/munge/munged.seed" --log-file="$S_DIR/munge/munged.log" \
		> "$S_DIR/munged.out" 2>&1 9>&- &
	S_MUNGED_PID=$!
	wait_for 10 test -S "$S_DIR/munge/munge.sock"
}

# slurm_node_daemon NODE: that node's cgpoold (several nodes), started as
# tests/integ/lib.sh starts the test's: its own config, socket, state dir,
# pool root and log in $S_DIR/NODE
slurm_node_daemon() {
	s_nd="$S_DIR/$1"
	mkdir -p "$s_nd" || return 1
	cat > "$s_nd/cgpool.conf" <<EOC
[daemon]
socket = $s_nd/cgpool.sock
state_dir = $s_nd/state
root = $(slurm_node_root "$1")
log_level = info
$S_NODE_CONFIG
EOC
	CGPOOL_SOCKET="$s_nd/cgpool.sock" "$CGPOOLD" --config "$s_nd/cgpool.conf" >> "$s_nd/daemon.log" 2>&1 9>&- &
	S_NODE_DAEMON_PIDS="$S_NODE_DAEMON_PIDS $!"
	s_dp=$!
	s_i=0
	while ! nctl "$1" status > /dev/null 2>&1; do
		s_i=$((s_i + 1))
		if [ $s_i -gt 100 ] || ! kill -0 "$s_dp" 2>/dev/null; then
			cat "$s_nd/daemon.log"
			return 1
		fi
		sleep 0.1
	done
}

# slurm_node_daemons_stop: stop the nodes' cgpoold and remove their pool
# roots (in every hierarchy, deepest first, killing what still runs there)
slurm_node_daemons_stop() {
	for s_p in $S_NODE_DAEMON_PIDS; do kill "$s_p" 2>/dev/null; done
	for s_p in $S_NODE_DAEMON_PIDS; do wait "$s_p" 2>/dev/null; done
	S_NODE_DAEMON_PIDS=
	[ "$S_NODES" -gt 1 ] || return 0
	for s_n in $(slurm_node_names); do
		s_r=$(slurm_node_root "$s_n")
		for s_mnt in $(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts); do
			slurm_rm_cgroup "$s_mnt$s_r"
		done
	done
	return 0
}

# slurm_start_slurmd: a slurmd per node, each in a private mount namespace
# whose CgroupMountpoint holds bind mounts of this test's Slurm cgroups, with
# CGPOOL_SOCKET of its node's daemon
slurm_start_slurmd() {
	s_binds=
	for s_cd in $(slurm_cg_dirs | tr ' ' '='); do
		s_binds="$s_binds mount --bind '${s_cd#*=}' '$S_DIR/cgroup/${s_cd%%=*}' || exit 1;"
	done
	if [ "$S_NODES" -le 1 ]; then
		CGPOOL_SOCKET="$T_SOCK" unshare -m --propagation private sh -c "$s_binds exec slurmd -D -f '$S_DIR/slurm.conf'" \
			> "$S_DIR/slurmd.out" 2>&1 9>&- &
		S_SLURMD_PID=$!
		S_SLURMD_PIDS=$!
		return 0
	fi
	for s_n in $(slurm_node_names); do
		CGPOOL_SOCKET="$(slurm_node_sock "$s_n")" unshare -m --propagation private \
			sh -c "$s_binds exec slurmd -D -N '$s_n' -f '$S_DIR/slurm.conf'" \
			> "$S_DIR/slurmd-$s_n.out" 2>&1 9>&- &
		S_SLURMD_PIDS="$S_SLURMD_PIDS $!"
		[ -n "$S_SLURMD_PID" ] || S_SLURMD_PID=$!
	done
}

# slurm_wait_idle SECONDS: until every node is up and free (0), or a daemon
# is gone or the time is up (1)
slurm_wait_idle() {
	s_n=$(($1 * 10))
	while [ "$(sinfo -h -N -o %t 2>/dev/null | grep -c '^idle$')" != "$S_NODES" ]; do
		for s_p in $S_MUNGED_PID $S_CTLD_PID $S_SLURMD_PIDS; do
			kill -0 "$s_p" 2>/dev/null || { echo "slurm: pid $s_p exited" >&2; return 1; }
		done
		s_n=$((s_n - 1))
		[ $s_n -gt 0 ] || { echo "slurm: node not idle after $1 s" >&2; return 1; }
		sleep 0.1
	done
}

# slurm_start VARIANT [PLUGSTACK_LINE]: the cluster, up and idle. Skips the
# test when Slurm is missing or does not come up; with a PLUGSTACK_LINE
# (slurmd loads the plug-ins at its start, and a `required` one that fails
# to load stops it) returns 1 instead, logs printed, the cluster stopped.
slurm_start() {
	slurm_have
	S_VARIANT=$1
	case $1 in
	cgpool) S_SETUP="$S_CONF_DIR/alone" ;;
	beside) S_SETUP="$S_CONF_DIR/beside" ;;
	*) S_SETUP= ;;
	esac
	[ "$S_NODES" -le 1 ] || slurm_have_nodes
	chmod 711 "$T_DIR"
	mkdir -p "$S_DIR/state" "$S_DIR/cgroup" && chmod 755 "$S_DIR" || hard_error "mkdir $S_DIR"
	for s_n in $(slurm_node_names); do
		mkdir -p "$S_DIR/spool/$s_n" || hard_error "mkdir $S_DIR/spool/$s_n"
	done
	export SLURM_CONF="$S_DIR/slurm.conf"
	slurm_write_conf "$1" "$2" || skip "slurmd -C did not describe this node"
	slurm_cg_make || hard_error "cannot make the cgroups for Slurm below $T_OWN"
	slurm_start_munge || { cat "$S_DIR/munged.out"; skip "munged did not start"; }
	slurmctld -D -i -f "$SLURM_CONF" > "$S_DIR/slurmctld.out" 2>&1 9>&- &
	S_CTLD_PID=$!
	if [ "$S_NODES" -gt 1 ]; then
		for s_n in $(slurm_node_names); do
			slurm_node_daemon "$s_n" || { s_bad=$s_n; slurm_stop; hard_error "cgpoold of node $s_bad did not come up"; }
		done
	fi
	slurm_start_slurmd
	slurm_wait_idle 60 && return 0
	tail -n 20 "$S_DIR/slurmctld.log" "$S_DIR"/slurmd*.log "$S_DIR"/slurmd*.out
	slurm_stop
	[ -n "$2" ] && return 1
	skip "the Slurm cluster did not come up (logs above)"
}

# slurm_task_memcg: the memory cgroup (path as in /proc/self/cgroup) a task
# of a one-task job runs in
slurm_task_memcg() { srun -Q cat /proc/self/cgroup | sed -n 's/^[0-9]*:memory://p'; }

# slurm_job_cgroups: how many job_* memory cgroups Slurm has now
slurm_job_cgroups() {
	s_d="$T_MEMMNT$T_OWN/$S_CGNAME"
	[ -d "$s_d" ] || { echo 0; return 0; }
	find "$s_d" -type d -name 'job_*' | wc -l
}

# slurm_ns_pids: every process in the slurmds' mount namespaces (slurmd,
# the slurmstepd it forked and their tasks)
slurm_ns_pids() {
	s_nss=
	for s_p in $S_SLURMD_PIDS; do
		s_ns=$(readlink "/proc/$s_p/ns/mnt" 2>/dev/null) || continue
		[ "$s_ns" != "$(readlink /proc/self/ns/mnt)" ] && s_nss="$s_nss $s_ns "
	done
	[ -n "$s_nss" ] || return 0
	for s_p in /proc/[0-9]*; do
		case $s_nss in *" $(readlink "$s_p/ns/mnt" 2>/dev/null) "*) echo "${s_p#/proc/}" ;; esac
	done
}

# slurm_stop: stop the daemons (munged, slurmctld, every slurmd, the nodes'
# cgpoold) and what they left, remove their cgroups
slurm_stop() {
	[ -n "$S_SLURMD_PIDS$S_CTLD_PID$S_MUNGED_PID$S_NODE_DAEMON_PIDS" ] || return 0
	s_left=$(slurm_ns_pids)
	for s_p in $S_SLURMD_PIDS $S_CTLD_PID; do kill "$s_p" 2>/dev/null; done
	for s_p in $S_SLURMD_PIDS $S_CTLD_PID; do wait "$s_p" 2>/dev/null; done
	# shellcheck disable=SC2086
	[ -n "$s_left" ] && kill -9 $s_left 2>/dev/null
	if [ -n "$S_MUNGED_PID" ]; then
		kill "$S_MUNGED_PID" 2>/dev/null
		wait "$S_MUNGED_PID" 2>/dev/null
	fi
	S_SLURMD_PID=''
	S_SLURMD_PIDS=''
	S_CTLD_PID=''
	S_MUNGED_PID=''
	slurm_node_daemons_stop
	slurm_cg_remove
	[ -n "$T_KEEP" ] || rm -rf "$S_DIR"
}
trap 'slurm_stop; cleanup' EXIT
trap 'exit 99' INT TERM HUP PIPE

# slurm_jobs N [SRUN_ARGS...]: N short jobs one after another, each
# appending 4 KiB of a file to $T_DIR/jobs-VARIANT.log (a log per variant:
# truncating one would free the page cache that keeps the groups of earlier
# jobs dying); the time of each (submit to end, ms) goes to $T_DIR/jobs.ms.
# Fails on the first job that fails.
slurm_jobs() {
	s_n=$1; shift
	s_log="$T_DIR/jobs-$S_VARIANT.log"
	[ -f "$T_DIR/4k" ] || dd if=/dev/urandom of="$T_DIR/4k" bs=4096 count=1 2>/dev/null
	: > "$T_DIR/jobs.ms"
	s_i=0
	while [ $s_i -lt "$s_n" ]; do
		s_t0=$(date +%s%N)
		if ! srun -Q -N1 -n1 "$@" dd if="$T_DIR/4k" of="$s_log" bs=4096 \
			oflag=append conv=notrunc status=none 2> "$T_DIR/job.err"; then
			echo "slurm_jobs: job $s_i failed:" >&2
			cat "$T_DIR/job.err" >&2
			return 1
		fi
		echo $(( ($(date +%s%N) - s_t0) / 1000000 )) >> "$T_DIR/jobs.ms"
		s_i=$((s_i + 1))
	done
}

# slurm_pct FILE P: the P-th percentile (nearest rank) of the numbers in
# FILE, one a line (P = 50: the median, 100: the largest)
slurm_pct() {
	sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR) { r = int((NR * p + 99) / 100); print v[r < 1 ? 1 : r] } }'
}
