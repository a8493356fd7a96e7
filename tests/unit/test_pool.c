/* unit tests: the slot pool (pool.c, slot.c, state.c) on the simulated
 * cgroupfs of cgsim.c, with a real libev loop. Every test runs on the v2 and
 * the hybrid (v1 memory + cgroup2 tracking) layouts; the kernel-facing side
 * is checked through what the sim holds and what it was asked to do. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "cgsim.h"
#include "log.h"
#include "pool.h"
#include "res.h"
#include "simclock.h"
#include "work.h"
#include "util.h"

/* the scale cases at full size: make check-scale */
static bool scale(void)
{
	const char *v = getenv("CGPOOL_TEST_SCALE");

	return v && strcmp(v, "1") == 0;
}
#include "pool_env.h"

/* ---- capturing the log */


/* ---- tests */

static void test_warm_at_start(void **state)
{
	struct env *e = *state;
	char p[PATH_MAX * 2];
	uint64_t ino;

	env_start(e);
	assert_int_equal(count(e, SLOT_WARM), 2);
	assert_int_equal(count(e, SLOT_RUNNING) + count(e, SLOT_IDLE), 0);
	for (int i = 0; i < 2; i++) {
		struct slot *s = slot_named(e, i ? "slot-1" : "slot-0");
		assert_non_null(s);
		assert_int_equal(s->state, SLOT_WARM);
		assert_true(cgsim_exists(e->sim, cgpath(e, s->name)));
		/* the slot's id is its memory cgroup's inode */
		snprintf(p, sizeof(p), "%s/%s/run", e->mem_root, s->name);
		assert_int_equal(cgsim_ops(e->sim)->inode(e->sim, p, &ino), 0);
		assert_int_equal(s->cgroup_id, ino);
	}
	if (hybrid(e)) /* tracked in the cgroup2 hierarchy too */
		assert_string_equal(slot_file_in(e, "/sys/fs/cgroup/unified", "slot-0", "cgroup.events"),
				    "populated 0");
	/* the daemon's own leaf and the feature probe are not slots */
	assert_null(slot_named(e, "cgpoold"));
	assert_null(slot_named(e, "slot-2"));
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_MKDIR, "/slot-2"), 0);
}

static void test_bind_and_restart(void **state)
{
	struct env *e = *state;
	struct slot *s, *s2;
	uint64_t id;
	unsigned n;
	pid_t pid;

	env_start(e);
	pid = spawn(e, "/");
	s = attach1(e, "web", pid);
	assert_string_equal(s->name, "slot-0");
	assert_string_equal(s->key, "web");
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_int_equal(s->runs, 1);
	id = s->cgroup_id;
	assert_int_equal(cgsim_nprocs(e->sim, cgpath(e, "slot-0"), &n), 0);
	assert_int_equal(n, 1);
	if (hybrid(e)) /* moved in every hierarchy */
		assert_int_equal(atoi(slot_file_in(e, "/sys/fs/cgroup/pids", "slot-0", "cgroup.procs")), pid);
	assert_int_equal(count(e, SLOT_WARM), 2); /* refilled */

	/* the run ends */
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	s = pump_until(e, "web", SLOT_IDLE, 3.0);
	assert_non_null(s);
	assert_int_equal(s->state, SLOT_IDLE);
	assert_int_equal(s->runs, 1);
	assert_true(slot_last_run(s)->ended_us >= slot_last_run(s)->started_us);
	assert_true(slot_last_run(s)->ended_us > 0);

	/* restart: the same slot, the same cgroup, run 2 */
	s2 = attach1(e, "web", spawn(e, "/"));
	assert_ptr_equal(s2, s);
	assert_string_equal(s2->name, "slot-0");
	assert_int_equal(s2->cgroup_id, id);
	assert_int_equal(s2->runs, 2);
	assert_int_equal(s2->state, SLOT_RUNNING);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_MKDIR, "/slot-3"), 0);
}

static void test_back_to_back(void **state)
{
	struct env *e = *state;
	struct slot *s;
	pid_t p1, p2;

	env_start(e);
	p1 = spawn(e, "/");
	s = attach1(e, "job", p1);
	/* the process exits and the next run comes before any event is read */
	assert_int_equal(cgsim_exit(e->sim, p1), 0);
	p2 = spawn(e, "/");
	assert_ptr_equal(attach1(e, "job", p2), s);
	assert_int_equal(s->runs, 2);
	assert_int_equal(s->nrecent, 2);
	assert_true(s->recent[0].ended_us > 0); /* the first run was closed */
	assert_int_equal(slot_last_run(s)->ended_us, 0);
	/* the late events change nothing */
	pump(e, 0.1);
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_int_equal(s->runs, 2);
	/* and the second run ends once */
	assert_int_equal(cgsim_exit(e->sim, p2), 0);
	assert_non_null(pump_until(e, "job", SLOT_IDLE, 3.0));
	assert_int_equal(s->state, SLOT_IDLE);
	assert_int_equal(s->runs, 2);
	assert_int_equal(s->nrecent, 2);
	attach1(e, "job", spawn(e, "/"));
	assert_int_equal(s->runs, 3);
}

/* records ("put" lines) in the state dir's journals */
static unsigned journal_puts(struct env *e)
{
	char cmd[PATH_MAX + 64], line[16] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd), "cat %s/journal.* 2>/dev/null | grep -c '\"put\"'", e->state_dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	pclose(f);
	return (unsigned)atoi(line);
}

/* An Attach that finds the last run ended and starts the next writes one
 * record for the slot, and it holds both: a daemon started from it has the
 * first run closed and the second running. */
static void test_attach_one_record(void **state)
{
	struct env *e = *state;
	struct slot *s;
	unsigned before;
	pid_t p1;

	env_start(e);
	p1 = spawn(e, "/");
	s = attach1(e, "job", p1);
	assert_int_equal(cgsim_exit(e->sim, p1), 0);
	before = journal_puts(e);
	assert_ptr_equal(attach1(e, "job", spawn(e, "/")), s);
	assert_int_equal(journal_puts(e), before + 1);
	env_stop(e);
	env_start(e);
	s = pool_find(e->pool, "job");
	assert_non_null(s);
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_int_equal(s->runs, 2);
	assert_int_equal(s->nrecent, 2);
	assert_true(s->recent[0].ended_us > 0);
	assert_int_equal(slot_last_run(s)->ended_us, 0);
}

static int collect_key(struct slot *s, void *ud)
{
	char *keys = ud;

	if (s->key[0]) {
		strcat(keys, s->key);
		strcat(keys, " ");
	}
	return 0;
}

static void test_max_slots(void **state)
{
	struct env *e = *state;
	char keys[256] = "";
	struct slot *s = NULL;
	pid_t pid, bad = 0;

	e->conf->pool.max_slots = 3;
	e->conf->pool.warm = 1;
	env_start(e);
	attach1(e, "a", spawn(e, "/"));
	attach1(e, "b", spawn(e, "/"));
	attach1(e, "c", spawn(e, "/"));
	assert_int_equal(count(e, SLOT_WARM), 0); /* no room for a warm one */
	pid = spawn(e, "/");
	assert_int_equal(pool_attach(e->pool, "d", NULL, &pid, 1, &s, &bad), -ENOSPC);
	assert_null(s);
	assert_null(pool_find(e->pool, "d"));
	pool_foreach(e->pool, collect_key, keys);
	assert_string_equal(keys, "a b c ");
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-3")));
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_MKDIR, "/slot-3"), 0);
	/* the process stayed where it was */
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_WRITE, "*/slot-*/run/cgroup.procs"), 3 * (hybrid(e) ? 3 : 1));
}

static struct conf_class *add_class(struct env *e, const char *name, const char *match)
{
	struct conf_class *c;

	e->conf->classes = realloc(e->conf->classes, (e->conf->nclasses + 1) * sizeof(*c));
	assert_non_null(e->conf->classes);
	c = &e->conf->classes[e->conf->nclasses++];
	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	c->match = strdup(match);
	return c;
}

static void add_res(struct conf_class *c, const char *name, const char *value)
{
	struct conf_res *r = &c->res[c->nres++];

	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->value, sizeof(r->value), "%s", value);
}

