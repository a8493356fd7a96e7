/* varlink.c - Varlink server on a Unix stream socket, driven by libev.
 *
 * Each connection owns a bounded input buffer (one message, VL_MAX_MESSAGE)
 * and an output queue of encoded replies. Its state:
 *   reading    no call pending, nothing to write: the read watcher is on
 *   pending    a handler holds the call: the connection is not read
 *   streaming  pending, and the handler waits for the queue to drain: the
 *              write watcher is on; once the queue is at most VL_OUT_LOW bytes
 *              and the socket is writable, conn_run() calls its hook
 *   writing    replies are not fully sent: write watcher on, no new dispatch
 *   closing    a protocol error was answered: close once the reply is out
 * conn_run() is the only place that moves between these states and the only
 * place a connection is freed (never from inside its own dispatch).
 *
 * The queue stays bounded: continuing replies are refused once it holds
 * VL_OUT_HIGH bytes, so it never holds more than VL_OUT_HIGH plus one reply
 * (at most VL_MAX_REPLY). */
#include "config.h"

#include "varlink.h"

#include "auth.h"
#include "log.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VL_MAX_INTERFACES 16
#define VL_MAX_METHODS 128
#define VL_ACCEPT_BATCH 16      /* accepts per wakeup */
#define VL_ACCEPT_PAUSE 1.0     /* seconds to stop accepting after EMFILE and co */
#define VL_CALLS_PER_PASS 4     /* requests dispatched per connection per loop pass */
#define VL_GROUPS_MAX 65536     /* supplementary groups of a peer, at most (NGROUPS_MAX) */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif
#define VL_SERVICE "org.varlink.service"

static const char service_idl[] =
	"# The Varlink Service Interface is provided by every varlink service. It\n"
	"# describes the service and the interfaces it implements.\ninterface org.varlink.service\n\n"
	"# Get a list of all the interfaces a service provides and information\n# about the implementation.\n"
	"method GetInfo() -> (\n  vendor: string,\n  product: string,\n  version: string,\n"
	"  url: string,\n  interfaces: []string\n)\n\n"
	"# Get the description of an interface that is implemented by this service.\n"
	"method GetInterfaceDescription(interface: string) -> (description: string)\n\n"
	"# The requested interface was not found.\nerror InterfaceNotFound (interface: string)\n\n"
	"# The requested method was not found\nerror MethodNotFound (method: string)\n\n"
	"# The interface defines the requested method, but the service does not\n# implement it.\n"
	"error MethodNotImplemented (method: string)\n\n"
	"# One of the passed parameters is invalid.\nerror InvalidParameter (parameter: string)\n\n"
	"# Client is denied access\nerror PermissionDenied ()\n\n"
	"# Method is expected to be called with 'more' set to true, but wasn't\nerror ExpectedMore ()\n";

struct vl_method {
	char *name;
	vl_method_fn fn;
	void *ud;
};

struct vl_iface {
	char *name;
	char *description;
};

struct vl_conn {
	struct vl_server *srv;
	struct vl_conn *prev, *next;
	int fd;
	ev_io rw, ww;
	ev_timer idle_w;
	struct ucred cred;
	bool privileged; /* judged once, at accept */
	int pidfd;       /* the peer process as it was at connect; -1: none */
	ev_tstamp active; /* last request read or reply queued */
	unsigned pass_calls; /* requests dispatched in loop pass pass_iter */
	unsigned pass_iter;
	bool deferred;       /* complete requests wait for the next pass */
	char *out; /* encoded replies, out[out_off..out_len) not sent yet */
	size_t out_len, out_off, out_cap;
	struct vl_call *pending;
	bool busy, eof, closing, dead;
	size_t in_len;
	char in[]; /* VL_MAX_MESSAGE bytes */
};

struct vl_call {
	struct vl_conn *conn; /* NULL once the connection is gone */
	char method[256];
	json_t *params;
	struct ucred cred;
	bool privileged;
	bool oneway, more;
	vl_drained_fn drained; /* one-shot resume hook */
	void *drained_ud;
};

