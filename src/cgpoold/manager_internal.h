/* manager_internal.h - what the files of the Manager interface share
 * (manager.c: the interface and most methods; manager_attach.c: Attach) */
#ifndef CGPOOL_MANAGER_INTERNAL_H
#define CGPOOL_MANAGER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "manager.h"

#define IFACE "io.cgpool.Manager"
#define ERR(name) IFACE "." name

struct attach_wait;

struct manager {
	struct pool *pool;
	const struct conf *const *conf;
	struct manager_hooks hooks;
	struct ev_loop *loop;
	uint64_t attaches;
	uint64_t refusals;
	uint64_t waited;             /* Attaches that waited for a job's leftovers to die */
	struct attach_wait *waiting; /* ... and those waiting now */
};

/* ---- manager.c: replies and parameters every method uses */
void manager_reply_error(struct manager *m, struct vl_call *call, const char *error, json_t *params);
void manager_invalid_parameter(struct manager *m, struct vl_call *call, const char *name);
/* Attach's and Limit's limits: {name: value} with value a string or a
 * number of bytes, each a resource key this hierarchy can apply, into out
 * (CONF_MAX_RES), *n of them. false when the call was answered. */
bool manager_param_limits(struct manager *m, struct vl_call *call, json_t *params, struct conf_res *out, size_t *n);
void manager_not_supported(struct manager *m, struct vl_call *call, const char *reason);
void manager_permission_denied(struct manager *m, struct vl_call *call, const char *reason);
void manager_reply_slot(struct manager *m, struct vl_call *call, const struct slot *s);
/* root and members of socket_group may do everything (judged at accept) */
bool manager_privileged(struct manager *m, struct vl_call *call);
/* the call's "key", validated; NULL when the call was answered */
const char *manager_param_key(struct manager *m, struct vl_call *call, json_t *params);

/* ---- manager_attach.c */
void manager_attach(struct vl_call *call, json_t *params, void *ud);
/* the Attaches still waiting are answered (the daemon stops) */
void manager_attach_fini(struct manager *m);

#endif
