/* task_cgpool.c - the Slurm task plug-in task/cgpool: makes Slurm record a
 * step whose tasks cgpool's slot OOM-killed as OUT_OF_MEMORY, as its own
 * task/cgroup does, and freezes the job's slots while Slurm suspends it.
 *
 * The SPANK plug-in cgpool.so (same slurmstepd) reads the slot's oom_kill
 * count when a task exits (slurm_spank_task_exit, which slurmstepd calls
 * right before task_p_post_term) and, when it rose during the step, prints
 * Slurm's "Detected N oom-kill event(s)" line and sets CGPOOL_SLURM_OOM in
 * slurmstepd's environment. task_p_post_term returning ENOMEM is how a task
 * plug-in tells slurmstepd that a task met the OOM killer: the step's and the
 * batch job's return code become SIG_OOM, the job's state OUT_OF_MEMORY.
 *
 * scontrol suspend: slurmd calls task_p_slurmd_suspend_job before it stops
 * the job's steps (SIGSTOP to the processes they track), and
 * task_p_slurmd_resume_job after it lets them go on: the plug-in freezes,
 * then thaws, every process in the job's slots (cgpoold's Freeze of job
 * "slurm:<id>"), daemonized ones too, which no tracking of Slurm's reaches
 * without cgroups. The daemon's socket is $CGPOOL_SOCKET in slurmd's
 * environment, else the default. A failure is logged in slurmd's log and
 * the suspend goes on as Slurm does it.
 *
 * Every other hook does nothing, so this plug-in goes beside task/affinity
 * (TaskPlugin=task/affinity,task/cgpool) or task/cgroup. Slurm loads a task
 * plug-in only when it was built for its exact version. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <slurm/slurm_version.h>
#include <slurm/spank.h>

#include "cgpool.h"
#include "spank_key.h"

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

EXPORT const char plugin_name[] = "task cgpool: OUT_OF_MEMORY and suspend for jobs in cgpool slots";
EXPORT const char plugin_type[] = "task/cgpool";
EXPORT const uint32_t plugin_version = SLURM_VERSION_NUMBER;

EXPORT int init(void) { return 0; }
EXPORT int fini(void) { return 0; }

/* slurmd */
EXPORT int task_p_slurmd_batch_request(void *req) { return 0; }
EXPORT int task_p_slurmd_launch_request(void *req, uint32_t node_id, char **err_msg) { return 0; }
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