struct vl_server {
	struct ev_loop *loop;
	int listen_fd;
	ev_io accept_w;
	ev_timer pause_w;
	char *info[4]; /* vendor, product, version, url */
	struct vl_iface ifaces[VL_MAX_INTERFACES];
	size_t n_ifaces;
	struct vl_method methods[VL_MAX_METHODS];
	size_t n_methods;
	struct vl_conn *conns;
	size_t n_conns;
	struct vl_limits limits;
	bool full_logged;
};

/* ------------------------------------------------------------------ decoding */

/* interface part: reverse-domain words; member: a word. Bytes [A-Za-z0-9_-.]. */
static bool method_name_ok(const char *m)
{
	const char *dot = strrchr(m, '.');

	if (!dot || dot == m || dot[1] == '\0' || m[0] == '.')
		return false;
	for (const char *p = m; *p; p++)
		if ((!isalnum((unsigned char)*p) && !strchr("._-", *p)) || (p[0] == '.' && p[1] == '.'))
			return false;
	return true;
}

/* the string if v is one without an embedded NUL, else NULL */
static const char *c_string(json_t *v)
{
	const char *s = json_string_value(v);

	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

static int decode_flag(json_t *root, const char *name, bool *out)
{
	json_t *v = json_object_get(root, name);

	if (v && !json_is_null(v) && !json_is_boolean(v))
		return -EINVAL;
	*out = json_is_true(v);
	return 0;
}

static const char *decode_fields(json_t *root, struct vl_request *req)
{
	json_t *m = json_object_get(root, "method");
	json_t *p = json_object_get(root, "parameters");

	if (!json_is_string(m))
		return "method is missing or not a string";
	if (json_string_length(m) >= sizeof(req->method))
		return "method name is too long";
	if (!c_string(m) || !method_name_ok(c_string(m)))
		return "method name is not a valid Varlink method name";
	if (p && !json_is_null(p) && !json_is_object(p))
		return "parameters is not an object";
	if (decode_flag(root, "oneway", &req->oneway) < 0)
		return "oneway is not a boolean";
	if (decode_flag(root, "more", &req->more) < 0)
		return "more is not a boolean";
	if (decode_flag(root, "upgrade", &req->upgrade) < 0)
		return "upgrade is not a boolean";
	strcpy(req->method, json_string_value(m));
	req->params = json_is_object(p) ? json_incref(p) : json_object();
	return req->params ? NULL : "out of memory";
}

int vl_request_decode(const char *msg, size_t len, struct vl_request *out, const char **why)
{
	struct vl_request req = { .params = NULL };
	json_error_t jerr;
	const char *err;
	json_t *root;

	/* \u0000 is valid JSON: a string holding it is the method's to refuse */
	root = json_loadb(msg, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!root) {
		*why = "message is not valid JSON";
		return -EINVAL;
	}
	err = json_is_object(root) ? decode_fields(root, &req) : "message is not a JSON object";
	json_decref(root);
	if (err) {
		*why = err;
		return -EINVAL;
	}
	*out = req;
	return 0;
}

static char *reply_encode(const char *error, json_t *params, bool continues, size_t *len)
{
	json_t *root;
	char *s;

	if (!params)
		params = json_object();
	if (!json_is_object(params)) {
		json_decref(params);
		return NULL;
	}
	/* json_pack steals "o" even when it fails */
	root = error ? json_pack("{s:s, s:o}", "error", error, "parameters", params)
		     : json_pack("{s:o}", "parameters", params);
	if (root && continues && json_object_set_new(root, "continues", json_true()) < 0) {
		json_decref(root);
		root = NULL;
	}
	if (!root)
		return NULL;
	s = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (s)
		*len = strlen(s) + 1;
	return s;
}

char *vl_reply_encode(const char *error, json_t *params, size_t *len)
{
	return reply_encode(error, params, false, len);
}

/* ------------------------------------------------------------ connections */

static void conn_run(struct vl_conn *c);

static size_t conn_queued(const struct vl_conn *c)
{
	return c->out_len - c->out_off;
}

/* The pending call loses its connection. A handler waiting for its drained
 * hook learns it now, from the hook, and finishes the call. */
static void conn_orphan_call(struct vl_conn *c)
{
	struct vl_call *call = c->pending;
	vl_drained_fn fn;

	if (!call)
		return;
	c->pending = NULL;
	call->conn = NULL;
	fn = call->drained;
	call->drained = NULL;
	if (fn)
		fn(call, call->drained_ud);
}

static void conn_free(struct vl_conn *c)
{
	struct vl_server *s = c->srv;

	ev_io_stop(s->loop, &c->rw); /* also clears pending (fed) events */
	ev_io_stop(s->loop, &c->ww);
	ev_timer_stop(s->loop, &c->idle_w);
	conn_orphan_call(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	s->full_logged = false;
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(c->fd);
	free(c->out);
	free(c);
}

/* Append one encoded message (len bytes, NUL included) to the output queue;
 * msg is taken over on success. */
static int out_append(struct vl_conn *c, char *msg, size_t len)
{
	size_t need;

	if (!c->out) {
		c->out = msg;
		c->out_len = c->out_cap = len;
		c->out_off = 0;
		return 0;
	}
	memmove(c->out, c->out + c->out_off, conn_queued(c));
	c->out_len -= c->out_off;
	c->out_off = 0;
	need = c->out_len + len;
	if (need > c->out_cap) {
		size_t cap = need > 2 * c->out_cap ? need : 2 * c->out_cap;
		char *n = realloc(c->out, cap);
		if (!n)
			return -ENOMEM;
		c->out = n;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, msg, len);
	c->out_len = need;
	free(msg);
	return 0;
}

/* Queue an encoded reply; params stolen. Replies queue in call order: a call
 * is dispatched only once the previous one is finished. A reply that cannot
 * be encoded or is too large is a bug of the method: log it and drop the
 * connection. */
static int conn_queue(struct vl_conn *c, const char *error, json_t *params, bool continues)
{
	size_t len = 0;
	char *msg = reply_encode(error, params, continues, &len);
	int r = !msg ? -EINVAL : len > VL_MAX_REPLY ? -EMSGSIZE : out_append(c, msg, len);

	if (r < 0) {
		log_err("varlink: reply to pid %d %s; closing the connection", (int)c->cred.pid,
			r == -EINVAL ? "cannot be encoded" : r == -EMSGSIZE ? "is too large" : "cannot be queued");
		free(msg);
		c->closing = true;
	}
	return r;
}

/* Answer a message that is not a valid request, then close. */
static void conn_protocol_error(struct vl_conn *c, const char *why)
{
	log_warn("varlink: bad message from pid %d uid %d: %s; closing the connection", (int)c->cred.pid,
		 (int)c->cred.uid, why);
	conn_queue(c, VL_ERR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", why), false);
	c->closing = true;
}

static int conn_flush(struct vl_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		c->out_off += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = c->out_cap = 0;
	return 0;
}

static const struct vl_method *find_method(const struct vl_server *s, const char *name)
{
	for (size_t i = 0; i < s->n_methods; i++)
		if (strcmp(s->methods[i].name, name) == 0)
			return &s->methods[i];
	return NULL;
}

static const struct vl_iface *find_iface(const struct vl_server *s, const char *name)
{
	for (size_t i = 0; i < s->n_ifaces; i++)
		if (strcmp(s->ifaces[i].name, name) == 0)
			return &s->ifaces[i];
	return NULL;
}

/* an interface is known when registered or when one of its methods is */
static bool iface_known(const struct vl_server *s, const char *iface)
{
	size_t len = strlen(iface);

	if (find_iface(s, iface))
		return true;
	for (size_t i = 0; i < s->n_methods; i++)
		if (strncmp(s->methods[i].name, iface, len) == 0 && s->methods[i].name[len] == '.' &&
		    !strchr(s->methods[i].name + len + 1, '.'))
			return true;
	return false;
}

static void route(struct vl_server *s, struct vl_call *call, bool upgrade)
{
	const struct vl_method *m = find_method(s, call->method);
	char iface[sizeof(call->method)];

	if (upgrade) {
		vl_call_error(call, VL_ERR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", "upgrade"));
		return;
	}
	if (m) {
		m->fn(call, call->params, m->ud);
		return;
	}
	strcpy(iface, call->method);
	*strrchr(iface, '.') = '\0'; /* method_name_ok() guarantees a dot */
	if (!iface_known(s, iface))
		vl_call_error(call, VL_ERR_INTERFACE_NOT_FOUND, json_pack("{s:s}", "interface", iface));
	else
		vl_call_error(call, VL_ERR_METHOD_NOT_FOUND, json_pack("{s:s}", "method", call->method));
}

/* Take the next complete message out of the input buffer and dispatch it.
 * false when there is none. */
static bool conn_next(struct vl_conn *c)
{
	char *nul = memchr(c->in, '\0', c->in_len);
	struct vl_request req;
	struct vl_call *call;
	const char *why;
	size_t mlen;
	int r;

	if (!nul) {
		if (c->in_len >= VL_MAX_MESSAGE)
			conn_protocol_error(c, "message too large");
		return false;
	}
	mlen = (size_t)(nul - c->in);
	r = vl_request_decode(c->in, mlen, &req, &why);
	c->in_len -= mlen + 1;
	memmove(c->in, nul + 1, c->in_len);
	if (r < 0) {
		conn_protocol_error(c, why);
		return true;
	}
	call = calloc(1, sizeof(*call));
	if (!call) {
		json_decref(req.params);
		c->closing = true;
		return true;
	}
	call->conn = c;
	memcpy(call->method, req.method, sizeof(call->method));
	call->params = req.params;
	call->cred = c->cred;
	call->privileged = c->privileged;
	call->oneway = req.oneway;
	call->more = req.more;
	c->pending = call;
	route(c->srv, call, req.upgrade);
	return true;
}

static void watch(struct ev_loop *loop, ev_io *w, bool on)
{
	(on ? ev_io_start : ev_io_stop)(loop, w);
}

static bool conn_drained(const struct vl_conn *c)
{
	return c->pending && c->pending->drained && conn_queued(c) <= VL_OUT_LOW;
}

/* read only when idle: nothing pending, nothing to send, room in the buffer;
 * write when there is something to send, or to call a drained hook once the
 * socket takes more */
static void conn_watch(struct vl_conn *c)
{
	watch(c->srv->loop, &c->rw, !c->pending && !c->out && !c->eof && !c->closing && c->in_len < VL_MAX_MESSAGE);
	watch(c->srv->loop, &c->ww, c->out != NULL || conn_drained(c) || c->deferred);
}

/* At most VL_CALLS_PER_PASS requests of one connection per loop pass: the
 * rest wait for the next pass (the write watcher brings it back), so one
 * client's pipelined requests do not hold the others up. */
static bool conn_budget(struct vl_conn *c)
{
	unsigned iter = ev_iteration(c->srv->loop);

	if (c->pass_iter != iter) {
		c->pass_iter = iter;
		c->pass_calls = 0;
	}
	if (c->pass_calls < VL_CALLS_PER_PASS)
		return true;
	c->deferred = memchr(c->in, '\0', c->in_len) != NULL;
	return false;
}

/* Call the pending call's drained hook (one-shot; it may set it again). */
static void conn_resume(struct vl_conn *c)
{
	struct vl_call *call = c->pending;
	vl_drained_fn fn = call->drained;

	call->drained = NULL;
	fn(call, call->drained_ud);
}

static void conn_run(struct vl_conn *c)
{
	bool resumed = false;

	if (c->busy)
		return; /* called from inside this connection's dispatch */
	c->busy = true;
	c->deferred = false;
	while (!c->dead) {
		if (c->out && conn_flush(c) < 0) {
			c->dead = true;
			break;
		}
		if (!resumed && conn_drained(c)) {
			resumed = true; /* one batch per wakeup: the loop moves on */
			conn_resume(c);
			continue;
		}
		if (c->out || c->pending || c->closing || !conn_budget(c) || !conn_next(c))
			break;
		c->pass_calls++;
		c->active = ev_now(c->srv->loop);
	}
	c->busy = false;
	if (c->dead || (!c->out && !c->pending && (c->closing || c->eof)))
		conn_free(c); /* a partial message at EOF is dropped */
	else
		conn_watch(c);
}

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct vl_conn *c = w->data;
	ssize_t n = recv(c->fd, c->in + c->in_len, VL_MAX_MESSAGE - c->in_len, MSG_DONTWAIT);

	if (n > 0)
		c->in_len += (size_t)n;
	else if (n == 0)
		c->eof = true;
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		c->dead = true;
	conn_run(c);
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	conn_run(w->data);
}

/* Close a connection that has had no call in flight and nothing to send
 * for connection_idle_timeout (a partial message does not count). */
static void conn_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct vl_conn *c = w->data;
	double timeout = c->srv->limits.idle_timeout, left = c->active + timeout - ev_now(loop);

	if (c->pending || c->out || c->busy || left > 0) {
		ev_timer_set(w, c->pending || c->out || left <= 0 ? timeout : left, 0.);
		ev_timer_start(loop, w);
		return;
	}
	log_debug("varlink: connection of pid %d uid %d idle for %.0f s, closing", (int)c->cred.pid,
		  (int)c->cred.uid, timeout);
	c->dead = true;
	conn_run(c);
}

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

/* The peer process as a pidfd: SO_PEERPIDFD where the kernel has it (the
 * process that connected, even if its pid was reused since), else
 * pidfd_open() of the SO_PEERCRED pid now. -ESRCH: it is gone already. */
static int peer_pidfd(int fd, pid_t pid, int *out)
{
	socklen_t len = sizeof(int);
	int pfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pfd, &len) == 0 && pfd >= 0) {
		*out = pfd;
		return 0;
	}
	if (errno == ESRCH)
		return -ESRCH;
	pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0)
		return errno == ESRCH ? -ESRCH : errno == ENOSYS ? -ENOSYS : -errno;
	fcntl(pfd, F_SETFD, FD_CLOEXEC);
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
static int conn_judge(struct vl_server *s, struct vl_conn *c)
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
	r = peer_pidfd(c->fd, c->cred.pid, &c->pidfd);
	if (r == -ENOSYS)
		return 0; /* no pidfds (before Linux 5.3): the pid alone */
	return r;
}

