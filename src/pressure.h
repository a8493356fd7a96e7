/* pressure.h - memory pressure on the pool root, from a PSI trigger */
#ifndef CGPOOL_PRESSURE_H
#define CGPOOL_PRESSURE_H

#include <ev.h>

/* stall of at least 150 ms of some task within any 1 s window */
#define PRESSURE_TRIGGER "some 150000 1000000"

struct pressure;
typedef void (*pressure_fn)(void *ud);

/* Put trigger on the pressure file path (memory.pressure or
 * /proc/pressure/memory) and call fn from the loop, at most once a second,
 * while the threshold is crossed. -EOPNOTSUPP without PSI. */
int pressure_new(struct ev_loop *loop, const char *path, const char *trigger, pressure_fn fn, void *ud,
		 struct pressure **out);
void pressure_free(struct pressure *p);

#endif
