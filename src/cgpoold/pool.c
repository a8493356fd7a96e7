/* pool.c - slots and keys: binding, runs, idle timers, recycling */
#include "config.h"

#include "pool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "log.h"
#include "pool_internal.h"
#include "res.h"
#include "state.h"
#include "work.h"

#define POLL_INTERVAL 1.0 /* s, population polling where no cgroup.events exists */

static void scrub_done(int r, void *arg);
static bool same_arg(void *arg, void *ud);

struct cg *pool_cg(const struct pool *p)
{
	return p->cg;
}

struct ev_loop *pool_loop(const struct pool *p)
{
	return p->loop;
}

uint64_t pool_set_aside_count(const struct pool *p)
{
	return p->set_aside;
}

struct run *pool_cur_run(struct slot *s)
{
	return (struct run *)slot_last_run(s);
}

struct slot *pool_find(struct pool *p, const char *key)
{
	return hmap_get(&p->bykey, HMAP_STR(key));
}

size_t pool_slot_index(const struct pool *p, unsigned id)
{
	size_t lo = 0, hi = p->nslots;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->slots[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct slot *pool_slot_from(struct pool *p, unsigned id)
{
	size_t i = pool_slot_index(p, id);

	return i < p->nslots ? p->slots[i] : NULL;
}

/* "slot-<n>" by its id */
struct slot *pool_find_name(struct pool *p, const char *name)
{
	unsigned id;
	struct slot *s;

	if (slot_name_id(name, &id) < 0)
		return NULL;
	s = pool_slot_from(p, id); /* the first slot from id on */
	return s && s->id == id ? s : NULL;
}

int pool_foreach(struct pool *p, int (*fn)(struct slot *s, void *ud), void *ud)
{
	for (size_t i = 0; i < p->nslots; i++) {
		int r = fn(p->slots[i], ud);
		if (r)
			return r;
	}
	return 0;
}

void pool_counts(const struct pool *p, unsigned counts[SLOT_NSTATES])
{
	memcpy(counts, p->counts, sizeof(p->counts));
}

/* A snapshot of every slot, and of the removed ones still to be verified
 * again (now: before returning). */
static int snapshot(struct pool *p, bool now)
{
	const struct slot **v;
	int r;

	if (p->nremoved == 0)
		return state_compact(p->state, (const struct slot *const *)p->slots, p->nslots, p->next_id, now);
	v = malloc((p->nslots + p->nremoved) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, p->slots, p->nslots * sizeof(*v));
	memcpy(v + p->nslots, p->removed, p->nremoved * sizeof(*v));
	r = state_compact(p->state, v, p->nslots + p->nremoved, p->next_id, now);
	free(v);
	return r;
}

/* every slot: a snapshot, written before returning (at start-up) */
void pool_save_all(struct pool *p)
{
	int r = snapshot(p, true);
	if (r < 0)
		log_err("state: cannot write a snapshot in %s: %s", p->conf->daemon.state_dir, strerror(-r));
}

void pool_removed_done(struct pool *p, struct slot *ghost)
{
	int r = state_drop(p->state, ghost->name, p->next_id);

	if (r < 0)
		log_err("state: cannot record the removal of slot %s in %s: %s", ghost->name,
			p->conf->daemon.state_dir, strerror(-r));
	for (size_t i = 0; i < p->nremoved; i++) {
		if (p->removed[i] == ghost) {
			p->removed[i] = p->removed[--p->nremoved];
			break;
		}
	}
	free(ghost);
}

/* one slot's transition: a journal record; a snapshot in the background when due */
void pool_save(struct pool *p, const struct slot *s)
{
	int r;

	if (s == p->held) {
		p->held_dirty = true;
		return;
	}
	r = state_put(p->state, s, p->next_id);

	if (r < 0)
		log_err("state: cannot record slot %s in %s: %s", s->name, p->conf->daemon.state_dir, strerror(-r));
	if (state_compact_due(p->state, p->nslots)) {
		r = snapshot(p, false);
		if (r < 0)
			log_err("state: cannot start a snapshot in %s: %s", p->conf->daemon.state_dir, strerror(-r));
	}
}

void pool_hold(struct pool *p, const struct slot *s)
{
	p->held = s;
	p->held_dirty = false;
	p->held_oom_known = false;
}

void pool_hold_end(struct pool *p)
{
	const struct slot *s = p->held;

	p->held = NULL;
	p->held_oom_known = false;
	if (s && p->held_dirty)
		pool_save(p, s);
	p->held_dirty = false;
}

/* the key a slot serves: "" unbinds it */
int pool_slot_set_key(struct slot *s, const char *key)
{
	struct pool *p = s->pool;

	if (s->key[0])
		hmap_del(&p->bykey, HMAP_STR(s->key));
	snprintf(s->key, sizeof(s->key), "%s", key);
	if (s->key[0] && hmap_put(&p->bykey, HMAP_STR(s->key), s) < 0) {
		s->key[0] = '\0';
		return -ENOMEM;
	}
	return 0;
}

/* ---- slot objects */

struct slot *pool_slot_alloc(struct pool *p, unsigned id)
{
	struct slot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->pool = p;
	s->id = id;
	snprintf(s->name, sizeof(s->name), SLOT_PREFIX "%u", id);
	s->state = SLOT_WARM;
	ev_timer_init(&s->idle_timer, pool_idle_timer_cb, 0., 0.);
	s->idle_timer.data = s;
	return s;
}

int pool_insert(struct pool *p, struct slot *s)
{
	size_t i;

	if (p->nslots == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct slot **n = realloc(p->slots, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		p->slots = n;
		p->cap = cap;
	}
	i = pool_slot_index(p, s->id);
	memmove(&p->slots[i + 1], &p->slots[i], (p->nslots - i) * sizeof(*p->slots));
	p->slots[i] = s;
	p->nslots++;
	if (s->id >= p->next_id)
		p->next_id = s->id + 1;
	p->counts[s->state]++;
	pool_list_insert(p, s);
	return 0;
}

void pool_drop(struct pool *p, struct slot *s)
{
	size_t i = pool_slot_index(p, s->id);
	int r;

	if (i == p->nslots || p->slots[i] != s)
		return;
	memmove(&p->slots[i], &p->slots[i + 1], (p->nslots - i - 1) * sizeof(*p->slots));
	p->nslots--;
	pool_list_remove(p, s);
	p->counts[s->state]--;
	pool_slot_set_key(s, "");
	if (s->busy)
		work_cancel(p->work, scrub_done, same_arg, s);
	r = state_drop(p->state, s->name, p->next_id);
	if (r < 0)
		log_err("state: cannot record the removal of slot %s in %s: %s", s->name, p->conf->daemon.state_dir,
			strerror(-r));
	ev_timer_stop(p->loop, &s->idle_timer);
	cg_slot_unwatch(p->cg, s->name);
	pool_tenant_free(s);
	free(s);
}

/* Watch a slot's population; where that is impossible (no cgroup2, or the
 * inotify watch limit reached) the poll timer reads it once a second. */
void pool_slot_watch(struct pool *p, struct slot *s)
{
	int r = cg_slot_watch(p->cg, s->name);

	if (r == 0 || r == -EOPNOTSUPP) /* EOPNOTSUPP: nothing to watch, the pool polls */
		return;
	if (!p->poll_all)
		log_warn("watch slot %s: %s; slots that cannot be watched are polled every %.0f s", s->name,
			 strerror(-r), POLL_INTERVAL);
	p->poll_all = true;
	ev_timer_start(p->loop, &p->poll_timer);
}

/* The node's totals (what cgpool saved): kept with the state, which writes
 * them with its next record. */
static void count_total(struct pool *p, bool run)
{
	struct state_totals t;

	if (!p->state)
		return;
	state_get_totals(p->state, &t);
	if (run)
		t.runs_placed++;
	else
		t.slot_cgroups++;
	state_set_totals(p->state, &t);
}

void pool_totals(const struct pool *p, struct state_totals *out)
{
	if (p->state)
		state_get_totals(p->state, out);
	else
		*out = (struct state_totals){ 0, 0 };
}

/* The new slot's directory was made (r from cg_slot_create): it joins the
 * pool, warm, or is given up. */
static int grow_finish(struct pool *p, struct slot *s, int r)
{
	if (r == 0)
		count_total(p, false);
	if (r == -EEXIST)
		r = 0;
	if (r == -ENOSPC) { /* the kernel's cgroup IDs, not our max_slots */
		pool_nocg_refused(p, s->name);
		free(s);
		return -ENFILE;
	}
	if (r == 0)
		pool_nocg_ok(p);
	if (r == 0)
		r = cg_slot_id(p->cg, s->name, &s->cgroup_id);
	if (r == 0 && (r = pool_insert(p, s)) < 0)
		cg_slot_remove(p->cg, s->name);
	if (r < 0) {
		log_err("create slot %s: %s", s->name, strerror(-r));
		free(s);
		return r;
	}
	pool_slot_watch(p, s);
	log_info("slot %s: created, warm", s->name);
	return 0;
}

/* a slot being made has it, or a removed one still to be verified again
 * (its record in the state is dropped by name) */
static bool id_reserved(const struct pool *p, unsigned id)
{
	for (const struct slot *g = p->growing; g; g = g->lnext)
		if (g->id == id)
			return true;
	for (size_t i = 0; i < p->nremoved; i++)
		if (p->removed[i]->id == id)
			return true;
	return false;
}

/* The lowest id no slot has (slots being retired keep theirs, and their
 * directories, until they leave the pool), nor one being made: freed ids
 * are used again, so they never run out (ids reserved as above are skipped). The ids of the slots are strictly
 * increasing, so slots[i]->id - i never decreases: the first gap is found
 * by bisection. */
static unsigned free_id(const struct pool *p)
{
	size_t lo = 0, hi = p->nslots;
	unsigned id;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->slots[mid]->id == mid)
			lo = mid + 1;
		else
			hi = mid;
	}
	id = (unsigned)lo;
	while (id_reserved(p, id))
		for (size_t i = pool_slot_index(p, ++id); i < p->nslots && p->slots[i]->id == id; i++)
			id++;
	return id;
}

/* Create a new warm slot directory now, on the loop (a new key found no
 * warm slot ready). */
int pool_grow(struct pool *p, struct slot **out)
{
	struct slot *s;
	int r;

	if (p->nslots + p->ngrowing >= p->conf->pool.max_slots)
		return -ENOSPC;
	s = pool_slot_alloc(p, free_id(p));
	if (!s)
		return -ENOMEM;
	r = grow_finish(p, s, cg_slot_create(p->cg, s->name));
	if (r == 0)
		*out = s;
	return r;
}

/* any thread */
static int grow_fn(void *arg)
{
	struct slot *s = arg;

	return cg_slot_create(s->pool->cg, s->name);
}

static void grow_done(int r, void *arg)
{
	struct slot *s = arg;
	struct pool *p = s->pool;

	for (struct slot **pp = &p->growing; *pp; pp = &(*pp)->lnext) {
		if (*pp == s) {
			*pp = s->lnext;
			break;
		}
	}
	s->lnext = NULL;
	p->ngrowing--;
	grow_finish(p, s, r); /* a failure is logged; the next fill tries again */
}

unsigned pool_count_state(const struct pool *p, enum slot_state st)
{
	return p->counts[st];
}

/* Keep conf.pool.warm slots ready for new keys: made on the workers when
 * there are some, the loop goes on meanwhile. */
void pool_fill_warm(struct pool *p)
{
	unsigned warm = p->conf->pool.warm, max = p->conf->pool.max_slots;
	struct slot *s;

	if (pool_nocg_waiting(p))
		return;
	/* a released key's slot before a new one: no mkdir while one is there */
	while (p->counts[SLOT_WARM] + p->ngrowing < warm && (s = pool_oldest_idle(p)) && s->released &&
	       p->conf->pool.recycle && !pool_slot_has_procs(s))
		pool_slot_event(s, SLOT_EV_RECYCLE);
	while (p->counts[SLOT_WARM] + p->ngrowing < warm && p->nslots + p->ngrowing < max) {
		if (pool_nocg(p) && p->ngrowing)
			break; /* one trial mkdir at a time */
		if (!p->work) {
			if (pool_grow(p, &s) < 0)
				break;
			continue;
		}
		s = pool_slot_alloc(p, free_id(p)); /* its id is taken while it is being made */
		if (!s || work_submit(p->work, grow_fn, grow_done, s) < 0) {
			free(s);
			break;
		}
		if (s->id >= p->next_id)
			p->next_id = s->id + 1;
		s->lnext = p->growing;
		p->growing = s;
		p->ngrowing++;
	}
}

void pool_set_work(struct pool *p, struct work *w)
{
	p->work = w;
}

/* ---- actions */

static void apply_list(struct slot *s, const struct conf_res *res, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = cg_slot_set(s->pool->cg, s->name, res[i].name, res[i].value);
		if (r < 0)
			log_warn("slot %s (%s): set %s = %s: %s", s->name, s->key, res[i].name, res[i].value,
				 strerror(-r));
	}
}

