/* unit tests: the worker threads of work.c (completion on the loop thread,
 * exactly once; cancel; free with items queued; the bounded queue) and the
 * loop stall histogram of metrics_stall.c */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "metrics_stall.h"
#include "util.h"
#include "work.h"

static pthread_t loop_thread;

struct job {
	unsigned idx;
	unsigned usec;         /* fn sleeps this long */
	atomic_uint ran;       /* fn calls */
	atomic_bool off_loop;  /* fn ran on another thread than the loop's */
	atomic_int *gate;      /* fn waits until it is not 0 */
	unsigned done_calls;
	bool done_on_loop;
	int result;
};

static int job_fn(void *arg)
{
	struct job *j = arg;

	while (j->gate && !atomic_load(j->gate))
		usleep(1000);
	if (j->usec)
		usleep(j->usec);
	atomic_store(&j->off_loop, !pthread_equal(pthread_self(), loop_thread));
	atomic_fetch_add(&j->ran, 1);
	return (int)j->idx * 2 + 1;
}

static void job_done(int result, void *arg)
{
	struct job *j = arg;

	j->done_calls++;
	j->done_on_loop = pthread_equal(pthread_self(), loop_thread);
	j->result = result;
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	*(bool *)w->data = true;
	ev_break(loop, EVBREAK_ALL);
}

/* ev_run until nothing is outstanding (the pool keeps the loop alive only
 * that long); false at the timeout */
static bool run_until_idle(struct ev_loop *loop, double timeout)
{
	bool timed_out = false;
	ev_timer t;

	ev_timer_init(&t, timeout_cb, timeout, 0.);
	t.data = &timed_out;
	ev_timer_start(loop, &t);
	ev_unref(loop); /* the timer alone does not keep the loop running */
	ev_run(loop, 0);
	ev_ref(loop);
	ev_timer_stop(loop, &t);
	return !timed_out;
}

static int setup(void **state)
{
	loop_thread = pthread_self();
	return 0;
}

/* 1,000 items: each fn once off the loop, each done once on it */
static void test_thousand(void **state)
{
	struct ev_loop *loop = ev_default_loop(0);
	enum { N = 1000 };
	struct job *jobs = calloc(N, sizeof(*jobs));
	struct work_stats st;
	struct work *w;

	assert_non_null(jobs);
	assert_int_equal(work_new(loop, 2, &w), 0);
	for (unsigned i = 0; i < N; i++) {
		jobs[i].idx = i;
		jobs[i].usec = i % 7 == 0 ? 200 : 0;
		assert_int_equal(work_submit(w, job_fn, job_done, &jobs[i]), 0);
	}
	assert_true(work_outstanding(w) > 0);
	assert_true(run_until_idle(loop, 20.0));
	assert_int_equal(work_outstanding(w), 0);
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(atomic_load(&jobs[i].ran), 1);
		assert_true(atomic_load(&jobs[i].off_loop));
		assert_int_equal(jobs[i].done_calls, 1);
		assert_true(jobs[i].done_on_loop);
		assert_int_equal(jobs[i].result, (int)i * 2 + 1);
	}
	work_get_stats(w, &st);
	assert_int_equal(st.completed, N);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.running, 0);
	assert_true(st.max_ms >= 0.2);
	work_free(w);
	free(jobs);
}

/* work_free with items queued: their fn still runs, no done is called, and
 * nothing is left (ASan) */
static void test_free_queued(void **state)
{
	struct ev_loop *loop = ev_default_loop(0);
	enum { N = 100 };
	struct job jobs[N] = { { 0 } };
	struct work *w;

	assert_int_equal(work_new(loop, 1, &w), 0);
	jobs[0].usec = 50000;
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(work_submit(w, job_fn, job_done, &jobs[i]), 0);
	work_free(w);
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(atomic_load(&jobs[i].ran), 1);
	ev_run(loop, EVRUN_NOWAIT); /* the pool's watcher is gone: nothing comes */
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(jobs[i].done_calls, 0);
	work_free(NULL);
}

static bool is_arg(void *arg, void *ud)
{
	return arg == ud;
}

static void other_done(int result, void *arg)
{
	fail_msg("not submitted");
}

/* cancel: a queued item is dropped unrun, a running one waited for; neither
 * is delivered, the others are */
static void test_cancel(void **state)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct job a = { .idx = 1, .usec = 100000 }, b = { .idx = 2 }, c = { .idx = 3 };
	struct work *w;
	int64_t t0;

	assert_int_equal(work_new(loop, 1, &w), 0);
	t0 = now_mono_us();
	assert_int_equal(work_submit(w, job_fn, job_done, &a), 0);
	assert_int_equal(work_submit(w, job_fn, job_done, &b), 0);
	assert_int_equal(work_submit(w, job_fn, job_done, &c), 0);
	while (atomic_load(&a.ran) == 0 && now_mono_us() - t0 < 20000)
		usleep(1000); /* let the thread take a */
	work_cancel(w, job_done, is_arg, &b);
	work_cancel(w, other_done, NULL, NULL); /* none: another owner's callback */
	work_cancel(w, job_done, is_arg, &a);   /* running or done by now: waited for */
	assert_int_equal(atomic_load(&a.ran), 1);
	assert_true(now_mono_us() - t0 >= 100000);
	assert_int_equal(work_outstanding(w), 1);
	assert_true(run_until_idle(loop, 5.0));
	assert_int_equal(atomic_load(&b.ran), 0);
	assert_int_equal(a.done_calls + b.done_calls, 0);
	assert_int_equal(c.done_calls, 1);
	assert_int_equal(c.result, 7);
	work_free(w);
}

