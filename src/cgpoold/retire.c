/* retire.c - removing slots the way the running kernel needs, and proving it */
#include "config.h"

#include "retire_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "work.h"

static const char *const outcome_names[OUTCOME_N] = {
	[OUTCOME_RELEASED] = "released", [OUTCOME_REPARENTED] = "reparented", [OUTCOME_DRAINED] = "drained",
	[OUTCOME_PINNED] = "pinned",     [OUTCOME_FAILED] = "failed",         [OUTCOME_CANCELLED] = "cancelled",
};

const char *retire_outcome_name(enum retire_outcome o)
{
	return (unsigned)o < OUTCOME_N ? outcome_names[o] : "?";
}

const char *lru_reparenting_name(enum lru_reparenting v)
{
	return v == LRU_YES ? "yes" : v == LRU_NO ? "no" : "unknown";
}

static void rt_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ---- the lifecycle: phase x event -> next phase (PH_N: no such transition) */

#define NO PH_N
static const enum phase next_phase[PH_N][RT_NEVENTS] = {
	/*                DIRTY     DRAIN     REMOVE    REMOVED    CANCEL */
	[PH_QUEUED] = { PH_FLUSH, PH_DRAIN, PH_RMDIR, PH_VERIFY, NO },
	[PH_FLUSH] = { NO, PH_DRAIN, PH_RMDIR, NO, NO },
	[PH_DRAIN] = { NO, NO, PH_RMDIR, NO, PH_CANCELLED },
	[PH_RMDIR] = { NO, NO, NO, PH_VERIFY, NO },
	[PH_VERIFY] = { NO, NO, NO, NO, NO },
	[PH_CANCELLED] = { NO, NO, NO, NO, NO },
};
#undef NO

static const char *const phase_names[PH_N] = { "queued", "flush", "drain", "rmdir", "verify", "cancelled" };
static const char *const event_names[RT_NEVENTS] = { "dirty", "drain", "remove", "removed", "cancel" };

const char *retire_phase_name(enum phase ph)
{
	return ph < PH_N ? phase_names[ph] : "?";
}

const char *retire_event_name(enum rt_event ev)
{
	return ev < RT_NEVENTS ? event_names[ev] : "?";
}

int retire_next_phase(enum phase ph, enum rt_event ev, enum phase *next)
{
	if (ph >= PH_N || ev >= RT_NEVENTS || next_phase[ph][ev] == PH_N)
		return -EINVAL;
	*next = next_phase[ph][ev];
	return 0;
}

int retire_step(struct retirement *rt, enum rt_event ev)
{
	enum phase next;

	if (retire_next_phase(rt->phase, ev, &next) < 0) {
		log_err("retire %s: event %s in phase %s: no such transition; kept in %s", rt->res.name,
			retire_event_name(ev), retire_phase_name(rt->phase), retire_phase_name(rt->phase));
		return -EINVAL;
	}
	log_debug("retire %s: %s -> %s (%s)", rt->res.name, retire_phase_name(rt->phase), retire_phase_name(next),
		  retire_event_name(ev));
	rt->phase = next;
	return 0;
}

unsigned retire_count_phase(const struct retire *r, enum phase ph)
{
	unsigned n = 0;

	for (const struct retirement *j = r->all; j; j = j->next)
		n += j->phase == ph;
	return n;
}

/* in mode drain and not yet removed: flushing counts, it drains next */
static unsigned count_draining(const struct retire *r)
{
	unsigned n = 0;

	for (const struct retirement *j = r->all; j; j = j->next)
		n += j->phase == PH_DRAIN || (j->phase == PH_FLUSH && j->res.mode == RETIRE_DRAIN);
	return n;
}

static void rt_unlink(struct retire *r, struct retirement *rt)
{
	for (struct retirement **pp = &r->all; *pp; pp = &(*pp)->next) {
		if (*pp == rt) {
			*pp = rt->next;
			if (r->last == rt) /* pp is the next field of the one before, or the head */
				r->last = pp == &r->all ? NULL
							 : (struct retirement *)(void *)((char *)pp - offsetof(struct retirement, next));
			return;
		}
	}
}

