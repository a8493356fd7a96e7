/* unit tests: nothing lost. A populated slot is never handed to a new key
 * when the state is lost; a pid is never left half moved; a slot that could
 * not be removed comes back whole; a run end is seen without a watch;
 * retirements survive the daemon and are called off by an Attach; slot ids
 * are used again. On the simulated cgroupfs (pool_env.h), v2 and hybrid. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "log.h"
#include "pool_env.h"
#include "retire.h"
#include "util.h"

#define UNIFIED "/sys/fs/cgroup/unified"

enum loss { LOSS_DELETED, LOSS_TRUNCATED, LOSS_CORRUPT };

static void lose_state(struct env *e, enum loss how)
{
	char p[PATH_MAX];
	static const char bad[] = "{\"version\": 2, \"slots\": [{\"name\": 17}, ";

	snprintf(p, sizeof(p), "%s/state.json", e->state_dir);
	if (how == LOSS_DELETED) {
		rm_state(e);
		return;
	}
	rm_state(e);
	assert_int_equal(file_write_atomic(p, how == LOSS_TRUNCATED ? "" : bad,
					   how == LOSS_TRUNCATED ? 0 : strlen(bad), 0644), 0);
}

/* three jobs run, the state goes, the daemon starts: the three slots keep
 * their processes, bound to orphan keys, and new keys get other slots */
static void state_lost(struct env *e, enum loss how)
{
	char names[3][32], key[128];
	struct capture cap;
	pid_t pids[3];

	env_start(e);
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "job-%d", i);
		pids[i] = spawn(e, "/");
		snprintf(names[i], sizeof(names[i]), "%s", attach1(e, key, pids[i])->name);
	}
	run_and_idle(e, "done", 0, 0);
	env_stop(e);
	lose_state(e, how);

	capture_begin(&cap);
	env_start(e);
	capture_end(&cap);
	for (int i = 0; i < 3; i++) {
		struct slot *s = slot_named(e, names[i]);
		unsigned n = 0;
		assert_non_null(s);
		assert_int_equal(s->state, SLOT_RUNNING);
		snprintf(key, sizeof(key), "orphan.%s", names[i]);
		assert_string_equal(s->key, key);
		assert_ptr_equal(pool_find(e->pool, key), s);
		assert_int_equal(cgsim_nprocs(e->sim, cgpath(e, names[i]), &n), 0);
		assert_int_equal(n, 1);
	}
	assert_non_null(strstr(cap.text, "bound to key orphan."));
	/* new keys: never one of those slots */
	for (int i = 0; i < 6; i++) {
		struct slot *s;
		snprintf(key, sizeof(key), "new-%d", i);
		s = attach1(e, key, spawn(e, "/"));
		for (int k = 0; k < 3; k++)
			assert_string_not_equal(s->name, names[k]);
	}
	/* an orphan slot that empties is the pool's again */
	assert_int_equal(cgsim_exit(e->sim, pids[0]), 0);
	snprintf(key, sizeof(key), "orphan.%s", names[0]);
	assert_non_null(pump_until(e, key, SLOT_IDLE, 3.0));
}

static void test_state_deleted(void **state)
{
	state_lost(*state, LOSS_DELETED);
}

static void test_state_truncated(void **state)
{
	state_lost(*state, LOSS_TRUNCATED);
}

static void test_state_corrupt(void **state)
{
	state_lost(*state, LOSS_CORRUPT);
}

/* a partly bad snapshot: the good entries keep their keys, the slot of the
 * bad one keeps its processes under an orphan key */
static void test_state_partly_bad(void **state)
{
	struct env *e = *state;
	static char text[1 << 16];
	char p[PATH_MAX], *at;
	struct slot *a, *b;
	char aname[32], bname[32];
	ssize_t len;

	env_start(e);
	snprintf(aname, sizeof(aname), "%s", attach1(e, "alpha", spawn(e, "/"))->name);
	snprintf(bname, sizeof(bname), "%s", attach1(e, "beta", spawn(e, "/"))->name);
	env_stop(e);
	/* one snapshot holds them all (start-up writes it); spoil beta's entry */
	env_start(e);
	env_stop(e);
	snprintf(p, sizeof(p), "%s/state.json", e->state_dir);
	len = file_read(p, text, sizeof(text) - 1);
	assert_true(len > 0);
	text[len] = '\0';
	at = strstr(text, "\"beta\"");
	assert_non_null(at);
	memcpy(at, "12345 ", 6);
	rm_state(e);
	assert_int_equal(file_write_atomic(p, text, (size_t)len, 0644), 0);

	env_start(e);
	a = pool_find(e->pool, "alpha");
	assert_non_null(a);
	assert_string_equal(a->name, aname);
	assert_null(pool_find(e->pool, "beta"));
	b = slot_named(e, bname);
	assert_non_null(b);
	assert_int_equal(b->state, SLOT_RUNNING);
	assert_true(strncmp(b->key, "orphan.", 7) == 0);
}

