/* job.c - supervised jobs: start, watch, restart and stop the [job] sections
 * with exec =, each in its key's slot. States and transitions are the job
 * table of slot.c; this file carries out its actions. */
#include "config.h"

#include "job.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job_exec.h"
#include "job_log.h"
#include "log.h"
#include "job_spawn.h"
#include "util.h"

#define KILL_AGAIN_S 0.1 /* SIGKILL rounds until the slot is empty (no cgroup.kill) */
#define EMPTY_POLL_S 0.05 /* while stopping: is the slot empty yet */

#include "job_internal.h"

const struct conf_job *job_conf(const struct job *j)
{
	const struct conf_job *cj = conf_job_for_key(*j->js->conf, j->key);

	return cj && cj->exec ? cj : NULL;
}

struct job *job_find(struct jobs *js, const char *key)
{
	for (struct job *j = js->list; j; j = j->next)
		if (strcmp(j->key, key) == 0)
			return j;
	return NULL;
}

/* ---- the start limit */

/* false when one more start now would exceed start_limit */
static bool start_allowed(struct job *j, const struct conf_job *cj)
{
	int64_t now = now_mono_us(), since = now - (int64_t)cj->start_limit.interval_ms * 1000;
	unsigned keep = 0;

	if (!cj->start_limit.burst)
		return true;
	for (unsigned i = 0; i < j->nstarts; i++)
		if (j->starts[i] > since)
			j->starts[keep++] = j->starts[i];
	j->nstarts = keep;
	return j->nstarts < cj->start_limit.burst;
}

static int note_start(struct job *j, const struct conf_job *cj)
{
	unsigned cap = cj->start_limit.burst ? cj->start_limit.burst : 1;
	int64_t *s = realloc(j->starts, cap * sizeof(*s));

	if (!s)
		return -ENOMEM;
	j->starts = s;
	if (j->nstarts >= cap) { /* the limit was lowered by a reload */
		memmove(s, s + (j->nstarts - cap + 1), (cap - 1) * sizeof(*s));
		j->nstarts = cap - 1;
	}
	s[j->nstarts++] = now_mono_us();
	return 0;
}

/* ---- exits */

static void unwatch_main(struct job *j)
{
	if (ev_is_active(&j->child))
		ev_child_stop(j->js->loop, &j->child);
	if (ev_is_active(&j->pidfd_io))
		ev_io_stop(j->js->loop, &j->pidfd_io);
	if (j->pidfd >= 0)
		close(j->pidfd);
	j->pidfd = -1;
	j->pid = 0;
	j->ours = false;
	j->out_fdno = j->err_fdno = -1;
}

/* what the main process left in the slot goes with it (as with systemd's
 * KillMode=control-group), unless the job is being stopped anyway */
static void kill_leftovers(struct job *j)
{
	struct slot *s = pool_find(j->js->pool, j->key);
	unsigned n = 0;
	bool atomic;

	if (j->state == JOB_STOPPING || !s || cg_slot_nprocs(pool_cg(j->js->pool), s->name, &n) < 0 || n == 0)
		return;
	log_notice("job %s: main process gone, killing the %u process(es) it left in %s", j->key, n, s->name);
	cg_slot_kill(pool_cg(j->js->pool), s->name, &atomic);
}

/* Read the spawn report on j->report, log a failure, and stop watching it
 * (unless it has not come and wait is set). 0: the program runs; -EAGAIN:
 * not told yet; else what failed. */
static int take_report(struct job *j, bool wait)
{
	enum spawn_stage stage = SPAWN_OK;
	int r = spawn_outcome(j->report.fd, &stage);

	if (r == -EAGAIN && wait)
		return r;
	if (r < 0 && r != -EAGAIN)
		log_err("job %s: start failed at %s: %s", j->key, spawn_stage_name(stage), strerror(-r));
	ev_io_stop(j->js->loop, &j->report);
	close(j->report.fd);
	return r;
}

/* The spawn report of the main process that just exited, if the loop has
 * not read it yet: it is there now (a failure, or end of file). */
static void finish_report(struct job *j)
{
	if (ev_is_active(&j->report))
		take_report(j, false);
}

/* the job's slot for the log, NULL before it has one */
static const char *job_slot_name(struct job *j)
{
	struct slot *s = pool_find(j->js->pool, j->key);

	return s ? s->name : NULL;
}

