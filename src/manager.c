/* manager.c - the io.cgpool.Manager Varlink interface: requests to the pool */
#include "config.h"

#include "manager.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cg.h"
#include "dying.h"
#include "log.h"
#include "metrics.h"
#include "retire.h"
#include "util.h"

#define IFACE "io.cgpool.Manager"
#define ERR(name) IFACE "." name
#define MAX_PIDS 1024
#define LIST_BATCH 64 /* slots per loop wakeup of a streamed List */
/* {"parameters":{"slots":[...]}} and the NUL around the slots of a List reply */
#define LIST_REPLY_OVERHEAD 32

static const char interface_description[] =
	"# Keeps job cgroups alive across restarts and retires them without leaving\n"
	"# dying memory cgroups behind.\n"
	"interface io.cgpool.Manager\n"
	"\n"
	"# One run of a key: from the first process entering its slot to the slot\n"
	"# being empty again. Times are microseconds since the epoch.\n"
	"type Run (started: int, ended: ?int, exit_status: ?int, memory_peak: ?int, oom_kills: int)\n"
	"\n"
	"type Slot (key: ?string, state: string, name: string, path: string, cgroup_id: int,\n"
	"  runs: int, class: ?string, memory_current: ?int, nprocs: int, idle_since: ?int)\n"
	"\n"
	"method Attach(key: string, pids: []int, class: ?string) -> (slot: Slot)\n"
	"method Release(key: string) -> (slot: Slot)\n"
	"# outcome: released, reparented, drained, pinned, cancelled (the key was attached again);\n"
	"# \"retiring\" when not waited for\n"
	"method Retire(key: string, mode: ?string, wait: ?bool) -> (key: string, outcome: string,\n"
	"  lru_bytes: int, elapsed_ms: int, slot: string, mode: string, drained_bytes: ?int, total_ms: ?int,\n"
	"  attributed: ?bool)\n"
	"# With \"more\": one reply per slot ({\"slots\": [Slot]}), each but the last\n"
	"# with \"continues\"; an empty pool (or slots gone while streaming) ends with\n"
	"# {\"slots\": []}. Without \"more\": all slots in one reply, or the error\n"
	"# org.varlink.service.ExpectedMore when they do not fit one message (1 MiB).\n"
	"method List() -> (slots: []Slot)\n"
	"method Status(key: ?string) -> (daemon: ?object, slot: ?Slot, recent_runs: ?[]Run)\n"
	"# refresh: run the LRU-reparenting experiment again (its verdict comes later)\n"
	"method Probe(refresh: ?bool) -> (hierarchy: string, memory: string, kernel: string,\n"
	"  lru_reparenting: string, lru_reparenting_evidence: string, probe_running: bool, features: object)\n"
	"method Run(key: string) -> (slot: Slot)\n"
	"method Stop(key: string) -> (slot: Slot)\n"
	"method Restart(key: string) -> (slot: Slot)\n"
	"method Reload() -> (errors: []string)\n"
	"method Metrics() -> (text: string)\n"
	"\n"
	"error InvalidKey(key: string, reason: string)\n"
	"error NoSuchKey(key: string)\n"
	"error NoSuchProcess(pid: int)\n"
	"error PermissionDenied(reason: string)\n"
	"error PoolFull(max_slots: int)\n"
	"error NotSupported(reason: string)\n"
	"error RetireFailed(key: string, reason: string)\n";

struct manager {
	struct pool *pool;
	const struct conf *const *conf;
	struct manager_hooks hooks;
	uint64_t attaches;
	uint64_t refusals;
};

/* ---- replies */

static void reply_error(struct manager *m, struct vl_call *call, const char *error, json_t *params)
{
	m->refusals++;
	vl_call_error(call, error, params);
}