static void test_bad_pid(void **state)
{
	struct env *e = *state;
	struct slot *s = NULL;
	pid_t pids[2], bad = 0;

	env_start(e);
	cgsim_calls_clear(e->sim);
	/* no such process at all */
	pids[0] = NO_SUCH_PID;
	assert_int_equal(pool_attach(e->pool, "web", NULL, pids, 1, &s, &bad), -ESRCH);
	assert_int_equal(bad, NO_SUCH_PID);
	assert_null(s);
	assert_null(pool_find(e->pool, "web"));
	assert_int_equal(count(e, SLOT_WARM), 2);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_WRITE, NULL), 0);

	/* the kernel says ESRCH (the process went away after the check) */
	pids[0] = getppid();
	bad = 0;
	assert_int_equal(pool_attach(e->pool, "web", NULL, pids, 1, &s, &bad), -ESRCH);
	assert_int_equal(bad, getppid());
	assert_null(s);
	assert_null(pool_find(e->pool, "web"));
	assert_int_equal(count(e, SLOT_WARM), 2);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_WRITE, "*/slot-*/run/cgroup.procs"), 1);

	/* the second of two goes: the first is in, so the slot runs it */
	pids[0] = spawn(e, "/");
	pids[1] = getppid();
	bad = 0;
	assert_int_equal(pool_attach(e->pool, "web", NULL, pids, 2, &s, &bad), -ESRCH);
	assert_int_equal(bad, getppid());
	s = pool_find(e->pool, "web");
	assert_non_null(s);
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_int_equal(s->runs, 1);
	/* the next new key does not inherit that process */
	assert_ptr_not_equal(attach1(e, "db", spawn(e, "/")), s);

	/* one dead pid into a bound slot: refused by its move, nothing changes */
	pids[0] = NO_SUCH_PID;
	bad = 0;
	assert_int_equal(pool_attach(e->pool, "web", NULL, pids, 1, &s, &bad), -ESRCH);
	assert_int_equal(bad, NO_SUCH_PID);
	s = pool_find(e->pool, "web");
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_int_equal(s->runs, 1);
}

/* a bind that fails after the class's limits were written leaves none behind */
static void test_bad_pid_class(void **state)
{
	struct env *e = *state;
	struct conf_class *c = add_class(e, "batch", "slurm.*");
	struct slot *s = NULL;
	pid_t pid = getppid(), bad = 0;

	add_res(c, "memory.max", "268435456");
	env_start(e);
	assert_int_equal(pool_attach(e->pool, "slurm.1", NULL, &pid, 1, &s, &bad), -ESRCH);
	assert_int_equal(bad, pid);
	assert_string_equal(mem_max(e, "slot-0"), mem_unlimited(e));
	s = attach1(e, "web", spawn(e, "/"));
	assert_string_equal(s->name, "slot-0");
	assert_string_equal(mem_max(e, "slot-0"), mem_unlimited(e));
}

/* on the first write to a slot's cgroup.procs: its memory limit then */
static void limit_at_attach(struct cgsim *sim, const char *path, const char *value, void *ud)
{
	struct env *e = ud;

	if (!e->seen[0])
		snprintf(e->seen, sizeof(e->seen), "%s", mem_max(e, "slot-0"));
}

static void test_class(void **state)
{
	struct env *e = *state;
	struct conf_class *c = add_class(e, "batch", "slurm.*");
	struct slot *s;

	add_res(c, "memory.max", "268435456");
	add_res(c, "pids.max", "64");
	env_start(e);
	e->seen[0] = '\0';
	cgsim_on_write(e->sim, "/slot-0/run/cgroup.procs", limit_at_attach, e);
	s = attach1(e, "slurm.4711", spawn(e, "/"));
	cgsim_on_write(e->sim, NULL, NULL, NULL);
	assert_string_equal(s->name, "slot-0");
	assert_string_equal(s->class_name, "batch");
	assert_string_equal(mem_max(e, s->name), "268435456");
	assert_string_equal(pids_max(e, s->name), "64");
	assert_string_equal(e->seen, "268435456"); /* in place before the process arrived */
	s = attach1(e, "web", spawn(e, "/"));
	assert_string_equal(s->class_name, "");
	assert_string_equal(mem_max(e, s->name), mem_unlimited(e));
	assert_string_equal(pids_max(e, s->name), "max");
}

static void test_idle_recycle(void **state)
{
	struct env *e = *state;
	struct conf_class *c = add_class(e, "batch", "slurm.*");
	struct cgsim_mem m;
	struct slot *s, *s2;
	uint64_t id;
	int res = 0;

	add_res(c, "memory.max", "268435456");
	add_res(c, "pids.max", "64");
	e->conf->pool.idle_timeout_ms = 50;
	env_start(e);
	s = run_and_idle(e, "slurm.1", 4 * MiB, 256 * KiB);
	id = s->cgroup_id;
	assert_string_equal(mem_max(e, s->name), "268435456");
	cgsim_calls_clear(e->sim);
	assert_true(pump_until_gone(e, "slurm.1", 2.0)); /* the key is forgotten */
	assert_int_equal(s->state, SLOT_WARM);
	assert_string_equal(s->key, "");
	assert_string_equal(s->class_name, "");
	assert_int_equal(s->runs, 0);
	/* the memory was reclaimed: page cache gone, anon cannot go without swap */
	assert_int_equal(cgsim_memory(e->sim, cgpath(e, s->name), &m), 0);
	assert_int_equal(m.file, 0);
	assert_int_equal(m.anon, 256 * KiB);
	if (hybrid(e)) {
		assert_string_equal(cgsim_last_write(e->sim, "/slot-0/run/memory.force_empty", &res), "0");
		assert_int_equal(res, 0);
	} else {
		assert_string_equal(cgsim_last_write(e->sim, "/slot-0/run/memory.reclaim", &res), "4456448");
		assert_int_equal(res, -EAGAIN); /* less than asked: the anon part */
	}
	/* limits back to the defaults */
	assert_string_equal(mem_max(e, s->name), mem_unlimited(e));
	assert_string_equal(pids_max(e, s->name), "max");
	if (!hybrid(e)) {
		assert_string_equal(slot_file(e, s->name, "memory.high"), "max");
		assert_string_equal(slot_file(e, s->name, "memory.low"), "0");
		assert_string_equal(slot_file(e, s->name, "memory.swap.max"), "max");
	}
	assert_int_equal(count(e, SLOT_WARM), 3); /* it joins the two made when it was taken */
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_MKDIR, NULL), 0);

	/* the next new key gets it: same cgroup, runs from 1 */
	s2 = attach1(e, "web", spawn(e, "/"));
	assert_ptr_equal(s2, s);
	assert_int_equal(s2->cgroup_id, id);
	assert_int_equal(s2->runs, 1);
	assert_int_equal(s2->nrecent, 1);
	assert_string_equal(mem_max(e, s->name), mem_unlimited(e));
}

/* per run: memory.peak reset at its start (v2: on the slot's own fd), and
 * the OOM kills during it */
static void test_run_records(void **state)
{
	struct env *e = *state;
	struct slot *s;
	pid_t pid;

	env_start(e);
	assert_true(cg_get_info(e->cg)->features.memory_peak);
	assert_true(cg_get_info(e->cg)->features.memory_peak_reset);
	s = run_and_idle(e, "job", 0, 8 * MiB);
	assert_int_equal(slot_last_run(s)->memory_peak, 8 * MiB);
	assert_false(slot_last_run(s)->peak_sampled); /* the kernel's own, exact */
	assert_int_equal(cgsim_uncharge(e->sim, cgpath(e, s->name), 0, 8 * MiB), 0);
	assert_int_equal(slot_last_run(s)->oom_kills, 0);
	assert_int_equal(cgsim_oom_kill(e->sim, cgpath(e, s->name)), 0); /* between runs */
	pid = spawn(e, "/");
	attach1(e, "job", pid);
	assert_int_equal(cgsim_charge(e->sim, cgpath(e, s->name), 0, 1 * MiB), 0);
	assert_int_equal(cgsim_oom_kill(e->sim, cgpath(e, s->name)), 0);
	assert_int_equal(cgsim_oom_kill(e->sim, cgpath(e, s->name)), 0);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "job", SLOT_IDLE, 3.0));
	assert_int_equal(s->runs, 2);
	assert_int_equal(slot_last_run(s)->memory_peak, 1 * MiB);
	assert_false(slot_last_run(s)->peak_sampled);
	assert_int_equal(slot_last_run(s)->oom_kills, 2);
	/* the kernel's own watermark on v2 stays (others may read it) */
	if (!hybrid(e))
		assert_int_equal(atoll(slot_file(e, s->name, "memory.peak")), 8 * MiB);

	/* a run over before its event came: the next Attach ends it and
	 * starts its own, the new run counting from the counter read at the
	 * end (one read of it in that request) */
	pid = spawn(e, "/");
	attach1(e, "job", pid);
	assert_int_equal(cgsim_oom_kill(e->sim, cgpath(e, s->name)), 0);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	cgsim_calls_clear(e->sim);
	pid = spawn(e, "/");
	attach1(e, "job", pid);
	assert_int_equal(s->runs, 4);
	assert_int_equal(s->recent[(s->nrecent - 2) % SLOT_RECENT_RUNS].oom_kills, 1);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_READ, hybrid(e) ? "*/memory.oom_control" : "*/memory.events"), 1);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "job", SLOT_IDLE, 3.0));
	assert_int_equal(s->runs, 4);
	assert_int_equal(slot_last_run(s)->oom_kills, 0);
	/* and one started on its own reads the counter itself */
	pid = spawn(e, "/");
	cgsim_calls_clear(e->sim);
	attach1(e, "job", pid);
	assert_int_equal(cgsim_oom_kill(e->sim, cgpath(e, s->name)), 0);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_READ, hybrid(e) ? "*/memory.oom_control" : "*/memory.events"), 1);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "job", SLOT_IDLE, 3.0));
	assert_int_equal(s->runs, 5);
	assert_int_equal(slot_last_run(s)->oom_kills, 1);
}

