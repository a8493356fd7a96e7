/* manager_attach.c - the Attach method: a key's slot for processes.
 *
 * An Attach is planned first (pool_attach_plan: the key's slot, the class,
 * the tenant's verdict, where the caller is now, each looked up once), then
 * judged (an unprivileged caller: its key, its share, and the slot it is in
 * now), then applied. An Attach to a key whose last job ended while the
 * processes that job left are still being killed waits until the slot is
 * empty (at most ATTACH_WAIT_S, looked at every ATTACH_WAIT_POLL_S), so that
 * nothing of one run reaches the next and no kill reaches the new run. */
#include "config.h"

#include "manager_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "varlink_auth.h"
#include "cgpool.h"
#include "cg.h"
#include "log.h"
#include "metrics_dying.h"
#include "util.h"

#define MAX_PIDS CGPOOL_MAX_PIDS /* the library's and the Slurm plug-in's limit too */
/* an Attach of MAX_PIDS pids (7 digits and a comma each) and its other
 * parameters fit in one request */
_Static_assert(MAX_PIDS * 8 + 8192 <= VL_MAX_MESSAGE, "an Attach of MAX_PIDS pids must fit in a request");
#define ATTACH_WAIT_S 4.0       /* below the Slurm plug-in's default timeout (5 s) */
#define ATTACH_WAIT_POLL_S 0.05 /* as often as the kill rounds of a kernel without cgroup.kill */

/* An Attach waiting for what a job left in the key's slot to be killed */
struct attach_wait {
	struct attach_wait *next;
	struct manager *m;
	struct vl_call *call;
	json_t *params;
	ev_timer timer;
	double since;
};

static void attach_call(struct manager *m, struct vl_call *call, json_t *params, double since);

/* pids: a non-empty array of positive integers that fit pid_t */
static int param_pids(json_t *params, pid_t *pids, size_t *n)
{
	json_t *arr = json_object_get(params, "pids"), *v;
	size_t i;

	if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > MAX_PIDS)
		return -EINVAL;
	json_array_foreach(arr, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > INT32_MAX)
			return -EINVAL;
		pids[i] = (pid_t)json_integer_value(v);
	}
	*n = i;
	return 0;
}

static void pool_full(struct manager *m, struct vl_call *call, const char *limit, const char *reason)
{
	manager_reply_error(m, call, ERR("PoolFull"), json_pack("{s:i, s:s, s:s}", "max_slots", (int)(*m->conf)->pool.max_slots,
							"limit", limit, "reason", reason));
}

/* a new slot's mkdir said ENOSPC: the kernel's memory cgroup IDs, held by
 * dying memcgs, are used up (the pool logged it) */
static void no_cgroup_ids(struct manager *m, struct vl_call *call)
{
	struct cg_dying d;
	char reason[160];
	int r = m->hooks.dying ? dying_cache_get(m->hooks.dying, &d, NULL) : cg_dying(pool_cg(m->pool), &d);
	int n = snprintf(reason, sizeof(reason), "the kernel has no memory cgroup IDs left (mkdir: ENOSPC)");

	if (r == 0)
		snprintf(reason + n, sizeof(reason) - (size_t)n, "; dying memcgs: %llu", (unsigned long long)d.count);
	pool_full(m, call, "memcg_ids", reason);
}

