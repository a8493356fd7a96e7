/* sd_notify.h - telling the service manager how the daemon is (sd_notify(3)).
 *
 * READY=1 once the pool is usable, with a STATUS= line that is kept current
 * (sent from the loop when its text changes, at most once a second),
 * WATCHDOG=1 from a timer of the loop every WATCHDOG_USEC/2 (a loop that is
 * stuck sends nothing), RELOADING=1 with MONOTONIC_USEC= at the start of a
 * reload and READY=1 at its end, STOPPING=1. Without NOTIFY_SOCKET nothing
 * is sent and no watcher runs. */
#ifndef CGPOOL_SD_NOTIFY_H
#define CGPOOL_SD_NOTIFY_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>

#include "retire.h"
#include "slot.h"

#define NOTIFY_STATUS_INTERVAL 1.0 /* seconds between two STATUS= lines at least */

struct notify;
struct pool;

/* pool and retire (NULL: no verdict) must outlive n */
int notify_new(struct ev_loop *loop, struct pool *pool, struct retire *retire, struct notify **out);
void notify_free(struct notify *n);
/* READY=1 and the STATUS= line; also the end of a reload */
void notify_ready(struct notify *n);
/* RELOADING=1 and MONOTONIC_USEC= (CLOCK_MONOTONIC now) */
void notify_reloading(struct notify *n);
void notify_stopping(struct notify *n);

/* The STATUS= text: "5 slots: 1 warm, 2 running, 2 idle, 0 retiring;
 * lru_reparenting yes" (verdict yes, no, unknown, or probing while the probe
 * runs without a verdict yet). Returns its length, or -ENOSPC. */
int notify_status_text(const unsigned counts[SLOT_NSTATES], enum lru_reparenting lru, bool probing, char *buf,
		       size_t len);

#endif
