/* unit tests: the slot state machine */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "slot.h"

#define W SLOT_WARM
#define R SLOT_RUNNING
#define I SLOT_IDLE
#define X SLOT_RETIRING

static void expect_step(enum slot_state from, enum slot_event ev, int recycle, enum slot_state to, unsigned act)
{
	enum slot_state next = SLOT_NSTATES;
	unsigned a = ~0u;

	assert_int_equal(slot_step(from, ev, recycle, &next, &a), 0);
	assert_int_equal(next, to);
	assert_int_equal(a, act);
}

static void expect_refused(enum slot_state from, enum slot_event ev, int err)
{
	enum slot_state next = SLOT_NSTATES;
	unsigned a = 12345;

	assert_int_equal(slot_step(from, ev, 1, &next, &a), err);
	/* outputs untouched on refusal */
	assert_int_equal(next, SLOT_NSTATES);
	assert_int_equal(a, 12345);
}

static void test_run_lifecycle(void **state)
{
	/* a new key binds a warm slot: a run starts, limits are applied */
	expect_step(W, SLOT_EV_ATTACH, 1, R,
		    SLOT_ACT_RUN_START | SLOT_ACT_APPLY | SLOT_ACT_STOP_TIMER);
	/* more processes into a running slot: same run, no new count */
	/* a second Attach into the run keeps its limits (an Attach writes its own over them) */
	expect_step(R, SLOT_EV_ATTACH, 1, R, 0);
	expect_refused(R, SLOT_EV_POPULATED, -EINVAL);
	/* the slot empties: the run ends, the idle timer starts */
	expect_step(R, SLOT_EV_EMPTY, 1, I, SLOT_ACT_RUN_END | SLOT_ACT_IDLE_TIMER);
	/* restart of the key: a new run in the same slot */
	expect_step(I, SLOT_EV_ATTACH, 1, R,
		    SLOT_ACT_RUN_START | SLOT_ACT_APPLY | SLOT_ACT_STOP_TIMER);
	/* processes found in an idle slot (e.g. while the daemon was down) */
	expect_step(I, SLOT_EV_POPULATED, 1, R,
		    SLOT_ACT_RUN_START | SLOT_ACT_APPLY | SLOT_ACT_STOP_TIMER);
}

static void test_idle_and_release(void **state)
{
	expect_step(I, SLOT_EV_RELEASE, 1, I, SLOT_ACT_IDLE_TIMER);
	expect_step(R, SLOT_EV_RELEASE, 1, R, 0);
	/* idle_timeout: recycled to warm, or retired when recycle = no */
	expect_step(I, SLOT_EV_IDLE_TIMEOUT, 1, W, SLOT_ACT_SCRUB);
	expect_step(I, SLOT_EV_IDLE_TIMEOUT, 0, X, SLOT_ACT_STOP_TIMER | SLOT_ACT_RETIRE);
	expect_refused(R, SLOT_EV_IDLE_TIMEOUT, -EINVAL);
	expect_refused(W, SLOT_EV_IDLE_TIMEOUT, -EINVAL);
}

static void test_retire(void **state)
{
	expect_step(W, SLOT_EV_RETIRE, 1, X, SLOT_ACT_RETIRE);
	expect_step(I, SLOT_EV_RETIRE, 1, X, SLOT_ACT_STOP_TIMER | SLOT_ACT_RETIRE);
	expect_refused(R, SLOT_EV_RETIRE, -EBUSY);
	expect_refused(X, SLOT_EV_ATTACH, -EBUSY);
	expect_refused(X, SLOT_EV_RETIRE, -EINVAL);
}

static void test_nonsense_events(void **state)
{
	expect_refused(W, SLOT_EV_EMPTY, -EINVAL);
	expect_refused(W, SLOT_EV_RELEASE, -EINVAL);
	expect_refused(I, SLOT_EV_EMPTY, -EINVAL);
	expect_refused(SLOT_NSTATES, SLOT_EV_EMPTY, -EINVAL);
	expect_refused(W, SLOT_NEVENTS, -EINVAL);
}

/* start-up: every adopted slot is warm until the state file (or the
 * kernel) says otherwise */
static void test_restore(void **state)
{
	expect_step(W, SLOT_EV_RESTORE_RUNNING, 1, R, 0);
	expect_step(W, SLOT_EV_RESTORE_IDLE, 1, I, 0);
	/* a slot with processes nobody gave it keeps them: bound to an orphan key */
	expect_step(W, SLOT_EV_POPULATED, 1, R, SLOT_ACT_ORPHAN | SLOT_ACT_RUN_START);
	expect_refused(R, SLOT_EV_RESTORE_IDLE, -EINVAL);
	expect_refused(I, SLOT_EV_RESTORE_RUNNING, -EINVAL);
	expect_refused(X, SLOT_EV_RESTORE_IDLE, -EINVAL);
}

