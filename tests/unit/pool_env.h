/* pool_env.h - the slot pool on the simulated cgroupfs with a real libev
 * loop, for the unit tests of the pool (test_pool.c, test_lost.c): each test
 * gets a fresh sim, conf and state dir (setup/teardown as cmocka fixtures,
 * the layout from the struct param given as state). */
#ifndef CGPOOL_TEST_POOL_ENV_H
#define CGPOOL_TEST_POOL_ENV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgsim.h"
#include "pool.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024)
#define NO_SUCH_PID ((pid_t)0x7ffffff0) /* above any pid_max */

struct param {
	enum cgsim_layout layout;
	bool watch; /* inotify on cgroup.events; else the pool polls */
};

struct env {
	struct param prm;
	struct cgsim *sim;
	struct cg *cg;
	struct conf *conf;
	struct pool *pool;
	struct retire *retire;   /* env_retire: verified retirement */
	struct ev_loop *loop;
	char state_dir[256]; /* in $TMPDIR (/tmp when unset) */
	char err[512];
	char root[PATH_MAX];     /* the pool root, cgroup path */
	char mem_root[PATH_MAX]; /* its directory in the memory hierarchy */
	char seen[64];           /* what a cgsim_on_write hook saw */
	unsigned ctrls;          /* env_start's controllers (CG_CTRL_*); 0: memory and pids */
};


int setup(void **state);
void env_stop(struct env *e);
int teardown(void **state);
void env_start(struct env *e);
/* remove the state dir's snapshot and journals */
void rm_state(struct env *e);
/* the retirement engine for the pool, as the daemon sets it after the pool */
void env_retire(struct env *e);
void pump(struct env *e, double sec);
struct slot *pump_until(struct env *e, const char *key, enum slot_state st, double timeout);
bool pump_until_gone(struct env *e, const char *key, double timeout);
pid_t spawn(struct env *e, const char *where);
struct slot *attach1(struct env *e, const char *key, pid_t pid);
const char *cgpath(struct env *e, const char *name);
const char *slot_file(struct env *e, const char *name, const char *file);
const char *slot_file_in(struct env *e, const char *mount, const char *name, const char *file);
bool hybrid(const struct env *e);
const char *mem_max(struct env *e, const char *name);
const char *mem_unlimited(const struct env *e);
const char *pids_max(struct env *e, const char *name);
struct slot *slot_named(struct env *e, const char *name);
unsigned count(struct env *e, enum slot_state st);
struct slot *run_and_idle(struct env *e, const char *key, uint64_t file, uint64_t anon);
extern const struct param p_v2;
extern const struct param p_hybrid;
extern const struct param p_v2_poll;
extern const struct param p_v1_poll;

#define BOTH(fn)                                                                                                    \
	{ #fn " v2", fn, setup, teardown, (void *)&p_v2 }, { #fn " hybrid", fn, setup, teardown, (void *)&p_hybrid }


#endif
