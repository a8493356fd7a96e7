/* pool_internal.h - what the files of the pool share (pool.c, pool_attach.c,
 * pool_list.c, pool_load.c, pool_nocg.c, pool_peak.c, pool_retire.c,
 * pool_tenant.c), by the file that defines it */
#ifndef CGPOOL_POOL_INTERNAL_H
#define CGPOOL_POOL_INTERNAL_H

#include "hmap.h"
#include "pool.h"

/* a list of slots through slot.lprev/lnext */
struct slot_list {
	struct slot *head, *tail;
};

struct pool {
	struct ev_loop *loop;
	struct cg *cg;
	const struct conf *conf;
	struct slot **slots; /* sorted by id */
	size_t nslots;
	size_t cap;
	struct hmap bykey;   /* key -> slot */
	unsigned counts[SLOT_NSTATES];
	struct slot_list warm; /* warm slots, lowest id first */
	struct slot_list idle; /* idle slots, least recently used first */
	unsigned next_id;
	ev_io watch_io;
	ev_timer poll_timer;
	ev_timer over_max_timer; /* more slots above max_slots to hand to retirement */
	bool poll_all;       /* some slot has no watch: poll every slot */
	bool loading;        /* restoring from the state file */
	struct retire *retire;
	struct work *work;
	struct slot *growing; /* warm slots being created on a worker (through lnext) */
	unsigned ngrowing;
	struct retire_result recent_ret[POOL_RECENT_RETIREMENTS]; /* ring */
	unsigned nrecent_ret;
	struct state *state;
	ev_timer nocg_timer;  /* the kernel had no cgroup IDs: the warm refill waits */
	double nocg_backoff;  /* 0: no such episode */
	uint64_t set_aside;   /* slots the scrub left charged, not recycled (since start) */
	unsigned nocg_refused; /* mkdirs refused in this episode */
	/* retirements the last daemon removed but did not verify: slot copies
	 * (state retiring, in no list or map) kept in every snapshot, their ids
	 * not given out, until verified again */
	struct slot **removed;
	size_t nremoved;
	char (*bare)[SLOT_NAME_MAX]; /* start-up: slot directories without a run, until restored */
	size_t nbare;
	/* the slot of the request being served: its transitions are recorded
	 * once, when the request is done (held_dirty: one is due) */
	const struct slot *held;
	bool held_dirty;
	/* the held slot's oom_kill counter read as its run ended: the next
	 * run of the same request starts from it (the slot was empty since) */
	uint64_t held_oom;
	bool held_oom_known;
	/* runs' peaks sampled from memory.current (pool_peak.c): v2 without a
	 * resettable memory.peak. The timer runs while some slot runs; the
	 * next tick starts at the first slot from peak_next on (an id). */
	bool peak_sample;
	ev_timer peak_timer;
	unsigned peak_next;
};

/* ---- pool.c: persistence. Persist one slot's content after a transition
 * (a journal record); for the held slot, when pool_hold_end is called */
void pool_save(struct pool *p, const struct slot *s);
/* the transitions of s within one request make one record (pool_hold_end
 * writes it, before the client hears of the request) */
void pool_hold(struct pool *p, const struct slot *s);
void pool_hold_end(struct pool *p);
/* a removed slot verified again: it leaves the state */
void pool_removed_done(struct pool *p, struct slot *ghost);
/* write every slot's content at once (a snapshot, at start-up) */
void pool_save_all(struct pool *p);
/* ---- pool.c: slot objects */
struct slot *pool_slot_alloc(struct pool *p, unsigned id);
/* the index in p->slots of the first slot with an id >= id (nslots: none) */
size_t pool_slot_index(const struct pool *p, unsigned id);
/* the slot's current (last) run, to write into; NULL before its first */
struct run *pool_cur_run(struct slot *s);
int pool_insert(struct pool *p, struct slot *s);
struct slot *pool_find_name(struct pool *p, const char *name);
/* the key a slot serves: "" unbinds it */
int pool_slot_set_key(struct slot *s, const char *key);
/* watch its population (or poll it where that is impossible) */
void pool_slot_watch(struct pool *p, struct slot *s);
void pool_idle_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ---- pool_load.c: start-up */
int pool_load(struct pool *p);
void pool_reconcile(struct pool *p);

/* ---- pool_list.c: the lists and counts */
void pool_list_insert(struct pool *p, struct slot *s);
void pool_list_remove(struct pool *p, struct slot *s);
void pool_lists_sort(struct pool *p); /* once, after start-up */
/* the one place a slot's state changes: counts and lists follow */
void pool_set_state(struct slot *s, enum slot_state next);
/* oldest idle slot, or NULL */
struct slot *pool_oldest_idle(struct pool *p);
struct slot *pool_take_warm(struct pool *p);