static int conn_new(struct vl_server *s, int fd)
{
	struct vl_conn *c = malloc(sizeof(*c) + VL_MAX_MESSAGE);
	int r;

	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->pidfd = -1;
	r = conn_judge(s, c);
	if (r < 0) {
		if (c->pidfd >= 0)
			close(c->pidfd);
		free(c);
		return r;
	}
	c->srv = s;
	ev_io_init(&c->rw, conn_read_cb, fd, EV_READ);
	ev_io_init(&c->ww, conn_write_cb, fd, EV_WRITE);
	ev_timer_init(&c->idle_w, conn_idle_cb, s->limits.idle_timeout, 0.);
	c->rw.data = c->ww.data = c->idle_w.data = c;
	c->active = ev_now(s->loop);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	ev_io_start(s->loop, &c->rw);
	if (s->limits.idle_timeout > 0)
		ev_timer_start(s->loop, &c->idle_w);
	return 0;
}

/* ------------------------------------------------------------------ accept */

static void accept_pause(struct vl_server *s, int err)
{
	log_warn("varlink: accept: %s; not accepting for %.0f s", strerror(err), VL_ACCEPT_PAUSE);
	ev_io_stop(s->loop, &s->accept_w);
	ev_timer_set(&s->pause_w, VL_ACCEPT_PAUSE, 0.);
	ev_timer_start(s->loop, &s->pause_w);
}

