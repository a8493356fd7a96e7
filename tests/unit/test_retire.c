/* unit tests: the retirement engine (retire.c, retire_probe.c, cg_dying.c) driven
 * directly on the simulated cgroupfs of cgsim.c, with libev's default loop
 * (retire_probe.c reaps its writer with ev_child). Each verdict is checked against
 * what the sim's kernel did with the removed group: CGSIM_REPARENT moves its
 * pages to the parent and frees it, CGSIM_PIN keeps it dying while it holds
 * pages. The v2 layout is judged by the root's cgroup.stat; the hybrid one
 * (v1 memory) by /proc/cgroups and the root's local memory.stat. Every test
 * runs twice: kernel writes on the loop, and on worker threads (work.c).
 * Time is simulated (simclock.h): a verdict's delays and deadlines are those
 * the engine sets, whatever the machine's speed or load. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "cgsim.h"
#include "log.h"
#include "retire_probe.h"
#include "retire.h"
#include "retire_internal.h"
#include "simclock.h"
#include "util.h"
#include "work.h"

#define MiB (1024ULL * 1024)
#define VERIFY_MS 250      /* conf retire.verify_timeout for these tests */
#define SLICE 0.01         /* the loop runs this long between the tests' looks */
#define PROBE "cgpool-lru-probe"
#define WORKERS 2          /* threads of the work pool, "on workers" */

struct param {
	enum cgsim_layout layout;
	enum cgsim_kernel kernel;
	unsigned lag, subsys_lag; /* cgsim_opts, when lag is not 0 */
	bool no_subsys_stat;      /* no nr_dying_subsys_* (before 6.12) */
	bool no_memory_reclaim;   /* no memory.reclaim (before 5.19): memory.high reclaims */
};

struct env {
	const struct param *prm;
	struct cgsim *sim;
	struct cg *cg;
	struct conf *conf;
	struct retire *r;
	struct probe *probe; /* the LRU probe, a client of r */
	bool use_work;       /* kernel writes on worker threads */
	struct work *work;
	struct simclock_work busy; /* the work pool, for the simulated clock */
	struct ev_loop *loop;
	char root[PATH_MAX]; /* the pool root, cgroup path */
	char err[512];
	unsigned checks;     /* loop iterations (ev_check) */
	ev_check check;
};

/* one retirement's done callback; next: a retirement to start from it */
struct done {
	unsigned calls;
	struct retire_result res;
	int64_t at_us;
	struct env *e;
	const char *next;
	struct done *next_done;
	int next_r;
};

static void done_cb(const struct retire_result *res, void *ud)
{
	struct done *d = ud;

	d->calls++;
	d->res = *res;
	d->at_us = now_mono_us();
	if (d->next) /* as a caller may do: the next retirement, from this verdict */
		d->next_r = retire_start(d->e->r, d->next, "", RETIRE_REPARENT, done_cb, d->next_done);
}

/* ---- the environment: sim, cgroup layer, conf, retire on the default loop */

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	e->prm = *state;
	*state = e;
	return 0;
}

static int setup_work(void **state)
{
	int r = setup(state);

	if (r == 0)
		((struct env *)*state)->use_work = true;
	return r;
}

static void env_retire_free(struct env *e);

static int teardown(void **state)
{
	struct env *e = *state;

	env_retire_free(e); /* before its work pool */
	simclock_start(NULL, NULL);
	work_free(e->work);
	if (e->loop)
		ev_check_stop(e->loop, &e->check);
	cg_close(e->cg);
	cgsim_free(e->sim);
	conf_free(e->conf);
	free(e);
	return 0;
}

/* write hooks read it on worker threads */
static void check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	__atomic_fetch_add(&((struct env *)w->data)->checks, 1, __ATOMIC_RELAXED);
}

static void env_retire_new(struct env *e)
{
	assert_int_equal(retire_new(e->loop, e->cg, (const struct conf *const *)&e->conf, &e->r), 0);
	if (e->use_work)
		assert_int_equal(retire_set_work(e->r, e->work), 0);
	assert_int_equal(probe_new(e->loop, e->cg, e->r, (const struct conf *const *)&e->conf, &e->probe), 0);
}

/* the probe right before the engine it uses */
static void env_retire_free(struct env *e)
{
	probe_free(e->probe);
	e->probe = NULL;
	retire_free(e->r);
	e->r = NULL;
}

/* settle: free the group cg_open_fs's feature probe leaves dying */
static void env_open(struct env *e, const struct cgsim_opts *o, bool settle)
{
	int r;

	e->sim = cgsim_new(o);
	assert_non_null(e->sim);
	r = cg_open_fs(cgsim_ops(e->sim), e->sim, cgsim_mountinfo(e->sim), cgsim_proc_self_cgroup(e->sim), "auto",
		       CG_CTRL_MEMORY | CG_CTRL_PIDS, &e->cg, e->err, sizeof(e->err));
	if (r < 0)
		fail_msg("cg_open_fs: %s: %s", strerror(-r), e->err);
	snprintf(e->root, sizeof(e->root), "%s", cg_get_info(e->cg)->root);
	if (settle)
		cgsim_settle(e->sim);
	e->conf = conf_new_defaults();
	assert_non_null(e->conf);
	e->conf->retire.verify_timeout_ms = VERIFY_MS;
	e->loop = ev_default_loop(0);
	assert_non_null(e->loop);
	ev_check_init(&e->check, check_cb);
	e->check.data = e;
	ev_check_start(e->loop, &e->check);
	if (e->use_work)
		assert_int_equal(work_new(e->loop, WORKERS, &e->work), 0);
	e->busy = (struct simclock_work){ e->work, WORKERS };
	simclock_start(simclock_work_busy, &e->busy);
	env_retire_new(e);
	cgsim_calls_clear(e->sim);
}

static void env_open_prm(struct env *e)
{
	struct cgsim_opts o = cgsim_opts_default(e->prm->layout);

	o.kernel = e->prm->kernel;
	if (e->prm->lag) {
		o.lag = e->prm->lag;
		o.subsys_lag = e->prm->subsys_lag;
	}
	o.dying_subsys_stat = !e->prm->no_subsys_stat;
	o.memory_reclaim = !e->prm->no_memory_reclaim;
	o.adopt_real = true; /* retire_probe.c's writer */
	env_open(e, &o, true);
	/* the verdict the probe finds on this kernel (test_probe starts from none) */
	retire_set_lru_reparenting(e->r, e->prm->kernel == CGSIM_REPARENT ? LRU_YES : LRU_NO, "the sim's kernel");
}

static bool v1(const struct env *e)
{
	return e->prm->layout != CGSIM_V2;
}

static void stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ev_break(loop, EVBREAK_ONE);
}

static void pump(struct env *e, double sec)
{
	ev_timer t;

	ev_now_update(e->loop);
	ev_timer_init(&t, stop_cb, sec, 0.);
	ev_timer_start(e->loop, &t);
	ev_run(e->loop, 0);
	ev_timer_stop(e->loop, &t);
}

static bool all_done(const struct done *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!d[i].calls)
			return false;
	return true;
}

/* run the loop until every d[] got its verdict; false at the timeout */
static bool wait_done(struct env *e, const struct done *d, size_t n, double timeout)
{
	int64_t end = now_mono_us() + (int64_t)(timeout * 1e6);

	while (!all_done(d, n)) {
		if (now_mono_us() > end)
			return false;
		pump(e, SLICE);
	}
	return true;
}

/* a directory below the pool root */
static const char *rootpath(struct env *e, const char *name)
{
	static char buf[PATH_MAX + 64];

	snprintf(buf, sizeof(buf), "%s/%s", e->root, name);
	return buf;
}

/* the slot's run */
static const char *cgpath(struct env *e, const char *name)
{
	static char buf[PATH_MAX + 64];

	snprintf(buf, sizeof(buf), "%s/%s/run", e->root, name);
	return buf;
}