void job_main_exited(struct job *j, int status, int sig, bool unsupervised)
{
	char how[64];

	finish_report(j);

	if (sig)
		snprintf(how, sizeof(how), "killed by SIG%s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
	else if (status >= 0)
		snprintf(how, sizeof(how), "exited %d", status);
	else
		snprintf(how, sizeof(how), "exited, status unknown%s", unsupervised ? " (while unsupervised)" : "");
	log_event(LOG_INFO, &(struct log_fields){ .key = j->key, .slot = job_slot_name(j), .event = LOG_EV_JOB_EXIT },
		  "job %s: main process %d %s", j->key, (int)j->pid, how);
	unwatch_main(j);
	j->exit_status = status;
	j->exit_signal = sig;
	j->exit_unsupervised = unsupervised;
	kill_leftovers(j);
	job_event(j, status == 0 && !sig ? JOB_EV_EXIT_OK : JOB_EV_EXIT_FAILED);
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct job *j = w->data;
	int st = w->rstatus;

	(void)loop;
	(void)revents;
	job_main_exited(j, WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0, false);
}

static void pidfd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	job_main_exited(w->data, -1, 0, false); /* not our child: no status to read */
}

static void report_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct job *j = w->data;
	int r = take_report(j, true);

	(void)loop;
	(void)revents;
	if (r == -EAGAIN)
		return;
	if (r == 0) {
		job_event(j, JOB_EV_SPAWNED);
		return;
	}
	j->exit_status = 127;
	j->exit_signal = 0;
	j->exit_unsupervised = false;
	job_event(j, JOB_EV_SPAWN_FAILED); /* its exit (127) comes and finds nothing to do */
}

/* ---- the timers */

static void restart_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	job_event(w->data, JOB_EV_RUN);
}

static void stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	job_event(w->data, JOB_EV_STOP_TIMEOUT);
}

static void poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job *j = w->data;
	struct slot *s = pool_find(j->js->pool, j->key);
	unsigned n = 1;

	(void)loop;
	(void)revents;
	if (!s || (cg_slot_nprocs(pool_cg(j->js->pool), s->name, &n) == 0 && n == 0))
		job_event(j, JOB_EV_EMPTY);
}

/* ---- starting the main process */

/* the child waits until it is in the slot everywhere: Attach of its pid */
static int place_in_slot(pid_t pid, void *ud)
{
	struct job *j = ud;
	struct slot *s;
	pid_t bad = 0;
	int r = pool_attach(j->js->pool, j->key, NULL, &pid, 1, &s, &bad);

	if (r < 0)
		log_err("job %s: place pid %d in its slot: %s", j->key, (int)pid, strerror(-r));
	return r;
}

static void output_closed(void *ud)
{
	struct joblog **slot = ud;

	*slot = NULL;
}

void job_output(struct job *j, int fd, struct joblog **l, const char *stream)
{
	struct slot *s = pool_find(j->js->pool, j->key);
	int r;

	if (fd < 0)
		return;
	joblog_free(*l); /* the previous run's, if a child of it still held the pipe */
	*l = NULL;
	r = joblog_new(j->js->loop, fd, j->key, s ? (unsigned long long)s->runs : 0, stream, output_closed, l, l);
	if (r < 0)
		log_warn("job %s: %s to the log: %s", j->key, stream, strerror(-r));
}

/* A restart, on a cgroup2 hierarchy with clone3: the child is born in the
 * slot's directory there (still held until pool_attach has placed it in
 * the other hierarchies and started the run). -1 for the first start of a
 * key, which has no slot yet, and where the kernel cannot. */
static int born_inside(struct job *j)
{
	struct slot *s = pool_find(j->js->pool, j->key);
	bool everywhere;
	int fd;

	if (!s || s->state == SLOT_RETIRING || cg_slot_dirfd(pool_cg(j->js->pool), s->name, &fd, &everywhere) < 0)
		return -1;
	pool_run_settle(j->js->pool, j->key); /* the last run ends before the next is born */
	return fd;
}

