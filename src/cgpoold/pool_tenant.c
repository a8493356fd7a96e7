/* pool_tenant.c - the job a slot's run belongs to, and the processes that
 * hold it.
 *
 * An Attach may say whose job it places (job, e.g. "slurm:4711:1000") and
 * name a process that holds the job on this node (hold: a Slurm step's
 * slurmstepd). A key is then one job's at a time: an Attach for another job,
 * or for none, is refused while the run lives or a holder is alive. The
 * daemon watches every holder through a pidfd; when the last one has exited
 * the job has ended on this node: everything still in the slot is killed
 * (cgroup.kill, or SIGKILL rounds until it is empty), the key is released
 * (unless the Attach said release = false) and the slot belongs to no job.
 * A job's slots may be frozen and thawed by the job's name (Freeze: Slurm's
 * suspend and resume); a job that ends frozen is thawed first.
 * The tenant is kept in the state file, so a restarted daemon watches the
 * same holders again (a holder is known by its pid and start time: a pid
 * reused meanwhile is not taken for it). */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "pool_internal.h"
#include "res.h"

#define KILL_ROUND_S 0.05 /* without cgroup.kill: SIGKILL again this often */
#define KILL_ROUNDS 200   /* ... for at most 10 s */
#define HOLDER_POLL_S 1.0 /* without pidfd_open: a holder is looked at this often */

int pool_tenant_pidfd_open_default(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}
int (*pool_tenant_pidfd_open)(pid_t pid) = pool_tenant_pidfd_open_default;

/* stop watching h (its pidfd stays open) */
static void holder_unwatch(struct pool *p, struct holder *h)
{
	if (!p)
		return;
	if (h->pidfd >= 0)
		ev_io_stop(p->loop, &h->io);
	ev_timer_stop(p->loop, &h->poll);
}

static void holder_free(struct pool *p, struct holder *h)
{
	holder_unwatch(p, h);
	slot_holder_free(h);
}

/* is the holder being watched, by its pidfd or by polling? */
static bool holder_watched(const struct holder *h)
{
	return h->pidfd >= 0 || ev_is_active(&h->poll);
}

void pool_tenant_free(struct slot *s)
{
	struct tenant *t = s->tenant;
	struct pool *p = s->pool;

	if (!t)
		return;
	for (struct holder *h = t->holders; h; h = h->next)
		holder_unwatch(p, h);
	if (p)
		ev_timer_stop(p->loop, &t->kill_timer);
	slot_tenant_free(s);
}

const char *pool_tenant_job(const struct slot *s)
{
	return s->tenant ? s->tenant->job : NULL;
}

unsigned pool_tenant_holders(const struct slot *s)
{
	return s->tenant ? s->tenant->nholders : 0;
}

bool pool_tenant_ending(const struct slot *s)
{
	return s->tenant && s->tenant->ending;
}

/* Does the run belong to a job now: a holder alive, or its processes running? */
static bool job_lives(const struct slot *s)
{
	const struct tenant *t = s->tenant;

	return t && t->job && !t->ending && (t->nholders > 0 || s->state == SLOT_RUNNING);
}

int pool_tenant_verdict(const struct slot *s, const char *job, bool procs)
{
	const struct tenant *t = s->tenant;
	bool running = s->state == SLOT_RUNNING && procs;

	/* nothing of the last job may reach the next run, of this job or another */
	if (t && t->ending)
		return procs ? -EINPROGRESS : 0;
	if (t && t->job && (t->nholders > 0 || running))
		return job && strcmp(job, t->job) == 0 ? 0 : -EADDRINUSE;
	/* a run of nobody's job (an Attach without one) is not joined by a job */
	return job && running && !(t && t->job) ? -EADDRINUSE : 0;
}

/* ---- suspend and resume */

static bool job_named(const char *cur, const char *job)
{
	size_t n = strlen(job);

	return cur && strncmp(cur, job, n) == 0 && (cur[n] == '\0' || cur[n] == ':');
}

struct freeze_req {
	const char *job;
	bool frozen;
	void (*each)(struct slot *s, int r, void *ud);
	void *ud;
	unsigned n;
};

static int freeze_one(struct slot *s, void *arg)
{
	struct freeze_req *fr = arg;
	int r;

	if (!job_lives(s) || !job_named(s->tenant->job, fr->job))
		return 0;
	r = cg_slot_freeze(s->pool->cg, s->name, fr->frozen);
	if (r < 0)
		log_warn("slot %s (%s): job %s not %s: %s", s->name, s->key, s->tenant->job,
			 fr->frozen ? "frozen" : "thawed", strerror(-r));
	else
		log_info("slot %s (%s): job %s %s", s->name, s->key, s->tenant->job, fr->frozen ? "frozen" : "thawed");
	fr->each(s, r, fr->ud);
	fr->n++;
	return 0;
}

