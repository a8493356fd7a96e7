/* simclock.h - simulated time for the unit tests that are about time.
 *
 * Linked into a test program, simclock.c defines clock_gettime,
 * gettimeofday and epoll_wait, which the program's own code and libev then
 * call instead of the C library's. They pass through to the kernel until
 * the test calls simclock_start(); from then until simclock_stop() every
 * clock reads its value at the start plus the simulated time elapsed, and
 * that time moves only when the loop has nothing to do: when libev's
 * epoll_wait finds no descriptor ready and no real work is outstanding (a
 * child process of the test, or what the busy callback counts, such as
 * worker threads' items), the clock jumps to the loop's next timer or to
 * the next simclock_sleep_us() wake-up, whichever is first. Real work thus
 * takes no simulated time, a timer fires exactly when it is due, and a test
 * no longer depends on how fast or how loaded the machine is.
 *
 * One loop thread: the thread that called simclock_start() is the one whose
 * epoll_wait moves the clock. */
#ifndef CGPOOL_TEST_SIMCLOCK_H
#define CGPOOL_TEST_SIMCLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* busy(ud): the number of items of real work outstanding (worker items
 * queued, running or waiting for the loop); NULL: none but child processes.
 * Called again, it only changes busy: the clocks go on from where they are
 * (a program starts the clock once, so that no clock ever goes back). */
void simclock_start(unsigned (*busy)(void *ud), void *ud);
/* the real clocks again (they may be behind the simulated ones) */
void simclock_stop(void);
bool simclock_running(void);
/* idle true: the test's child processes are not real work (they sleep until
 * the test ends them, as cgsim_spawn's do): only busy() is */
void simclock_children_idle(bool idle);

/* A busy callback for a work pool (work.h) of `threads` threads: its items
 * running or done and not yet delivered, and the queued ones a free thread
 * takes. ud is a struct simclock_work; w NULL: none. */
struct work;
struct simclock_work {
	struct work *w;
	unsigned threads;
};
unsigned simclock_work_busy(void *ud);

/* Microseconds of simulated time since simclock_start() */
int64_t simclock_elapsed_us(void);

/* Sleep usec: on the loop thread the clock moves on by usec at once; on
 * another thread the caller blocks until the clock reaches now + usec (the
 * loop moves it there once nothing else is due first). Without the
 * simulated clock, usleep(). */
void simclock_sleep_us(uint64_t usec);

#endif
