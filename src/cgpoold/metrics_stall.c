/* metrics_stall.c - a histogram of event loop iterations (see metrics_stall.h) */
#include "config.h"

#include "metrics_stall.h"

#include "util.h"

const double stall_bounds[STALL_NBOUNDS] = { 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1 };

void stall_hist_add(struct stall_hist *h, double seconds)
{
	unsigned i = 0;

	if (!(seconds >= 0)) /* NaN too */
		seconds = 0;
	while (i < STALL_NBOUNDS && seconds > stall_bounds[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum += seconds;
	if (seconds > h->max)
		h->max = seconds;
}

double stall_hist_quantile(const struct stall_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (h->count == 0)
		return 0;
	if (q > 1)
		q = 1;
	rank = (uint64_t)(q * (double)h->count); /* the rank-th smallest value, rounded up */
	if ((double)rank < q * (double)h->count || rank == 0)
		rank++;
	for (unsigned i = 0; i < STALL_NBOUNDS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			return stall_bounds[i] < h->max ? stall_bounds[i] : h->max;
	}
	return h->max;
}

static void on_check(struct ev_loop *loop, ev_check *c, int revents)
{
	struct stall_watch *w = c->data;

	w->woke_us = now_mono_us();
	/* check watchers run first: anything still pending is the work */
	w->woke_for_work = ev_pending_count(loop) > 0;
}

static void on_prepare(struct ev_loop *loop, ev_prepare *p, int revents)
{
	struct stall_watch *w = p->data;
	double ms;

	if (!w->woke_us)
		return;
	ms = (now_mono_us() - w->woke_us) / 1000.0;
	if (ms > w->max_ms)
		w->max_ms = ms;
	if (w->woke_for_work)
		stall_hist_add(&w->hist, ms / 1000);
}

void stall_watch_start(struct ev_loop *loop, struct stall_watch *w)
{
	ev_prepare_init(&w->prepare, on_prepare);
	w->prepare.data = w;
	ev_prepare_start(loop, &w->prepare);
	ev_check_init(&w->check, on_check);
	w->check.data = w;
	ev_check_start(loop, &w->check);
}

void stall_watch_stop(struct ev_loop *loop, struct stall_watch *w)
{
	ev_prepare_stop(loop, &w->prepare);
	ev_check_stop(loop, &w->check);
}
