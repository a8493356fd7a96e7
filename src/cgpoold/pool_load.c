/* pool_load.c - the pool at start-up: adopt what the cgroup tree and the
 * state say, and reconcile both with what the kernel says now */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pool_internal.h"
#include "state.h"

#define MAX_SLOTS_HARD 65535

static int adopt(struct pool *p, const char *name, unsigned id)
{
	struct slot *s = pool_slot_alloc(p, id);

	if (!s || pool_insert(p, s) < 0) {
		free(s);
		return -ENOMEM;
	}
	if (cg_slot_id(p->cg, name, &s->cgroup_id) < 0)
		s->cgroup_id = 0;
	return 0;
}

/* a slot directory: adopted when it has a run; else kept aside until the
 * state says what it is (a retirement's witness, or an older slot) */
static int adopt_dir(const char *name, void *ud)
{
	struct pool *p = ud;
	unsigned id;
	void *v;

	if (slot_name_id(name, &id) < 0 || id > MAX_SLOTS_HARD * 16UL)
		return 0; /* not a slot of ours */
	if (cg_slot_has_run(p->cg, name)) {
		bool flat;
		int r = cg_slot_nest(p->cg, name, &flat);
		if (r < 0)
			log_warn("slot %s: its run does not get every controller managed now: %s", name, strerror(-r));
		return adopt(p, name, id);
	}
	v = realloc(p->bare, (p->nbare + 1) * sizeof(*p->bare));
	if (!v)
		return -ENOMEM;
	p->bare = v;
	snprintf(p->bare[p->nbare++], SLOT_NAME_MAX, "%s", name);
	return 0;
}

/* name is a bare directory not claimed yet: claimed now (true) */
static bool bare_claim(struct pool *p, const char *name)
{
	for (size_t i = 0; i < p->nbare; i++)
		if (p->bare[i][0] && strcmp(p->bare[i], name) == 0) {
			p->bare[i][0] = '\0';
			return true;
		}
	return false;
}

/* A slot directory without a run: nested (its processes into a run of its
 * own) and adopted, to be retired once empty. False when it is no bare
 * directory, or cannot be nested. */
static bool adopt_bare(struct pool *p, const char *bare)
{
	char name[SLOT_NAME_MAX];
	bool flat = false;
	unsigned id;
	struct slot *s;
	int r;

	snprintf(name, sizeof(name), "%s", bare); /* bare may be the entry claimed below */
	if (slot_name_id(name, &id) < 0 || !bare_claim(p, name))
		return false;
	r = cg_slot_nest(p->cg, name, &flat);
	if (r == 0)
		r = adopt(p, name, id);
	if (r < 0) {
		log_err("slot %s: has no run and cannot be given one: %s; left alone", name, strerror(-r));
		return false;
	}
	s = pool_find_name(p, name);
	if (s)
		s->legacy = true;
	log_notice("slot %s: its processes moved into %s/%s (a slot made by an older cgpoold, or left half "
		   "made); it is retired once empty", name, name, CG_PLACE_RUN);
	return s != NULL;
}

/* A transition at start-up decided by the table: the restore rows carry no
 * actions, and nothing is recorded before the snapshot pool_new writes. */
static void restore_step(struct slot *s, enum slot_event ev)
{
	enum slot_state next;
	unsigned act;

	if (slot_step(s->state, ev, 1, &next, &act) == 0)
		pool_set_state(s, next);
}

/* a retirement whose rmdir was done when the last daemon died: verified again */
static void note_removed(struct pool *p, const struct slot *saved)
{
	struct slot **v = realloc(p->removed, (p->nremoved + 1) * sizeof(*v));
	struct slot *ghost = v ? pool_slot_alloc(p, saved->id) : NULL;

	if (v)
		p->removed = v;
	if (!ghost) {
		log_err("retire %s (%s): removed before the restart; cannot verify it again: %s", saved->name,
			saved->key[0] ? saved->key : "-", strerror(ENOMEM));
		return;
	}
	snprintf(ghost->key, sizeof(ghost->key), "%s", saved->key); /* not in the key map: the key is free */
	ghost->state = SLOT_RETIRING;
	p->removed[p->nremoved++] = ghost;
}

