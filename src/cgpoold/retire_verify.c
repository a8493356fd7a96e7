/* retire_verify.c - proving what a removal did: the witness (dying memory
 * cgroups below the pool root) read with backoff, verdicts handed out in
 * order of least LRU, and the writeback clean-up for groups held by an
 * inode's writeback rather than by pages */
#include "config.h"

#include "retire_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "work.h"

/* ---- verification: the witness counts our removed groups that still exist */

uint64_t retire_lru_of(struct retire *r, const char *name, uint64_t *current)
{
	struct cg_memory m;

	if (cg_slot_memory(r->cg, name, &m) < 0) {
		if (current)
			*current = UINT64_MAX;
		return 0;
	}
	if (current)
		*current = m.current;
	return m.file + m.anon;
}

static enum retire_outcome freed_outcome(const struct retirement *rt)
{
	if (rt->drained_any)
		return OUTCOME_DRAINED;
	return rt->res.lru_bytes ? OUTCOME_REPARENTED : OUTCOME_RELEASED;
}

/* a group held by its pages where the probe found the kernel keeping such
 * groups: never judged freed by a count (v1: by the root's own counters
 * alone, with the probe's yes) */
static bool held_by_pages(const struct retire *r, const struct retirement *j)
{
	return j->res.lru_bytes && (j->has_local || r->lru == LRU_NO);
}

/* what a verdict of this reading rests on */
static void evidence(struct retirement *j, const struct cg_dying *d, uint64_t base, unsigned n)
{
	const struct retire *r = j->r;
	char why[128] = "";

	if (held_by_pages(r, j))
		snprintf(why, sizeof(why), "; it held %llu bytes of LRU at removal%s", (unsigned long long)j->res.lru_bytes,
			 r->lru == LRU_NO ? ", on a kernel the probe found keeping such groups" : "");
	snprintf(j->res.evidence, sizeof(j->res.evidence), "%s: %llu dying, %llu at the baseline, %u of ours in flight%s",
		 d->source ? d->source : "witness unreadable", (unsigned long long)d->count, (unsigned long long)base, n,
		 why);
}

/* the verifying retirement that most likely went first: least LRU, removed first */
static struct retirement *likeliest_freed(struct retire *r)
{
	struct retirement *best = NULL;

	for (struct retirement *j = r->all; j; j = j->next) {
		if (j->phase != PH_VERIFY || !j->counted)
			continue;
		if (held_by_pages(r, j))
			continue; /* v1: judged by its parent's counters, not the noisy machine-wide count;
				   * where the probe found the kernel keeping such a group while its pages
				   * live, a count that falls (somebody else's group freed) does not free it */
		if (!best || j->res.lru_bytes < best->res.lru_bytes ||
		    (j->res.lru_bytes == best->res.lru_bytes && j->rmdir_us < best->rmdir_us))
			best = j;
	}
	return best;
}

/* v1: a group whose pages showed up in the root's local counters was freed
 * by reparenting, whatever the machine-wide count says; but only on a kernel
 * the probe found reparenting (its own place says so, where nothing else
 * runs): anything running in the pool root moves those counters too */
static struct retirement *reparented_v1(struct retire *r)
{
	uint64_t now;

	if (r->lru != LRU_YES)
		return NULL;
	for (struct retirement *j = r->all; j; j = j->next) {
		if (j->phase != PH_VERIFY || !j->counted || !j->has_local || !j->res.lru_bytes)
			continue;
		if (cg_root_local_lru(r->cg, &now) == 0 && now >= j->parent_local + j->res.lru_bytes / 2) {
			snprintf(j->res.evidence, sizeof(j->res.evidence),
				 "the pool root's own cache + rss went from %llu to %llu bytes after the removal of a group "
				 "holding %llu, on a kernel the probe found reparenting", (unsigned long long)j->parent_local,
				 (unsigned long long)now, (unsigned long long)j->res.lru_bytes);
			return j;
		}
	}
	return NULL;
}

static struct retirement *first_expired(struct retire *r, int64_t now)
{
	for (struct retirement *j = r->all; j; j = j->next)
		if (j->phase == PH_VERIFY && j->counted && now >= j->deadline_us)
			return j;
	return NULL;
}

/* A removed group can be held by the kernel's writeback structures rather
 * than by pages: an inode whose writeback the group owned (often the
 * filesystem's metadata, the block device's inode) leaves the group only
 * while clean, and only when the clean-up that runs at every memcg offline
 * gets to it. On a quiet machine that is the next removal, whenever it
 * comes. So a group still dying WB_CLEANUP_AFTER_S after its rmdir gets one
 * clean-up: sync(2), then an empty memcg of our own taken offline (v2). */
