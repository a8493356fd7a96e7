/* metrics_dying.h - the dying-memcg count that status and metrics report.
 *
 * On v1 reading it walks the whole memory hierarchy (cg_dying), which at
 * thousands of slots takes tens of milliseconds: reports take the last
 * reading, and a reading older than a second is refreshed on a worker
 * thread for the next report. Retirement reads the witness itself, fresh. */
#ifndef CGPOOL_METRICS_DYING_H
#define CGPOOL_METRICS_DYING_H

#include "cg.h"

struct dying_cache;
struct work;

/* w NULL: every get reads on the calling thread */
int dying_cache_new(struct cg *cg, struct work *w, struct dying_cache **out);
void dying_cache_free(struct dying_cache *c); /* NULL ok; cancels a refresh in flight */
/* The last reading and its age in seconds; the first one is read now. */
int dying_cache_get(struct dying_cache *c, struct cg_dying *out, double *age_s);

#endif
