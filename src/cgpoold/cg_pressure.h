/* cg_pressure.h - memory pressure on the pool root, from a PSI trigger */
#ifndef CGPOOL_CG_PRESSURE_H
#define CGPOOL_CG_PRESSURE_H

#include <ev.h>

/* stalls of some task adding up to 300 ms within a 2 s window (windows under
 * 2 s are refused to callers without CAP_SYS_RESOURCE) */
#define PRESSURE_TRIGGER "some 300000 2000000"

struct pressure;
typedef void (*pressure_fn)(void *ud);

/* Put trigger on the pressure file path (memory.pressure or
 * /proc/pressure/memory) and call fn from the loop, at most once a second,
 * while the threshold is crossed. -EOPNOTSUPP without PSI. */
int pressure_new(struct ev_loop *loop, const char *path, const char *trigger, pressure_fn fn, void *ud,
		 struct pressure **out);
void pressure_free(struct pressure *p);

#endif
