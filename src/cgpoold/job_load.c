/* job_load.c - what supervision keeps across daemon restarts: jobs.json,
 * and adoption at start of the main processes still in their slots. */
#include "config.h"

#include "job_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* ---- persistence: <state_dir>/jobs.json, rewritten on every transition
 * (few jobs: the file stays small). Not fsync'ed: it is for a restart of
 * the daemon; after a reboot no job of it runs anyway. */

/* A starting job is saved as running: both mean a main process in the
 * slot, which is what a restart of the daemon adopts. */
static const char *saved_state(enum job_state st)
{
	return job_state_name(st == JOB_STARTING ? JOB_RUNNING : st);
}

void jobs_write(struct jobs *js)
{
	json_t *arr = json_array(), *root;
	char *text;
	int r;

	for (struct job *j = js->list; j; j = j->next)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:i, s:I, s:i, s:i}", "key", j->key, "state",
						     saved_state(j->state), "pid", (int)j->pid, "restarts",
						     (json_int_t)j->restarts, "out_fd", j->out_fdno, "err_fd", j->err_fdno));
	root = json_pack("{s:i, s:o}", "version", 1, "jobs", arr);
	text = root ? json_dumps(root, JSON_COMPACT) : NULL;
	json_decref(root);
	if (text && js->saved && strcmp(text, js->saved) == 0) {
		free(text); /* nothing that is kept changed */
		return;
	}
	r = text ? file_replace(js->path, text, strlen(text), 0600) : -ENOMEM;
	if (r < 0)
		log_warn("jobs: save %s: %s", js->path, strerror(-r));
	free(js->saved);
	js->saved = r == 0 ? text : NULL;
	if (r < 0)
		free(text);
}

/* once per loop pass, before the loop waits: the transitions of one pass
 * (an exit and the restart it causes) cost one write */
void jobs_save_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)revents;
	ev_prepare_stop(loop, w);
	jobs_write(w->data);
}

void jobs_save(struct jobs *js)
{
	if (!ev_is_active(&js->save))
		ev_prepare_start(js->loop, &js->save);
}

/* ---- adoption at start */

/* pid is still in the key's slot: watch it through a pidfd */
static bool adopt(struct job *j, pid_t pid)
{
	struct slot *s = pool_find(j->js->pool, j->key);
	pid_t *pids = NULL;
	size_t n = 0;
	bool inside = false;
	int fd;

	if (pid <= 0 || !s || cg_slot_pids(pool_cg(j->js->pool), s->name, &pids, &n) < 0)
		return false;
	for (size_t i = 0; i < n && !inside; i++)
		inside = pids[i] == pid;
	free(pids);
	fd = inside ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (fd < 0)
		return false;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	j->pid = pid;
	j->pidfd = fd;
	j->ours = false;
	ev_io_set(&j->pidfd_io, fd, EV_READ);
	ev_io_start(j->js->loop, &j->pidfd_io);
	return true;
}

/* The read end of a journal pipe that the adopted main process keeps as
 * fdno: read again from where the last daemon stopped. */
static void take_output(struct job *j, int fdno, struct joblog **l, const char *stream)
{
	int fd;

	if (fdno < 0)
		return;
#ifdef SYS_pidfd_getfd
	fd = (int)syscall(SYS_pidfd_getfd, j->pidfd, fdno, 0);
#else
	fd = -1;
	errno = ENOSYS;
#endif
	if (fd < 0) {
		log_warn("job %s: its %s pipe (fd %d of pid %d) cannot be taken back: %s; its %s is lost", j->key,
			 stream, fdno, (int)j->pid, strerror(errno), stream);
		return;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (fdno == JOB_OUT_FD)
		j->out_fdno = fdno;
	else
		j->err_fdno = fdno;
	job_output(j, fd, l, stream);
}

static void restore_one(struct job *j, json_t *saved, const struct conf_job *cj)
{
	const char *state = NULL;
	enum job_state st = JOB_STOPPED;
	json_int_t restarts = 0;
	int pid = 0, out_fd = -1, err_fd = -1;

	if (!saved ||
	    json_unpack(saved, "{s:s, s:i, s:I, s?i, s?i}", "state", &state, "pid", &pid, "restarts", &restarts,
			"out_fd", &out_fd, "err_fd", &err_fd) < 0 ||
	    job_state_parse(state, &st) < 0) {
		if (cj->autostart)
			job_event(j, JOB_EV_RUN);
		return;
	}
	j->restarts = restarts > 0 ? (unsigned long long)restarts : 0;
	switch (st) {
	case JOB_STARTING:
	case JOB_RUNNING:
	case JOB_STOPPING:
		if (adopt(j, (pid_t)pid)) {
			log_notice("job %s: adopted its main process %d, still in its slot", j->key, pid);
			take_output(j, out_fd, &j->out, "stdout");
			take_output(j, err_fd, &j->err, "stderr");
			job_event(j, JOB_EV_ADOPT);
			if (st == JOB_STOPPING)
				job_event(j, JOB_EV_STOP);
			return;
		}
		/* it ended while no daemon watched: a run end like any other */
		log_notice("job %s: main process %d ended while the daemon was down", j->key, pid);
		job_event(j, JOB_EV_ADOPT);
		j->pid = (pid_t)pid;
		job_main_exited(j, -1, 0, true);
		return;
	case JOB_BACKOFF:
		job_event(j, JOB_EV_RUN); /* its restart was due: now */
		return;
	case JOB_FAILED:
		job_event(j, JOB_EV_START_LIMIT);
		return;
	default:
		return; /* stopped by hand: stays stopped */
	}
}

void jobs_start(struct jobs *js)
{
	char *text = malloc(1 << 20);
	ssize_t n = text ? file_read(js->path, text, 1 << 20) : -ENOMEM;
	json_t *root = n > 0 ? json_loads(text, 0, NULL) : NULL, *arr = json_object_get(root, "jobs");
	const struct conf *c = *js->conf;

	free(text);
	if (n < 0 && n != -ENOENT)
		log_warn("jobs: read %s: %s (jobs start as if new)", js->path, strerror((int)-n));
	for (size_t i = 0; i < c->njobs; i++) {
		const struct conf_job *cj = &c->jobs[i];
		json_t *saved = NULL, *v;
		size_t k;
		struct job *j;

		if (!cj->exec || !(j = job_new(js, cj->key)))
			continue;
		json_array_foreach(arr, k, v) {
			if (json_is_string(json_object_get(v, "key")) &&
			    strcmp(json_string_value(json_object_get(v, "key")), cj->key) == 0)
				saved = v;
		}
		restore_one(j, saved, cj);
	}
	json_decref(root);
	jobs_save(js);
}
