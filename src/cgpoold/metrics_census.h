/* metrics_census.h - the machine's dying-memcg census (cg_census) for the
 * node metrics and Status.
 *
 * The census is taken on a worker thread at start, every CENSUS_PERIOD_S
 * seconds, and for a report that finds the last one older than a second
 * (that report gets the last one; the next, the fresh one). Its totals make
 * a history: a sample at start and then one each CENSUS_STEP_S, the last
 * CENSUS_SAMPLES of them (a week), kept in <state_dir>/census.json so that a
 * restart keeps the growth rate. */
#ifndef CGPOOL_METRICS_CENSUS_H
#define CGPOOL_METRICS_CENSUS_H

#include <ev.h>
#include <jansson.h>

#define CENSUS_PERIOD_S 30
#define CENSUS_STEP_S 600
#define CENSUS_SAMPLES 1008
#define CENSUS_SUBTREES 8 /* subtrees named in the metrics; the rest are "other" */
#define CENSUS_FILE "census.json"

struct census_cache;
struct work;

/* w NULL: every get takes the census on the calling thread; state_dir NULL:
 * no history file */
int census_cache_new(struct ev_loop *loop, struct work *w, const char *state_dir, struct census_cache **out);
void census_cache_free(struct census_cache *c); /* NULL ok; cancels a census in flight */
/* The last census (cg_census's object, borrowed until the next call; NULL
 * before the first has been taken) and its age in seconds. */
json_t *census_cache_get(struct census_cache *c, double *age_s);
/* The history: {"first": {"time", "total"}, "samples": N, "span_seconds",
 * "growth_per_hour": {"last_hour", "last_day", "all"}}, times in seconds
 * since the epoch, a rate null where the history is too short for it. */
json_t *census_cache_history(struct census_cache *c);

#endif
