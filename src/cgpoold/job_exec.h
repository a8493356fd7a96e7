/* job_exec.h - what a supervised job's process gets, resolved before the
 * fork: program, arguments, environment, user, groups, directory, output. */
#ifndef CGPOOL_JOB_EXEC_H
#define CGPOOL_JOB_EXEC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conf.h"
#include "job_spawn.h"

struct job_exec {
	/* the process to start, as spawn_start takes it: its program, argv,
	 * environment, directory, groups and pipes point into the rest; ids
	 * and descriptors are its own. keep[] holds the journal pipes' read
	 * ends (the job keeps them as fds 3 and 4); the caller adds where the
	 * child is placed (place, ud, cgroup_fd). */
	struct spawn sp;
	char **argv;             /* argv_split of exec */
	char path[PATH_MAX];     /* the program, absolute */
	char **envp;             /* NULL-terminated, one entry per name */
	size_t nenv;
	char cwd[PATH_MAX];
	gid_t *groups;
	bool own_fd[3];          /* sp.fds[i] was opened here and is closed by job_exec_free */
	int out_read, err_read;  /* read ends of the journal pipes, -1: none */
};

/* Resolve everything for the job of key; on failure err says what failed
 * and everything is released. The environment: PATH, and HOME, USER,
 * LOGNAME and SHELL with user =, CGPOOL_KEY, then environment = (a later
 * name wins). */
int job_exec_prepare(const struct conf_job *cj, const char *key, struct job_exec *x, char *err, size_t errlen);
/* Release what prepare made; the read ends of the pipes are left (the caller
 * took them or closes them). */
void job_exec_free(struct job_exec *x);

#endif