/* hybrid: the tracking hierarchy refuses the pid after memory took it: it
 * goes back where it was, in every hierarchy */
static void test_half_moved(void **state)
{
	struct env *e = *state;
	struct slot *s = NULL;
	pid_t pid, bad = 0;
	unsigned n = 1;

	if (!hybrid(e))
		skip();
	env_start(e);
	pid = spawn(e, "/");
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_WRITE, UNIFIED "/*/slot-*/run/cgroup.procs", -EACCES, 1), 0);
	assert_int_equal(pool_attach(e->pool, "web", NULL, &pid, 1, &s, &bad), -EACCES);
	assert_null(pool_find(e->pool, "web"));
	for (unsigned i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "slot-%u", i);
		assert_int_equal(cgsim_nprocs(e->sim, cgpath(e, name), &n), 0);
		assert_int_equal(n, 0); /* not left in a slot's memory cgroup */
	}
	/* the next try goes through */
	assert_non_null(attach1(e, "web", pid));
}

/* a slot whose removal failed comes back whole: its tracking directory is
 * made again, and its next run end is seen */
static void test_failed_removal_whole(void **state)
{
	struct env *e = *state;
	char events[PATH_MAX * 2], buf[256];
	struct slot *s;
	pid_t pid;

	env_start(e);
	s = run_and_idle(e, "web", 0, 0);
	snprintf(events, sizeof(events), "%s%s/%s/run/cgroup.events", hybrid(e) ? UNIFIED : "/sys/fs/cgroup", e->root,
		 s->name);
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_RMDIR, hybrid(e) ? "/sys/fs/cgroup/memory/*/slot-*" : "*/slot-*", -EBUSY,
				    CGSIM_FOREVER), 0);
	log_set_level(LOG_CRIT);
	assert_int_equal(pool_retire(e->pool, "web", RETIRE_REPARENT, NULL, NULL), 0);
	log_set_level(LOG_WARNING);
	s = pool_find(e->pool, "web");
	assert_non_null(s);
	assert_int_equal(s->state, SLOT_IDLE);
	assert_true(cgsim_peek(e->sim, events, buf, sizeof(buf)) > 0);
	cgsim_fail_clear(e->sim);
	pid = spawn(e, "/");
	attach1(e, "web", pid);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "web", SLOT_IDLE, 3.0));
	assert_int_equal(s->runs, 2);
}

/* inotify cannot watch a slot (max_user_watches, EMFILE): it is polled */
static void test_watch_refused(void **state)
{
	struct env *e = *state;
	struct slot *s;
	pid_t pid;

	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_WATCH, NULL, -ENOSPC, CGSIM_FOREVER), 0);
	log_set_level(LOG_CRIT);
	env_start(e);
	log_set_level(LOG_WARNING);
	pid = spawn(e, "/");
	s = attach1(e, "web", pid);
	assert_int_equal(cgsim_exit(e->sim, pid), 0);
	assert_non_null(pump_until(e, "web", SLOT_IDLE, 3.0));
	assert_int_equal(s->runs, 1);
}

struct outcome {
	int calls;
	struct retire_result res;
};

static void got_outcome(const struct retire_result *res, void *ud)
{
	struct outcome *o = ud;

	o->calls++;
	o->res = *res;
}

/* an Attach of a key whose slot waits in the retirement queue calls the
 * retirement off and reuses the slot; the waiter hears "cancelled" */
static void test_attach_cancels(void **state)
{
	struct env *e = *state;
	struct outcome first = { 0 }, second = { 0 };
	struct slot *a, *b, *s;

	e->conf->retire.rate = 1; /* the second waits a second in the queue */
	e->conf->retire.mode = RETIRE_REPARENT;
	env_start(e);
	env_retire(e);
	a = run_and_idle(e, "a", 0, 0);
	b = run_and_idle(e, "b", 0, 0);
	assert_int_equal(pool_retire(e->pool, "a", RETIRE_REPARENT, got_outcome, &first), 0);
	assert_int_equal(pool_retire(e->pool, "b", RETIRE_REPARENT, got_outcome, &second), 0);
	assert_int_equal(b->state, SLOT_RETIRING);
	s = attach1(e, "b", spawn(e, "/"));
	assert_ptr_equal(s, b);
	assert_int_equal(s->state, SLOT_RUNNING);
	assert_int_equal(s->runs, 2);
	assert_int_equal(second.calls, 1);
	assert_int_equal(second.res.outcome, OUTCOME_CANCELLED);
	/* a's rmdir is done: its key gets a new slot at once */
	for (int i = 0; i < 500 && cgsim_exists(e->sim, cgpath(e, a->name)); i++)
		pump(e, 0.001);
	assert_false(cgsim_exists(e->sim, cgpath(e, a->name)));
	assert_int_equal(first.calls, 0);
	s = attach1(e, "a", spawn(e, "/"));
	assert_ptr_not_equal(s, a);
	assert_int_equal(s->state, SLOT_RUNNING);
	pump(e, 1.0);
	assert_int_equal(first.calls, 1);
	assert_true(first.res.outcome == OUTCOME_RELEASED);
}

