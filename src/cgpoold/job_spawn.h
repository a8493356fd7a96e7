/* job_spawn.h - starting a job's process inside its slot */
#ifndef CGPOOL_JOB_SPAWN_H
#define CGPOOL_JOB_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Everything the child needs, resolved by the caller beforehand: between
 * fork and exec the child only makes system calls (no allocation, no user
 * or group database lookups), since the daemon has other threads. */
struct spawn {
	const char *path;    /* absolute path of the program */
	char *const *argv;   /* NULL-terminated */
	char *const *envp;   /* NULL-terminated */
	const char *cwd;     /* NULL: / */
	bool set_ids;        /* switch to uid/gid/groups (the daemon runs as root) */
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* supplementary groups */
	size_t ngroups;
	int fds[3];          /* the child's stdin, stdout, stderr; -1: /dev/null */
	int keep[2];         /* >= 0: given to the child as fds 3 and 4 (a job keeps
			      * its pipes' read ends, so they outlive the daemon) */
	/* >= 0: a cgroup v2 directory the child is born in (clone3 with
	 * CLONE_INTO_CGROUP) */
	int cgroup_fd;
	/* non-NULL: called with the child's pid while the child waits before
	 * running anything of the job; it returns 0 once the child is in its
	 * cgroup everywhere, else -errno, and then the child is killed unrun */
	int (*place)(pid_t pid, void *ud);
	void *ud;
};

/* What the child failed at, for the caller's message. */
enum spawn_stage {
	SPAWN_OK,
	SPAWN_HOLD,   /* the daemon never released it (placement failed) */
	SPAWN_SESSION,
	SPAWN_STDIO,
	SPAWN_GROUPS,
	SPAWN_GID,
	SPAWN_UID,
	SPAWN_CHDIR,
	SPAWN_EXEC,
};

const char *spawn_stage_name(enum spawn_stage st);

/* Start the child. On success *pid is its pid, *pidfd (when pidfd is not
 * NULL) a pidfd for it (-1 where the kernel has none), and *errfd a descriptor that becomes readable
 * once the child has called execve (end of file) or failed before it (see
 * spawn_outcome); the caller closes both. -errno when the process could not
 * be created or placed (then no child is left behind). */
int spawn_start(const struct spawn *sp, pid_t *pid, int *pidfd, int *errfd);

/* Read the child's report from errfd once readable: 0 when it reached
 * execve (the program runs), -EAGAIN when it has not told yet, else
 * -errno of what failed, with the stage in *stage. */
int spawn_outcome(int errfd, enum spawn_stage *stage);

#endif
