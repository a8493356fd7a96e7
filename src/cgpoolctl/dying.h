/* dying.h - cgpoolctl dying: the census (cg_census.h) as text */
#ifndef CGPOOLCTL_DYING_H
#define CGPOOLCTL_DYING_H

#include <jansson.h>

/* What the daemon at socket adds to the census, as its "daemon" object:
 * runs placed and slot cgroups made over the node's history (what cgpool
 * saved) and the history of the census totals with the change since its
 * first sample; "daemon": null and "daemon_error" when it does not answer
 * within DYING_DAEMON_TIMEOUT_MS. */
#define DYING_DAEMON_TIMEOUT_MS 2000
void dying_daemon(const char *socket, json_t *census);

/* the census as text, fit for 80 columns */
void dying_print(json_t *census);

#endif
