/* unit tests: the daemon's census of dying memcgs (metrics_census.c): the
 * history read back from census.json (a bad file or a sample out of order),
 * a sample each CENSUS_STEP_S and not more often, the growth rates against
 * the samples, the history file rewritten when a sample joins. The census
 * itself is the machine's (cg_census reads this machine's files); time is
 * simulated (simclock.h), so ten minutes pass at once. */
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
#include <time.h>
#include <unistd.h>

#include "metrics_census.h"
#include "simclock.h"
#include "util.h"

struct env {
	char dir[PATH_MAX];
	char path[PATH_MAX + 32];
	struct ev_loop *loop;
	struct census_cache *c;
	int64_t t0; /* seconds since the epoch at the start */
};

static void write_history(struct env *e, const char *text)
{
	FILE *f = fopen(e->path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	const char *t = getenv("TMPDIR");

	assert_non_null(e);
	assert_true(snprintf(e->dir, sizeof(e->dir), "%s/cgpool-test-census.XXXXXX", t && *t ? t : "/tmp") <
		    (int)sizeof(e->dir));
	assert_non_null(mkdtemp(e->dir));
	snprintf(e->path, sizeof(e->path), "%s/%s", e->dir, CENSUS_FILE);
	e->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(e->loop);
	simclock_start(NULL, NULL);
	e->t0 = now_real_us() / 1000000;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	census_cache_free(e->c);
	ev_loop_destroy(e->loop);
	unlink(e->path);
	rmdir(e->dir);
	free(e);
	return 0;
}

/* the census's total now, or skip: no memory controller here */
static long long total_now(struct env *e)
{
	json_t *c = census_cache_get(e->c, NULL);

	if (!c || !json_is_integer(json_object_get(c, "total")))
		skip();
	return (long long)json_integer_value(json_object_get(c, "total"));
}

static long long hist_int(json_t *h, const char *a, const char *b)
{
	json_t *v = json_object_get(h, a);

	if (b)
		v = json_object_get(v, b);
	assert_true(json_is_integer(v));
	return (long long)json_integer_value(v);
}

static void stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* the loop for that long (the census's own timer does not keep it running) */
static void run_for(struct env *e, int seconds)
{
	ev_timer stop;

	ev_timer_init(&stop, stop_cb, seconds, 0);
	ev_timer_start(e->loop, &stop);
	ev_run(e->loop, 0);
	ev_timer_stop(e->loop, &stop);
}

/* a history two hours long: its first sample stays first, the rates are
 * taken from the samples at least an hour (a day: none) before the last
 * census */
static void test_history_read(void **state)
{
	struct env *e = *state;
	char text[256];
	json_t *h, *g;
	long long total;

	snprintf(text, sizeof(text), "{\"version\":1,\"samples\":[[%lld,100],[%lld,130],[%lld,150]]}",
		 (long long)e->t0 - 7200, (long long)e->t0 - 3600, (long long)e->t0 - 1800);
	write_history(e, text);
	assert_int_equal(census_cache_new(e->loop, NULL, e->dir, &e->c), 0);
	total = total_now(e);
	h = census_cache_history(e->c);
	assert_int_equal(hist_int(h, "first", "time"), e->t0 - 7200);
	assert_int_equal(hist_int(h, "first", "total"), 100);
	assert_int_equal(hist_int(h, "samples", NULL), 4); /* the census now joined: 30 min since the last */
	assert_int_equal(hist_int(h, "span_seconds", NULL), 7200);
	g = json_object_get(h, "growth_per_hour");
	assert_float_equal(json_real_value(json_object_get(g, "last_hour")), (double)(total - 130), 1e-6);
	assert_float_equal(json_real_value(json_object_get(g, "all")), (double)(total - 100) / 2, 1e-6);
	assert_true(json_is_null(json_object_get(g, "last_day")));
	json_decref(h);
}

/* a sample each CENSUS_STEP_S: none at the 30 s censuses between, and the
 * file holds every sample */
static void test_history_step(void **state)
{
	struct env *e = *state;
	json_t *h, *file;

	assert_int_equal(census_cache_new(e->loop, NULL, e->dir, &e->c), 0);
	total_now(e);
	h = census_cache_history(e->c);
	assert_int_equal(hist_int(h, "samples", NULL), 1);
	assert_int_equal(hist_int(h, "first", "time"), e->t0);
	assert_true(json_is_null(json_object_get(json_object_get(h, "growth_per_hour"), "all"))); /* 0 s */
	json_decref(h);
	run_for(e, CENSUS_STEP_S - CENSUS_PERIOD_S);
	h = census_cache_history(e->c);
	assert_int_equal(hist_int(h, "samples", NULL), 1);
	json_decref(h);
	run_for(e, CENSUS_PERIOD_S + 1);
	h = census_cache_history(e->c);
	assert_int_equal(hist_int(h, "samples", NULL), 2);
	assert_true(json_is_real(json_object_get(json_object_get(h, "growth_per_hour"), "all")));
	json_decref(h);
	file = json_load_file(e->path, 0, NULL);
	assert_non_null(file);
	assert_int_equal(json_array_size(json_object_get(file, "samples")), 2);
	json_decref(file);
}

/* not a history: it starts again; a sample out of order ends the reading */
static void test_history_bad(void **state)
{
	struct env *e = *state;
	char text[256];
	json_t *h;

	write_history(e, "not json");
	assert_int_equal(census_cache_new(e->loop, NULL, e->dir, &e->c), 0);
	total_now(e);
	h = census_cache_history(e->c);
	assert_int_equal(hist_int(h, "samples", NULL), 1);
	assert_int_equal(hist_int(h, "first", "time"), e->t0);
	json_decref(h);
	census_cache_free(e->c);
	e->c = NULL;

	snprintf(text, sizeof(text), "{\"version\":1,\"samples\":[[%lld,5],[%lld,6],[%lld,7]]}",
		 (long long)e->t0 - 3000, (long long)e->t0 - 5000, (long long)e->t0 - 1000);
	write_history(e, text);
	assert_int_equal(census_cache_new(e->loop, NULL, e->dir, &e->c), 0);
	total_now(e);
	h = census_cache_history(e->c);
	assert_int_equal(hist_int(h, "first", "time"), e->t0 - 3000);
	assert_int_equal(hist_int(h, "samples", NULL), 2); /* the first, and the census now */
	json_decref(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_history_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_step, setup, teardown),
		cmocka_unit_test_setup_teardown(test_history_bad, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