/* the kernel's defaults for the resource keys in mask */
static void reset_some(struct slot *s, unsigned mask)
{
	struct cg *cg = s->pool->cg;

	for (unsigned i = 0; i < RES_NKEYS; i++)
		if ((mask & (1U << i)) && cg_resource_supported(cg, res_key(i)->name))
			cg_slot_set(cg, s->name, res_key(i)->name, res_key(i)->reset);
}

/* the last run's Attach limits undone, then the class settings, then the
 * key's own [job] settings over them */
void pool_act_apply(struct slot *s)
{
	const struct conf *c = s->pool->conf;

	pool_act_apply_class(s, s->class_name[0] ? conf_class_by_name(c, s->class_name) : NULL);
}

void pool_act_apply_class(struct slot *s, const struct conf_class *cls)
{
	const struct conf_job *job = conf_job_for_key(s->pool->conf, s->key);

	if (s->run_limits)
		reset_some(s, s->run_limits);
	s->run_limits = 0;
	if (cls)
		apply_list(s, cls->res, cls->nres);
	if (job)
		apply_list(s, job->res, job->nres);
}

/* " (idle -> running)": the transition a run line stands for */
static const char *transition(const struct slot *s, enum slot_state prev, char *buf, size_t len)
{
	if (prev == s->state)
		return "";
	snprintf(buf, len, " (%s -> %s)", slot_state_name(prev), slot_state_name(s->state));
	return buf;
}