static void make_slot(struct env *e, const char *name, uint64_t file, uint64_t anon)
{
	assert_int_equal(cg_slot_create(e->cg, name), 0);
	if (file || anon)
		assert_int_equal(cgsim_charge(e->sim, cgpath(e, name), file, anon), 0);
}

static void start(struct env *e, const char *name, enum retire_mode mode, struct done *d)
{
	d->e = e;
	assert_int_equal(retire_start(e->r, name, "key", mode, done_cb, d), 0);
}

static struct retire_result retire1(struct env *e, const char *name, enum retire_mode mode)
{
	struct done d = { 0 };

	start(e, name, mode, &d);
	assert_true(wait_done(e, &d, 1, 10.0));
	assert_int_equal(d.calls, 1);
	return d.res;
}

/* reclaim writes to the slot: memory.reclaim (v2) or memory.force_empty (v1) */
/* the file a reclaim step writes: memory.force_empty (v1), memory.reclaim,
 * or before 5.19 memory.high (lowered, then put back: two writes a step) */
static const char *reclaim_file(const struct env *e)
{
	return v1(e) ? "memory.force_empty" : e->prm->no_memory_reclaim ? "memory.high" : "memory.reclaim";
}

static unsigned reclaims(struct env *e, const char *name)
{
	char pat[128];

	snprintf(pat, sizeof(pat), "/%s/run/%s", name, reclaim_file(e));
	return cgsim_calls(e->sim, CGSIM_OP_WRITE, pat) / (e->prm->no_memory_reclaim ? 2 : 1);
}

static unsigned rmdirs(struct env *e, const char *name)
{
	char pat[128];

	snprintf(pat, sizeof(pat), "/%s/run", name);
	return cgsim_calls(e->sim, CGSIM_OP_RMDIR, pat);
}

struct expect {
	enum retire_outcome outcome;
	uint64_t lru, drained;
	bool attributed;
};

static void expect_res(const char *what, const struct retire_result *res, const struct expect *x)
{
	if (res->outcome != x->outcome || res->lru_bytes != x->lru || res->drained_bytes != x->drained ||
	    res->attributed != x->attributed)
		fail_msg("%s: %s lru %llu drained %llu attributed %d, want %s lru %llu drained %llu attributed %d",
			 what, retire_outcome_name(res->outcome), (unsigned long long)res->lru_bytes,
			 (unsigned long long)res->drained_bytes, res->attributed, retire_outcome_name(x->outcome),
			 (unsigned long long)x->lru, (unsigned long long)x->drained, x->attributed);
	if (x->outcome == OUTCOME_PINNED && res->elapsed_ms < VERIFY_MS)
		fail_msg("%s: pinned after %lld ms, before verify_timeout", what, (long long)res->elapsed_ms);
}

/* ---- 1. every mode x every outcome, one retirement at a time */

enum content { EMPTY, CACHE, ANON, MIXED, N_CONTENT };
static const char *const content_name[] = { "empty", "4M page cache", "4M anon", "4M cache + 4M anon" };

static const struct mode_case {
	enum retire_mode mode;
	enum lru_reparenting lru; /* retire_set_lru_reparenting first */
	enum retire_mode carried_out;
	const char *label;
} mode_cases[] = {
	{ RETIRE_REPARENT, LRU_NO, RETIRE_REPARENT, "reparent (lru_reparenting no)" },
	{ RETIRE_DRAIN, LRU_YES, RETIRE_DRAIN, "drain (lru_reparenting yes)" },
	{ RETIRE_AUTO, LRU_YES, RETIRE_REPARENT, "auto, lru_reparenting yes" },
	{ RETIRE_AUTO, LRU_NO, RETIRE_DRAIN, "auto, lru_reparenting no" },
	{ RETIRE_AUTO, LRU_UNKNOWN, RETIRE_DRAIN, "auto, lru_reparenting unknown" },
};

/* What the engine must conclude, one retirement in flight (so attributed).
 * A drain reclaims clean page cache (in one step: 4M < 64M) and nothing of
 * anon (no swap): after 3 steps without progress it removes the slot as it
 * is, and the kernel decides. reclaims: the reclaim writes. */
static struct expect expected(enum cgsim_kernel k, enum retire_mode m, enum content c, unsigned *nreclaim)
{
	const uint64_t B = 4 * MiB;
	enum retire_outcome kept = k == CGSIM_REPARENT ? OUTCOME_REPARENTED : OUTCOME_PINNED;

	*nreclaim = 0;
	if (c == EMPTY)
		return (struct expect){ OUTCOME_RELEASED, 0, 0, true };
	if (m == RETIRE_REPARENT)
		return (struct expect){ kept, c == MIXED ? 2 * B : B, 0, true };
	switch (c) {
	case CACHE:
		*nreclaim = 1;
		return (struct expect){ OUTCOME_DRAINED, 0, B, true };
	case ANON:
		*nreclaim = 3;
		return (struct expect){ kept, B, 0, true };
	default: /* MIXED: the cache goes, then 3 steps free nothing */
		*nreclaim = 4;
		return (struct expect){ k == CGSIM_REPARENT ? OUTCOME_DRAINED : OUTCOME_PINNED, B, B, true };
	}
}

static void test_modes_outcomes(void **state)
{
	struct env *e = *state;
	uint64_t outcomes[OUTCOME_N] = { 0 }, pinned_bytes = 0, really_pinned = 0;
	struct retire_stats st;
	struct done d = { 0 };
	unsigned n = 0;

	env_open_prm(e);
	/* keep never removes: refused at once, nothing touched */
	make_slot(e, "slot-keep", 4 * MiB, 0);
	assert_int_equal(retire_start(e->r, "slot-keep", "k", RETIRE_KEEP, done_cb, &d), -EINVAL);
	pump(e, 0.1);
	assert_int_equal(d.calls, 0);
	assert_int_equal(rmdirs(e, "slot-keep"), 0);
	assert_true(cgsim_exists(e->sim, cgpath(e, "slot-keep")));

	for (size_t m = 0; m < sizeof(mode_cases) / sizeof(mode_cases[0]); m++) {
		const struct mode_case *mc = &mode_cases[m];
		for (enum content c = EMPTY; c < N_CONTENT; c++) {
			char name[32], what[160];
			unsigned nrec;
			/* each slot's directory witnesses its run alone: the kernel's
			 * own verdict, whatever the probe said */
			enum cgsim_kernel k = e->prm->kernel;
			struct expect x = expected(k, mc->carried_out, c, &nrec);
			struct retire_result res;

			snprintf(name, sizeof(name), "slot-%u", n++);
			snprintf(what, sizeof(what), "%s, %s, %s", name, mc->label, content_name[c]);
			struct cgsim_mem before, after;

			make_slot(e, name, c == CACHE || c == MIXED ? 4 * MiB : 0, c == ANON || c == MIXED ? 4 * MiB : 0);
			retire_set_lru_reparenting(e->r, mc->lru, "set by the test");
			assert_int_equal(cgsim_memory(e->sim, e->root, &before), 0);
			res = retire1(e, name, mc->mode);
			assert_int_equal(cgsim_memory(e->sim, e->root, &after), 0);
			/* reparented: what it held at removal is the root's own now */
			if (x.outcome == OUTCOME_REPARENTED || (x.outcome == OUTCOME_DRAINED && x.lru))
				assert_int_equal(after.file + after.anon - before.file - before.anon, x.lru);
			expect_res(what, &res, &x);
			if (!strstr(res.evidence, "its own directory"))
				fail_msg("%s: evidence \"%s\"", what, res.evidence);
			if (x.outcome != OUTCOME_PINNED && res.elapsed_ms >= VERIFY_MS)
				fail_msg("%s: freed, but the verdict took %lld ms", what, (long long)res.elapsed_ms);
			assert_string_equal(res.name, name);
			assert_string_equal(res.key, "key");
			assert_int_equal(res.mode, mc->carried_out);
			assert_int_equal(res.error, 0);
			if (reclaims(e, name) != nrec)
				fail_msg("%s: %u reclaim writes, want %u", what, reclaims(e, name), nrec);
			assert_true(rmdirs(e, name) > 0);
			assert_false(cgsim_exists(e->sim, cgpath(e, name)));
			/* the kernel's side: pinned ones are still dying, holding what they
			 * held (where the test's verdict is not the sim kernel's, pinned is
			 * only what the engine may conclude) */
			if (x.outcome == OUTCOME_PINNED && k == e->prm->kernel) {
				uint64_t held;
				assert_int_equal(cgsim_dying(e->sim, cgpath(e, name), NULL), 0);
				assert_true(cgsim_dying(e->sim, e->root, &held) >= 1);
				assert_true(held >= res.lru_bytes);
			}
			if (x.outcome == OUTCOME_PINNED)
				pinned_bytes += res.lru_bytes;
			really_pinned += x.outcome == OUTCOME_PINNED && k == e->prm->kernel;
			outcomes[res.outcome]++;
		}
	}
	retire_get_stats(e->r, &st);
	assert_memory_equal(st.outcomes, outcomes, sizeof(outcomes));
	assert_int_equal(st.pinned_bytes, pinned_bytes);
	assert_int_equal(st.in_flight, 0);
	assert_true(cgsim_exists(e->sim, cgpath(e, "slot-keep")));
	/* on a PIN kernel every slot that held anon or undrained cache is still
	 * dying, and its directory with it (the others freed once the kernel's
	 * lag passes) */
	cgsim_settle(e->sim);
	assert_int_equal(cgsim_dying(e->sim, e->root, NULL), 2 * really_pinned);
}

