/* cg_census.h - census of the machine's dying memory cgroups, read from the
 * kernel's files (no daemon needed): cgpoolctl dying and the daemon's node
 * metrics. Plain C and jansson only, so that cgpoolctl compiles it too. */
#ifndef CGPOOL_CG_CENSUS_H
#define CGPOOL_CG_CENSUS_H

#include <jansson.h>

#define CG_CENSUS_TOP_DEFAULT 10
#define CG_CENSUS_TOP_MAX 1000
#define CG_MEMCG_ID_MAX 65535ULL /* the 16-bit memcg ID space (MEM_CGROUP_ID_MAX) */

/* Take the census; *out (always set on return, NULL only without memory) is
 * the JSON object documented in cgpoolctl(1). Returns 0 when its total is
 * exact, -errno when the total could not be read or is only a bound (the
 * object's "unreadable" array says what could not be read). */
int cg_census(int top, json_t **out);

#endif
