/* top.h - cgpoolctl top: a live view of the slots and of the machine's dying
 * memory cgroups, redrawn every few seconds */
#ifndef CGPOOLCTL_TOP_H
#define CGPOOLCTL_TOP_H

#include <stdbool.h>

#define TOP_DELAY_DEFAULT_MS 2000
#define TOP_DELAY_MIN_MS 100
#define TOP_DELAY_MAX_MS 3600000

struct top_opts {
	const char *socket; /* the daemon's socket, as resolved */
	bool json;	    /* one JSON object, then exit (implies once) */
	bool once;	    /* one frame as plain text, then exit */
	unsigned delay_ms;  /* between refreshes; 0: TOP_DELAY_DEFAULT_MS */
};

/* SECONDS as given to --delay: "2", "0.5" (at most 3 decimals), from
 * TOP_DELAY_MIN_MS to TOP_DELAY_MAX_MS. 0 with *ms, or -EINVAL. */
int top_parse_delay(const char *s, unsigned *ms);

/* Run the view until q (one frame when o->once or o->json, or when standard
 * output is not a terminal). Connects to the daemon itself and goes on
 * without it. Returns the exit status: 0, or 1 when the output failed. */
int top_run(const struct top_opts *o);

#endif
