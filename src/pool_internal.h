/* pool_internal.h - shared by pool.c and pool_retire.c only */
#ifndef CGPOOL_POOL_INTERNAL_H
#define CGPOOL_POOL_INTERNAL_H

#include "pool.h"

struct pool {
	struct ev_loop *loop;
	struct cg *cg;
	const struct conf *conf;
	struct slot **slots; /* sorted by id */
	size_t nslots;
	size_t cap;
	unsigned next_id;
	ev_io watch_io;
	ev_timer poll_timer;
	struct retire *retire;
	struct retire_result recent_ret[POOL_RECENT_RETIREMENTS]; /* ring */
	unsigned nrecent_ret;
	struct state *state;
};

void pool_save(struct pool *p);
void pool_save_slot(struct pool *p, struct slot *s);
void pool_drop(struct pool *p, struct slot *s);
void pool_fill_warm(struct pool *p);
unsigned pool_count_state(const struct pool *p, enum slot_state st);
struct slot *pool_take_warm(struct pool *p);
void pool_idle_timer(struct slot *s, double after);
/* feed one event to a slot's state machine and carry out the actions */
void pool_slot_event(struct slot *s, enum slot_event ev);
bool pool_slot_has_procs(struct slot *s);
/* hand a slot in state retiring to the retirement engine (may free s) */
void pool_act_retire(struct slot *s);

#endif
