/* stall.c - a histogram of event loop iterations (see stall.h) */
#include "config.h"

#include "stall.h"

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