unsigned pool_tenant_freeze(struct pool *p, const char *job, bool frozen, void (*each)(struct slot *s, int r, void *ud),
			    void *ud)
{
	struct freeze_req fr = { job, frozen, each, ud, 0 };

	pool_foreach(p, freeze_one, &fr);
	return fr.n;
}

/* ---- a running job's limits changed by its scheduler */

struct limit_req {
	const char *job;
	const struct conf_res *limits;
	size_t n;
	void (*each)(struct slot *s, int r, void *ud);
	void *ud;
	unsigned count;
};

static int limit_one(struct slot *s, void *arg)
{
	struct limit_req *lr = arg;
	const struct conf_res *limits[CONF_MAX_RES] = { NULL };
	const char *values[CONF_MAX_RES] = { NULL };
	size_t i, n = 0;
	int r;

	if (!job_lives(s) || !job_named(s->tenant->job, lr->job))
		return 0;
	for (i = 0; i < lr->n && n < CONF_MAX_RES; i++, n++) {
		limits[n] = &lr->limits[i];
		values[n] = lr->limits[i].value;
	}
	r = pool_run_limits_write(s, limits, values, n, NULL);
	for (i = 0; r == 0 && i < n; i++)
		log_info("slot %s (%s): job %s: limit %s = %s for this run", s->name, s->key, s->tenant->job,
			 limits[i]->name, values[i]);
	lr->each(s, r, lr->ud);
	lr->count++;
	return 0;
}

unsigned pool_tenant_limit(struct pool *p, const char *job, const struct conf_res *limits, size_t nlimits,
			   void (*each)(struct slot *s, int r, void *ud), void *ud)
{
	struct limit_req lr = { job, limits, nlimits, each, ud, 0 };

	pool_foreach(p, limit_one, &lr);
	return lr.count;
}

/* ---- the end of a job on this node */

static void kill_round(struct slot *s)
{
	struct tenant *t = s->tenant;
	bool atomic = false;
	int r;

	if (!pool_slot_has_procs(s)) {
		ev_timer_stop(s->pool->loop, &t->kill_timer);
		pool_run_settle(s->pool, s->key);
		return;
	}
	r = cg_slot_kill(s->pool->cg, s->name, &atomic);
	if (r < 0 && r != -ESRCH)
		log_warn("slot %s (%s): kill what the job left: %s", s->name, s->key, strerror(-r));
	if (atomic)
		return; /* the kernel kills them all; cgroup.events ends the run */
	if (++t->kill_rounds > KILL_ROUNDS) {
		log_warn("slot %s (%s): processes left after %u SIGKILL rounds; the run ends when they exit", s->name,
			 s->key, KILL_ROUNDS);
		return;
	}
	ev_timer_set(&t->kill_timer, KILL_ROUND_S, 0.);
	ev_timer_start(s->pool->loop, &t->kill_timer);
}

static void kill_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	kill_round(w->data);
}

static void job_end(struct slot *s)
{
	struct tenant *t = s->tenant;
	struct slot *out;
	unsigned n = 0;
	bool release = t->release;

	cg_slot_nprocs(s->pool->cg, s->name, &n);
	log_event(LOG_INFO, &(struct log_fields){ .key = s->key, .slot = s->name },
		  "slot %s (%s): job %s ended on this node; %u process(es) left in the slot, killed%s", s->name,
		  s->key, t->job ? t->job : "-", n, t->release ? ", key released" : "");
	t->ending = true;
	/* a job suspended when it ended: its slot must not stay frozen for the next one */
	cg_slot_freeze(s->pool->cg, s->name, false);
	ev_init(&t->kill_timer, kill_timer_cb);
	t->kill_timer.data = s;
	t->kill_rounds = 0;
	if (n > 0)
		kill_round(s);
	else if (s->state != SLOT_RUNNING)
		/* the run ended before its last holder did (a step's tasks exit
		 * before its slurmstepd): no run end is coming to forget the
		 * tenant, and a tenant left on the slot would end the slot's
		 * next key after a restart as if it were this job */
		pool_tenant_free(s);
	/* last: the release may recycle an idle slot at once, and its scrub
	 * forgets the tenant (t is not to be used after it) */
	if (release)
		pool_release(s->pool, s->key, &out);
	pool_save(s->pool, s);
}

static void holder_gone(struct slot *s, struct holder *h)
{
	struct tenant *t = s->tenant;

	for (struct holder **pp = &t->holders; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			t->nholders--;
			break;
		}
	}
	holder_free(s->pool, h);
	if (t->nholders == 0 && !t->ending)
		job_end(s);
	else
		pool_save(s->pool, s);
}

static void holder_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct holder *h = w->data;

	(void)loop;
	(void)revents;
	holder_gone(h->slot, h);
}

