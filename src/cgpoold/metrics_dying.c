/* metrics_dying.c - the dying-memcg count for reports, read on a worker thread */
#include "config.h"

#include "metrics_dying.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util.h"
#include "work.h"

#define MAX_AGE_US 1000000 /* older than this: refreshed for the next report */

struct dying_cache {
	struct cg *cg;
	struct work *work;
	struct cg_dying last;
	int64_t last_us;  /* 0: no reading yet */
	bool refreshing;
	struct cg_dying next; /* written by the worker while refreshing */
};

int dying_cache_new(struct cg *cg, struct work *w, struct dying_cache **out)
{
	struct dying_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->cg = cg;
	c->work = w;
	*out = c;
	return 0;
}

/* any thread: cg_dying reads only files and what cg_open set */
static int refresh_fn(void *arg)
{
	struct dying_cache *c = arg;

	return cg_dying(c->cg, &c->next);
}

static void refresh_done(int r, void *arg)
{
	struct dying_cache *c = arg;

	c->refreshing = false;
	if (r < 0)
		return; /* the last reading stays, and ages */
	c->last = c->next;
	c->last_us = now_mono_us();
}

void dying_cache_free(struct dying_cache *c)
{
	if (!c)
		return;
	if (c->refreshing)
		work_cancel(c->work, refresh_done, NULL, NULL);
	free(c);
}

int dying_cache_get(struct dying_cache *c, struct cg_dying *out, double *age_s)
{
	int64_t now = now_mono_us();
	int r;

	if (!c->last_us || !c->work) {
		r = cg_dying(c->cg, &c->last);
		if (r < 0)
			return r;
		c->last_us = now;
	} else if (now - c->last_us > MAX_AGE_US && !c->refreshing &&
		   work_submit(c->work, refresh_fn, refresh_done, c) == 0) {
		c->refreshing = true;
	}
	*out = c->last;
	if (age_s)
		*age_s = (now - c->last_us) / 1e6;
	return 0;
}