/* memory.current reads of the slots since the last cgsim_calls_clear */
static unsigned current_reads(struct env *e, const char *name)
{
	char pat[64];

	snprintf(pat, sizeof(pat), "/%s/run/memory.current", name ? name : "*");
	return cgsim_calls(e->sim, CGSIM_OP_READ, name ? pat : "/memory.current");
}

/* v2 before 6.12: no memory.peak (peak_file false, as before 5.19) or one
 * that cannot be reset for a run (5.19-6.11: the slot's peak since its
 * mkdir). A run's peak is then the highest memory.current sampled at its
 * start, once a second and at its end: what rose and fell between two
 * ticks is not seen, and the kernel's file is never what a run reports. */
static void peak_sampled(struct env *e, bool peak_file)
{
	struct cgsim_opts *o = cgsim_options(e->sim);
	const struct cg_features *f;
	const struct run *r;
	struct slot *s;
	pid_t pid;

	o->memory_peak = peak_file;
	o->peak_reset = false;
	env_start(e);
	f = &cg_get_info(e->cg)->features;
	assert_int_equal(f->memory_peak, peak_file);
	assert_false(f->memory_peak_reset);

	pid = spawn(e, "/");
	s = attach1(e, "job", pid);
	assert_true(slot_last_run(s)->peak_sampled);
	assert_int_equal(cgsim_charge(e->sim, cgpath(e, s->name), 0, 8 * MiB), 0);
	pump(e, 1.5); /* a tick reads 8 MiB */
	assert_int_equal(slot_last_run(s)->memory_peak, 8 * MiB);
	assert_int_equal(cgsim_uncharge(e->sim, cgpath(e, s->name), 0, 7 * MiB), 0);
	/* up and down again between two ticks: not seen */
	assert_int_equal(cgsim_charge(e->sim, cgpath(e, s->name), 0, 32 * MiB), 0);
	assert_int_equal(cgsim_uncharge(e->sim, cgpath(e, s->name), 0, 32 * MiB), 0);
	pump(e, 1.0);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "job", SLOT_IDLE, 3.0));
	r = slot_last_run(s);
	assert_true(r->peak_sampled);
	assert_int_equal(r->memory_peak, 8 * MiB);
	if (peak_file) /* the kernel's watermark since mkdir saw the 33 MiB */
		assert_int_equal(atoll(slot_file(e, s->name, "memory.peak")), 33 * MiB);
	else
		assert_null(slot_file(e, s->name, "memory.peak"));

	/* no slot runs: the timer is stopped, nothing is read */
	cgsim_calls_clear(e->sim);
	pump(e, 3.0);
	assert_int_equal(current_reads(e, NULL), 0);

	/* the next run starts from the 1 MiB left; its peak is its own (not the
	 * 8 MiB before), and the sample at its end sees what came after the
	 * last tick */
	pid = spawn(e, "/");
	attach1(e, "job", pid);
	assert_int_equal(cgsim_charge(e->sim, cgpath(e, s->name), 0, 2 * MiB), 0);
	pump(e, 1.5);
	assert_int_equal(slot_last_run(s)->memory_peak, 3 * MiB);
	assert_int_equal(cgsim_charge(e->sim, cgpath(e, s->name), 0, 2 * MiB), 0);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "job", SLOT_IDLE, 0.4)); /* before the next tick */
	assert_int_equal(slot_last_run(s)->memory_peak, 5 * MiB);
	assert_true(slot_last_run(s)->peak_sampled);

	/* the state file keeps both, and says they were sampled */
	env_stop(e);
	env_start(e);
	s = pool_find(e->pool, "job");
	assert_non_null(s);
	assert_int_equal(s->nrecent, 2);
	assert_true(s->recent[0].peak_sampled);
	assert_int_equal(s->recent[0].memory_peak, 8 * MiB);
	assert_true(s->recent[1].peak_sampled);
	assert_int_equal(s->recent[1].memory_peak, 5 * MiB);
}

static void test_peak_sampled_no_file(void **state)
{
	peak_sampled(*state, false);
}

static void test_peak_sampled_no_reset(void **state)
{
	peak_sampled(*state, true);
}

/* With more running slots than a tick reads (PEAK_BATCH, 1024), each tick
 * goes on from where the last one stopped, through the slot ids. */
static void test_peak_sampled_round_robin(void **state)
{
	const unsigned N = 1030, BATCH = 1024;
	struct env *e = *state;
	struct slot **run = calloc(N, sizeof(*run));
	char key[32];

	assert_non_null(run);
	cgsim_options(e->sim)->memory_peak = false;
	cgsim_options(e->sim)->peak_reset = false;
	e->conf->pool.max_slots = N + 10;
	env_start(e);
	for (unsigned i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "job-%u", i);
		attach1(e, key, spawn(e, "/"));
		if (i % 64 == 0)
			pump(e, 0.001); /* their events */
	}
	assert_int_equal(count(e, SLOT_RUNNING), N);
	for (struct slot *s = pool_slot_from(e->pool, 0), **v = run; s; s = pool_slot_from(e->pool, s->id + 1))
		if (s->state == SLOT_RUNNING)
			*v++ = s; /* by id */
	for (int tick = 0; tick < 3; tick++) {
		cgsim_calls_clear(e->sim);
		for (int t = 0; t < 200 && current_reads(e, NULL) == 0; t++)
			pump(e, 0.01);
		assert_int_equal(current_reads(e, NULL), BATCH);
		/* tick 0: the first BATCH by id; tick 1: the N - BATCH left,
		 * then from the lowest id on again; tick 2 from there on */
		unsigned from = tick * BATCH % N;
		for (unsigned k = 0; k < N; k++) {
			unsigned i = (from + k) % N;
			assert_int_equal(current_reads(e, run[i]->name), k < BATCH);
		}
	}
	free(run);
}

static void test_daemon_restart(void **state)
{
	struct env *e = *state;
	struct slot *web, *db;
	char webslot[32], dbslot[32];
	uint64_t webid, dbid;
	pid_t p1;

	env_start(e);
	p1 = spawn(e, "/");
	web = attach1(e, "web", p1);
	db = run_and_idle(e, "db", 0, 0);
	snprintf(webslot, sizeof(webslot), "%s", web->name);
	snprintf(dbslot, sizeof(dbslot), "%s", db->name);
	webid = web->cgroup_id;
	dbid = db->cgroup_id;
	env_stop(e);

	/* while the daemon is down: web's run ends, a run of db starts */
	assert_int_equal(cgsim_exit(e->sim, p1), 0);
	spawn(e, cgpath(e, dbslot));
	cgsim_calls_clear(e->sim);
	env_start(e);
	web = pool_find(e->pool, "web");
	db = pool_find(e->pool, "db");
	assert_non_null(web);
	assert_non_null(db);
	assert_string_equal(web->name, webslot);
	assert_string_equal(db->name, dbslot);
	assert_int_equal(web->cgroup_id, webid);
	assert_int_equal(db->cgroup_id, dbid);
	assert_int_equal(web->state, SLOT_IDLE);
	assert_int_equal(web->runs, 1);
	assert_true(slot_last_run(web)->ended_us > 0);
	assert_int_equal(db->state, SLOT_RUNNING);
	assert_int_equal(db->runs, 2);
	assert_int_equal(slot_last_run(db)->ended_us, 0);
	assert_int_equal(count(e, SLOT_WARM), 2);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_MKDIR, "/slot-*"), 0); /* adopted, not made */
	/* and the pool goes on from there */
	attach1(e, "web", spawn(e, "/"));
	assert_int_equal(web->runs, 2);
}

/* the mount points of the sim's hierarchies the pool uses */
static size_t pool_mounts(const struct env *e, const char *m[3])
{
	if (!hybrid(e)) {
		m[0] = "/sys/fs/cgroup";
		return 1;
	}
	m[0] = "/sys/fs/cgroup/memory";
	m[1] = "/sys/fs/cgroup/pids";
	m[2] = "/sys/fs/cgroup/unified";
	return 3;
}

/* Slot directories an older cgpoold made, without a run: one empty, one with
 * a process and a memory limit in the directory itself. At start each gets a
 * run (the process moved into it), and neither serves a new run: the empty
 * one is retired at once, the other once its process is gone; the key's next
 * run gets a slot of its own. */
