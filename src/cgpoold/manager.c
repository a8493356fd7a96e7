/* manager.c - the io.cgpool.Manager Varlink interface: requests to the pool */
#include "config.h"

#include "manager.h"
#include "manager_internal.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "varlink_auth.h"
#include "cgpool.h"
#include "cg.h"
#include "metrics_dying.h"
#include "job.h"
#include "log.h"
#include "manager_features.h"
#include "metrics.h"
#include "retire_probe.h"
#include "res.h"
#include "retire.h"
#include "util.h"

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
	"# signal: what killed a supervised job's main process (\"SEGV\"); reason:\n"
	"# \"exited while unsupervised\" when no daemon saw the exit\n"
	"# memory_peak: bytes, once the run ended (null: not known); memory_peak_sampled:\n"
	"# it is the highest memory.current sampled while the run went on (cgroup v2\n"
	"# before Linux 6.12, where the kernel's peak cannot be reset for a run), a\n"
	"# lower bound, rather than the kernel's peak for the run\n"
	"type Run (started: int, ended: ?int, exit_status: ?int, signal: ?string, reason: ?string,\n"
	"  memory_peak: ?int, memory_peak_sampled: bool, oom_kills: int)\n"
	"\n"
	"# job_state, main_pid, restarts, next_restart: supervised keys ([job] exec =)\n"
	"type Slot (key: ?string, state: string, name: string, path: string, cgroup_id: int,\n"
	"  runs: int, class: ?string, memory_current: ?int, nprocs: int, idle_since: ?int, owner_uid: ?int,\n"
	"  job_state: ?string, main_pid: ?int, restarts: ?int, next_restart: ?int, released: ?bool,\n"
	"  run_limits: ?[]string, job: ?string, holders: ?int)\n"
	"\n"
	"# limits: resource keys for this run ({\"memory.max\": \"64M\"}; root and\n"
	"# socket_group only), written after the class's and the key's own settings,\n"
	"# before the processes move; the next run starts without them\n"
	"# job (root and socket_group only): whose job the run is; the key is that\n"
	"# job's alone while it runs or is held (another job's Attach, or one naming\n"
	"# none: KeyBusy). hold: a pid that holds the job on this node; when every\n"
	"# holder has exited, what is left in the slot is killed and the key released\n"
	"# (unless release is false)\n"
	"method Attach(key: string, pids: []int, class: ?string, limits: ?object, job: ?string,\n"
	"  hold: ?int, release: ?bool) -> (slot: Slot)\n"
	"method Release(key: string) -> (slot: Slot)\n"
	"# Freeze (frozen true) or thaw the slots whose run is job's: named so, or a\n"
	"# name that begins with job and \":\" (\"slurm:4711\" names \"slurm:4711:1000\");\n"
	"# slots: the slots changed (none: no such job on this node). A job's slot is\n"
	"# thawed when the job ends. NotSupported without cgroup.freeze (no cgroup2)\n"
	"method Freeze(job: string, frozen: bool) -> (slots: []Slot)\n"
	"# Set limits on the runs of the slots whose run is job's (named as for\n"
	"# Freeze), as Attach's limits but not devices.deny: a running job whose\n"
	"# scheduler changed its memory. slots: the slots changed (none: no such job\n"
	"# on this node). A refused value leaves the slot's limits as they were\n"
	"method Limit(job: string, limits: object) -> (slots: []Slot)\n"
	"# outcome: released, reparented, drained, pinned, cancelled (the key was attached again);\n"
	"# \"retiring\" when not waited for\n"
	"method Retire(key: string, mode: ?string, wait: ?bool) -> (key: string, outcome: string,\n"
	"  lru_bytes: int, elapsed_ms: int, slot: string, mode: string, drained_bytes: ?int, total_ms: ?int,\n"
	"  attributed: ?bool, flushed_bytes: ?int, evidence: ?string)\n"
	"# With \"more\": one reply per slot ({\"slots\": [Slot]}), each but the last\n"
	"# with \"continues\"; an empty pool (or slots gone while streaming) ends with\n"
	"# {\"slots\": []}; the final reply also holds the supervised keys that have no\n"
	"# slot (never started). Without \"more\": all slots in one reply, or the error\n"
	"# org.varlink.service.ExpectedMore when they do not fit one message (1 MiB).\n"
	"method List() -> (slots: []Slot)\n"
	"method Status(key: ?string) -> (daemon: ?object, slot: ?Slot, recent_runs: ?[]Run)\n"
	"# refresh: run the LRU-reparenting experiment again (its verdict comes later)\n"
	"method Probe(refresh: ?bool) -> (hierarchy: string, memory: string, kernel: string,\n"
	"  lru_reparenting: string, lru_reparenting_evidence: string, probe_running: bool, features: object,\n"
	"  fallbacks: object, probe_medium: ?string)\n"
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
	"# limit: which one was reached: max_slots, max_slots_per_user (the caller's\n"
	"# share), reserved (the last slots, kept for root and socket_group) or\n"
	"# memcg_ids (the kernel's memory cgroup IDs, held by dying memcgs); reason:\n"
	"# the same in words\n"
	"error PoolFull(max_slots: int, limit: string, reason: string)\n"
	"error NotSupported(reason: string)\n"
	"# the kernel refused a limit of the Attach (errno in words as reason); the\n"
	"# run's limits are as they were and no process was moved\n"
	"error LimitRefused(key: string, limit: string, value: string, reason: string)\n"
	"error RetireFailed(key: string, reason: string)\n"
	"# the key's run is another job's (job), or a job's and the Attach names none\n"
	"error KeyBusy(key: string, job: string)\n"
	"# the key's last job (job) ended on this node and the processes it left in\n"
	"# the slot were still being killed after the Attach waited 4 s for them\n"
	"error JobEnding(key: string, job: string, processes: int, reason: string)\n";


