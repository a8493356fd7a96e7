/* job_log.c - a supervised job's output, line by line, into the log.
 *
 * The read end of the job's pipe is non-blocking in the loop; a line is
 * written when its newline comes, or when JOBLOG_LINE_MAX bytes have come
 * without one, or at end of file. */
#include "config.h"

#include "job_log.h"
#include "log.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct joblog {
	struct ev_loop *loop;
	ev_io io;
	char key[160];
	char stream[8];
	unsigned long long run;
	void (*closed)(void *ud);
	void *ud;
	size_t len;
	char buf[JOBLOG_LINE_MAX];
};

/* every complete line in buf, then a full buffer without newline as one */
static void emit(struct joblog *l, bool all)
{
	size_t start = 0;

	for (;;) {
		char *nl = memchr(l->buf + start, '\n', l->len - start);
		if (!nl)
			break;
		log_job_line(l->key, l->run, l->stream, l->buf + start, (size_t)(nl - (l->buf + start)));
		start = (size_t)(nl - l->buf) + 1;
	}
	if (start == 0 && (l->len == sizeof(l->buf) || (all && l->len))) {
		log_job_line(l->key, l->run, l->stream, l->buf, l->len);
		start = l->len;
	} else if (all && start < l->len) {
		log_job_line(l->key, l->run, l->stream, l->buf + start, l->len - start);
		start = l->len;
	}
	memmove(l->buf, l->buf + start, l->len - start);
	l->len -= start;
}

static void stop(struct joblog *l)
{
	emit(l, true);
	ev_io_stop(l->loop, &l->io);
	close(l->io.fd);
}

static void read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct joblog *l = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	/* at most a few reads per pass: a chatty job does not hold the loop */
	for (int i = 0; i < 4; i++) {
		n = read(w->fd, l->buf + l->len, sizeof(l->buf) - l->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			void (*closed)(void *) = l->closed;
			void *ud = l->ud;

			stop(l);
			free(l);
			if (closed)
				closed(ud);
			return;
		}
		l->len += (size_t)n;
		emit(l, false);
	}
}

int joblog_new(struct ev_loop *loop, int fd, const char *key, unsigned long long run, const char *stream,
	       void (*closed)(void *ud), void *ud, struct joblog **out)
{
	struct joblog *l;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->loop = loop;
	snprintf(l->key, sizeof(l->key), "%s", key);
	snprintf(l->stream, sizeof(l->stream), "%s", stream);
	l->run = run;
	l->closed = closed;
	l->ud = ud;
	ev_io_init(&l->io, read_cb, fd, EV_READ);
	l->io.data = l;
	ev_io_start(loop, &l->io);
	*out = l;
	return 0;
}

void joblog_free(struct joblog *l)
{
	if (!l)
		return;
	stop(l);
	free(l);
}
