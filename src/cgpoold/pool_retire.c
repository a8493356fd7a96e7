/* pool_retire.c - slots leaving the pool: on request, at idle timeout with
 * recycle = no, above max_slots, and under memory pressure */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pool_internal.h"

static void slot_back(struct slot *s, const struct retire_result *res);

static void record_retirement(struct pool *p, const struct retire_result *res)
{
	p->recent_ret[p->nrecent_ret++ % POOL_RECENT_RETIREMENTS] = *res;
}

/* the outcome of a slot's retirement: it leaves the pool, or, when it could
 * not be removed or was called off, goes back to idle (with its key) or warm */
static void slot_retired(const struct retire_result *res, void *ud)
{
	struct slot *s = ud;
	struct pool *p = s->pool;
	retire_done_fn done = s->retire_done;
	void *done_ud = s->retire_ud;

	s->retire_done = NULL;
	record_retirement(p, res);
	if (res->outcome == OUTCOME_FAILED || res->outcome == OUTCOME_CANCELLED) {
		slot_back(s, res);
	} else {
		pool_drop(p, s); /* a drop record */
	}
	pool_fill_warm(p);
	if (done)
		done(res, done_ud);
}

/* Without a retirement engine (unit tests of the pool alone) a slot leaving
 * the pool is removed with rmdir, and nothing is verified. */
static void retire_plain(struct slot *s)
{
	struct retire_result res = { .mode = s->retire_mode, .outcome = OUTCOME_FAILED };
	int r = cg_slot_remove(s->pool->cg, s->name);

	snprintf(res.name, sizeof(res.name), "%s", s->name);
	snprintf(res.key, sizeof(res.key), "%s", s->key);
	if (r < 0) {
		log_err("retire slot %s (%s): rmdir: %s", s->name, s->key, strerror(-r));
		res.error = r;
		slot_retired(&res, s);
		return;
	}
	log_event(LOG_INFO, &(struct log_fields){ .key = s->key, .slot = s->name, .event = LOG_EV_OUTCOME,
						 .outcome = retire_outcome_name(OUTCOME_RELEASED) },
		  "slot %s (%s): removed without verification", s->name, s->key[0] ? s->key : "-");
	res.outcome = OUTCOME_RELEASED;
	res.attributed = false;
	slot_retired(&res, s);
}

void pool_act_retire(struct slot *s)
{
	struct pool *p = s->pool;
	int r;

	log_event(LOG_INFO, &(struct log_fields){ .key = s->key, .slot = s->name, .event = LOG_EV_RETIRE },
		  "slot %s (%s): leaves the pool, retirement mode %s", s->name, s->key[0] ? s->key : "-",
		  conf_retire_mode_name(s->retire_mode));
	if (!p->retire) {
		retire_plain(s);
		return;
	}
	if (s->resume_now)
		r = retire_resume(p->retire, s->name, s->key, s->retire_mode, false, slot_retired, s);
	else
		r = retire_start(p->retire, s->name, s->key, s->retire_mode, slot_retired, s);
	s->resume_now = false;
	if (r < 0) {
		struct retire_result res = { .mode = s->retire_mode, .outcome = OUTCOME_FAILED, .error = r };
		log_err("retire slot %s (%s): %s", s->name, s->key, strerror(-r));
		snprintf(res.name, sizeof(res.name), "%s", s->name);
		snprintf(res.key, sizeof(res.key), "%s", s->key);
		slot_retired(&res, s);
	}
}

/* Back from retiring, whole: an rmdir that failed in the memory hierarchy
 * came after the others (cg_slot_rmdir), so those directories are made
 * again and the population watched anew. */
