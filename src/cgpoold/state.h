/* state.h - what must survive a daemon restart: a snapshot and journals in
 * <state_dir> (the layout and the crash argument are in state.c) */
#ifndef CGPOOL_STATE_H
#define CGPOOL_STATE_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct slot;
struct state;

/* Create dir (0755) if needed and remove temporary files a dead compaction
 * left; nothing is read yet. The loop runs compactions in the background
 * (only the default loop can: with any other loop, or NULL, they run in the
 * calling process). root is the pool root the state belongs to. */
/* What survives a restart decides which process goes where: as root, the
 * directory (when it exists) must be owned by root and not writable by group
 * or others. 0, or -ENOTDIR, -EPERM (logged, with the commands that fix it). */
int state_dir_check(const char *dir);
int state_open(struct ev_loop *loop, const char *dir, const char *root, struct state **out);
/* NULL ok; waits for a running compaction and reaps it */
void state_close(struct state *st);

/* The snapshot, then every journal it does not cover, as detached struct
 * slot copies (free each and the array), sorted by slot id. -ENOENT: no state
 * at all. -EINVAL: the snapshot is unreadable or not ours, or state written
 * for another pool root. A bad slot entry or journal record is dropped alone,
 * with a warning; a torn last journal line (the daemon died mid-write) is
 * ignored. */
int state_load(struct state *st, unsigned *next_id, struct slot ***out, size_t *n);

/* Append one record with the slot's current content (or its removal) to the
 * journal: one write(2) of one line. The record is in the file (and survives
 * the daemon) when this returns 0. */
int state_put(struct state *st, const struct slot *s, unsigned next_id);
int state_drop(struct state *st, const char *name, unsigned next_id);

/* The node's totals over the daemon's history (what cgpool saved): written
 * with every record and snapshot from now on, so that a crash loses none
 * that a record covers; state_load sets them from the state it read (0 for
 * state written before they were kept). */
struct state_totals {
	uint64_t runs_placed;   /* runs started in slots */
	uint64_t slot_cgroups;  /* slot cgroups made */
};
void state_set_totals(struct state *st, const struct state_totals *t);
void state_get_totals(const struct state *st, struct state_totals *out);

/* Write a snapshot of exactly these slots and start a new journal. now:
 * in this process, before returning (at start-up); else in a child process
 * the loop reaps, the slots as they are at this call: -EBUSY while one runs.
 * A failed compaction loses nothing: the journals stay. */
int state_compact(struct state *st, const struct slot *const *slots, size_t n, unsigned next_id, bool now);
/* the journals have grown enough that a compaction pays off, and none runs */
bool state_compact_due(const struct state *st, size_t nslots);


#endif
