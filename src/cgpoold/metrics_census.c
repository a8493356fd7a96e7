/* metrics_census.c - the machine's dying-memcg census, taken on a worker
 * thread, and the history of its totals */
#include "config.h"

#include "metrics_census.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_census.h"
#include "log.h"
#include "util.h"
#include "work.h"

#define MAX_AGE_US 1000000 /* older than this: taken again for the next report */
#define HISTORY_MAX_BYTES (64 * 1024)
#define MIN_SPAN_S 60 /* a rate over less than this says nothing */

struct sample {
	int64_t t;      /* seconds since the epoch */
	uint64_t total; /* the machine's dying memcgs */
};

struct census_cache {
	struct ev_loop *loop;
	struct work *work;
	char *path; /* the history file; NULL: none */
	ev_timer timer;
	json_t *last;	 /* the last census; NULL before the first */
	int64_t last_us; /* when it was taken (monotonic) */
	int64_t last_t;  /* and in seconds since the epoch */
	bool taking;
	json_t *next; /* written by the worker while taking */
	struct sample *hist; /* a ring of CENSUS_SAMPLES, oldest at head */
	size_t head, n;
};

static struct sample *hist_at(struct census_cache *c, size_t i)
{
	return &c->hist[(c->head + i) % CENSUS_SAMPLES];
}

static void hist_push(struct census_cache *c, int64_t t, uint64_t total)
{
	if (c->n == CENSUS_SAMPLES) {
		c->head = (c->head + 1) % CENSUS_SAMPLES;
		c->n--;
	}
	*hist_at(c, c->n) = (struct sample){ t, total };
	c->n++;
}

/* ---- the history file: {"version":1, "samples":[[T, TOTAL], ...]} */

static void hist_save(struct census_cache *c)
{
	json_t *arr = json_array(), *top;
	char *text;
	int r = -ENOMEM;

	for (size_t i = 0; arr && i < c->n; i++)
		json_array_append_new(arr, json_pack("[I, I]", (json_int_t)hist_at(c, i)->t,
						     (json_int_t)hist_at(c, i)->total));
	top = json_pack("{s:i, s:o*}", "version", 1, "samples", arr);
	text = top ? json_dumps(top, JSON_COMPACT) : NULL;
	if (text)
		r = file_replace(c->path, text, strlen(text), 0644);
	if (r < 0)
		log_warn("census history: write %s: %s", c->path, strerror(-r));
	free(text);
	json_decref(top);
}

/* samples in time order, each [T, TOTAL] with T and TOTAL >= 0; a bad one
 * ends the reading (what came before it stays) */
static void hist_load(struct census_cache *c)
{
	char *buf = malloc(HISTORY_MAX_BYTES);
	json_t *top = NULL, *s;
	json_int_t t, total, prev = -1;
	ssize_t len;
	size_t i;

	if (!buf)
		return;
	len = file_read(c->path, buf, HISTORY_MAX_BYTES);
	if (len >= 0)
		top = json_loadb(buf, (size_t)len, 0, NULL);
	free(buf);
	if (len < 0) {
		if (len != -ENOENT)
			log_warn("census history: read %s: %s; it starts again", c->path, strerror((int)-len));
		return;
	}
	json_array_foreach(json_object_get(top, "samples"), i, s) {
		if (json_unpack(s, "[II]", &t, &total) < 0 || t < 0 || total < 0 || t < prev) {
			log_warn("census history: %s: sample %zu is not [time, total] in time order; the rest is ignored",
				 c->path, i);
			break;
		}
		hist_push(c, t, (uint64_t)total);
		prev = t;
	}
	if (!top || !json_is_array(json_object_get(top, "samples")))
		log_warn("census history: %s is not a census history; it starts again", c->path);
	json_decref(top);
}

/* ---- taking the census */

static int take_fn(void *arg)
{
	struct census_cache *c = arg;

	return cg_census(CENSUS_SUBTREES, &c->next) < 0 && !c->next ? -ENOMEM : 0;
}

/* a census with a total joins the history when the last sample is
 * CENSUS_STEP_S old (or the clock went back: then it starts the history
 * again rather than break its order) */
static void took(struct census_cache *c, json_t *census)
{
	json_t *total = json_object_get(census, "total");
	int64_t t = now_real_us() / 1000000;

	json_decref(c->last);
	c->last = census;
	c->last_us = now_mono_us();
	c->last_t = t;
	if (!json_is_integer(total))
		return;
	if (c->n && t < hist_at(c, c->n - 1)->t)
		c->n = c->head = 0;
	if (c->n && t - hist_at(c, c->n - 1)->t < CENSUS_STEP_S)
		return;
	hist_push(c, t, (uint64_t)json_integer_value(total));
	if (c->path)
		hist_save(c);
}