static void act_run_start(struct slot *s, enum slot_state prev)
{
	struct run *run = &s->recent[s->nrecent % SLOT_RECENT_RUNS];
	struct cg_memory mem;
	char tr[64];

	memset(run, 0, sizeof(*run));
	run->started_us = now_real_us();
	run->exit_status = -1;
	if (s == s->pool->held && s->pool->held_oom_known) /* the run before ended in this request */
		run->oom_base = s->pool->held_oom;
	else if (cg_slot_memory_some(s->pool->cg, s->name, CG_MEM_OOM, &mem) == 0)
		run->oom_base = mem.oom_kill;
	s->pool->held_oom_known = false;
	cg_slot_reset_peak(s->pool->cg, s->name);
	pool_peak_sample(s, run); /* the first sample, where the pool samples */
	s->nrecent++;
	s->runs++;
	count_total(s->pool, true);
	pool_peak_timer(s->pool);
	log_event(LOG_INFO, &(struct log_fields){ .key = s->key, .slot = s->name, .event = LOG_EV_RUN_START,
						 .run = s->runs },
		  "slot %s (%s): run %llu started%s", s->name, s->key, (unsigned long long)s->runs,
		  transition(s, prev, tr, sizeof(tr)));
}

static void act_run_end(struct slot *s, enum slot_state prev)
{
	struct run *run = pool_cur_run(s);
	struct cg_memory mem;
	char tr[64];

	if (!run || run->ended_us)
		return;
	pool_peak_sample(s, run); /* the last sample, before the run is closed */
	run->ended_us = now_real_us();
	if (cg_slot_memory_some(s->pool->cg, s->name, (run->peak_sampled ? 0 : CG_MEM_PEAK) | CG_MEM_OOM, &mem) == 0) {
		if (!run->peak_sampled)
			run->memory_peak = mem.peak;
		run->oom_kills = mem.oom_kill >= run->oom_base ? mem.oom_kill - run->oom_base : 0;
		s->pool->held_oom = mem.oom_kill;
		s->pool->held_oom_known = s == s->pool->held;
	}
	cg_slot_peak_close(s->pool->cg, s->name); /* no fd kept for slots that run nothing */
	log_event(LOG_INFO, &(struct log_fields){ .key = s->key, .slot = s->name, .event = LOG_EV_RUN_END,
						 .run = s->runs },
		  "slot %s (%s): run %llu ended after %.3f s, peak %llu bytes%s, %llu oom kills%s", s->name, s->key,
		  (unsigned long long)s->runs, (run->ended_us - run->started_us) / 1e6,
		  (unsigned long long)run->memory_peak, run->peak_sampled ? " (sampled)" : "",
		  (unsigned long long)run->oom_kills, transition(s, prev, tr, sizeof(tr)));
	pool_peak_timer(s->pool);
	pool_tenant_run_ended(s);
}

