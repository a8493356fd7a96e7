/* state.h - what must survive a daemon restart, in <state_dir>/state.json */
#ifndef CGPOOL_STATE_H
#define CGPOOL_STATE_H

#include <stddef.h>

struct slot;

/* Write every slot's key, class, state, run count and recent runs atomically. */
int state_save(const char *dir, const char *root, unsigned next_id, const struct slot *const *slots, size_t n);
/* Read them back as detached struct slot copies (free each and the array).
 * -ENOENT: no state file. -EINVAL: unreadable, another version, or written
 * for another pool root. */
int state_load(const char *dir, const char *root, unsigned *next_id, struct slot ***out, size_t *n);

#endif
