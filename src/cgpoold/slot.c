/* slot.c - the slot state machine as a table, and the slot record's tenant as data */
#include "config.h"

#include "slot.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#define OK 0
#define BUSY (-EBUSY)
#define NOP (-EINVAL)

struct transition {
	int result;
	enum slot_state next;
	unsigned actions;
};

enum {
	START = SLOT_ACT_RUN_START | SLOT_ACT_APPLY | SLOT_ACT_STOP_TIMER,
	END = SLOT_ACT_RUN_END | SLOT_ACT_IDLE_TIMER,
};

/* Events not listed in a row are refused (-EINVAL, nothing to do). */

/* IDLE_TIMEOUT depends on recycle: the recycle=no row is patched in slot_step,
 * and RECYCLE is refused then. */
static const struct transition table[SLOT_NSTATES][SLOT_NEVENTS] = {
	[SLOT_WARM] = {
		[SLOT_EV_ATTACH] = { OK, SLOT_RUNNING, START },
		/* a warm slot is never handed out with processes inside, nor
		 * with what the last key left charged to it (the scrub's check) */
		[SLOT_EV_POPULATED] = { OK, SLOT_RUNNING, SLOT_ACT_ORPHAN | SLOT_ACT_RUN_START },
		[SLOT_EV_EMPTY] = { NOP, SLOT_WARM, 0 },
		[SLOT_EV_RELEASE] = { NOP, SLOT_WARM, 0 },
		[SLOT_EV_IDLE_TIMEOUT] = { NOP, SLOT_WARM, 0 },
		[SLOT_EV_RETIRE] = { OK, SLOT_RETIRING, SLOT_ACT_RETIRE },
		/* adopted at start-up (every slot starts warm), its key restored */
		[SLOT_EV_RESTORE_RUNNING] = { OK, SLOT_RUNNING, 0 },
		[SLOT_EV_RESTORE_IDLE] = { OK, SLOT_IDLE, 0 },
		[SLOT_EV_UNRETIRE] = { NOP, SLOT_WARM, 0 },
		[SLOT_EV_UNRETIRE_WARM] = { NOP, SLOT_WARM, 0 },
		[SLOT_EV_RECYCLE] = { NOP, SLOT_WARM, 0 },
		[SLOT_EV_LEFTOVER] = { OK, SLOT_IDLE, SLOT_ACT_SET_ASIDE | SLOT_ACT_IDLE_TIMER },
	},
	[SLOT_RUNNING] = {
		/* the run goes on with the limits it has: an Attach's own are written over them */
		[SLOT_EV_ATTACH] = { OK, SLOT_RUNNING, 0 },
		[SLOT_EV_POPULATED] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_EMPTY] = { OK, SLOT_IDLE, END },
		[SLOT_EV_RELEASE] = { OK, SLOT_RUNNING, 0 },
		[SLOT_EV_IDLE_TIMEOUT] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_RETIRE] = { BUSY, SLOT_RUNNING, 0 },
		[SLOT_EV_RESTORE_RUNNING] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_RESTORE_IDLE] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_UNRETIRE] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_UNRETIRE_WARM] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_RECYCLE] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_LEFTOVER] = { NOP, SLOT_RUNNING, 0 },
	},
	[SLOT_IDLE] = {
		[SLOT_EV_ATTACH] = { OK, SLOT_RUNNING, START },
		[SLOT_EV_POPULATED] = { OK, SLOT_RUNNING, START },
		[SLOT_EV_EMPTY] = { NOP, SLOT_IDLE, 0 },
		[SLOT_EV_RELEASE] = { OK, SLOT_IDLE, SLOT_ACT_IDLE_TIMER },
		[SLOT_EV_IDLE_TIMEOUT] = { OK, SLOT_WARM, SLOT_ACT_SCRUB },
		[SLOT_EV_RETIRE] = { OK, SLOT_RETIRING, SLOT_ACT_STOP_TIMER | SLOT_ACT_RETIRE },
		[SLOT_EV_RESTORE_RUNNING] = { NOP, SLOT_IDLE, 0 },
		[SLOT_EV_RESTORE_IDLE] = { NOP, SLOT_IDLE, 0 },
		[SLOT_EV_UNRETIRE] = { NOP, SLOT_IDLE, 0 },
		[SLOT_EV_UNRETIRE_WARM] = { NOP, SLOT_IDLE, 0 },
		[SLOT_EV_RECYCLE] = { OK, SLOT_WARM, SLOT_ACT_STOP_TIMER | SLOT_ACT_SCRUB },
		[SLOT_EV_LEFTOVER] = { NOP, SLOT_IDLE, 0 },
	},
	[SLOT_RETIRING] = {
		/* pool_attach cancels the retirement first (UNRETIRE) or gives the key another slot */
		[SLOT_EV_ATTACH] = { BUSY, SLOT_RETIRING, 0 },
		[SLOT_EV_POPULATED] = { NOP, SLOT_RETIRING, 0 },
		[SLOT_EV_EMPTY] = { NOP, SLOT_RETIRING, 0 },
		[SLOT_EV_RELEASE] = { NOP, SLOT_RETIRING, 0 },
		[SLOT_EV_IDLE_TIMEOUT] = { NOP, SLOT_RETIRING, 0 },
		[SLOT_EV_RETIRE] = { NOP, SLOT_RETIRING, 0 },
		[SLOT_EV_RESTORE_RUNNING] = { NOP, SLOT_RETIRING, 0 },
		[SLOT_EV_RESTORE_IDLE] = { NOP, SLOT_RETIRING, 0 },
		/* cancelled before removal, or not removable: back, whole */
		[SLOT_EV_UNRETIRE] = { OK, SLOT_IDLE, SLOT_ACT_IDLE_TIMER },
		[SLOT_EV_UNRETIRE_WARM] = { OK, SLOT_WARM, 0 },
		[SLOT_EV_RECYCLE] = { NOP, SLOT_RETIRING, 0 },
		[SLOT_EV_LEFTOVER] = { NOP, SLOT_RETIRING, 0 },
	},
};