static void restore_one(struct pool *p, const struct slot *saved)
{
	struct slot *s = pool_find_name(p, saved->name);

	if (!s && saved->state == SLOT_RETIRING) {
		note_removed(p, saved);
		bare_claim(p, saved->name); /* its directory, when there, is its run's witness */
		return;
	}
	if (!s && adopt_bare(p, saved->name))
		s = pool_find_name(p, saved->name);
	if (!s) {
		log_warn("slot %s (%s): in the state file but gone from the cgroup tree; forgotten", saved->name,
			 saved->key[0] ? saved->key : "-");
		return;
	}
	if (saved->key[0] && pool_find(p, saved->key)) {
		log_warn("slot %s: key %s is bound to %s already in the state file; not restored", saved->name,
			 saved->key, pool_find(p, saved->key)->name);
		return;
	}
	if (pool_slot_set_key(s, saved->key) < 0)
		return;
	memcpy(s->class_name, saved->class_name, sizeof(s->class_name));
	memcpy(s->recent, saved->recent, sizeof(s->recent));
	s->runs = saved->runs;
	s->nrecent = saved->nrecent;
	s->idle_since_us = saved->idle_since_us;
	s->used_us = saved->idle_since_us;
	s->owner_uid = saved->owner_uid;
	s->released = saved->released;
	s->run_limits = saved->run_limits;
	pool_tenant_move(s, (struct slot *)saved);
	s->resume_retire = saved->state == SLOT_RETIRING;
	if (s->key[0])
		restore_step(s, saved->state == SLOT_RUNNING ? SLOT_EV_RESTORE_RUNNING : SLOT_EV_RESTORE_IDLE);
	if (saved->cgroup_id && s->cgroup_id != saved->cgroup_id)
		log_warn("slot %s: cgroup id changed from %llu to %llu (recreated while we were down)", s->name,
			 (unsigned long long)saved->cgroup_id, (unsigned long long)s->cgroup_id);
}

/* After a restart: runs that ended or began while the daemon was down. A
 * slot that holds processes is never left warm: without a key from the
 * state file it is bound to an orphan key (the table's warm + populated). */
void pool_reconcile(struct pool *p)
{
	for (size_t i = 0; i < p->nslots; i++) {
		struct slot *s = p->slots[i];
		bool populated = false;
		int r;

		pool_slot_watch(p, s);
		r = cg_slot_populated(p->cg, s->name, &populated);
		if (r < 0 && s->state == SLOT_WARM) {
			/* a warm slot is handed out only when known to be empty */
			populated = pool_slot_has_procs(s);
			r = 0;
		}
		if (r < 0) {
			/* unknown is not empty: keep what the state file says, read again */
			log_warn("slot %s: read population: %s; kept %s", s->name, strerror(-r),
				 slot_state_name(s->state));
			ev_timer_start(p->loop, &p->poll_timer);
			populated = s->state == SLOT_RUNNING;
		}
		if (populated)
			s->resume_retire = false; /* somebody runs there again: not removed under them */
		if (s->state == SLOT_IDLE && !populated) {
			int64_t left_us = s->idle_since_us + (int64_t)p->conf->pool.idle_timeout_ms * 1000 -
					  now_real_us();
			pool_idle_timer(s, left_us / 1e6);
			continue;
		}
		pool_slot_event(s, populated ? SLOT_EV_POPULATED : SLOT_EV_EMPTY);
	}
	for (size_t i = 0; i < p->nslots; i++)
		pool_tenant_resume(p->slots[i]);
}

static int restore(struct pool *p)
{
	struct slot **saved = NULL;
	size_t nsaved = 0;
	unsigned next_id = 0;
	int r;

	r = state_open(p->loop, p->conf->daemon.state_dir, cg_get_info(p->cg)->root, &p->state);
	if (r < 0) {
		log_err("state: cannot open %s: %s", p->conf->daemon.state_dir, strerror(-r));
		return r;
	}
	r = state_load(p->state, &next_id, &saved, &nsaved);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		log_warn("state: %s/state.json unusable (%s); keys are forgotten, slots that hold processes "
			 "stay bound to orphan keys until they empty",
			 p->conf->daemon.state_dir, strerror(-r));
		return 0;
	}
	for (size_t i = 0; i < nsaved; i++) {
		restore_one(p, saved[i]);
		pool_tenant_free(saved[i]);
		free(saved[i]);
	}
	free(saved);
	if (next_id > p->next_id)
		p->next_id = next_id;
	return 0;
}

int pool_load(struct pool *p)
{
	int r;

	p->loading = true; /* the lists are sorted once, at the end */
	r = cg_slot_list(p->cg, SLOT_PREFIX, adopt_dir, p);
	if (r == 0)
		r = restore(p);
	/* the bare directories the state did not name */
	for (size_t i = 0; r == 0 && i < p->nbare; i++)
		if (p->bare[i][0])
			adopt_bare(p, p->bare[i]);
	free(p->bare);
	p->bare = NULL;
	p->nbare = 0;
	p->loading = false;
	pool_lists_sort(p);
	return r;
}