static int job_spawn(struct job *j, const struct conf_job *cj)
{
	struct spawn sp;
	struct job_exec x;
	char err[256] = "";
	pid_t pid;
	int errfd, r = job_exec_prepare(cj, j->key, &x, err, sizeof(err));

	if (r < 0) {
		log_err("job %s: cannot start: %s", j->key, err);
		return r;
	}
	/* the job keeps the read ends of its journal pipes (fds 3 and 4, in
	 * sp.keep), so a crash of the daemon never makes its writes fail with
	 * EPIPE; the next daemon takes them back with pidfd_getfd() */
	sp = x.sp;
	sp.place = place_in_slot;
	sp.ud = j;
	sp.cgroup_fd = born_inside(j);
	r = spawn_start(&sp, &pid, NULL, &errfd);
	if (sp.cgroup_fd >= 0) {
		close(sp.cgroup_fd);
		if (r == -ENOSYS || r == -E2BIG || r == -EINVAL || r == -EOPNOTSUPP || r == -EBUSY) {
			log_info("job %s: clone3 into the slot: %s; held until placed instead", j->key, strerror(-r));
			sp.cgroup_fd = -1;
			r = spawn_start(&sp, &pid, NULL, &errfd);
		}
	}
	job_exec_free(&x); /* the child has its copies */
	if (r < 0) {
		if (x.out_read >= 0)
			close(x.out_read);
		if (x.err_read >= 0)
			close(x.err_read);
		log_err("job %s: cannot start %s: %s", j->key, cj->exec, strerror(-r));
		return r;
	}
	finish_report(j); /* a report of an earlier start still unread: it no longer matters */
	j->pid = pid; /* our child: ev_child reports its exit with the status */
	j->ours = true;
	ev_child_set(&j->child, pid, 0);
	ev_child_start(j->js->loop, &j->child);
	ev_io_set(&j->report, errfd, EV_READ);
	ev_io_start(j->js->loop, &j->report);
	j->out_fdno = x.out_read >= 0 ? JOB_OUT_FD : -1;
	j->err_fdno = x.err_read >= 0 ? JOB_ERR_FD : -1;
	job_output(j, x.out_read, &j->out, "stdout");
	job_output(j, x.err_read, &j->err, "stderr");
	log_event(LOG_INFO, &(struct log_fields){ .key = j->key, .slot = job_slot_name(j), .event = LOG_EV_JOB_START },
		  "job %s: started pid %d: %s", j->key, (int)pid, cj->exec);
	return 0;
}

/* ---- the actions of the table */

static void act_signal(struct job *j, const struct conf_job *cj)
{
	int sig = cj ? cj->stop_signal : SIGTERM;
	double timeout = (cj ? cj->stop_timeout_ms : 10000) / 1000.;

	if (j->pid > 0 && kill(j->pid, sig) < 0 && errno != ESRCH)
		log_warn("job %s: signal %d to %d: %s", j->key, sig, (int)j->pid, strerror(errno));
	ev_timer_set(&j->stop_timer, timeout, 0.);
	ev_timer_start(j->js->loop, &j->stop_timer);
	ev_timer_set(&j->poll_timer, EMPTY_POLL_S, EMPTY_POLL_S);
	ev_timer_start(j->js->loop, &j->poll_timer);
}

static void act_kill(struct job *j)
{
	struct slot *s = pool_find(j->js->pool, j->key);
	bool atomic = false;
	int r = s ? cg_slot_kill(pool_cg(j->js->pool), s->name, &atomic) : -ENOENT;

	if (r < 0 && r != -ENOENT)
		log_warn("job %s: kill the processes of %s: %s", j->key, s->name, strerror(-r));
	else if (r == 0)
		log_notice("job %s: stop_timeout passed, %s", j->key,
			   atomic ? "cgroup.kill written" : "SIGKILL sent to every process of the slot");
	ev_timer_set(&j->stop_timer, KILL_AGAIN_S, 0.);
	ev_timer_start(j->js->loop, &j->stop_timer);
}

static void act_cancel(struct job *j)
{
	ev_timer_stop(j->js->loop, &j->restart_timer);
	ev_timer_stop(j->js->loop, &j->stop_timer);
	ev_timer_stop(j->js->loop, &j->poll_timer);
	j->next_restart_us = 0;
}

static void act_backoff(struct job *j, const struct conf_job *cj)
{
	double after = cj ? cj->restart_sec_ms / 1000. : 1.;

	j->next_restart_us = now_real_us() + (int64_t)(after * 1e6);
	if (after <= 0) { /* restart_sec = 0: in this loop pass, not the next */
		ev_feed_event(j->js->loop, &j->restart_timer, EV_TIMER);
		return;
	}
	ev_timer_set(&j->restart_timer, after, 0.);
	ev_timer_start(j->js->loop, &j->restart_timer);
}

