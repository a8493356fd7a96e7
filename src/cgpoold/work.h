/* work.h - a small pool of worker threads for kernel writes that can block
 * (rmdir of a cgroup, memory.reclaim, memory.force_empty, mkdir).
 *
 * fn(arg) runs on a worker thread; done(result, arg) runs later on the loop
 * thread, from an ev_async watcher, with what fn returned. Items start in
 * submission order; with more than one thread they may finish in any order.
 * Everything but fn is called on the loop thread: work_new, work_submit,
 * work_cancel, work_get_stats, work_free and every done callback.
 *
 * fn must touch only what is safe off the loop thread (cg.h says which
 * cgroup functions are), and must not call libev or the logger. The pool
 * keeps the loop alive (ev_run does not return for lack of watchers) only
 * while items are outstanding. All int functions return 0 or -errno. */
#ifndef CGPOOL_WORK_H
#define CGPOOL_WORK_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#define WORK_THREADS_DEFAULT 2
#define WORK_THREADS_MAX 16
#define WORK_QUEUE_MAX 4096 /* items waiting for a thread; work_submit says -EAGAIN beyond */

struct work;

struct work_stats {
	uint64_t queued;    /* submitted, waiting for a thread */
	uint64_t running;   /* fn running now */
	uint64_t completed; /* fn returned, since start */
	double max_ms;      /* the slowest fn so far */
};

/* nthreads 0: WORK_THREADS_DEFAULT; more than WORK_THREADS_MAX: -EINVAL.
 * The threads block every signal (the loop handles them). */
int work_new(struct ev_loop *loop, unsigned nthreads, struct work **out);

/* Stops the threads once the queued items have run (their fn is called, so
 * what fn uses must still be valid); done callbacks still pending are NOT
 * called, nor are those of the items run here: an owner whose args must be
 * freed cancels its items first (work_cancel). NULL ok. */
void work_free(struct work *w);

/* Queue fn(arg); done(result, arg) follows on the loop thread, exactly once
 * unless the item is cancelled or the pool freed first. -EAGAIN: the queue
 * holds WORK_QUEUE_MAX items; -ENOMEM. */
int work_submit(struct work *w, int (*fn)(void *arg), void (*done)(int result, void *arg), void *arg);

/* Forget the items submitted with this done callback and, when match is
 * not NULL, for whose arg match(arg, ud) is true: the queued ones are dropped
 * unrun, then the running ones are waited for (this blocks the loop for as
 * long as their fn takes), and none of their done callbacks is called. For
 * an owner's teardown; afterwards the pool refers to none of their args. */
void work_cancel(struct work *w, void (*done)(int result, void *arg), bool (*match)(void *arg, void *ud),
		 void *ud);

/* fn calls submitted and not yet delivered to done (queued, running or
 * waiting for the loop) */
unsigned work_outstanding(const struct work *w);
void work_get_stats(struct work *w, struct work_stats *out);

#endif
