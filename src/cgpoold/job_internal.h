/* job_internal.h - private to supervision: job.c (the table's actions,
 * requests) and job_load.c (jobs.json, adoption at start). */
#ifndef CGPOOL_JOB_INTERNAL_H
#define CGPOOL_JOB_INTERNAL_H

#include "job.h"
#include "job_log.h"

#include <limits.h>

#define JOBS_FILE "jobs.json"
#define JOB_OUT_FD 3 /* the read end of the stdout pipe, kept by the job */
#define JOB_ERR_FD 4 /* ... of the stderr pipe */

struct job {
	struct jobs *js;
	struct job *next;
	char key[KEY_MAX + 1];
	enum job_state state;
	pid_t pid;              /* the main process, 0 when none */
	bool ours;              /* our child: ev_child has its exit status */
	int pidfd;              /* an adopted main process: readable when it exits */
	bool restart_after_stop;
	bool forget;            /* gone from the config: dropped once stopped */
	ev_child child;
	ev_io pidfd_io, report; /* report: the spawn report pipe */
	ev_timer restart_timer, stop_timer, poll_timer;
	int64_t *starts;        /* CLOCK_MONOTONIC us of the recent starts, oldest first */
	unsigned nstarts;
	unsigned long long restarts;
	int64_t next_restart_us;
	struct joblog *out, *err;
	int out_fdno, err_fdno; /* in the main process: JOB_OUT_FD/JOB_ERR_FD, or -1 */
	int exit_status, exit_signal; /* for JOB_ACT_RECORD_EXIT */
	bool exit_unsupervised;
};

struct jobs {
	struct ev_loop *loop;
	struct pool *pool;
	const struct conf *const *conf;
	struct job *list;
	ev_timer drop_timer; /* frees forgotten jobs outside their own callbacks */
	ev_prepare save;     /* jobs.json is written before the loop waits */
	char *saved;         /* what jobs.json holds */
	char path[PATH_MAX]; /* <state_dir>/jobs.json */
};

/* job.c */
const struct conf_job *job_conf(const struct job *j); /* NULL: not (any more) a supervised job */
struct job *job_find(struct jobs *js, const char *key);
struct job *job_new(struct jobs *js, const char *key);
void job_event(struct job *j, enum job_event ev);
/* the main process ended: status -1 unknown, sig 0 none */
/* read fd (a pipe's read end, taken over) into the log as the job's stream */
void job_output(struct job *j, int fd, struct joblog **l, const char *stream);
void job_main_exited(struct job *j, int status, int sig, bool unsupervised);

/* job_load.c */
void jobs_save(struct jobs *js);  /* jobs.json before the loop waits */
void jobs_write(struct jobs *js); /* now */
void jobs_save_cb(struct ev_loop *loop, ev_prepare *w, int revents);

#endif
