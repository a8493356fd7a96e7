/* spank_key.h - what the Slurm plug-in decides without Slurm: its plugstack.conf
 * arguments, the key a job's tasks go into, and the slot a task should be in.
 * No Slurm header here, so the unit tests need no Slurm. */
#ifndef CGPOOL_SPANK_KEY_H
#define CGPOOL_SPANK_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPANK_KEY_MAX 128         /* the daemon's key length limit */
#define SPANK_NAME_MAX 64         /* --cgpool-key NAME */
#define SPANK_DEFAULT_PATTERN "slurm.%j"
#define SPANK_DEFAULT_TIMEOUT_MS 5000

struct spank_args {
	char socket[108];         /* socket=PATH; "" for the library's default */
	char pattern[SPANK_KEY_MAX + 1]; /* key=PATTERN */
	char class_name[64];      /* class=NAME; "" for the daemon's choice */
	bool release;             /* release=yes|no: Release the key when a step ends */
	unsigned timeout_ms;      /* timeout=MS: connect and every call */
	int swap_pct;             /* swap=PERCENT: the job's swap, of its memory; -1 none set */
	bool cpuset;              /* cpuset=yes|no: the slot's cpuset.cpus are the job's CPUs */
	bool devices;             /* devices=yes|no: the slot denies the node's GPUs that are not the job's */
};

/* One GRES device file of the node, as slurmstepd's gres plug-ins have it */
struct spank_dev {
	int index;      /* the GRES index: what SLURM_JOB_GPUS and SLURM_STEP_GPUS list */
	char type;      /* 'c' or 'b' */
	uint32_t major, minor; /* minor SPANK_DEV_ANY: every minor */
};
#define SPANK_DEV_ANY 0xfffffffeU /* Slurm's NO_VAL */

/* The devices.deny list of the devices in devs whose index is not in
 * allowed (Slurm's comma list of GRES indices, "0,2"; "" or NULL: none),
 * consecutive minors merged ("c 195:1-3,c 195:5"), into out: "none" when
 * the job may open them all (a later step of it must not deny them), ""
 * when devs is empty. -EINVAL when allowed is no such list, -ENOSPC when out is too
 * short. */
/* does Slurm's comma list (GresTypes: "gpu,mps") name name? NULL: none */
bool spank_list_has(const char *list, const char *name);
int spank_devices_deny(const struct spank_dev *devs, size_t n, const char *allowed, char *out, size_t len);

/* What slurmctld signed in the job's credential: nothing a user's
 * environment can set (for srun steps slurmstepd takes the array ids from
 * the user's environment, so they are no part of a key). */
struct spank_job {
	uint32_t job_id, uid;
};

/* The job's identity for the daemon ("slurm:<job id>:<uid>"): a key is one
 * job's at a time. */
int spank_job_name(const struct spank_job *job, char *out, size_t len);

/* plugstack.conf arguments: socket=, key=, class=, release=, timeout=, swap=, cpuset=.
 * -EINVAL with err naming the bad argument; a key= pattern without %j (it
 * could not tell two jobs apart) or with %A, %a or %J (array ids, which a
 * user's environment sets for srun steps) is refused, and so is one whose
 * keys two jobs could share (a %j or %u followed by a digit or another
 * one) or a job and a key a user may choose (a named key, slurm.<uid>.NAME,
 * or one of cgpoold's default user_keys, user.<uid>.*), with an example. */
int spank_args_parse(int ac, char *const *av, struct spank_args *out, char *err, size_t errlen);

/* --cgpool-key NAME: 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'.
 * -EINVAL with *why. */
int spank_name_check(const char *name, const char **why);

/* The job's key: "slurm.<uid>.<name>" for a named job, else the pattern with
 * %j (job id), %u (uid) and %% replaced. -ENAMETOOLONG or -EINVAL (unknown
 * %x). */
int spank_key_build(const char *pattern, const char *name, const struct spank_job *job, char *out, size_t len);

/* Is the process whose /proc/PID/cgroup text is cgroups in the slot whose
 * memory directory is slot_path? Its memory cgroup (the v1 memory line, or
 * the v2 "0::" line) must be slot_path's tail below the cgroup mount. */
bool spank_in_slot(const char *cgroups, const char *slot_path);

/* Slurm settings that put a job's tasks in memory cgroups of Slurm's (each
 * a dying memcg at the step's end, and a move that cgpool's slot undoes):
 * task/cgroup with ConstrainRAMSpace or ConstrainSwapSpace, and
 * jobacct_gather/cgroup. slurm_conf and cgroup_conf are the files' texts
 * (NULL: not read). 1 with why saying what to change, 0 none. */
int spank_conf_conflict(const char *slurm_conf, const char *cgroup_conf, char *why, size_t len);

#endif