void retire_finish(struct retirement *rt, enum retire_outcome o)
{
	struct retire *r = rt->r;
	int64_t now = now_mono_us();

	ev_timer_stop(r->loop, &rt->timer);
	rt_unlink(r, rt);
	rt->res.outcome = o;
	rt->res.elapsed_ms = rt->rmdir_us ? (now - rt->rmdir_us) / 1000 : 0;
	rt->res.total_ms = (now - rt->start_us) / 1000;
	r->stats.outcomes[o]++;
	if (o == OUTCOME_PINNED)
		r->stats.pinned_bytes += rt->res.lru_bytes;
	log_event(LOG_INFO, &(struct log_fields){ .key = rt->res.key, .slot = rt->res.name,
						 .event = LOG_EV_OUTCOME, .outcome = retire_outcome_name(o),
						 .lru_bytes = rt->res.lru_bytes, .has_lru_bytes = true },
		  "retire %s (%s): %s, %llu LRU bytes at removal, %llu written back, %llu drained, verdict "
		  "after %lld ms%s%s%s",
		  rt->res.name, rt->res.key[0] ? rt->res.key : "-", retire_outcome_name(o),
		  (unsigned long long)rt->res.lru_bytes, (unsigned long long)rt->res.flushed_bytes,
		  (unsigned long long)rt->res.drained_bytes,
		  (long long)rt->res.elapsed_ms, rt->res.attributed ? "" : " (not attributed by the count alone)",
		  rt->res.evidence[0] ? "; " : "", rt->res.evidence);
	if (rt->done)
		rt->done(&rt->res, rt->ud);
	free(rt);
	retire_kick(r);
}

/* ---- kernel writes: on a worker thread when there is a work pool, else
 * here; either way the result comes to rmdir_result or reclaim_result */

static void rmdir_result(struct retirement *rt, int e, int64_t end_us);
static void reclaim_result(struct retirement *rt, int e);

static void note_write(struct retire *r, int64_t us)
{
	double ms = us / 1000.0;

	if (ms > r->stats.max_write_ms)
		r->stats.max_write_ms = ms;
}

/* on a worker thread: nothing of the retirement's state but the request */
static int write_fn(void *arg)
{
	struct wreq *q = arg;
	int64_t t0 = now_mono_us();
	int e = q->rmdir ? cg_slot_rmdir(q->cg, q->name) : cg_slot_reclaim(q->cg, q->name, q->bytes);

	q->end_us = now_mono_us();
	q->us = q->end_us - t0;
	return e;
}

/* back on the loop (retire_free cancels what is in flight, so retirement is alive) */
static void write_done(int e, void *arg)
{
	struct wreq *q = arg;
	struct retirement *rt = q->rt;
	struct retire *r = rt->r;
	bool rmdir = q->rmdir;
	int64_t end = q->end_us;

	note_write(r, q->us);
	rt->write = NULL;
	r->writes--;
	r->rmdirs -= rmdir;
	free(q);
	if (rt->phase == PH_CANCELLED) {
		rt_unlink(r, rt); /* reported when it was called off */
		free(rt);
		retire_kick(r);
		return;
	}
	if (rmdir)
		rmdir_result(rt, e, end);
	else
		reclaim_result(rt, e);
}

static bool write_ours(void *arg, void *ud)
{
	return ((struct wreq *)arg)->rt->r == ud;
}

static void rt_later(struct retirement *rt, double after);

static int write_submit(struct retirement *rt, bool rmdir, uint64_t bytes)
{
	struct retire *r = rt->r;
	struct wreq *q = calloc(1, sizeof(*q));
	int e;

	if (!q)
		return -ENOMEM;
	q->rt = rt;
	q->cg = r->cg;
	snprintf(q->name, sizeof(q->name), "%s", rt->res.name);
	q->bytes = bytes;
	q->rmdir = rmdir;
	e = work_submit(r->work, write_fn, write_done, q);
	if (e < 0) {
		free(q);
		return e;
	}
	rt->write = q;
	r->writes++;
	r->rmdirs += rmdir;
	r->rmdir_starts += rmdir;
	return 0;
}

