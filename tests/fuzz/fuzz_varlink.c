/* fuzz_varlink.c - the Varlink request decoder on arbitrary bytes */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vl_request req;
	const char *why = NULL;

	if (vl_request_decode((const char *)data, size, &req, &why) == 0) {
		if (!req.params || strlen(req.method) >= sizeof(req.method))
			abort();
		json_decref(req.params);
	} else if (!why) {
		abort(); /* every refusal says why */
	}
	return 0;
}