void pool_idle_timer(struct slot *s, double after)
{
	struct ev_loop *loop = s->pool->loop;

	ev_timer_stop(loop, &s->idle_timer);
	ev_timer_set(&s->idle_timer, after > 0 ? after : 0.001, 0.);
	ev_timer_start(loop, &s->idle_timer);
}

/* the resource settings back to the kernel's defaults */
void pool_reset_limits(struct slot *s)
{
	reset_some(s, ~0U);
	s->run_limits = 0;
}

static bool same_arg(void *arg, void *ud)
{
	return arg == ud;
}

/* any thread: the reclaim of a recycled slot */
static int scrub_fn(void *arg)
{
	struct slot *s = arg;

	return cg_slot_reclaim(s->pool->cg, s->name, s->scrub_bytes);
}

/* After the scrub: a slot still charged more than recycle_max_memory
 * (memory and swap: tmpfs or shared memory files the last key left, which
 * no reclaim takes without swap, or processes that would not die) is given
 * to no new key; it is set aside under a key of its own and looked at
 * again after idle_timeout. */
static void scrub_check(struct slot *s)
{
	struct cg_memory mem;

	if (s->state != SLOT_WARM || s->key[0] ||
	    cg_slot_memory_some(s->pool->cg, s->name, CG_MEM_CURRENT | CG_MEM_SWAP, &mem) < 0 ||
	    mem.current + mem.swap <= s->pool->conf->pool.recycle_max_memory)
		return;
	s->scrub_bytes = mem.current + mem.swap;
	pool_slot_event(s, SLOT_EV_LEFTOVER);
}