/* a retirement cancelled (an Attach of the key) or failed: the slot is back */
static void test_unretire(void **state)
{
	expect_step(X, SLOT_EV_UNRETIRE, 1, I, SLOT_ACT_IDLE_TIMER);
	expect_step(X, SLOT_EV_UNRETIRE_WARM, 1, W, 0);
	expect_refused(I, SLOT_EV_UNRETIRE, -EINVAL);
	expect_refused(W, SLOT_EV_UNRETIRE_WARM, -EINVAL);
	expect_refused(R, SLOT_EV_UNRETIRE, -EINVAL);
}

/* every cell is set: a missing one would read as "OK, to warm" */
static void test_table_complete(void **state)
{
	for (int st = 0; st < SLOT_NSTATES; st++) {
		for (int ev = 0; ev < SLOT_NEVENTS; ev++) {
			enum slot_state next = SLOT_NSTATES;
			unsigned a = 0;
			int r = slot_step((enum slot_state)st, (enum slot_event)ev, 1, &next, &a);
			if (r == 0 && next == SLOT_WARM && a == 0 && st != SLOT_RETIRING)
				fail_msg("%s on %s: an empty cell", slot_event_name((enum slot_event)ev),
					 slot_state_name((enum slot_state)st));
			assert_string_not_equal(slot_event_name((enum slot_event)ev), "?");
		}
	}
}

static void test_names(void **state)
{
	enum slot_state s;

	for (int i = 0; i < SLOT_NSTATES; i++) {
		assert_int_equal(slot_state_parse(slot_state_name((enum slot_state)i), &s), 0);
		assert_int_equal(s, i);
	}
	assert_string_equal(slot_state_name(SLOT_IDLE), "idle");
	assert_int_equal(slot_state_parse("zombie", &s), -EINVAL);
}

/* ---- supervised jobs */

static void expect_job(enum job_state from, enum job_event ev, int restart, enum job_state to, unsigned act)
{
	enum job_state next = JOB_NSTATES;
	unsigned a = ~0u;

	assert_int_equal(job_step(from, ev, restart, &next, &a), 0);
	assert_int_equal(next, to);
	assert_int_equal(a, act);
}

static void expect_job_nop(enum job_state from, enum job_event ev)
{
	enum job_state next = JOB_NSTATES;
	unsigned a = 12345;

	assert_int_equal(job_step(from, ev, 1, &next, &a), -EINVAL);
	assert_int_equal(next, JOB_NSTATES);
	assert_int_equal(a, 12345);
}

static void test_job_lifecycle(void **state)
{
	const unsigned spawn = JOB_ACT_CANCEL | JOB_ACT_SPAWN, exited = JOB_ACT_RECORD_EXIT | JOB_ACT_CANCEL;

	(void)state;
	expect_job(JOB_STOPPED, JOB_EV_RUN, 0, JOB_STARTING, spawn);
	expect_job(JOB_STARTING, JOB_EV_SPAWNED, 0, JOB_RUNNING, 0);
	/* restart = always / on-failure after a failure: backoff, then a new start */
	expect_job(JOB_RUNNING, JOB_EV_EXIT_FAILED, 1, JOB_BACKOFF, exited | JOB_ACT_BACKOFF);
	expect_job(JOB_RUNNING, JOB_EV_EXIT_OK, 1, JOB_BACKOFF, exited | JOB_ACT_BACKOFF);
	expect_job(JOB_BACKOFF, JOB_EV_RUN, 0, JOB_STARTING, spawn);
	/* no restart: a clean exit stops, a failed one is failed */
	expect_job(JOB_RUNNING, JOB_EV_EXIT_OK, 0, JOB_STOPPED, exited);
	expect_job(JOB_RUNNING, JOB_EV_EXIT_FAILED, 0, JOB_FAILED, exited);
	/* a program that cannot start: failed, or retried by the policy until the limit */
	expect_job(JOB_STARTING, JOB_EV_SPAWN_FAILED, 0, JOB_FAILED, JOB_ACT_RECORD_EXIT);
	expect_job(JOB_STARTING, JOB_EV_SPAWN_FAILED, 1, JOB_BACKOFF, JOB_ACT_RECORD_EXIT | JOB_ACT_BACKOFF);
	expect_job(JOB_STARTING, JOB_EV_START_LIMIT, 1, JOB_FAILED, JOB_ACT_CANCEL);
	expect_job(JOB_BACKOFF, JOB_EV_START_LIMIT, 1, JOB_FAILED, JOB_ACT_CANCEL);
	/* at daemon start: a job found running, or one that had failed */
	expect_job(JOB_STOPPED, JOB_EV_ADOPT, 0, JOB_RUNNING, 0);
	expect_job(JOB_STOPPED, JOB_EV_START_LIMIT, 0, JOB_FAILED, JOB_ACT_CANCEL);
	expect_job_nop(JOB_RUNNING, JOB_EV_ADOPT);
	/* run after failed clears the limit */
	expect_job(JOB_FAILED, JOB_EV_RUN, 0, JOB_STARTING, spawn | JOB_ACT_RESET_LIMIT);
}