static void test_legacy_slots(void **state)
{
	struct env *e = *state;
	const char *m[3];
	size_t nm;
	char p[PATH_MAX * 2], cgp[PATH_MAX];
	struct slot *s;
	unsigned n;
	pid_t pid, pid2;

	env_start(e);
	env_stop(e);
	nm = pool_mounts(e, m);
	for (size_t i = 0; i < nm; i++)
		for (int k = 8; k <= 9; k++) {
			snprintf(p, sizeof(p), "%s%s/slot-%d", m[i], e->root, k);
			assert_int_equal(cgsim_ops(e->sim)->mkdir(e->sim, p), 0);
		}
	snprintf(p, sizeof(p), "%s/slot-9/%s", e->mem_root, hybrid(e) ? "memory.limit_in_bytes" : "memory.max");
	assert_int_equal(cgsim_ops(e->sim)->write(e->sim, p, "67108864"), 0);
	snprintf(cgp, sizeof(cgp), "%s/slot-9", e->root);
	pid = spawn(e, cgp);
	env_start(e);
	env_retire(e);
	/* the process is in slot-9's run now, in every hierarchy */
	assert_int_equal(cgsim_nprocs(e->sim, cgpath(e, "slot-9"), &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(cgsim_nprocs(e->sim, cgp, &n), 0);
	assert_int_equal(n, 0);
	s = slot_named(e, "slot-9");
	assert_non_null(s);
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_string_equal(s->key, "orphan.slot-9");
	/* the empty one goes */
	for (int i = 0; i < 300 && slot_named(e, "slot-8"); i++)
		pump(e, 0.01);
	assert_null(slot_named(e, "slot-8"));
	/* a new run of the key while the old one's process lives: its slot */
	pid2 = spawn(e, "/");
	assert_ptr_equal(attach1(e, "orphan.slot-9", pid2), s);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	pump(e, 0.05);
	assert_int_equal(s->state, SLOT_RUNNING);
	/* once the slot is empty: retired, and the key's next run elsewhere */
	assert_int_equal(cgsim_exit(e->sim, pid2), 0);
	for (int i = 0; i < 300 && slot_named(e, "slot-9"); i++)
		pump(e, 0.01);
	assert_null(slot_named(e, "slot-9"));
	s = attach1(e, "web", spawn(e, "/"));
	assert_true(strcmp(s->name, "slot-9") != 0 && strcmp(s->name, "slot-8") != 0);
	assert_string_equal(mem_max(e, s->name), mem_unlimited(e));
}

/* v2: a restart that manages more controllers (cpuset added) gives the
 * slots it finds them too: each slot's directory passes them to its run */
static void test_restart_more_controllers(void **state)
{
	struct env *e = *state;
	struct slot *s;
	char name[SLOT_NAME_MAX];

	env_start(e);
	s = run_and_idle(e, "web", 0, 0);
	snprintf(name, sizeof(name), "%s", s->name);
	assert_false(cg_resource_supported(e->cg, "cpuset.cpus"));
	env_stop(e);
	e->ctrls = CG_CTRL_MEMORY | CG_CTRL_PIDS | CG_CTRL_CPUSET;
	env_start(e);
	s = pool_find(e->pool, "web");
	assert_non_null(s);
	assert_string_equal(s->name, name);
	assert_int_equal(cg_slot_set(e->cg, name, "cpuset.cpus", "0"), 0);
	assert_string_equal(slot_file(e, name, "cpuset.cpus"), "0");
}

static void test_corrupt_state(void **state)
{
	struct env *e = *state;
	struct capture cap;
	char p[PATH_MAX];
	size_t before;

	env_start(e);
	attach1(e, "web", spawn(e, "/"));
	run_and_idle(e, "db", 0, 0);
	before = (size_t)count(e, SLOT_WARM) + count(e, SLOT_RUNNING) + count(e, SLOT_IDLE);
	env_stop(e);
	snprintf(p, sizeof(p), "%s/state.json", e->state_dir);
	assert_int_equal(file_write_atomic(p, "{\"version\": 1, \"slots\": [", 25, 0644), 0);

	capture_begin(&cap);
	env_start(e);
	capture_end(&cap);
	assert_non_null(strstr(cap.text, "state.json unusable"));
	assert_non_null(strstr(cap.text, "bound to key orphan.slot-")); /* web's, still running */
	assert_null(pool_find(e->pool, "web"));
	assert_null(pool_find(e->pool, "db"));
	assert_int_equal(count(e, SLOT_RUNNING), 1);
	assert_int_equal(count(e, SLOT_WARM), before - 1);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_RMDIR, "/slot-*"), 0);
}

/* without cgroup.events watching the pool polls */
static void test_polling(void **state)
{
	struct env *e = *state;
	struct slot *s;
	pid_t pid;

	env_start(e);
	pid = spawn(e, "/");
	s = attach1(e, "web", pid);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	pump(e, 0.2);
	assert_int_equal(s->state, SLOT_RUNNING); /* not seen yet */
	assert_non_null(pump_until(e, "web", SLOT_IDLE, 3.0));
	assert_int_equal(s->state, SLOT_IDLE);
	assert_int_equal(s->runs, 1);
}

/* ---- faults */

static void test_fault_mkdir(void **state)
{
	struct env *e = *state;
	struct slot *s = NULL;
	pid_t pid, bad = 0;

	e->conf->pool.warm = 0;
	env_start(e);
	/* hybrid: the pids hierarchy fails after the memory one made its part */
	cgsim_fail(e->sim, CGSIM_OP_MKDIR, hybrid(e) ? "/sys/fs/cgroup/pids/*/slot-0" : "/slot-0", -ENOSPC, 1);
	cgsim_calls_clear(e->sim);
	pid = spawn(e, "/");
	/* the kernel's refusal is not max_slots' */
	assert_int_equal(pool_attach(e->pool, "web", NULL, &pid, 1, &s, &bad), -ENFILE);
	assert_null(s);
	assert_null(pool_find(e->pool, "web"));
	assert_int_equal(count(e, SLOT_WARM), 0);
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-0"))); /* undone */
	if (hybrid(e))
		assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_RMDIR, "/sys/fs/cgroup/memory/*/slot-0"), 1);
	/* the fault passed: the same name is made */
	s = attach1(e, "web", pid);
	assert_string_equal(s->name, "slot-0");
	assert_int_equal(s->runs, 1);
	pump(e, 1.1); /* the refill's back-off ends */

	/* a warm slot that cannot be made is not the request's failure */
	e->conf->pool.warm = 1;
	cgsim_fail(e->sim, CGSIM_OP_MKDIR, "/slot-2", -ENOSPC, CGSIM_FOREVER);
	s = attach1(e, "db", spawn(e, "/"));
	assert_string_equal(s->name, "slot-1");
	assert_int_equal(count(e, SLOT_WARM), 0);
}

static unsigned occurrences(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

/* mkdir ENOSPC: the kernel has no memory cgroup IDs left. New keys are
 * refused with that cause (not max_slots), it is logged once, the warm
 * refill backs off, and the keys that have a slot go on being served. */
static void test_no_cgroup_ids(void **state)
{
	struct env *e = *state;
	struct capture cap;
	struct slot *s = NULL;
	pid_t pid, bad = 0;
	unsigned mkdirs;

	e->conf->pool.warm = 1;
	env_start(e);
	capture_begin(&cap);
	cgsim_fail(e->sim, CGSIM_OP_MKDIR, "*/slot-*", -ENOSPC, CGSIM_FOREVER);
	s = attach1(e, "a", spawn(e, "/")); /* the warm slot; its refill is refused */
	assert_string_equal(s->name, "slot-0");
	for (int i = 0; i < 3; i++) {
		pid = spawn(e, "/");
		s = NULL;
		assert_int_equal(pool_attach(e->pool, "b", NULL, &pid, 1, &s, &bad), -ENFILE);
		assert_null(s);
		assert_null(pool_find(e->pool, "b"));
	}
	/* the refill waits for its back-off: no mkdir of its own meanwhile */
	mkdirs = cgsim_calls(e->sim, CGSIM_OP_MKDIR, "*/slot-*");
	pump(e, 0.5);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_MKDIR, "*/slot-*"), mkdirs);
	/* a key with a slot is served */
	s = attach1(e, "a", spawn(e, "/"));
	assert_string_equal(s->name, "slot-0");
	assert_int_equal(pool_release(e->pool, "a", &s), 0);
	/* IDs come back: the refill's next trial makes the warm slot */
	cgsim_fail_clear(e->sim);
	pump(e, 1.2);
	capture_end(&cap);
	assert_int_equal(count(e, SLOT_WARM), 1);
	assert_int_equal(occurrences(cap.text, "no memory cgroup IDs left (mkdir: ENOSPC); dying memcgs: "), 1);
	s = attach1(e, "b", spawn(e, "/"));
	assert_string_equal(s->name, "slot-1");
}