static void invalid_parameter(struct manager *m, struct vl_call *call, const char *name)
{
	reply_error(m, call, VL_ERR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", name));
}

static void not_supported(struct manager *m, struct vl_call *call, const char *reason)
{
	reply_error(m, call, ERR("NotSupported"), json_pack("{s:s}", "reason", reason));
}

static void permission_denied(struct manager *m, struct vl_call *call, const char *reason)
{
	reply_error(m, call, ERR("PermissionDenied"), json_pack("{s:s}", "reason", reason));
}

json_t *manager_slot_json(struct pool *pool, const struct slot *s)
{
	struct cg *cg = pool_cg(pool);
	char path[4096];
	struct cg_memory mem;
	unsigned nprocs = 0;
	json_t *j;

	if (cg_slot_path(cg, s->name, path, sizeof(path)) < 0)
		path[0] = '\0';
	cg_slot_nprocs(cg, s->name, &nprocs);
	j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:i}", "state", slot_state_name(s->state), "name", s->name,
		      "path", path, "cgroup_id", (json_int_t)s->cgroup_id, "runs", (json_int_t)s->runs, "nprocs",
		      (int)nprocs);
	json_object_set_new(j, "key", s->key[0] ? json_string(s->key) : json_null());
	json_object_set_new(j, "class", s->class_name[0] ? json_string(s->class_name) : json_null());
	json_object_set_new(j, "memory_current",
			    cg_slot_memory_some(cg, s->name, CG_MEM_CURRENT, &mem) == 0 ? json_integer((json_int_t)mem.current)
								   : json_null());
	json_object_set_new(j, "idle_since",
			    s->state == SLOT_IDLE ? json_integer(s->idle_since_us) : json_null());
	return j;
}

static json_t *run_json(const struct run *r)
{
	json_t *j = json_pack("{s:I, s:I}", "started", (json_int_t)r->started_us, "oom_kills",
			      (json_int_t)r->oom_kills);

	json_object_set_new(j, "ended", r->ended_us ? json_integer(r->ended_us) : json_null());
	json_object_set_new(j, "exit_status", r->exit_status >= 0 ? json_integer(r->exit_status) : json_null());
	json_object_set_new(j, "memory_peak",
			    r->ended_us && r->memory_peak ? json_integer((json_int_t)r->memory_peak) : json_null());
	return j;
}

static void reply_slot(struct manager *m, struct vl_call *call, const struct slot *s)
{
	vl_call_reply(call, json_pack("{s:o}", "slot", manager_slot_json(m->pool, s)));
}

/* ---- who may do what */

static bool in_group(pid_t pid, gid_t gid)
{
	char path[64], buf[4096], *line;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (file_read(path, buf, sizeof(buf)) < 0)
		return false;
	line = strstr(buf, "\nGroups:");
	if (!line)
		return false;
	line += strlen("\nGroups:");
	while (*line && *line != '\n') {
		char *end;
		unsigned long g = strtoul(line, &end, 10);
		if (end == line)
			break;
		if ((gid_t)g == gid)
			return true;
		line = end;
	}
	return false;
}

/* root and members of socket_group may do everything */
static bool privileged(struct manager *m, const struct ucred *cred)
{
	const char *group = (*m->conf)->daemon.socket_group;
	struct group *gr;

	if (cred->uid == 0)
		return true;
	if (!group || !*group || !(gr = getgrnam(group)))
		return false;
	return cred->gid == gr->gr_gid || in_group(cred->pid, gr->gr_gid);
}

static bool require_privileged(struct manager *m, struct vl_call *call)
{
	if (privileged(m, vl_call_peer(call)))
		return true;
	permission_denied(m, call, "only root and members of socket_group may do this");
	return false;
}

/* ---- parameters */

static const char *param_key(struct manager *m, struct vl_call *call, json_t *params)
{
	json_t *k = json_object_get(params, "key");
	const char *why;

	if (!json_is_string(k)) {
		invalid_parameter(m, call, "key");
		return NULL;
	}
	if (key_validate(json_string_value(k), &why) < 0 || strlen(json_string_value(k)) != json_string_length(k)) {
		if (strlen(json_string_value(k)) != json_string_length(k))
			why = "key may not contain control characters";
		reply_error(m, call, ERR("InvalidKey"), json_pack("{s:s%, s:s}", "key", json_string_value(k),
								     json_string_length(k), "reason", why));
		return NULL;
	}
	return json_string_value(k);
}

