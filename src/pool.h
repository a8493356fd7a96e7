/* pool.h - slots and keys: binding, runs, idle timers, recycling, persistence.
 *
 * The pool owns every slot below the pool root. A key is bound to at most one
 * slot and a slot to at most one key. State that must survive a daemon restart
 * (which key owns which slot, run counts, recent runs) is recorded in
 * <state_dir> after every transition (state.h); what the kernel knows (which
 * slot directories exist, which are populated) is read back from the cgroup
 * tree at start and wins over the file. */
#ifndef CGPOOL_POOL_H
#define CGPOOL_POOL_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cg.h"
#include "conf.h"
#include "retire.h"
#include "slot.h"
#include "util.h"

#define SLOT_PREFIX "slot-"
#define SLOT_RECENT_RUNS 8
#define SLOT_NAME_MAX 32
#define CLASS_NAME_MAX 64

struct pool;
struct slot;

/* A process that holds a job on this node (pool_tenant.c) */
struct holder {
	struct holder *next;
	struct slot *slot;
	pid_t pid;
	uint64_t start;   /* /proc/PID/stat starttime: a reused pid is not it */
	int pidfd;        /* -1 while not watched (restored, not yet resumed), or polled */
	ev_io io;
	ev_timer poll;    /* a kernel without pidfd_open (before 5.3): looked at every second */
};

/* The job a slot's run belongs to: one at a time per key */
struct tenant {
	char *job;        /* as the Attach named it, e.g. "slurm:4711:1000" */
	bool release;     /* release the key when the job ends */
	bool ending;      /* its last holder is gone: what is left is being killed */
	struct holder *holders;
	unsigned nholders;
	unsigned kill_rounds;
	ev_timer kill_timer;
	char *devices;    /* devices.deny of the job's current run, NULL: none known */
};

struct run {
	int64_t started_us; /* CLOCK_REALTIME */
	int64_t ended_us;   /* 0 while the run goes on */
	int exit_status;    /* -1: not known (processes exited on their own) */
	int signal;         /* the signal that killed a supervised job's main process, 0: none */
	bool unsupervised;  /* a supervised job's main process exited while no daemon watched it */
	uint64_t memory_peak; /* bytes; 0 when the kernel cannot tell */
	uint64_t oom_kills;   /* during the run */
	uint64_t oom_base;    /* memory.events oom_kill at run start */
};

struct slot {
	struct pool *pool;
	char name[SLOT_NAME_MAX]; /* directory name, "slot-<n>" */
	unsigned id;
	char key[KEY_MAX + 1];    /* "" while warm */
	char class_name[CLASS_NAME_MAX]; /* "" when no class matched */
	enum slot_state state;
	uint64_t cgroup_id;
	uint64_t runs;            /* runs of this key in this slot */
	struct run recent[SLOT_RECENT_RUNS]; /* ring: recent[(nrecent-1) % N] is the newest */
	unsigned nrecent;
	int64_t idle_since_us;    /* CLOCK_REALTIME, when it became idle */
	int64_t used_us;          /* CLOCK_REALTIME, the key's last attach, release or run end */
	uid_t owner_uid;          /* who bound the key (root: 0); kept in the state file */
	bool released;            /* Release said the key is done: its idle slot is recycled first */
	uint16_t run_limits;      /* resource keys the current run's Attach set (bits of res.h's keys) */
	struct tenant *tenant;    /* the job its run belongs to; NULL: none (pool_tenant.c) */
	ev_timer idle_timer;
	struct slot *lprev, *lnext; /* in the pool's warm list (warm) or idle list (idle), else unlinked */
	bool listed;              /* in one of those lists */
	bool busy;                /* a kernel write for it runs on a worker: not handed out */
	bool resume_retire;       /* start-up: a retirement the last daemon left unfinished */
	bool resume_now;          /* the retirement being started is such a one */
	uint64_t scrub_bytes;     /* what the worker reclaims */
	enum retire_mode retire_mode; /* how the pending retirement removes it */
	retire_done_fn retire_done; /* who waits for the retirement's outcome */
	void *retire_ud;
};

#define POOL_RECENT_RETIREMENTS 16

/* Adopt the slots below the cgroup root (cg), restore keys and runs from the
 * state file, reconcile both with what the kernel says, and create warm slots.
 * conf must outlive the pool or be replaced with pool_set_conf(). */
int pool_new(struct ev_loop *loop, struct cg *cg, const struct conf *conf, struct pool **out);
void pool_free(struct pool *p);
void pool_set_conf(struct pool *p, const struct conf *conf);

/* Bind key to its slot (or a warm one; class_name NULL: the first [class]
 * matching the key) and move pids into it. Errors: -ENOSPC pool full
 * (max_slots), -ENFILE the kernel has no cgroup IDs left (a new slot's mkdir
 * said ENOSPC: dying memcgs hold them),
 * -ESRCH a pid does not exist (*bad_pid says which), -EBUSY the key's slot is
 * being retired, -ENOENT no such class; others from the kernel. When the
 * kernel refuses a pid after earlier ones were moved, those stay in the slot,
 * which is then bound and running, and the error is still returned. */
int pool_attach(struct pool *p, const char *key, const char *class_name, const pid_t *pids, size_t npids,
		struct slot **out, pid_t *bad_pid);