/* the slot's rmdir (rmdir) or one reclaim step of bytes */
static void write_start(struct retirement *rt, bool rmdir, uint64_t bytes)
{
	struct retire *r = rt->r;
	int64_t t0, end;
	int e;

	if (r->work) {
		e = write_submit(rt, rmdir, bytes);
		if (e == 0)
			return;
		if (e == -EAGAIN) { /* the queue is full: the loop must not wait */
			rt_later(rt, REQUEUE_S);
			return;
		}
	}
	t0 = now_mono_us();
	r->rmdir_starts += rmdir;
	e = rmdir ? cg_slot_rmdir(r->cg, rt->res.name) : cg_slot_reclaim(r->cg, rt->res.name, bytes);
	end = now_mono_us();
	note_write(r, end - t0);
	if (rmdir)
		rmdir_result(rt, e, end);
	else
		reclaim_result(rt, e);
}

static void rt_later(struct retirement *rt, double after)
{
	ev_timer_stop(rt->r->loop, &rt->timer);
	ev_timer_set(&rt->timer, after, 0.);
	ev_timer_start(rt->r->loop, &rt->timer);
}

/* ---- removal */

static void rmdir_go(struct retirement *rt)
{
	struct retire *r = rt->r;

	rt->gated = false;
	rt->has_local = cg_root_local_lru(r->cg, &rt->parent_local) == 0;
	write_start(rt, true, 0);
}

/* a baseline reading of count: taken, or (false) the witness does not
 * hold still yet and retirement reads again later */
static bool baseline_take(struct retirement *rt, uint64_t count)
{
	struct retire *r = rt->r;
	bool unchanged = r->settled_valid && count == r->settled;

	if (!unchanged && rt->settle_reads < SETTLE_READS_MAX &&
	    (rt->settle_reads == 0 || count != rt->settle_last)) {
		rt->settle_reads++;
		rt->settle_last = count;
		rt->gated = true;
		rt_later(rt, SETTLE_S);
		return false;
	}
	r->base = count;
	return true;
}

/* one pass over the gated retirements in WITNESS_WAIT_S, unless one is due already */
static void gate_later(struct retire *r)
{
	if (!ev_is_active(&r->gate_timer)) {
		ev_timer_set(&r->gate_timer, WITNESS_WAIT_S, 0.);
		ev_timer_start(r->loop, &r->gate_timer);
	}
}

static bool gated_ahead(const struct retirement *rt)
{
	for (const struct retirement *j = rt->r->all; j && j != rt; j = j->next)
		if (j->gated && j->phase == PH_RMDIR)
			return true;
	return false;
}

/* in phase rmdir: remove it now, or wait for the witness (called again) */
static void rmdir_try(struct retirement *rt)
{
	struct retire *r = rt->r;
	struct cg_dying d;
	uint64_t current;

	rt->res.lru_bytes = retire_lru_of(r, rt->res.name, &current);
	/* a slot with a run: its directory, where nothing else lives, is the
	 * witness of the run's removal; the shared count plays no part */
	rt->own = cg_slot_has_run(r->cg, rt->res.name);
	if (rt->own) {
		struct cg_place pl;
		rt->dir_own = 0;
		if (cg_slot_witness(r->cg, rt->res.name, &pl) == 0) {
			if (pl.has_local)
				rt->dir_own = pl.local;
			else if (pl.charged > current)
				rt->dir_own = pl.charged - current;
		}
		rmdir_go(rt);
		return;
	}
	/* no removal under a witness reading or one due, nor before a retirement
	 * queued earlier that waits for one or for its baseline (first come,
	 * first removed) */
	if (r->wit || r->verify_due || gated_ahead(rt)) {
		rt->gated = true;
		r->regated = r->gate_pass;
		ev_timer_stop(r->loop, &rt->timer); /* retire_wake_gated calls it again */
		gate_later(r);
		return;
	}
	/* The baseline is read while none of ours is being verified or removed
	 * (else the one taken for those stands), and only once the witness
	 * holds still: a group removed a moment ago (by us or anybody) that is
	 * being freed would otherwise hide this one. */
	if (retire_count_phase(r, PH_VERIFY) == 0 && r->rmdirs == 0) {
		if (r->work && retire_witness_submit(r, rt) == 0) {
			rt->gated = true;
			return; /* retire_baseline_read goes on */
		}
		if (cg_dying(r->cg, &d) == 0 && !baseline_take(rt, d.count))
			return;
	}
	rmdir_go(rt);
}

