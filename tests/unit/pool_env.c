/* pool_env.c - see pool_env.h */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool_env.h"
#include "simclock.h"
#include "retire.h"
#include "util.h"

const struct param p_v2 = { CGSIM_V2, true };
const struct param p_hybrid = { CGSIM_HYBRID, true };
const struct param p_v2_poll = { CGSIM_V2, false };
const struct param p_v1_poll = { CGSIM_V1, false };

int setup(void **state)
{
	const struct param *prm = *state;
	struct env *e = calloc(1, sizeof(*e));
	struct cgsim_opts o;
	const char *t = getenv("TMPDIR");

	if (!e)
		return -1;
	e->prm = *prm;
	o = cgsim_opts_default(prm->layout);
	o.watch = prm->watch;
	e->sim = cgsim_new(&o);
	e->conf = conf_new_defaults();
	e->loop = ev_loop_new(EVFLAG_AUTO);
	/* cut short, it is no template: mkdtemp fails */
	snprintf(e->state_dir, sizeof(e->state_dir), "%s/cgpool-test-pool-XXXXXX", t && *t ? t : "/tmp");
	if (!e->sim || !e->conf || !e->loop || !mkdtemp(e->state_dir))
		return -1;
	free(e->conf->daemon.state_dir);
	e->conf->daemon.state_dir = strdup(e->state_dir);
	e->conf->pool.warm = 2;
	e->conf->pool.idle_timeout_ms = 60 * 1000;
	/* simulated time: the sim's spawned processes sleep until killed */
	simclock_children_idle(true);
	simclock_start(NULL, NULL);
	*state = e;
	return 0;
}

void env_stop(struct env *e)
{
	retire_free(e->retire); /* what is in flight is abandoned, as at a kill */
	e->retire = NULL;
	pool_free(e->pool);
	e->pool = NULL;
	cg_close(e->cg);
	e->cg = NULL;
}

/* the state dir's snapshot and journals */
static void rm_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
}

void rm_state(struct env *e)
{
	rm_files(e->state_dir);
}

int teardown(void **state)
{
	struct env *e = *state;

	env_stop(e);
	if (e->loop)
		ev_loop_destroy(e->loop);
	cgsim_free(e->sim);
	conf_free(e->conf);
	rm_files(e->state_dir);
	rmdir(e->state_dir);
	free(e);
	return 0;
}

/* the daemon's start: cgroup layer, then the pool, on the sim as it is now */
void env_start(struct env *e)
{
	int r = cg_open_fs(cgsim_ops(e->sim), e->sim, cgsim_mountinfo(e->sim), cgsim_proc_self_cgroup(e->sim),
			   "auto", e->ctrls ? e->ctrls : CG_CTRL_MEMORY | CG_CTRL_PIDS, &e->cg, e->err,
			   sizeof(e->err));

	if (r < 0)
		fail_msg("cg_open_fs: %s: %s", strerror(-r), e->err);
	assert_int_equal(cg_watch_fd(e->cg) >= 0, e->prm.watch);
	snprintf(e->root, sizeof(e->root), "%s", cg_get_info(e->cg)->root);
	snprintf(e->mem_root, sizeof(e->mem_root), "%s", cg_get_info(e->cg)->memory_root);
	assert_int_equal(pool_new(e->loop, e->cg, e->conf, &e->pool), 0);
}

void env_retire(struct env *e)
{
	assert_int_equal(retire_new(e->loop, e->cg, (const struct conf *const *)&e->conf, &e->retire), 0);
	pool_set_retire(e->pool, e->retire);
}

static void stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ev_break(loop, EVBREAK_ONE);
}

/* run the loop for sec seconds */
void pump(struct env *e, double sec)
{
	ev_timer t;

	ev_now_update(e->loop);
	ev_timer_init(&t, stop_cb, sec, 0.);
	ev_timer_start(e->loop, &t);
	ev_run(e->loop, 0);
	ev_timer_stop(e->loop, &t);
}