static void pause_cb(struct ev_loop *loop, ev_timer *w, int revents)
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
	else if (err != -EUSERS)
		log_warn("varlink: new connection: %s", strerror(-err));
	s->full_logged |= err == -EUSERS;
	close(fd);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
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
		r = conn_new(s, fd);
		if (r < 0)
			refuse(s, fd, r);
	}
}

/* --------------------------------------------------------- built-in service */

static void svc_get_info(struct vl_call *call, json_t *params, void *ud)
{
	struct vl_server *s = ud;
	json_t *ifs = json_array();

	for (size_t i = 0; ifs && i < s->n_ifaces; i++)
		json_array_append_new(ifs, json_string(s->ifaces[i].name));
	vl_call_reply(call, json_pack("{s:s, s:s, s:s, s:s, s:o}", "vendor", s->info[0], "product", s->info[1],
				      "version", s->info[2], "url", s->info[3], "interfaces", ifs));
}

static void svc_get_description(struct vl_call *call, json_t *params, void *ud)
{
	struct vl_server *s = ud;
	const char *name = c_string(json_object_get(params, "interface"));
	const struct vl_iface *i = name ? find_iface(s, name) : NULL;

	if (!name)
		vl_call_error(call, VL_ERR_INVALID_PARAMETER, json_pack("{s:s}", "parameter", "interface"));
	else if (!i)
		vl_call_error(call, VL_ERR_INTERFACE_NOT_FOUND, json_pack("{s:s}", "interface", name));
	else
		vl_call_reply(call, json_pack("{s:s}", "description", i->description));
}