/* ---- 2. faults */

static void test_ebusy_then_ok(void **state)
{
	struct env *e = *state;
	struct retire_result res;

	env_open_prm(e);
	make_slot(e, "slot-1", 4 * MiB, 0);
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_RMDIR, "/slot-1/run", -EBUSY, 3), 0);
	res = retire1(e, "slot-1", RETIRE_REPARENT);
	expect_res("slot-1 EBUSY x3", &res, &(struct expect){ OUTCOME_REPARENTED, 4 * MiB, 0, true });
	assert_int_equal(rmdirs(e, "slot-1"), 4);
	assert_true(res.total_ms >= 300); /* 3 retries 100 ms apart */
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-1")));
}


/* rmdir busy for good: failed after 50 retries 100 ms apart; the slot stays */
static void test_ebusy_forever(void **state)
{
	struct env *e = *state;
	struct retire_result res;
	struct retire_stats st;
	struct capture cap;
	struct cgsim_mem m;

	env_open_prm(e);
	make_slot(e, "slot-1", 4 * MiB, 0);
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_RMDIR, "/slot-1/run", -EBUSY, CGSIM_FOREVER), 0);
	capture_begin(&cap);
	res = retire1(e, "slot-1", RETIRE_REPARENT);
	capture_end(&cap);
	assert_int_equal(res.outcome, OUTCOME_FAILED);
	assert_int_equal(res.error, -EBUSY);
	assert_int_equal(res.lru_bytes, 4 * MiB);
	assert_int_equal(res.elapsed_ms, 0); /* never removed */
	assert_int_equal(rmdirs(e, "slot-1"), 51);
	assert_true(res.total_ms >= 4900);
	if (!strstr(cap.text, "retire slot-1 (key): rmdir: Device or resource busy (51 tries)"))
		fail_msg("log: %s", cap.text);
	assert_true(cgsim_exists(e->sim, cgpath(e, "slot-1")));
	assert_int_equal(cgsim_memory(e->sim, cgpath(e, "slot-1"), &m), 0);
	assert_int_equal(m.file, 4 * MiB);
	retire_get_stats(e->r, &st);
	assert_int_equal(st.outcomes[OUTCOME_FAILED], 1);
	assert_int_equal(st.in_flight, 0);
	/* the slot can be retired once the kernel lets go */
	cgsim_fail_clear(e->sim);
	res = retire1(e, "slot-1", RETIRE_DRAIN);
	expect_res("slot-1 again", &res, &(struct expect){ OUTCOME_DRAINED, 0, 4 * MiB, true });
}

/* memory.reclaim fails: -EAGAIN every time (the drain gives up after 3) or
 * -EIO (removed as it is at once); the kernel decides the rest */
static void reclaim_fails(struct env *e, int err, unsigned writes)
{
	enum retire_outcome kept = e->prm->kernel == CGSIM_REPARENT ? OUTCOME_REPARENTED : OUTCOME_PINNED;
	struct retire_result res;

	env_open_prm(e);
	make_slot(e, "slot-1", 4 * MiB, 0);
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_WRITE, "/memory.reclaim", err, CGSIM_FOREVER), 0);
	res = retire1(e, "slot-1", RETIRE_DRAIN);
	expect_res(strerror(-err), &res, &(struct expect){ kept, 4 * MiB, 0, true });
	assert_int_equal(res.mode, RETIRE_DRAIN);
	assert_int_equal(reclaims(e, "slot-1"), writes);
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-1")));
}

static void test_reclaim_eagain(void **state)
{
	reclaim_fails(*state, -EAGAIN, 3);
}

static void test_reclaim_eio(void **state)
{
	reclaim_fails(*state, -EIO, 1);
}

/* the witness cannot be read: nothing is proven freed, so pinned at the
 * timeout; once it reads again, retirements are judged as before */
static void test_witness_unreadable(void **state)
{
	struct env *e = *state;
	struct retire_result res;

	env_open_prm(e);
	make_slot(e, "slot-1", 0, 0);
	make_slot(e, "slot-2", 0, 0);
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_READ,
				    v1(e) ? "/slot-1/memory.usage_in_bytes" : "/slot-1/memory.current", -EIO,
				    CGSIM_FOREVER), 0);
	res = retire1(e, "slot-1", RETIRE_REPARENT);
	expect_res("unreadable", &res, &(struct expect){ OUTCOME_PINNED, 0, 0, false });
	if (!strstr(res.evidence, "could not be read"))
		fail_msg("evidence: %s", res.evidence);
	cgsim_fail_clear(e->sim);
	assert_int_equal(cg_slot_remove(e->cg, "slot-1"), 0); /* the daemon could not remove it either */
	cgsim_settle(e->sim); /* nobody read the counter, so its lag is not over */
	assert_int_equal(cgsim_dying(e->sim, NULL, NULL), 0); /* the truth: it was not pinned */
	res = retire1(e, "slot-2", RETIRE_REPARENT);
	expect_res("readable again", &res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
}

/* a reclaim write that takes 50 ms: the drain still goes step by step (64M
 * each, one per loop iteration) and the slowest write is reported; so is a
 * slow rmdir */
struct steps {
	struct env *e;
	unsigned n, checks[8];
};

static void on_reclaim(struct cgsim *sim, const char *path, const char *value, void *ud)
{
	struct steps *s = ud;

	if (s->n < 8)
		s->checks[s->n] = __atomic_load_n(&s->e->checks, __ATOMIC_RELAXED);
	s->n++;
}