/* returns false when the start did not happen (another event was fed) */
static bool act_spawn(struct job *j, const struct conf_job *cj, enum job_state from)
{
	int r;

	if (!cj) {
		job_event(j, JOB_EV_STOP);
		return false;
	}
	if (!start_allowed(j, cj)) {
		log_warn("job %s: more than %u starts within %llu ms: failed until run", j->key, cj->start_limit.burst,
			 (unsigned long long)cj->start_limit.interval_ms);
		job_event(j, JOB_EV_START_LIMIT);
		return false;
	}
	if (from == JOB_BACKOFF)
		j->restarts++;
	r = note_start(j, cj);
	if (r == 0)
		r = job_spawn(j, cj);
	if (r < 0) {
		j->exit_status = -1;
		j->exit_signal = 0;
		j->exit_unsupervised = false;
		job_event(j, JOB_EV_SPAWN_FAILED);
		return false;
	}
	return true;
}

static void job_do(struct job *j, enum job_state from, unsigned act)
{
	const struct conf_job *cj = job_conf(j);

	if (act & JOB_ACT_RECORD_EXIT)
		pool_record_exit(j->js->pool, j->key, j->exit_status, j->exit_signal, j->exit_unsupervised);
	if (act & JOB_ACT_CANCEL)
		act_cancel(j);
	if (act & JOB_ACT_SIGNAL)
		act_signal(j, cj);
	if (act & JOB_ACT_KILL)
		act_kill(j);
	if (act & JOB_ACT_RESET_LIMIT)
		j->nstarts = 0;
	if ((act & JOB_ACT_SPAWN) && !act_spawn(j, cj, from))
		return;
	if (act & JOB_ACT_BACKOFF)
		act_backoff(j, cj);
}

static bool policy_restarts(const struct job *j, enum job_event ev)
{
	const struct conf_job *cj = job_conf(j);

	if (!cj || j->forget)
		return false;
	switch (cj->restart) {
	case RESTART_ALWAYS:
		return true;
	case RESTART_ON_FAILURE:
		return ev == JOB_EV_EXIT_FAILED || ev == JOB_EV_SPAWN_FAILED;
	default:
		return false;
	}
}

void job_event(struct job *j, enum job_event ev)
{
	enum job_state prev = j->state, next;
	unsigned act;

	if (job_step(prev, ev, policy_restarts(j, ev), &next, &act) < 0)
		return;
	j->state = next;
	if (prev != next)
		log_info("job %s: %s -> %s on %s", j->key, job_state_name(prev), job_state_name(next),
			 job_event_name(ev));
	job_do(j, prev, act);
	if (j->state != next)
		return; /* an action fed another event, which saved and went on */
	jobs_save(j->js);
	if (next == JOB_STOPPED && j->restart_after_stop) {
		j->restart_after_stop = false;
		job_event(j, JOB_EV_RUN);
	} else if ((next == JOB_STOPPED || next == JOB_FAILED) && j->forget) {
		ev_feed_event(j->js->loop, &j->js->drop_timer, EV_TIMER);
	}
}

/* ---- the jobs of the config */

static void drop_cb(struct ev_loop *loop, ev_timer *w, int revents);

struct job *job_new(struct jobs *js, const char *key)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->js = js;
	snprintf(j->key, sizeof(j->key), "%s", key);
	j->state = JOB_STOPPED;
	j->pidfd = -1;
	j->out_fdno = j->err_fdno = -1;
	ev_child_init(&j->child, child_cb, 0, 0);
	ev_init(&j->pidfd_io, pidfd_cb);
	ev_init(&j->report, report_cb);
	ev_init(&j->restart_timer, restart_cb);
	ev_init(&j->stop_timer, stop_cb);
	ev_init(&j->poll_timer, poll_cb);
	j->child.data = j->pidfd_io.data = j->report.data = j;
	j->restart_timer.data = j->stop_timer.data = j->poll_timer.data = j;
	j->next = js->list;
	js->list = j;
	return j;
}

/* stop watching; the processes go on */
static void job_release(struct job *j)
{
	struct ev_loop *loop = j->js->loop;

	if (ev_is_active(&j->child))
		ev_child_stop(loop, &j->child);
	if (ev_is_active(&j->pidfd_io))
		ev_io_stop(loop, &j->pidfd_io);
	if (j->pidfd >= 0)
		close(j->pidfd);
	if (ev_is_active(&j->report)) {
		ev_io_stop(loop, &j->report);
		close(j->report.fd);
	}
	act_cancel(j);
	joblog_free(j->out);
	joblog_free(j->err);
	free(j->starts);
	free(j);
}

