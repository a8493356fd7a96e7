# ids.sh - sourced by a job under test: where is this process's memory cgroup
if grep -q '^[0-9]*:memory:' /proc/self/cgroup; then
	own_memcg_dir() {
		echo "$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)"
	}
else
	own_memcg_dir() {
		echo "$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)$(sed -n 's/^0:://p' /proc/self/cgroup)"
	}
fi
