/* call.h - one call to the daemon's io.cgpool.Manager, its reply parsed */
#ifndef CGPOOLCTL_CALL_H
#define CGPOOLCTL_CALL_H

#include <jansson.h>

#include "cgpool.h"

/* io.cgpool.Manager.<method> with params (a JSON object's text): 0 with
 * *reply (decref it), or -errno from cgpool_call (-EREMOTEIO: the daemon
 * refused, cgpool_last_error says why) or -EBADMSG for a reply that is not
 * JSON. */
int call_json(struct cgpool *c, const char *method, const char *params, json_t **reply);

#endif