static void slot_back(struct slot *s, const struct retire_result *res)
{
	struct pool *p = s->pool;
	int r;

	if (res->outcome == OUTCOME_FAILED) {
		r = cg_slot_create(p->cg, s->name);
		if (r < 0 && r != -EEXIST)
			log_err("slot %s (%s): not removed, and cannot be made whole again: %s", s->name,
				s->key[0] ? s->key : "-", strerror(-r));
		cg_slot_unwatch(p->cg, s->name);
		pool_slot_watch(p, s);
	}
	pool_slot_event(s, s->key[0] ? SLOT_EV_UNRETIRE : SLOT_EV_UNRETIRE_WARM);
	if (res->outcome == OUTCOME_FAILED)
		log_warn("slot %s (%s): not removed, back to %s", s->name, s->key[0] ? s->key : "-",
			 slot_state_name(s->state));
}

/* An Attach of a key whose slot is retiring: the retirement is called off
 * while the slot is not being removed (0, the slot is idle again); else the
 * key lets go of it and gets another slot (-EALREADY). */
int pool_unretire(struct pool *p, struct slot *s)
{
	if (p->retire && retire_cancel(p->retire, s->name) == 0)
		return 0;
	log_info("slot %s (%s): being removed; the key gets another slot", s->name, s->key);
	pool_slot_set_key(s, "");
	pool_save(p, s);
	return -EALREADY;
}

static void removed_verified(const struct retire_result *res, void *ud)
{
	struct slot *ghost = ud;

	record_retirement(ghost->pool, res);
	pool_removed_done(ghost->pool, ghost);
}

/* s retired in the configured mode by the daemon itself (no caller waits
 * for the verdict), with why in the log; resumed: one the last daemon left
 * unfinished */
static void retire_unasked(struct slot *s, const char *why, bool resumed)
{
	log_event(LOG_NOTICE, &(struct log_fields){ .key = s->key, .slot = s->name }, "retire %s (%s): %s", s->name,
		  s->key[0] ? s->key : "-", why);
	s->retire_mode = s->pool->conf->retire.mode;
	s->retire_done = NULL;
	s->resume_now = resumed;
	pool_slot_event(s, SLOT_EV_RETIRE);
}

/* retirements the last daemon left unfinished: taken up again */
static void resume_retirements(struct pool *p)
{
	for (size_t i = 0; i < p->nremoved; i++) {
		struct slot *g = p->removed[i];
		log_event(LOG_NOTICE, &(struct log_fields){ .key = g->key, .slot = g->name },
			  "retire %s (%s): removed before the restart, not verified; verifying it now", g->name,
			  g->key[0] ? g->key : "-");
		if (retire_resume(p->retire, g->name, g->key, p->conf->retire.mode, true, removed_verified, g) < 0)
			log_err("retire %s: cannot verify it again", g->name);
	}
	for (struct slot *s = pool_slot_from(p, 0); s; s = pool_slot_from(p, s->id + 1)) {
		if (s->legacy && !s->resume_retire) {
			pool_retire_legacy(s);
			continue;
		}
		if (!s->resume_retire)
			continue;
		s->resume_retire = false;
		if (s->state == SLOT_RUNNING || p->conf->retire.mode == RETIRE_KEEP)
			continue;
		retire_unasked(s, "left unfinished by the last daemon; resumed", true);
	}
}

void pool_retire_legacy(struct slot *s)
{
	struct pool *p = s->pool;

	if (!s->legacy || !p->retire || s->state == SLOT_RUNNING || s->state == SLOT_RETIRING ||
	    p->conf->retire.mode == RETIRE_KEEP)
		return;
	retire_unasked(s, "made by an older cgpoold, its directory holds that one's limits; retired", false);
}

void pool_set_retire(struct pool *p, struct retire *r)
{
	p->retire = r;
	if (r)
		resume_retirements(p);
}

int pool_retire(struct pool *p, const char *key, enum retire_mode mode, retire_done_fn done, void *ud)
{
	struct slot *s = pool_find(p, key);

	if (!s)
		return -ENOENT;
	if (mode == RETIRE_KEEP)
		return -EINVAL;
	if (s->state == SLOT_RETIRING)
		return -EALREADY;
	if (s->state == SLOT_RUNNING && !pool_slot_has_procs(s))
		pool_slot_event(s, SLOT_EV_EMPTY); /* its end is still on its way to us */
	if (s->state == SLOT_RUNNING)
		return -EBUSY;
	s->retire_mode = mode;
	s->retire_done = done;
	s->retire_ud = ud;
	pool_slot_event(s, SLOT_EV_RETIRE);
	return 0;
}

