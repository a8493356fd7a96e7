/* work.c - worker threads for kernel writes that can block; completion on
 * the loop thread through an ev_async (see work.h) */
#include "config.h"

#include "work.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util.h"

struct item {
	int (*fn)(void *arg);
	void (*done)(int result, void *arg);
	void *arg;
	int result;
	struct item *next;
};

struct worker {
	struct work *w;
	pthread_t th;
	struct item *cur; /* running now, under w->mu */
};

struct list {
	struct item *head, *tail;
};

struct work {
	struct ev_loop *loop;
	ev_async async;
	bool refd;            /* the async watcher keeps the loop alive */
	unsigned outstanding; /* loop thread: submitted, not yet delivered or cancelled */
	pthread_mutex_t mu;   /* the rest */
	pthread_cond_t more;  /* queue not empty, or stop */
	pthread_cond_t ran;   /* a worker finished an item */
	struct list queue, finished;
	unsigned qlen;
	bool stop;
	struct work_stats st;
	unsigned nworkers;
	struct worker workers[];
};

static void list_push(struct list *l, struct item *it)
{
	it->next = NULL;
	if (l->tail)
		l->tail->next = it;
	else
		l->head = it;
	l->tail = it;
}

static struct item *list_pop(struct list *l)
{
	struct item *it = l->head;

	if (it) {
		l->head = it->next;
		if (!l->head)
			l->tail = NULL;
	}
	return it;
}

struct sel {
	void (*done)(int result, void *arg);
	bool (*match)(void *arg, void *ud);
	void *ud;
};

static bool selected(const struct sel *s, const struct item *it)
{
	return it->done == s->done && (!s->match || s->match(it->arg, s->ud));
}

/* drop (free, unrun or undelivered) the selected items; how many */
static unsigned list_drop(struct list *l, const struct sel *s)
{
	struct item **pp = &l->head, *it;
	unsigned n = 0;

	l->tail = NULL;
	while ((it = *pp) != NULL) {
		if (selected(s, it)) {
			*pp = it->next;
			free(it);
			n++;
			continue;
		}
		l->tail = it;
		pp = &it->next;
	}
	return n;
}

/* the loop stays alive while items are outstanding, not longer */
static void update_ref(struct work *w)
{
	bool want = w->outstanding > 0;

	if (want && !w->refd)
		ev_ref(w->loop);
	else if (!want && w->refd)
		ev_unref(w->loop);
	w->refd = want;
}

static void *worker_main(void *p)
{
	struct worker *k = p;
	struct work *w = k->w;
	struct item *it;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->queue.head && !w->stop)
			pthread_cond_wait(&w->more, &w->mu);
		if (!(it = list_pop(&w->queue)))
			break; /* stop, and nothing left */
		w->qlen--;
		w->st.running++;
		k->cur = it;
		pthread_mutex_unlock(&w->mu);

		int64_t t0 = now_mono_us();
		it->result = it->fn(it->arg);
		double ms = (now_mono_us() - t0) / 1000.0;

		pthread_mutex_lock(&w->mu);
		k->cur = NULL;
		w->st.running--;
		w->st.completed++;
		if (ms > w->st.max_ms)
			w->st.max_ms = ms;
		list_push(&w->finished, it);
		pthread_cond_broadcast(&w->ran);
		if (!w->stop)
			ev_async_send(w->loop, &w->async);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* on the loop thread: deliver what finished, one item at a time, so that a
 * done callback may submit or cancel */
static void async_cb(struct ev_loop *loop, ev_async *a, int revents)
{
	struct work *w = a->data;
	struct item *it;

	for (;;) {
		pthread_mutex_lock(&w->mu);
		it = list_pop(&w->finished);
		pthread_mutex_unlock(&w->mu);
		if (!it)
			break;
		w->outstanding--;
		it->done(it->result, it->arg);
		free(it);
	}
	update_ref(w);
}

int work_submit(struct work *w, int (*fn)(void *arg), void (*done)(int result, void *arg), void *arg)
{
	struct item *it;

	if (!fn || !done)
		return -EINVAL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->fn = fn;
	it->done = done;
	it->arg = arg;
	pthread_mutex_lock(&w->mu);
	if (w->qlen >= WORK_QUEUE_MAX) {
		pthread_mutex_unlock(&w->mu);
		free(it);
		return -EAGAIN;
	}
	list_push(&w->queue, it);
	w->qlen++;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->mu);
	w->outstanding++;
	update_ref(w);
	return 0;
}

static bool running_sel(const struct work *w, const struct sel *s)
{
	for (unsigned i = 0; i < w->nworkers; i++)
		if (w->workers[i].cur && selected(s, w->workers[i].cur))
			return true;
	return false;
}

void work_cancel(struct work *w, void (*done)(int result, void *arg), bool (*match)(void *arg, void *ud),
		 void *ud)
{
	struct sel s = { done, match, ud };
	unsigned n;

	pthread_mutex_lock(&w->mu);
	n = list_drop(&w->queue, &s);
	w->qlen -= n;
	while (running_sel(w, &s))
		pthread_cond_wait(&w->ran, &w->mu);
	n += list_drop(&w->finished, &s);
	pthread_mutex_unlock(&w->mu);
	w->outstanding -= n;
	update_ref(w);
}

unsigned work_outstanding(const struct work *w)
{
	return w->outstanding;
}

void work_get_stats(struct work *w, struct work_stats *out)
{
	pthread_mutex_lock(&w->mu);
	*out = w->st;
	out->queued = w->qlen;
	pthread_mutex_unlock(&w->mu);
}

/* stop and join the first n workers; the queue runs dry first */
static void stop_workers(struct work *w, unsigned n)
{
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->more);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < n; i++)
		pthread_join(w->workers[i].th, NULL);
}

static void destroy(struct work *w)
{
	struct item *it;

	while ((it = list_pop(&w->queue)) != NULL)
		free(it);
	while ((it = list_pop(&w->finished)) != NULL)
		free(it);
	if (!w->refd)
		ev_ref(w->loop); /* libev: undo ev_unref before stopping the watcher */
	ev_async_stop(w->loop, &w->async);
	pthread_cond_destroy(&w->ran);
	pthread_cond_destroy(&w->more);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

int work_new(struct ev_loop *loop, unsigned nthreads, struct work **out)
{
	sigset_t all, old;
	struct work *w;
	unsigned i;
	int e = 0;

	if (nthreads == 0)
		nthreads = WORK_THREADS_DEFAULT;
	if (nthreads > WORK_THREADS_MAX)
		return -EINVAL;
	w = calloc(1, sizeof(*w) + nthreads * sizeof(w->workers[0]));
	if (!w)
		return -ENOMEM;
	w->loop = loop;
	w->nworkers = nthreads;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->more, NULL);
	pthread_cond_init(&w->ran, NULL);
	ev_async_init(&w->async, async_cb);
	w->async.data = w;
	ev_async_start(loop, &w->async);
	ev_unref(loop); /* nothing outstanding yet */
	/* signals stay with the loop thread: a worker must never take one */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < nthreads && e == 0; i++) {
		w->workers[i].w = w;
		e = -pthread_create(&w->workers[i].th, NULL, worker_main, &w->workers[i]);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e < 0) {
		stop_workers(w, i - 1);
		destroy(w);
		return e;
	}
	*out = w;
	return 0;
}

void work_free(struct work *w)
{
	if (!w)
		return;
	stop_workers(w, w->nworkers);
	destroy(w);
}