/* into phase rmdir, and the removal tried */
static void rt_remove(struct retirement *rt)
{
	retire_step(rt, RT_EV_REMOVE);
	rmdir_try(rt);
}

/* The first gated retirement in line: NULL when none, or when it cannot go on by
 * itself being called (its baseline settles on its timer, or is being read) */
static struct retirement *first_gated(struct retire *r, bool *any)
{
	for (struct retirement *j = r->all; j; j = j->next) {
		if (!j->gated || j->phase != PH_RMDIR || j->write)
			continue;
		*any = true;
		if (ev_is_active(&j->timer) || retire_witness_for(r, j))
			return NULL;
		return j;
	}
	return NULL;
}

void retire_wake_gated(struct retire *r)
{
	bool any = false;
	struct retirement *j;

	if (r->waking)
		return;
	r->waking = true;
	/* in line order; a retirement gated again holds back those behind it */
	while ((j = first_gated(r, &any)) != NULL) {
		uint64_t pass = ++r->gate_pass;

		rmdir_try(j); /* may finish and free j */
		if (r->regated == pass)
			break;
		any = false;
	}
	r->waking = false;
	if (any)
		gate_later(r);
}

static void gate_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	retire_wake_gated(w->data);
}

void retire_baseline_read(struct retirement *rt, int e, const struct cg_dying *d, bool clean)
{
	struct retire *r = rt->r;

	if (rt->phase != PH_RMDIR)
		return;
	/* the conditions may have changed while it was read: judged again */
	if (!clean || retire_count_phase(r, PH_VERIFY) != 0 || r->rmdirs != 0) {
		rmdir_try(rt);
		return;
	}
	if (e == 0 && !baseline_take(rt, d->count))
		return;
	rmdir_go(rt);
}

static void rmdir_result(struct retirement *rt, int e, int64_t end_us)
{
	struct retire *r = rt->r;

	if (e == 0 || e == -ENOENT)
		cg_slot_forget(r->cg, rt->res.name);
	if (e == -EBUSY && rt->tries < RMDIR_RETRIES) {
		rt->tries++; /* retries so far */
		rt_later(rt, RMDIR_RETRY_S);
		return;
	}
	if (e < 0) {
		rt->res.error = e;
		log_err("retire %s (%s): rmdir: %s (%u tries)", rt->res.name, rt->res.key, strerror(-e), rt->tries + 1);
		retire_finish(rt, OUTCOME_FAILED);
		return;
	}
	retire_verify_add(rt, end_us);
	retire_kick(r); /* a drain place may have come free */
}

/* One bounded reclaim step; the loop runs between steps. */
static void drain_step(struct retirement *rt)
{
	struct retire *r = rt->r;
	uint64_t lru = retire_lru_of(r, rt->res.name, NULL);

	if (lru == 0 || now_mono_us() >= rt->deadline_us || rt->eagain >= DRAIN_EAGAIN_MAX) {
		if (lru && rt->eagain < DRAIN_EAGAIN_MAX)
			log_warn("retire %s (%s): drain_timeout with %llu LRU bytes left", rt->res.name,
				 rt->res.key, (unsigned long long)lru);
		rt_remove(rt);
		return;
	}
	rt->drain_lru = lru;
	write_start(rt, false, lru < DRAIN_STEP ? lru : DRAIN_STEP);
}

static void reclaim_result(struct retirement *rt, int e)
{
	struct retire *r = rt->r;
	uint64_t lru = rt->drain_lru, after;

	if (e < 0 && e != -EAGAIN) {
		log_warn("retire %s (%s): reclaim: %s; removing as it is", rt->res.name, rt->res.key, strerror(-e));
		rt_remove(rt);
		return;
	}
	after = retire_lru_of(r, rt->res.name, NULL);
	if (after < lru) {
		rt->res.drained_bytes += lru - after;
		rt->drained_any = true;
		rt->eagain = 0;
	} else {
		rt->eagain++;
	}
	rt_later(rt, 0.);
}

