/* retire.h - removing slots the way the running kernel needs, and proving it.
 *
 * A retirement goes: queued (at most conf.retire.rate removals a second) ->
 * flushing (the slot's dirty and writeback pages written back: sync(2) on a
 * worker, until the slot's counters say none are left or drain_timeout) ->
 * draining (mode drain: reclaim in bounded steps until the slot holds no LRU
 * pages or drain_timeout) -> rmdir (EBUSY retried, bounded) -> verifying (the
 * dying-memcg witnesses of cg_dying() polled with backoff until the group is
 * freed or verify_timeout) -> an outcome. The LRU-reparenting probe
 * (retire_probe.c) runs its own experiment in a place of its own and hands
 * its verdict here. With a work pool (retire_set_work) the kernel writes
 * that can block (rmdir, each reclaim step) run on a worker thread; the
 * retirement stays in its phase meanwhile, and the result comes back on the
 * loop to the same state machine. Everything else runs on the loop. */
#ifndef CGPOOL_RETIRE_H
#define CGPOOL_RETIRE_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "cg.h"
#include "conf.h"
#include "util.h"

enum retire_outcome {
	OUTCOME_RELEASED,   /* freed without its pages going to the parent: it held none at
			     * removal, or they were reclaimed after it */
	OUTCOME_REPARENTED, /* held LRU pages, not reclaimed, freed anyway */
	OUTCOME_DRAINED,    /* reclaimed first, then freed */
	OUTCOME_PINNED,     /* still dying at verify_timeout */
	OUTCOME_FAILED,     /* could not be removed (rmdir kept failing) */
	OUTCOME_CANCELLED,  /* called off before removal (the key was attached again) */
	OUTCOME_N,
};

enum lru_reparenting { LRU_UNKNOWN, LRU_YES, LRU_NO };

struct retire_result {
	char name[32];           /* slot directory */
	char key[KEY_MAX + 1];   /* "" for a warm slot */
	enum retire_mode mode;   /* as carried out: never auto */
	enum retire_outcome outcome;
	uint64_t lru_bytes;      /* LRU bytes charged when it was removed */
	uint64_t drained_bytes;  /* reclaimed before removal */
	uint64_t flushed_bytes;  /* dirty or under writeback at the start, written back before removal */
	int64_t elapsed_ms;      /* from rmdir to the verdict (whole retirement: total_ms) */
	int64_t total_ms;
	bool attributed;         /* the counters made the verdict unambiguous */
	char evidence[240];      /* what the verdict rests on: the witness as read, and why */
	int error;               /* OUTCOME_FAILED: -errno of the last rmdir */
};

typedef void (*retire_done_fn)(const struct retire_result *res, void *ud);

struct retire_stats {
	uint64_t outcomes[OUTCOME_N];
	uint64_t pinned_bytes;      /* LRU bytes held by slots found pinned */
	uint64_t in_flight;
	uint64_t resumed;           /* retirements a previous daemon left unfinished, taken up again */
	uint64_t dying;             /* last reading of the witness */
	double max_write_ms;        /* slowest single kernel write (reclaim, rmdir), timed where it ran */
};

struct retire;

struct work;

int retire_new(struct ev_loop *loop, struct cg *cg, const struct conf *const *conf, struct retire **out);
/* Writes still in flight on the work pool are cancelled (one running is
 * waited for): free retire before its work pool. */
void retire_free(struct retire *r);
/* Run the kernel writes that can block (the slot's rmdir, each reclaim step
 * of a drain) on the work pool w, NULL: on the loop thread (the default).
 * -EBUSY while writes are in flight. w must outlive r. */
int retire_set_work(struct retire *r, struct work *w);

/* Queue the removal of slot directory name (its processes are gone). mode
 * RETIRE_AUTO is resolved with the probe (waiting for it when it runs);
 * RETIRE_KEEP is refused with -EINVAL. done is called exactly once, later. */
int retire_start(struct retire *r, const char *name, const char *key, enum retire_mode mode, retire_done_fn done,
		 void *ud);

/* A retirement the previous daemon left unfinished (the daemon died): not yet
 * removed (removed false): queued again like retire_start; removed: only
 * verified, against the witness as it reads now, counting the group as still
 * dying (a group freed while no daemon ran is found freed only when the count
 * falls below that; else the verdict is pinned at verify_timeout, attributed
 * false). Counted in stats.resumed. */
int retire_resume(struct retire *r, const char *name, const char *key, enum retire_mode mode, bool removed,
		  retire_done_fn done, void *ud);
/* Call off the retirement of slot directory name while it is not being
 * removed (queued, draining, or waiting to retry its rmdir): its done gets
 * OUTCOME_CANCELLED before this returns. -EBUSY: the rmdir is under way or
 * done; -ENOENT: no such retirement. */
int retire_cancel(struct retire *r, const char *name);

/* The kernel's LRU reparenting as the probe (retire_probe.h) last found it, and
 * whether a probe is running: while it runs and the verdict is unknown,
 * retirements in auto mode wait for it. */
enum lru_reparenting retire_lru_reparenting(const struct retire *r, const char **why);
bool retire_probing(const struct retire *r);
const char *lru_reparenting_name(enum lru_reparenting v);

void retire_get_stats(const struct retire *r, struct retire_stats *out);
const char *retire_outcome_name(enum retire_outcome o);



/* ---- for retire_probe.c: that a probe runs (no kick: the verdict
 * follows); and the probe's verdict, which starts the auto retirements that
 * waited for it. */
void retire_set_probing(struct retire *r, bool probing);
void retire_set_lru_reparenting(struct retire *r, enum lru_reparenting v, const char *why);
#endif
