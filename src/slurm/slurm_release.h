/* slurm_release.h - what differs, for cgpool's plug-ins, between the Slurm
 * releases they are built for. Every difference between releases that the
 * plug-ins see is here, and nowhere else in src/slurm/.
 *
 * Slurm loads a task plug-in only when its plugin_version is the exact
 * SLURM_VERSION_NUMBER of the slurmd and slurmstepd that load it, and only
 * when it has every hook the release's task interface asks for
 * (src/interfaces/task.c from 23.02, src/slurmd/common/task_plugin.c
 * before). A SPANK plug-in loads for its release's major.minor.
 *
 * The releases known here, each the one a Debian release ships and the
 * tests boot:
 *
 *   22.05 (Debian 12)  the task hooks pre_set_affinity, set_affinity and
 *                      post_set_affinity; slurmd_suspend_job and
 *                      slurmd_resume_job (the slots are frozen on scontrol
 *                      suspend); List and ListIterator.
 *   24.11 (Debian 13)  pre_launch_priv(step, node_tid, global_tid) instead of
 *                      the three affinity hooks (23.02, global_tid 24.05); no
 *                      suspend hooks (24.11): slurmstepd stops a suspended
 *                      job's processes with SIGTSTP then SIGSTOP through its
 *                      proctrack plug-in, and no task plug-in is told; list_t
 *                      and list_itr_t (24.05).
 *   26.05 (Debian unstable)
 *                      update_mem_limit(step, job_mb, step_mb): a running
 *                      job's memory changed through Slurm (task/cgpool sets
 *                      the job's slots' memory.max).
 *
 * configure refuses any other release (with the reason), so this file
 * stops the build only when configure was skipped. */
#ifndef CGPOOL_SLURM_RELEASE_H
#define CGPOOL_SLURM_RELEASE_H

#include <slurm/slurm_version.h>

/* major.minor of the release the plug-ins are built against */
#define CGPOOL_SLURM_MAJOR_MINOR (SLURM_VERSION_NUMBER >> 8)
#define CGPOOL_SLURM_RELEASE(major, minor) (((major) << 8) | (minor))

#if CGPOOL_SLURM_MAJOR_MINOR == CGPOOL_SLURM_RELEASE(22, 5)
#define SLURM_TASK_AFFINITY_HOOKS 1
#define SLURM_TASK_SUSPEND_HOOKS 1
#define SLURM_TASK_PRE_LAUNCH_PRIV 0
#define SLURM_TASK_UPDATE_MEM_LIMIT 0
typedef List slurm_list_t;
typedef ListIterator slurm_list_itr_t;
#elif CGPOOL_SLURM_MAJOR_MINOR == CGPOOL_SLURM_RELEASE(24, 11)
#define SLURM_TASK_AFFINITY_HOOKS 0
#define SLURM_TASK_SUSPEND_HOOKS 0
#define SLURM_TASK_PRE_LAUNCH_PRIV 1
#define SLURM_TASK_UPDATE_MEM_LIMIT 0
typedef list_t *slurm_list_t;
typedef list_itr_t *slurm_list_itr_t;
#elif CGPOOL_SLURM_MAJOR_MINOR == CGPOOL_SLURM_RELEASE(26, 5)
#define SLURM_TASK_AFFINITY_HOOKS 0
#define SLURM_TASK_SUSPEND_HOOKS 0
#define SLURM_TASK_PRE_LAUNCH_PRIV 1
#define SLURM_TASK_UPDATE_MEM_LIMIT 1
typedef list_t *slurm_list_t;
typedef list_itr_t *slurm_list_itr_t;
#else
#error "cgpool's Slurm plug-ins know the releases 22.05, 24.11 and 26.05 (configure says why)"
#endif

#endif
