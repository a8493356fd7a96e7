/* simclock.c - simulated time for the unit tests (simclock.h) */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "simclock.h"
#include "work.h"

#define NCLOCKS 12        /* CLOCK_REALTIME .. CLOCK_TAI */
#define MAX_SLEEPERS 64
#define TICK_NS 1000 /* the least step of the clock */
#define BUSY_POLL_MS 1    /* the real wait while real work is outstanding */
#define LOOP_AWAY_NS 100000000 /* real: a sleeper's wait for a loop that does not wait */
#define STUCK_NS 20000000000LL /* real work outstanding this long (real time): a test that hangs */

struct sleeper {
	int64_t until_ns; /* simulated */
	bool woken;
};

static struct {
	bool on;
	pthread_t loop_thread;
	unsigned (*busy)(void *ud);
	void *ud;
	struct timespec base[NCLOCKS];
	int64_t now_ns; /* simulated time since the start; written by the loop thread under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct sleeper *sleepers[MAX_SLEEPERS];
	unsigned nsleepers;
	bool in_wait; /* the loop thread is in epoll_wait */
	bool children_idle; /* child processes are not real work */
} sim = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static int real_clock_gettime(clockid_t id, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, id, ts);
}

static int real_epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	return (int)syscall(SYS_epoll_pwait, epfd, ev, max, timeout, NULL, (size_t)(_NSIG / 8));
}

