/* task_cgpool.c - the Slurm task plug-in task/cgpool: makes Slurm record a
 * step whose tasks cgpool's slot OOM-killed as OUT_OF_MEMORY, as its own
 * task/cgroup does; on 22.05 freezes the job's slots while Slurm suspends
 * it; on 26.05 makes the job's slots' memory.max follow a running job's
 * memory changed through Slurm.
 *
 * The SPANK plug-in cgpool.so (same slurmstepd) reads the slot's oom_kill
 * count when a task exits (slurm_spank_task_exit, which slurmstepd calls
 * right before task_p_post_term) and, when it rose during the step, prints
 * Slurm's "Detected N oom-kill event(s)" line and sets CGPOOL_SLURM_OOM in
 * slurmstepd's environment. task_p_post_term returning ENOMEM is how a task
 * plug-in tells slurmstepd that a task met the OOM killer: the step's and the
 * batch job's return code become SIG_OOM, the job's state OUT_OF_MEMORY.
 *
 * scontrol suspend (22.05): slurmd calls task_p_slurmd_suspend_job before it
 * stops the job's steps (SIGSTOP to the processes they track), and
 * task_p_slurmd_resume_job after it lets them go on: the plug-in freezes,
 * then thaws, every process in the job's slots (cgpoold's Freeze of job
 * "slurm:<id>"), daemonized ones too, which no tracking of Slurm's reaches
 * without cgroups. 24.11 took these hooks away (slurm_release.h).
 *
 * A running job's memory (26.05): slurmstepd calls task_p_update_mem_limit
 * with the job's and the step's new memory on this node (MB); the plug-in
 * sets the memory.max of every slot of the job ("slurm:<id>", cgpoold's Limit)
 * to the job's. The job's id comes from the SPANK plug-in of the same
 * slurmstepd (CGPOOL_SLURM_JOB in slurmstepd's environment).
 *
 * The daemon's socket is $CGPOOL_SOCKET in slurmd's environment, else the
 * default. A failure is logged in slurmd's log, and Slurm goes on as it does
 * without the plug-in.
 *
 * Every other hook does nothing, so this plug-in goes beside task/affinity
 * (TaskPlugin=task/affinity,task/cgpool) or task/cgroup. Each plug-in
 * declares exactly the hooks of the release it is built for. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "cgpool.h"
#include "slurm_release.h"
#include "spank_key.h"

#define EXPORT __attribute__((visibility("default")))

/* the hooks the release's task plug-in interface looks up (slurm_release.h) */
int init(void);
int fini(void);
int task_p_slurmd_batch_request(void *req);
int task_p_slurmd_launch_request(void *req, uint32_t node_id, char **err_msg);
int task_p_pre_setuid(void *step);
int task_p_pre_launch(void *step);
int task_p_post_step(void *step);
int task_p_add_pid(pid_t pid);
int task_p_post_term(void *step, void *task);
#if SLURM_TASK_SUSPEND_HOOKS
int task_p_slurmd_suspend_job(uint32_t job_id);
int task_p_slurmd_resume_job(uint32_t job_id);
#endif
#if SLURM_TASK_AFFINITY_HOOKS
int task_p_pre_set_affinity(void *step, uint32_t node_tid);
int task_p_set_affinity(void *step, uint32_t node_tid);
int task_p_post_set_affinity(void *step, uint32_t node_tid);
#endif
#if SLURM_TASK_PRE_LAUNCH_PRIV
int task_p_pre_launch_priv(void *step, uint32_t node_tid, uint32_t global_tid);
#endif
#if SLURM_TASK_UPDATE_MEM_LIMIT
int task_p_update_mem_limit(void *step, uint64_t new_job_mem, uint64_t new_step_mem);
#endif

EXPORT const char plugin_name[] = "task cgpool: OUT_OF_MEMORY, suspend and memory changes for jobs in cgpool slots";
EXPORT const char plugin_type[] = "task/cgpool";
EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

EXPORT int init(void) { return 0; }
EXPORT int fini(void) { return 0; }

