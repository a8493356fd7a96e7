/* slot.h - the slot state machine: state x event -> next state + actions.
 *
 * A slot is one long-lived cgroup. It is warm (no key), running (a key is
 * bound and processes are in it), idle (a key is bound, the cgroup is empty,
 * waiting for the key's next run) or retiring (removed, being verified). The
 * table in slot.c is the whole lifecycle; pool.c carries out the actions. */
#ifndef CGPOOL_SLOT_H
#define CGPOOL_SLOT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "util.h"

enum slot_state { SLOT_WARM, SLOT_RUNNING, SLOT_IDLE, SLOT_RETIRING, SLOT_NSTATES };

enum slot_event {
	SLOT_EV_ATTACH,       /* processes moved in by Attach/exec (a bound key's slot) */
	SLOT_EV_POPULATED,    /* the kernel says populated 1 without an attach of ours */
	SLOT_EV_EMPTY,        /* the kernel says populated 0 */
	SLOT_EV_RELEASE,      /* the key is finished for now */
	SLOT_EV_IDLE_TIMEOUT, /* idle_timeout passed */
	SLOT_EV_RETIRE,       /* remove the slot */
	SLOT_EV_RESTORE_RUNNING, /* start-up: the state file says its key runs */
	SLOT_EV_RESTORE_IDLE, /* start-up: the state file says its key is idle */
	SLOT_EV_UNRETIRE,     /* a retirement cancelled or failed: the key keeps the slot */
	SLOT_EV_UNRETIRE_WARM, /* the same for a slot without a key */
	SLOT_EV_RECYCLE,      /* a released key's idle slot taken for new keys before idle_timeout */
	SLOT_EV_LEFTOVER,     /* the scrub left more than recycle_max_memory charged to the slot */
	SLOT_NEVENTS,
};

/* what pool.c does on a transition, in this order */
enum slot_action {
	SLOT_ACT_RUN_END = 1 << 0,     /* close the current run record */
	SLOT_ACT_RUN_START = 1 << 1,   /* runs++, open a run record, reset peak */
	SLOT_ACT_APPLY = 1 << 2,       /* write the key's resource settings */
	SLOT_ACT_IDLE_TIMER = 1 << 3,  /* (re)start the idle timer */
	SLOT_ACT_STOP_TIMER = 1 << 4,  /* stop the idle timer */
	SLOT_ACT_SCRUB = 1 << 5,       /* reclaim memory, reset counters, unbind the key */
	SLOT_ACT_RETIRE = 1 << 6,      /* hand the slot to retirement */
	SLOT_ACT_ORPHAN = 1 << 7,      /* processes nobody gave it: bind key orphan.<name> (before RUN_START) */
	SLOT_ACT_SET_ASIDE = 1 << 8,   /* memory left after the scrub: bind key leftover.<name> */
};

/* Returns 0 and the next state and actions, or -EBUSY (the slot is running)
 * or -EINVAL (the event makes no sense in this state: nothing to do). */
int slot_step(enum slot_state state, enum slot_event ev, int recycle, enum slot_state *next, unsigned *actions);

const char *slot_state_name(enum slot_state s);
int slot_state_parse(const char *s, enum slot_state *out);
const char *slot_event_name(enum slot_event ev);

/* ---- the slot record: what the pool keeps of a slot, and what the state
 * file saves of it (state.h) */
#define SLOT_PREFIX "slot-" /* a slot's directory: slot-<id> */
#define SLOT_RECENT_RUNS 8

#define SLOT_NAME_MAX 32

/* The id of a slot's directory name: exactly SLOT_PREFIX "%u" (no sign, no
 * leading zero, nothing after), or -EINVAL. The one reader of slot names:
 * the pool's lookups, adoption at start-up and the state file use it. */
int slot_name_id(const char *name, unsigned *id);
#define CLASS_NAME_MAX 64

