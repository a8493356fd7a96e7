/* manager_features.c - the Probe reply's account of the kernel: which of
 * the interfaces cgpool uses the running kernel has, and for each one it
 * lacks, what cgpool does instead. The sentences say what the code does:
 * change them with it. */
#include "config.h"

#include "manager_features.h"

#include <stdbool.h>

#include "varlink.h"

void manager_features_json(const struct cg_info *info, json_t **features, json_t **fallbacks)
{
	const struct cg_features *f = &info->features;
	bool peer_pidfd, pidfd_open, v2 = info->memory_v2;
	json_t *fb = json_object();

	vl_kernel_peer(&peer_pidfd, &pidfd_open);
	*features = json_pack("{s:b, s:b, s:b, s:b, s:b, s:b, s:b, s:b}", "memory_reclaim", f->memory_reclaim,
			      "memory_peak_reset", f->memory_peak_reset, "cgroup_kill", f->cgroup_kill,
			      "clone_into_cgroup", f->clone_into_cgroup, "dying_subsys_stat", f->dying_subsys_stat,
			      "cgroup_events", info->tracking, "peer_pidfd", peer_pidfd, "pidfd_open", pidfd_open);
	if (!f->cgroup_kill)
		json_object_set_new(fb, "cgroup_kill",
				    json_string(info->tracking
							? "no cgroup.kill (Linux 5.14+): a slot is stopped by freezing it "
							  "(cgroup.freeze), sending SIGKILL to each of its processes and "
							  "thawing it, in rounds until it is empty"
							: "no cgroup2 hierarchy, so no cgroup.kill (a cgroup2 file, Linux "
							  "5.14+): a slot is stopped by SIGKILL to each of its processes, in "
							  "rounds until it is empty"));
	if (v2 && !f->memory_reclaim)
		json_object_set_new(fb, "memory_reclaim",
				    json_string("no memory.reclaim (Linux 5.19+): scrub and drain lower the slot's "
						"memory.high below its usage for one write, which makes the kernel "
						"reclaim down to it, and put it back"));
	else if (!v2)
		json_object_set_new(fb, "memory_reclaim",
				    json_string("memory on cgroup v1: scrub and drain reclaim with memory.force_empty, "
						"which empties the slot whole in one write"));
	if (v2 && !f->memory_peak_reset)
		json_object_set_new(fb, "memory_peak_reset",
				    json_string(f->memory_peak
							? "memory.peak cannot be reset for a run (Linux 6.12+): a run's "
							  "memory_peak is the highest memory.current read at its start, every "
							  "second while it runs (less often with over 1,024 slots running) and "
							  "at its end (memory_peak_sampled: true); a spike between two "
							  "readings is missed"
							: "no memory.peak (Linux 5.19+): a run's memory_peak is the highest "
							  "memory.current read at its start, every second while it runs (less "
							  "often with over 1,024 slots running) and at its end "
							  "(memory_peak_sampled: true); a spike between two readings is "
							  "missed"));
	if (!f->clone_into_cgroup)
		json_object_set_new(fb, "clone_into_cgroup",
				    json_string(v2 ? "no clone3(CLONE_INTO_CGROUP) (Linux 5.7+): a job's process is "
						     "forked, held until it is moved into its slot, and only then runs "
						     "its program"
						   : "memory on cgroup v1, where clone3(CLONE_INTO_CGROUP) cannot place "
						     "a process: a job's process is forked, held until it is moved into "
						     "its slot, and only then runs its program"));
	if (!f->dying_subsys_stat)
		json_object_set_new(fb, "dying_subsys_stat",
				    json_string(v2 ? "no nr_dying_subsys_memory (Linux 6.12+): dying memcgs are counted "
						     "by nr_dying_descendants, which counts dying cgroups of every "
						     "controller"
						   : "memory on cgroup v1: dying memcgs are /proc/cgroups' memory count "
						     "less the live memory cgroups, for the whole machine"));
	if (!info->tracking)
		json_object_set_new(fb, "cgroup_events",
				    json_string("no cgroup2 hierarchy: the end of a run is found by reading the "
						"running and idle slots' cgroup.procs once a second, and Freeze "
						"answers NotSupported"));
	if (!peer_pidfd)
		json_object_set_new(fb, "peer_pidfd",
				    json_string(pidfd_open
							? "no SO_PEERPIDFD (Linux 6.5+): a caller's pidfd is opened from its "
							  "pid when it connects, and a pid that names another user's "
							  "process by then is refused"
							: "no SO_PEERPIDFD (Linux 6.5+) nor pidfd_open: a caller is known by "
							  "its pid alone"));
	if (!pidfd_open)
		json_object_set_new(fb, "pidfd_open",
				    json_string("no pidfd_open (Linux 5.3+): the processes that hold a job are "
						"looked at every second (/proc/PID/stat, with their start time)"));
	*fallbacks = fb;
}