static void test_job_stop(void **state)
{
	(void)state;
	expect_job(JOB_RUNNING, JOB_EV_STOP, 1, JOB_STOPPING, JOB_ACT_CANCEL | JOB_ACT_SIGNAL);
	expect_job(JOB_STARTING, JOB_EV_STOP, 1, JOB_STOPPING, JOB_ACT_CANCEL | JOB_ACT_SIGNAL);
	/* the main process goes but others stay: still stopping, never restarted */
	expect_job(JOB_STOPPING, JOB_EV_EXIT_FAILED, 1, JOB_STOPPING, JOB_ACT_RECORD_EXIT);
	expect_job(JOB_STOPPING, JOB_EV_EXIT_OK, 1, JOB_STOPPING, JOB_ACT_RECORD_EXIT);
	expect_job(JOB_STOPPING, JOB_EV_STOP_TIMEOUT, 1, JOB_STOPPING, JOB_ACT_KILL);
	expect_job(JOB_STOPPING, JOB_EV_EMPTY, 1, JOB_STOPPED, JOB_ACT_CANCEL);
	expect_job(JOB_BACKOFF, JOB_EV_STOP, 1, JOB_STOPPED, JOB_ACT_CANCEL);
	expect_job(JOB_FAILED, JOB_EV_STOP, 1, JOB_STOPPED, JOB_ACT_CANCEL);
	/* events that change nothing */
	expect_job_nop(JOB_STOPPED, JOB_EV_STOP);
	expect_job_nop(JOB_RUNNING, JOB_EV_RUN);
	expect_job_nop(JOB_STOPPING, JOB_EV_RUN);
	expect_job_nop(JOB_STOPPED, JOB_EV_EXIT_FAILED);
	expect_job_nop(JOB_RUNNING, JOB_EV_STOP_TIMEOUT);
	assert_int_equal(job_step(JOB_NSTATES, JOB_EV_RUN, 0, &(enum job_state){ 0 }, &(unsigned){ 0 }), -EINVAL);
}

static void test_job_names(void **state)
{
	enum job_state s;

	(void)state;
	for (int i = 0; i < JOB_NSTATES; i++) {
		assert_int_equal(job_state_parse(job_state_name((enum job_state)i), &s), 0);
		assert_int_equal(s, i);
	}
	assert_string_equal(job_state_name(JOB_BACKOFF), "backoff");
	assert_string_equal(job_event_name(JOB_EV_STOP_TIMEOUT), "stop-timeout");
	assert_int_equal(job_state_parse("zombie", &s), -EINVAL);
}

/* Slot directory names: only the canonical form is a slot's, whichever of
 * the pool, adoption at start-up or the state file reads it */
static void test_slot_name_id(void **state)
{
	static const char *const bad[] = { "slot-", "slot-007", "slot-+7", "slot- 7", "slot--7", "slot-7x",
					   "slot-4294967296", "slot-99999999999999999999", "Slot-7", "slot7", "" };
	unsigned id = 1234;

	(void)state;
	assert_int_equal(slot_name_id("slot-0", &id), 0);
	assert_int_equal(id, 0);
	assert_int_equal(slot_name_id("slot-4294967295", &id), 0);
	assert_int_equal(id, 4294967295u);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		id = 1234;
		assert_int_equal(slot_name_id(bad[i], &id), -EINVAL);
		assert_int_equal(id, 1234);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_lifecycle), cmocka_unit_test(test_idle_and_release),
		cmocka_unit_test(test_retire), cmocka_unit_test(test_nonsense_events), cmocka_unit_test(test_names),
		cmocka_unit_test(test_job_lifecycle), cmocka_unit_test(test_job_stop), cmocka_unit_test(test_job_names),
		cmocka_unit_test(test_restore), cmocka_unit_test(test_unretire), cmocka_unit_test(test_table_complete),
		cmocka_unit_test(test_slot_name_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