/* ------------------------------------------------------------------ server */

int vl_server_new(struct ev_loop *loop, int listen_fd, const struct vl_server_info *info,
		  struct vl_server **out)
{
	struct vl_server *s;
	int fl, r = -ENOMEM;

	if (!loop || listen_fd < 0 || !info || !out)
		return -EINVAL;
	fl = fcntl(listen_fd, F_GETFL);
	if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->listen_fd = listen_fd;
	ev_io_init(&s->accept_w, accept_cb, listen_fd, EV_READ);
	ev_timer_init(&s->pause_w, pause_cb, VL_ACCEPT_PAUSE, 0.);
	s->accept_w.data = s->pause_w.data = s;
	s->limits = (struct vl_limits){ (gid_t)-1, VL_MAX_CLIENTS, VL_MAX_CLIENTS, 0. };
	s->info[0] = strdup(info->vendor ? info->vendor : "");
	s->info[1] = strdup(info->product ? info->product : "");
	s->info[2] = strdup(info->version ? info->version : "");
	s->info[3] = strdup(info->url ? info->url : "");
	if (!s->info[0] || !s->info[1] || !s->info[2] || !s->info[3])
		goto fail;
	r = vl_server_add_interface(s, VL_SERVICE, service_idl);
	if (r == 0)
		r = vl_server_add_method(s, VL_SERVICE ".GetInfo", svc_get_info, s);
	if (r == 0)
		r = vl_server_add_method(s, VL_SERVICE ".GetInterfaceDescription", svc_get_description, s);
	if (r < 0)
		goto fail;
	ev_io_start(loop, &s->accept_w);
	*out = s;
	return 0;
fail:
	s->listen_fd = -1; /* still the caller's */
	vl_server_free(s);
	return r;
}