/* ---- replies */

void manager_reply_error(struct manager *m, struct vl_call *call, const char *error, json_t *params)
{
	m->refusals++;
	vl_call_error(call, error, params);
}

void manager_invalid_parameter(struct manager *m, struct vl_call *call, const char *name)
{
	manager_reply_error(m, call, VL_ERR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", name));
}

void manager_not_supported(struct manager *m, struct vl_call *call, const char *reason)
{
	manager_reply_error(m, call, ERR("NotSupported"), json_pack("{s:s}", "reason", reason));
}

void manager_permission_denied(struct manager *m, struct vl_call *call, const char *reason)
{
	manager_reply_error(m, call, ERR("PermissionDenied"), json_pack("{s:s}", "reason", reason));
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
	json_object_set_new(j, "owner_uid", s->key[0] ? json_integer((json_int_t)s->owner_uid) : json_null());
	json_object_set_new(j, "idle_since",
			    s->state == SLOT_IDLE ? json_integer(s->idle_since_us) : json_null());
	json_object_set_new(j, "released", s->key[0] ? json_boolean(s->released) : json_null());
	json_object_set_new(j, "run_limits", s->run_limits ? res_mask_json(s->run_limits) : json_null());
	json_object_set_new(j, "job", pool_tenant_job(s) ? json_string(pool_tenant_job(s)) : json_null());
	json_object_set_new(j, "holders", pool_tenant_job(s) ? json_integer(pool_tenant_holders(s)) : json_null());
	return j;
}

static json_t *run_json(const struct run *r)
{
	json_t *j = json_pack("{s:I, s:I}", "started", (json_int_t)r->started_us, "oom_kills",
			      (json_int_t)r->oom_kills);

	json_object_set_new(j, "ended", r->ended_us ? json_integer(r->ended_us) : json_null());
	json_object_set_new(j, "exit_status", r->exit_status >= 0 ? json_integer(r->exit_status) : json_null());
	json_object_set_new(j, "signal", r->signal > 0 && sigabbrev_np(r->signal) ? json_string(sigabbrev_np(r->signal))
									: json_null());
	if (r->unsupervised)
		json_object_set_new(j, "reason", json_string("exited while unsupervised"));
	json_object_set_new(j, "memory_peak",
			    r->ended_us && r->memory_peak ? json_integer((json_int_t)r->memory_peak) : json_null());
	json_object_set_new(j, "memory_peak_sampled", json_boolean(r->peak_sampled));
	return j;
}

static void add_job_fields(json_t *j, const struct job_info *ji)
{
	json_object_set_new(j, "job_state", json_string(job_state_name(ji->state)));
	json_object_set_new(j, "main_pid", ji->main_pid > 0 ? json_integer(ji->main_pid) : json_null());
	json_object_set_new(j, "restarts", json_integer((json_int_t)ji->restarts));
	json_object_set_new(j, "next_restart", ji->next_restart_us ? json_integer(ji->next_restart_us) : json_null());
}

/* the Slot object, with the job's fields when the key is supervised */
static json_t *slot_json(struct manager *m, const struct slot *s)
{
	json_t *j = manager_slot_json(m->pool, s);
	struct job_info ji;

	if (j && s->key[0] && m->hooks.jobs && jobs_info(m->hooks.jobs, s->key, &ji) == 0)
		add_job_fields(j, &ji);
	return j;
}

void manager_reply_slot(struct manager *m, struct vl_call *call, const struct slot *s)
{
	vl_call_reply(call, json_pack("{s:o}", "slot", slot_json(m, s)));
}

/* ---- who may do what */

/* root and members of socket_group may do everything (judged at accept) */
bool manager_privileged(struct manager *m, struct vl_call *call)
{
	return vl_call_privileged(call);
}

static bool require_privileged(struct manager *m, struct vl_call *call)
{
	if (manager_privileged(m, call))
		return true;
	manager_permission_denied(m, call, "only root and members of socket_group may do this");
	return false;
}

/* ---- parameters */

const char *manager_param_key(struct manager *m, struct vl_call *call, json_t *params)
{
	json_t *k = json_object_get(params, "key");
	const char *why;

	if (!json_is_string(k)) {
		manager_invalid_parameter(m, call, "key");
		return NULL;
	}
	if (key_validate(json_string_value(k), &why) < 0 || strlen(json_string_value(k)) != json_string_length(k)) {
		if (strlen(json_string_value(k)) != json_string_length(k))
			why = "key may not contain control characters";
		manager_reply_error(m, call, ERR("InvalidKey"), json_pack("{s:s%, s:s}", "key", json_string_value(k),
								     json_string_length(k), "reason", why));
		return NULL;
	}
	return json_string_value(k);
}

static struct slot *param_known_key(struct manager *m, struct vl_call *call, json_t *params)
{
	const char *key = manager_param_key(m, call, params);
	struct slot *s;

	if (!key)
		return NULL;
	s = pool_find(m->pool, key);
	if (!s)
		manager_reply_error(m, call, ERR("NoSuchKey"), json_pack("{s:s}", "key", key));
	return s;
}

static void m_release(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	struct slot *s;

	if (!require_privileged(m, call) || !(s = param_known_key(m, call, params)))
		return;
	pool_release(m->pool, s->key, &s);
	manager_reply_slot(m, call, s);
}

/* ---- Freeze and Limit: the slots of a job */

struct job_slots {
	struct manager *m;
	json_t *slots;
	int r; /* the first failure */
};

static void job_slot(struct slot *s, int r, void *ud)
{
	struct job_slots *js = ud;

	if (r < 0 && js->r == 0)
		js->r = r;
	json_array_append_new(js->slots, slot_json(js->m, s));
}

/* the job a call names (root and socket_group only); NULL when the call was answered */
static const char *param_job(struct manager *m, struct vl_call *call, json_t *params)
{
	json_t *job = json_object_get(params, "job");

	if (!require_privileged(m, call))
		return NULL;
	if (!json_is_string(job) || !json_string_length(job) || json_string_length(job) > 256) {
		manager_invalid_parameter(m, call, "job");
		return NULL;
	}
	return json_string_value(job);
}

/* the reply: the job's slots, or what the first failure was (what: its file or its kind) */
static void reply_job_slots(struct manager *m, struct vl_call *call, struct job_slots *js, const char *what)
{
	char reason[160];

	if (js->r < 0) {
		json_decref(js->slots);
		snprintf(reason, sizeof(reason), "%s: %s", what, strerror(-js->r));
		manager_not_supported(m, call, reason);
		return;
	}
	vl_call_reply(call, json_pack("{s:o}", "slots", js->slots));
}

static void m_freeze(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	json_t *frozen = json_object_get(params, "frozen");
	struct job_slots js = { m, NULL, 0 };
	const char *job;

	if (!(job = param_job(m, call, params)))
		return;
	if (!json_is_boolean(frozen)) {
		manager_invalid_parameter(m, call, "frozen");
		return;
	}
	js.slots = json_array();
	pool_tenant_freeze(m->pool, job, json_is_true(frozen), job_slot, &js);
	reply_job_slots(m, call, &js, "cgroup.freeze");
}

/* a running job's limits, as its scheduler changed them */
static void m_limit(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	struct job_slots js = { m, NULL, 0 };
	struct conf_res limits[CONF_MAX_RES];
	const char *job;
	size_t n = 0;

	if (!(job = param_job(m, call, params)) || !manager_param_limits(m, call, params, limits, &n))
		return;
	if (n == 0) {
		manager_invalid_parameter(m, call, "limits");
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(limits[i].name, "devices.deny") == 0)
			return manager_not_supported(m, call, "devices.deny is the job's from its first Attach; Limit does "
							      "not change it");
	js.slots = json_array();
	pool_tenant_limit(m->pool, job, limits, n, job_slot, &js);
	reply_job_slots(m, call, &js, "a limit was refused");
}

/* ---- List: streamed with "more", one reply otherwise */

struct list_stream {
	struct manager *m;
	struct pool *pool;
	unsigned next_id; /* the next slot to send: the first with an id >= this */
};

static struct slot *slot_after(struct pool *pool, const struct slot *s)
{
	return s->id < UINT_MAX ? pool_slot_from(pool, s->id + 1) : NULL;
}

/* {"slots": [s]}, or {"slots": []} when s is NULL */
/* a supervised key that has no slot yet (never started): its job alone */
static json_t *job_without_slot(struct manager *m, const char *key)
{
	struct job_info ji;
	json_t *j;

	if (!m->hooks.jobs || jobs_info(m->hooks.jobs, key, &ji) < 0)
		return NULL;
	j = json_pack("{s:s, s:n}", "key", key, "state");
	if (j)
		add_job_fields(j, &ji);
	return j;
}

struct unbound {
	struct manager *m;
	json_t *arr;
};

static void add_unbound(const char *key, void *ud)
{
	struct unbound *u = ud;
	json_t *j = pool_find(u->m->pool, key) ? NULL : job_without_slot(u->m, key);

	if (j)
		json_array_append_new(u->arr, j);
}

/* the supervised keys without a slot (never started), after the slots */
static void append_unbound(struct manager *m, json_t *arr)
{
	struct unbound u = { m, arr };

	if (m->hooks.jobs)
		jobs_foreach(m->hooks.jobs, add_unbound, &u);
}

/* last: the final reply, which also carries the supervised keys without a slot */
static json_t *list_reply(struct manager *m, const struct slot *s, bool last)
{
	json_t *arr = json_array();

	if (s)
		json_array_append_new(arr, slot_json(m, s));
	if (last)
		append_unbound(m, arr);
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
		if (vl_call_continue(call, list_reply(ls->m, s, false)) < 0) {
			s = NULL; /* the connection is closing: the final reply is dropped */
			break;
		}
		ls->next_id = next->id;
		s = next;
	}
	vl_call_reply(call, list_reply(ls->m, s, true));
	free(ls);
}