/* on the loop, after the reclaim (a worker's, or the loop's own without one) */
static void scrub_done(int r, void *arg)
{
	struct slot *s = arg;

	if (r < 0 && r != -EAGAIN)
		log_warn("slot %s: reclaim: %s", s->name, strerror(-r));
	s->busy = false;
	pool_list_insert(s->pool, s);
	scrub_check(s);
}

/* Make a slot fit for its next tenant: forget the key, put the limits back
 * to the kernel's defaults, give back the memory the last key left (on a
 * worker), then see that it did. */
static void act_scrub(struct slot *s)
{
	struct cg *cg = s->pool->cg;
	struct cg_memory mem;

	pool_reset_limits(s);
	pool_tenant_free(s); /* the last key's job, if any, is over (a state file of an older daemon may still name one) */
	log_event(LOG_INFO, &(struct log_fields){ .key = s->key, .slot = s->name },
		  "slot %s: recycled from key %s after %llu runs", s->name, s->key, (unsigned long long)s->runs);
	pool_slot_set_key(s, "");
	s->class_name[0] = '\0';
	s->owner_uid = 0;
	s->released = false;
	s->runs = 0;
	s->nrecent = 0;
	s->idle_since_us = 0;
	if (cg_slot_memory_some(cg, s->name, CG_MEM_CURRENT, &mem) < 0 || mem.current == 0) {
		scrub_check(s);
		return;
	}
	s->scrub_bytes = mem.current;
	s->busy = true; /* out of the warm list until scrub_done */
	pool_list_remove(s->pool, s);
	if (!s->pool->work || work_submit(s->pool->work, scrub_fn, scrub_done, s) < 0)
		scrub_done(scrub_fn(s), s);
}