/* ---- flush: a memcg with dirty or writeback pages stays dying until
 * writeback ends, even on kernels that reparent. A memcg does not say which
 * filesystems its pages belong to, so one sync(2) on a worker serves every
 * flushing slot, and each slot's own counters say when it is done. */

static int sync_fn(void *arg)
{
	(void)arg;
	sync();
	return 0;
}

static void sync_done(int e, void *arg)
{
	struct retire *r = arg;

	(void)e;
	r->syncing = false; /* the flushing slots see it at their next reading */
}

static uint64_t dirty_of(struct retire *r, const char *name)
{
	struct cg_memory m;

	return cg_slot_memory_some(r->cg, name, CG_MEM_DIRTY, &m) == 0 ? m.dirty + m.writeback : 0;
}

/* after the flush: drain (mode drain) or remove */
static void rt_proceed(struct retirement *rt)
{
	if (rt->res.mode == RETIRE_DRAIN) {
		retire_step(rt, RT_EV_DRAIN);
		rt_later(rt, 0.);
	} else {
		rt_remove(rt);
	}
}

static void flush_step(struct retirement *rt)
{
	struct retire *r = rt->r;
	uint64_t d = dirty_of(r, rt->res.name);

	rt->res.flushed_bytes = d < rt->dirty0 ? rt->dirty0 - d : 0;
	if (d == 0 || now_mono_us() >= rt->deadline_us) {
		if (d)
			log_warn("retire %s (%s): drain_timeout with %llu bytes dirty or under writeback left",
				 rt->res.name, rt->res.key, (unsigned long long)d);
		rt_proceed(rt);
		return;
	}
	/* one at a time; another once it returned, if pages are left (a full
	 * work queue: at the next reading) */
	if (!r->syncing && r->work)
		r->syncing = work_submit(r->work, sync_fn, sync_done, r) == 0;
	else if (!r->work)
		sync(); /* no work pool (tests): here, as the other writes */
	rt_later(rt, FLUSH_POLL_S);
}

static void rt_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct retirement *rt = w->data;

	/* what a phase does each time its timer fires */
	static void (*const tick[PH_N])(struct retirement *rt) = {
		[PH_FLUSH] = flush_step,
		[PH_DRAIN] = drain_step,
		[PH_RMDIR] = rmdir_try,
	};

	if (rt->write)
		return; /* its completion goes on */
	if (tick[rt->phase])
		tick[rt->phase](rt);
}

/* ---- admission: probe result for auto, then the rate limit */

static bool take_token(struct retire *r, double *wait)
{
	double rate = (*r->conf)->retire.rate;
	int64_t now = now_mono_us();

	r->tokens += (now - r->tokens_us) / 1e6 * rate;
	if (r->tokens > rate)
		r->tokens = rate;
	r->tokens_us = now;
	if (r->tokens >= 1.0) {
		r->tokens -= 1.0;
		return true;
	}
	*wait = (1.0 - r->tokens) / rate;
	return false;
}

static void rt_begin(struct retirement *rt, enum retire_mode mode)
{
	const struct conf *c = *rt->r->conf;

	rt->res.mode = mode;
	rt->start_us = now_mono_us();
	/* the flush and the drain share drain_timeout */
	rt->deadline_us = rt->start_us + (int64_t)c->retire.drain_timeout_ms * 1000;
	rt->dirty0 = dirty_of(rt->r, rt->res.name);
	if (rt->dirty0) {
		retire_step(rt, RT_EV_DIRTY);
		flush_step(rt);
	} else {
		rt_proceed(rt);
	}
}

/* Start what may start: queued retirements, first come first, within the drain
 * places and the rate. The retirements in drain are counted once, not again for
 * each retirement queued behind them (10,000 queued after a reload). */