static void test_fault_reclaim(void **state)
{
	struct env *e = *state;
	struct cgsim_mem m;
	struct slot *s;
	int res = 0;

	e->conf->pool.idle_timeout_ms = 50;
	env_start(e);
	if (hybrid(e))
		cgsim_fail(e->sim, CGSIM_OP_WRITE, "/memory.force_empty", -EBUSY, CGSIM_FOREVER);
	else
		cgsim_fail(e->sim, CGSIM_OP_WRITE, "/memory.reclaim", -EAGAIN, CGSIM_FOREVER);
	s = run_and_idle(e, "web", 2 * MiB, 0);
	assert_int_equal(cg_slot_set(e->cg, s->name, "memory.max", "1048576"), 0);
	assert_true(pump_until_gone(e, "web", 2.0));
	/* recycled all the same */
	assert_int_equal(s->state, SLOT_WARM);
	assert_string_equal(s->key, "");
	assert_string_equal(mem_max(e, s->name), mem_unlimited(e));
	assert_non_null(cgsim_last_write(e->sim, hybrid(e) ? "/memory.force_empty" : "/memory.reclaim", &res));
	assert_int_equal(res, hybrid(e) ? -EBUSY : -EAGAIN);
	assert_int_equal(cgsim_memory(e->sim, cgpath(e, s->name), &m), 0);
	assert_int_equal(m.file, 2 * MiB); /* nothing was reclaimed */
	assert_ptr_equal(attach1(e, "next", spawn(e, "/")), s);
}

static void test_fault_events_read(void **state)
{
	struct env *e = *state;
	struct slot *s;
	pid_t pid;

	env_start(e);
	pid = spawn(e, "/");
	s = attach1(e, "web", pid);
	/* the read after the run's end fails once: the end is not lost */
	cgsim_fail(e->sim, CGSIM_OP_READ, "*/slot-0/run/cgroup.events", -EIO, 1);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "web", SLOT_IDLE, 3.0));
	assert_int_equal(s->state, SLOT_IDLE);
	assert_int_equal(s->runs, 1);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_READ, "*/slot-0/run/cgroup.events") >= 2, 1);
}

/* the population unreadable at start-up: the saved state stands, and no
 * slot is scrubbed under processes nobody told the pool about */
static void test_fault_events_at_start(void **state)
{
	struct env *e = *state;
	struct slot *web, *db;
	pid_t pweb, pdb;

	env_start(e);
	pweb = spawn(e, "/");
	web = attach1(e, "web", pweb);
	db = run_and_idle(e, "db", 0, 0);
	assert_string_equal(web->name, "slot-0");
	assert_string_equal(db->name, "slot-1");
	env_stop(e);

	/* down: web keeps running; a run of db starts; db's idle time runs out */
	pdb = spawn(e, cgpath(e, "slot-1"));
	e->conf->pool.idle_timeout_ms = 50;
	cgsim_fail(e->sim, CGSIM_OP_READ, "*/slot-0/run/cgroup.events", -EIO, 2);
	cgsim_fail(e->sim, CGSIM_OP_READ, "*/slot-1/run/cgroup.events", -EIO, 2);
	cgsim_calls_clear(e->sim);
	env_start(e);
	web = pool_find(e->pool, "web");
	db = pool_find(e->pool, "db");
	assert_non_null(web);
	assert_non_null(db);
	assert_int_equal(web->state, SLOT_RUNNING);
	assert_int_equal(web->runs, 1);
	assert_int_equal(slot_last_run(web)->ended_us, 0);
	assert_int_equal(db->state, SLOT_IDLE); /* what the file says, for now */
	/* the reads come back: db's run is found, nothing was scrubbed */
	assert_non_null(pump_until(e, "db", SLOT_RUNNING, 3.0));
	assert_int_equal(db->runs, 2);
	assert_int_equal(web->state, SLOT_RUNNING);
	assert_null(cgsim_last_write(e->sim, "/memory.reclaim", NULL));
	assert_null(cgsim_last_write(e->sim, "/memory.force_empty", NULL));
	/* and the runs end as usual */
	assert_int_equal(cgsim_exit(e->sim, pweb), 0);
	assert_int_equal(cgsim_exit(e->sim, pdb), 0);
	assert_true(pump_until_gone(e, "web", 3.0));
	assert_true(pump_until_gone(e, "db", 3.0));
}

/* memory pressure and a lower max_slots retire idle slots first, least
 * recently used first, then spare warm ones; running slots never */
static void test_shrink(void **state)
{
	struct env *e = *state;
	struct conf *c2;
	pid_t busy;

	e->conf->pool.warm = 1;
	env_start(e);
	run_and_idle(e, "a", 0, 0);
	run_and_idle(e, "b", 0, 0);
	run_and_idle(e, "c", 0, 0);
	busy = spawn(e, "/");
	attach1(e, "busy", busy);
	/* a, b, c idle in that order; busy running; one warm. All were used
	 * within idle_timeout: pressure takes none of them */
	assert_int_equal(pool_shrink(e->pool, 2), 0);
	assert_int_equal(count(e, SLOT_IDLE), 3);
	/* unused for longer than idle_timeout they may go, at most
	 * retire.rate per call; b released again is in use */
	for (const char *const *k = (const char *const[]){ "a", "b", "c", NULL }; *k; k++) {
		struct slot *s = pool_find(e->pool, *k);
		s->idle_since_us -= 11 * 60 * 1000000LL;
		s->used_us -= 11 * 60 * 1000000LL;
	}
	pool_release(e->pool, "b", &(struct slot *){ NULL });
	e->conf->retire.rate = 1;
	assert_int_equal(pool_shrink(e->pool, 2), 1);
	assert_null(pool_find(e->pool, "a"));
	e->conf->retire.rate = 20;
	assert_int_equal(pool_shrink(e->pool, 2), 1);
	assert_null(pool_find(e->pool, "c"));
	assert_non_null(pool_find(e->pool, "b"));
	assert_int_equal(count(e, SLOT_WARM), 1);
	pool_find(e->pool, "b")->used_us -= 11 * 60 * 1000000LL;
	/* more than there is: b, and no warm slot below the target */
	assert_int_equal(pool_shrink(e->pool, 10), 1);
	assert_null(pool_find(e->pool, "b"));
	assert_non_null(pool_find(e->pool, "busy"));
	assert_int_equal(count(e, SLOT_WARM), 1);
	assert_int_equal(count(e, SLOT_RUNNING), 1);

	/* a reload to max_slots 1: the warm slot goes, the running one stays */
	c2 = conf_new_defaults();
	assert_non_null(c2);
	free(c2->daemon.state_dir);
	c2->daemon.state_dir = strdup(e->state_dir);
	c2->pool.warm = 1;
	c2->pool.max_slots = 1;
	pool_set_conf(e->pool, c2);
	assert_int_equal(count(e, SLOT_WARM), 0);
	assert_int_equal(count(e, SLOT_RUNNING), 1);
	pool_set_conf(e->pool, e->conf);
	conf_free(c2);
	cgsim_exit(e->sim, busy);

	/* mode keep never removes */
	e->conf->retire.mode = RETIRE_KEEP;
	run_and_idle(e, "d", 0, 0);
	assert_int_equal(pool_shrink(e->pool, 5), 0);
	assert_non_null(pool_find(e->pool, "d"));
}

static double ms_since(int64_t t0)
{
	return (now_mono_us() - t0) / 1000.0;
}

/* With worker threads, a slow mkdir of a warm slot and a slow reclaim of a
 * recycled one do not hold up Attach, and a slot being scrubbed is not handed
 * to a new key before its reclaim is done. */
static void test_slow_writes_on_workers(void **state)
{
	struct env *e = *state;
	struct work *w;
	struct slot *a, *b, *c;
	pid_t pb = 0;
	int64_t t0;

	e->conf->pool.idle_timeout_ms = 50;
	env_start(e);
	assert_int_equal(work_new(e->loop, 2, &w), 0);
	struct simclock_work busy = { w, 2 };
	simclock_start(simclock_work_busy, &busy);
	pool_set_work(e->pool, w);
	assert_int_equal(cgsim_set_delay(e->sim, "/slot-2", 300000), 0);
	assert_int_equal(cgsim_set_delay(e->sim, "/slot-3", 300000), 0);
	t0 = now_mono_us();
	a = attach1(e, "a", spawn(e, "/"));
	pb = spawn(e, "/");
	b = attach1(e, "b", pb);
	attach1(e, "a", spawn(e, "/"));
	assert_true(ms_since(t0) < 150); /* the two mkdirs take 300 ms each, elsewhere */
	assert_string_equal(a->name, "slot-0");
	assert_string_equal(b->name, "slot-1");
	assert_int_equal(count(e, SLOT_WARM), 0);
	for (int i = 0; i < 200 && count(e, SLOT_WARM) < 2; i++)
		pump(e, 0.01);
	assert_int_equal(count(e, SLOT_WARM), 2);
	assert_true(ms_since(t0) >= 290);

	/* b's slot is recycled with 4 MiB of cache; its reclaim takes 400 ms */
	assert_int_equal(cgsim_set_delay(e->sim, hybrid(e) ? "/slot-1/run/memory.force_empty" : "/slot-1/run/memory.reclaim",
					 400000), 0);
	c = run_and_idle(e, "c", 4 * MiB, 0); /* slot-2 */
	assert_string_equal(c->name, "slot-2");
	assert_int_equal(cgsim_charge(e->sim, cgpath(e, "slot-1"), 4 * MiB, 0), 0);
	assert_int_equal(cgsim_exit(e->sim, pb), 0);
	assert_true(pump_until_gone(e, "b", 2.0));
	assert_true(b->busy);
	t0 = now_mono_us();
	c = attach1(e, "d", spawn(e, "/"));
	assert_true(ms_since(t0) < 150);
	assert_string_not_equal(c->name, "slot-1"); /* still being scrubbed */
	for (int i = 0; i < 100 && b->busy; i++)
		pump(e, 0.01);
	assert_false(b->busy);
	assert_int_equal(b->state, SLOT_WARM);
	assert_ptr_equal(attach1(e, "e", spawn(e, "/")), b); /* the lowest id, now that it is ready */
	pool_free(e->pool);
	e->pool = NULL;
	simclock_start(NULL, NULL);
	work_free(w);
}