/* The scrub left the slot charged: a key of its own, so that no new key
 * gets it, and it shows in List with what it holds. */
static void act_set_aside(struct slot *s)
{
	char key[KEY_MAX + 1];

	snprintf(key, sizeof(key), "leftover.%s", s->name);
	s->pool->set_aside++;
	if (pool_slot_set_key(s, key) < 0) {
		log_err("slot %s: cannot be set aside as %s: %s", s->name, key, strerror(ENOMEM));
		return;
	}
	log_event(LOG_WARNING, &(struct log_fields){ .key = key, .slot = s->name },
		  "slot %s: not recycled: %llu bytes still charged after the scrub, over recycle_max_memory "
		  "(%llu): tmpfs or shared memory files the last key left, or processes that would not die; set "
		  "aside as key %s, looked at again after idle_timeout",
		  s->name, (unsigned long long)s->scrub_bytes, (unsigned long long)s->pool->conf->pool.recycle_max_memory,
		  key);
}

/* A transition: the state, and when the slot became idle (which orders the
 * idle list, so it is set first). */
static void pool_slot_enter(struct slot *s, enum slot_state next, unsigned act)
{
	if ((act & SLOT_ACT_IDLE_TIMER) && s->state != SLOT_IDLE)
		s->idle_since_us = now_real_us();
	if (act & (SLOT_ACT_IDLE_TIMER | SLOT_ACT_RUN_START))
		s->used_us = now_real_us(); /* a run ended or began, or a release */
	if (s->state != next)
		pool_set_state(s, next);
}

/* Processes in a slot nobody gave them (a lost or partly bad state file, or
 * moved in behind our back): the slot stays theirs, under a key of its own,
 * until it empties. */
static void act_orphan(struct slot *s)
{
	char key[KEY_MAX + 1];

	if (s->key[0])
		return;
	snprintf(key, sizeof(key), "orphan.%s", s->name);
	if (pool_slot_set_key(s, key) < 0) {
		log_err("slot %s: holds processes no key is known for, and cannot be bound to %s: %s", s->name, key,
			strerror(ENOMEM));
		return;
	}
	s->class_name[0] = '\0';
	log_warn("slot %s: holds processes no key is known for; bound to key %s until it empties", s->name, key);
}

static void pool_slot_do(struct slot *s, enum slot_state prev, unsigned act)
{
	if (act & SLOT_ACT_ORPHAN)
		act_orphan(s);
	if (act & SLOT_ACT_SET_ASIDE)
		act_set_aside(s);
	if (act & SLOT_ACT_RUN_END)
		act_run_end(s, prev);
	if (act & SLOT_ACT_STOP_TIMER)
		ev_timer_stop(s->pool->loop, &s->idle_timer);
	if (act & SLOT_ACT_APPLY)
		pool_act_apply(s);
	if (act & SLOT_ACT_RUN_START)
		act_run_start(s, prev);
	if (act & SLOT_ACT_IDLE_TIMER)
		pool_idle_timer(s, s->pool->conf->pool.idle_timeout_ms / 1000.);
	if (act & SLOT_ACT_SCRUB)
		act_scrub(s);
}