static int wb_cleanup_fn(void *arg)
{
	struct retire *r = arg;

	return cg_writeback_cleanup(r->cg);
}

void retire_wb_cleanup_done(int e, void *arg)
{
	struct retire *r = arg;

	r->wb_cleaning = false;
	if (e < 0)
		log_warn("retire: writeback clean-up (%s below the pool root): %s", CG_WB_CLEANUP_NAME,
			 strerror(-e));
	if (retire_count_phase(r, PH_VERIFY) == 0)
		return;
	r->backoff = VERIFY_FIRST_S; /* what it freed shows soon */
	ev_timer_stop(r->loop, &r->verify_timer);
	ev_timer_set(&r->verify_timer, VERIFY_FIRST_S, 0.);
	ev_timer_start(r->loop, &r->verify_timer);
}

static void maybe_wb_cleanup(struct retire *r, int64_t now)
{
	unsigned due = 0;

	if (!cg_get_info(r->cg)->memory_v2 || r->wb_cleaning ||
	    (r->wb_clean_us && now - r->wb_clean_us < (int64_t)(WB_CLEANUP_GAP_S * 1e6)))
		return;
	for (struct retirement *j = r->all; j; j = j->next) {
		int64_t after = (int64_t)(WB_CLEANUP_AFTER_S * 1e6), quarter = (int64_t)j->verify_timeout_ms * 250;

		if (quarter < after)
			after = quarter;
		if (j->phase == PH_VERIFY && !j->wb_cleaned && now - j->rmdir_us >= after) {
			j->wb_cleaned = true;
			due++;
		}
	}
	if (!due)
		return;
	log_info("retire: %u removed group%s still dying: writing back dirty data and running the kernel's "
		 "writeback clean-up", due, due == 1 ? "" : "s");
	r->wb_clean_us = now;
	r->wb_cleaning = r->work && work_submit(r->work, wb_cleanup_fn, retire_wb_cleanup_done, r) == 0;
	if (!r->wb_cleaning) /* no work pool (tests), or a full queue: here */
		retire_wb_cleanup_done(wb_cleanup_fn(r), r);
}

/* the retirements verifying now are the ones the reading about to begin
 * judges, but those with a witness of their own */
static void mark_counted(struct retire *r)
{
	for (struct retirement *j = r->all; j; j = j->next)
		j->counted = j->phase == PH_VERIFY && !j->own;
}

/* A removed run judged by its own witness, the slot's directory, where
 * nothing else lives: on v2 its dying count is the run's alone, on v1 what
 * is charged below it is the run's. True when a verdict is given (the
 * witness removed, the retirement finished). */
static bool judge_own(struct retirement *j, int64_t now)
{
	struct retire *r = j->r;
	struct cg_place pl;
	uint64_t below, held;
	bool gone;
	enum retire_outcome o;
	int e = cg_slot_witness(r->cg, j->res.name, &pl);

	if (e == -ENOENT) {
		j->own = false; /* its directory went with it: the shared count judges it */
		return false;
	}
	if (e < 0) {
		if (now < j->deadline_us)
			return false;
		snprintf(j->res.evidence, sizeof(j->res.evidence), "its directory %s could not be read: %s",
			 j->res.name, strerror(-e));
		j->res.attributed = false;
		retire_finish(j, OUTCOME_PINNED);
		return true;
	}
	if (pl.has_dying) {
		below = pl.dying;
		gone = pl.dying == 0;
		held = pl.charged;
	} else {
		below = pl.lru_below;
		gone = below == 0;
		held = pl.local;
	}
	held = held > j->dir_own ? held - j->dir_own : 0; /* what the run's removal moved there */
	if (!gone && now < j->deadline_us)
		return false;
	if (!gone)
		o = OUTCOME_PINNED;
	else if (j->drained_any)
		o = OUTCOME_DRAINED;
	else if (j->res.lru_bytes && held >= j->res.lru_bytes / 2)
		o = OUTCOME_REPARENTED;
	else
		o = OUTCOME_RELEASED; /* it held none, or they were reclaimed after its removal */
	if (pl.has_dying)
		snprintf(j->res.evidence, sizeof(j->res.evidence),
			 "its own directory %s (nothing else in it): %llu dying below it, %llu bytes moved to it; "
			 "%llu bytes of LRU at removal", j->res.name, (unsigned long long)below,
			 (unsigned long long)held, (unsigned long long)j->res.lru_bytes);
	else
		snprintf(j->res.evidence, sizeof(j->res.evidence),
			 "its own directory %s (nothing else in it): %llu bytes of LRU still charged to the removed "
			 "run, %llu moved to the directory itself; %llu bytes of LRU at removal", j->res.name,
			 (unsigned long long)below, (unsigned long long)held, (unsigned long long)j->res.lru_bytes);
	e = cg_slot_remove(r->cg, j->res.name);
	if (e < 0 && e != -ENOENT)
		log_warn("retire %s (%s): rmdir of its directory: %s", j->res.name, j->res.key, strerror(-e));
	j->res.attributed = true;
	retire_finish(j, o);
	return true;
}

