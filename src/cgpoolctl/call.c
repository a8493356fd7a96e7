/* call.c - one call to the daemon's io.cgpool.Manager, its reply parsed */
#include "config.h"

#include "call.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int call_json(struct cgpool *c, const char *method, const char *params, json_t **reply)
{
	char name[128], *text = NULL;
	json_t *j = NULL;
	int r;

	snprintf(name, sizeof(name), "%s.%s", CGPOOL_INTERFACE, method);
	r = cgpool_call(c, name, params, &text);
	if (r == 0 && !(j = json_loads(text, 0, NULL)))
		r = -EBADMSG;
	free(text);
	if (r == 0)
		*reply = j;
	return r;
}
