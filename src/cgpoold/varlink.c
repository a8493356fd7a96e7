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
 * (at most VL_MAX_REPLY).
 *
 * Every connection counts against its uid's share (max_connections_per_user)
 * until it is freed, and is freed once nothing moved on it for the idle
 * timeout while it waited for its client: reading, writing and streaming
 * alike (conn_idle_cb). */
#include "config.h"

#include "varlink.h"

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

#include "varlink_internal.h"

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
	char *msg = vl_encode(error, params, continues, &len);
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
		c->active = ev_now(c->srv->loop); /* the client reads: not idle */
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
	*strrchr(iface, '.') = '\0'; /* vl_method_name_ok() guarantees a dot */
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

/* Close a connection on which nothing has moved for connection_idle_timeout:
 * no request read and no byte of a reply sent. Waiting for the client counts
 * as idle: a streaming call whose client stops reading, a reply nobody reads.
 * A call the daemon itself is still working on (a handler holds it and waits
 * for no drained hook) does not; a partial message is no request. */
static void conn_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct vl_conn *c = w->data;
	double timeout = c->srv->limits.idle_timeout, left = c->active + timeout - ev_now(loop);
	bool working = c->busy || (c->pending && !c->pending->drained);

	if (working || left > 0) {
		ev_timer_set(w, working || left <= 0 ? timeout : left, 0.);
		ev_timer_start(loop, w);
		return;
	}
	log_debug("varlink: connection of pid %d uid %d idle for %.0f s%s, closing", (int)c->cred.pid,
		  (int)c->cred.uid, timeout, c->pending ? " in a streaming call" : c->out ? " with its reply unread" : "");
	c->dead = true;
	conn_run(c);
}

int vl_conn_new(struct vl_server *s, int fd)
{
	struct vl_conn *c = malloc(sizeof(*c) + VL_MAX_MESSAGE);
	int r;

	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->pidfd = -1;
	r = vl_conn_judge(s, c);
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
	const char *name = vl_c_string(json_object_get(params, "interface"));
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
	ev_io_init(&s->accept_w, vl_accept_cb, listen_fd, EV_READ);
	ev_timer_init(&s->pause_w, vl_pause_cb, VL_ACCEPT_PAUSE, 0.);
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
	    !vl_method_name_ok(method))
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
