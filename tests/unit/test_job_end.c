/* unit tests: nothing one job leaves reaches the next. A step that arrives
 * while what the job left is being killed waits for the slot to empty and
 * starts a fresh run that no kill round reaches; a slot the scrub leaves
 * charged over recycle_max_memory (tmpfs, shared memory) is set aside, not
 * handed to a new key, until its charge goes; the plan of an Attach says
 * which slot the caller is in. On the simulated cgroupfs (pool_env.h), v2
 * and hybrid, with and without worker threads. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "pool_env.h"
#include "simclock.h"
#include "util.h"
#include "work.h"

/* A process that no kill reaches until the test lets it go (a stray that
 * takes seconds to die): a zombie whose parent does not reap it yet, listed
 * by the sim in the slot, so that neither cgroup.kill nor a SIGKILL round
 * ends it. */
static pid_t keeper;

static pid_t stubborn(struct env *e, const char *slot)
{
	int fd[2];
	pid_t z = 0;

	assert_int_equal(pipe(fd), 0);
	keeper = fork();
	assert_true(keeper >= 0);
	if (keeper == 0) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		if (write(fd[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(1);
		for (;;)
			pause();
	}
	assert_int_equal(read(fd[0], &z, sizeof(z)), (ssize_t)sizeof(z));
	close(fd[0]);
	close(fd[1]);
	assert_int_equal(cgsim_adopt(e->sim, z, cgpath(e, slot)), 0);
	return z;
}

static void let_go(struct env *e, pid_t pid)
{
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	kill(keeper, SIGKILL);
	waitpid(keeper, NULL, 0);
}

/* a process that runs: not gone, nor a zombie that a SIGKILL round left */
static bool alive(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The kernel takes a killed process out of cgroup.procs; the sim sees
 * only the kills it does itself (cgroup.kill), so a SIGKILL round's is
 * told to it. */
static void gone(struct env *e, pid_t pid)
{
	int r = cgsim_exit(e->sim, pid);

	assert_true(r == 0 || r == -ESRCH);
}

/* pump until pid has died (real time: a SIGKILL takes its moment) */
static bool dies(struct env *e, pid_t pid)
{
	for (int i = 0; i < 300 && alive(pid); i++) {
		pump(e, 0.01);
		usleep(10000);
	}
	return !alive(pid);
}

/* The job's last holder exits while a stray of it lives on: a new step of
 * the same job waits (-EINPROGRESS, its task not moved) while the stray is
 * being killed; once it is gone the step starts a fresh run, which no kill
 * round reaches, and the job ends again when the step's holder exits. */
static void test_step_while_ending(void **state)
{
	struct env *e = *state;
	pid_t h1 = spawn(e, "/"), t1 = spawn(e, "/"), h2, t2, stray, bad = 0;
	struct attach_plan plan;
	struct slot *s = NULL;

	env_start(e);
	struct attach_req req = { "slurm.40", NULL, 0, &t1, 1, NULL, 0, "slurm:40:0", h1, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	stray = stubborn(e, s->name);
	assert_int_equal(cgsim_exit(e->sim, h1), 0);
	pump(e, 0.3);
	assert_true(dies(e, t1)); /* the task was killed, the stray not yet */
	gone(e, t1);
	pump(e, 0.1);
	assert_true(pool_tenant_ending(s));
	assert_int_equal(s->state, SLOT_RUNNING);

	/* the next step of the job: not now */
	h2 = spawn(e, "/");
	t2 = spawn(e, "/");
	req = (struct attach_req){ "slurm.40", NULL, 0, &t2, 1, NULL, 0, "slurm:40:0", h2, false, NULL };
	pool_attach_plan(e->pool, &req, 0, &plan);
	assert_ptr_equal(plan.slot, s);
	assert_true(plan.procs);
	assert_int_equal(plan.refused, -EINPROGRESS);
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), -EINPROGRESS);
	/* nor for another job, nor for none */
	req.job = "slurm:41:0";
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), -EINPROGRESS);
	req.job = NULL;
	req.hold = 0;
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), -EINPROGRESS);
	assert_string_equal(slot_named(e, "slot-0")->key, "slurm.40");

	/* the stray dies: the step's run is a fresh one */
	let_go(e, stray);
	pump(e, 0.3);
	req = (struct attach_req){ "slurm.40", NULL, 0, &t2, 1, NULL, 0, "slurm:40:0", h2, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	assert_string_equal(pool_tenant_job(s), "slurm:40:0");
	assert_false(pool_tenant_ending(s));
	assert_int_equal(pool_tenant_holders(s), 1);
	pump(e, 1.0);
	assert_true(alive(t2)); /* no kill round of the last run reached it */
	assert_int_equal(s->state, SLOT_RUNNING);

	/* the step's holder exits: the job ends on this node again, the key is released */
	assert_int_equal(cgsim_exit(e->sim, h2), 0);
	assert_true(dies(e, t2));
	gone(e, t2);
	pump(e, 0.3);
	s = pool_find(e->pool, "slurm.40");
	assert_true(!s || s->released);
	assert_true(!s || !pool_tenant_job(s));
}

/* Without cgroup.kill (before 5.14) the job's end is rounds of SIGKILL every
 * 50 ms: a step that waited is not killed by the rounds still pending. */
