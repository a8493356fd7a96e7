/* manager.h - the io.cgpool.Manager Varlink interface: requests to the pool */
#ifndef CGPOOL_MANAGER_H
#define CGPOOL_MANAGER_H

#include <jansson.h>

#include "conf.h"
#include "pool.h"
#include "varlink.h"

struct manager;
struct probe;
struct retire;

struct manager_hooks {
	/* reload the configuration: 0, or -EINVAL with the errors appended to
	 * the array (one "FILE:LINE: message" string each) */
	int (*reload)(void *ud, json_t *errors);
	void *ud;
	struct retire *retire;     /* retirement engine */
	struct probe *probe;       /* the LRU reparenting probe; may be NULL */
	const double *max_stall_ms; /* longest loop iteration seen */
	const struct stall_hist *stall; /* loop iterations that ran callbacks; may be NULL */
	struct work *work;              /* worker threads for kernel writes; may be NULL */
	struct dying_cache *dying;      /* the dying-memcg count for reports; may be NULL */
	struct census_cache *census;    /* the machine's census of dying memcgs; may be NULL */
	struct jobs *jobs;              /* supervised jobs (Run, Stop, Restart); may be NULL */
};

/* Register the interface and its methods on srv. *conf is read on every call
 * (a reload replaces it). */
int manager_new(struct vl_server *srv, struct pool *pool, const struct conf *const *conf,
		const struct manager_hooks *hooks, struct manager **out);
/* Before the server's vl_server_free: an Attach still waiting is answered. */
void manager_free(struct manager *m);

/* The Slot object of the interface (also used by tests). */
json_t *manager_slot_json(struct pool *pool, const struct slot *s);

#endif
