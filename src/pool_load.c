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

static int adopt_dir(const char *name, void *ud)
{
	struct pool *p = ud;
	char *end;
	unsigned long id = strtoul(name + strlen(SLOT_PREFIX), &end, 10);
	struct slot *s;

	if (*end || end == name + strlen(SLOT_PREFIX) || id > MAX_SLOTS_HARD * 16UL)
		return 0; /* not a slot of ours */
	s = pool_slot_alloc(p, (unsigned)id);
	if (!s || pool_insert(p, s) < 0) {
		free(s);
		return -ENOMEM;
	}
	if (cg_slot_id(p->cg, name, &s->cgroup_id) < 0)
		s->cgroup_id = 0;
	return 0;
}

static void restore_one(struct pool *p, const struct slot *saved)
{
	struct slot *s = pool_find_name(p, saved->name);

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
	pool_set_state(s, saved->state);
	if (saved->cgroup_id && s->cgroup_id != saved->cgroup_id)
		log_warn("slot %s: cgroup id changed from %llu to %llu (recreated while we were down)", s->name,
			 (unsigned long long)saved->cgroup_id, (unsigned long long)s->cgroup_id);
}

/* After a restart: runs that ended or began while the daemon was down. */
void pool_reconcile(struct pool *p)
{
	for (size_t i = 0; i < p->nslots; i++) {
		struct slot *s = p->slots[i];
		bool populated = false;
		int r;

		pool_slot_watch(p, s);
		r = cg_slot_populated(p->cg, s->name, &populated);
		if (s->state == SLOT_RETIRING || (!s->key[0] && s->state != SLOT_WARM))
			pool_set_state(s, s->key[0] ? SLOT_IDLE : SLOT_WARM);
		if (r < 0) {
			/* unknown is not empty: keep what the state file says, read again */
			log_warn("slot %s: read population: %s; kept %s", s->name, strerror(-r),
				 slot_state_name(s->state));
			ev_timer_start(p->loop, &p->poll_timer);
			populated = s->state == SLOT_RUNNING;
		}
		if (s->state == SLOT_WARM && populated)
			log_warn("slot %s: warm but holds processes it was not given", s->name);
		if (s->state == SLOT_IDLE && !populated) {
			int64_t left_us = s->idle_since_us + (int64_t)p->conf->pool.idle_timeout_ms * 1000 -
					  now_real_us();
			pool_idle_timer(s, left_us / 1e6);
			continue;
		}
		pool_slot_event(s, populated ? SLOT_EV_POPULATED : SLOT_EV_EMPTY);
	}
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
		log_warn("state: %s/state.json unusable (%s); keys are forgotten, slots kept as warm",
			 p->conf->daemon.state_dir, strerror(-r));
		return 0;
	}
	for (size_t i = 0; i < nsaved; i++) {
		restore_one(p, saved[i]);
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
	p->loading = false;
	pool_lists_sort(p);
	return r;
}