/* every retirement with a witness of its own that has its verdict now; the
 * number still waiting for one */
static unsigned judge_all_own(struct retire *r, int64_t now)
{
	unsigned waiting = 0;
	struct retirement *j, *next;

	for (j = r->all; j; j = next) {
		next = j->next; /* retire_finish frees j */
		if (j->phase == PH_VERIFY && j->own && !judge_own(j, now))
			waiting += j->own;
	}
	return waiting;
}

static unsigned count_counted(const struct retire *r)
{
	unsigned n = 0;

	for (const struct retirement *j = r->all; j; j = j->next)
		n += j->phase == PH_VERIFY && j->counted;
	return n;
}

static void verify_later(struct retire *r, double after)
{
	ev_timer_stop(r->loop, &r->verify_timer);
	ev_timer_set(&r->verify_timer, after, 0.);
	ev_timer_start(r->loop, &r->verify_timer);
}

/* some are still waiting: the next look, backing off */
static void verify_backoff(struct retire *r)
{
	r->backoff = r->backoff * 1.5 > VERIFY_MAX_S ? VERIFY_MAX_S : r->backoff * 1.5;
	verify_later(r, r->backoff);
}

/* The verdicts a reading allows for the retirements it judges (counted). clean: no
 * rmdir was in flight while it was read, so every group of ours it counts
 * is one of those. */
static void verify_with(struct retire *r, int e, struct cg_dying d, bool clean)
{
	unsigned n, dying, own;
	struct retirement *j;
	int64_t now = now_mono_us();

	r->verifying = true;
	own = judge_all_own(r, now);
	r->verifying = false;
	n = count_counted(r);
	const unsigned n0 = n;

	if (n == 0) {
		/* only retirements with a witness of their own wait */
		if (own) {
			maybe_wb_cleanup(r, now);
			verify_backoff(r);
		}
		retire_kick(r); /* what a verdict's callback could not start */
		return;
	}
	if (e < 0) {
		d.count = r->base + n; /* unreadable: nothing proven freed */
		d.source = NULL;
	}
	r->settled_valid = false;
	r->stats.dying = d.count;
	log_debug("verify: %u removed groups in flight, witness %llu, baseline %llu", n,
		  (unsigned long long)d.count, (unsigned long long)r->base);
	dying = d.count > r->base ? (unsigned)(d.count - r->base) : 0;
	if (dying > n)
		dying = n; /* somebody else's cgroups died too */
	/* job_finish calls back, and a callback may start a retirement: its
	 * rmdir comes after this reading, so it must not be counted in it */
	r->verifying = true;
	while ((j = reparented_v1(r)) != NULL) {
		j->res.attributed = true;
		retire_finish(j, freed_outcome(j));
		n--;
		dying = dying > n ? n : dying;
	}
	/* n - dying of ours are gone; which ones is certain only when all are */
	for (unsigned freed = n - dying; freed > 0 && (j = likeliest_freed(r)) != NULL; freed--) {
		j->res.attributed = dying == 0 || n == 1;
		evidence(j, &d, r->base, n0);
		retire_finish(j, freed_outcome(j));
		n--;
	}
	/* a removal in flight may be counted already: "every one left is still
	 * dying" is proven only without one (freed verdicts above only get
	 * fewer from it) */
	while (clean && (j = first_expired(r, now)) != NULL) {
		/* every one of ours left is still dying, or it is held by its pages
		 * and the count does not say otherwise */
		j->res.attributed = dying >= n;
		evidence(j, &d, r->base, n0);
		r->base++; /* it stays in the count */
		retire_finish(j, OUTCOME_PINNED);
		n--;
	}
	r->verifying = false;
	if (n + own > 0)
		maybe_wb_cleanup(r, now);
	if (n + own > 0) {
		verify_backoff(r);
	} else if (retire_count_phase(r, PH_VERIFY) > 0) {
		verify_later(r, VERIFY_FIRST_S); /* removed while it was read: a reading of their own */
	} else {
		r->settled = d.count;
		r->settled_valid = clean;
	}
	retire_kick(r); /* what job_finish could not start */
}

/* a retirement without a witness of its own is being verified */
static bool shared_due(const struct retire *r)
{
	for (const struct retirement *j = r->all; j; j = j->next)
		if (j->phase == PH_VERIFY && !j->own)
			return true;
	return false;
}