static bool simulated(clockid_t id)
{
	return __atomic_load_n(&sim.on, __ATOMIC_ACQUIRE) && id >= 0 && id < NCLOCKS &&
	       id != CLOCK_PROCESS_CPUTIME_ID && id != CLOCK_THREAD_CPUTIME_ID;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int64_t ns;

	if (!simulated(id))
		return real_clock_gettime(id, ts);
	ns = sim.base[id].tv_nsec + __atomic_load_n(&sim.now_ns, __ATOMIC_ACQUIRE);
	ts->tv_sec = sim.base[id].tv_sec + (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;

	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

/* under mu: move the clock to ns and wake the sleepers it reached */
static void advance_to(int64_t ns)
{
	if (ns > sim.now_ns)
		__atomic_store_n(&sim.now_ns, ns, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < sim.nsleepers;) {
		if (sim.sleepers[i]->until_ns <= sim.now_ns) {
			sim.sleepers[i]->woken = true;
			sim.sleepers[i] = sim.sleepers[--sim.nsleepers];
		} else {
			i++;
		}
	}
	pthread_cond_broadcast(&sim.cv);
}

/* real work outstanding: a child process (running, or exited and not yet
 * reaped), or busy items beyond the sleepers */
static bool busy_now(void)
{
	siginfo_t si;
	unsigned items = sim.busy ? sim.busy(sim.ud) : 0, sleeping;

	memset(&si, 0, sizeof(si));
	if (!sim.children_idle && waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
		return true;
	pthread_mutex_lock(&sim.mu);
	sleeping = sim.nsleepers;
	pthread_mutex_unlock(&sim.mu);
	return items > sleeping;
}

static int64_t real_ns(void)
{
	struct timespec ts;

	real_clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int sim_epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	static int64_t busy_since;
	int64_t step, next;
	int n;

	n = real_epoll_wait(epfd, ev, max, 0);
	if (n != 0)
		return n;
	if (busy_now()) {
		if (!busy_since)
			busy_since = real_ns();
		else if (real_ns() - busy_since > STUCK_NS)
			fprintf(stderr, "simclock: real work outstanding for %lld s\n",
				(long long)((real_ns() - busy_since) / 1000000000));
		return real_epoll_wait(epfd, ev, max, timeout > 0 && timeout < BUSY_POLL_MS ? timeout : BUSY_POLL_MS);
	}
	busy_since = 0;
	pthread_mutex_lock(&sim.mu);
	/* libev fires a timer once the clock is past it (not at it), and asks
	 * for no wait (0) when one is due at the very instant: one tick more */
	step = timeout < 0 ? INT64_MAX - sim.now_ns : timeout * 1000000LL + TICK_NS;
	next = sim.now_ns + step;
	for (unsigned i = 0; i < sim.nsleepers; i++)
		if (sim.sleepers[i]->until_ns < next)
			next = sim.sleepers[i]->until_ns;
	if (next == INT64_MAX) {
		/* no timer, nobody asleep, nothing real under way: wait as the loop would */
		pthread_mutex_unlock(&sim.mu);
		return real_epoll_wait(epfd, ev, max, timeout);
	}
	advance_to(next);
	pthread_mutex_unlock(&sim.mu);
	return 0;
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	int n;

	if (!__atomic_load_n(&sim.on, __ATOMIC_ACQUIRE) || !pthread_equal(pthread_self(), sim.loop_thread))
		return real_epoll_wait(epfd, ev, max, timeout);
	__atomic_store_n(&sim.in_wait, true, __ATOMIC_RELEASE);
	n = sim_epoll_wait(epfd, ev, max, timeout);
	__atomic_store_n(&sim.in_wait, false, __ATOMIC_RELEASE);
	return n;
}

void simclock_start(unsigned (*busy)(void *ud), void *ud)
{
	pthread_mutex_lock(&sim.mu);
	if (!sim.on) {
		for (clockid_t id = 0; id < NCLOCKS; id++)
			if (real_clock_gettime(id, &sim.base[id]) < 0)
				memset(&sim.base[id], 0, sizeof(sim.base[id]));
		sim.now_ns = 0;
		sim.loop_thread = pthread_self();
		__atomic_store_n(&sim.on, true, __ATOMIC_RELEASE);
	}
	sim.busy = busy;
	sim.ud = ud;
	pthread_mutex_unlock(&sim.mu);
}

void simclock_stop(void)
{
	pthread_mutex_lock(&sim.mu);
	__atomic_store_n(&sim.on, false, __ATOMIC_RELEASE);
	while (sim.nsleepers)
		sim.sleepers[--sim.nsleepers]->woken = true;
	pthread_cond_broadcast(&sim.cv);
	sim.busy = NULL;
	pthread_mutex_unlock(&sim.mu);
}

unsigned simclock_work_busy(void *ud)
{
	const struct simclock_work *sw = ud;
	struct work_stats st;
	unsigned free_threads;

	if (!sw || !sw->w)
		return 0;
	work_get_stats(sw->w, &st);
	free_threads = sw->threads > st.running ? sw->threads - (unsigned)st.running : 0;
	return work_outstanding(sw->w) - (unsigned)st.queued +
	       (st.queued < free_threads ? (unsigned)st.queued : free_threads);
}

void simclock_children_idle(bool idle)
{
	pthread_mutex_lock(&sim.mu);
	sim.children_idle = idle;
	pthread_mutex_unlock(&sim.mu);
}

bool simclock_running(void)
{
	return __atomic_load_n(&sim.on, __ATOMIC_ACQUIRE);
}

int64_t simclock_elapsed_us(void)
{
	return __atomic_load_n(&sim.now_ns, __ATOMIC_ACQUIRE) / 1000;
}

void simclock_sleep_us(uint64_t usec)
{
	struct sleeper me = { 0 };

	if (!simclock_running()) {
		usleep((useconds_t)usec);
		return;
	}
	pthread_mutex_lock(&sim.mu);
	if (pthread_equal(pthread_self(), sim.loop_thread)) {
		advance_to(sim.now_ns + (int64_t)usec * 1000);
		pthread_mutex_unlock(&sim.mu);
		return;
	}
	me.until_ns = sim.now_ns + (int64_t)usec * 1000;
	if (sim.nsleepers == MAX_SLEEPERS) {
		pthread_mutex_unlock(&sim.mu);
		fprintf(stderr, "simclock: more than %d threads asleep\n", MAX_SLEEPERS);
		abort();
	}
	sim.sleepers[sim.nsleepers++] = &me;
	while (!me.woken) {
		struct timespec until;

		real_clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += LOOP_AWAY_NS;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		/* the loop is not waiting and does not come back: it waits for
		 * this thread (work_cancel), so the time passes meanwhile */
		if (pthread_cond_timedwait(&sim.cv, &sim.mu, &until) == ETIMEDOUT && !me.woken &&
		    !__atomic_load_n(&sim.in_wait, __ATOMIC_ACQUIRE))
			advance_to(me.until_ns);
	}
	pthread_mutex_unlock(&sim.mu);
}