/* run the loop until key's slot is in state st, at most timeout seconds;
 * the slot, or NULL when it did not get there */
struct slot *pump_until(struct env *e, const char *key, enum slot_state st, double timeout)
{
	int64_t end = now_mono_us() + (int64_t)(timeout * 1e6);
	struct slot *s;

	for (;;) {
		s = pool_find(e->pool, key);
		if (s && s->state == st)
			return s;
		if (now_mono_us() > end)
			return NULL;
		pump(e, 0.01);
	}
}

/* run the loop until no slot has key (recycled); false at the timeout */
bool pump_until_gone(struct env *e, const char *key, double timeout)
{
	int64_t end = now_mono_us() + (int64_t)(timeout * 1e6);

	while (pool_find(e->pool, key)) {
		if (now_mono_us() > end)
			return false;
		pump(e, 0.01);
	}
	return true;
}

pid_t spawn(struct env *e, const char *where)
{
	pid_t pid = cgsim_spawn(e->sim, where);

	assert_true(pid > 0);
	return pid;
}

struct slot *attach1(struct env *e, const char *key, pid_t pid)
{
	struct slot *s = NULL;
	pid_t bad = 0;
	int r = pool_attach(e->pool, key, NULL, &pid, 1, &s, &bad);

	if (r < 0)
		fail_msg("attach %s pid %d: %s (bad pid %d)", key, (int)pid, strerror(-r), (int)bad);
	assert_non_null(s);
	return s;
}

/* the slot's run, where its processes and charges are: "<root>/<name>/run" */
const char *cgpath(struct env *e, const char *name)
{
	static char buf[PATH_MAX + 64];

	snprintf(buf, sizeof(buf), "%s/%s/run", e->root, name);
	return buf;
}

/* a file of the slot in the memory hierarchy, as the sim holds it, one line */
const char *slot_file(struct env *e, const char *name, const char *file)
{
	static char buf[4096];
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s/run/%s", e->mem_root, name, file);
	if (cgsim_peek(e->sim, p, buf, sizeof(buf)) < 0)
		return NULL;
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

const char *slot_file_in(struct env *e, const char *mount, const char *name, const char *file)
{
	static char buf[4096];
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s%s/%s/run/%s", mount, e->root, name, file);
	if (cgsim_peek(e->sim, p, buf, sizeof(buf)) < 0)
		return NULL;
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

bool hybrid(const struct env *e)
{
	return e->prm.layout == CGSIM_HYBRID;
}

/* memory.max as the kernel shows it, in the memory hierarchy's own terms */
const char *mem_max(struct env *e, const char *name)
{
	return slot_file(e, name, hybrid(e) ? "memory.limit_in_bytes" : "memory.max");
}

const char *mem_unlimited(const struct env *e)
{
	return hybrid(e) ? "9223372036854771712" : "max";
}

const char *pids_max(struct env *e, const char *name)
{
	return hybrid(e) ? slot_file_in(e, "/sys/fs/cgroup/pids", name, "pids.max") : slot_file(e, name, "pids.max");
}

struct find {
	const char *name;
	struct slot *s;
};

static int find_one(struct slot *s, void *ud)
{
	struct find *f = ud;

	if (strcmp(s->name, f->name) != 0)
		return 0;
	f->s = s;
	return 1;
}

struct slot *slot_named(struct env *e, const char *name)
{
	struct find f = { name, NULL };

	pool_foreach(e->pool, find_one, &f);
	return f.s;
}

unsigned count(struct env *e, enum slot_state st)
{
	unsigned n[SLOT_NSTATES];

	pool_counts(e->pool, n);
	return n[st];
}

/* a slot that ran key with charges is recycled after idle_timeout */
struct slot *run_and_idle(struct env *e, const char *key, uint64_t file, uint64_t anon)
{
	pid_t pid = spawn(e, "/");
	struct slot *s = attach1(e, key, pid);

	assert_int_equal(cgsim_charge(e->sim, cgpath(e, s->name), file, anon), 0);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, key, SLOT_IDLE, 3.0));
	return s;
}