/* The key's run ends now if its slot holds no process any more, before
 * its event arrives (a job's next process is born in the slot: the attach
 * that follows must see a new run). */
void pool_run_settle(struct pool *p, const char *key);
/* A supervised job's main process ended: its exit status (-1 unknown) or
 * the signal that killed it goes into the key's current or last run.
 * -ENOENT: no slot for the key, or no run. */
int pool_record_exit(struct pool *p, const char *key, int exit_status, int signal, bool unsupervised);
/* An Attach as a caller asks for it: a key it binds is owned by owner (0:
 * root and socket_group); limits (resource keys, values normalised as in
 * struct conf_res) are written after the class's and the key's own settings,
 * before the processes move, and hold for this run: the next run starts from
 * the kernel's defaults for them. */
struct attach_req {
	const char *key;
	const char *class_name;
	uid_t owner;
	const pid_t *pids;
	size_t npids;
	const struct conf_res *limits;
	size_t nlimits;
	const char *job;  /* whose job the run is (NULL: none): the key is this job's alone */
	pid_t hold;       /* > 0: this process holds the job; when every holder exited, the slot is emptied */
	bool keep;        /* with hold: do not release the key when the job ends */
	const struct conf_res **refused; /* out, may be NULL: the limit the kernel refused, when one was */
};
int pool_attach_req(struct pool *p, const struct attach_req *req, struct slot **out, pid_t *bad_pid);
/* The job whose run the key's slot holds (NULL: none) and how many
 * processes hold it on this node. */
const char *pool_tenant_job(const struct slot *s);
unsigned pool_tenant_holders(const struct slot *s);
/* The state file's tenant of a slot being loaded; pool_tenant_free frees it. */
int pool_tenant_restored(struct slot *s, const char *job, bool release, bool ending);
int pool_tenant_restored_holder(struct slot *s, pid_t pid, uint64_t start);
void pool_tenant_free(struct slot *s);
/* pidfd_open(2) for the holders (-1 and errno ENOSYS: polled instead);
 * replaced by tests to stand for a kernel without it */
extern int (*pool_tenant_pidfd_open)(pid_t pid);
int pool_tenant_pidfd_open_default(pid_t pid);
/* Freeze (or thaw) the slots whose run belongs to job: named so, or a name
 * that begins with job and ':' ("slurm:4711" names "slurm:4711:1000").
 * each(s, r, ud) for every such slot, r the outcome (0 or -errno); returns
 * how many. A job's slot is thawed when the job ends. */
unsigned pool_tenant_freeze(struct pool *p, const char *job, bool frozen, void (*each)(struct slot *s, int r, void *ud),
			    void *ud);

/* pool_attach for a caller: a key it binds is owned by owner (0: root and
 * socket_group). */
int pool_attach_owned(struct pool *p, const char *key, const char *class_name, uid_t owner, const pid_t *pids,
		      size_t npids, struct slot **out, pid_t *bad_pid);
/* Slots bound to keys owned by uid, and slots not warm (bound or retiring):
 * what the quota of unprivileged callers counts. */
void pool_usage(const struct pool *p, uid_t uid, unsigned *of_uid, unsigned *in_use);
/* The key is finished for now: its slot, once idle, is the first recycled
 * for a new key (before idle_timeout); until then an Attach of the key lands
 * in it again. -ENOENT: no slot for the key. */
int pool_release(struct pool *p, const char *key, struct slot **out);

/* Kernel writes that can block (mkdir of warm slots, the reclaim of a
 * recycled slot) run on w's threads; without it (tests) on the loop. */
struct work;
void pool_set_work(struct pool *p, struct work *w);

/* Retirement goes through r (verified removal); without it a slot leaving
 * the pool is removed with a plain rmdir and nothing is verified. Setting it
 * takes up the retirements the last daemon left unfinished (the state file
 * says retiring): removed ones are verified again, the others resumed. */
void pool_set_retire(struct pool *p, struct retire *r);
/* Remove key's slot now. done (may be NULL) gets the outcome. Errors:
 * -ENOENT no such key, -EBUSY it is running, -EALREADY already retiring,
 * -EINVAL mode keep. */
int pool_retire(struct pool *p, const char *key, enum retire_mode mode, retire_done_fn done, void *ud);
/* Memory pressure: retire up to n slots nobody waits for (at most
 * retire.rate per call), idle ones least recently used first, then warm
 * slots above the warm target. An idle slot whose key was used (attached,
 * released, run ended) less than idle_timeout ago is never taken. Returns
 * how many were handed to retirement. */
unsigned pool_shrink(struct pool *p, unsigned n);
/* the last retirements, newest first; returns how many were copied */
size_t pool_recent_retirements(const struct pool *p, struct retire_result *out, size_t max);

struct slot *pool_find(struct pool *p, const char *key);
/* Calls fn for every slot in id order; stops when fn returns non-zero. */
int pool_foreach(struct pool *p, int (*fn)(struct slot *s, void *ud), void *ud);
/* The slot with the smallest id >= id, or NULL: a cursor that survives slots
 * leaving the pool between two calls. */
struct slot *pool_slot_from(struct pool *p, unsigned id);
void pool_counts(const struct pool *p, unsigned counts[SLOT_NSTATES]);
struct cg *pool_cg(const struct pool *p);
/* the run in progress or the last one, NULL when none */
const struct run *slot_last_run(const struct slot *s);

#endif