int slot_step(enum slot_state state, enum slot_event ev, int recycle, enum slot_state *next, unsigned *actions)
{
	struct transition t;

	if ((unsigned)state >= SLOT_NSTATES || (unsigned)ev >= SLOT_NEVENTS)
		return -EINVAL;
	t = table[state][ev];
	if (state == SLOT_IDLE && ev == SLOT_EV_IDLE_TIMEOUT && !recycle)
		t = table[SLOT_IDLE][SLOT_EV_RETIRE];
	if (ev == SLOT_EV_RECYCLE && !recycle)
		return NOP;
	if (t.result < 0)
		return t.result;
	*next = t.next;
	*actions = t.actions;
	return 0;
}

static const char *const state_names[SLOT_NSTATES] = {
	[SLOT_WARM] = "warm", [SLOT_RUNNING] = "running", [SLOT_IDLE] = "idle", [SLOT_RETIRING] = "retiring",
};

static const char *const event_names[SLOT_NEVENTS] = {
	[SLOT_EV_ATTACH] = "attach", [SLOT_EV_POPULATED] = "populated", [SLOT_EV_EMPTY] = "empty",
	[SLOT_EV_RELEASE] = "release", [SLOT_EV_IDLE_TIMEOUT] = "idle-timeout", [SLOT_EV_RETIRE] = "retire",
	[SLOT_EV_RESTORE_RUNNING] = "restore-running", [SLOT_EV_RESTORE_IDLE] = "restore-idle",
	[SLOT_EV_UNRETIRE] = "unretire", [SLOT_EV_UNRETIRE_WARM] = "unretire-warm", [SLOT_EV_RECYCLE] = "recycle",
	[SLOT_EV_LEFTOVER] = "leftover",
};

const char *slot_state_name(enum slot_state s)
{
	return (unsigned)s < SLOT_NSTATES ? state_names[s] : "?";
}

