/* metrics.h - the Prometheus text exposition of the daemon's counters */
#ifndef CGPOOL_METRICS_H
#define CGPOOL_METRICS_H

#include <stdint.h>

#include "pool.h"
#include "retire.h"
#include "metrics_stall.h"
#include "metrics_dying.h"
#include "metrics_census.h"
#include "work.h"

struct metrics_in {
	struct pool *pool;
	struct retire *retire; /* may be NULL */
	uint64_t attaches;
	uint64_t refusals;
	double max_stall_ms;
	const struct stall_hist *stall; /* may be NULL */
	struct work *work;              /* may be NULL */
	struct dying_cache *dying;      /* may be NULL: read now */
	struct census_cache *census;    /* the machine's census; may be NULL: no node metrics */
	uint64_t attach_waits;          /* Attaches that waited for a job's leftovers to be killed */
};

/* newly allocated text, or NULL on ENOMEM */
char *metrics_text(const struct metrics_in *in);

#endif