struct list_all {
	struct manager *m;
	json_t *slots;
	size_t bytes; /* encoded, with a separator each */
};

static int list_one(struct slot *s, void *ud)
{
	struct list_all *la = ud;
	json_t *j = slot_json(la->m, s);

	la->bytes += json_dumpb(j, NULL, 0, JSON_COMPACT) + 1;
	json_array_append_new(la->slots, j);
	return la->bytes + LIST_REPLY_OVERHEAD > VL_MAX_REPLY ? -EMSGSIZE : 0;
}

static void m_list(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	struct list_all la = { m, json_array(), 0 };
	struct list_stream *ls;

	if (vl_call_more(call)) {
		json_decref(la.slots);
		if (!(ls = calloc(1, sizeof(*ls))))
			return manager_not_supported(m, call, "out of memory");
		ls->m = m;
		ls->pool = m->pool;
		return list_batch(call, ls);
	}
	if (pool_foreach(m->pool, list_one, &la) < 0) {
		json_decref(la.slots);
		return manager_reply_error(m, call, VL_ERR_EXPECTED_MORE, NULL);
	}
	append_unbound(m, la.slots);
	vl_call_reply(call, json_pack("{s:o}", "slots", la.slots));
}

static json_t *retirements_json(struct manager *m)
{
	struct retire_result rr[8];
	size_t n = pool_recent_retirements(m->pool, rr, ARRAY_SIZE(rr));
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:s}", "slot", rr[i].name,
						     "key", rr[i].key, "mode", conf_retire_mode_name(rr[i].mode), "outcome",
						     retire_outcome_name(rr[i].outcome), "lru_bytes",
						     (json_int_t)rr[i].lru_bytes, "drained_bytes",
						     (json_int_t)rr[i].drained_bytes, "elapsed_ms", (json_int_t)rr[i].elapsed_ms,
						     "flushed_bytes", (json_int_t)rr[i].flushed_bytes, "evidence",
						     rr[i].evidence));
	return arr;
}