void retire_kick(struct retire *r)
{
	unsigned draining;
	bool started = true;
	double wait;

	if (r->verifying)
		return; /* verify_cb kicks when it is done */
	draining = count_draining(r);
	while (started) {
		started = false;
		for (struct retirement *j = r->all; j; j = j->next) {
			enum retire_mode mode = j->requested;
			if (j->phase != PH_QUEUED)
				continue;
			if (mode == RETIRE_AUTO) {
				if (r->lru == LRU_UNKNOWN && r->probing)
					continue; /* wait for the verdict */
				mode = r->lru == LRU_YES ? RETIRE_REPARENT : RETIRE_DRAIN;
			}
			if (mode == RETIRE_DRAIN && draining >= DRAIN_PARALLEL)
				continue; /* reclaim competes with the retirements for memory and CPU */
			if (!take_token(r, &wait)) {
				if (!ev_is_active(&r->rate_timer)) {
					ev_timer_set(&r->rate_timer, wait, 0.);
					ev_timer_start(r->loop, &r->rate_timer);
				}
				return;
			}
			rt_begin(j, mode);
			draining += mode == RETIRE_DRAIN;
			started = !r->verifying;
			break; /* j may be finished and freed already: from the head again */
		}
	}
}

static void rate_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	retire_kick(w->data);
}

/* ---- public */

static struct retirement *rt_new(struct retire *r, const char *name, const char *key, retire_done_fn done, void *ud)
{
	struct retirement *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	rt->r = r;
	snprintf(rt->res.name, sizeof(rt->res.name), "%s", name);
	snprintf(rt->res.key, sizeof(rt->res.key), "%s", key ? key : "");
	rt->done = done;
	rt->ud = ud;
	rt->start_us = now_mono_us();
	rt->verify_timeout_ms = (*r->conf)->retire.verify_timeout_ms;
	ev_timer_init(&rt->timer, rt_timer_cb, 0., 0.);
	rt->timer.data = rt;
	*(r->last ? &r->last->next : &r->all) = rt; /* at the end, without a walk (10,000 queued) */
	r->last = rt;
	return rt;
}

int retire_start(struct retire *r, const char *name, const char *key, enum retire_mode mode, retire_done_fn done,
		 void *ud)
{
	struct retirement *rt;

	if (mode == RETIRE_KEEP)
		return -EINVAL;
	rt = rt_new(r, name, key, done, ud);
	if (!rt)
		return -ENOMEM;
	rt->requested = mode;
	log_debug("retire %s (%s): queued, mode %s", name, key && *key ? key : "-", conf_retire_mode_name(mode));
	retire_kick(r);
	return 0;
}

int retire_resume(struct retire *r, const char *name, const char *key, enum retire_mode mode, bool removed,
		  retire_done_fn done, void *ud)
{
	struct retirement *rt;
	struct cg_dying d;
	int e;

	if (!removed) {
		e = retire_start(r, name, key, mode, done, ud);
		r->stats.resumed += e == 0;
		return e;
	}
	if (mode == RETIRE_KEEP)
		return -EINVAL;
	rt = rt_new(r, name, key, done, ud);
	if (!rt)
		return -ENOMEM;
	rt->requested = mode;
	rt->res.mode = mode != RETIRE_AUTO ? mode : r->lru == LRU_YES ? RETIRE_REPARENT : RETIRE_DRAIN;
	/* the baseline: the witness now, less every such group (still dying, as far as we know) */
	if (retire_count_phase(r, PH_VERIFY) == 0 && r->rmdirs == 0 && cg_dying(r->cg, &d) == 0)
		r->base = d.count;
	if (r->base > 0)
		r->base--;
	r->settled_valid = false;
	r->stats.resumed++;
	retire_verify_add(rt, now_mono_us());
	return 0;
}

static struct retirement *rt_named(struct retire *r, const char *name)
{
	for (struct retirement *j = r->all; j; j = j->next)
		if (j->phase != PH_CANCELLED && j->phase != PH_VERIFY && strcmp(j->res.name, name) == 0)
			return j;
	return NULL;
}

