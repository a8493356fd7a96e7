/* retire_internal.h - what retire.c (admission, flush, drain, removal) and
 * retire_verify.c (the witness, verdicts, writeback clean-up) share */
#ifndef CGPOOL_RETIRE_INTERNAL_H
#define CGPOOL_RETIRE_INTERNAL_H

#include "retire.h"

#define DRAIN_STEP (64ULL << 20)  /* bytes asked of memory.reclaim per step */
#define DRAIN_PARALLEL 2          /* slots draining at once: one reclaim write each per loop pass */
#define DRAIN_EAGAIN_MAX 3        /* reclaim steps that free nothing before giving up */
#define RMDIR_RETRIES 50          /* EBUSY retries, RMDIR_RETRY_S apart */
#define RMDIR_RETRY_S 0.1
#define VERIFY_FIRST_S 0.02       /* first look at the witness after rmdir */
#define VERIFY_MAX_S 1.0          /* backoff ceiling */
#define VERIFY_GAP_S 0.1          /* readings for removals that keep coming: at most one per */
#define SETTLE_S 0.05             /* witness readings this far apart must agree ... */
#define SETTLE_READS_MAX 20       /* ... before a baseline is taken, within this many */
#define WITNESS_WAIT_S 0.01       /* a witness reading in flight: a removal or a look waits this long */
#define REQUEUE_S 0.01            /* the work queue was full: try the write again this much later */
#define FLUSH_POLL_S 0.05         /* a flushing slot's dirty and writeback counters read this often */
#define WB_CLEANUP_AFTER_S 1.0    /* a removed group still dying this long (or a quarter of its
				   * verify_timeout, if less): writeback clean-up (v2) */
#define WB_CLEANUP_GAP_S 5.0      /* at most one writeback clean-up this often */

/* A retirement's lifecycle (the table in retire.c, shown in doc/design.md).
 * queued: waits for its turn (the rate, a drain place, the probe's verdict
 * in mode auto); flush: its dirty and writeback pages written out; drain:
 * its LRU reclaimed a bounded step at a time (mode drain); rmdir: being
 * removed, or waiting to be (the witness, an EBUSY retry); verify: removed,
 * watched until the kernel frees it or verify_timeout passes; cancelled:
 * called off while a write of it runs, freed when the write returns. From
 * every phase a retirement leaves the engine with its outcome
 * (retire_finish), or when it is called off without a write under way. */
enum phase { PH_QUEUED, PH_FLUSH, PH_DRAIN, PH_RMDIR, PH_VERIFY, PH_CANCELLED, PH_N };

enum rt_event {
	RT_EV_DIRTY,   /* admitted with dirty or writeback pages */
	RT_EV_DRAIN,   /* admitted clean, or flushed, in mode drain */
	RT_EV_REMOVE,  /* admitted clean, or flushed, in mode reparent; or drained */
	RT_EV_REMOVED, /* its rmdir returned (or the last daemon's did: resumed) */
	RT_EV_CANCEL,  /* called off while a reclaim write of it runs */
	RT_NEVENTS,
};

/* A kernel write handed to the work pool. The worker reads only cg, name,
 * bytes and rmdir, and writes result times; the retirement is the loop's. */
struct wreq {
	struct retirement *rt;
	struct cg *cg;
	char name[32];
	uint64_t bytes; /* reclaim */
	bool rmdir;
	int64_t us;     /* how long the write took */
	int64_t end_us; /* when it returned */
};

struct retirement {
	struct retire *r;
	struct retirement *next;
	struct retire_result res;
	enum retire_mode requested;
	enum phase phase;
	bool drained_any;
	bool wb_cleaned;       /* a writeback clean-up ran for it (at most one) */
	uint64_t verify_timeout_ms;
	int64_t start_us, rmdir_us, deadline_us;
	unsigned eagain, tries, settle_reads;
	bool has_local;        /* v1: parent_local is the root's local LRU before rmdir */
	uint64_t parent_local;
	uint64_t settle_last;
	bool own;              /* judged by its own witness (the slot's directory, cg_slot_witness),
				* not by the shared count */
	uint64_t dir_own;      /* own: what was charged to the directory itself before the rmdir
				* (an older cgpoold's slot held its pages there) */
	bool counted;          /* verifying when the last witness reading began: that reading judges it */
	bool gated;            /* its rmdir waits for a witness reading or for the witness to hold
				* still: no retirement queued after it removes before it */
	uint64_t drain_lru;    /* LRU bytes before the reclaim step in flight */
	uint64_t dirty0;       /* dirty and writeback bytes when the flush began */
	struct wreq *write;    /* a write in flight on a worker: in its phase still, no second one */
	retire_done_fn done;
	void *ud;
	ev_timer timer;
};

