/* libcgpool.c - client library for cgpoold: blocking Varlink calls over the
 * daemon's Unix socket, one call at a time per connection. */
#include "config.h"

#include "cgpool.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define CGPOOL_EXPORT __attribute__((visibility("default")))

#define MAX_REQUEST (64 * 1024)  /* the daemon's VL_MAX_MESSAGE, NUL included */
/* CGPOOL_MAX_PIDS pids (7 digits and a comma each) and an Attach's other
 * parameters fit in one request */
_Static_assert(CGPOOL_MAX_PIDS * 8 + 8192 <= MAX_REQUEST, "an Attach of CGPOOL_MAX_PIDS pids must fit in a request");
#define MAX_REPLY (1024 * 1024)  /* NUL included */
#define MAX_MESSAGE_TEXT 512     /* bytes in a human error message */

struct cgpool {
	int fd; /* -1 once closed */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *buf; /* received bytes not consumed yet */
	size_t len, cap;
	char *err_name, *err_params, *err_message;
	unsigned timeout_ms; /* 0: wait for a reply as long as it takes */
};

/* -------------------------------------------------------- error messages */

/* {field} in a template is replaced by that parameter; an absent one makes
 * the whole template unusable and the short form is used. */
struct err_text {
	const char *name;
	const char *tmpl;
	const char *bare;
};

static const struct err_text err_texts[] = {
	{ "io.cgpool.Manager.NoSuchKey", "no such key: {key}", "no such key" },
	{ "io.cgpool.Manager.InvalidKey", "invalid key \"{key}\": {reason}", "invalid key" },
	{ "io.cgpool.Manager.PoolFull", "pool is full: {reason}", "pool is full" },
	{ "io.cgpool.Manager.PoolFull", "pool is full (max_slots {max_slots})", "pool is full" },
	{ "io.cgpool.Manager.NoSuchProcess", "no such process: {pid}", "no such process" },
	{ "io.cgpool.Manager.KeyBusy", "key {key} runs another job ({job})", "the key runs another job" },
	{ "io.cgpool.Manager.JobEnding", "key {key}: {reason}", "the key's last job is still being killed" },
	{ "io.cgpool.Manager.PermissionDenied", "permission denied: {reason}", "permission denied" },
	{ "io.cgpool.Manager.NotSupported", "not supported: {reason}", "not supported" },
	{ "io.cgpool.Manager.LimitRefused", "limit {limit} = {value} refused for {key}: {reason} (the run's limits are "
					    "as they were)", "the kernel refused a limit" },
	{ "org.varlink.service.PermissionDenied", "permission denied: {reason}", "permission denied" },
	{ "org.varlink.service.MethodNotFound", "the daemon has no method {method}", "method not found" },
	{ "org.varlink.service.MethodNotImplemented", "method not implemented: {method}", "method not implemented" },
	{ "org.varlink.service.InterfaceNotFound", "the daemon has no interface {interface}", "interface not found" },
	{ "org.varlink.service.InvalidParameter", "invalid parameter: {reason}", "invalid parameter" },
	{ "org.varlink.service.InvalidParameter", "invalid parameter: {parameter}", "invalid parameter" },
	{ "org.varlink.service.ExpectedMore", NULL, "the method must be called with \"more\"" },
};

/* append the text of one parameter; false if it is absent */
static bool put_field(json_t *params, const char *name, size_t nlen, char *out, size_t size, size_t *pos)
{
	char key[64];
	json_t *v;
	char *dump = NULL;
	const char *text;

	if (nlen >= sizeof(key))
		return false;
	memcpy(key, name, nlen);
	key[nlen] = '\0';
	v = json_object_get(params, key);
	if (!v || json_is_null(v))
		return false;
	text = json_is_string(v) ? json_string_value(v) : (dump = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT));
	if (text && *pos < size)
		*pos += (size_t)snprintf(out + *pos, size - *pos, "%s", text);
	free(dump);
	return text != NULL;
}