int retire_cancel(struct retire *r, const char *name)
{
	struct retirement *rt = rt_named(r, name);
	struct retire_result res;
	retire_done_fn done;
	void *ud;

	if (!rt)
		return -ENOENT;
	if (rt->phase == PH_VERIFY || (rt->phase == PH_RMDIR && rt->write && rt->write->rmdir))
		return -EBUSY;
	ev_timer_stop(r->loop, &rt->timer);
	res = rt->res;
	res.outcome = OUTCOME_CANCELLED;
	res.total_ms = (now_mono_us() - rt->start_us) / 1000;
	done = rt->done;
	ud = rt->ud;
	r->stats.outcomes[OUTCOME_CANCELLED]++;
	log_event(LOG_INFO, &(struct log_fields){ .key = res.key, .slot = res.name, .event = LOG_EV_OUTCOME,
						 .outcome = retire_outcome_name(OUTCOME_CANCELLED) },
		  "retire %s (%s): cancelled after %lld ms, %llu bytes drained", res.name,
		  res.key[0] ? res.key : "-", (long long)res.total_ms, (unsigned long long)res.drained_bytes);
	retire_witness_forget(r, rt);
	if (rt->write) {
		retire_step(rt, RT_EV_CANCEL); /* freed when its reclaim step returns */
	} else {
		rt_unlink(r, rt);
		free(rt);
	}
	if (done)
		done(&res, ud);
	retire_kick(r);
	return 0;
}

void retire_set_lru_reparenting(struct retire *r, enum lru_reparenting v, const char *why)
{
	r->lru = v;
	snprintf(r->lru_why, sizeof(r->lru_why), "%s", why ? why : "");
	retire_kick(r); /* auto retirements waited for this */
}

enum lru_reparenting retire_lru_reparenting(const struct retire *r, const char **why)
{
	if (why)
		*why = r->lru_why;
	return r->lru;
}

bool retire_probing(const struct retire *r)
{
	return r->probing;
}

void retire_set_probing(struct retire *r, bool probing)
{
	r->probing = probing;
}

void retire_get_stats(const struct retire *r, struct retire_stats *out)
{
	*out = r->stats;
	out->in_flight = 0;
	for (const struct retirement *j = r->all; j; j = j->next)
		out->in_flight += j->phase != PH_CANCELLED;
}

int retire_new(struct ev_loop *loop, struct cg *cg, const struct conf *const *conf, struct retire **out)
{
	struct retire *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->loop = loop;
	r->cg = cg;
	r->conf = conf;
	r->tokens = (*conf)->retire.rate;
	r->tokens_us = now_mono_us();
	ev_timer_init(&r->rate_timer, rate_cb, 0., 0.);
	r->rate_timer.data = r;
	ev_timer_init(&r->verify_timer, retire_verify_cb, 0., 0.);
	r->verify_timer.data = r;
	ev_timer_init(&r->gate_timer, gate_cb, 0., 0.);
	r->gate_timer.data = r;
	*out = r;
	return 0;
}

int retire_set_work(struct retire *r, struct work *w)
{
	if (r->writes || r->syncing)
		return -EBUSY;
	r->work = w;
	return 0;
}

/* Retirements still in flight are abandoned: their slots stay as the kernel has
 * them (a slot not yet removed is adopted again at the next start). A write
 * queued on the work pool is dropped, one running is waited for. */
void retire_free(struct retire *r)
{
	if (!r)
		return;
	if (r->writes)
		work_cancel(r->work, write_done, write_ours, r);
	if (r->syncing)
		work_cancel(r->work, sync_done, NULL, NULL);
	if (r->wb_cleaning)
		work_cancel(r->work, retire_wb_cleanup_done, NULL, NULL);
	retire_witness_cancel(r);
	while (r->all) {
		struct retirement *j = r->all;
		r->all = j->next;
		r->last = r->all ? r->last : NULL;
		ev_timer_stop(r->loop, &j->timer);
		free(j->write); /* cancelled above */
		free(j);
	}
	ev_timer_stop(r->loop, &r->rate_timer);
	ev_timer_stop(r->loop, &r->verify_timer);
	ev_timer_stop(r->loop, &r->gate_timer);
	free(r);
}
