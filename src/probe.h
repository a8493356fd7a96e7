/* probe.h - does the running kernel reparent LRU pages when a memory cgroup
 * is removed? Found by experiment: a probe cgroup charged with page cache is
 * removed and watched, never guessed from the version string. */
#ifndef CGPOOL_PROBE_H
#define CGPOOL_PROBE_H

#include <ev.h>
#include <stdbool.h>

#include "cg.h"

struct probe;
struct retire;

int probe_new(struct ev_loop *loop, struct cg *cg, struct retire *r, struct probe **out);
void probe_free(struct probe *p);
/* Start the experiment; the verdict goes to retire_set_lru_reparenting().
 * -EALREADY while one runs. */
int probe_start(struct probe *p);
bool probe_running(const struct probe *p);

#endif
