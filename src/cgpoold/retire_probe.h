/* retire_probe.h - does the running kernel reparent LRU pages when a memory cgroup
 * is removed? Found by experiment: a probe cgroup charged with page cache is
 * removed and watched, never guessed from the version string. */
#ifndef CGPOOL_RETIRE_PROBE_H
#define CGPOOL_RETIRE_PROBE_H

#include <ev.h>
#include <stdbool.h>

#include "cg.h"
#include "conf.h"

#define PROBE_MEDIUM_MAX 4200 /* "file:" and a path */

struct probe;
struct retire;

/* The probe tells the retirement engine r its verdict; its cgroups are in a
 * place of its own below the pool root (retire_probe.c). conf (its
 * retire.probe_dir) and r must outlive p. */
int probe_new(struct ev_loop *loop, struct cg *cg, struct retire *r, const struct conf *const *conf,
	      struct probe **out);
void probe_free(struct probe *p);
/* Start the experiment; the verdict goes to retire_set_lru_reparenting().
 * -EALREADY while one runs. */
int probe_start(struct probe *p);
bool probe_running(const struct probe *p);
/* What the last probe put its pages in: "file:<probe_dir>" (an unlinked file
 * there) or "memfd" (shmem pages, when probe_dir could not take a file); ""
 * before the first probe started. */
const char *probe_medium(const struct probe *p);

#endif