static void attach_error(struct manager *m, struct vl_call *call, const struct attach_plan *plan, const char *key,
			 int r, pid_t bad)
{
	const char *job = plan->slot ? pool_tenant_job(plan->slot) : NULL;
	char reason[256];

	switch (r) {
	case -ENOSPC:
		snprintf(reason, sizeof(reason), "all %u slots (max_slots) are in use", (*m->conf)->pool.max_slots);
		return pool_full(m, call, "max_slots", reason);
	case -ENFILE:
		return no_cgroup_ids(m, call);
	case -ESRCH:
		manager_reply_error(m, call, ERR("NoSuchProcess"), json_pack("{s:i}", "pid", (int)bad));
		return;
	case -ENOENT:
		manager_reply_error(m, call, VL_ERR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", "class"));
		return;
	case -EADDRINUSE:
		manager_reply_error(m, call, ERR("KeyBusy"), json_pack("{s:s, s:s}", "key", key, "job", job ? job : "(none)"));
		return;
	case -EINPROGRESS: {
		unsigned n = 0;
		cg_slot_nprocs(pool_cg(m->pool), plan->slot->name, &n);
		snprintf(reason, sizeof(reason),
			 "%u process(es) that job %s left in slot %s are still being killed after %.0f s", n,
			 job ? job : "(none)", plan->slot->name, ATTACH_WAIT_S);
		log_warn("attach %s refused: %s", key, reason);
		manager_reply_error(m, call, ERR("JobEnding"),
				    json_pack("{s:s, s:s, s:i, s:s}", "key", key, "job", job ? job : "(none)", "processes",
					      (int)n, "reason", reason));
		return;
	}
	default:
		snprintf(reason, sizeof(reason), "attach %s: %s", key, strerror(-r));
		manager_not_supported(m, call, reason);
	}
}

__attribute__((format(printf, 3, 4))) static void refuse_unprivileged(struct manager *m, struct vl_call *call,
									  const char *fmt, ...)
{
	va_list ap;
	const struct ucred *peer = vl_call_peer(call);
	char reason[400];

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	log_info("attach refused to uid %u pid %d: %s", (unsigned)peer->uid, (int)peer->pid, reason);
	manager_permission_denied(m, call, reason);
}

/* The slot the caller is in now: none of the pool's, the key's own, or
 * one it bound itself with no job in it. false when the call was answered. */
static bool caller_may_leave(struct manager *m, struct vl_call *call, const struct attach_plan *plan)
{
	const struct ucred *peer = vl_call_peer(call);
	const struct slot *from = plan->from;
	const char *job = from ? pool_tenant_job(from) : NULL, *who;

	if (!from || from == plan->slot)
		return true;
	if (job || pool_tenant_holders(from))
		who = "a job holds";
	else if (from->owner_uid == peer->uid)
		return true;
	else
		who = from->owner_uid == 0 ? "root bound" : "another user bound";
	refuse_unprivileged(m, call, "pid %d is in slot %s (key %s%s%s), which %s; only root and socket_group "
			    "may move a process out of it", (int)peer->pid, from->name, from->key, job ? ", job " : "",
			    job ? job : "", who);
	return false;
}

/* An unprivileged caller's key: in its namespace (user_keys), unbound or
 * bound by it, within its share of the pool; a class it names marked
 * unprivileged; and the caller, which moves itself, is in no slot it may
 * not leave: one a job holds, or one root or another user bound (a job's
 * task must stay in the job's slot, under the job's limits). false when the
 * call was answered. */
static bool unprivileged_attach_ok(struct manager *m, struct vl_call *call, const char *key,
				   const struct attach_plan *plan)
{
	const struct conf *c = *m->conf;
	const struct ucred *peer = vl_call_peer(call);
	const struct slot *s = plan->slot;
	const char *why;
	unsigned mine, used;

	if (!caller_may_leave(m, call, plan))
		return false;
	if (!auth_key_of_uid(c->daemon.user_keys, peer->uid, key)) {
		refuse_unprivileged(m, call, "key %s is not in your namespace (user_keys)", key);
		return false;
	}
	if (s && s->owner_uid != peer->uid) {
		refuse_unprivileged(m, call, "key %s is bound by another user", key);
		return false;
	}
	if (plan->named && !plan->named->unprivileged) {
		refuse_unprivileged(m, call, "class %s is not marked unprivileged = yes", plan->named->name);
		return false;
	}
	if (s)
		return true;
	pool_usage(m->pool, peer->uid, &mine, &used);
	if (auth_bind_check(c->pool.max_slots, c->pool.max_slots_per_user, mine, used, &why) < 0) {
		char reason[160];
		if (strcmp(why, "reserved") == 0)
			snprintf(reason, sizeof(reason), "the last %u slots are reserved for root and socket_group",
				 auth_slots_reserved(c->pool.max_slots));
		else
			snprintf(reason, sizeof(reason), "%u of your slots are bound (max_slots_per_user)", mine);
		pool_full(m, call, why, reason);
		return false;
	}
	return true;
}

/* The caller moves itself: the process that connected, still alive. */
static bool peer_still_there(struct manager *m, struct vl_call *call, const char *key, const char *when)
{
	const struct ucred *peer = vl_call_peer(call);

	if (vl_call_peer_alive(call))
		return true;
	log_warn("attach %s: the process that connected (pid %d, uid %u) has exited %s the move; refused", key,
		 (int)peer->pid, (unsigned)peer->uid, when);
	manager_reply_error(m, call, ERR("NoSuchProcess"), json_pack("{s:i}", "pid", (int)peer->pid));
	return false;
}

bool manager_param_limits(struct manager *m, struct vl_call *call, json_t *params, struct conf_res *out, size_t *n)
{
	json_t *limits = json_object_get(params, "limits"), *v;
	char num[32], err[320], reason[400];
	const char *name, *text;

	*n = 0;
	if (!limits || json_is_null(limits))
		return true;
	if (!json_is_object(limits) || json_object_size(limits) > CONF_MAX_RES) {
		manager_invalid_parameter(m, call, "limits");
		return false;
	}
	json_object_foreach(limits, name, v) {
		if (json_is_integer(v) && json_integer_value(v) >= 0)
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		text = json_is_string(v) ? json_string_value(v) : json_is_integer(v) ? num : NULL;
		if (!text || conf_res_value(name, text, &out[*n], err, sizeof(err)) < 0) {
			snprintf(reason, sizeof(reason), "limits: %s", text ? err : "a value is a string or a number");
			manager_reply_error(m, call, VL_ERR_INVALID_PARAMETER, json_pack("{s:s, s:s}", "parameter", "limits",
										"reason", reason));
			return false;
		}
		if (!cg_resource_supported(pool_cg(m->pool), name)) {
			snprintf(reason, sizeof(reason), "limits: %s is not supported on this hierarchy", name);
			manager_not_supported(m, call, reason);
			return false;
		}
		(*n)++;
	}
	return true;
}

/* Attach's job, hold and release: root and socket_group only. false when
 * the call was answered. */
static bool param_tenant(struct manager *m, struct vl_call *call, json_t *params, bool priv, struct attach_req *req)
{
	json_t *job = json_object_get(params, "job"), *hold = json_object_get(params, "hold"),
	       *rel = json_object_get(params, "release");

	*req = (struct attach_req){ 0 };
	job = json_is_null(job) ? NULL : job;
	hold = json_is_null(hold) ? NULL : hold;
	rel = json_is_null(rel) ? NULL : rel;
	if (!job && !hold && !rel)
		return true;
	if (!priv) {
		manager_permission_denied(m, call, "only root and members of socket_group may name a job or its holder");
		return false;
	}
	if (job && (!json_is_string(job) || json_string_length(job) == 0 || json_string_length(job) > KEY_MAX ||
		    strlen(json_string_value(job)) != json_string_length(job))) {
		manager_invalid_parameter(m, call, "job");
		return false;
	}
	if (hold && (!json_is_integer(hold) || json_integer_value(hold) <= 0 || json_integer_value(hold) > INT32_MAX)) {
		manager_invalid_parameter(m, call, "hold");
		return false;
	}
	if (rel && !json_is_boolean(rel)) {
		manager_invalid_parameter(m, call, "release");
		return false;
	}
	req->job = job ? json_string_value(job) : NULL;
	req->hold = hold ? (pid_t)json_integer_value(hold) : 0;
	req->keep = rel && !json_is_true(rel);
	return true;
}

/* ---- waiting for a job's leftovers */

static void wait_free(struct attach_wait *w)
{
	struct manager *m = w->m;

	for (struct attach_wait **pp = &m->waiting; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	ev_timer_stop(m->loop, &w->timer);
	json_decref(w->params);
	free(w);
}

static void wait_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct attach_wait *w = t->data;
	struct manager *m = w->m;
	struct vl_call *call = w->call;
	json_t *params = json_incref(w->params);
	double since = w->since;

	(void)loop;
	(void)revents;
	wait_free(w);
	if (!vl_call_connected(call))
		vl_call_reply(call, NULL); /* the client went away: dropped */
	else
		attach_call(m, call, params, since);
	json_decref(params);
}

/* 0: the call waits; -ENOMEM: it could not */
static int wait_start(struct manager *m, struct vl_call *call, json_t *params, double since)
{
	struct attach_wait *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	if (since == 0)
		m->waited++;
	*w = (struct attach_wait){ m->waiting, m, call, json_incref(params), { 0 }, since ? since : ev_now(m->loop) };
	ev_timer_init(&w->timer, wait_cb, ATTACH_WAIT_POLL_S, 0.);
	w->timer.data = w;
	ev_timer_start(m->loop, &w->timer);
	m->waiting = w;
	return 0;
}

void manager_attach_fini(struct manager *m)
{
	while (m->waiting) {
		struct vl_call *call = m->waiting->call;
		wait_free(m->waiting);
		vl_call_error(call, ERR("NotSupported"), json_pack("{s:s}", "reason", "the daemon is stopping"));
	}
}

/* ---- Attach */

static void attach_call(struct manager *m, struct vl_call *call, json_t *params, double since)
{
	const struct ucred *peer = vl_call_peer(call);
	bool priv = manager_privileged(m, call);
	pid_t pids[MAX_PIDS], bad = 0;
	json_t *cls = json_object_get(params, "class");
	const char *key;
	struct conf_res limits[CONF_MAX_RES];
	struct attach_req req;
	struct attach_plan plan;
	struct slot *s;
	const struct conf_res *refused = NULL;
	size_t n, nlimits;
	int r;

	if (!(key = manager_param_key(m, call, params)))
		return;
	if (param_pids(params, pids, &n) < 0)
		return manager_invalid_parameter(m, call, "pids");
	if (cls && !json_is_null(cls) && !json_is_string(cls))
		return manager_invalid_parameter(m, call, "class");
	if (!priv && !(n == 1 && pids[0] == peer->pid))
		return manager_permission_denied(m, call, "only root and members of socket_group may move other processes");
	if (!priv && json_object_get(params, "limits") && !json_is_null(json_object_get(params, "limits")))
		return manager_permission_denied(m, call, "only root and members of socket_group may set limits");
	if (!manager_param_limits(m, call, params, limits, &nlimits) || !param_tenant(m, call, params, priv, &req))
		return;
	req.key = key;
	req.class_name = json_is_string(cls) ? json_string_value(cls) : NULL;
	req.owner = priv ? 0 : peer->uid;
	req.pids = pids;
	req.npids = n;
	req.limits = limits;
	req.nlimits = nlimits;
	req.refused = &refused;
	pool_attach_plan(m->pool, &req, priv ? 0 : peer->pid, &plan);
	if (!priv && (!unprivileged_attach_ok(m, call, key, &plan) || !peer_still_there(m, call, key, "before")))
		return;
	if (plan.refused == -EINPROGRESS && (since == 0 || ev_now(m->loop) - since < ATTACH_WAIT_S) &&
	    wait_start(m, call, params, since) == 0) {
		if (since == 0)
			log_info("attach %s: waits until what job %s left in slot %s is killed", key,
				 pool_tenant_job(plan.slot) ? pool_tenant_job(plan.slot) : "(none)", plan.slot->name);
		return;
	}
	r = pool_attach_apply(m->pool, &req, &plan, &s, &bad);
	if (r < 0 && refused)
		return manager_reply_error(m, call, ERR("LimitRefused"),
				   json_pack("{s:s, s:s, s:s, s:s}", "key", key, "limit", refused->name, "value",
					     refused->value, "reason", strerror(-r)));
	if (r < 0)
		return attach_error(m, call, &plan, key, r, bad);
	if (!priv && !peer_still_there(m, call, key, "during"))
		return;
	if (since > 0)
		log_info("attach %s: after %.2f s, what the job left is gone; a new run", key, ev_now(m->loop) - since);
	m->attaches++;
	manager_reply_slot(m, call, s);
}

void manager_attach(struct vl_call *call, json_t *params, void *ud)
{
	attach_call(ud, call, params, 0);
}