/* slurmd */
EXPORT int task_p_slurmd_batch_request(void *req) { return 0; }
EXPORT int task_p_slurmd_launch_request(void *req, uint32_t node_id, char **err_msg) { return 0; }
#if SLURM_TASK_SUSPEND_HOOKS
/* freeze or thaw the job's slots on this node */
static int freeze_job(uint32_t job_id, bool frozen)
{
	char job[32];
	const char *msg = NULL;
	struct cgpool *c = NULL;
	size_t n = 0;
	int r;

	snprintf(job, sizeof(job), "slurm:%u", job_id);
	r = cgpool_connect_timeout(NULL, SPANK_DEFAULT_TIMEOUT_MS, &c);
	if (r == 0)
		r = cgpool_freeze_job(c, job, frozen, &n);
	if (r < 0) {
		if (r == -EREMOTEIO)
			cgpool_last_error(c, NULL, &msg);
		slurm_error("task/cgpool: job %u: its slots not %s: %s", job_id, frozen ? "frozen" : "thawed",
			    msg ? msg : strerror(-r));
	} else if (n)
		slurm_info("task/cgpool: job %u: %zu slot(s) %s", job_id, n, frozen ? "frozen" : "thawed");
	cgpool_close(c);
	return 0; /* Slurm's own suspend goes on either way */
}

EXPORT int task_p_slurmd_suspend_job(uint32_t job_id) { return freeze_job(job_id, true); }
EXPORT int task_p_slurmd_resume_job(uint32_t job_id) { return freeze_job(job_id, false); }
#endif

/* slurmstepd */
EXPORT int task_p_pre_setuid(void *step) { return 0; }
#if SLURM_TASK_AFFINITY_HOOKS
EXPORT int task_p_pre_set_affinity(void *step, uint32_t node_tid) { return 0; }
EXPORT int task_p_set_affinity(void *step, uint32_t node_tid) { return 0; }
EXPORT int task_p_post_set_affinity(void *step, uint32_t node_tid) { return 0; }
#endif
#if SLURM_TASK_PRE_LAUNCH_PRIV
EXPORT int task_p_pre_launch_priv(void *step, uint32_t node_tid, uint32_t global_tid) { return 0; }
#endif
EXPORT int task_p_pre_launch(void *step) { return 0; }
EXPORT int task_p_post_step(void *step) { return 0; }
EXPORT int task_p_add_pid(pid_t pid) { return 0; }

#if SLURM_TASK_UPDATE_MEM_LIMIT
/* slurmstepd: the job's memory on this node is now new_job_mem MB (Slurm
 * lowers it; 0 or NO_VAL64: no limit is given). The job's slots follow.
 * A failure is the hook's: Slurm logs it and reports the change as not
 * done. */
EXPORT int task_p_update_mem_limit(void *step, uint64_t new_job_mem, uint64_t new_step_mem)
{
	const char *id = getenv("CGPOOL_SLURM_JOB"), *msg = NULL;
	char job[32], mem[32];
	struct cgpool *c = NULL;
	size_t n = 0;
	int r;

	(void)step;
	(void)new_step_mem; /* one slot per job: the job's limit is the slot's */
	if (new_job_mem == 0 || new_job_mem == NO_VAL64)
		return 0;
	if (!id || !*id) {
		slurm_error("task/cgpool: a job's memory changed to %" PRIu64 "MB, and this slurmstepd does not know "
			    "which job (no cgpool SPANK plug-in in plugstack.conf?): its slots keep their limit",
			    new_job_mem);
		return -1;
	}
	snprintf(job, sizeof(job), "slurm:%s", id);
	snprintf(mem, sizeof(mem), "%" PRIu64 "M", new_job_mem);
	r = cgpool_connect_timeout(NULL, SPANK_DEFAULT_TIMEOUT_MS, &c);
	if (r == 0)
		r = cgpool_limit_job(c, job, "memory.max", mem, &n);
	if (r < 0) {
		if (r == -EREMOTEIO)
			cgpool_last_error(c, NULL, &msg);
		slurm_error("task/cgpool: job %s: its slots' memory.max not set to %s: %s", id, mem,
			    msg ? msg : strerror(-r));
	} else
		slurm_info("task/cgpool: job %s: memory.max %s in %zu slot(s)", id, mem, n);
	cgpool_close(c);
	return r < 0 ? -1 : 0;
}
#endif

EXPORT int task_p_post_term(void *step, void *task)
{
	const char *oom = getenv("CGPOOL_SLURM_OOM");

	return oom && oom[0] == '1' ? ENOMEM : 0;
}