static json_t *daemon_json(struct manager *m)
{
	const struct cg_info *info = cg_get_info(pool_cg(m->pool));
	const struct conf *c = *m->conf;
	struct retire_stats st = { 0 };
	struct cg_dying dying;
	struct state_totals tot;
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
	pool_totals(m->pool, &tot);
	json_object_set_new(j, "runs_placed", json_integer((json_int_t)tot.runs_placed));
	json_object_set_new(j, "slot_cgroups_created", json_integer((json_int_t)tot.slot_cgroups));
	if (m->hooks.census) {
		census_cache_get(m->hooks.census, NULL); /* a fresh one for the next call */
		json_object_set_new(j, "census_history", census_cache_history(m->hooks.census));
	}
	return j;
}

static void m_status(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	json_t *k = json_object_get(params, "key"), *runs, *j;
	const char *key;
	struct slot *s;
	unsigned n;

	if (!k || json_is_null(k))
		return (void)vl_call_reply(call, json_pack("{s:o}", "daemon", daemon_json(m)));
	if (!(key = manager_param_key(m, call, params)))
		return;
	if (!(s = pool_find(m->pool, key)) && (j = job_without_slot(m, key)) != NULL)
		return (void)vl_call_reply(call, json_pack("{s:o, s:[]}", "slot", j, "recent_runs"));
	if (!s)
		return manager_reply_error(m, call, ERR("NoSuchKey"), json_pack("{s:s}", "key", key));
	runs = json_array();
	n = s->nrecent < SLOT_RECENT_RUNS ? s->nrecent : SLOT_RECENT_RUNS;
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(runs, run_json(&s->recent[(s->nrecent - 1 - i) % SLOT_RECENT_RUNS]));
	vl_call_reply(call, json_pack("{s:o, s:o}", "slot", slot_json(m, s), "recent_runs", runs));
}

