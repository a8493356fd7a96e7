/* pool_attach.c - requests to the pool: Attach (bind a key to its slot or a
 * warm one, move processes in), Release, the run bookkeeping a supervised
 * job asks for, and the per-user usage that authorization reads. */
#include "config.h"

#include "pool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "pool_internal.h"
#include "res.h"

/* ---- requests */

static int pids_exist(const pid_t *pids, size_t n, pid_t *bad)
{
	for (size_t i = 0; i < n; i++) {
		if (pids[i] <= 0 || (kill(pids[i], 0) < 0 && errno == ESRCH)) {
			*bad = pids[i];
			return -ESRCH;
		}
	}
	return 0;
}

static int slot_bind(struct slot *s, const char *key, const struct conf_class *cls, uid_t owner)
{
	if (pool_slot_set_key(s, key) < 0)
		return -ENOMEM;
	snprintf(s->class_name, sizeof(s->class_name), "%s", cls ? cls->name : "");
	s->owner_uid = owner;
	s->runs = 0;
	s->nrecent = 0;
	log_event(LOG_INFO, &(struct log_fields){ .key = key, .slot = s->name, .event = LOG_EV_BIND },
		  "slot %s: bound to key %s%s%s, owner uid %u", s->name, key, cls ? ", class " : "",
		  cls ? cls->name : "", (unsigned)owner);
	return 0;
}

/* The key's slot the plan found, else a warm one (created if none is ready)
 * bound to the key now. */
static int slot_take(struct pool *p, const struct attach_req *req, const struct attach_plan *plan,
		     struct slot **out, bool *fresh)
{
	struct slot *s = plan->slot;
	int r;

	*fresh = false;
	if (s && s->legacy) {
		/* an older cgpoold's slot serves no new run: its directory's limits would bound it */
		if (s->state == SLOT_RUNNING && !plan->procs)
			pool_slot_event(s, SLOT_EV_EMPTY);
		pool_retire_legacy(s);
		if (s->state == SLOT_RETIRING)
			s = NULL;
	}
	if (s && s->state == SLOT_RETIRING && pool_unretire(p, s) < 0)
		s = NULL; /* being removed: a new slot at once */
	if (s) {
		*out = s;
		return 0;
	}
	s = pool_take_warm(p);
	if (!s) {
		r = pool_grow(p, &s);
		if (r < 0)
			return r;
	}
	r = slot_bind(s, req->key, plan->cls, req->owner);
	if (r < 0)
		return r;
	*fresh = true;
	*out = s;
	return 0;
}

void pool_usage(const struct pool *p, uid_t uid, unsigned *of_uid, unsigned *in_use)
{
	unsigned n = 0;

	for (size_t i = 0; i < p->nslots; i++)
		n += p->slots[i]->key[0] && p->slots[i]->owner_uid == uid;
	*of_uid = n;
	*in_use = (unsigned)p->nslots - p->counts[SLOT_WARM];
}

int pool_attach(struct pool *p, const char *key, const char *class_name, const pid_t *pids, size_t npids,
		struct slot **out, pid_t *bad_pid)
{
	return pool_attach_owned(p, key, class_name, 0, pids, npids, out, bad_pid);
}

int pool_attach_owned(struct pool *p, const char *key, const char *class_name, uid_t owner, const pid_t *pids,
		      size_t npids, struct slot **out, pid_t *bad_pid)
{
	struct attach_req req = { key, class_name, owner, pids, npids, NULL, 0, NULL, 0, false, NULL };

	return pool_attach_req(p, &req, out, bad_pid);
}

/* The value an Attach's limit l gets: a job's step that attaches to the
 * run of its job denies only the devices the run denies already, so a
 * step given fewer devices than its job (Slurm's srun --gres inside a
 * batch job) takes none away from the rest of the job in the slot. */
static const char *limit_value(const struct slot *s, const struct attach_req *req, const struct conf_res *l,
			       char *buf, size_t len)
{
	const char *had = strcmp(l->name, "devices.deny") == 0 ? pool_tenant_devices(s, req->job) : NULL;

	if (had && conf_devices_common(had, l->value, buf, len) == 0)
		return buf;
	return l->value;
}

int pool_run_limits_write(struct slot *s, const struct conf_res *const *limits, const char *const *values, size_t n,
			  size_t *refused)
{
	struct cg_res_saved saved[CONF_MAX_RES];
	size_t i, nsaved = 0;
	int r = 0;

	for (i = 0; i < n && i < CONF_MAX_RES; i++) {
		r = cg_slot_res_save(s->pool->cg, s->name, limits[i]->name, &saved[i]);
		if (r == 0) {
			nsaved = i + 1; /* a refused write may have changed one of its files */
			r = cg_slot_set(s->pool->cg, s->name, limits[i]->name, values[i]);
		}
		if (r < 0) {
			log_warn("slot %s (%s): limit %s = %s: %s", s->name, s->key, limits[i]->name, values[i],
				 strerror(-r));
			if (refused)
				*refused = i;
			break;
		}
	}
	if (r == 0) {
		for (i = 0; i < n; i++)
			s->run_limits |= (uint16_t)res_bit(limits[i]->name);
		return 0;
	}
	for (i = nsaved; i-- > 0;)
		if (cg_slot_res_restore(s->pool->cg, s->name, &saved[i]) < 0)
			log_warn("slot %s (%s): limit %s: the value before this call not restored", s->name, s->key,
				 limits[i]->name);
	return r;
}