/* the queue is bounded: past WORK_QUEUE_MAX waiting items, -EAGAIN */
static void test_queue_full(void **state)
{
	struct ev_loop *loop = ev_default_loop(0);
	atomic_int gate = 0;
	struct job blocker = { .gate = &gate };
	struct job *jobs = calloc(WORK_QUEUE_MAX + 1, sizeof(*jobs));
	struct work_stats st;
	struct work *w;
	int64_t t0 = now_mono_us();

	assert_non_null(jobs);
	assert_int_equal(work_new(loop, 1, &w), 0);
	assert_int_equal(work_submit(w, job_fn, job_done, &blocker), 0);
	do { /* the thread has taken the blocker off the queue */
		work_get_stats(w, &st);
		usleep(1000);
	} while (st.running == 0 && now_mono_us() - t0 < 5000000);
	for (unsigned i = 0; i < WORK_QUEUE_MAX; i++)
		assert_int_equal(work_submit(w, job_fn, job_done, &jobs[i]), 0);
	assert_int_equal(work_submit(w, job_fn, job_done, &jobs[WORK_QUEUE_MAX]), -EAGAIN);
	assert_int_equal(work_submit(w, job_fn, NULL, &jobs[WORK_QUEUE_MAX]), -EINVAL);
	work_get_stats(w, &st);
	assert_int_equal(st.queued, WORK_QUEUE_MAX);
	assert_int_equal(st.running, 1);
	atomic_store(&gate, 1);
	assert_true(run_until_idle(loop, 20.0));
	for (unsigned i = 0; i < WORK_QUEUE_MAX; i++)
		assert_int_equal(jobs[i].done_calls, 1);
	assert_int_equal(jobs[WORK_QUEUE_MAX].done_calls, 0);
	assert_int_equal(blocker.done_calls, 1);
	work_free(w);
	free(jobs);
}

/* a done callback may submit more; the loop lives until the chain ends */
struct chain {
	struct work *w;
	unsigned left, done_calls;
};

static int chain_fn(void *arg)
{
	return 0;
}

static void chain_done(int result, void *arg)
{
	struct chain *c = arg;

	c->done_calls++;
	if (c->left-- > 0)
		assert_int_equal(work_submit(c->w, chain_fn, chain_done, c), 0);
}

static void test_submit_from_done(void **state)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct chain c = { .left = 50 };

	assert_int_equal(work_new(loop, 0, &c.w), 0);
	assert_int_equal(work_submit(c.w, chain_fn, chain_done, &c), 0);
	assert_true(run_until_idle(loop, 5.0));
	assert_int_equal(c.done_calls, 51);
	work_free(c.w);
	assert_int_equal(work_new(loop, WORK_THREADS_MAX + 1, &c.w), -EINVAL);
}

/* ---- the loop stall histogram */

static void test_stall_hist(void **state)
{
	struct stall_hist h = { 0 };

	assert_true(stall_hist_p99(&h) == 0);
	stall_hist_add(&h, 0.0005);  /* le 0.001 */
	stall_hist_add(&h, 0.001);   /* le 0.001: the bound is inclusive */
	stall_hist_add(&h, 0.0015);  /* le 0.002 */
	stall_hist_add(&h, 0.3);     /* le 0.5 */
	stall_hist_add(&h, 2.5);     /* +Inf */
	stall_hist_add(&h, -1);      /* a clock step: 0 */
	assert_int_equal(h.count, 6);
	assert_int_equal(h.bucket[0], 3);
	assert_int_equal(h.bucket[1], 1);
	assert_int_equal(h.bucket[8], 1);
	assert_int_equal(h.bucket[STALL_NBOUNDS], 1);
	assert_true(h.sum > 2.8029 && h.sum < 2.8031);
	assert_true(h.max == 2.5);
	assert_true(stall_hist_quantile(&h, 0.5) == 0.001);  /* 3rd of 6 */
	assert_true(stall_hist_quantile(&h, 0.6) == 0.002);  /* 4th */
	assert_true(stall_hist_quantile(&h, 0.8) == 0.5);    /* 5th */
	assert_true(stall_hist_p99(&h) == 2.5);              /* 6th: +Inf, the max */

	/* 1,000 iterations: 990 quick ones, 10 of 30 ms: p99 is 1 ms (the
	 * 990th), a single one more makes it 50 ms */
	struct stall_hist g = { 0 };
	for (int i = 0; i < 990; i++)
		stall_hist_add(&g, 0.0004);
	for (int i = 0; i < 10; i++)
		stall_hist_add(&g, 0.03);
	assert_true(stall_hist_p99(&g) == 0.001);
	stall_hist_add(&g, 0.03);
	assert_true(stall_hist_p99(&g) == 0.03); /* the max is below the 50 ms bound */
	assert_true(stall_hist_quantile(&g, 1) == 0.03);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thousand),   cmocka_unit_test(test_free_queued),
		cmocka_unit_test(test_cancel),     cmocka_unit_test(test_queue_full),
		cmocka_unit_test(test_submit_from_done), cmocka_unit_test(test_stall_hist),
	};

	return cmocka_run_group_tests_name("worker threads", tests, setup, NULL);
}