static void test_slow_writes(void **state)
{
	struct env *e = *state;
	struct retire_result res;
	struct retire_stats st;
	struct steps s = { .e = e };

	env_open_prm(e);
	make_slot(e, "slot-1", 200 * MiB, 0);
	make_slot(e, "slot-2", 0, 0);
	assert_int_equal(cgsim_set_delay(e->sim, "/memory.reclaim", 50000), 0);
	assert_int_equal(cgsim_on_write(e->sim, "/slot-1/run/memory.reclaim", on_reclaim, &s), 0);
	res = retire1(e, "slot-1", RETIRE_DRAIN);
	expect_res("slow reclaim", &res, &(struct expect){ OUTCOME_DRAINED, 0, 200 * MiB, true });
	assert_int_equal(s.n, 4); /* 64M + 64M + 64M + 8M */
	for (unsigned i = 1; i < s.n; i++)
		assert_true(s.checks[i] > s.checks[i - 1]);
	retire_get_stats(e->r, &st);
	assert_true(st.max_write_ms >= 50.0);
	assert_true(st.max_write_ms < 1000.0);

	assert_int_equal(cgsim_set_delay(e->sim, "/slot-2/run", 120000), 0);
	res = retire1(e, "slot-2", RETIRE_REPARENT);
	expect_res("slow rmdir", &res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
	retire_get_stats(e->r, &st);
	assert_true(st.max_write_ms >= 120.0);
	assert_true(st.max_write_ms < 1000.0);
}

/* drain_timeout: the drain stops between steps and the slot is removed with
 * what is left (200M, 64M steps of 60 ms each, a 100 ms timeout) */
static void test_drain_timeout(void **state)
{
	struct env *e = *state;
	struct retire_result res;
	struct capture cap;
	char line[128];

	env_open_prm(e);
	e->conf->retire.drain_timeout_ms = 100;
	make_slot(e, "slot-1", 200 * MiB, 0);
	snprintf(line, sizeof(line), "/%s", reclaim_file(e));
	assert_int_equal(cgsim_set_delay(e->sim, line, 60000), 0);
	capture_begin(&cap);
	res = retire1(e, "slot-1", RETIRE_DRAIN);
	capture_end(&cap);
	assert_int_equal(res.outcome, OUTCOME_PINNED);
	assert_int_equal(res.lru_bytes + res.drained_bytes, 200 * MiB);
	assert_true(res.drained_bytes >= 64 * MiB && res.drained_bytes <= 128 * MiB);
	assert_int_equal(res.drained_bytes % (64 * MiB), 0);
	assert_int_equal(reclaims(e, "slot-1"), res.drained_bytes / (64 * MiB));
	snprintf(line, sizeof(line), "drain_timeout with %llu LRU bytes left", (unsigned long long)res.lru_bytes);
	if (!strstr(cap.text, line))
		fail_msg("log: %s", cap.text);
}

/* at most two slots drain at once: the third's first reclaim comes after
 * one of the first two was removed */
struct order {
	unsigned rmdirs_at_third;
	bool seen;
};

static void on_third(struct cgsim *sim, const char *path, const char *value, void *ud)
{
	struct order *o = ud;

	if (!o->seen)
		o->rmdirs_at_third = cgsim_calls(sim, CGSIM_OP_RMDIR, "*/slot-[12]/run");
	o->seen = true;
}

static void test_drain_parallel(void **state)
{
	struct env *e = *state;
	struct done d[3] = { { 0 } };
	struct order o = { 0 };

	env_open_prm(e);
	for (int i = 1; i <= 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "slot-%d", i);
		make_slot(e, name, 4 * MiB, 0);
	}
	assert_int_equal(cgsim_set_delay(e->sim, "/memory.reclaim", 20000), 0);
	assert_int_equal(cgsim_on_write(e->sim, "/slot-3/run/memory.reclaim", on_third, &o), 0);
	start(e, "slot-1", RETIRE_DRAIN, &d[0]);
	start(e, "slot-2", RETIRE_DRAIN, &d[1]);
	start(e, "slot-3", RETIRE_DRAIN, &d[2]);
	assert_true(wait_done(e, d, 3, 5.0));
	assert_true(o.seen);
	assert_true(o.rmdirs_at_third >= 1);
	for (int i = 0; i < 3; i++) /* attributed or not, by how their verifications overlapped */
		expect_res(d[i].res.name, &d[i].res, &(struct expect){ OUTCOME_DRAINED, 0, 4 * MiB, d[i].res.attributed });
}

/* ---- 3. several retirements in flight: attribution */