/* kill -9 with a retirement queued and one removed but not verified: the
 * next daemon resumes the first, verifies the second, and reports both */
static void test_retirements_survive(void **state)
{
	struct env *e = *state;
	struct retire_result rr[8];
	struct retire_stats st;
	struct capture cap;
	char aname[32], bname[32];
	size_t n;

	e->conf->retire.rate = 1;
	e->conf->retire.mode = RETIRE_REPARENT;
	e->conf->retire.verify_timeout_ms = 300;
	env_start(e);
	env_retire(e);
	snprintf(aname, sizeof(aname), "%s", run_and_idle(e, "a", 0, 0)->name);
	snprintf(bname, sizeof(bname), "%s", run_and_idle(e, "b", 0, 0)->name);
	assert_int_equal(pool_retire(e->pool, "a", RETIRE_REPARENT, NULL, NULL), 0);
	assert_int_equal(pool_retire(e->pool, "b", RETIRE_REPARENT, NULL, NULL), 0); /* queued */
	for (int i = 0; i < 500 && cgsim_exists(e->sim, cgpath(e, aname)); i++)
		pump(e, 0.001);
	assert_false(cgsim_exists(e->sim, cgpath(e, aname))); /* removed, not verified yet */
	assert_non_null(pool_find(e->pool, "a"));
	assert_true(cgsim_exists(e->sim, cgpath(e, bname)));
	env_stop(e);

	log_set_level(LOG_NOTICE);
	capture_begin(&cap);
	env_start(e);
	env_retire(e);
	capture_end(&cap);
	log_set_level(LOG_WARNING);
	assert_non_null(strstr(cap.text, "removed before the restart"));
	assert_non_null(strstr(cap.text, "left unfinished by the last daemon; resumed"));
	retire_get_stats(e->retire, &st);
	assert_int_equal(st.resumed, 2);
	/* killed again before either is verified: the next daemon takes them up too */
	env_stop(e);
	env_start(e);
	env_retire(e);
	retire_get_stats(e->retire, &st);
	assert_int_equal(st.resumed, 2);
	pump(e, 1.5);
	n = pool_recent_retirements(e->pool, rr, 8);
	assert_int_equal(n, 2);
	assert_false(cgsim_exists(e->sim, cgpath(e, bname)));
	assert_null(pool_find(e->pool, "a"));
	assert_null(pool_find(e->pool, "b"));
}

/* freed ids are used again: the lowest free one first */
static void test_ids_reused(void **state)
{
	struct env *e = *state;
	struct slot *s;

	e->conf->pool.warm = 0;
	env_start(e);
	for (int i = 0; i < 4; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		run_and_idle(e, key, 0, 0);
	}
	assert_int_equal(pool_retire(e->pool, "k1", RETIRE_REPARENT, NULL, NULL), 0);
	assert_int_equal(pool_retire(e->pool, "k2", RETIRE_REPARENT, NULL, NULL), 0);
	assert_null(slot_named(e, "slot-1"));
	s = attach1(e, "new-a", spawn(e, "/"));
	assert_string_equal(s->name, "slot-1");
	s = attach1(e, "new-b", spawn(e, "/"));
	assert_string_equal(s->name, "slot-2");
	s = attach1(e, "new-c", spawn(e, "/"));
	assert_string_equal(s->name, "slot-4");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_state_deleted),
		BOTH(test_state_truncated),
		BOTH(test_state_corrupt),
		BOTH(test_state_partly_bad),
		BOTH(test_half_moved),
		BOTH(test_failed_removal_whole),
		BOTH(test_watch_refused),
		BOTH(test_attach_cancels),
		BOTH(test_retirements_survive),
		BOTH(test_ids_reused),
	};

	log_set_level(LOG_WARNING);
	return cmocka_run_group_tests_name("nothing lost, on the simulated cgroupfs", tests, NULL, NULL);
}
