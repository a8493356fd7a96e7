/* varlink_accept.c - new connections: accepted in batches, the peer judged
 * once (credentials, groups, pidfd, connection limits). */
#include "config.h"

#include "varlink_internal.h"

#include "varlink_auth.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Is gid among the peer's groups (SO_PEERGROUPS)? */
static bool peer_in_group(int fd, gid_t gid)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE || len > VL_GROUPS_MAX * sizeof(gid_t) || !(groups = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
			len = 0;
	}
	for (size_t i = 0; i < len / sizeof(gid_t) && !found; i++)
		found = groups[i] == gid;
	if (groups != small)
		free(groups);
	return found;
}

void vl_kernel_peer(bool *so_peerpidfd, bool *pidfd_open)
{
	static int peer = -1, open_ = -1;
	int sv[2], pfd;
	socklen_t len = sizeof(pfd);

	if (peer < 0) {
		peer = 0;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
			if (getsockopt(sv[0], SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) == 0 && pfd >= 0) {
				peer = 1;
				close(pfd);
			}
			close(sv[0]);
			close(sv[1]);
		}
		pfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
		open_ = pfd >= 0;
		if (pfd >= 0)
			close(pfd);
	}
	*so_peerpidfd = peer == 1;
	*pidfd_open = open_ == 1;
}

int vl_pid_of_uid(int pidfd, pid_t pid, uid_t uid)
{
	char path[64], buf[4096], *line;
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	unsigned long real;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	line = strstr(buf, "\nUid:");
	if (!line || sscanf(line + 5, "%lu", &real) != 1)
		return -EIO;
	/* the status read was of the pidfd's process only if it still runs */
	if (poll(&p, 1, 0) != 0)
		return -ESRCH;
	return real == (unsigned long)uid ? 0 : -EPERM;
}

/* The peer process as a pidfd: SO_PEERPIDFD where the kernel has it (the
 * process that connected, even if its pid was reused since), else
 * pidfd_open() of the SO_PEERCRED pid now. Between the connect and that
 * open the peer may have exited and its pid gone to another process: one
 * whose real uid is not the peer's is refused (-EPERM); one of the same uid
 * would only let the caller place a process of its own uid. -ESRCH: the
 * peer is gone already. */
static int peer_pidfd(int fd, const struct ucred *cred, int *out)
{
	socklen_t len = sizeof(int);
	int pfd = -1, r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) == 0 && pfd >= 0) {
		*out = pfd;
		return 0;
	}
	if (errno == ESRCH)
		return -ESRCH;
	pfd = (int)syscall(SYS_pidfd_open, cred->pid, 0);
	if (pfd < 0)
		return errno == ESRCH ? -ESRCH : errno == ENOSYS ? -ENOSYS : -errno;
	fcntl(pfd, F_SETFD, FD_CLOEXEC);
	r = vl_pid_of_uid(pfd, cred->pid, cred->uid);
	if (r < 0) {
		if (r == -EPERM)
			log_warn("varlink: the peer's pid %d is a process of another user now (no SO_PEERPIDFD "
				 "before Linux 6.5): closing the connection", (int)cred->pid);
		close(pfd);
		return r == -EPERM ? -EPERM : -ESRCH;
	}
	*out = pfd;
	return 0;
}

static unsigned conns_of_uid(const struct vl_server *s, uid_t uid)
{
	unsigned n = 0;

	for (const struct vl_conn *c = s->conns; c; c = c->next)
		n += !c->privileged && c->cred.uid == uid;
	return n;
}

/* Credentials, judged once: who the peer is, whether it is privileged (uid
 * 0, or the privileged gid as its gid or a supplementary group), its pidfd.
 * -EUSERS: over a connection limit; -ESRCH: the peer is gone. */
int vl_conn_judge(struct vl_server *s, struct vl_conn *c)
{
	const struct vl_limits *l = &s->limits;
	socklen_t len = sizeof(struct ucred);
	int r;

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) < 0)
		return -errno;
	c->privileged = c->cred.uid == 0 ||
			(l->privileged_gid != (gid_t)-1 &&
			 (c->cred.gid == l->privileged_gid || peer_in_group(c->fd, l->privileged_gid)));
	if (!auth_conn_allowed(c->privileged, (unsigned)s->n_conns, conns_of_uid(s, c->cred.uid), l->max_conns,
			       l->max_per_user))
		return -EUSERS;
	r = peer_pidfd(c->fd, &c->cred, &c->pidfd);
	if (r == -ENOSYS)
		return 0; /* no pidfds (before Linux 5.3): the pid alone */
	return r;
}

/* ------------------------------------------------------------------ accept */

static void accept_pause(struct vl_server *s, int err)
{
	log_warn("varlink: accept: %s; not accepting for %.0f s", strerror(err), VL_ACCEPT_PAUSE);
	ev_io_stop(s->loop, &s->accept_w);
	ev_timer_set(&s->pause_w, VL_ACCEPT_PAUSE, 0.);
	ev_timer_start(s->loop, &s->pause_w);
}

void vl_pause_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct vl_server *s = w->data;

	ev_io_start(s->loop, &s->accept_w);
}

/* Over a limit: the connection is closed at once, so the client fails fast
 * instead of hanging in the backlog. Logged once until a connection closes. */
static void refuse(struct vl_server *s, int fd, int err)
{
	if (err == -EUSERS && !s->full_logged)
		log_warn("varlink: %zu clients connected (max_connections %u, %u per user, %u kept for root and "
			 "socket_group): refusing a connection", s->n_conns, s->limits.max_conns, s->limits.max_per_user,
			 auth_conns_reserved(s->limits.max_conns));
	else if (err == -ESRCH)
		log_info("varlink: the peer of a new connection has exited already; closing it");
	else if (err != -EUSERS && err != -EPERM) /* EPERM: peer_pidfd said why */
		log_warn("varlink: new connection: %s", strerror(-err));
	s->full_logged |= err == -EUSERS;
	close(fd);
}

void vl_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct vl_server *s = w->data;

	for (int i = 0; i < VL_ACCEPT_BATCH; i++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int r;

		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
				continue;
			accept_pause(s, errno);
			return;
		}
		r = vl_conn_new(s, fd);
		if (r < 0)
			refuse(s, fd, r);
	}
}
