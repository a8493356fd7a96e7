/* pool_nocg.c - while the kernel has no cgroup IDs left
 *
 * A memory cgroup holds one of 65,535 IDs from its mkdir until it is freed,
 * dying included, so a machine with many dying memcgs can refuse every new
 * cgroup (mkdir: ENOSPC) whatever our max_slots says. An episode starts with
 * the first refusal and ends with the next mkdir that works. It is logged
 * once at each end; meanwhile the warm refill waits (1 s, doubling up to
 * 60 s, one trial mkdir at a time) and a new key is refused with the cause,
 * while everything that needs no new cgroup goes on. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "log.h"
#include "pool_internal.h"

#define NOCG_FIRST_S 1.0
#define NOCG_MAX_S 60.0

static void nocg_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	pool_fill_warm(w->data);
}

void pool_nocg_init(struct pool *p)
{
	ev_timer_init(&p->nocg_timer, nocg_timer_cb, 0., 0.);
	p->nocg_timer.data = p;
}

void pool_nocg_fini(struct pool *p)
{
	ev_timer_stop(p->loop, &p->nocg_timer);
}

bool pool_nocg(const struct pool *p)
{
	return p->nocg_backoff > 0;
}

bool pool_nocg_waiting(const struct pool *p)
{
	return ev_is_active(&p->nocg_timer);
}

void pool_nocg_refused(struct pool *p, const char *name)
{
	struct cg_dying d;

	p->nocg_refused++;
	if (p->nocg_backoff == 0) {
		if (cg_dying(p->cg, &d) == 0)
			log_err("create slot %s: the kernel has no memory cgroup IDs left (mkdir: ENOSPC); dying memcgs: "
				"%llu; new keys are refused and warm slots wait until a mkdir works again",
				name, (unsigned long long)d.count);
		else
			log_err("create slot %s: the kernel has no memory cgroup IDs left (mkdir: ENOSPC); new keys are "
				"refused and warm slots wait until a mkdir works again", name);
		p->nocg_backoff = NOCG_FIRST_S;
	} else if (!ev_is_active(&p->nocg_timer)) {
		p->nocg_backoff = p->nocg_backoff * 2 > NOCG_MAX_S ? NOCG_MAX_S : p->nocg_backoff * 2;
	}
	if (!ev_is_active(&p->nocg_timer)) {
		ev_timer_set(&p->nocg_timer, p->nocg_backoff, 0.);
		ev_timer_start(p->loop, &p->nocg_timer);
	}
}

void pool_nocg_ok(struct pool *p)
{
	if (p->nocg_backoff == 0)
		return;
	log_notice("slots can be created again: %u mkdirs were refused while the kernel had no memory cgroup IDs left",
		   p->nocg_refused);
	p->nocg_backoff = 0;
	p->nocg_refused = 0;
	ev_timer_stop(p->loop, &p->nocg_timer);
}