static struct slot *param_known_key(struct manager *m, struct vl_call *call, json_t *params)
{
	const char *key = param_key(m, call, params);
	struct slot *s;

	if (!key)
		return NULL;
	s = pool_find(m->pool, key);
	if (!s)
		reply_error(m, call, ERR("NoSuchKey"), json_pack("{s:s}", "key", key));
	return s;
}

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

/* ---- methods */

static void attach_error(struct manager *m, struct vl_call *call, const char *key, const char *cls, int r,
			 pid_t bad)
{
	char reason[256];

	switch (r) {
	case -ENOSPC:
		reply_error(m, call, ERR("PoolFull"), json_pack("{s:i}", "max_slots", (int)(*m->conf)->pool.max_slots));
		return;
	case -ESRCH:
		reply_error(m, call, ERR("NoSuchProcess"), json_pack("{s:i}", "pid", (int)bad));
		return;
	case -ENOENT:
		reply_error(m, call, VL_ERR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", "class"));
		return;
	default:
		snprintf(reason, sizeof(reason), "attach %s: %s", key, strerror(-r));
		not_supported(m, call, reason);
	}
}

static void m_attach(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	const struct ucred *peer = vl_call_peer(call);
	pid_t pids[MAX_PIDS], bad = 0;
	json_t *cls = json_object_get(params, "class");
	const char *key, *class_name = NULL;
	struct slot *s;
	size_t n;
	int r;

	if (!(key = param_key(m, call, params)))
		return;
	if (param_pids(params, pids, &n) < 0)
		return invalid_parameter(m, call, "pids");
	if (cls && !json_is_null(cls)) {
		if (!json_is_string(cls))
			return invalid_parameter(m, call, "class");
		class_name = json_string_value(cls);
	}
	if (!privileged(m, peer) && !(n == 1 && pids[0] == peer->pid))
		return permission_denied(m, call, "only root and members of socket_group may move other processes");
	r = pool_attach(m->pool, key, class_name, pids, n, &s, &bad);
	if (r < 0)
		return attach_error(m, call, key, class_name, r, bad);
	m->attaches++;
	reply_slot(m, call, s);
}

static void m_release(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	struct slot *s;

	if (!require_privileged(m, call) || !(s = param_known_key(m, call, params)))
		return;
	pool_release(m->pool, s->key, &s);
	reply_slot(m, call, s);
}

/* ---- List: streamed with "more", one reply otherwise */

struct list_stream {
	struct pool *pool;
	unsigned next_id; /* the next slot to send: the first with an id >= this */
};

static struct slot *slot_after(struct pool *pool, const struct slot *s)
{
	return s->id < UINT_MAX ? pool_slot_from(pool, s->id + 1) : NULL;
}

/* {"slots": [s]}, or {"slots": []} when s is NULL */
static json_t *list_reply(struct pool *pool, const struct slot *s)
{
	json_t *arr = json_array();

	if (s)
		json_array_append_new(arr, manager_slot_json(pool, s));
	return json_pack("{s:o}", "slots", arr);
}

/* One batch of a streamed List: at most LIST_BATCH slots and while the
 * connection's output queue has room, then wait for it to drain. The last
 * slot goes out as the final reply. A cursor by id, not a pointer, so slots
 * removed between batches do not matter. */
static void list_batch(struct vl_call *call, void *ud)
{
	struct list_stream *ls = ud;
	struct slot *s = vl_call_connected(call) ? pool_slot_from(ls->pool, ls->next_id) : NULL;
	struct slot *next;

	for (unsigned n = 0; s && (next = slot_after(ls->pool, s)); n++) {
		if (n == LIST_BATCH || !vl_call_room(call)) {
			if (vl_call_on_drained(call, list_batch, ls) == 0)
				return;
			s = NULL; /* the client is gone */
			break;
		}
		if (vl_call_continue(call, list_reply(ls->pool, s)) < 0) {
			s = NULL; /* the connection is closing: the final reply is dropped */
			break;
		}
		ls->next_id = next->id;
		s = next;
	}
	vl_call_reply(call, list_reply(ls->pool, s));
	free(ls);
}

struct list_all {
	struct pool *pool;
	json_t *slots;
	size_t bytes; /* encoded, with a separator each */
};

static int list_one(struct slot *s, void *ud)
{
	struct list_all *la = ud;
	json_t *j = manager_slot_json(la->pool, s);

	la->bytes += json_dumpb(j, NULL, 0, JSON_COMPACT) + 1;
	json_array_append_new(la->slots, j);
	return la->bytes + LIST_REPLY_OVERHEAD > VL_MAX_REPLY ? -EMSGSIZE : 0;
}

static void m_list(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	struct list_all la = { m->pool, json_array(), 0 };
	struct list_stream *ls;

	if (vl_call_more(call)) {
		json_decref(la.slots);
		if (!(ls = calloc(1, sizeof(*ls))))
			return not_supported(m, call, "out of memory");
		ls->pool = m->pool;
		return list_batch(call, ls);
	}
	if (pool_foreach(m->pool, list_one, &la) < 0) {
		json_decref(la.slots);
		return reply_error(m, call, VL_ERR_EXPECTED_MORE, NULL);
	}
	vl_call_reply(call, json_pack("{s:o}", "slots", la.slots));
}

static json_t *retirements_json(struct manager *m)
{
	struct retire_result rr[8];
	size_t n = pool_recent_retirements(m->pool, rr, ARRAY_SIZE(rr));
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "slot", rr[i].name, "key",
						     rr[i].key, "mode", conf_retire_mode_name(rr[i].mode), "outcome",
						     retire_outcome_name(rr[i].outcome), "lru_bytes",
						     (json_int_t)rr[i].lru_bytes, "drained_bytes",
						     (json_int_t)rr[i].drained_bytes, "elapsed_ms", (json_int_t)rr[i].elapsed_ms));
	return arr;
}