/* 1,000 keys through the pool (10,000 with CGPOOL_TEST_SCALE=1: make
 * check-scale): one process moved from key to key, so every bind also ends
 * the previous key's run. Lookups, counts and the order of the idle list
 * hold, and all of it survives a restart. */
static void test_many_slots(void **state)
{
	const unsigned N = scale() ? 10000 : 1000, keep = N / 10;
	struct env *e = *state;
	char key[32];
	struct slot *s, *prev = NULL;
	pid_t pid;

	e->conf->pool.max_slots = N + 10;
	e->conf->pool.warm = 4;
	e->conf->pool.idle_timeout_ms = 3600 * 1000; /* nothing recycled while it runs */
	env_start(e);
	pid = spawn(e, "/");
	for (unsigned i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "job-%u", i);
		s = attach1(e, key, pid);
		assert_ptr_not_equal(s, prev);
		prev = s;
		if (i % 20 == 0)
			pump(e, 0.001); /* the runs that ended: their events */
	}
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, key, SLOT_IDLE, 10.0));
	for (int t = 0; t < 500 && count(e, SLOT_IDLE) < N; t++)
		pump(e, 0.01);
	assert_int_equal(count(e, SLOT_IDLE), N);
	assert_int_equal(count(e, SLOT_RUNNING), 0);
	assert_int_equal(count(e, SLOT_WARM), 4);
	for (unsigned i = 0; i < N; i += 97) {
		snprintf(key, sizeof(key), "job-%u", i);
		s = pool_find(e->pool, key);
		assert_non_null(s);
		assert_string_equal(s->key, key);
		assert_int_equal(s->runs, 1);
	}
	/* least recently used first: job-0 ended first */
	env_stop(e);
	env_start(e);
	assert_int_equal(count(e, SLOT_IDLE), N);
	assert_int_equal(count(e, SLOT_WARM), 4);
	assert_non_null(pool_find(e->pool, "job-0"));
	e->conf->pool.idle_timeout_ms = 0; /* pressure takes only keys unused that long */
	assert_int_equal(pool_shrink(e->pool, 2), 2);
	assert_null(pool_find(e->pool, "job-0"));
	assert_null(pool_find(e->pool, "job-1"));
	assert_non_null(pool_find(e->pool, "job-2"));
	assert_int_equal(count(e, SLOT_IDLE), N - 2);
	snprintf(key, sizeof(key), "job-%u", N - 1);
	assert_non_null(pool_find(e->pool, key));
	assert_null(pool_find(e->pool, "job-100000"));

	/* a reload to max_slots N / 10: a batch at once, the rest between loop
	 * passes, least recently used first */
	struct conf *c2 = conf_new_defaults();
	unsigned passes = 0;
	assert_non_null(c2);
	free(c2->daemon.state_dir);
	c2->daemon.state_dir = strdup(e->state_dir);
	c2->pool.warm = 0;
	c2->pool.max_slots = keep;
	pool_set_conf(e->pool, c2);
	assert_true(count(e, SLOT_IDLE) < N - 2);
	assert_true(count(e, SLOT_IDLE) > keep);
	while (count(e, SLOT_IDLE) + count(e, SLOT_WARM) > keep && passes++ < 1000)
		pump(e, 0.001);
	assert_true(passes > 1); /* in several loop passes, not one */
	assert_int_equal(count(e, SLOT_IDLE) + count(e, SLOT_WARM), keep);
	assert_int_equal(count(e, SLOT_WARM), 4); /* idle ones go first */
	snprintf(key, sizeof(key), "job-%u", N - (keep - 4));
	assert_non_null(pool_find(e->pool, key));
	snprintf(key, sizeof(key), "job-%u", N - (keep - 4) - 1);
	assert_null(pool_find(e->pool, key));
	env_stop(e); /* before c2 goes */
	conf_free(c2);
}


/* Attach limits hold for one run: written over the class's settings before
 * the pid moves, undone at the key's next run; they survive a restart of the
 * daemon (the state file keeps which keys the run set). */
static void test_run_limits(void **state)
{
	struct env *e = *state;
	struct conf_class *c = add_class(e, "batch", "slurm.*");
	struct conf_res lim[2];
	char err[320];
	pid_t pid = 0, bad = 0;
	struct slot *s = NULL;

	add_res(c, "pids.max", "64");
	env_start(e);
	assert_int_equal(conf_res_value("memory.max", "64M", &lim[0], err, sizeof(err)), 0);
	assert_int_equal(conf_res_value("pids.max", "50", &lim[1], err, sizeof(err)), 0);
	assert_int_equal(conf_res_value("memory.max", "lots", &lim[1], err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "memory.max"));
	assert_int_equal(conf_res_value("pids.max", "50", &lim[1], err, sizeof(err)), 0);
	pid = spawn(e, "/");
	struct attach_req req = { "slurm.7", NULL, 0, &pid, 1, lim, 2, NULL, 0, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(mem_max(e, s->name), "67108864");
	assert_string_equal(pids_max(e, s->name), "50");
	assert_int_equal(s->run_limits, res_bit("memory.max") | res_bit("pids.max"));

	/* the daemon restarts while the run goes on: it still knows */
	env_stop(e);
	env_start(e);
	s = pool_find(e->pool, "slurm.7");
	assert_non_null(s);
	assert_int_equal(s->run_limits, res_bit("memory.max") | res_bit("pids.max"));

	/* the next run, without limits: the kernel's default and the class's value */
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "slurm.7", SLOT_IDLE, 3.0));
	s = attach1(e, "slurm.7", spawn(e, "/"));
	assert_int_equal(s->runs, 2);
	assert_string_equal(mem_max(e, s->name), mem_unlimited(e));
	assert_string_equal(pids_max(e, s->name), "64");
	assert_int_equal(s->run_limits, 0);
}

/* An Attach whose limit the kernel refuses into a running run: the run's
 * limits stay as they were, also those the same Attach wrote before. */
static void test_limit_kept(void **state)
{
	struct env *e = *state;
	struct conf_res big, lim[2];
	char err[320], pids_before[32];
	pid_t pid, pid2, bad = 0;
	struct slot *s = NULL;

	env_start(e);
	assert_int_equal(conf_res_value("memory.max", "512M", &big, err, sizeof(err)), 0);
	assert_int_equal(conf_res_value("pids.max", "10", &lim[0], err, sizeof(err)), 0);
	assert_int_equal(conf_res_value("memory.max", "64M", &lim[1], err, sizeof(err)), 0);
	pid = spawn(e, "/");
	struct attach_req req = { "slurm.7", NULL, 0, &pid, 1, &big, 1, NULL, 0, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(mem_max(e, s->name), "536870912");
	snprintf(pids_before, sizeof(pids_before), "%s", pids_max(e, s->name));
	/* the kernel refuses a limit below what the run uses (EBUSY on v1) */
	cgsim_fail(e->sim, CGSIM_OP_WRITE, hybrid(e) ? "*/memory.limit_in_bytes" : "*/memory.max", -EBUSY, 1);
	pid2 = spawn(e, "/");
	const struct conf_res *refused = NULL;
	req = (struct attach_req){ "slurm.7", NULL, 0, &pid2, 1, lim, 2, NULL, 0, false, &refused };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), -EBUSY);
	assert_ptr_equal(refused, &lim[1]); /* the caller hears which limit */
	s = pool_find(e->pool, "slurm.7");
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_string_equal(mem_max(e, s->name), "536870912");
	assert_string_equal(pids_max(e, s->name), pids_before);
	assert_int_equal(s->run_limits, res_bit("memory.max"));
	/* the same limit again goes through and changes nothing */
	req = (struct attach_req){ "slurm.7", NULL, 0, &pid2, 1, &big, 1, NULL, 0, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(mem_max(e, s->name), "536870912");
}