int slot_state_parse(const char *s, enum slot_state *out)
{
	for (int i = 0; i < SLOT_NSTATES; i++) {
		if (strcmp(s, state_names[i]) == 0) {
			*out = (enum slot_state)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *slot_event_name(enum slot_event ev)
{
	return (unsigned)ev < SLOT_NEVENTS ? event_names[ev] : "?";
}

/* ---- supervised jobs */

struct job_transition {
	int result;
	enum job_state next;
	unsigned actions;
};

enum {
	SPAWN = JOB_ACT_CANCEL | JOB_ACT_SPAWN,
	EXITED = JOB_ACT_RECORD_EXIT | JOB_ACT_CANCEL,
	STOP = JOB_ACT_CANCEL | JOB_ACT_SIGNAL,
};

/* An exit with restart wanted goes to BACKOFF: the rows below are for
 * restart = 0 and job_step patches them. */
static const struct job_transition job_table[JOB_NSTATES][JOB_NEVENTS] = {
	[JOB_STOPPED] = {
		[JOB_EV_RUN] = { OK, JOB_STARTING, SPAWN },
		[JOB_EV_SPAWNED] = { NOP, JOB_STOPPED, 0 },
		[JOB_EV_SPAWN_FAILED] = { NOP, JOB_STOPPED, 0 },
		[JOB_EV_EXIT_OK] = { NOP, JOB_STOPPED, 0 },
		[JOB_EV_EXIT_FAILED] = { NOP, JOB_STOPPED, 0 },
		[JOB_EV_STOP] = { NOP, JOB_STOPPED, 0 },
		[JOB_EV_STOP_TIMEOUT] = { NOP, JOB_STOPPED, 0 },
		[JOB_EV_EMPTY] = { NOP, JOB_STOPPED, 0 },
		[JOB_EV_START_LIMIT] = { OK, JOB_FAILED, JOB_ACT_CANCEL },
		[JOB_EV_ADOPT] = { OK, JOB_RUNNING, 0 },
	},
	[JOB_STARTING] = {
		[JOB_EV_RUN] = { NOP, JOB_STARTING, 0 },
		[JOB_EV_SPAWNED] = { OK, JOB_RUNNING, 0 },
		[JOB_EV_SPAWN_FAILED] = { OK, JOB_FAILED, JOB_ACT_RECORD_EXIT },
		[JOB_EV_EXIT_OK] = { OK, JOB_STOPPED, EXITED },
		[JOB_EV_EXIT_FAILED] = { OK, JOB_FAILED, EXITED },
		[JOB_EV_STOP] = { OK, JOB_STOPPING, STOP },
		[JOB_EV_STOP_TIMEOUT] = { NOP, JOB_STARTING, 0 },
		[JOB_EV_EMPTY] = { NOP, JOB_STARTING, 0 },
		[JOB_EV_START_LIMIT] = { OK, JOB_FAILED, JOB_ACT_CANCEL },
		[JOB_EV_ADOPT] = { NOP, JOB_STARTING, 0 },
	},
	[JOB_RUNNING] = {
		[JOB_EV_RUN] = { NOP, JOB_RUNNING, 0 },
		[JOB_EV_SPAWNED] = { NOP, JOB_RUNNING, 0 },
		[JOB_EV_SPAWN_FAILED] = { NOP, JOB_RUNNING, 0 },
		[JOB_EV_EXIT_OK] = { OK, JOB_STOPPED, EXITED },
		[JOB_EV_EXIT_FAILED] = { OK, JOB_FAILED, EXITED },
		[JOB_EV_STOP] = { OK, JOB_STOPPING, STOP },
		[JOB_EV_STOP_TIMEOUT] = { NOP, JOB_RUNNING, 0 },
		[JOB_EV_EMPTY] = { NOP, JOB_RUNNING, 0 },
		[JOB_EV_START_LIMIT] = { NOP, JOB_RUNNING, 0 },
		[JOB_EV_ADOPT] = { NOP, JOB_RUNNING, 0 },
	},
	[JOB_STOPPING] = {
		[JOB_EV_RUN] = { NOP, JOB_STOPPING, 0 },
		[JOB_EV_SPAWNED] = { NOP, JOB_STOPPING, 0 },
		[JOB_EV_SPAWN_FAILED] = { OK, JOB_STOPPING, JOB_ACT_RECORD_EXIT },
		[JOB_EV_EXIT_OK] = { OK, JOB_STOPPING, JOB_ACT_RECORD_EXIT },
		[JOB_EV_EXIT_FAILED] = { OK, JOB_STOPPING, JOB_ACT_RECORD_EXIT },
		[JOB_EV_STOP] = { NOP, JOB_STOPPING, 0 },
		[JOB_EV_STOP_TIMEOUT] = { OK, JOB_STOPPING, JOB_ACT_KILL },
		[JOB_EV_EMPTY] = { OK, JOB_STOPPED, JOB_ACT_CANCEL },
		[JOB_EV_START_LIMIT] = { NOP, JOB_STOPPING, 0 },
		[JOB_EV_ADOPT] = { NOP, JOB_STOPPING, 0 },
	},
	[JOB_BACKOFF] = {
		[JOB_EV_RUN] = { OK, JOB_STARTING, SPAWN },
		[JOB_EV_SPAWNED] = { NOP, JOB_BACKOFF, 0 },
		[JOB_EV_SPAWN_FAILED] = { NOP, JOB_BACKOFF, 0 },
		[JOB_EV_EXIT_OK] = { NOP, JOB_BACKOFF, 0 },
		[JOB_EV_EXIT_FAILED] = { NOP, JOB_BACKOFF, 0 },
		[JOB_EV_STOP] = { OK, JOB_STOPPED, JOB_ACT_CANCEL },
		[JOB_EV_STOP_TIMEOUT] = { NOP, JOB_BACKOFF, 0 },
		[JOB_EV_EMPTY] = { NOP, JOB_BACKOFF, 0 },
		[JOB_EV_START_LIMIT] = { OK, JOB_FAILED, JOB_ACT_CANCEL },
		[JOB_EV_ADOPT] = { NOP, JOB_BACKOFF, 0 },
	},
	[JOB_FAILED] = {
		[JOB_EV_RUN] = { OK, JOB_STARTING, SPAWN | JOB_ACT_RESET_LIMIT },
		[JOB_EV_SPAWNED] = { NOP, JOB_FAILED, 0 },
		[JOB_EV_SPAWN_FAILED] = { NOP, JOB_FAILED, 0 },
		[JOB_EV_EXIT_OK] = { NOP, JOB_FAILED, 0 },
		[JOB_EV_EXIT_FAILED] = { NOP, JOB_FAILED, 0 },
		[JOB_EV_STOP] = { OK, JOB_STOPPED, JOB_ACT_CANCEL },
		[JOB_EV_STOP_TIMEOUT] = { NOP, JOB_FAILED, 0 },
		[JOB_EV_EMPTY] = { NOP, JOB_FAILED, 0 },
		[JOB_EV_START_LIMIT] = { NOP, JOB_FAILED, 0 },
		[JOB_EV_ADOPT] = { NOP, JOB_FAILED, 0 },
	},
};

static bool job_exit_event(enum job_event ev)
{
	return ev == JOB_EV_EXIT_OK || ev == JOB_EV_EXIT_FAILED || ev == JOB_EV_SPAWN_FAILED;
}

int job_step(enum job_state state, enum job_event ev, int restart, enum job_state *next, unsigned *actions)
{
	struct job_transition t;

	if ((unsigned)state >= JOB_NSTATES || (unsigned)ev >= JOB_NEVENTS)
		return -EINVAL;
	t = job_table[state][ev];
	if (t.result < 0)
		return t.result;
	/* an exit (or a failed start) of a starting or running job that the
	 * policy restarts waits restart_sec instead of stopping */
	if (restart && job_exit_event(ev) && (state == JOB_STARTING || state == JOB_RUNNING)) {
		t.next = JOB_BACKOFF;
		t.actions |= JOB_ACT_BACKOFF;
	}
	*next = t.next;
	*actions = t.actions;
	return 0;
}

static const char *const job_state_names[JOB_NSTATES] = {
	[JOB_STOPPED] = "stopped", [JOB_STARTING] = "starting", [JOB_RUNNING] = "running",
	[JOB_STOPPING] = "stopping", [JOB_BACKOFF] = "backoff", [JOB_FAILED] = "failed",
};

static const char *const job_event_names[JOB_NEVENTS] = {
	[JOB_EV_RUN] = "run", [JOB_EV_SPAWNED] = "spawned", [JOB_EV_SPAWN_FAILED] = "spawn-failed",
	[JOB_EV_EXIT_OK] = "exit-ok", [JOB_EV_EXIT_FAILED] = "exit-failed", [JOB_EV_STOP] = "stop",
	[JOB_EV_STOP_TIMEOUT] = "stop-timeout", [JOB_EV_EMPTY] = "empty", [JOB_EV_START_LIMIT] = "start-limit",
	[JOB_EV_ADOPT] = "adopt",
};

const char *job_state_name(enum job_state s)
{
	return (unsigned)s < JOB_NSTATES ? job_state_names[s] : "?";
}

int job_state_parse(const char *s, enum job_state *out)
{
	for (int i = 0; i < JOB_NSTATES; i++) {
		if (strcmp(s, job_state_names[i]) == 0) {
			*out = (enum job_state)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *job_event_name(enum job_event ev)
{
	return (unsigned)ev < JOB_NEVENTS ? job_event_names[ev] : "?";
}

const struct run *slot_last_run(const struct slot *s)
{
	if (s->nrecent == 0)
		return NULL;
	return &s->recent[(s->nrecent - 1) % SLOT_RECENT_RUNS];
}

struct tenant *slot_tenant_new(struct slot *s)
{
	struct tenant *t;

	if (s->tenant)
		return s->tenant;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->release = true;
	ev_timer_init(&t->kill_timer, NULL, 0., 0.);
	s->tenant = t;
	return t;
}

struct holder *slot_holder_add(struct slot *s, pid_t pid, uint64_t start)
{
	struct tenant *t = s->tenant;
	struct holder *h;

	if (!t)
		return NULL;
	for (h = t->holders; h; h = h->next)
		if (h->pid == pid && h->start == start)
			return h;
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->slot = s;
	h->pid = pid;
	h->start = start;
	h->pidfd = -1;
	h->next = t->holders;
	t->holders = h;
	t->nholders++;
	return h;
}

void slot_holder_free(struct holder *h)
{
	if (h->pidfd >= 0)
		close(h->pidfd);
	free(h);
}

void slot_tenant_free(struct slot *s)
{
	struct tenant *t = s->tenant;

	if (!t)
		return;
	while (t->holders) {
		struct holder *h = t->holders;
		t->holders = h->next;
		slot_holder_free(h);
	}
	free(t->job);
	free(t->devices);
	free(t);
	s->tenant = NULL;
}

int slot_name_id(const char *name, unsigned *id)
{
	const char *digits;
	unsigned long v;
	char *end, canon[SLOT_NAME_MAX];

	if (strncmp(name, SLOT_PREFIX, strlen(SLOT_PREFIX)) != 0)
		return -EINVAL;
	digits = name + strlen(SLOT_PREFIX);
	if (*digits < '0' || *digits > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(digits, &end, 10);
	if (*end || errno || v > UINT_MAX)
		return -EINVAL;
	snprintf(canon, sizeof(canon), SLOT_PREFIX "%lu", v);
	if (strcmp(canon, name) != 0)
		return -EINVAL; /* slot-007 is not slot-7's directory */
	*id = (unsigned)v;
	return 0;
}
