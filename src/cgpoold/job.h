/* job.h - supervised jobs: the [job KEY] sections with exec =.
 *
 * cgpoold starts each job's main process in the key's slot (held before it
 * runs anything until it is there), sees it exit, restarts it by its policy
 * (restart, restart_sec, start_limit), stops it (stop_signal, then every
 * process of the slot after stop_timeout) and, across its own restarts,
 * adopts the jobs still running (<state_dir>/jobs.json and the slot's
 * cgroup.procs). The job's state machine is the table in slot.c. Jobs keep
 * running when the daemon stops. */
#ifndef CGPOOL_JOB_H
#define CGPOOL_JOB_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "pool.h"
#include "slot.h"

struct jobs;

/* conf is read at each start, so a reload takes effect at the next start */
int jobs_new(struct ev_loop *loop, struct pool *pool, const struct conf *const *conf, struct jobs **out);
/* Leaves the jobs running and their state saved. */
void jobs_free(struct jobs *js);
/* After the pool is loaded: adopt what runs, start the autostart jobs that
 * have no saved state (and restart by policy those that died meanwhile). */
void jobs_start(struct jobs *js);
/* The config was replaced: jobs no longer in it are stopped and forgotten,
 * new ones with autostart start. */
void jobs_reload(struct jobs *js);

/* -ENOENT: key is not a supervised job. run: start it unless it runs
 * (clears failed); stop: stop it; restart: stop, then start once empty. */
int jobs_run(struct jobs *js, const char *key);
int jobs_stop(struct jobs *js, const char *key);
int jobs_restart(struct jobs *js, const char *key);

/* fn for every supervised job's key, in no particular order */
void jobs_foreach(struct jobs *js, void (*fn)(const char *key, void *ud), void *ud);

/* What Status and List show of a supervised key. */
struct job_info {
	enum job_state state;
	pid_t main_pid;              /* 0 when none */
	unsigned long long restarts; /* starts by the restart policy */
	int64_t next_restart_us;     /* CLOCK_REALTIME, 0 when none is due */
};
/* -ENOENT when key is not a supervised job */
int jobs_info(struct jobs *js, const char *key, struct job_info *out);

#endif
