/* slot.c - the slot state machine as a table */
#include "config.h"

#include "slot.h"

#include <errno.h>
#include <string.h>

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

/* IDLE_TIMEOUT depends on recycle: the recycle=no row is patched in slot_step. */
static const struct transition table[SLOT_NSTATES][SLOT_NEVENTS] = {
	[SLOT_WARM] = {
		[SLOT_EV_ATTACH] = { OK, SLOT_RUNNING, START },
		/* a warm slot is never handed out with processes inside */
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
	},
	[SLOT_RUNNING] = {
		[SLOT_EV_ATTACH] = { OK, SLOT_RUNNING, SLOT_ACT_APPLY },
		[SLOT_EV_POPULATED] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_EMPTY] = { OK, SLOT_IDLE, END },
		[SLOT_EV_RELEASE] = { OK, SLOT_RUNNING, 0 },
		[SLOT_EV_IDLE_TIMEOUT] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_RETIRE] = { BUSY, SLOT_RUNNING, 0 },
		[SLOT_EV_RESTORE_RUNNING] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_RESTORE_IDLE] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_UNRETIRE] = { NOP, SLOT_RUNNING, 0 },
		[SLOT_EV_UNRETIRE_WARM] = { NOP, SLOT_RUNNING, 0 },
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
	[SLOT_EV_UNRETIRE] = "unretire", [SLOT_EV_UNRETIRE_WARM] = "unretire-warm",
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
