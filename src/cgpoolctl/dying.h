/* dying.h - census of the machine's dying memory cgroups, read from the
 * kernel's files (no daemon needed). */
#ifndef CGPOOLCTL_DYING_H
#define CGPOOLCTL_DYING_H

#include <jansson.h>

#define DYING_TOP_DEFAULT 10
#define DYING_TOP_MAX 1000

/* Take the census; *out (always set on return, NULL only without memory) is
 * the JSON object documented in cgpoolctl(1). Returns 0 when its total is
 * exact, -errno when the total could not be read or is only a bound (the
 * object's "unreadable" array says what could not be read). */
int dying_census(int top, json_t **out);

/* the census as text, fit for 80 columns */
void dying_print(json_t *census);

#endif