/* without pidfd_open: the holder is gone when its pid is, or is another
 * process's */
static void holder_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct holder *h = w->data;
	uint64_t start;

	(void)loop;
	(void)revents;
	if (proc_start_time(h->pid, &start) < 0 || start != h->start)
		holder_gone(h->slot, h);
}

static int holder_watch(struct pool *p, struct holder *h)
{
	static bool told;
	uint64_t start;

	if (proc_start_time(h->pid, &start) < 0 || start != h->start)
		return -ESRCH;
	h->pidfd = pool_tenant_pidfd_open(h->pid);
	if (h->pidfd < 0 && errno == ENOSYS) {
		if (!told)
			log_info("no pidfd_open(2) on this kernel: the holders of jobs are looked at every %.0f s",
				 HOLDER_POLL_S);
		told = true;
		ev_timer_init(&h->poll, holder_poll_cb, HOLDER_POLL_S, HOLDER_POLL_S);
		h->poll.data = h;
		ev_timer_start(p->loop, &h->poll);
		return 0;
	}
	if (h->pidfd < 0)
		return -errno;
	/* the pid may have been reused between the two looks */
	if (proc_start_time(h->pid, &start) < 0 || start != h->start) {
		close(h->pidfd);
		h->pidfd = -1;
		return -ESRCH;
	}
	ev_io_init(&h->io, holder_cb, h->pidfd, EV_READ);
	h->io.data = h;
	ev_io_start(p->loop, &h->io);
	return 0;
}

int pool_tenant_bind(struct slot *s, const char *job, pid_t hold, bool release)
{
	struct tenant *t = s->tenant;
	struct holder *h;
	uint64_t start;
	int r;

	if (!job && hold <= 0)
		return 0;
	if (!t && !(t = slot_tenant_new(s)))
		return -ENOMEM;
	if (t->ending) {
		/* the Attach waited until what the job left was gone
		 * (pool_tenant_verdict): a fresh run, no kill round pending */
		t->ending = false;
		t->kill_rounds = 0;
		ev_timer_stop(s->pool->loop, &t->kill_timer);
	}
	if (job && (!t->job || strcmp(t->job, job) != 0)) {
		char *dup = strdup(job);
		if (!dup)
			return -ENOMEM;
		free(t->job);
		t->job = dup;
	}
	t->release = release;
	if (hold <= 0)
		return 0;
	if (proc_start_time(hold, &start) < 0)
		return -ESRCH;
	h = slot_holder_add(s, hold, start);
	if (!h)
		return -ENOMEM;
	if (holder_watched(h))
		return 0;
	r = holder_watch(s->pool, h);
	if (r < 0) {
		t->holders = h->next; /* the newest is first */
		t->nholders--;
		holder_free(s->pool, h);
	}
	return r;
}

const char *pool_tenant_devices(const struct slot *s, const char *job)
{
	const struct tenant *t = s->tenant;

	if (!t || !t->devices || !job || !t->job || strcmp(t->job, job) != 0 || s->state != SLOT_RUNNING ||
	    !(s->run_limits & res_bit("devices.deny")))
		return NULL;
	return t->devices;
}

int pool_tenant_set_devices(struct slot *s, const char *deny)
{
	char *dup;

	if (!s->tenant)
		return 0;
	dup = strdup(deny);
	if (!dup)
		return -ENOMEM;
	free(s->tenant->devices);
	s->tenant->devices = dup;
	return 0;
}

/* A run ended (the slot emptied): a job with no holder is over; one with
 * holders keeps the key, its next step starts a new run. */
void pool_tenant_run_ended(struct slot *s)
{
	struct tenant *t = s->tenant;

	if (t && (t->nholders == 0 || t->ending))
		pool_tenant_free(s);
}

/* ---- the state file */

void pool_tenant_move(struct slot *to, struct slot *from)
{
	to->tenant = from->tenant;
	from->tenant = NULL;
	for (struct holder *h = to->tenant ? to->tenant->holders : NULL; h; h = h->next)
		h->slot = to;
}

/* After a restart: watch the holders that still live; a job whose holders
 * all went while the daemon was down has ended. */
void pool_tenant_resume(struct slot *s)
{
	struct tenant *t = s->tenant;
	struct holder **pp;

	if (!t)
		return;
	for (pp = &t->holders; *pp;) {
		struct holder *h = *pp;
		if (!holder_watched(h) && holder_watch(s->pool, h) < 0) {
			*pp = h->next;
			t->nholders--;
			holder_free(s->pool, h);
			continue;
		}
		pp = &h->next;
	}
	if (!t->job) {
		pool_tenant_free(s);
		return;
	}
	if (t->nholders == 0 && (t->ending || s->state == SLOT_RUNNING))
		job_end(s);
	else if (t->nholders == 0)
		pool_tenant_free(s);
}