static bool expand(const char *tmpl, json_t *params, char *out, size_t size)
{
	size_t pos = 0;

	for (const char *p = tmpl; *p; p++) {
		const char *end = *p == '{' ? strchr(p, '}') : NULL;

		if (end) {
			if (!put_field(params, p + 1, (size_t)(end - p - 1), out, size, &pos))
				return false;
			p = end;
		} else if (pos + 1 < size) {
			out[pos++] = *p;
		}
	}
	out[pos < size ? pos : size - 1] = '\0';
	return true;
}

/* a one-line message: no control characters from the daemon reach a terminal */
static char *error_message(const char *name, json_t *params, const char *params_text)
{
	char *out = malloc(MAX_MESSAGE_TEXT);
	const struct err_text *t = NULL;

	if (!out)
		return NULL;
	/* the first template of the name whose fields are all there */
	for (size_t i = 0; i < sizeof(err_texts) / sizeof(err_texts[0]); i++) {
		if (strcmp(err_texts[i].name, name) != 0)
			continue;
		t = &err_texts[i];
		if (t->tmpl && expand(t->tmpl, params, out, MAX_MESSAGE_TEXT))
			break;
		t = NULL;
	}
	if (!t) {
		for (size_t i = 0; i < sizeof(err_texts) / sizeof(err_texts[0]) && !t; i++)
			if (strcmp(err_texts[i].name, name) == 0)
				t = &err_texts[i];
		if (t)
			snprintf(out, MAX_MESSAGE_TEXT, "%s", t->bare);
		else if (json_object_size(params) > 0)
			snprintf(out, MAX_MESSAGE_TEXT, "%s %s", name, params_text);
		else
			snprintf(out, MAX_MESSAGE_TEXT, "%s", name);
	}
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return out;
}

static void error_clear(struct cgpool *c)
{
	free(c->err_name);
	free(c->err_params);
	free(c->err_message);
	c->err_name = c->err_params = c->err_message = NULL;
}

static int error_set(struct cgpool *c, const char *name, json_t *params)
{
	c->err_name = strdup(name);
	c->err_params = json_dumps(params, JSON_COMPACT);
	c->err_message = c->err_params ? error_message(name, params, c->err_params) : NULL;
	if (!c->err_name || !c->err_params || !c->err_message) {
		error_clear(c);
		return -ENOMEM;
	}
	return -EREMOTEIO;
}

/* ------------------------------------------------------------- transport */

static void drop_connection(struct cgpool *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->len = 0;
}