void retire_verify_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct retire *r = w->data;
	struct cg_dying d;
	int e;

	if (retire_count_phase(r, PH_VERIFY) == 0) {
		r->verify_due = false;
		return;
	}
	/* after a baseline's reading, and once the rmdirs in flight are back
	 * (none begins meanwhile): every group of ours the reading counts is
	 * then one it judges */
	if (!shared_due(r)) {
		/* each one has a witness of its own: read here, no shared count */
		r->verify_due = false;
		verify_with(r, 0, (struct cg_dying){ 0 }, true);
		return;
	}
	r->verify_due = true;
	if (r->wit || r->rmdirs) {
		verify_later(r, WITNESS_WAIT_S);
		return;
	}
	mark_counted(r);
	r->read_us = now_mono_us();
	if (r->work && retire_witness_submit(r, NULL) == 0)
		return; /* witness_done goes on */
	e = cg_dying(r->cg, &d);
	r->verify_due = false;
	verify_with(r, e, d, r->rmdirs == 0);
}

/* ---- the witness read on the work pool */

struct witness_read {
	struct retire *r;
	struct cg *cg;
	struct retirement *rt;     /* the baseline's retirement; NULL: the verification's, or its retirement went */
	bool baseline;
	bool clean;          /* no rmdir in flight when it began */
	uint64_t rmdir_starts;
	struct cg_dying d;
};

/* on a worker: cg_dying reads only files and what cg_open set */
static int witness_fn(void *arg)
{
	struct witness_read *w = arg;

	return cg_dying(w->cg, &w->d);
}

static void witness_done(int e, void *arg)
{
	struct witness_read *w = arg;
	struct retire *r = w->r;
	struct witness_read copy = *w;
	bool clean = w->clean && r->rmdir_starts == w->rmdir_starts;

	r->wit = NULL;
	free(w);
	if (!copy.baseline) {
		r->verify_due = false;
		verify_with(r, e, copy.d, clean);
	} else if (copy.rt) {
		retire_baseline_read(copy.rt, e, &copy.d, clean);
	}
	retire_wake_gated(r);
}

int retire_witness_submit(struct retire *r, struct retirement *rt)
{
	struct witness_read *w;
	int e;

	if (r->wit)
		return -EBUSY;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct witness_read){ .r = r, .cg = r->cg, .rt = rt, .baseline = rt != NULL,
				    .clean = r->rmdirs == 0, .rmdir_starts = r->rmdir_starts };
	e = work_submit(r->work, witness_fn, witness_done, w);
	if (e < 0) {
		free(w);
		return e;
	}
	r->wit = w;
	return 0;
}

bool retire_witness_for(const struct retire *r, const struct retirement *rt)
{
	return r->wit && r->wit->rt == rt;
}

void retire_witness_forget(struct retire *r, const struct retirement *rt)
{
	if (retire_witness_for(r, rt))
		r->wit->rt = NULL;
}

static bool witness_ours(void *arg, void *ud)
{
	return ((struct witness_read *)arg)->r == ud;
}

void retire_witness_cancel(struct retire *r)
{
	if (!r->wit)
		return;
	work_cancel(r->work, witness_done, witness_ours, r);
	free(r->wit); /* not run, or run and its result dropped */
	r->wit = NULL;
}

/* removed at rmdir_us (when the rmdir returned) */
void retire_verify_add(struct retirement *rt, int64_t rmdir_us)
{
	struct retire *r = rt->r;

	retire_step(rt, RT_EV_REMOVED);
	if (!rt->own) {
		/* resumed after a restart: its directory, when there, is its witness */
		struct cg_place pl;
		rt->own = cg_slot_witness(r->cg, rt->res.name, &pl) == 0;
	}
	rt->rmdir_us = rmdir_us;
	rt->deadline_us = rt->rmdir_us + (int64_t)rt->verify_timeout_ms * 1000;
	/* the first look within VERIFY_FIRST_S, but at most one reading each
	 * VERIFY_GAP_S (on v1 a reading walks the whole memory hierarchy), and
	 * a look due sooner stays: removals that keep coming (one per worker
	 * completion) must not push the reading back for good */
	double since = (rmdir_us - r->read_us) / 1e6, due = VERIFY_FIRST_S;
	if (since >= 0 && since < VERIFY_GAP_S && VERIFY_GAP_S - since > due)
		due = VERIFY_GAP_S - since;
	if (ev_is_active(&r->verify_timer) && ev_timer_remaining(r->loop, &r->verify_timer) <= due)
		return;
	r->backoff = VERIFY_FIRST_S;
	ev_timer_stop(r->loop, &r->verify_timer);
	ev_timer_set(&r->verify_timer, due, 0.);
	ev_timer_start(r->loop, &r->verify_timer);
}