static void test_step_while_ending_rounds(void **state)
{
	struct env *e = *state;

	cgsim_options(e->sim)->cgroup_kill = false;
	test_step_while_ending(state);
}

/* A job leaves 64 MiB of tmpfs (anon, which no reclaim takes) in its slot:
 * the scrub at idle_timeout finds it charged and sets the slot aside as
 * leftover.<slot>; a new key gets another slot; when the files go, the
 * next look puts the slot back with the warm ones. */
static void scrub_leaves_charge(struct env *e, bool workers)
{
	struct work *w = NULL;
	struct slot *s, *other;
	struct cgsim_mem m;

	e->conf->pool.idle_timeout_ms = 200;
	e->conf->pool.warm = 1;
	env_start(e);
	struct simclock_work busy = { NULL, 1 };
	if (workers) {
		assert_int_equal(work_new(e->loop, 1, &w), 0);
		busy.w = w;
		simclock_start(simclock_work_busy, &busy);
		pool_set_work(e->pool, w);
	}
	s = run_and_idle(e, "slurm.50", 4 * MiB, 64 * MiB);
	assert_non_null(pump_until(e, "leftover.slot-0", SLOT_IDLE, 3.0));
	assert_string_equal(s->key, "leftover.slot-0");
	assert_int_equal(s->owner_uid, 0);
	assert_int_equal(pool_set_aside_count(e->pool), 1);
	assert_int_equal(cgsim_memory(e->sim, cgpath(e, s->name), &m), 0);
	assert_int_equal(m.file, 0); /* the page cache went */
	assert_int_equal(m.anon, 64 * MiB);
	/* a new key: never this slot */
	other = attach1(e, "web", spawn(e, "/"));
	assert_ptr_not_equal(other, s);
	/* the files go; the next look finds it clean */
	assert_int_equal(cgsim_drop_anon(e->sim, cgpath(e, s->name)), 64 * MiB);
	assert_true(pump_until_gone(e, "leftover.slot-0", 3.0));
	assert_int_equal(s->state, SLOT_WARM);
	assert_string_equal(s->key, "");
	assert_int_equal(pool_set_aside_count(e->pool), 1);
	if (w) {
		pool_free(e->pool);
		e->pool = NULL;
		simclock_start(NULL, NULL);
		work_free(w);
	}
}

static void test_leftover_set_aside(void **state)
{
	scrub_leaves_charge(*state, false);
}

static void test_leftover_set_aside_workers(void **state)
{
	scrub_leaves_charge(*state, true);
}

/* Under the bound the slot is recycled as before, and a released key's slot
 * with a leftover is not the first recycled for the next key either. */
static void test_leftover_bound(void **state)
{
	struct env *e = *state;
	struct slot *s, *next;

	e->conf->pool.recycle_max_memory = 8 * MiB;
	e->conf->pool.warm = 1;
	e->conf->pool.max_slots = 3;
	env_start(e);
	s = run_and_idle(e, "a", 0, 8 * MiB); /* at the bound: fit */
	assert_int_equal(pool_release(e->pool, "a", &s), 0);
	next = attach1(e, "b", spawn(e, "/")); /* takes the warm one; the refill recycles a */
	pump(e, 0.1);
	assert_int_equal(s->state, SLOT_WARM);
	s = run_and_idle(e, "c", 0, 8 * MiB + 4096); /* over it */
	assert_int_equal(pool_release(e->pool, "c", &s), 0);
	next = attach1(e, "d", spawn(e, "/"));
	pump(e, 0.1);
	assert_ptr_not_equal(next, s);
	assert_string_equal(s->key, "leftover.slot-0");
	assert_int_equal(pool_set_aside_count(e->pool), 1);
}

/* The plan says which slot the caller is in: the job's slot for its task,
 * none for a process outside the pool. */
static void test_plan_from(void **state)
{
	struct env *e = *state;
	pid_t h = spawn(e, "/"), t = spawn(e, "/"), outside = spawn(e, "/"), bad = 0;
	struct attach_plan plan;
	struct slot *s = NULL;

	env_start(e);
	struct attach_req req = { "slurm.60", NULL, 0, &t, 1, NULL, 0, "slurm:60:1000", h, false, NULL };
	assert_int_equal(pool_attach_req(e->pool, &req, &s, &bad), 0);
	req = (struct attach_req){ "user.1000.x", NULL, 1000, &t, 1, NULL, 0, NULL, 0, false, NULL };
	pool_attach_plan(e->pool, &req, t, &plan);
	assert_ptr_equal(plan.from, s);
	assert_null(plan.slot);
	pool_attach_plan(e->pool, &req, outside, &plan);
	assert_null(plan.from);
	pool_attach_plan(e->pool, &req, 0, &plan);
	assert_null(plan.from);
	pool_attach_plan(e->pool, &req, NO_SUCH_PID, &plan);
	assert_null(plan.from);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_step_while_ending),
		BOTH(test_step_while_ending_rounds),
		BOTH(test_leftover_set_aside),
		BOTH(test_leftover_set_aside_workers),
		BOTH(test_leftover_bound),
		BOTH(test_plan_from),
	};

	log_set_level(getenv("TEST_DEBUG") ? LOG_DEBUG : LOG_WARNING);
	return cmocka_run_group_tests_name("the end of a job, and clean recycling, on the simulated cgroupfs", tests,
					   NULL, NULL);
}
