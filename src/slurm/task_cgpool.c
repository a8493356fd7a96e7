/* task_cgpool.c - the Slurm task plug-in task/cgpool: makes Slurm record a
 * step whose tasks cgpool's slot OOM-killed as OUT_OF_MEMORY, as its own
 * task/cgroup does.
 *
 * The SPANK plug-in cgpool.so (same slurmstepd) reads the slot's oom_kill
 * count when a task exits (slurm_spank_task_exit, which slurmstepd calls
 * right before task_p_post_term) and, when it rose during the step, prints
 * Slurm's "Detected N oom-kill event(s)" line and sets CGPOOL_SLURM_OOM in
 * slurmstepd's environment. task_p_post_term returning ENOMEM is how a task
 * plug-in tells slurmstepd that a task met the OOM killer: the step's and the
 * batch job's return code become SIG_OOM, the job's state OUT_OF_MEMORY.
 * Every other hook does nothing, so this plug-in goes beside task/affinity
 * (TaskPlugin=task/affinity,task/cgpool) or task/cgroup. Slurm loads a task
 * plug-in only when it was built for its exact version. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include <slurm/slurm_version.h>

#define EXPORT __attribute__((visibility("default")))

/* the hooks Slurm's task plug-in interface looks up (src/slurmd/common/task_plugin.c) */
int init(void);
int fini(void);
int task_p_slurmd_batch_request(void *req);
int task_p_slurmd_launch_request(void *req, uint32_t node_id, char **err_msg);
int task_p_slurmd_suspend_job(uint32_t job_id);
int task_p_slurmd_resume_job(uint32_t job_id);
int task_p_pre_setuid(void *step);
int task_p_pre_set_affinity(void *step, uint32_t node_tid);
int task_p_set_affinity(void *step, uint32_t node_tid);
int task_p_post_set_affinity(void *step, uint32_t node_tid);
int task_p_pre_launch(void *step);
int task_p_post_step(void *step);
int task_p_add_pid(pid_t pid);
int task_p_post_term(void *step, void *task);

EXPORT const char plugin_name[] = "task cgpool: OUT_OF_MEMORY for jobs in cgpool slots";
EXPORT const char plugin_type[] = "task/cgpool";
EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

EXPORT int init(void) { return 0; }
EXPORT int fini(void) { return 0; }

/* slurmd */
EXPORT int task_p_slurmd_batch_request(void *req) { return 0; }
EXPORT int task_p_slurmd_launch_request(void *req, uint32_t node_id, char **err_msg) { return 0; }
EXPORT int task_p_slurmd_suspend_job(uint32_t job_id) { return 0; }
EXPORT int task_p_slurmd_resume_job(uint32_t job_id) { return 0; }

/* slurmstepd */
EXPORT int task_p_pre_setuid(void *step) { return 0; }
EXPORT int task_p_pre_set_affinity(void *step, uint32_t node_tid) { return 0; }
EXPORT int task_p_set_affinity(void *step, uint32_t node_tid) { return 0; }
EXPORT int task_p_post_set_affinity(void *step, uint32_t node_tid) { return 0; }
EXPORT int task_p_pre_launch(void *step) { return 0; }
EXPORT int task_p_post_step(void *step) { return 0; }
EXPORT int task_p_add_pid(pid_t pid) { return 0; }

EXPORT int task_p_post_term(void *step, void *task)
{
	const char *oom = getenv("CGPOOL_SLURM_OOM");

	return oom && oom[0] == '1' ? ENOMEM : 0;
}