int pool_slot_plan(struct slot *s, enum slot_event ev, struct slot_tr *t)
{
	const struct conf *c = s->pool->conf;

	t->ev = ev;
	t->prev = s->state;
	/* mode keep never removes: an idle timeout recycles even with recycle = no */
	return slot_step(t->prev, ev, c->pool.recycle || c->retire.mode == RETIRE_KEEP, &t->next, &t->act);
}

void pool_slot_commit(struct slot *s, const struct slot_tr *t, unsigned done, bool save)
{
	struct pool *p = s->pool;

	if (t->ev == SLOT_EV_IDLE_TIMEOUT)
		s->retire_mode = p->conf->retire.mode;
	pool_slot_enter(s, t->next, t->act);
	if (t->prev != t->next && !(t->act & (SLOT_ACT_RUN_END | SLOT_ACT_RUN_START))) /* a run's line says it */
		log_event(LOG_INFO, &(struct log_fields){ .key = s->key, .slot = s->name },
			  "slot %s (%s): %s -> %s on %s", s->name, s->key[0] ? s->key : "-", slot_state_name(t->prev),
			  slot_state_name(t->next), slot_event_name(t->ev));
	pool_slot_do(s, t->prev, t->act & ~done);
	if (save)
		pool_save(p, s);
	if (t->act & SLOT_ACT_RETIRE)
		pool_act_retire(s); /* may free s */
}

/* processes in the slot: the kernel's populated flag can lag the exit of
 * the last one, so an empty cgroup.procs counts too */
bool pool_slot_has_procs(struct slot *s)
{
	bool populated;
	unsigned n;

	if (cg_slot_populated(s->pool->cg, s->name, &populated) == 0 && !populated)
		return false;
	return cg_slot_nprocs(s->pool->cg, s->name, &n) < 0 || n > 0;
}

/* Feed one event to a slot's state machine and carry out the actions. */
void pool_slot_event(struct slot *s, enum slot_event ev)
{
	struct slot_tr t;

	if (pool_slot_plan(s, ev, &t) == 0)
		pool_slot_commit(s, &t, 0, true);
}

/* ---- kernel events */

/* Read what the kernel says about a slot and feed it to the state machine.
 * When the read fails, the poll timer reads again: with cgroup.events
 * watching, no other event may ever come for this change. */
static int slot_sync(struct slot *s)
{
	bool populated;
	int r = cg_slot_populated(s->pool->cg, s->name, &populated);

	if (r < 0) {
		log_warn("slot %s: read population: %s (read again in %.0f s)", s->name, strerror(-r), POLL_INTERVAL);
		ev_timer_start(s->pool->loop, &s->pool->poll_timer);
		return r;
	}
	pool_slot_event(s, populated ? SLOT_EV_POPULATED : SLOT_EV_EMPTY);
	if (!populated)
		pool_retire_legacy(s);
	return 0;
}

static void watch_one(const char *name, void *ud)
{
	struct slot *s = pool_find_name(ud, name);

	if (s)
		slot_sync(s);
}

static void watch_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct pool *p = w->data;
	int r = cg_watch_read(p->cg, watch_one, p);

	if (r < 0 && r != -EAGAIN)
		log_warn("cgroup events: %s", strerror(-r));
}