static int send_all(struct cgpool *c, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno; /* SO_SNDTIMEO */
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until the socket has bytes to read. poll(POLLIN), not a blocking
 * recv: a task asleep in recv is also woken each time the daemon reads our
 * request (the write space it frees), a wakeup the daemon pays for. */
static int wait_readable(struct cgpool *c, long long deadline)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	for (;;) {
		long long left = c->timeout_ms ? deadline - now_ms() : -1;
		int n;

		if (c->timeout_ms && left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* receive up to and including the next NUL; *mlen excludes the NUL */
static int recv_message(struct cgpool *c, size_t *mlen)
{
	long long deadline = c->timeout_ms ? now_ms() + c->timeout_ms : 0;
	size_t scanned = 0;

	for (;;) {
		char *nul = c->len > scanned ? memchr(c->buf + scanned, '\0', c->len - scanned) : NULL;
		ssize_t n;
		int r;

		if (nul) {
			*mlen = (size_t)(nul - c->buf);
			return 0;
		}
		scanned = c->len;
		if (c->len >= MAX_REPLY)
			return -EMSGSIZE;
		if (c->len == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 4096;
			char *b = realloc(c->buf, cap > MAX_REPLY ? MAX_REPLY : cap);
			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->cap = cap > MAX_REPLY ? MAX_REPLY : cap;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			r = wait_readable(c, deadline);
			if (r < 0)
				return r;
			continue;
		}
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			c->len += (size_t)n;
	}
}

/* parse one reply: 0 with *params (new reference) and *continues, or the
 * error recorded (an error reply ends a call: it never continues) */
static int parse_reply(struct cgpool *c, const char *msg, size_t len, json_t **params, bool *continues)
{
	json_t *root = json_loadb(msg, len, 0, NULL);
	json_t *err, *p, *more;
	int r = -EBADMSG;

	if (!json_is_object(root))
		goto out;
	err = json_object_get(root, "error");
	p = json_object_get(root, "parameters");
	more = json_object_get(root, "continues");
	if ((err && !json_is_string(err)) || (p && !json_is_null(p) && !json_is_object(p)) ||
	    (more && !json_is_boolean(more) && !json_is_null(more)) || (err && json_is_true(more)))
		goto out;
	p = json_is_object(p) ? json_incref(p) : json_object();
	if (!p) {
		r = -ENOMEM;
		goto out;
	}
	if (err) {
		r = error_set(c, json_string_value(err), p);
		json_decref(p);
		goto out;
	}
	*params = p;
	*continues = json_is_true(more);
	r = 0;
out:
	json_decref(root);
	return r;
}

/* Send a request; params stolen (NULL = {}). */
static int send_request(struct cgpool *c, const char *method, json_t *params, bool more)
{
	json_t *req = json_pack("{s:s, s:o}", "method", method, "parameters", params ? params : json_object());
	char *msg = NULL;
	size_t msize;
	int r = req ? 0 : -EINVAL; /* not UTF-8, most likely */

	if (req && more && json_object_set_new(req, "more", json_true()) < 0)
		r = -ENOMEM;
	if (r == 0 && !(msg = json_dumps(req, JSON_COMPACT)))
		r = -ENOMEM;
	json_decref(req);
	error_clear(c);
	if (r < 0)
		return r;
	msize = strlen(msg) + 1;
	if (c->fd < 0)
		r = -ENOTCONN;
	else if (msize > MAX_REQUEST)
		r = -EMSGSIZE; /* the daemon would refuse it; nothing was sent */
	else if ((r = send_all(c, msg, msize)) < 0)
		drop_connection(c); /* the stream is out of step now */
	free(msg);
	return r;
}

/* Receive and parse the next reply of the call in flight. */
static int recv_reply(struct cgpool *c, json_t **reply, bool *continues)
{
	size_t mlen = 0;
	int r = recv_message(c, &mlen);

	if (r < 0) {
		drop_connection(c); /* the stream is out of step now */
		return r;
	}
	r = parse_reply(c, c->buf, mlen, reply, continues);
	c->len -= mlen + 1;
	memmove(c->buf, c->buf + mlen + 1, c->len);
	return r;
}

/* params stolen (NULL = {}); *reply is the reply's parameters object */
static int call_json(struct cgpool *c, const char *method, json_t *params, json_t **reply)
{
	bool continues = false;
	int r = send_request(c, method, params, false);

	if (r == 0)
		r = recv_reply(c, reply, &continues);
	if (r == 0 && continues) { /* more replies we did not ask for */
		json_decref(*reply);
		drop_connection(c);
		r = -EBADMSG;
	}
	return r;
}

/* ------------------------------------------------------------------ API */

static int set_timeouts(int fd, unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

CGPOOL_EXPORT int cgpool_set_timeout(struct cgpool *c, unsigned timeout_ms)
{
	if (!c || c->fd < 0)
		return c ? -ENOTCONN : -EINVAL;
	c->timeout_ms = timeout_ms;
	return set_timeouts(c->fd, timeout_ms);
}

CGPOOL_EXPORT int cgpool_connect(const char *path, struct cgpool **out)
{
	return cgpool_connect_timeout(path, 0, out);
}

/* a Unix socket's connect waits for room in the backlog bounded by SO_SNDTIMEO */
CGPOOL_EXPORT int cgpool_connect_timeout(const char *path, unsigned timeout_ms, struct cgpool **out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct cgpool *c;

	if (!out)
		return -EINVAL;
	if (!path)
		path = getenv("CGPOOL_SOCKET");
	if (!path || !*path)
		path = CGPOOL_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	strcpy(c->path, path);
	c->timeout_ms = timeout_ms;
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || (timeout_ms && set_timeouts(c->fd, timeout_ms) < 0) ||
	    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno == EAGAIN ? ETIMEDOUT : errno;
		cgpool_close(c);
		return -e;
	}
	*out = c;
	return 0;
}

CGPOOL_EXPORT void cgpool_close(struct cgpool *c)
{
	if (!c)
		return;
	drop_connection(c);
	error_clear(c);
	free(c->buf);
	free(c);
}

CGPOOL_EXPORT const char *cgpool_socket_path(const struct cgpool *c)
{
	return c->path;
}

/* a JSON object text as an object, NULL when it is not one */
static json_t *params_object(const char *text)
{
	json_t *o = json_loads(text, 0, NULL);

	if (json_is_object(o))
		return o;
	json_decref(o);
	return NULL;
}

CGPOOL_EXPORT int cgpool_call(struct cgpool *c, const char *method, const char *params_json, char **reply_json)
{
	json_t *params = NULL, *reply = NULL;
	char *text;
	int r;

	if (!c || !method)
		return -EINVAL;
	if (params_json && !(params = params_object(params_json)))
		return -EINVAL;
	r = call_json(c, method, params, &reply);
	if (r < 0)
		return r;
	text = json_dumps(reply, JSON_COMPACT);
	json_decref(reply);
	if (!text)
		return -ENOMEM;
	if (reply_json)
		*reply_json = text;
	else
		free(text);
	return 0;
}

CGPOOL_EXPORT int cgpool_call_more(struct cgpool *c, const char *method, const char *params_json,
				   int (*fn)(const char *reply_json, void *ud), void *ud)
{
	json_t *params = NULL, *reply = NULL;
	bool continues = true;
	char *text;
	int r;

	if (!c || !method || !fn)
		return -EINVAL;
	if (params_json && !(params = params_object(params_json)))
		return -EINVAL;
	r = send_request(c, method, params, true);
	while (r == 0 && continues && (r = recv_reply(c, &reply, &continues)) == 0) {
		text = json_dumps(reply, JSON_COMPACT);
		json_decref(reply);
		r = text ? fn(text, ud) : -ENOMEM;
		free(text);
		if (r != 0 && continues)
			drop_connection(c); /* replies still coming: out of step */
	}
	return r;
}

CGPOOL_EXPORT const char *cgpool_last_error(const struct cgpool *c, const char **params_json, const char **message)
{
	if (!c || !c->err_name)
		return NULL;
	if (params_json)
		*params_json = c->err_params;
	if (message)
		*message = c->err_message;
	return c->err_name;
}

/* a call whose reply is {slot: Slot} */
static int call_slot(struct cgpool *c, const char *method, json_t *params, char **slot_json)
{
	json_t *reply = NULL, *slot;
	char *text = NULL;
	int r;

	if (!params)
		return -EINVAL; /* a string that is not UTF-8, most likely */
	r = call_json(c, method, params, &reply);
	if (r < 0)
		return r;
	slot = json_object_get(reply, "slot");
	if (!json_is_object(slot))
		r = -EBADMSG;
	else if (slot_json && !(text = json_dumps(slot, JSON_COMPACT)))
		r = -ENOMEM;
	json_decref(reply);
	if (r == 0 && slot_json)
		*slot_json = text;
	return r;
}

CGPOOL_EXPORT int cgpool_attach(struct cgpool *c, const char *key, const pid_t *pids, size_t npids,
				const char *class_name, char **slot_json)
{
	return cgpool_attach_limits(c, key, pids, npids, class_name, NULL, 0, slot_json);
}

static json_t *limits_object(const struct cgpool_limit *limits, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++) {
		if (!limits[i].name || !limits[i].value ||
		    json_object_set_new(o, limits[i].name, json_string(limits[i].value)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

CGPOOL_EXPORT int cgpool_attach_job(struct cgpool *c, const char *key, const pid_t *pids, size_t npids,
				    const char *class_name, const struct cgpool_limit *limits, size_t nlimits,
				    const struct cgpool_job *job, char **slot_json)
{
	json_t *params, *arr, *lim = NULL;
	bool bad;

	if (!c || !key || (npids && !pids) || (nlimits && !limits) || (job && !job->id && job->hold <= 0))
		return -EINVAL;
	if (npids > CGPOOL_MAX_PIDS)
		return -E2BIG; /* the daemon would refuse it */
	if (nlimits && !(lim = limits_object(limits, nlimits)))
		return -EINVAL;
	arr = json_array();
	for (size_t i = 0; arr && i < npids; i++) {
		if (pids[i] <= 0 || json_array_append_new(arr, json_integer(pids[i])) < 0) {
			json_decref(arr);
			json_decref(lim);
			return pids[i] <= 0 ? -EINVAL : -ENOMEM;
		}
	}
	params = json_pack("{s:s, s:o}", "key", key, "pids", arr);
	bad = !params || (class_name && json_object_set_new(params, "class", json_string(class_name)) < 0) ||
	      (lim && json_object_set(params, "limits", lim) < 0);
	if (!bad && job)
		bad = (job->id && json_object_set_new(params, "job", json_string(job->id)) < 0) ||
		      (job->hold > 0 && json_object_set_new(params, "hold", json_integer(job->hold)) < 0) ||
		      json_object_set_new(params, "release", json_boolean(job->release)) < 0;
	json_decref(lim);
	if (bad) {
		json_decref(params);
		return -EINVAL;
	}
	return call_slot(c, CGPOOL_INTERFACE ".Attach", params, slot_json);
}

CGPOOL_EXPORT int cgpool_attach_limits(struct cgpool *c, const char *key, const pid_t *pids, size_t npids,
				       const char *class_name, const struct cgpool_limit *limits, size_t nlimits,
				       char **slot_json)
{
	return cgpool_attach_job(c, key, pids, npids, class_name, limits, nlimits, NULL, slot_json);
}

CGPOOL_EXPORT int cgpool_exec(struct cgpool *c, const char *key, const char *class_name, char *const argv[])
{
	pid_t self = getpid();
	int r = -EINVAL;

	if (c && argv && argv[0])
		r = cgpool_attach(c, key, &self, 1, class_name, NULL);
	if (c)
		drop_connection(c);
	if (r < 0)
		return r;
	execvp(argv[0], argv);
	return -errno;
}

/* a call on a job's slots: how many it changed */
static int job_slots_call(struct cgpool *c, const char *method, json_t *params, size_t *nslots)
{
	json_t *reply = NULL, *slots;
	int r;

	if (!params)
		return -EINVAL;
	r = call_json(c, method, params, &reply);
	if (r < 0)
		return r;
	slots = json_object_get(reply, "slots");
	if (!json_is_array(slots))
		r = -EBADMSG;
	else if (nslots)
		*nslots = json_array_size(slots);
	json_decref(reply);
	return r;
}

CGPOOL_EXPORT int cgpool_freeze_job(struct cgpool *c, const char *job, bool frozen, size_t *nslots)
{
	if (!c || !job)
		return -EINVAL;
	return job_slots_call(c, CGPOOL_INTERFACE ".Freeze", json_pack("{s:s, s:b}", "job", job, "frozen", frozen),
			      nslots);
}

CGPOOL_EXPORT int cgpool_limit_job(struct cgpool *c, const char *job, const char *name, const char *value,
				   size_t *nslots)
{
	if (!c || !job || !name || !value)
		return -EINVAL;
	return job_slots_call(c, CGPOOL_INTERFACE ".Limit",
			      json_pack("{s:s, s:{s:s}}", "job", job, "limits", name, value), nslots);
}

CGPOOL_EXPORT int cgpool_release(struct cgpool *c, const char *key, char **slot_json)
{
	if (!c || !key)
		return -EINVAL;
	return call_slot(c, CGPOOL_INTERFACE ".Release", json_pack("{s:s}", "key", key), slot_json);
}