/* removed together: an empty slot and two holding page cache */
static void test_several(void **state)
{
	struct env *e = *state;
	bool reparent = e->prm->kernel == CGSIM_REPARENT;
	struct done d[3] = { { 0 } };

	env_open_prm(e);
	make_slot(e, "slot-a", 0, 0);
	make_slot(e, "slot-b", 4 * MiB, 0);
	make_slot(e, "slot-c", 8 * MiB, 0);
	start(e, "slot-a", RETIRE_REPARENT, &d[0]);
	start(e, "slot-b", RETIRE_REPARENT, &d[1]);
	start(e, "slot-c", RETIRE_REPARENT, &d[2]);
	assert_true(wait_done(e, d, 3, 5.0));
	if (reparent) {
		/* all freed: unambiguous (v1: the cache showed up in the root) */
		expect_res("a", &d[0].res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
		expect_res("b", &d[1].res, &(struct expect){ OUTCOME_REPARENTED, 4 * MiB, 0, true });
		expect_res("c", &d[2].res, &(struct expect){ OUTCOME_REPARENTED, 8 * MiB, 0, true });
		cgsim_settle(e->sim); /* their directories, removed after the verdicts */
		assert_int_equal(cgsim_dying(e->sim, NULL, NULL), 0);
	} else {
		/* one of three freed: each one's own directory says which */
		expect_res("a", &d[0].res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
		expect_res("b", &d[1].res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
		expect_res("c", &d[2].res, &(struct expect){ OUTCOME_PINNED, 8 * MiB, 0, true });
		assert_true(d[0].at_us < d[1].at_us && d[0].at_us < d[2].at_us);
		cgsim_settle(e->sim);
		assert_int_equal(cgsim_dying(e->sim, e->root, NULL), 4); /* each pinned run, and its directory */
	}
}

/* counters that lag rmdir by several reads, and the kernels without
 * nr_dying_subsys_memory or where it rises late: no early verdict, the
 * pinned ones stay pinned, and they stay in the baseline of the next */
static void test_lag(void **state)
{
	struct env *e = *state;
	struct done d[3] = { { 0 } };
	struct retire_result res;

	env_open_prm(e);
	make_slot(e, "slot-a", 0, 0);
	make_slot(e, "slot-b", 4 * MiB, 0);
	make_slot(e, "slot-c", 0, 4 * MiB);
	make_slot(e, "slot-d", 0, 0);
	start(e, "slot-b", RETIRE_REPARENT, &d[1]);
	start(e, "slot-a", RETIRE_REPARENT, &d[0]);
	start(e, "slot-c", RETIRE_DRAIN, &d[2]);
	assert_true(wait_done(e, d, 3, 5.0));
	expect_res("a", &d[0].res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
	expect_res("b", &d[1].res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
	expect_res("c", &d[2].res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
	res = retire1(e, "slot-d", RETIRE_REPARENT);
	expect_res("d", &res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
	cgsim_settle(e->sim);
	assert_int_equal(cgsim_dying(e->sim, e->root, NULL), 4); /* each pinned run, and its directory */
}

/* the feature probe's group cg_open_fs removed is still being freed when
 * the first retirement takes its baseline: that must not hide a pinned slot */
static void test_baseline_settles(void **state)
{
	struct env *e = *state;
	struct cgsim_opts o = cgsim_opts_default(e->prm->layout);
	struct retire_result res;

	o.kernel = CGSIM_PIN;
	env_open(e, &o, false);
	assert_int_equal(cgsim_dying(e->sim, NULL, NULL), 1);
	make_slot(e, "slot-1", 4 * MiB, 0);
	res = retire1(e, "slot-1", RETIRE_REPARENT);
	expect_res("slot-1", &res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
}

/* A pinned group freed later (its page cache dropped) leaves the baseline:
 * the next retirement's baseline is read again once nothing of ours is in
 * flight, so a group of the next one that stays dying is still seen as
 * pinned, and one that goes as freed. */
static void test_baseline_after_pinned_freed(void **state)
{
	struct env *e = *state;
	struct cgsim_opts o = cgsim_opts_default(e->prm->layout);
	struct retire_result res;

	o.kernel = CGSIM_PIN;
	env_open(e, &o, false);
	cgsim_settle(e->sim);
	make_slot(e, "slot-a", 4 * MiB, 0);
	res = retire1(e, "slot-a", RETIRE_REPARENT);
	expect_res("slot-a", &res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
	cgsim_settle(e->sim);
	assert_int_equal(cgsim_dying(e->sim, e->root, NULL), 2); /* the run, and its directory with it */
	assert_true(cgsim_drop_cache(e->sim, NULL) >= 4 * MiB); /* drop_caches: the pinned group goes */
	cgsim_settle(e->sim);
	assert_int_equal(cgsim_dying(e->sim, e->root, NULL), 0);
	make_slot(e, "slot-b", 4 * MiB, 0);
	res = retire1(e, "slot-b", RETIRE_REPARENT);
	expect_res("slot-b", &res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
	make_slot(e, "slot-c", 0, 0);
	res = retire1(e, "slot-c", RETIRE_REPARENT);
	expect_res("slot-c", &res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
}

struct later_writeback {
	ev_timer t;
	struct env *e;
	const char *path;
	uint64_t bytes;
};

static void writeback_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct later_writeback *lw = (struct later_writeback *)w;

	lw->bytes = cgsim_writeback(lw->e->sim, lw->path);
}

/* Dirty pages are written back before rmdir: the retirement waits in its
 * flush until the slot's dirty counters are 0 (here the sim's writeback
 * ends 200 ms in), reports them as flushed_bytes, and the slot comes back
 * reparented (a reparenting kernel, mode reparent) or drained (mode drain),
 * not pinned. */
static void test_flush_dirty(void **state)
{
	struct env *e = *state;
	enum retire_mode mode = e->prm->kernel == CGSIM_REPARENT ? RETIRE_REPARENT : RETIRE_DRAIN;
	struct later_writeback lw = { .e = e };
	struct retire_result res;
	char path[PATH_MAX + 64];

	env_open_prm(e);
	make_slot(e, "slot-1", 0, 0);
	snprintf(path, sizeof(path), "%s", cgpath(e, "slot-1"));
	assert_int_equal(cgsim_charge_dirty(e->sim, path, 4 * MiB), 0);
	lw.path = path;
	ev_timer_init(&lw.t, writeback_cb, 0.2, 0.);
	ev_now_update(e->loop); /* 200 ms from now, not from the loop's last wake-up */
	ev_timer_start(e->loop, &lw.t);
	res = retire1(e, "slot-1", mode);
	assert_int_equal(lw.bytes, 4 * MiB);
	assert_int_equal(res.flushed_bytes, 4 * MiB);
	assert_true(res.total_ms >= 190);
	if (mode == RETIRE_REPARENT)
		expect_res("flushed", &res, &(struct expect){ OUTCOME_REPARENTED, 4 * MiB, 0, true });
	else
		expect_res("flushed", &res, &(struct expect){ OUTCOME_DRAINED, 0, 4 * MiB, true });
}

/* A removed group held by an inode's writeback (attached to it and dirty
 * when it went offline): on v2 the engine writes back and takes an empty
 * memcg offline, which frees it well within verify_timeout; without that it
 * would stay pinned (checked first: no clean-up in the first moments). On v1
 * there is no cgroup writeback, and no clean-up. */
static void test_wb_cleanup(void **state)
{
	struct env *e = *state;
	struct retire_result res;
	struct done d = { 0 };

	env_open_prm(e);
	make_slot(e, "slot-1", 4 * MiB, 0);
	assert_int_equal(cgsim_attach_inode(e->sim, cgpath(e, "slot-1"), true), 0);
	start(e, "slot-1", RETIRE_REPARENT, &d);
	pump(e, 0.03);
	if (!v1(e))
		assert_int_equal(d.calls, 0); /* still dying, no clean-up yet */
	assert_true(wait_done(e, &d, 1, 10.0));
	res = d.res;
	if (v1(e)) {
		expect_res("v1", &res, &(struct expect){ OUTCOME_REPARENTED, 4 * MiB, 0, true });
		assert_int_equal(cgsim_syncs(e->sim), 0);
		assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_RMDIR, "*/" CG_WB_CLEANUP_NAME "/offline"), 0);
		return;
	}
	expect_res("inode's writeback", &res, &(struct expect){ OUTCOME_REPARENTED, 4 * MiB, 0, true });
	assert_true(res.elapsed_ms < VERIFY_MS);
	assert_int_equal(cgsim_syncs(e->sim), 1);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_RMDIR, "*/" CG_WB_CLEANUP_NAME "/offline"), 1);
	assert_false(cgsim_exists(e->sim, rootpath(e, CG_WB_CLEANUP_NAME "/offline")));
	cgsim_settle(e->sim); /* its directory, removed after the verdict */
	assert_int_equal(cgsim_dying(e->sim, NULL, NULL), 0);
}

/* A verdict's callback starts the next retirement while the others of that
 * reading are still being attributed: the new one must not be taken for one
 * the reading saw freed. slot-a (empty) and slot-b (8M clean cache) go
 * together; a's callback retires slot-c, whose 4M of dirty pages keep it
 * dying under writeback even on a reparenting kernel. */
static void test_start_from_verdict(void **state)
{
	struct env *e = *state;
	struct done d[3] = { { 0 } };

	env_open_prm(e);
	make_slot(e, "slot-a", 0, 0);
	make_slot(e, "slot-b", 8 * MiB, 0);
	make_slot(e, "slot-c", 0, 0);
	assert_int_equal(cgsim_charge_dirty(e->sim, cgpath(e, "slot-c"), 4 * MiB), 0);
	e->conf->retire.drain_timeout_ms = 100; /* the flush gives up: nothing writes the sim's pages back */
	d[0].next = "slot-c";
	d[0].next_done = &d[2];
	d[2].e = e;
	start(e, "slot-a", RETIRE_REPARENT, &d[0]);
	start(e, "slot-b", RETIRE_REPARENT, &d[1]);
	assert_true(wait_done(e, d, 3, 5.0));
	assert_int_equal(d[0].next_r, 0);
	expect_res("a", &d[0].res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
	expect_res("b", &d[1].res, &(struct expect){ OUTCOME_REPARENTED, 8 * MiB, 0, true });
	expect_res("c", &d[2].res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
	cgsim_settle(e->sim);
	assert_int_equal(cgsim_dying(e->sim, e->root, NULL), 2); /* c's run, and its directory */
}

/* ---- 4. the rate limit: a token bucket of rate tokens, full at start, so
 * with rate 2 the first two go at once, then one every 500 ms */

static void test_rate(void **state)
{
	struct env *e = *state;
	char names[6][16];
	struct done d[6] = { { 0 } };
	double at[6] = { 0 };
	unsigned seen = 0;
	int64_t t0, end;

	env_open_prm(e);
	env_retire_free(e);
	e->conf->retire.rate = 2;
	env_retire_new(e);
	for (int i = 0; i < 6; i++) {
		snprintf(names[i], sizeof(names[i]), "slot-%d", i);
		make_slot(e, names[i], 0, 0);
	}
	t0 = now_mono_us();
	end = t0 + 5000000;
	for (int i = 0; i < 6; i++)
		start(e, names[i], RETIRE_REPARENT, &d[i]);
	/* when each rmdir happened, to the loop slice */
	while (!all_done(d, 6) && now_mono_us() < end) {
		unsigned n = cgsim_calls(e->sim, CGSIM_OP_RMDIR, "*/slot-*/run");
		double t = (now_mono_us() - t0) / 1e6;
		/* never more than the bucket allows: rate + rate * t */
		if (n > 2 + (unsigned)(2 * t))
			fail_msg("%u removals after %.3f s", n, t);
		while (seen < n && seen < 6)
			at[seen++] = t;
		pump(e, SLICE);
	}
	assert_true(all_done(d, 6));
	assert_int_equal(seen, 6);
	assert_true(at[1] < 0.3);
	for (int i = 2; i < 6; i++)
		if (at[i] < (i - 1) * 0.5 - 0.02 || at[i] > (i - 1) * 0.5 + 0.45)
			fail_msg("removal %d after %.3f s, want %.1f s", i + 1, at[i], (i - 1) * 0.5);
	assert_true((d[5].at_us - t0) / 1e6 >= 1.5);
	for (int i = 0; i < 6; i++)
		expect_res(names[i], &d[i].res, &(struct expect){ OUTCOME_RELEASED, 0, 0, true });
}

/* ---- 5 and 6. the probe, and auto retirements waiting for it
 *
 * The sim cannot see the real page cache the writer makes in /var/tmp, so a
 * hook charges 4M of clean page cache (written back, as the writer's
 * fdatasync leaves it) to the probe cgroup when the writer is put there. */
static void charge_probe(struct cgsim *sim, const char *path, const char *value, void *ud)
{
	struct env *e = ud;
	struct cgsim_mem m;

	char run[PATH_MAX];

	/* path: the round's run's cgroup.procs: its cgroup path is the root's and what follows it */
	snprintf(run, sizeof(run), "%s%s", e->root, strstr(path, "/" PROBE "/"));
	*strrchr(run, '/') = '\0';
	if (cgsim_memory(sim, run, &m) == 0 && m.file == 0)
		cgsim_charge(sim, run, 4 * MiB, 0);
}

/* An auto retirement queued while the probe runs waits for its verdict (no
 * rmdir before); one in mode drain does not. On a PIN kernel the probe ends
 * pinned, then closing its file drops its page cache, which frees its
 * memcg: a slot still being verified meanwhile (anon, pinned for good) must
 * not be taken for the group that went. */
static void test_probe(void **state)
{
	struct env *e = *state;
	bool reparent = e->prm->kernel == CGSIM_REPARENT, early_rmdir = false;
	struct done d[3] = { { 0 } };
	size_t n = reparent ? 2 : 3;
	struct retire_stats st;
	const char *why = NULL;
	int64_t end;

	env_open_prm(e);
	assert_int_equal(cgsim_on_write(e->sim, "*/" PROBE "/r*/run/cgroup.procs", charge_probe, e), 0);
	make_slot(e, "slot-auto", 4 * MiB, 0);
	make_slot(e, "slot-drain", 0, 0);
	retire_set_lru_reparenting(e->r, LRU_UNKNOWN, "");
	assert_int_equal(probe_start(e->probe), 0);
	assert_int_equal(probe_start(e->probe), -EALREADY); /* running */
	start(e, "slot-auto", RETIRE_AUTO, &d[0]);
	start(e, "slot-drain", RETIRE_DRAIN, &d[1]);
	if (!reparent) {
		make_slot(e, "slot-anon", 0, 4 * MiB);
		e->conf->retire.verify_timeout_ms = 12000; /* beyond the probe's two rounds of 5 s */
		start(e, "slot-anon", RETIRE_DRAIN, &d[2]);
		e->conf->retire.verify_timeout_ms = VERIFY_MS;
	}
	end = now_mono_us() + 20 * 1000000;
	while (retire_lru_reparenting(e->r, NULL) == LRU_UNKNOWN && now_mono_us() < end) {
		early_rmdir |= rmdirs(e, "slot-auto") > 0 || d[0].calls > 0;
		pump(e, SLICE);
	}
	assert_false(early_rmdir);
	assert_int_equal(retire_lru_reparenting(e->r, &why), reparent ? LRU_YES : LRU_NO);
	if (!strstr(why, reparent ? "charged to its parent" : "was still dying") || !strstr(why, PROBE "/r1: "))
		fail_msg("why: %s", why);
	if (!reparent) {
		assert_int_equal(d[1].calls, 1); /* did not wait for the probe */
		/* the probe closed its files: once slot-auto's drain took its
		 * pages, drop the probe's (the page cache left below the root:
		 * 4M of each round, on v2 the file's and the memfd's that
		 * checked it, on v1 the file's alone) */
		while (reclaims(e, "slot-auto") == 0 && now_mono_us() < end)
			pump(e, 0.001);
		assert_int_equal(cgsim_drop_cache(e->sim, e->root), v1(e) ? 4 * MiB : 8 * MiB);
	}
	assert_true(wait_done(e, d, n, 10.0));
	if (!reparent) {
		expect_res("anon", &d[2].res, &(struct expect){ OUTCOME_PINNED, 4 * MiB, 0, true });
		assert_true(d[2].res.elapsed_ms >= 12000);
		cgsim_settle(e->sim); /* the kernel's lag, which only reads of its counters move */
		assert_int_equal(cgsim_dying(e->sim, e->root, NULL), 2); /* slot-anon's run, and its directory */
	}
	if (reparent)
		expect_res("auto", &d[0].res, &(struct expect){ OUTCOME_REPARENTED, 4 * MiB, 0, true });
	else
		expect_res("auto", &d[0].res, &(struct expect){ OUTCOME_DRAINED, 0, 4 * MiB, true });
	assert_int_equal(d[0].res.mode, reparent ? RETIRE_REPARENT : RETIRE_DRAIN);
	assert_int_equal(d[1].res.outcome, OUTCOME_RELEASED);
	retire_get_stats(e->r, &st);
	assert_int_equal(st.outcomes[OUTCOME_RELEASED] + st.outcomes[OUTCOME_REPARENTED] +
				 st.outcomes[OUTCOME_DRAINED] + st.outcomes[OUTCOME_PINNED],
			 n); /* the probe is not a retirement */
	assert_true(cgsim_exists(e->sim, rootpath(e, PROBE))); /* it stays for the next probe */
	assert_false(cgsim_exists(e->sim, rootpath(e, PROBE "/r1"))); /* each round's place goes */
	assert_false(cgsim_exists(e->sim, rootpath(e, PROBE "/r2")));
}

/* no page cache charged to the probe cgroup (the sim sees none without the
 * hook): the verdict is unknown, with the reason, and auto means drain */
static void test_probe_uncharged(void **state)
{
	struct env *e = *state;
	struct retire_result res;
	const char *why = NULL;
	int64_t end;

	env_open_prm(e);
	make_slot(e, "slot-1", 4 * MiB, 0);
	retire_set_lru_reparenting(e->r, LRU_UNKNOWN, "");
	assert_int_equal(probe_start(e->probe), 0);
	end = now_mono_us() + 10 * 1000000;
	while (retire_lru_reparenting(e->r, &why) == LRU_UNKNOWN && !why[0] && now_mono_us() < end)
		pump(e, SLICE);
	assert_int_equal(retire_lru_reparenting(e->r, &why), LRU_UNKNOWN);
	if (!strstr(why, "was not charged"))
		fail_msg("why: %s", why);
	assert_false(cgsim_exists(e->sim, rootpath(e, PROBE "/r1")));
	res = retire1(e, "slot-1", RETIRE_AUTO);
	assert_int_equal(res.mode, RETIRE_DRAIN);
	expect_res("auto", &res, &(struct expect){ OUTCOME_DRAINED, 0, 4 * MiB, true });
}

/* ---- 7. kernel writes on worker threads */

/* the loop while a slow rmdir is in flight: a 10 ms timer's longest gap,
 * and reads through the cgroup layer done meanwhile */
struct ticker {
	struct env *e;
	struct done *d;
	int64_t last_us, max_gap_us, max_read_us;
	unsigned reads_in_flight;
	ev_timer t;
};

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ticker *tk = w->data;
	int64_t now = now_mono_us(), t0;
	struct cg_memory m;
	struct cg_dying dy;

	if (tk->last_us && now - tk->last_us > tk->max_gap_us)
		tk->max_gap_us = now - tk->last_us;
	tk->last_us = now;
	if (rmdirs(tk->e, "slot-1") == 0 || tk->d->calls)
		return; /* not in flight */
	t0 = now_mono_us();
	assert_int_equal(cg_slot_memory(tk->e->cg, "slot-2", &m), 0);
	assert_int_equal(m.file, 4 * MiB);
	assert_int_equal(cg_dying(tk->e->cg, &dy), 0);
	if (now_mono_us() - t0 > tk->max_read_us)
		tk->max_read_us = now_mono_us() - t0;
	tk->reads_in_flight++;
}

/* An rmdir that takes 300 ms: on a worker the loop keeps running (the timer
 * keeps firing, reads on the loop complete) and the verdict is still right;
 * on the loop it stalls for the whole write. */
static void test_slow_rmdir_loop_runs(void **state)
{
	struct env *e = *state;
	struct done d = { 0 };
	struct ticker tk = { .e = e, .d = &d };
	struct retire_stats st;

	env_open_prm(e);
	make_slot(e, "slot-1", 4 * MiB, 0);
	make_slot(e, "slot-2", 4 * MiB, 0);
	assert_int_equal(cgsim_set_delay(e->sim, "/slot-1/run", 300000), 0);
	ev_timer_init(&tk.t, tick_cb, 0.01, 0.01);
	tk.t.data = &tk;
	ev_timer_start(e->loop, &tk.t);
	tk.last_us = now_mono_us(); /* the rmdir may begin before the first tick */
	start(e, "slot-1", RETIRE_REPARENT, &d);
	assert_true(wait_done(e, &d, 1, 10.0));
	ev_timer_stop(e->loop, &tk.t);
	expect_res("slow rmdir", &d.res,
		   &(struct expect){ e->prm->kernel == CGSIM_REPARENT ? OUTCOME_REPARENTED : OUTCOME_PINNED, 4 * MiB,
				     0, true });
	assert_true(d.res.total_ms >= 300);
	retire_get_stats(e->r, &st);
	assert_true(st.max_write_ms >= 300.0);
	if (e->use_work) {
		if (tk.max_gap_us >= 50000 || tk.reads_in_flight < 5 || tk.max_read_us >= 50000)
			fail_msg("loop gap %lld us, %u reads in flight (slowest %lld us)", (long long)tk.max_gap_us,
				 tk.reads_in_flight, (long long)tk.max_read_us);
	} else {
		if (tk.max_gap_us < 250000) /* what the worker threads are for */
			fail_msg("loop gap only %lld us, total %lld ms", (long long)tk.max_gap_us, (long long)d.res.total_ms);
	}
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-1")));
	assert_true(cgsim_exists(e->sim, cgpath(e, "slot-2")));
}

struct gap_ticker {
	int64_t last_us, max_gap_us;
	unsigned ticks;
	ev_timer t;
};

static void gap_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct gap_ticker *g = w->data;
	int64_t now = now_mono_us();

	if (g->last_us && now - g->last_us > g->max_gap_us)
		g->max_gap_us = now - g->last_us;
	g->last_us = now;
	g->ticks++;
}

/* v1: the machine-wide count walks every memory cgroup of the machine. One
 * that takes 200 ms (a slow listing of the memory hierarchy's root) slows no
 * retirement and stalls no loop: each one is judged by its own directory,
 * and the count is never read for it. */
static void test_slow_witness_loop_runs(void **state)
{
	struct env *e = *state;
	struct done d[2] = { { 0 } };
	struct gap_ticker g = { 0 };

	env_open_prm(e);
	e->conf->retire.verify_timeout_ms = 2000; /* readings of 200 ms each must fit */
	make_slot(e, "slot-1", 0, 0);
	make_slot(e, "slot-2", 4 * MiB, 0);
	assert_int_equal(cgsim_set_op_delay(e->sim, CGSIM_OP_LIST, "/sys/fs/cgroup/memory", 200000), 0);
	ev_timer_init(&g.t, gap_cb, 0.01, 0.01);
	g.t.data = &g;
	ev_timer_start(e->loop, &g.t);
	start(e, "slot-1", RETIRE_REPARENT, &d[0]);
	start(e, "slot-2", RETIRE_REPARENT, &d[1]);
	assert_true(wait_done(e, &d[0], 1, 20.0));
	assert_true(wait_done(e, &d[1], 1, 20.0));
	ev_timer_stop(e->loop, &g.t);
	assert_int_equal(d[0].res.outcome, OUTCOME_RELEASED);
	assert_int_equal(d[1].res.outcome, e->prm->kernel == CGSIM_REPARENT ? OUTCOME_REPARENTED : OUTCOME_PINNED);
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-1")));
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-2")));
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_LIST, "/sys/fs/cgroup/memory"), 0);
	if (g.max_gap_us >= 100000)
		fail_msg("loop gap %lld us", (long long)g.max_gap_us);
	assert_true(d[0].res.total_ms < 150);
}

/* Many retirements at once (a reload that lowers max_slots): each slot is
 * removed once and all are freed, on workers (where removals wait for the
 * witness readings) as on the loop; on the loop first come is first removed
 * (on workers two threads may take two rmdirs in either order) */
static void test_many_in_order(void **state)
{
	enum { N = 60 };
	struct env *e = *state;
	struct done d[N] = { { 0 } };
	char names[N][16];

	env_open_prm(e);
	e->conf->retire.rate = 10000;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "slot-%d", i);
		make_slot(e, names[i], 0, 0);
	}
	for (int i = 0; i < N; i++)
		start(e, names[i], RETIRE_REPARENT, &d[i]);
	assert_true(wait_done(e, d, N, 20.0));
	assert_true(cgsim_calls(e->sim, CGSIM_OP_RMDIR, cgpath(e, names[0])) >= 1);
	for (int i = 0; i < N; i++) {
		assert_int_equal(d[i].calls, 1);
		assert_int_equal(d[i].res.outcome, OUTCOME_RELEASED);
		assert_false(cgsim_exists(e->sim, cgpath(e, names[i])));
		/* once: one rmdir in each hierarchy, as for the first */
		assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_RMDIR, cgpath(e, names[i])),
				 cgsim_calls(e->sim, CGSIM_OP_RMDIR, cgpath(e, names[0])));
		if (!e->use_work && i > 0 && cgsim_call_first(e->sim, CGSIM_OP_RMDIR, cgpath(e, names[i])) <
				     cgsim_call_first(e->sim, CGSIM_OP_RMDIR, cgpath(e, names[i - 1])))
			fail_msg("%s removed before %s", names[i], names[i - 1]);
	}
}

