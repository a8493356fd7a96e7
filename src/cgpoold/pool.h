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
#include "state.h"
#include "util.h"

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
/* An Attach in two steps: the plan looks everything up once (the key's
 * slot, the class its run gets, whether the slot holds processes, the
 * tenant's verdict, and where the caller is now) and changes nothing; the
 * apply binds, writes and moves by the plan, on the same turn of the loop
 * (pool_attach_req is both). */
struct attach_plan {
	struct slot *slot;              /* the key's slot; NULL: a warm one is bound when applied */
	const struct conf_class *cls;   /* the class of the run: the slot's, or for a key bound now the
					 * named one, else the first matching the key; NULL: none */
	const struct conf_class *named; /* the class the Attach named, NULL: none named or no such class */
	struct slot *from;              /* the slot the caller is in now (NULL: none of the pool's, or not asked) */
	bool procs;                     /* the key's slot holds processes */
	int refused;                    /* 0, or why the apply will refuse: -ENOENT no such class,
					 * -EADDRINUSE the key runs another job, -EINPROGRESS the key's
					 * last job ended and what it left is still being killed (wait
					 * until the slot is empty, then plan again) */
};
/* caller (0: not asked) is the pid whose current slot goes into plan->from. */
void pool_attach_plan(struct pool *p, const struct attach_req *req, pid_t caller, struct attach_plan *plan);
/* Errors as pool_attach's, and plan->refused. */
int pool_attach_apply(struct pool *p, const struct attach_req *req, const struct attach_plan *plan,
		      struct slot **out, pid_t *bad_pid);
/* The job whose run the key's slot holds (NULL: none) and how many
 * processes hold it on this node. */
const char *pool_tenant_job(const struct slot *s);
unsigned pool_tenant_holders(const struct slot *s);
/* The job's last holder is gone and the processes it left are being killed */
bool pool_tenant_ending(const struct slot *s);
/* Stop watching the slot's holders and free its tenant (slot_tenant_free) */
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
/* Set limits (resource keys, values normalised as in struct conf_res) on the
 * run of every slot of job (named as for Freeze): a running job whose
 * scheduler changed its memory. Each holds for this run, as an Attach's.
 * each(s, r, ud) for every such slot, r the outcome (0 or -errno, the
 * slot's values as before the call); returns how many. */
unsigned pool_tenant_limit(struct pool *p, const char *job, const struct conf_res *limits, size_t nlimits,
			   void (*each)(struct slot *s, int r, void *ud), void *ud);

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
/* Memory pressure on the pool root (cg_pressure.h's trigger): a quarter of the
 * idle and spare warm slots, and one more, handed to retirement; logged */
unsigned pool_pressure(struct pool *p);
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
struct ev_loop *pool_loop(const struct pool *p);
/* slots the scrub left charged over recycle_max_memory and set aside, since start */
uint64_t pool_set_aside_count(const struct pool *p);
/* runs started in slots and slot cgroups made over the node's history (the
 * state keeps them across restarts); zeros without a state */
void pool_totals(const struct pool *p, struct state_totals *out);

#endif