/* ---- pool.c: the dispatcher of the slot table (slot.h), warm growth,
 * idle timers. pool_slot_event feeds one event to a slot's state machine
 * and carries out the actions. An Attach does it in two: pool_slot_plan asks
 * the table (0, or slot_step's -EBUSY, -EINVAL), the caller runs what must
 * come before its processes move (the actions in done) and moves them;
 * pool_slot_commit then enters the next state, logs the transition, runs the
 * other actions and, with save, records the slot (may free s: retire). */
struct slot_tr {
	enum slot_event ev;
	enum slot_state prev, next;
	unsigned act;
};
int pool_slot_plan(struct slot *s, enum slot_event ev, struct slot_tr *t);
void pool_slot_commit(struct slot *s, const struct slot_tr *t, unsigned done, bool save);
void pool_slot_event(struct slot *s, enum slot_event ev);
void pool_drop(struct pool *p, struct slot *s);
void pool_fill_warm(struct pool *p);
unsigned pool_count_state(const struct pool *p, enum slot_state st);
void pool_idle_timer(struct slot *s, double after);
bool pool_slot_has_procs(struct slot *s);

/* ---- pool_retire.c: slots leaving the pool */
void pool_over_max_cb(struct ev_loop *loop, ev_timer *w, int revents);
/* an Attach of a retiring slot's key: 0 the retirement is called off, the
 * slot idle again; -EALREADY the key was unbound from it */
int pool_unretire(struct pool *p, struct slot *s);
/* hand a slot in state retiring to the retirement engine (may free s) */
void pool_act_retire(struct slot *s);
/* a legacy slot (slot.h) that is not running: retired */
void pool_retire_legacy(struct slot *s);

/* ---- pool_nocg.c: mkdir said ENOSPC (no memory cgroup IDs left) */
void pool_nocg_init(struct pool *p);
void pool_nocg_fini(struct pool *p);
/* an episode is under way */
bool pool_nocg(const struct pool *p);
/* the warm refill waits for its back-off */
bool pool_nocg_waiting(const struct pool *p);
/* slot name's mkdir said ENOSPC: logged once per episode, the refill backs off */
void pool_nocg_refused(struct pool *p, const char *name);
/* a mkdir worked: the episode (if any) ends */
void pool_nocg_ok(struct pool *p);

/* ---- pool_peak.c: a run's memory peak sampled where the kernel cannot
 * reset it (v2 before 6.12) */
void pool_peak_init(struct pool *p); /* before any run starts */
void pool_peak_fini(struct pool *p);
/* the timer started while some slot runs, else stopped */
void pool_peak_timer(struct pool *p);
/* where the pool samples: one read of memory.current into the open run's
 * memory_peak (the highest so far), which is marked peak_sampled */
void pool_peak_sample(struct slot *s, struct run *run);

/* ---- pool_tenant.c: the job a run belongs to, its holders */
/* 0: an Attach for job (NULL: none) may go into s now; -EADDRINUSE: the run is
 * another job's (or a job's and this Attach names none); -EINPROGRESS: the
 * key's last job ended and the processes it left are being killed (procs:
 * the slot holds processes; a running slot without is taken as ended) */
int pool_tenant_verdict(const struct slot *s, const char *job, bool procs);
/* after a successful Attach: the run is job's, hold (> 0) holds it; -ESRCH
 * the holder is gone */
int pool_tenant_bind(struct slot *s, const char *job, pid_t hold, bool release);
/* the slot's run ended: a job nothing holds any more is forgotten */
void pool_tenant_run_ended(struct slot *s);
/* The devices.deny the running run of job has, NULL when none is known
 * (another job, a new run, or a daemon restarted since). */
const char *pool_tenant_devices(const struct slot *s, const char *job);
/* Keep deny as the job's run's devices.deny (after pool_tenant_bind). */
/* Write each of n limits into s's run, in order (values[i] the value of
 * limits[i]): each value is saved before its write, and when the kernel
 * refuses one, what this call wrote is put back (the refusal logged). The
 * limits written join the run's own (run_limits). 0, or -errno with
 * *refused (may be NULL) the index of the one refused. Attach's limits and
 * Limit's (pool_attach.c). */
int pool_run_limits_write(struct slot *s, const struct conf_res *const *limits, const char *const *values, size_t n,
			  size_t *refused);
int pool_tenant_set_devices(struct slot *s, const char *deny);
void pool_tenant_move(struct slot *to, struct slot *from);
void pool_tenant_resume(struct slot *s);

/* pool.c, for pool_attach.c: the actions of the table and warm growth */
void pool_act_apply(struct slot *s);
/* the same with the slot's class already looked up (an Attach's plan) */
void pool_act_apply_class(struct slot *s, const struct conf_class *cls);
void pool_reset_limits(struct slot *s);
int pool_grow(struct pool *p, struct slot **out);

#endif