static void m_probe(struct vl_call *call, json_t *params, void *ud)
{
	struct manager *m = ud;
	const struct cg_info *info = cg_get_info(pool_cg(m->pool));
	const char *why = "";
	json_t *refresh = json_object_get(params, "refresh"), *reply, *features, *fallbacks;
	enum lru_reparenting lru;

	if (refresh && !json_is_null(refresh) && !json_is_boolean(refresh))
		return manager_invalid_parameter(m, call, "refresh");
	if (json_is_true(refresh)) {
		if (!require_privileged(m, call))
			return;
		if (m->hooks.probe)
			probe_start(m->hooks.probe); /* -EALREADY: one is running */
	}
	lru = m->hooks.retire ? retire_lru_reparenting(m->hooks.retire, &why) : LRU_UNKNOWN;
	manager_features_json(info, &features, &fallbacks);
	reply = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "hierarchy", cg_hierarchy_name(info->hierarchy),
			  "memory", info->memory_v2 ? "v2" : "v1", "kernel", info->kernel, "lru_reparenting",
			  lru_reparenting_name(lru), "lru_reparenting_evidence", why, "features", features,
			  "fallbacks", fallbacks);
	json_object_set_new(reply, "probe_running", json_boolean(probe_running(m->hooks.probe)));
	json_object_set_new(reply, "probe_medium", json_string(probe_medium(m->hooks.probe)));
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
	vl_call_reply(call, json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:I, s:I, s:b, s:I, s:s}", "key", res->key, "outcome",
				      retire_outcome_name(res->outcome), "lru_bytes", (json_int_t)res->lru_bytes,
				      "elapsed_ms", (json_int_t)res->elapsed_ms, "slot", res->name, "mode",
				      conf_retire_mode_name(res->mode), "drained_bytes", (json_int_t)res->drained_bytes,
				      "total_ms", (json_int_t)res->total_ms, "attributed", res->attributed,
				      "flushed_bytes", (json_int_t)res->flushed_bytes, "evidence", res->evidence));
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
		return manager_invalid_parameter(m, call, "mode");
	if (w && !json_is_null(w) && !json_is_boolean(w))
		return manager_invalid_parameter(m, call, "wait");
	if (mode == RETIRE_KEEP)
		return manager_not_supported(m, call, "mode keep never removes a slot");
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
		return manager_not_supported(m, call, reason);
	}
	if (!wait)
		vl_call_reply(call, now);
	else
		json_decref(now);
}