/* a drain whose reclaim says EAGAIN twice before it works, then an rmdir
 * busy twice: the same steps, retries and verdict on workers as on the loop */
static void test_drain_faults(void **state)
{
	struct env *e = *state;
	struct retire_result res;

	env_open_prm(e);
	make_slot(e, "slot-1", 4 * MiB, 0);
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_WRITE, v1(e) ? "/memory.force_empty" : "/memory.reclaim",
				    -EAGAIN, 2), 0);
	assert_int_equal(cgsim_fail(e->sim, CGSIM_OP_RMDIR, "*/slot-1/run", -EBUSY, 2), 0);
	res = retire1(e, "slot-1", RETIRE_DRAIN);
	expect_res("EAGAIN x2, EBUSY x2", &res, &(struct expect){ OUTCOME_DRAINED, 0, 4 * MiB, true });
	assert_int_equal(reclaims(e, "slot-1"), 3);
	assert_true(res.total_ms >= 200); /* 2 rmdir retries 100 ms apart */
	assert_false(cgsim_exists(e->sim, cgpath(e, "slot-1")));
}

/* (workers only) retire_free while rmdirs are in flight: two running (waited for), two
 * queued behind them (dropped: those slots stay); no verdict comes, and
 * nothing is touched afterwards (ASan) */