struct retire {
	struct ev_loop *loop;
	struct cg *cg;
	const struct conf *const *conf;
	struct retirement *all; /* every retirement, in arrival order */
	struct retirement *last; /* the newest of them */
	double tokens;
	int64_t tokens_us;
	ev_timer rate_timer;
	uint64_t base;      /* witness count with none of ours dying */
	uint64_t settled;   /* witness when the last verification round ended */
	bool settled_valid;
	ev_timer verify_timer;
	int64_t read_us;    /* the last verification reading */
	double backoff;
	bool verifying; /* verify_cb is attributing a reading: kick waits for it */
	enum lru_reparenting lru;
	char lru_why[1200];
	bool probing;       /* an LRU probe runs (retire_probe.c says so) */
	struct work *work;  /* NULL: kernel writes run on the loop */
	unsigned writes;    /* in flight on the work pool */
	unsigned rmdirs;    /* of which rmdirs */
	uint64_t rmdir_starts; /* rmdirs begun so far: none may begin under a witness reading */
	struct witness_read *wit; /* a witness reading in flight on the work pool */
	bool verify_due;    /* a verification reading waits for the rmdirs in flight; none begins */
	ev_timer gate_timer; /* while retirements are gated: one pass over them (not a timer per retirement) */
	bool waking;        /* that pass runs */
	uint64_t gate_pass, regated; /* passes so far; the pass in which a retirement was last gated */
	bool syncing;       /* a sync(2) in flight on the work pool, for every flushing slot */
	bool wb_cleaning;   /* a writeback clean-up in flight on the work pool */
	int64_t wb_clean_us; /* when the last one began */
	struct retire_stats stats;
};

/* retire.c */
unsigned retire_count_phase(const struct retire *r, enum phase ph);
/* The table: the phase an event leads to from ph; -EINVAL when the event
 * makes no sense there. */
int retire_next_phase(enum phase ph, enum rt_event ev, enum phase *next);
/* The only writer of rt->phase: one step of the table. -EINVAL (logged, the
 * phase kept) for an event the table does not take in rt's phase. */
int retire_step(struct retirement *rt, enum rt_event ev);
const char *retire_phase_name(enum phase ph);
const char *retire_event_name(enum rt_event ev);
/* the verdict: the result to its caller, the retirement freed, the queue kicked */
void retire_finish(struct retirement *rt, enum retire_outcome o);
/* start what the rate limit, the probe and the drain places allow */
void retire_kick(struct retire *r);

/* retire_verify.c */
/* the LRU bytes (file + anon) a slot holds, 0 when unreadable; its
 * memory.current in *current (may be NULL), from the same reading,
 * UINT64_MAX when unreadable */
uint64_t retire_lru_of(struct retire *r, const char *name, uint64_t *current);
/* removed at rmdir_us (when the rmdir returned): verified from now on */
void retire_verify_add(struct retirement *rt, int64_t rmdir_us);
/* r->verify_timer's callback: one reading of the witness, and the verdicts it allows */
void retire_verify_cb(struct ev_loop *loop, ev_timer *w, int revents);
/* A reading of the witness on the work pool, for retirement's baseline (the result
 * goes to retire_baseline_read) or, retirement NULL, for the verification. On v1
 * it walks every memory cgroup of the machine, so not on the loop. 0, or
 * -errno when it could not start (then read it here). While it runs, no
 * rmdir begins (do_rmdir waits) and no other reading starts. */
int retire_witness_submit(struct retire *r, struct retirement *rt);
/* retirement's baseline reading is in; clean: no rmdir was in flight or began
 * while it ran */
void retire_baseline_read(struct retirement *rt, int e, const struct cg_dying *d, bool clean);
/* a baseline reading for retirement is in flight */
bool retire_witness_for(const struct retire *r, const struct retirement *rt);
/* retirement goes away: a reading for it goes on, its result to nobody */
void retire_witness_forget(struct retire *r, const struct retirement *rt);
/* retire_free: a reading queued is dropped, one running waited for */
void retire_witness_cancel(struct retire *r);
/* the gate may have opened (a reading done): the gated retirements go on, in order */
void retire_wake_gated(struct retire *r);
/* the work pool's done callback of a writeback clean-up */
void retire_wb_cleanup_done(int e, void *arg);

#endif