/* Run, Stop, Restart of a supervised job: the slot as it is right after */
static void supervise(struct vl_call *call, json_t *params, struct manager *m, int (*op)(struct jobs *, const char *))
{
	const char *key;
	struct slot *s;
	char reason[KEY_MAX + 96];
	int r;

	if (!require_privileged(m, call) || !(key = manager_param_key(m, call, params)))
		return;
	r = m->hooks.jobs ? op(m->hooks.jobs, key) : -ENOENT;
	if (r == -ENOENT)
		return manager_reply_error(m, call, ERR("NoSuchKey"), json_pack("{s:s}", "key", key));
	if (!(s = pool_find(m->pool, key))) {
		snprintf(reason, sizeof(reason), "job %s has no slot: it could not start (the daemon's log says why)", key);
		return manager_not_supported(m, call, reason);
	}
	manager_reply_slot(m, call, s);
}

static void m_run(struct vl_call *call, json_t *params, void *ud)
{
	supervise(call, params, ud, jobs_run);
}

static void m_stop(struct vl_call *call, json_t *params, void *ud)
{
	supervise(call, params, ud, jobs_stop);
}

static void m_restart(struct vl_call *call, json_t *params, void *ud)
{
	supervise(call, params, ud, jobs_restart);
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
				 m->hooks.dying, m->hooks.census, m->waited };
	char *text = metrics_text(&in);

	if (!text)
		return manager_not_supported(m, call, "out of memory");
	vl_call_reply(call, json_pack("{s:s}", "text", text));
	free(text);
}

static const struct {
	const char *name;
	vl_method_fn fn;
} methods[] = {
	{ "Attach", manager_attach }, { "Release", m_release }, { "Freeze", m_freeze },   { "Limit", m_limit },   { "Retire", m_retire },
	{ "List", m_list },
	{ "Status", m_status }, { "Probe", m_probe },     { "Run", m_run },         { "Stop", m_stop },
	{ "Restart", m_restart }, { "Reload", m_reload }, { "Metrics", m_metrics },
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
	m->loop = pool_loop(pool);
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
	if (m)
		manager_attach_fini(m);
	free(m);
}