static json_t *daemon_json(struct manager *m)
{
	const struct cg_info *info = cg_get_info(pool_cg(m->pool));
	const struct conf *c = *m->conf;
	struct retire_stats st = { 0 };
	struct cg_dying dying;
	unsigned n[SLOT_NSTATES];
	json_t *j;

	pool_counts(m->pool, n);
	if (m->hooks.retire)
		retire_get_stats(m->hooks.retire, &st);
	j = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:{s:i, s:i, s:i, s:i, s:i}}", "version",
		      PACKAGE_VERSION, "pid", (int)getpid(), "hierarchy", cg_hierarchy_name(info->hierarchy), "memory",
		      info->memory_v2 ? "v2" : "v1", "kernel", info->kernel, "root", info->root, "retire_mode",
		      conf_retire_mode_name(c->retire.mode), "max_slots", (int)c->pool.max_slots, "warm_target",
		      (int)c->pool.warm, "slots", "total", (int)(n[SLOT_WARM] + n[SLOT_RUNNING] + n[SLOT_IDLE] + n[SLOT_RETIRING]),
		      "warm", (int)n[SLOT_WARM], "running", (int)n[SLOT_RUNNING], "idle", (int)n[SLOT_IDLE], "retiring",
		      (int)n[SLOT_RETIRING]);
	json_object_set_new(j, "lru_reparenting",
			    json_string(lru_reparenting_name(m->hooks.retire ? retire_lru_reparenting(m->hooks.retire, NULL)
									     : LRU_UNKNOWN)));
	json_object_set_new(j, "retirements",
			    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "released",
				      (json_int_t)st.outcomes[OUTCOME_RELEASED],
				      "reparented", (json_int_t)st.outcomes[OUTCOME_REPARENTED], "drained",
				      (json_int_t)st.outcomes[OUTCOME_DRAINED], "pinned", (json_int_t)st.outcomes[OUTCOME_PINNED],
				      "failed", (json_int_t)st.outcomes[OUTCOME_FAILED], "cancelled",
				      (json_int_t)st.outcomes[OUTCOME_CANCELLED], "resumed", (json_int_t)st.resumed,
				      "in_flight", (json_int_t)st.in_flight));
	json_object_set_new(j, "recent_retirements", retirements_json(m));
	if ((m->hooks.dying ? dying_cache_get(m->hooks.dying, &dying, NULL) : cg_dying(pool_cg(m->pool), &dying)) == 0)
		json_object_set_new(j, "dying_memcgs", json_integer((json_int_t)dying.count));
	return j;
}