static void test_free_in_flight(void **state)
{
	struct env *e = *state;
	struct done d[4] = { { 0 } };
	char names[4][16];
	int64_t end;

	env_open_prm(e);
	for (int i = 0; i < 4; i++) {
		snprintf(names[i], sizeof(names[i]), "slot-%d", i);
		make_slot(e, names[i], 0, 0);
		assert_int_equal(cgsim_set_delay(e->sim, cgpath(e, names[i]), 200000), 0);
		start(e, names[i], RETIRE_REPARENT, &d[i]);
	}
	end = now_mono_us() + 5000000;
	while (cgsim_calls(e->sim, CGSIM_OP_RMDIR, "*/slot-*/run") < 2 && now_mono_us() < end)
		pump(e, 0.005);
	env_retire_free(e);
	simclock_start(NULL, NULL); /* the work pool goes: nothing real under way */
	work_free(e->work);
	e->work = NULL;
	pump(e, 0.3);
	for (int i = 0; i < 4; i++)
		assert_int_equal(d[i].calls, 0);
	assert_int_equal(cgsim_calls(e->sim, CGSIM_OP_RMDIR, "*/slot-*/run"), 2);
	assert_false(cgsim_exists(e->sim, cgpath(e, names[0])));
	assert_false(cgsim_exists(e->sim, cgpath(e, names[1])));
	assert_true(cgsim_exists(e->sim, cgpath(e, names[2])));
	assert_true(cgsim_exists(e->sim, cgpath(e, names[3])));
}