struct pool;
struct retire_result;
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
	bool peak_sampled;    /* memory_peak is the highest memory.current sampled (pool_peak.c),
			       * not the kernel's watermark for the run */
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
	bool legacy;              /* found without a run (an older cgpoold's slot): its directory keeps
				   * that one's limits and charge, so it is retired once empty */
	bool resume_now;          /* the retirement being started is such a one */
	uint64_t scrub_bytes;     /* what the worker reclaims */
	enum retire_mode retire_mode; /* how the pending retirement removes it */
	void (*retire_done)(const struct retire_result *res, void *ud); /* who waits for the retirement's outcome */
	void *retire_ud;
};

/* the run in progress or the last one, NULL when none */
const struct run *slot_last_run(const struct slot *s);

/* The tenant as data (the pool watches its holders: pool_tenant.c). The
 * slot's tenant, made when it has none (release true); a holder added
 * unless the tenant has it (same pid and start), not watched; both NULL
 * when out of memory. slot_tenant_free frees a tenant none of whose
 * watchers runs (a slot copy the state file gave, or one the pool stopped
 * watching) and its holders, closing their pidfds. */
struct tenant *slot_tenant_new(struct slot *s);
struct holder *slot_holder_add(struct slot *s, pid_t pid, uint64_t start);
/* a holder none of whose watchers runs, out of its tenant's list: its pidfd closed */
void slot_holder_free(struct holder *h);
void slot_tenant_free(struct slot *s);

/* ---- supervised jobs ([job KEY] with exec): the job's own state beside its
 * slot's. stopped: not running and not to be started; starting: spawned,
 * execve not yet reached; running: the main process runs; stopping:
 * stop_signal sent, waiting for the slot to empty (then killing it);
 * backoff: exited, restart_sec until the next start; failed: the start
 * limit was hit, or it failed with restart = no, until run. */
enum job_state { JOB_STOPPED, JOB_STARTING, JOB_RUNNING, JOB_STOPPING, JOB_BACKOFF, JOB_FAILED, JOB_NSTATES };

enum job_event {
	JOB_EV_RUN,          /* run / restart asked for, autostart, restart timer */
	JOB_EV_SPAWNED,      /* the child reached execve */
	JOB_EV_SPAWN_FAILED, /* no child, or it failed before execve */
	JOB_EV_EXIT_OK,      /* the main process exited 0 */
	JOB_EV_EXIT_FAILED,  /* ... with another status or by a signal */
	JOB_EV_STOP,         /* stop asked for (stop, restart, removed from the config) */
	JOB_EV_STOP_TIMEOUT, /* stop_timeout passed with processes left */
	JOB_EV_EMPTY,        /* the slot holds no process any more */
	JOB_EV_START_LIMIT,  /* more starts than start_limit allows (or it had, before a daemon restart) */
	JOB_EV_ADOPT,        /* at daemon start: its main process still runs in the slot */
	JOB_NEVENTS,
};

/* what job.c does on a transition, in this order */
enum job_action {
	JOB_ACT_RECORD_EXIT = 1 << 0, /* the exit status goes into the run record */
	JOB_ACT_CANCEL = 1 << 1,      /* stop the restart and stop timers */
	JOB_ACT_SIGNAL = 1 << 2,      /* stop_signal to the main process, start the stop timer */
	JOB_ACT_KILL = 1 << 3,        /* kill every process of the slot, again after a pause */
	JOB_ACT_SPAWN = 1 << 4,       /* count the start against the limit, then spawn */
	JOB_ACT_BACKOFF = 1 << 5,     /* start the restart timer (restart_sec) */
	JOB_ACT_RESET_LIMIT = 1 << 6, /* forget earlier starts (a run by hand after failed) */
};

/* restart: whether the job's policy restarts after this exit (always; or
 * on-failure and the exit failed). 0 and next state + actions, or -EINVAL
 * when the event changes nothing in this state. */
int job_step(enum job_state state, enum job_event ev, int restart, enum job_state *next, unsigned *actions);
const char *job_state_name(enum job_state s);
int job_state_parse(const char *s, enum job_state *out);
const char *job_event_name(enum job_event ev);

#endif