static void m_status(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	json_t *k = json_object_get(params, "key"), *runs;
	struct slot *s;
	unsigned n;

	if (!k || json_is_null(k))
		return (void)vl_call_reply(call, json_pack("{s:o}", "daemon", daemon_json(m)));
	if (!(s = param_known_key(m, call, params)))
		return;
	runs = json_array();
	n = s->nrecent < SLOT_RECENT_RUNS ? s->nrecent : SLOT_RECENT_RUNS;
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(runs, run_json(&s->recent[(s->nrecent - 1 - i) % SLOT_RECENT_RUNS]));
	vl_call_reply(call, json_pack("{s:o, s:o}", "slot", manager_slot_json(m->pool, s), "recent_runs", runs));
}

static void m_probe(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	const struct cg_info *info = cg_get_info(pool_cg(m->pool));
	const struct cg_features *f = &info->features;
	const char *why = "";
	json_t *refresh = json_object_get(params, "refresh"), *reply;
	enum lru_reparenting lru;

	if (refresh && !json_is_null(refresh) && !json_is_boolean(refresh))
		return invalid_parameter(m, call, "refresh");
	if (json_is_true(refresh)) {
		if (!require_privileged(m, call))
			return;
		if (m->hooks.retire)
			retire_probe(m->hooks.retire); /* -EALREADY: one is running */
	}
	lru = m->hooks.retire ? retire_lru_reparenting(m->hooks.retire, &why) : LRU_UNKNOWN;
	reply = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:b, s:b, s:b, s:b, s:b}}", "hierarchy",
				      cg_hierarchy_name(info->hierarchy), "memory", info->memory_v2 ? "v2" : "v1",
				      "kernel", info->kernel, "lru_reparenting", lru_reparenting_name(lru),
				      "lru_reparenting_evidence", why, "features", "memory_reclaim", f->memory_reclaim,
				      "memory_peak_reset", f->memory_peak_reset, "cgroup_kill", f->cgroup_kill,
				      "clone_into_cgroup", f->clone_into_cgroup, "dying_subsys_stat",
				      f->dying_subsys_stat);
	json_object_set_new(reply, "probe_running",
			    json_boolean(m->hooks.retire && retire_probe_running(m->hooks.retire)));
	vl_call_reply(call, reply);
}

static void retire_reply(const struct retire_result *res, void *ud)
{
	struct vl_call *call = ud;
	char reason[300];

	if (res->outcome == OUTCOME_FAILED) {
		snprintf(reason, sizeof(reason), "slot %s could not be removed: %s", res->name, strerror(-res->error));
		vl_call_error(call, ERR("RetireFailed"), json_pack("{s:s, s:s}", "key", res->key, "reason", reason));
		return;
	}
	vl_call_reply(call, json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:I, s:I, s:b}", "key", res->key, "outcome",
				      retire_outcome_name(res->outcome), "lru_bytes", (json_int_t)res->lru_bytes,
				      "elapsed_ms", (json_int_t)res->elapsed_ms, "slot", res->name, "mode",
				      conf_retire_mode_name(res->mode), "drained_bytes", (json_int_t)res->drained_bytes,
				      "total_ms", (json_int_t)res->total_ms, "attributed", res->attributed));
}

static int param_mode(struct manager *m, json_t *params, enum retire_mode *mode)
{
	json_t *j = json_object_get(params, "mode");

	*mode = (*m->conf)->retire.mode == RETIRE_KEEP ? RETIRE_AUTO : (*m->conf)->retire.mode;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_string(j) || conf_retire_mode_parse(json_string_value(j), mode) < 0)
		return -EINVAL;
	return 0;
}