/* The lifecycle table: the ways through it, and what it refuses */
static void test_phase_table(void **state)
{
	static const struct {
		enum phase from;
		enum rt_event ev;
		enum phase to;
	} paths[] = {
		{ PH_QUEUED, RT_EV_DIRTY, PH_FLUSH },	  { PH_QUEUED, RT_EV_DRAIN, PH_DRAIN },
		{ PH_QUEUED, RT_EV_REMOVE, PH_RMDIR },	  { PH_QUEUED, RT_EV_REMOVED, PH_VERIFY }, /* resumed */
		{ PH_FLUSH, RT_EV_DRAIN, PH_DRAIN },	  { PH_FLUSH, RT_EV_REMOVE, PH_RMDIR },
		{ PH_DRAIN, RT_EV_REMOVE, PH_RMDIR },	  { PH_DRAIN, RT_EV_CANCEL, PH_CANCELLED },
		{ PH_RMDIR, RT_EV_REMOVED, PH_VERIFY },
	};
	unsigned legal = 0;
	enum phase next;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(retire_next_phase(paths[i].from, paths[i].ev, &next), 0);
		assert_int_equal(next, paths[i].to);
	}
	for (enum phase ph = PH_QUEUED; ph < PH_N; ph++)
		for (enum rt_event ev = RT_EV_DIRTY; ev < RT_NEVENTS; ev++)
			legal += retire_next_phase(ph, ev, &next) == 0;
	assert_int_equal(legal, sizeof(paths) / sizeof(paths[0])); /* nothing else */
	/* verify and cancelled are the ends: only the outcome or the write's
	 * return takes a retirement out of them; a removal under way cannot be
	 * called off; nothing goes back */
	for (enum rt_event ev = RT_EV_DIRTY; ev < RT_NEVENTS; ev++) {
		assert_int_equal(retire_next_phase(PH_VERIFY, ev, &next), -EINVAL);
		assert_int_equal(retire_next_phase(PH_CANCELLED, ev, &next), -EINVAL);
	}
	assert_int_equal(retire_next_phase(PH_RMDIR, RT_EV_CANCEL, &next), -EINVAL);
	assert_int_equal(retire_next_phase(PH_DRAIN, RT_EV_DIRTY, &next), -EINVAL);
	assert_int_equal(retire_next_phase(PH_N, RT_EV_DIRTY, &next), -EINVAL);
	assert_string_equal(retire_phase_name(PH_VERIFY), "verify");
	assert_string_equal(retire_event_name(RT_EV_REMOVED), "removed");
}

/* retire_step: the one writer of the phase keeps it on an event the table
 * refuses, and says so */
static void test_step_refused(void **state)
{
	struct retirement rt = { 0 };
	struct capture cap;

	(void)state;
	snprintf(rt.res.name, sizeof(rt.res.name), "slot-9");
	rt.phase = PH_VERIFY;
	capture_begin(&cap);
	assert_int_equal(retire_step(&rt, RT_EV_REMOVE), -EINVAL);
	capture_end(&cap);
	assert_int_equal(rt.phase, PH_VERIFY);
	assert_non_null(strstr(cap.text, "retire slot-9: event remove in phase verify: no such transition"));
	rt.phase = PH_QUEUED;
	assert_int_equal(retire_step(&rt, RT_EV_DIRTY), 0);
	assert_int_equal(rt.phase, PH_FLUSH);
	assert_int_equal(retire_step(&rt, RT_EV_REMOVE), 0);
	assert_int_equal(rt.phase, PH_RMDIR);
}

int main(void)
{
	static const struct param v2_rep = { CGSIM_V2, CGSIM_REPARENT, 0, 0, false },
				  v2_pin = { CGSIM_V2, CGSIM_PIN, 0, 0, false },
				  hy_rep = { CGSIM_HYBRID, CGSIM_REPARENT, 0, 0, false },
				  hy_pin = { CGSIM_HYBRID, CGSIM_PIN, 0, 0, false };
#define T(fn, prm) { #fn " " #prm, fn, setup, teardown, (void *)&prm }, \
		   { #fn " " #prm " on workers", fn, setup_work, teardown, (void *)&prm }
	static const struct param lag4 = { CGSIM_V2, CGSIM_PIN, 4, 0, false },
				  subsys_late = { CGSIM_V2, CGSIM_PIN, 3, 3, false },
				  debian61 = { CGSIM_V2, CGSIM_PIN, 3, 0, true },
				  debian510 = { CGSIM_V2, CGSIM_PIN, 3, 0, true, true };
	const struct CMUnitTest tests[] = {
		T(test_modes_outcomes, v2_rep), T(test_modes_outcomes, v2_pin), T(test_modes_outcomes, hy_rep),
		T(test_modes_outcomes, hy_pin), T(test_modes_outcomes, debian510), T(test_drain_timeout, debian510),
		T(test_ebusy_then_ok, v2_rep), T(test_ebusy_forever, v2_pin),
		T(test_reclaim_eagain, v2_rep), T(test_reclaim_eagain, v2_pin),
		T(test_reclaim_eio, v2_rep), T(test_reclaim_eio, v2_pin),
		T(test_witness_unreadable, v2_rep), T(test_witness_unreadable, hy_rep),
		T(test_slow_writes, v2_pin), T(test_drain_timeout, v2_pin), T(test_drain_parallel, v2_pin),
		T(test_several, v2_rep), T(test_several, v2_pin), T(test_several, hy_rep), T(test_several, hy_pin),
		T(test_lag, lag4), T(test_lag, subsys_late), T(test_lag, debian61),
		T(test_baseline_settles, v2_pin), T(test_start_from_verdict, v2_rep),
		T(test_baseline_after_pinned_freed, v2_pin), T(test_baseline_after_pinned_freed, hy_pin),
		T(test_rate, v2_rep),
		T(test_flush_dirty, v2_rep), T(test_flush_dirty, v2_pin), T(test_flush_dirty, hy_pin),
		T(test_wb_cleanup, v2_rep), T(test_wb_cleanup, hy_rep),
		T(test_probe, v2_rep), T(test_probe, hy_rep), T(test_probe, v2_pin),
		T(test_probe_uncharged, v2_rep),
		T(test_slow_rmdir_loop_runs, v2_pin), T(test_slow_rmdir_loop_runs, hy_rep),
		T(test_slow_witness_loop_runs, hy_rep), T(test_slow_witness_loop_runs, hy_pin),
		T(test_many_in_order, v2_pin), T(test_many_in_order, hy_rep),
		T(test_drain_faults, v2_rep), T(test_drain_faults, hy_pin),
		{ "test_free_in_flight v2_rep on workers", test_free_in_flight, setup_work, teardown, (void *)&v2_rep },
		cmocka_unit_test(test_phase_table), cmocka_unit_test(test_step_refused),
	};
#undef T

	log_set_level(LOG_WARNING);
	simclock_start(NULL, NULL);
	return cmocka_run_group_tests_name("retirement on the simulated cgroupfs", tests, NULL, NULL);
}