/* The run's own limits, after the settings of its class and key. A value
 * the kernel refuses fails the Attach before any process moves, and the
 * values this Attach wrote before it are put back: a running run keeps
 * the limits it had. devices.deny, which is not read back, goes last: only
 * its own failure can follow it, and then the slot keeps the filter it had.
 * devices (out) is the devices.deny written, when *devset. */
static int apply_run_limits(struct slot *s, const struct attach_req *req, char *devices, size_t devlen, bool *devset)
{
	const struct conf_res *order[CONF_MAX_RES];
	const char *values[CONF_MAX_RES] = { NULL };
	char bufs[CONF_MAX_RES][sizeof(req->limits->value)];
	size_t i, n = 0, refused = 0;
	int r;

	*devset = false;
	for (i = 0; i < req->nlimits && n < CONF_MAX_RES; i++)
		if (strcmp(req->limits[i].name, "devices.deny") != 0)
			order[n++] = &req->limits[i];
	for (i = 0; i < req->nlimits && n < CONF_MAX_RES; i++)
		if (strcmp(req->limits[i].name, "devices.deny") == 0)
			order[n++] = &req->limits[i];
	for (i = 0; i < n; i++)
		values[i] = limit_value(s, req, order[i], bufs[i], sizeof(bufs[i]));
	r = pool_run_limits_write(s, order, values, n, &refused);
	if (r < 0) {
		if (req->refused)
			*req->refused = order[refused];
		if (req->nlimits > 1 || s->state == SLOT_RUNNING)
			log_info("slot %s (%s): the limits of the run are as before the attach", s->name, s->key);
		return r;
	}
	for (i = 0; i < n; i++) {
		if (values[i] != order[i]->value)
			log_info("slot %s (%s): limit %s = %s for this run (what job %s's run and this attach both deny)",
				 s->name, s->key, order[i]->name, *values[i] ? values[i] : "(none)", req->job);
		else
			log_info("slot %s (%s): limit %s = %s for this run", s->name, s->key, order[i]->name, values[i]);
		if (strcmp(order[i]->name, "devices.deny") == 0) {
			snprintf(devices, devlen, "%s", values[i]);
			*devset = true;
		}
	}
	return 0;
}

void pool_attach_plan(struct pool *p, const struct attach_req *req, pid_t caller, struct attach_plan *plan)
{
	struct slot *s = pool_find(p, req->key);
	char from[SLOT_NAME_MAX];

	*plan = (struct attach_plan){ .slot = s };
	if (req->class_name) {
		plan->named = conf_class_by_name(p->conf, req->class_name);
		if (!plan->named)
			plan->refused = -ENOENT;
	}
	if (s)
		plan->cls = s->class_name[0] ? conf_class_by_name(p->conf, s->class_name) : NULL;
	else
		plan->cls = req->class_name ? plan->named : conf_class_for_key(p->conf, req->key);
	if (caller > 0 && cg_pid_slot(p->cg, caller, from, sizeof(from)) == 0)
		plan->from = pool_find_name(p, from);
	if (!s)
		return;
	/* a run that ended a moment ago, before its event reached us (the
	 * populated flag can lag the exit of the last process: trust an empty
	 * cgroup.procs too) */
	plan->procs = (s->state == SLOT_RUNNING || pool_tenant_ending(s)) && pool_slot_has_procs(s);
	if (plan->refused == 0)
		plan->refused = pool_tenant_verdict(s, req->job, plan->procs);
}

int pool_attach_req(struct pool *p, const struct attach_req *req, struct slot **out, pid_t *bad_pid)
{
	struct attach_plan plan;

	pool_attach_plan(p, req, 0, &plan);
	return pool_attach_apply(p, req, &plan, out, bad_pid);
}

int pool_attach_apply(struct pool *p, const struct attach_req *req, const struct attach_plan *plan,
		      struct slot **out, pid_t *bad_pid)
{
	const char *key = req->key;
	const pid_t *pids = req->pids;
	size_t npids = req->npids;
	struct slot *s;
	struct slot_tr t = { .act = 0 };
	size_t moved = 0;
	bool fresh;
	char devices[sizeof(req->limits->value)];
	bool devset = false;
	int r;