static void take_done(int r, void *arg)
{
	struct census_cache *c = arg;
	json_t *census = c->next;

	c->taking = false;
	c->next = NULL;
	if (r == 0 && census)
		took(c, census);
}

/* on a worker; on this thread without one, or for the first census (at
 * start, so that the first report has it) */
static void take(struct census_cache *c)
{
	if (c->taking)
		return;
	c->next = NULL;
	if (c->work && c->last) {
		if (work_submit(c->work, take_fn, take_done, c) == 0)
			c->taking = true;
		return;
	}
	if (take_fn(c) == 0)
		took(c, c->next);
	c->next = NULL;
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	take(w->data);
}

int census_cache_new(struct ev_loop *loop, struct work *w, const char *state_dir, struct census_cache **out)
{
	struct census_cache *c = calloc(1, sizeof(*c));

	if (!c || !(c->hist = calloc(CENSUS_SAMPLES, sizeof(*c->hist))) ||
	    (state_dir && asprintf(&c->path, "%s/%s", state_dir, CENSUS_FILE) < 0)) {
		if (c)
			free(c->hist);
		free(c);
		return -ENOMEM;
	}
	c->loop = loop;
	c->work = w;
	if (c->path)
		hist_load(c);
	if (loop) {
		ev_timer_init(&c->timer, timer_cb, CENSUS_PERIOD_S, CENSUS_PERIOD_S);
		c->timer.data = c;
		ev_timer_start(loop, &c->timer);
		ev_unref(loop); /* the timer alone does not keep the loop running */
	}
	take(c);
	*out = c;
	return 0;
}

void census_cache_free(struct census_cache *c)
{
	if (!c)
		return;
	if (c->taking)
		work_cancel(c->work, take_done, NULL, NULL);
	if (c->loop) {
		ev_ref(c->loop);
		ev_timer_stop(c->loop, &c->timer);
	}
	json_decref(c->next);
	json_decref(c->last);
	free(c->hist);
	free(c->path);
	free(c);
}

json_t *census_cache_get(struct census_cache *c, double *age_s)
{
	int64_t now = now_mono_us();

	if (!c->last || !c->work || now - c->last_us > MAX_AGE_US)
		take(c);
	if (age_s)
		*age_s = c->last ? (now_mono_us() - c->last_us) / 1e6 : 0;
	return c->last;
}

/* ---- the history as JSON */

/* per hour from sample s to the last census; null under MIN_SPAN_S */
static json_t *rate_from(struct census_cache *c, const struct sample *s, uint64_t now_total)
{
	int64_t dt = c->last_t - s->t;

	if (dt < MIN_SPAN_S)
		return json_null();
	return json_real(((double)now_total - (double)s->total) * 3600.0 / (double)dt);
}

/* from the newest sample at least `window` seconds older than the last
 * census; null when the history does not reach that far back */
static json_t *rate(struct census_cache *c, int64_t window, uint64_t now_total)
{
	for (size_t i = c->n; i-- > 0;)
		if (c->last_t - hist_at(c, i)->t >= window)
			return rate_from(c, hist_at(c, i), now_total);
	return json_null();
}

json_t *census_cache_history(struct census_cache *c)
{
	json_t *total = c->last ? json_object_get(c->last, "total") : NULL;
	uint64_t now_total;

	if (!c->n || !json_is_integer(total))
		return json_pack("{s:n, s:I, s:n, s:{s:n, s:n, s:n}}", "first", "samples", (json_int_t)c->n,
				 "span_seconds", "growth_per_hour", "last_hour", "last_day", "all");
	now_total = (uint64_t)json_integer_value(total);
	return json_pack("{s:{s:I, s:I}, s:I, s:I, s:{s:o, s:o, s:o}}", "first", "time", (json_int_t)hist_at(c, 0)->t,
			 "total", (json_int_t)hist_at(c, 0)->total, "samples", (json_int_t)c->n, "span_seconds",
			 (json_int_t)(c->last_t - hist_at(c, 0)->t), "growth_per_hour", "last_hour",
			 rate(c, 3600, now_total), "last_day", rate(c, 86400, now_total), "all",
			 rate_from(c, hist_at(c, 0), now_total));
}