static void drop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct jobs *js = w->data;

	(void)loop;
	(void)revents;
	for (struct job **pp = &js->list; *pp;) {
		struct job *j = *pp;
		if (j->forget && (j->state == JOB_STOPPED || j->state == JOB_FAILED)) {
			*pp = j->next;
			log_info("job %s: removed from the config, forgotten", j->key);
			job_release(j);
		} else {
			pp = &j->next;
		}
	}
	jobs_save(js);
}

int jobs_new(struct ev_loop *loop, struct pool *pool, const struct conf *const *conf, struct jobs **out)
{
	struct jobs *js = calloc(1, sizeof(*js));

	if (!js)
		return -ENOMEM;
	js->loop = loop;
	js->pool = pool;
	js->conf = conf;
	if (snprintf(js->path, sizeof(js->path), "%s/%s", (*conf)->daemon.state_dir, JOBS_FILE) >= (int)sizeof(js->path)) {
		free(js);
		return -ENAMETOOLONG;
	}
	ev_init(&js->drop_timer, drop_cb);
	js->drop_timer.data = js;
	ev_prepare_init(&js->save, jobs_save_cb);
	js->save.data = js;
	*out = js;
	return 0;
}

void jobs_free(struct jobs *js)
{
	if (!js)
		return;
	if (ev_is_active(&js->save))
		ev_prepare_stop(js->loop, &js->save);
	jobs_write(js);
	free(js->saved);
	while (js->list) {
		struct job *j = js->list;
		js->list = j->next;
		job_release(j);
	}
	free(js);
}

void jobs_reload(struct jobs *js)
{
	const struct conf *c = *js->conf;

	for (struct job *j = js->list; j; j = j->next) {
		if (job_conf(j))
			continue;
		j->forget = true;
		if (j->state == JOB_STOPPED || j->state == JOB_FAILED)
			ev_feed_event(js->loop, &js->drop_timer, EV_TIMER);
		else
			job_event(j, JOB_EV_STOP);
	}
	for (size_t i = 0; i < c->njobs; i++) {
		struct job *j = NULL;

		if (!c->jobs[i].exec || (j = job_find(js, c->jobs[i].key)) != NULL) {
			if (j)
				j->forget = false; /* back in the config before it was dropped */
			continue;
		}
		j = job_new(js, c->jobs[i].key);
		if (j && c->jobs[i].autostart)
			job_event(j, JOB_EV_RUN);
	}
	jobs_save(js);
}

/* ---- requests */

int jobs_run(struct jobs *js, const char *key)
{
	struct job *j = job_find(js, key);

	if (!j || !job_conf(j))
		return -ENOENT;
	j->restart_after_stop = j->state == JOB_STOPPING;
	job_event(j, JOB_EV_RUN);
	return 0;
}

int jobs_stop(struct jobs *js, const char *key)
{
	struct job *j = job_find(js, key);

	if (!j || !job_conf(j))
		return -ENOENT;
	j->restart_after_stop = false;
	job_event(j, JOB_EV_STOP);
	return 0;
}

int jobs_restart(struct jobs *js, const char *key)
{
	struct job *j = job_find(js, key);

	if (!j || !job_conf(j))
		return -ENOENT;
	if (j->state == JOB_RUNNING || j->state == JOB_STARTING || j->state == JOB_STOPPING) {
		j->restart_after_stop = true;
		job_event(j, JOB_EV_STOP);
	} else {
		job_event(j, JOB_EV_RUN);
	}
	return 0;
}

int jobs_info(struct jobs *js, const char *key, struct job_info *out)
{
	struct job *j = job_find(js, key);

	if (!j)
		return -ENOENT;
	out->state = j->state;
	out->main_pid = j->pid;
	out->restarts = j->restarts;
	out->next_restart_us = j->state == JOB_BACKOFF ? j->next_restart_us : 0;
	return 0;
}

void jobs_foreach(struct jobs *js, void (*fn)(const char *key, void *ud), void *ud)
{
	for (struct job *j = js->list; j; j = j->next)
		fn(j->key, ud);
}