/* cpuset.cpus and cpuset.mems as Attach limits on v2: the run's CPUs, the
 * parent's again at the key's next run; on a layout where cpuset is not on
 * cgroup v2 the daemon does not start with it. */
static void test_cpuset_limits(void **state)
{
	struct env *e = *state;
	struct conf_res lim[2];
	char err[320];
	pid_t pid, bad = 0;
	struct slot *s = NULL;
	int r;

	e->ctrls = CG_CTRL_MEMORY | CG_CTRL_PIDS | CG_CTRL_CPUSET;
	if (hybrid(e)) {
		r = cg_open_fs(cgsim_ops(e->sim), e->sim, cgsim_mountinfo(e->sim), cgsim_proc_self_cgroup(e->sim),
			       "auto", e->ctrls, &e->cg, e->err, sizeof(e->err));
		assert_true(r < 0);
		assert_non_null(strstr(e->err, "cpuset"));
		return;
	}
	assert_int_equal(conf_res_value("cpuset.cpus", "1,3-5", &lim[0], err, sizeof(err)), 0);
	assert_string_equal(lim[0].value, "1,3-5");
	assert_int_equal(conf_res_value("cpuset.cpus", "5-3", &lim[1], err, sizeof(err)), -EINVAL);
	assert_int_equal(conf_res_value("cpuset.mems", "0", &lim[1], err, sizeof(err)), 0);
	env_start(e);
	pid = spawn(e, "/");
	struct attach_req req = { "slurm.8", NULL, 0, &pid, 1, lim, 2, NULL, 0, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(slot_file(e, s->name, "cpuset.cpus"), "1,3-5");
	assert_string_equal(slot_file(e, s->name, "cpuset.mems"), "0");
	assert_int_equal(s->run_limits, res_bit("cpuset.cpus") | res_bit("cpuset.mems"));

	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "slurm.8", SLOT_IDLE, 3.0));
	s = attach1(e, "slurm.8", spawn(e, "/"));
	assert_string_equal(slot_file(e, s->name, "cpuset.cpus"), "");
	assert_string_equal(slot_file(e, s->name, "cpuset.mems"), "");
	assert_int_equal(s->run_limits, 0);
}

/* devices.deny: the slot's device filter (the sim keeps its rules in
 * cgsim.devices), on v2 and hybrid alike. A second step of the job denies
 * only what the run and it both deny; the next run starts with none. */
static const char *devices_of(struct env *e, const char *name)
{
	return hybrid(e) ? slot_file_in(e, "/sys/fs/cgroup/unified", name, "cgsim.devices")
			 : slot_file(e, name, "cgsim.devices");
}

