/* cg_pressure.c - memory pressure on the pool root, from a PSI trigger.
 *
 * A PSI trigger signals with POLLPRI, and a PSI file is always readable, so
 * libev's EV_READ cannot watch it directly: an epoll set asks for EPOLLPRI
 * alone, and libev watches the epoll descriptor, which is readable exactly
 * when the trigger fired. */
#include "config.h"

#include "cg_pressure.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define PRESSURE_MIN_INTERVAL_US 1000000

struct pressure {
	struct ev_loop *loop;
	int fd, epfd;
	ev_io io;
	pressure_fn fn;
	void *ud;
	int64_t last_us;
};

static void pressure_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct pressure *p = w->data;
	struct epoll_event ev;
	int64_t now;

	if (epoll_wait(p->epfd, &ev, 1, 0) != 1)
		return;
	if (ev.events & EPOLLERR) {
		log_warn("memory pressure: the monitored cgroup went away; no more pressure events");
		ev_io_stop(loop, w);
		return;
	}
	now = now_mono_us();
	if (now - p->last_us < PRESSURE_MIN_INTERVAL_US)
		return;
	p->last_us = now;
	p->fn(p->ud);
}

int pressure_new(struct ev_loop *loop, const char *path, const char *trigger, pressure_fn fn, void *ud,
		 struct pressure **out)
{
	struct pressure *p = calloc(1, sizeof(*p));
	struct epoll_event ev = { .events = EPOLLPRI };
	int r;

	if (!p)
		return -ENOMEM;
	p->epfd = -1;
	p->fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (p->fd < 0 || write(p->fd, trigger, strlen(trigger) + 1) < 0) {
		r = errno == EINVAL || errno == ENOENT ? -EOPNOTSUPP : -errno;
		goto fail;
	}
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = p->fd;
	if (p->epfd < 0 || epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->fd, &ev) < 0) {
		r = -errno;
		goto fail;
	}
	p->loop = loop;
	p->fn = fn;
	p->ud = ud;
	ev_io_init(&p->io, pressure_cb, p->epfd, EV_READ);
	p->io.data = p;
	ev_io_start(loop, &p->io);
	*out = p;
	return 0;
fail:
	if (p->epfd >= 0)
		close(p->epfd);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
	return r;
}

void pressure_free(struct pressure *p)
{
	if (!p)
		return;
	ev_io_stop(p->loop, &p->io);
	close(p->epfd);
	close(p->fd);
	free(p);
}