void vl_server_free(struct vl_server *s)
{
	if (!s)
		return;
	ev_io_stop(s->loop, &s->accept_w);
	ev_timer_stop(s->loop, &s->pause_w);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	while (s->conns)
		conn_free(s->conns);
	for (size_t i = 0; i < s->n_ifaces; i++) {
		free(s->ifaces[i].name);
		free(s->ifaces[i].description);
	}
	for (size_t i = 0; i < s->n_methods; i++)
		free(s->methods[i].name);
	for (size_t i = 0; i < ARRAY_SIZE(s->info); i++)
		free(s->info[i]);
	free(s);
}

int vl_server_add_interface(struct vl_server *s, const char *name, const char *description)
{
	struct vl_iface *i;

	if (!s || !name || !description || !*name || strlen(name) >= sizeof(((struct vl_call *)0)->method))
		return -EINVAL;
	if (find_iface(s, name))
		return -EEXIST;
	if (s->n_ifaces >= VL_MAX_INTERFACES)
		return -ENOSPC;
	i = &s->ifaces[s->n_ifaces];
	i->name = strdup(name);
	i->description = strdup(description);
	if (!i->name || !i->description) {
		free(i->name);
		free(i->description);
		return -ENOMEM;
	}
	s->n_ifaces++;
	return 0;
}

int vl_server_add_method(struct vl_server *s, const char *method, vl_method_fn fn, void *ud)
{
	struct vl_method *m;

	if (!s || !method || !fn || strlen(method) >= sizeof(((struct vl_call *)0)->method) ||
	    !method_name_ok(method))
		return -EINVAL;
	if (find_method(s, method))
		return -EEXIST;
	if (s->n_methods >= VL_MAX_METHODS)
		return -ENOSPC;
	m = &s->methods[s->n_methods];
	m->name = strdup(method);
	m->fn = fn;
	m->ud = ud;
	if (!m->name)
		return -ENOMEM;
	s->n_methods++;
	return 0;
}