/* The oldest idle slot, or with spare set the oldest whose key was not
 * used within idle_timeout (the idle list is ordered by idle_since, and a
 * release after that may have used a key again: look a little further). */
static struct slot *oldest_spare(struct pool *p, bool spare)
{
	int64_t before = now_real_us() - (int64_t)p->conf->pool.idle_timeout_ms * 1000;
	struct slot *s = pool_oldest_idle(p);

	for (unsigned n = 0; spare && s && n < 64; s = s->lnext, n++)
		if (s->idle_since_us <= before && s->used_us <= before)
			return s;
	return spare ? NULL : s;
}

/* Retire up to n slots: idle ones first (least recently used first), then
 * warm ones while more than warm_floor are warm. */
static unsigned retire_some(struct pool *p, unsigned n, unsigned warm_floor, bool spare)
{
	unsigned done = 0;
	struct slot *s;

	if (p->conf->retire.mode == RETIRE_KEEP)
		return 0;
	while (done < n && ((s = oldest_spare(p, spare)) || (pool_count_state(p, SLOT_WARM) > warm_floor &&
						      (s = pool_take_warm(p))))) {
		s->retire_mode = p->conf->retire.mode;
		s->retire_done = NULL;
		pool_slot_event(s, SLOT_EV_RETIRE);
		done++;
	}
	return done;
}

unsigned pool_shrink(struct pool *p, unsigned n)
{
	/* pressure anyone can make: only slots nobody used lately, at the
	 * retirement rate (the pressure trigger fires at most once a second) */
	return retire_some(p, n < p->conf->retire.rate ? n : p->conf->retire.rate, p->conf->pool.warm, true);
}

size_t pool_recent_retirements(const struct pool *p, struct retire_result *out, size_t max)
{
	size_t n = p->nrecent_ret < POOL_RECENT_RETIREMENTS ? p->nrecent_ret : POOL_RECENT_RETIREMENTS;

	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = p->recent_ret[(p->nrecent_ret - 1 - i) % POOL_RECENT_RETIREMENTS];
	return n;
}

#define OVER_MAX_BATCH 128 /* slots handed to retirement per loop pass after a lower max_slots */

/* Slots above max_slots go to retirement a batch per loop pass, so a reload
 * from 10,000 to 1,000 does not stall the loop, and requests are served
 * between the batches. It stops when only running slots are above. */
static void over_max_step(struct pool *p)
{
	unsigned live = (unsigned)p->nslots - pool_count_state(p, SLOT_RETIRING), max = p->conf->pool.max_slots;
	unsigned n = 0;

	if (live > max)
		n = retire_some(p, live - max < OVER_MAX_BATCH ? live - max : OVER_MAX_BATCH, 0, false);
	if (live - n > max && n > 0)
		ev_timer_start(p->loop, &p->over_max_timer);
	else
		ev_timer_stop(p->loop, &p->over_max_timer);
}

void pool_over_max_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	over_max_step(w->data);
}

void pool_set_conf(struct pool *p, const struct conf *conf)
{
	unsigned live = (unsigned)p->nslots - pool_count_state(p, SLOT_RETIRING);

	p->conf = conf;
	if (live > conf->pool.max_slots)
		log_notice("pool: %u slots above max_slots %u: handing idle and warm ones to retirement, %u per loop pass",
			   live - conf->pool.max_slots, conf->pool.max_slots, OVER_MAX_BATCH);
	over_max_step(p);
	pool_fill_warm(p);
}

unsigned pool_pressure(struct pool *p)
{
	unsigned counts[SLOT_NSTATES], n;

	pool_counts(p, counts);
	n = pool_shrink(p, 1 + (counts[SLOT_IDLE] + counts[SLOT_WARM]) / 4);
	log_notice("memory pressure on the pool root: %u idle or spare warm slots handed to retirement", n);
	return n;
}