static void test_devices_limit(void **state)
{
	struct env *e = *state;
	struct conf_res lim[2];
	char err[320];
	pid_t h = spawn(e, "/"), t1, t2, t3, bad = 0;
	struct slot *s = NULL;

	assert_int_equal(conf_res_value("devices.deny", " c 195:1 , c 195:3-5,b 8:*", &lim[0], err, sizeof(err)), 0);
	assert_string_equal(lim[0].value, "c 195:1,c 195:3-5,b 8:*");
	assert_int_equal(conf_res_value("devices.deny", "c 195", &lim[1], err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "c 195:0"));
	assert_int_equal(conf_res_value("devices.deny", "x 1:2", &lim[1], err, sizeof(err)), -EINVAL);
	assert_int_equal(conf_res_value("devices.deny", "c 195:3-1", &lim[1], err, sizeof(err)), -EINVAL);
	assert_int_equal(conf_res_value("devices.deny", "", &lim[1], err, sizeof(err)), -EINVAL);
	env_start(e);
	t1 = spawn(e, "/");
	struct attach_req req = { "slurm.12", NULL, 0, &t1, 1, lim, 1, "slurm:12:0", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(devices_of(e, s->name), "c 195:1,c 195:3-5,b 8:*");
	assert_int_equal(s->run_limits, res_bit("devices.deny"));
	/* a step of the same job that denies 195:0-4: 195:1 and 195:3-4 stay denied */
	assert_int_equal(conf_res_value("devices.deny", "c 195:0-4", &lim[1], err, sizeof(err)), 0);
	t2 = spawn(e, "/");
	req = (struct attach_req){ "slurm.12", NULL, 0, &t2, 1, &lim[1], 1, "slurm:12:0", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(devices_of(e, s->name), "c 195:1,c 195:3-4");
	assert_int_equal(conf_res_value("devices.deny", " none ", &lim[1], err, sizeof(err)), 0);
	assert_string_equal(lim[1].value, "none");
	/* a limit the kernel refuses, with devices.deny before it in the
	 * request: the filter is written last, so it is not touched */
	assert_int_equal(conf_res_value("memory.max", "64M", &lim[0], err, sizeof(err)), 0);
	struct conf_res two[2] = { lim[1], lim[0] };
	cgsim_fail(e->sim, CGSIM_OP_WRITE, hybrid(e) ? "/memory.limit_in_bytes" : "/memory.max", -EBUSY, 1);
	t3 = spawn(e, "/");
	req = (struct attach_req){ "slurm.12", NULL, 0, &t3, 1, two, 2, "slurm:12:0", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), -EBUSY);
	cgsim_fail_clear(e->sim);
	assert_string_equal(devices_of(e, s->name), "c 195:1,c 195:3-4");
	/* the job ends: the next run of the key has no filter */
	assert_int_equal(cgsim_exit(e->sim, t1), 0);
	assert_int_equal(cgsim_exit(e->sim, t2), 0);
	assert_int_equal(cgsim_exit(e->sim, t3), 0);
	assert_int_equal(cgsim_exit(e->sim, h), 0);
	assert_non_null(pump_until(e, "slurm.12", SLOT_IDLE, 3.0));
	s = attach1(e, "slurm.12", spawn(e, "/"));
	assert_string_equal(devices_of(e, s->name), "");
	assert_int_equal(s->run_limits, 0);
	/* a job allowed every device ("none"): a step of it denies nothing */
	h = spawn(e, "/");
	t1 = spawn(e, "/");
	req = (struct attach_req){ "slurm.13", NULL, 0, &t1, 1, &lim[1], 1, "slurm:13:0", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(devices_of(e, s->name), "");
	assert_int_equal(conf_res_value("devices.deny", "c 195:0-4", &lim[0], err, sizeof(err)), 0);
	t2 = spawn(e, "/");
	req = (struct attach_req){ "slurm.13", NULL, 0, &t2, 1, &lim[0], 1, "slurm:13:0", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(devices_of(e, s->name), "");
}

/* A run that is a job's: the key is that job's alone while it runs or a
 * holder lives; when the last holder exits, what is left in the slot is
 * killed and the key released; the next job may have it then. */
static void test_job_tenant(void **state)
{
	struct env *e = *state;
	pid_t h1 = spawn(e, "/"), h2, t1, t2, other, bad = 0;
	struct slot *s = NULL;

	env_start(e);
	t1 = spawn(e, "/");
	struct attach_req req = { "slurm.9", NULL, 0, &t1, 1, NULL, 0, "slurm:9:0", h1, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(pool_tenant_job(s), "slurm:9:0");
	assert_int_equal(pool_tenant_holders(s), 1);
	/* another job, or none, with the same key: refused, whoever asks */
	other = spawn(e, "/");
	req = (struct attach_req){ "slurm.9", NULL, 0, &other, 1, NULL, 0, "slurm:10:0", 0, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), -EADDRINUSE);
	req = (struct attach_req){ "slurm.9", NULL, 0, &other, 1, NULL, 0, NULL, 0, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), -EADDRINUSE);
	s = pool_find(e->pool, "slurm.9");
	assert_int_equal(s->runs, 1);
	/* a second step of the same job: another holder */
	h2 = spawn(e, "/");
	t2 = spawn(e, "/");
	req = (struct attach_req){ "slurm.9", NULL, 0, &t2, 1, NULL, 0, "slurm:9:0", h2, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_int_equal(pool_tenant_holders(s), 2);
	/* the tenant survives a restart of the daemon */
	env_stop(e);
	env_start(e);
	s = pool_find(e->pool, "slurm.9");
	assert_string_equal(pool_tenant_job(s), "slurm:9:0");
	assert_int_equal(pool_tenant_holders(s), 2);
	/* one step ends: the job goes on */
	assert_int_equal(cgsim_exit(e->sim, h1), 0);
	pump(e, 0.3);
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_int_equal(pool_tenant_holders(s), 1);
	/* the last: its tasks (strays) are killed, the key released, the job forgotten */
	assert_int_equal(cgsim_exit(e->sim, h2), 0);
	assert_non_null(pump_until(e, "slurm.9", SLOT_IDLE, 3.0));
	assert_true(s->released);
	assert_null(pool_tenant_job(s));
	assert_int_equal(kill(t1, 0) == 0 && kill(t2, 0) == 0, 0);
	/* now another job may have the key */
	req = (struct attach_req){ "slurm.9", NULL, 0, &other, 1, NULL, 0, "slurm:10:0", 0, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_int_equal(s->runs, 2);
}

/* A step's tasks exit before its slurmstepd: the run has ended when the
 * job's last holder goes. The job ends then all the same (the key
 * released), and the tenant goes with it: the slot's next key is nobody's
 * job, and a restart of the daemon leaves that key's processes alone. */
static void test_job_ends_after_run(void **state)
{
	struct env *e = *state;
	pid_t h = spawn(e, "/"), t = spawn(e, "/"), next, bad = 0;
	struct slot *s = NULL, *first;

	e->conf->pool.max_slots = 1; /* the next key gets the job's slot, */
	e->conf->pool.warm = 1;       /* recycled by the warm refill once released */
	env_start(e);
	struct attach_req req = { "slurm.31", NULL, 0, &t, 1, NULL, 0, "slurm:31:0", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_int_equal(cgsim_exit(e->sim, t), 0);
	assert_non_null(pump_until(e, "slurm.31", SLOT_IDLE, 3.0));
	assert_string_equal(pool_tenant_job(s), "slurm:31:0"); /* the holder lives: still the job's */
	assert_int_equal(cgsim_exit(e->sim, h), 0);
	pump(e, 0.3);
	assert_true(s->released || s->state == SLOT_WARM);
	assert_null(pool_tenant_job(s));
	/* the slot's next key, a plain run; then a restart */
	first = s;
	pump(e, 0.5);
	next = spawn(e, "/");
	s = attach1(e, "other.31", next);
	assert_ptr_equal(s, first);
	assert_null(pool_tenant_job(s));
	env_stop(e);
	env_start(e);
	pump(e, 0.3);
	s = pool_find(e->pool, "other.31");
	assert_non_null(s);
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_null(pool_tenant_job(s));
	assert_int_equal(kill(next, 0), 0);
}

static void count_frozen(struct slot *s, int r, void *ud)
{
	assert_int_equal(r, 0);
	(*(int *)ud)++;
}

/* scontrol suspend: the slots of a job frozen by the job's name or its
 * leading fields, thawed on resume, and thawed when the job ends frozen,
 * so the key's next job does not start frozen. */
static void test_job_freeze(void **state)
{
	struct env *e = *state;
	pid_t h = spawn(e, "/"), t = spawn(e, "/"), bad = 0;
	struct slot *s = NULL;
	int n = 0;
	const char *mount = hybrid(e) ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";

	env_start(e);
	struct attach_req req = { "slurm.21", NULL, 0, &t, 1, NULL, 0, "slurm:21:1000", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_int_equal(pool_tenant_freeze(e->pool, "slurm:2", true, count_frozen, &n), 0);
	assert_int_equal(pool_tenant_freeze(e->pool, "slurm:21:100", true, count_frozen, &n), 0);
	assert_int_equal(n, 0);
	assert_string_equal(slot_file_in(e, mount, s->name, "cgroup.freeze"), "0");
	assert_int_equal(pool_tenant_freeze(e->pool, "slurm:21", true, count_frozen, &n), 1);
	assert_int_equal(n, 1);
	assert_string_equal(slot_file_in(e, mount, s->name, "cgroup.freeze"), "1");
	assert_int_equal(pool_tenant_freeze(e->pool, "slurm:21:1000", false, count_frozen, &n), 1);
	assert_string_equal(slot_file_in(e, mount, s->name, "cgroup.freeze"), "0");
	/* suspended when it ends (scancel): thawed with the job's end */
	assert_int_equal(pool_tenant_freeze(e->pool, "slurm:21", true, count_frozen, &n), 1);
	assert_int_equal(cgsim_exit(e->sim, h), 0);
	assert_non_null(pump_until(e, "slurm.21", SLOT_IDLE, 3.0));
	assert_string_equal(slot_file_in(e, mount, s->name, "cgroup.freeze"), "0");
	assert_int_equal(pool_tenant_freeze(e->pool, "slurm:21", true, count_frozen, &n), 0);
}

static int no_pidfd_open(pid_t pid)
{
	(void)pid;
	errno = ENOSYS;
	return -1;
}

/* A kernel without pidfd_open (before 5.3): holders are looked at every
 * second; the job still ends when the last one exits, strays killed. */
static void test_job_tenant_polled(void **state)
{
	struct env *e = *state;
	pid_t h1 = spawn(e, "/"), t1, bad = 0;
	struct slot *s = NULL;

	pool_tenant_pidfd_open = no_pidfd_open;
	env_start(e);
	t1 = spawn(e, "/");
	struct attach_req req = { "slurm.11", NULL, 0, &t1, 1, NULL, 0, "slurm:11:0", h1, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_int_equal(pool_tenant_holders(s), 1);
	pump(e, 1.2);
	assert_int_equal(s->state, SLOT_RUNNING); /* the holder lives: the job goes on */
	assert_int_equal(cgsim_exit(e->sim, h1), 0);
	assert_non_null(pump_until(e, "slurm.11", SLOT_IDLE, 4.0));
	assert_true(s->released);
	assert_null(pool_tenant_job(s));
	assert_int_equal(kill(t1, 0) == 0, 0);
	pool_tenant_pidfd_open = pool_tenant_pidfd_open_default;
}

/* A released key's slot is the first recycled for new keys, instead of a
 * mkdir; until a new key needs it, the key lands in it again (a requeued
 * job). */
static void test_release_recycles_first(void **state)
{
	struct env *e = *state;
	struct slot *a, *b, *again;
	uint64_t id;
	pid_t pid;

	env_start(e);
	a = run_and_idle(e, "slurm.1", 1 * MiB, 0);
	id = a->cgroup_id;
	assert_int_equal(pool_release(e->pool, "slurm.1", &a), 0);
	assert_true(a->released);
	/* released again before anything else needed a slot: the same slot, run 2 */
	pid = spawn(e, "/");
	again = attach1(e, "slurm.1", pid);
	assert_ptr_equal(again, a);
	assert_int_equal(again->runs, 2);
	assert_false(again->released);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "slurm.1", SLOT_IDLE, 3.0));
	assert_int_equal(pool_release(e->pool, "slurm.1", &a), 0);

	/* a new key takes a warm slot; the refill recycles slurm.1's, no mkdir */
	cgsim_calls_clear(e->sim);
	b = attach1(e, "slurm.2", spawn(e, "/"));
	assert_ptr_not_equal(b, a);
	assert_true(pump_until_gone(e, "slurm.1", 2.0));
	assert_int_equal(a->state, SLOT_WARM);
	assert_int_equal(a->cgroup_id, id);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_MKDIR, NULL), 0);
	assert_int_equal(count(e, SLOT_WARM), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_warm_at_start),
		BOTH(test_bind_and_restart),
		BOTH(test_back_to_back), BOTH(test_attach_one_record),
		BOTH(test_max_slots),
		BOTH(test_bad_pid),
		BOTH(test_bad_pid_class),
		BOTH(test_class),
		BOTH(test_idle_recycle),
		BOTH(test_run_records),
		{ "test_peak_sampled_no_file v2", test_peak_sampled_no_file, setup, teardown, (void *)&p_v2 },
		{ "test_peak_sampled_no_reset v2", test_peak_sampled_no_reset, setup, teardown, (void *)&p_v2 },
		{ "test_peak_sampled_round_robin v2", test_peak_sampled_round_robin, setup, teardown, (void *)&p_v2 },
		BOTH(test_daemon_restart),
		BOTH(test_corrupt_state),
		BOTH(test_legacy_slots),
		{ "test_restart_more_controllers v2", test_restart_more_controllers, setup, teardown, (void *)&p_v2 },
		{ "test_polling v2", test_polling, setup, teardown, (void *)&p_v2_poll },
		{ "test_polling v1", test_polling, setup, teardown, (void *)&p_v1_poll },
		{ "test_bind_and_restart v1", test_bind_and_restart, setup, teardown, (void *)&p_v1_poll },
		BOTH(test_fault_mkdir),
		BOTH(test_no_cgroup_ids),
		BOTH(test_fault_reclaim),
		BOTH(test_fault_events_read),
		BOTH(test_fault_events_at_start),
		BOTH(test_shrink),
		BOTH(test_many_slots),
		BOTH(test_slow_writes_on_workers),
		BOTH(test_run_limits),
		BOTH(test_limit_kept),
		BOTH(test_cpuset_limits),
		BOTH(test_devices_limit),
		BOTH(test_job_tenant),
		BOTH(test_job_ends_after_run),
		BOTH(test_job_freeze),
		BOTH(test_job_tenant_polled),
		BOTH(test_release_recycles_first),
	};

	log_set_level(LOG_WARNING);
	return cmocka_run_group_tests_name("pool on the simulated cgroupfs", tests, NULL, NULL);
}