static void poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct pool *p = w->data;
	bool failed = false;

	for (size_t i = 0; i < p->nslots; i++) {
		struct slot *s = p->slots[i];
		if (s->state == SLOT_RUNNING || s->state == SLOT_IDLE) {
			failed |= slot_sync(s) < 0;
			if (i < p->nslots && p->slots[i] != s)
				i--; /* s was retired and dropped */
		}
	}
	if (!failed && cg_watch_fd(p->cg) >= 0 && !p->poll_all)
		ev_timer_stop(loop, w); /* watching: this was a retry, and it is done */
}

void pool_idle_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct slot *s = w->data;
	struct pool *p = s->pool;
	bool populated;
	int r = cg_slot_populated(p->cg, s->name, &populated);

	/* a run we have not heard of (an event lost, or the state at start-up
	 * unreadable): never scrub or remove the slot under it */
	if (r == 0 && populated) {
		pool_slot_event(s, SLOT_EV_POPULATED);
		return;
	}
	if (r < 0) {
		log_warn("slot %s (%s): read population: %s; idle timeout postponed", s->name, s->key, strerror(-r));
		pool_idle_timer(s, POLL_INTERVAL);
		return;
	}
	pool_slot_event(s, SLOT_EV_IDLE_TIMEOUT);
	pool_fill_warm(p);
}

int pool_new(struct ev_loop *loop, struct cg *cg, const struct conf *conf, struct pool **out)
{
	struct pool *p = calloc(1, sizeof(*p));
	unsigned counts[SLOT_NSTATES];
	int fd, r;

	if (!p)
		return -ENOMEM;
	p->loop = loop;
	p->cg = cg;
	p->conf = conf;
	/* polls where nothing is watched; with watching, retries failed reads */
	ev_timer_init(&p->poll_timer, poll_cb, POLL_INTERVAL, POLL_INTERVAL);
	p->poll_timer.data = p;
	ev_timer_init(&p->over_max_timer, pool_over_max_cb, 0., 0.001);
	p->over_max_timer.data = p;
	pool_nocg_init(p);
	pool_peak_init(p);
	hmap_init(&p->bykey, true);
	r = pool_load(p);
	if (r < 0) {
		pool_free(p);
		return r;
	}
	pool_reconcile(p);
	pool_peak_timer(p); /* runs the state file gave back are sampled too */
	fd = cg_watch_fd(cg);
	if (fd >= 0) {
		ev_io_init(&p->watch_io, watch_cb, fd, EV_READ);
		/* after the requests ready with it: an Attach then ends the run
		 * it finds over and starts its own in one record, and the
		 * event's own read comes after the reply */
		ev_set_priority(&p->watch_io, -1);
		p->watch_io.data = p;
		ev_io_start(loop, &p->watch_io);
	} else {
		ev_timer_start(loop, &p->poll_timer);
	}
	pool_fill_warm(p);
	pool_save_all(p);
	pool_counts(p, counts);
	log_info("pool: %zu slots (%u warm, %u running, %u idle)", p->nslots, counts[SLOT_WARM],
		 counts[SLOT_RUNNING], counts[SLOT_IDLE]);
	*out = p;
	return 0;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	ev_io_stop(p->loop, &p->watch_io);
	ev_timer_stop(p->loop, &p->poll_timer);
	ev_timer_stop(p->loop, &p->over_max_timer);
	pool_nocg_fini(p);
	pool_peak_fini(p);
	/* writes still queued for slots are dropped, a running one waited for */
	if (p->work) {
		work_cancel(p->work, grow_done, NULL, NULL);
		work_cancel(p->work, scrub_done, NULL, NULL);
	}
	while (p->growing) {
		struct slot *s = p->growing;
		p->growing = s->lnext;
		free(s);
	}
	for (size_t i = 0; i < p->nslots; i++) {
		ev_timer_stop(p->loop, &p->slots[i]->idle_timer);
		pool_tenant_free(p->slots[i]);
		free(p->slots[i]);
	}
	free(p->slots);
	for (size_t i = 0; i < p->nremoved; i++)
		free(p->removed[i]);
	free(p->removed);
	hmap_fini(&p->bykey);
	state_close(p->state);
	free(p);
}