static void m_retire(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	json_t *w = json_object_get(params, "wait");
	struct cg_memory mem = { 0 };
	enum retire_mode mode;
	char reason[256];
	struct slot *s;
	int r;

	if (!require_privileged(m, call) || !(s = param_known_key(m, call, params)))
		return;
	if (param_mode(m, params, &mode) < 0)
		return invalid_parameter(m, call, "mode");
	if (w && !json_is_null(w) && !json_is_boolean(w))
		return invalid_parameter(m, call, "wait");
	if (mode == RETIRE_KEEP)
		return not_supported(m, call, "mode keep never removes a slot");
	cg_slot_memory(pool_cg(m->pool), s->name, &mem);
	json_t *now = json_pack("{s:s, s:s, s:I, s:i, s:s, s:s}", "key", s->key, "outcome", "retiring", "lru_bytes",
				(json_int_t)(mem.file + mem.anon), "elapsed_ms", 0, "slot", s->name, "mode",
				conf_retire_mode_name(mode));
	bool wait = json_is_true(w);
	r = pool_retire(m->pool, s->key, mode, wait ? retire_reply : NULL, call);
	if (r < 0) {
		json_decref(now);
		snprintf(reason, sizeof(reason), "%s", r == -EBUSY ? "the key's slot holds processes; retire it when it is idle"
						  : r == -EALREADY ? "the key's slot is already being retired"
								   : strerror(-r));
		return not_supported(m, call, reason);
	}
	if (!wait)
		vl_call_reply(call, now);
	else
		json_decref(now);
}

static void m_supervise(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;

	if (!require_privileged(m, call) || !param_key(m, call, params))
		return;
	not_supported(m, call, "supervised jobs ([job] exec =) are not available in this version");
}

static void m_reload(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	json_t *errors = json_array();
	int r;

	if (!require_privileged(m, call)) {
		json_decref(errors);
		return;
	}
	r = m->hooks.reload ? m->hooks.reload(m->hooks.ud, errors) : -EOPNOTSUPP;
	if (r < 0 && json_array_size(errors) == 0)
		json_array_append_new(errors, json_string(strerror(-r)));
	vl_call_reply(call, json_pack("{s:o}", "errors", errors));
}

static void m_metrics(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	struct metrics_in in = { m->pool, m->hooks.retire, m->attaches, m->refusals,
				 m->hooks.max_stall_ms ? *m->hooks.max_stall_ms : 0, m->hooks.stall, m->hooks.work,
				 m->hooks.dying };
	char *text = metrics_text(&in);

	if (!text)
		return not_supported(m, call, "out of memory");
	vl_call_reply(call, json_pack("{s:s}", "text", text));
	free(text);
}

static const struct {
	const char *name;
	vl_method_fn fn;
} methods[] = {
	{ "Attach", m_attach }, { "Release", m_release }, { "Retire", m_retire },   { "List", m_list },
	{ "Status", m_status }, { "Probe", m_probe },     { "Run", m_supervise },   { "Stop", m_supervise },
	{ "Restart", m_supervise }, { "Reload", m_reload }, { "Metrics", m_metrics },
};

int manager_new(struct vl_server *srv, struct pool *pool, const struct conf *const *conf,
		const struct manager_hooks *hooks, struct manager **out)
{
	struct manager *m = calloc(1, sizeof(*m));
	char name[128];
	int r;

	if (!m)
		return -ENOMEM;
	m->pool = pool;
	m->conf = conf;
	if (hooks)
		m->hooks = *hooks;
	r = vl_server_add_interface(srv, IFACE, interface_description);
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(methods); i++) {
		snprintf(name, sizeof(name), IFACE ".%s", methods[i].name);
		r = vl_server_add_method(srv, name, methods[i].fn, m);
	}
	if (r < 0) {
		free(m);
		return r;
	}
	*out = m;
	return 0;
}

void manager_free(struct manager *m)
{
	free(m);
}