	if (plan->refused == -EADDRINUSE)
		log_warn("slot %s (%s): attach for job %s refused: the key runs job %s", plan->slot->name, key,
			 req->job ? req->job : "(none)", pool_tenant_job(plan->slot) ? pool_tenant_job(plan->slot) : "(none)");
	if (plan->refused < 0)
		return plan->refused;
	/* a key without a slot binds only for live processes, several move
	 * only if all live, and a run's limits are written only for live
	 * ones; one pid into a bound slot: its move tells a dead one (ESRCH) */
	if (npids != 1 || req->nlimits || !plan->slot) {
		r = pids_exist(pids, npids, bad_pid);
		if (r < 0)
			return r;
	}
	if (req->hold > 0 && proc_start_time(req->hold, &(uint64_t){ 0 }) < 0) {
		*bad_pid = req->hold;
		return -ESRCH;
	}
	r = slot_take(p, req, plan, &s, &fresh);
	if (r < 0)
		return r;
	pool_hold(p, s); /* a run's end and the next one's start: one record */
	if (s == plan->slot && s->state == SLOT_RUNNING && !plan->procs)
		pool_slot_event(s, SLOT_EV_EMPTY);
	r = pool_slot_plan(s, SLOT_EV_ATTACH, &t);
	if (r < 0)
		goto fail;
	if (t.act & SLOT_ACT_APPLY)
		pool_act_apply_class(s, plan->cls); /* limits in place before the processes arrive */
	r = apply_run_limits(s, req, devices, sizeof(devices), &devset);
	if (r < 0)
		goto fail;
	s->released = false;
	for (; moved < npids; moved++) {
		r = cg_slot_attach(p->cg, s->name, pids[moved]);
		if (r < 0) {
			*bad_pid = pids[moved];
			log_warn("slot %s (%s): attach pid %d: %s", s->name, key, (int)pids[moved], strerror(-r));
			break;
		}
	}
	/* the pids before the failing one are in the slot: it runs them, and
	 * the caller still hears of the error */
	if (r < 0 && moved == 0)
		goto fail;
	/* an Attach to the running slot changes nothing kept */
	pool_slot_commit(s, &t, SLOT_ACT_APPLY,
			 fresh || t.prev != t.next || (t.act & SLOT_ACT_RUN_START) || req->nlimits || req->job ||
				 req->hold > 0);
	if (req->job || req->hold > 0) {
		int rt = pool_tenant_bind(s, req->job, req->hold, !req->keep);
		if (rt < 0) {
			log_warn("slot %s (%s): job %s: holder pid %d: %s", s->name, key, req->job ? req->job : "-",
				 (int)req->hold, strerror(-rt));
			if (r == 0) {
				r = rt;
				*bad_pid = req->hold;
			}
		}
		if (devset && pool_tenant_set_devices(s, devices) < 0)
			log_warn("slot %s (%s): job %s: its devices.deny not kept: %s", s->name, key, req->job ? req->job : "-",
				 strerror(ENOMEM));
	}
	pool_hold_end(p);
	pool_fill_warm(p);
	if (r == 0)
		*out = s;
	return r;
fail:
	if (fresh && s->state == SLOT_WARM) {
		if (t.act & SLOT_ACT_APPLY)
			pool_reset_limits(s); /* the next key must not get this one's */
		pool_slot_set_key(s, "");
		s->class_name[0] = '\0';
		s->owner_uid = 0;
	}
	pool_hold_end(p);
	return r;
}

void pool_run_settle(struct pool *p, const char *key)
{
	struct slot *s = pool_find(p, key);

	if (s && s->state == SLOT_RUNNING && !pool_slot_has_procs(s))
		pool_slot_event(s, SLOT_EV_EMPTY);
}

int pool_record_exit(struct pool *p, const char *key, int exit_status, int signal, bool unsupervised)
{
	struct slot *s = pool_find(p, key);
	struct run *run = s && s->nrecent ? &s->recent[(s->nrecent - 1) % SLOT_RECENT_RUNS] : NULL;

	if (!run)
		return -ENOENT;
	run->exit_status = exit_status;
	run->signal = signal;
	run->unsupervised = unsupervised;
	pool_save(p, s);
	return 0;
}

int pool_release(struct pool *p, const char *key, struct slot **out)
{
	struct slot *s = pool_find(p, key);

	if (!s)
		return -ENOENT;
	log_event(LOG_INFO, &(struct log_fields){ .key = key, .slot = s->name }, "slot %s (%s): released", s->name, key);
	s->used_us = now_real_us();
	if (s->state == SLOT_IDLE) { /* released slots head the idle list */
		pool_list_remove(p, s);
		s->released = true;
		pool_list_insert(p, s);
	}
	s->released = s->state == SLOT_RUNNING || s->state == SLOT_IDLE;
	pool_slot_event(s, SLOT_EV_RELEASE);
	pool_fill_warm(p);
	*out = s;
	return 0;
}

