/* pool_peak.c - a run's memory peak where the kernel cannot give it
 *
 * A run's peak is the kernel's watermark reset at the run's start where that
 * works: v1 memory.max_usage_in_bytes, or v2 memory.peak through the slot's
 * own descriptor (6.12+). On v2 before 6.12 there is no such reset (5.19 to
 * 6.11: memory.peak is the slot's peak since its mkdir, not the run's) or no
 * memory.peak at all (before 5.19). There the pool samples memory.current
 * instead: at the run's start, once a second while it runs, and at its end,
 * keeping the highest value in the run's memory_peak (run.peak_sampled says
 * so). A sampled peak is a lower bound: what rose and fell between two
 * samples is not seen. */
#include "config.h"

#include "log.h"
#include "pool_internal.h"

#define PEAK_INTERVAL 1.0 /* s between two ticks */
/* memory.current reads per tick at most. Each tick goes on through the slot
 * ids from where the last one stopped (round robin): with more running slots
 * than this, each is read less often than every PEAK_INTERVAL (10,000 of
 * them: every 10 s), and no tick holds the loop for long. */
#define PEAK_BATCH 1024

static void peak_cb(struct ev_loop *loop, ev_timer *w, int revents);

void pool_peak_init(struct pool *p)
{
	const struct cg_info *in = cg_get_info(p->cg);

	ev_timer_init(&p->peak_timer, peak_cb, PEAK_INTERVAL, PEAK_INTERVAL);
	p->peak_timer.data = p;
	p->peak_next = 0;
	p->peak_sample = in->memory_v2 && !in->features.memory_peak_reset;
	if (p->peak_sample)
		log_info("pool: %s; a run's memory peak is the highest memory.current sampled every %.0f s (%d slots "
			 "a tick at most)",
			 in->features.memory_peak ? "memory.peak cannot be reset for a run (before 6.12)"
						  : "no memory.peak (before 5.19)",
			 PEAK_INTERVAL, PEAK_BATCH);
}

void pool_peak_fini(struct pool *p)
{
	ev_timer_stop(p->loop, &p->peak_timer);
}

void pool_peak_timer(struct pool *p)
{
	if (p->peak_sample && pool_count_state(p, SLOT_RUNNING) > 0)
		ev_timer_start(p->loop, &p->peak_timer); /* nothing when it runs already */
	else
		ev_timer_stop(p->loop, &p->peak_timer);
}

void pool_peak_sample(struct slot *s, struct run *run)
{
	struct cg_memory mem;

	if (!s->pool->peak_sample || !run || run->ended_us)
		return;
	run->peak_sampled = true;
	/* a failed read is a sample missed; the run's end says what was seen */
	if (cg_slot_memory_some(s->pool->cg, s->name, CG_MEM_CURRENT, &mem) == 0 && mem.current > run->memory_peak)
		run->memory_peak = mem.current;
}

/* One read of memory.current per running slot, at most PEAK_BATCH of them,
 * from the slot id where the last tick stopped. A read changes no slot, so
 * the array of slots stays as it is meanwhile. */
static void peak_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct pool *p = w->data;
	size_t n = p->nslots, i = pool_slot_index(p, p->peak_next);
	unsigned reads = 0;

	for (size_t k = 0; k < n && reads < PEAK_BATCH; k++, i++) {
		struct slot *s;

		if (i >= n)
			i = 0;
		s = p->slots[i];
		if (s->state != SLOT_RUNNING)
			continue;
		pool_peak_sample(s, pool_cur_run(s));
		reads++;
	}
	p->peak_next = i < n ? p->slots[i]->id : 0;
	pool_peak_timer(p);
}