/* ------------------------------------------------------------------- calls */

static int call_finish(struct vl_call *call, const char *error, json_t *params)
{
	struct vl_conn *c;
	int r = 0;

	if (!call) {
		json_decref(params);
		return -EINVAL;
	}
	c = call->conn;
	if (c) {
		c->pending = NULL;
		c->active = ev_now(c->srv->loop);
		if (!call->oneway && !c->closing) { /* closing: a broken stream ends unanswered */
			r = conn_queue(c, error, params, false);
			params = NULL;
		}
		/* resume from the loop, not from inside the caller's stack */
		if (!c->busy)
			ev_feed_event(c->srv->loop, &c->ww, EV_WRITE);
	}
	json_decref(params);
	json_decref(call->params);
	free(call);
	return r;
}

int vl_call_reply(struct vl_call *call, json_t *params)
{
	return call_finish(call, NULL, params);
}

int vl_call_error(struct vl_call *call, const char *error, json_t *params)
{
	return call_finish(call, error ? error : VL_ERR_INVALID_PARAMETER, params);
}

bool vl_call_more(const struct vl_call *call)
{
	return call->more && !call->oneway;
}

bool vl_call_room(const struct vl_call *call)
{
	const struct vl_conn *c = call->conn;

	return c && !c->dead && !c->closing && conn_queued(c) < VL_OUT_HIGH;
}

size_t vl_call_queued(const struct vl_call *call)
{
	return call->conn ? conn_queued(call->conn) : 0;
}

int vl_call_continue(struct vl_call *call, json_t *params)
{
	struct vl_conn *c = call ? call->conn : NULL;
	int r;

	if (!call || !vl_call_more(call))
		r = -EINVAL;
	else if (!c || c->dead || c->closing)
		r = -ENOTCONN;
	else if (conn_queued(c) >= VL_OUT_HIGH)
		r = -ENOBUFS;
	else {
		r = conn_queue(c, NULL, params, true);
		params = NULL;
		if (!c->busy)
			conn_watch(c); /* a reply from outside the dispatch: write it */
	}
	json_decref(params);
	return r;
}

int vl_call_on_drained(struct vl_call *call, vl_drained_fn fn, void *ud)
{
	if (!call || !fn)
		return -EINVAL;
	if (!call->conn)
		return -ENOTCONN;
	call->drained = fn;
	call->drained_ud = ud;
	if (!call->conn->busy)
		conn_watch(call->conn);
	return 0;
}

const struct ucred *vl_call_peer(const struct vl_call *call)
{
	return &call->cred;
}

bool vl_call_privileged(const struct vl_call *call)
{
	return call->privileged;
}

/* The pidfd becomes readable when the process exits. */
bool vl_call_peer_alive(const struct vl_call *call)
{
	struct pollfd p = { .fd = call->conn ? call->conn->pidfd : -1, .events = POLLIN };

	if (!call->conn)
		return false;
	if (p.fd < 0)
		return kill(call->cred.pid, 0) == 0 || errno == EPERM;
	return poll(&p, 1, 0) == 0;
}

void vl_server_set_limits(struct vl_server *s, const struct vl_limits *l)
{
	s->limits = *l;
	s->full_logged = false;
}

const char *vl_call_method(const struct vl_call *call)
{
	return call->method;
}

/* The connection is not read while a call is pending, so ask the socket:
 * POLLHUP means the peer closed both directions (a client that only shut
 * down its write side still waits for the reply). */
bool vl_call_connected(const struct vl_call *call)
{
	struct pollfd p;

	if (!call->conn || call->conn->dead || call->conn->closing)
		return false;
	p.fd = call->conn->fd;
	p.events = POLLIN;
	p.revents = 0;
	if (poll(&p, 1, 0) < 0)
		return true;
	return !(p.revents & (POLLHUP | POLLERR | POLLNVAL));
}
