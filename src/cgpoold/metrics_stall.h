/* metrics_stall.h - a histogram of event loop iterations (how long the loop ran
 * callbacks between two waits), with Prometheus bucket bounds */
#ifndef CGPOOL_METRICS_STALL_H
#define CGPOOL_METRICS_STALL_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#define STALL_NBOUNDS 10 /* finite upper bounds; the last bucket is +Inf */

/* upper bounds in seconds: 0.001 0.002 0.005 0.01 0.02 0.05 0.1 0.2 0.5 1 */
extern const double stall_bounds[STALL_NBOUNDS];

struct stall_hist {
	uint64_t bucket[STALL_NBOUNDS + 1]; /* per bucket, not cumulative: v <= bound[i] and > bound[i-1] */
	uint64_t count;
	double sum; /* seconds */
	double max; /* seconds */
};

void stall_hist_add(struct stall_hist *h, double seconds);

/* How long the loop runs callbacks between two waits: an ev_check when it
 * wakes, an ev_prepare before it waits again. max_ms is the longest such
 * stretch; hist counts the iterations that had work pending when it woke. */
struct stall_watch {
	ev_prepare prepare; /* the loop is about to wait */
	ev_check check;     /* the loop woke up */
	int64_t woke_us;
	bool woke_for_work; /* callbacks were pending when the loop woke */
	double max_ms;
	struct stall_hist hist;
};
void stall_watch_start(struct ev_loop *loop, struct stall_watch *w);
void stall_watch_stop(struct ev_loop *loop, struct stall_watch *w);
/* The upper bound of the bucket holding the q-quantile (0 < q <= 1), so a
 * value the quantile does not exceed, or the largest value seen when that is
 * smaller (always in the +Inf bucket). 0 when empty. */
double stall_hist_quantile(const struct stall_hist *h, double q);
static inline double stall_hist_p99(const struct stall_hist *h)
{
	return stall_hist_quantile(h, 0.99);
}

#endif
