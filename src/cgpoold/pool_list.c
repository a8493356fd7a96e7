/* pool_list.c - the pool's warm and idle lists and its count of slots per
 * state, kept as slots change state */
#include "config.h"

#include <stdlib.h>

#include "pool_internal.h"


static void list_unlink(struct slot_list *l, struct slot *s)
{
	if (!s->listed)
		return;
	s->listed = false;
	if (s->lprev)
		s->lprev->lnext = s->lnext;
	else
		l->head = s->lnext;
	if (s->lnext)
		s->lnext->lprev = s->lprev;
	else
		l->tail = s->lprev;
	s->lprev = s->lnext = NULL;
}

/* Keep a list in order, the place found from the tail (usually at once):
 * idle slots released first, then by idle_since (least recently used
 * first), warm ones by id. */
static bool goes_before(const struct slot *s, const struct slot *other)
{
	if (s->state == SLOT_IDLE && s->released != other->released)
		return s->released;
	if (s->state == SLOT_IDLE)
		return other->idle_since_us > s->idle_since_us;
	return other->id > s->id;
}

static void list_insert(struct slot_list *l, struct slot *s, bool ordered)
{
	struct slot *after = l->tail;

	while (ordered && !s->pool->loading && after && goes_before(s, after))
		after = after->lprev;
	s->listed = true;
	s->lprev = after;
	s->lnext = after ? after->lnext : l->head;
	if (s->lnext)
		s->lnext->lprev = s;
	else
		l->tail = s;
	if (after)
		after->lnext = s;
	else
		l->head = s;
}

static struct slot_list *list_of(struct pool *p, enum slot_state st)
{
	return st == SLOT_WARM ? &p->warm : st == SLOT_IDLE ? &p->idle : NULL;
}

void pool_set_state(struct slot *s, enum slot_state next)
{
	struct pool *p = s->pool;
	struct slot_list *from = list_of(p, s->state), *to = list_of(p, next);

	if (from)
		list_unlink(from, s);
	p->counts[s->state]--;
	s->state = next;
	p->counts[next]++;
	if (to && !s->busy) /* a busy slot joins its list when its write is done */
		list_insert(to, s, true);
}

struct slot *pool_oldest_idle(struct pool *p)
{
	return p->idle.head;
}

/* the slot into the list of its state, in order (a slot of another state,
 * or one already listed, stays as it is) */
void pool_list_insert(struct pool *p, struct slot *s)
{
	struct slot_list *l = list_of(p, s->state);

	if (l && !s->listed)
		list_insert(l, s, true);
}

void pool_list_remove(struct pool *p, struct slot *s)
{
	struct slot_list *l = list_of(p, s->state);

	if (l)
		list_unlink(l, s);
}

/* the warm slot with the lowest id */
struct slot *pool_take_warm(struct pool *p)
{
	return p->warm.head;
}

static int list_order(const void *a, const void *b)
{
	const struct slot *x = *(const struct slot *const *)a, *y = *(const struct slot *const *)b;

	return goes_before(x, y) ? -1 : goes_before(y, x);
}

/* a list put in order once, after the slots were adopted and restored */
static void sort_list(struct slot_list *l, size_t n)
{
	struct slot **v = calloc(n + 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return; /* the list keeps the order it has */
	for (struct slot *s = l->head; s && k < n; s = s->lnext)
		v[k++] = s;
	qsort(v, k, sizeof(*v), list_order);
	l->head = l->tail = NULL;
	for (size_t i = 0; i < k; i++)
		list_insert(l, v[i], false);
	free(v);
}

void pool_lists_sort(struct pool *p)
{
	sort_list(&p->warm, p->counts[SLOT_WARM]);
	sort_list(&p->idle, p->counts[SLOT_IDLE]);
}
