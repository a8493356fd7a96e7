/* dying.h - cgpoolctl dying: the census (cg_census.h) as text */
#ifndef CGPOOLCTL_DYING_H
#define CGPOOLCTL_DYING_H

#include <jansson.h>

/* the census as text, fit for 80 columns */
void dying_print(json_t *census);

#endif
