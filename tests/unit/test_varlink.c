/* test_varlink.c - the Varlink server (decoder, encoder, transport) against
 * raw sockets and the real client library. The server runs on a private ev
 * loop driven by the test; blocking libcgpool calls run in a thread. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cgpool.h"
#include "log.h"
#include "util.h"
#include "varlink.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEADLINE_US (20 * 1000 * 1000) /* generous: valgrind is slow */
#define TEST_IFACE "io.cgpool.Test"

static const char test_idl[] = "interface io.cgpool.Test\n"
			       "method Echo(x: ?object) -> (x: ?object)\n"
			       "method Hold() -> ()\n"
			       "method Stream(n: int, pad: ?int) -> (i: int, pad: string)\n";

struct fx {
	char dir[96], path[128]; /* dir in $TMPDIR (/tmp when unset); path its socket */
	struct ev_loop *loop;
	struct vl_server *srv;
	struct vl_call *held; /* Hold's call, answered by the test */
	int calls;            /* handler invocations */
	pid_t attached;       /* the pid Attach was given */
	/* Stream: */
	int hooks;            /* drained hooks run */
	size_t max_queued;    /* most output bytes queued after a continuing reply */
	int streams_done;     /* streams finished (answered or dropped) */
	int streams_lost;     /* of those, ended because the client was gone */
};

#define PUMP_UNTIL(f, cond)                                                  \
	do {                                                                 \
		int64_t end_ = now_mono_us() + DEADLINE_US;                  \
		bool ok_;                                                    \
		while (!(ok_ = (cond)) && now_mono_us() < end_) {            \
			ev_run((f)->loop, EVRUN_NOWAIT);                     \
			usleep(200);                                         \
		}                                                            \
		assert_true(ok_);                                            \
	} while (0)

static void pump(struct fx *f, int ms)
{
	int64_t end = now_mono_us() + ms * 1000;

	while (now_mono_us() < end) {
		ev_run(f->loop, EVRUN_NOWAIT);
		usleep(200);
	}
}

/* ------------------------------------------------------------- handlers */

static void m_echo(struct vl_call *call, json_t *params, void *ud)
{
	struct fx *f = ud;

	f->calls++;
	assert_string_equal(vl_call_method(call), TEST_IFACE ".Echo");
	assert_int_equal(vl_call_peer(call)->pid, getpid());
	vl_call_reply(call, json_deep_copy(params));
}

static void m_hold(struct vl_call *call, json_t *params, void *ud)
{
	struct fx *f = ud;

	f->calls++;
	f->held = call;
}

/* replies with the error named in params: {"e": name, "p": {...} or null} */
static void m_fail(struct vl_call *call, json_t *params, void *ud)
{
	json_t *p = json_object_get(params, "p");

	((struct fx *)ud)->calls++;
	vl_call_error(call, json_string_value(json_object_get(params, "e")), json_is_object(p) ? json_incref(p) : NULL);
}

/* a reply of "size" (< 2 MiB) bytes of text */
static void m_big(struct vl_call *call, json_t *params, void *ud)
{
	static char text[2 << 20];

	memset(text, 'x', sizeof(text));
	vl_call_reply(call, json_pack("{s:s%}", "text", text, (size_t)json_integer_value(json_object_get(params, "size"))));
}

/* Stream(n, pad): n replies {"i": 0..n-1, "pad": pad 'x's}, in batches of at
 * most 64 while the output queue has room, then after the drained hook */
struct stream {
	struct fx *f;
	int next, n, pad;
};

static json_t *stream_item(const struct stream *st)
{
	static char text[4096];

	memset(text, 'x', sizeof(text));
	return json_pack("{s:i, s:s%}", "i", st->next, "pad", text, (size_t)st->pad);
}

static void stream_resume(struct vl_call *call, void *ud);

static void stream_batch(struct vl_call *call, void *ud)
{
	struct stream *st = ud;
	struct fx *f = st->f;

	if (!vl_call_connected(call)) {
		f->streams_lost++;
		st->next = st->n; /* nothing more to send */
	}
	for (int k = 0; st->next < st->n - 1 && k < 64 && vl_call_room(call); k++, st->next++) {
		assert_int_equal(vl_call_continue(call, stream_item(st)), 0);
		if (vl_call_queued(call) > f->max_queued)
			f->max_queued = vl_call_queued(call);
	}
	if (st->next < st->n - 1) {
		assert_int_equal(vl_call_on_drained(call, stream_resume, st), 0);
		return;
	}
	vl_call_reply(call, st->next < st->n ? stream_item(st) : NULL);
	f->streams_done++;
	free(st);
}

static void stream_resume(struct vl_call *call, void *ud)
{
	((struct stream *)ud)->f->hooks++;
	stream_batch(call, ud);
}

static void m_stream(struct vl_call *call, json_t *params, void *ud)
{
	struct fx *f = ud;
	struct stream *st;

	f->calls++;
	if (!vl_call_more(call)) {
		assert_int_equal(vl_call_continue(call, json_object()), -EINVAL);
		vl_call_error(call, VL_ERR_EXPECTED_MORE, NULL);
		return;
	}
	st = calloc(1, sizeof(*st));
	assert_non_null(st);
	st->f = f;
	st->n = (int)json_integer_value(json_object_get(params, "n"));
	st->pad = (int)json_integer_value(json_object_get(params, "pad"));
	assert_true(st->n >= 1 && st->pad >= 0 && st->pad <= 4096);
	stream_batch(call, st);
}

static void m_attach(struct vl_call *call, json_t *params, void *ud)
{
	struct fx *f = ud;

	f->attached = (pid_t)json_integer_value(json_array_get(json_object_get(params, "pids"), 0));
	vl_call_reply(call, json_pack("{s:{s:O, s:s}}", "slot", "key", json_object_get(params, "key"), "state",
				      "running"));
}

static int setup(void **state)
{
	static const struct vl_server_info info = { "cgpool-test", "test_varlink", "1.2.3", "https://example.org" };
	struct fx *f = calloc(1, sizeof(*f));
	const char *t = getenv("TMPDIR");
	int fd;

	assert_non_null(f);
	assert_true(snprintf(f->dir, sizeof(f->dir), "%s/test_varlink.XXXXXX", t && *t ? t : "/tmp") <
		    (int)sizeof(f->dir));
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/run/cgpool.sock", f->dir);
	f->loop = ev_loop_new(EVFLAG_AUTO);
	assert_int_equal(vl_listen(f->path, 0600, (gid_t)-1, &fd), 0);
	assert_int_equal(vl_server_new(f->loop, fd, &info, &f->srv), 0);
	assert_int_equal(vl_server_add_interface(f->srv, TEST_IFACE, test_idl), 0);
	assert_int_equal(vl_server_add_interface(f->srv, TEST_IFACE, test_idl), -EEXIST);
	assert_int_equal(vl_server_add_method(f->srv, TEST_IFACE ".Echo", m_echo, f), 0);
	assert_int_equal(vl_server_add_method(f->srv, TEST_IFACE ".Hold", m_hold, f), 0);
	assert_int_equal(vl_server_add_method(f->srv, TEST_IFACE ".Fail", m_fail, f), 0);
	assert_int_equal(vl_server_add_method(f->srv, TEST_IFACE ".Big", m_big, f), 0);
	assert_int_equal(vl_server_add_method(f->srv, TEST_IFACE ".Stream", m_stream, f), 0);
	assert_int_equal(vl_server_add_method(f->srv, "io.cgpool.Manager.Attach", m_attach, f), 0);
	assert_int_equal(vl_server_add_method(f->srv, "NoDot", m_echo, f), -EINVAL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char sub[160];

	vl_server_free(f->srv); /* closes the listening socket */
	ev_loop_destroy(f->loop);
	unlink(f->path);
	snprintf(sub, sizeof(sub), "%s/run", f->dir);
	rmdir(sub);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ------------------------------------------------ client library in a thread */

struct job {
	const char *path, *method, *params;
	int rc;
	char *reply, *err_name, *err_params, *err_msg;
	atomic_bool done;
	pthread_t th;
};

static void *job_main(void *p)
{
	struct job *j = p;
	struct cgpool *c = NULL;

	j->rc = cgpool_connect(j->path, &c);
	if (j->rc == 0) {
		j->rc = cgpool_call(c, j->method, j->params, &j->reply);
		if (j->rc == -EREMOTEIO) {
			const char *params, *msg, *name = cgpool_last_error(c, &params, &msg);
			j->err_name = strdup(name);
			j->err_params = strdup(params);
			j->err_msg = strdup(msg);
		}
		cgpool_close(c);
	}
	atomic_store(&j->done, true);
	return NULL;
}

static void job_start(struct fx *f, struct job *j, const char *method, const char *params)
{
	memset(j, 0, sizeof(*j));
	j->path = f->path;
	j->method = method;
	j->params = params;
	assert_int_equal(pthread_create(&j->th, NULL, job_main, j), 0);
}

static void job_finish(struct fx *f, struct job *j)
{
	PUMP_UNTIL(f, atomic_load(&j->done));
	pthread_join(j->th, NULL);
}

static void job_clear(struct job *j)
{
	free(j->reply);
	free(j->err_name);
	free(j->err_params);
	free(j->err_msg); /* job_start() clears the rest */
}

/* one call, start to end; the reply parameters parsed, or NULL on an error */
static json_t *call(struct fx *f, struct job *j, const char *method, const char *params)
{
	json_t *r;

	job_start(f, j, method, params);
	job_finish(f, j);
	r = j->rc == 0 ? json_loads(j->reply, 0, NULL) : NULL;
	assert_true(j->rc != 0 || r);
	return r;
}

/* --------------------------------------------------------- raw clients */

struct raw {
	int fd;
	char buf[1 << 16];
	size_t len;
};

static struct raw *raw_connect(struct fx *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct raw *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	strcpy(sa.sun_path, f->path);
	r->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(r->fd >= 0);
	assert_int_equal(connect(r->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return r;
}

static void raw_close(struct raw *r)
{
	close(r->fd);
	free(r);
}

static void raw_send(struct fx *f, struct raw *r, const char *data, size_t len)
{
	int64_t end = now_mono_us() + DEADLINE_US;

	while (len > 0 && now_mono_us() < end) {
		ssize_t n = send(r->fd, data, len, MSG_NOSIGNAL);
		if (n > 0) {
			data += n;
			len -= (size_t)n;
		}
		ev_run(f->loop, EVRUN_NOWAIT);
	}
	assert_int_equal(len, 0);
}

static void raw_sends(struct fx *f, struct raw *r, const char *msg)
{
	raw_send(f, r, msg, strlen(msg) + 1); /* with its NUL */
}

/* the next message as sent (free it); NULL at EOF (or a reset) */
static char *raw_recv_text(struct fx *f, struct raw *r)
{
	int64_t end = now_mono_us() + DEADLINE_US;

	while (now_mono_us() < end) {
		char *nul = memchr(r->buf, '\0', r->len), *msg;
		ssize_t n;

		if (nul) {
			msg = strdup(r->buf);
			r->len -= (size_t)(nul - r->buf) + 1;
			memmove(r->buf, nul + 1, r->len);
			return msg;
		}
		assert_true(r->len < sizeof(r->buf));
		n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return NULL;
		if (n > 0)
			r->len += (size_t)n;
		ev_run(f->loop, EVRUN_NOWAIT);
		usleep(100);
	}
	fail_msg("no reply within the deadline");
	return NULL;
}

/* the next message, parsed; NULL at EOF */
static json_t *raw_recv(struct fx *f, struct raw *r)
{
	char *msg = raw_recv_text(f, r);
	json_t *v = msg ? json_loads(msg, 0, NULL) : NULL;

	assert_true(!msg || v);
	free(msg);
	return v;
}

static const char *error_of(json_t *reply)
{
	return json_string_value(json_object_get(reply, "error"));
}

static json_int_t param_int(json_t *reply, const char *name)
{
	return json_integer_value(json_object_get(json_object_get(reply, "parameters"), name));
}

/* ------------------------------------------------------------- decoding */

static void test_decode_good(void **state)
{
	static const struct {
		const char *msg, *method;
		size_t nparams;
		bool oneway, more, upgrade;
	} cases[] = {
		{ "{\"method\": \"io.cgpool.Manager.Attach\", \"parameters\": {\"key\": \"web\"}, \"oneway\": true}",
		  "io.cgpool.Manager.Attach", 1, true, false, false },
		{ "{\"method\": \"org.varlink.service.GetInfo\"}", "org.varlink.service.GetInfo", 0, false, false, false },
		{ "{\"method\": \"a.b.C\", \"parameters\": null, \"more\": null, \"x\": [1]}", "a.b.C", 0, false, false,
		  false },
		{ "{\"method\": \"a-b.c_d.E\", \"more\": true, \"upgrade\": true, \"oneway\": false}", "a-b.c_d.E", 0,
		  false, true, true },
		{ "{\"method\": \"a.B\", \"parameters\": {\"k\": \"a\\u0000b\"}}", "a.B", 1, false, false, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct vl_request req;
		const char *why = NULL;

		assert_int_equal(vl_request_decode(cases[i].msg, strlen(cases[i].msg), &req, &why), 0);
		assert_string_equal(req.method, cases[i].method);
		assert_true(json_is_object(req.params));
		assert_int_equal(json_object_size(req.params), cases[i].nparams);
		assert_int_equal(req.oneway, cases[i].oneway);
		assert_int_equal(req.more, cases[i].more);
		assert_int_equal(req.upgrade, cases[i].upgrade);
		json_decref(req.params);
	}
}

static void test_decode_bad(void **state)
{
	char long_method[400];
	const char *const msgs[] = {
		"", "{this is not json", "[1, 2, 3]", "\"method\"", "{}", "{\"parameters\": {}}",
		"{\"method\": 42}", "{\"method\": \"a.b.C\", \"parameters\": [1]}",
		"{\"method\": \"a.b.C\", \"parameters\": \"x\"}", "{\"method\": \"a.b.C\", \"oneway\": 1}",
		"{\"method\": \"a.b.C\", \"more\": \"yes\"}", "{\"method\": \"a.b.C\", \"upgrade\": {}}",
		"{\"method\": \"NoInterface\"}", "{\"method\": \"a.b.\"}", "{\"method\": \".a.b\"}",
		"{\"method\": \"a..b\"}", "{\"method\": \"a.b C\"}", "{\"method\": \"a.b.C\\u0000x\"}",
		"{\"method\": \"a.b.C\", \"method\": \"a.b.D\"}", "{\"method\": \"a.b.C\"} trailing",
		long_method,
	};

	snprintf(long_method, sizeof(long_method), "{\"method\": \"a.%0300d\"}", 0);
	for (size_t i = 0; i < ARRAY_SIZE(msgs); i++) {
		struct vl_request req = { .method = "untouched", .params = NULL };
		const char *why = NULL;

		assert_int_equal(vl_request_decode(msgs[i], strlen(msgs[i]), &req, &why), -EINVAL);
		assert_non_null(why);
		assert_string_equal(req.method, "untouched"); /* outputs only on success */
		assert_null(req.params);
	}
}

static void test_encode(void **state)
{
	static const struct {
		const char *error, *params, *out;
	} cases[] = {
		{ NULL, "{\"a\":1}", "{\"parameters\":{\"a\":1}}" },
		{ "a.b.E", "{\"key\":\"web\"}", "{\"error\":\"a.b.E\",\"parameters\":{\"key\":\"web\"}}" },
		{ NULL, NULL, "{\"parameters\":{}}" },
		{ NULL, "{\"k\":\"a\\u0000b\"}", "{\"parameters\":{\"k\":\"a\\u0000b\"}}" }, /* never a raw NUL */
	};
	size_t len = 77;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		json_t *p = cases[i].params ? json_loads(cases[i].params, JSON_ALLOW_NUL, NULL) : NULL;
		char *out = vl_reply_encode(cases[i].error, p, &len);

		assert_string_equal(out, cases[i].out);
		assert_int_equal(len, strlen(out) + 1);
		free(out);
	}
	assert_null(vl_reply_encode(NULL, json_array(), &len)); /* not an object: stolen and freed */
	assert_int_equal(len, strlen(cases[ARRAY_SIZE(cases) - 1].out) + 1);
}

/* --------------------------------------------------- service interface */

static void assert_serving(struct fx *f)
{
	struct job j;
	json_t *r = call(f, &j, "org.varlink.service.GetInfo", NULL);

	assert_int_equal(j.rc, 0);
	assert_string_equal(json_string_value(json_object_get(r, "vendor")), "cgpool-test");
	json_decref(r);
	job_clear(&j);
}

/* GetInfo, GetInterfaceDescription and a method, through the library */
static void test_service(void **state)
{
	static const char *const desc_of[][2] = { { TEST_IFACE, test_idl }, { "org.varlink.service", "method GetInfo()" } };
	struct fx *f = *state;
	char params[128];
	struct job j;
	json_t *r = call(f, &j, "org.varlink.service.GetInfo", NULL);

	assert_string_equal(j.reply, "{\"vendor\":\"cgpool-test\",\"product\":\"test_varlink\",\"version\":\"1.2.3\","
				     "\"url\":\"https://example.org\",\"interfaces\":[\"org.varlink.service\",\"" TEST_IFACE
				     "\"]}");
	json_decref(r);
	job_clear(&j);
	for (size_t i = 0; i < ARRAY_SIZE(desc_of); i++) {
		snprintf(params, sizeof(params), "{\"interface\": \"%s\"}", desc_of[i][0]);
		r = call(f, &j, "org.varlink.service.GetInterfaceDescription", params);
		assert_non_null(strstr(json_string_value(json_object_get(r, "description")), desc_of[i][1]));
		json_decref(r);
		job_clear(&j);
	}
	r = call(f, &j, TEST_IFACE ".Echo", "{\"x\": {\"a\": [1, 2, \"\\u00e9\"]}}");
	assert_string_equal(j.reply, "{\"x\":{\"a\":[1,2,\"\xc3\xa9\"]}}"); /* UTF-8 on the wire */
	json_decref(r);
	job_clear(&j);
	assert_int_equal(f->calls, 1);
}

/* io.cgpool.Test.Fail answers with error e and parameters p */
#define FAIL_WITH(e, p) TEST_IFACE ".Fail", "{\"e\":\"" e "\",\"p\":" p "}", e
#define MGR(e) "io.cgpool.Manager." e
#define GID "org.varlink.service.GetInterfaceDescription"

/* error replies through the library: name, parameters and the human message */
static void test_remote_errors(void **state)
{
	static const struct {
		const char *method, *params, *name, *params_out, *message;
	} cases[] = {
		{ GID, "{\"interface\":\"com.example.No\"}", VL_ERR_INTERFACE_NOT_FOUND, "{\"interface\":\"com.example.No\"}",
		  "the daemon has no interface com.example.No" },
		{ GID, NULL, VL_ERR_INVALID_PARAMETER, "{\"parameter\":\"interface\"}", "invalid parameter: interface" },
		{ TEST_IFACE ".Nope", NULL, VL_ERR_METHOD_NOT_FOUND, "{\"method\":\"io.cgpool.Test.Nope\"}",
		  "the daemon has no method io.cgpool.Test.Nope" },
		{ "org.varlink.service.Nope", NULL, VL_ERR_METHOD_NOT_FOUND, "{\"method\":\"org.varlink.service.Nope\"}", NULL },
		/* an interface known through a method only */
		{ MGR("List"), NULL, VL_ERR_METHOD_NOT_FOUND, "{\"method\":\"io.cgpool.Manager.List\"}", NULL },
		{ "com.example.No.Do", NULL, VL_ERR_INTERFACE_NOT_FOUND, "{\"interface\":\"com.example.No\"}", NULL },
		{ "io.cgpool.Do", NULL, VL_ERR_INTERFACE_NOT_FOUND, "{\"interface\":\"io.cgpool\"}", NULL },
		{ FAIL_WITH(MGR("NoSuchKey"), "{\"key\":\"web\"}"), "{\"key\":\"web\"}", "no such key: web" },
		{ FAIL_WITH(MGR("InvalidKey"), "{\"key\":\"a/b\",\"reason\":\"key may not contain '/'\"}"), NULL,
		  "invalid key \"a/b\": key may not contain '/'" },
		{ FAIL_WITH(MGR("PoolFull"), "{\"max_slots\":1024}"), NULL, "pool is full (max_slots 1024)" },
		{ FAIL_WITH(MGR("NoSuchProcess"), "{\"pid\":1234}"), NULL, "no such process: 1234" },
		{ FAIL_WITH(MGR("PermissionDenied"), "{\"reason\":\"not root\"}"), NULL, "permission denied: not root" },
		{ FAIL_WITH(MGR("PermissionDenied"), "null"), "{}", "permission denied" },
		{ FAIL_WITH(MGR("NotSupported"), "{\"reason\":\"no v1\"}"), NULL, "not supported: no v1" },
		{ FAIL_WITH(MGR("NoSuchKey"), "{\"key\":\"a\\nb\\u001b[2J\"}"), NULL, "no such key: a?b?[2J" },
		{ FAIL_WITH("com.example.Odd", "{\"n\":1}"), "{\"n\":1}", "com.example.Odd {\"n\":1}" },
		{ FAIL_WITH("com.example.Odd", "null"), "{}", "com.example.Odd" },
	};
	struct fx *f = *state;
	struct job j;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_null(call(f, &j, cases[i].method, cases[i].params));
		assert_int_equal(j.rc, -EREMOTEIO);
		assert_string_equal(j.err_name, cases[i].name);
		if (cases[i].params_out)
			assert_string_equal(j.err_params, cases[i].params_out);
		if (cases[i].message)
			assert_string_equal(j.err_msg, cases[i].message);
		job_clear(&j);
	}
	assert_int_equal(f->calls, 10); /* only the Fail calls reached a handler */
}

/* ------------------------------------------------------ deferred replies */

static void test_deferred_reply(void **state)
{
	struct fx *f = *state;
	struct job j;

	job_start(f, &j, TEST_IFACE ".Hold", NULL);
	PUMP_UNTIL(f, f->held != NULL);
	pump(f, 30);
	assert_false(atomic_load(&j.done));
	assert_true(vl_call_connected(f->held));
	assert_int_equal(vl_call_peer(f->held)->pid, getpid());
	assert_string_equal(vl_call_method(f->held), TEST_IFACE ".Hold");
	assert_int_equal(vl_call_reply(f->held, json_pack("{s:b}", "late", 1)), 0);
	f->held = NULL;
	job_finish(f, &j);
	assert_int_equal(j.rc, 0);
	assert_string_equal(j.reply, "{\"late\":true}");
	job_clear(&j);
}

/* while a call is pending, the next message on that connection waits */
static void test_pipelined_in_order(void **state)
{
	static const char two[] = "{\"method\":\"io.cgpool.Test.Hold\"}\0"
				  "{\"method\":\"io.cgpool.Test.Echo\",\"parameters\":{\"n\":2}}";
	struct fx *f = *state;
	struct raw *c = raw_connect(f);
	json_t *r;

	raw_send(f, c, two, sizeof(two));
	PUMP_UNTIL(f, f->held != NULL);
	pump(f, 30);
	assert_int_equal(f->calls, 1); /* Echo not dispatched yet */
	vl_call_error(f->held, MGR("NoSuchKey"), json_pack("{s:s}", "key", "k"));
	f->held = NULL;
	r = raw_recv(f, c);
	assert_string_equal(error_of(r), MGR("NoSuchKey"));
	json_decref(r);
	r = raw_recv(f, c);
	assert_null(error_of(r));
	assert_int_equal(param_int(r, "n"), 2);
	json_decref(r);
	raw_close(c);
}

/* a client that only shut down its write side still gets its reply; one that
 * hung up does not, and the call stays valid until answered */
static void test_disconnect_while_pending(void **state)
{
	struct fx *f = *state;

	for (int full = 0; full < 2; full++) {
		struct raw *c = raw_connect(f);

		raw_sends(f, c, "{\"method\":\"io.cgpool.Test.Hold\"}");
		PUMP_UNTIL(f, f->held != NULL);
		assert_true(vl_call_connected(f->held));
		shutdown(c->fd, full ? SHUT_RDWR : SHUT_WR);
		pump(f, 20);
		assert_int_equal(vl_call_connected(f->held), !full);
		assert_int_equal(vl_call_peer(f->held)->pid, getpid()); /* still valid */
		assert_int_equal(vl_call_reply(f->held, json_pack("{s:s}", "a", "b")), 0);
		f->held = NULL;
		if (!full) {
			char *msg = raw_recv_text(f, c);
			assert_string_equal(msg, "{\"parameters\":{\"a\":\"b\"}}");
			free(msg);
			assert_null(raw_recv_text(f, c)); /* then the server closes */
		}
		raw_close(c);
		pump(f, 20);
		assert_serving(f);
	}
}

static void test_free_with_pending(void **state)
{
	struct fx *f = *state;
	struct raw *c = raw_connect(f);

	raw_sends(f, c, "{\"method\":\"io.cgpool.Test.Hold\"}");
	PUMP_UNTIL(f, f->held != NULL);
	vl_server_free(f->srv);
	f->srv = NULL;
	assert_false(vl_call_connected(f->held));
	assert_int_equal(vl_call_reply(f->held, NULL), 0); /* dropped, freed */
	f->held = NULL;
	assert_null(raw_recv(f, c));
	raw_close(c);
}

/* ------------------------------------------------------- limits and abuse */

#define ECHO(p) "{\"method\":\"io.cgpool.Test.Echo\"" p "}"
#define BAD(why) "{\"error\":\"org.varlink.service.InvalidParameter\",\"parameters\":{\"parameter\":\"" why "\"}}"

static void test_size_limits(void **state)
{
	static const char head[] = "{\"method\":\"io.cgpool.Test.Echo\",\"parameters\":{\"x\":{\"s\":\"", tail[] = "\"}}}";
	static char msg[VL_MAX_MESSAGE];
	size_t pad = VL_MAX_MESSAGE - 1 - strlen(head) - strlen(tail);
	struct fx *f = *state;
	struct raw *c = raw_connect(f);
	char *text;
	json_t *r;
	struct job j;

	/* exactly VL_MAX_MESSAGE bytes, NUL included, is fine */
	memset(msg, 'y', sizeof(msg));
	memcpy(msg, head, strlen(head));
	strcpy(msg + strlen(head) + pad, tail);
	raw_sends(f, c, msg);
	text = raw_recv_text(f, c);
	assert_int_equal(strlen(text), strlen("{\"parameters\":{\"x\":{\"s\":\"\"}}}") + pad);
	free(text);
	/* one byte more is not: an error, then the connection is closed */
	memset(msg, 'x', sizeof(msg));
	raw_send(f, c, msg, sizeof(msg));
	text = raw_recv_text(f, c);
	assert_string_equal(text, BAD("message too large"));
	free(text);
	assert_null(raw_recv_text(f, c));
	raw_close(c);
	/* replies: the client's buffer grows; over VL_MAX_REPLY the server hangs up */
	r = call(f, &j, TEST_IFACE ".Big", "{\"size\": 900000}");
	assert_int_equal(strlen(json_string_value(json_object_get(r, "text"))), 900000);
	json_decref(r);
	job_clear(&j);
	assert_null(call(f, &j, TEST_IFACE ".Big", "{\"size\": 2000000}"));
	assert_int_equal(j.rc, -ECONNRESET);
	job_clear(&j);
	assert_serving(f);
}

static void test_slow_client(void **state)
{
	static const char msg[] = "{\"method\":\"io.cgpool.Test.Echo\",\"parameters\":{\"x\":7}}";
	struct fx *f = *state;
	struct raw *slow = raw_connect(f);
	json_t *r;

	raw_send(f, slow, msg, 20);
	pump(f, 20);
	assert_serving(f); /* served while the first one stalls mid-message */
	raw_send(f, slow, msg + 20, sizeof(msg) - 20);
	r = raw_recv(f, slow);
	assert_int_equal(param_int(r, "x"), 7);
	json_decref(r);
	raw_close(slow);
}

/* Exchanges on one raw connection: the messages (one per line) are sent at
 * once; the replies must be exactly these, then the server closes or not. */
static void test_wire(void **state)
{
	static const struct {
		const char *send, *replies[2];
		bool closed;
		int calls;
	} cases[] = {
		/* malformed: answered, closed, and what follows is not run */
		{ "{this is not json\n" ECHO(""), { BAD("message is not valid JSON") }, true, 0 },
		{ "[1,2,3]\n" ECHO(""), { BAD("message is not a JSON object") }, true, 0 },
		{ "{\"parameters\":{}}\n" ECHO(""), { BAD("method is missing or not a string") }, true, 0 },
		{ ECHO(",\"parameters\":[]") "\n" ECHO(""), { BAD("parameters is not an object") }, true, 0 },
		/* oneway: no reply; more: one reply without "continues" */
		{ ECHO(",\"parameters\":{\"x\":1},\"oneway\":true") "\n" ECHO(",\"parameters\":{\"x\":2},\"more\":true"),
		  { "{\"parameters\":{\"x\":2}}" }, false, 2 },
		/* upgrade is refused, the connection stays usable */
		{ ECHO(",\"upgrade\":true") "\n" ECHO(""), { BAD("upgrade"), "{\"parameters\":{}}" }, false, 1 },
	};
	struct fx *f = *state;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct raw *c = raw_connect(f);
		char *buf = strdup(cases[i].send), *msg;
		int calls = f->calls;

		for (char *p = buf; *p; p++)
			*p = *p == '\n' ? '\0' : *p;
		raw_send(f, c, buf, strlen(cases[i].send) + 1);
		free(buf);
		for (size_t k = 0; k < ARRAY_SIZE(cases[i].replies) && cases[i].replies[k]; k++) {
			msg = raw_recv_text(f, c);
			assert_string_equal(msg, cases[i].replies[k]);
			free(msg);
		}
		if (cases[i].closed)
			assert_null(raw_recv_text(f, c));
		assert_int_equal(f->calls - calls, cases[i].calls);
		raw_close(c);
		assert_serving(f);
	}
}

static void test_client_limit(void **state)
{
	struct fx *f = *state;
	struct raw *c[VL_MAX_CLIENTS], *extra;
	json_t *r;

	for (int i = 0; i < VL_MAX_CLIENTS; i++) {
		c[i] = raw_connect(f);
		raw_sends(f, c[i], ECHO(""));
		r = raw_recv(f, c[i]); /* accepted and served */
		assert_non_null(r);
		json_decref(r);
	}
	extra = raw_connect(f);
	assert_null(raw_recv(f, extra)); /* accepted and closed at once */
	raw_close(extra);
	raw_close(c[0]);
	pump(f, 20);
	assert_serving(f);
	for (int i = 1; i < VL_MAX_CLIENTS; i++)
		raw_close(c[i]);
}

/* ------------------------------------------------------------ streaming */

#define STREAM(p) "{\"method\":\"io.cgpool.Test.Stream\",\"parameters\":{" p "}"

/* the exact wire form: "continues" on all but the last; oneway wins over
 * more; without more the method says ExpectedMore; calls after a stream wait */
static void test_stream_wire(void **state)
{
	static const struct {
		const char *send, *replies[4];
	} cases[] = {
		{ STREAM("\"n\":3") ",\"more\":true}",
		  { "{\"parameters\":{\"i\":0,\"pad\":\"\"},\"continues\":true}",
		    "{\"parameters\":{\"i\":1,\"pad\":\"\"},\"continues\":true}", "{\"parameters\":{\"i\":2,\"pad\":\"\"}}" } },
		{ STREAM("\"n\":1") ",\"more\":true}", { "{\"parameters\":{\"i\":0,\"pad\":\"\"}}" } },
		{ STREAM("\"n\":3") "}", { "{\"error\":\"org.varlink.service.ExpectedMore\",\"parameters\":{}}" } },
		{ STREAM("\"n\":5") ",\"more\":true,\"oneway\":true}\n" ECHO(",\"parameters\":{\"x\":1}"),
		  { "{\"parameters\":{\"x\":1}}" } },
		{ STREAM("\"n\":2") ",\"more\":true}\n" ECHO(",\"more\":true"),
		  { "{\"parameters\":{\"i\":0,\"pad\":\"\"},\"continues\":true}", "{\"parameters\":{\"i\":1,\"pad\":\"\"}}",
		    "{\"parameters\":{}}" } },
	};
	struct fx *f = *state;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct raw *c = raw_connect(f);
		char *buf = strdup(cases[i].send), *msg;

		for (char *p = buf; *p; p++)
			*p = *p == '\n' ? '\0' : *p;
		raw_send(f, c, buf, strlen(cases[i].send) + 1);
		free(buf);
		for (size_t k = 0; k < ARRAY_SIZE(cases[i].replies) && cases[i].replies[k]; k++) {
			msg = raw_recv_text(f, c);
			assert_string_equal(msg, cases[i].replies[k]);
			free(msg);
		}
		pump(f, 20);
		assert_int_equal(recv(c->fd, (char[1]){ 0 }, 1, MSG_DONTWAIT), -1); /* nothing more */
		raw_close(c);
	}
	assert_int_equal(f->streams_done, 3); /* the oneway one too */
	assert_int_equal(f->streams_lost, 0);
}

struct sjob {
	const char *path, *params;
	int rc, n, bad, stop_at;
	unsigned nap_us;      /* every 100 replies (default 1 ms) */
	atomic_bool done;
	pthread_t th;
};

/* a slow reader: checks the order, naps now and then */
static int sjob_reply(const char *text, void *ud)
{
	struct sjob *j = ud;
	json_t *r = json_loads(text, 0, NULL);

	if (json_integer_value(json_object_get(r, "i")) != j->n)
		j->bad++;
	json_decref(r);
	if (++j->n % 100 == 0)
		usleep(j->nap_us ? j->nap_us : 1000);
	return j->n == j->stop_at ? -ECANCELED : 0;
}

static void *sjob_main(void *p)
{
	struct sjob *j = p;
	struct cgpool *c = NULL;

	j->rc = cgpool_connect(j->path, &c);
	if (j->rc == 0)
		j->rc = cgpool_call_more(c, TEST_IFACE ".Stream", j->params, sjob_reply, j);
	if (j->rc == -ECANCELED) /* the connection was closed: further calls fail */
		j->rc = cgpool_call(c, TEST_IFACE ".Echo", NULL, NULL) == -ENOTCONN ? -ECANCELED : -EPROTO;
	cgpool_close(c);
	atomic_store(&j->done, true);
	return NULL;
}

/* 10,000 replies of 1 KiB to a slow reader: all arrive, in order, while the
 * server never queues more than VL_OUT_HIGH plus one reply */
static void test_stream_backpressure(void **state)
{
	struct fx *f = *state;
	struct sjob j = { .path = f->path, .params = "{\"n\": 10000, \"pad\": 1000}" };

	assert_int_equal(pthread_create(&j.th, NULL, sjob_main, &j), 0);
	PUMP_UNTIL(f, atomic_load(&j.done));
	pthread_join(j.th, NULL);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.n, 10000);
	assert_int_equal(j.bad, 0);
	assert_int_equal(f->streams_done, 1);
	assert_true(f->max_queued > 0);
	assert_true(f->max_queued <= VL_OUT_HIGH + 1100);
	assert_true(f->hooks >= 10000 / 64); /* it waited for the client, again and again */
	/* the library stops where the caller says so and closes the connection */
	memset(&j, 0, sizeof(j));
	j.path = f->path;
	j.params = "{\"n\": 1000}";
	j.stop_at = 10;
	assert_int_equal(pthread_create(&j.th, NULL, sjob_main, &j), 0);
	PUMP_UNTIL(f, atomic_load(&j.done) && f->streams_done == 2);
	pthread_join(j.th, NULL);
	assert_int_equal(j.rc, -ECANCELED);
	assert_int_equal(f->streams_lost, 1);
	assert_serving(f);
}

/* the client goes away mid-stream (closed; shut down, then closed) or the
 * server is freed mid-stream: the handler learns it from its drained hook,
 * finishes the call, and nothing leaks */
static void test_stream_disconnect(void **state)
{
	struct fx *f = *state;

	for (int how = 0; how < 3; how++) {
		struct raw *c = raw_connect(f);
		json_t *r;

		raw_sends(f, c, STREAM("\"n\":100000,\"pad\":500") ",\"more\":true}");
		r = raw_recv(f, c);
		assert_int_equal(param_int(r, "i"), 0);
		json_decref(r);
		pump(f, 20); /* the socket fills up, the queue too */
		assert_int_equal(f->streams_done, how);
		if (how == 1)
			shutdown(c->fd, SHUT_RDWR);
		if (how == 2) {
			vl_server_free(f->srv);
			f->srv = NULL;
		}
		raw_close(c);
		PUMP_UNTIL(f, f->streams_done == how + 1);
		assert_int_equal(f->streams_lost, f->streams_done);
		if (how < 2)
			assert_serving(f);
	}
}

/* ---- streams and the connection limits, as a user who is neither root
 * nor privileged sees them */

/* a plain blocking client (the child below has no loop to pump) */
static int plain_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* send msg with its NUL, then read up to the first NUL: 0, or -1 (EOF,
 * error, 5 s) */
static int plain_call(int fd, const char *msg)
{
	char c;

	if (send(fd, msg, strlen(msg) + 1, MSG_NOSIGNAL) != (ssize_t)strlen(msg) + 1)
		return -1;
	while (recv(fd, &c, 1, 0) == 1)
		if (c == '\0')
			return 0;
	return -1;
}

/* read to EOF (or a reset): the bytes read, -1 when more than cap come or
 * none for 5 s */
static long plain_drain(int fd, long cap)
{
	static char buf[1 << 16];
	long total = 0;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0 && total <= cap)
		total += n;
	return n == 0 || (n < 0 && errno == ECONNRESET) ? total : -1;
}

/* The child: share streams that it never reads; a connection beyond the
 * share is closed at once; past the idle timeout the streams end (EOF after
 * what the socket held); then it is served again. Its exit status: 0, or
 * the step that failed. */
static int stream_tenant(const char *path, int share, double idle)
{
	int fds[8], extra;

	for (int i = 0; i < share; i++) {
		fds[i] = plain_connect(path);
		if (fds[i] < 0 || plain_call(fds[i], STREAM("\"n\":100000,\"pad\":500") ",\"more\":true}") < 0)
			return 10 + i; /* refused, or no first reply */
	}
	extra = plain_connect(path);
	if (extra < 0 || plain_drain(extra, 0) != 0)
		return 20; /* over the share, and not closed at once */
	close(extra);
	usleep((useconds_t)(idle * 3e6));
	for (int i = 0; i < share; i++) {
		long got = plain_drain(fds[i], 4 << 20); /* the whole stream is 50 MB */
		close(fds[i]);
		if (got < 0)
			return 30 + i; /* still streaming after the idle timeout */
	}
	extra = plain_connect(path);
	if (extra < 0 || plain_call(extra, "{\"method\":\"org.varlink.service.GetInfo\"}") < 0)
		return 40; /* not served once the streams are gone */
	close(extra);
	return 0;
}

/* A connection in a streaming call counts against its user's share and is
 * closed once nothing moved on it for the idle timeout, like any other; a
 * stream its client keeps reading goes on to its end however long it takes;
 * a reply nobody reads does not keep its connection either. */
static void test_stream_idle(void **state)
{
	struct fx *f = *state;
	struct vl_limits l = { (gid_t)-1, 16, 2, 0.5 };
	struct sjob j = { .path = f->path, .params = "{\"n\": 2000, \"pad\": 1000}", .nap_us = 50000 };
	char run[sizeof(f->path)];
	struct raw *c;
	int64_t t0;
	long got = 0;
	int status = 0;
	pid_t pid;

	vl_server_set_limits(f->srv, &l);
	snprintf(run, sizeof(run), "%s/run", f->dir);
	assert_int_equal(chmod(f->dir, 0711) | chmod(run, 0711) | chmod(f->path, 0666), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the socket by its name in its directory: the directories above
		 * it ($TMPDIR) may be closed to other users */
		if (chdir(run) < 0 ||
		    (getuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)))
			_exit(2);
		_exit(stream_tenant("cgpool.sock", 2, l.idle_timeout));
	}
	PUMP_UNTIL(f, waitpid(pid, &status, WNOHANG) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the unprivileged client failed at step %d (10: a stream refused, 20: a third connection "
			 "served, 30: a stream still going after the idle timeout, 40: not served after)",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	PUMP_UNTIL(f, f->streams_done == 2);
	assert_int_equal(f->streams_lost, 2); /* ended because their client was gone */
	/* a slow reader that never stops for the timeout: 20 naps of 50 ms */
	t0 = now_mono_us();
	assert_int_equal(pthread_create(&j.th, NULL, sjob_main, &j), 0);
	PUMP_UNTIL(f, atomic_load(&j.done));
	pthread_join(j.th, NULL);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.n, 2000);
	assert_true(now_mono_us() - t0 > 1000000 * l.idle_timeout);
	assert_int_equal(f->streams_lost, 2);
	/* 900,000 bytes of a reply nobody reads */
	c = raw_connect(f);
	raw_sends(f, c, "{\"method\":\"io.cgpool.Test.Big\",\"parameters\":{\"size\":900000}}");
	pump(f, 1500);
	for (int64_t end = now_mono_us() + DEADLINE_US; now_mono_us() < end;) {
		ssize_t n = recv(c->fd, c->buf, sizeof(c->buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			break;
		got += n > 0 ? n : 0;
		ev_run(f->loop, EVRUN_NOWAIT);
		usleep(n > 0 ? 0 : 1000);
	}
	assert_true(got < 900000); /* closed with most of it unsent */
	raw_close(c);
	assert_serving(f);
}

/* --------------------------------------------------- listen and exec */

static void test_listen(void **state)
{
	struct fx *f = *state;
	char path[220], dir[200], file[220];
	struct stat st;
	mode_t old = umask(077);
	int fd, fd2;

	snprintf(dir, sizeof(dir), "%s/a/b", f->dir);
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	assert_int_equal(vl_listen(path, 0660, (gid_t)-1, &fd), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660); /* whatever the umask */
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(vl_listen(path, 0660, (gid_t)-1, &fd2), -EADDRINUSE); /* a live one */
	close(fd);
	assert_int_equal(vl_listen(path, 0600, (gid_t)-1, &fd), 0); /* a stale one */
	close(fd);
	unlink(path);
	close(open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	assert_int_equal(vl_listen(file, 0600, (gid_t)-1, &fd), -EEXIST); /* not a socket: kept */
	assert_int_equal(unlink(file), 0);
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(vl_listen(path, 0600, (gid_t)-1, &fd), -ENAMETOOLONG);
	rmdir(dir);
	*strrchr(dir, '/') = '\0';
	rmdir(dir);
}

static void test_exec(void **state)
{
	static char *const argv_ok[] = { "true", NULL }, *const argv_bad[] = { "/nonexistent/cgpool-test", NULL };
	char *const *argvs[] = { argv_ok, argv_bad };
	struct fx *f = *state;

	for (int i = 0; i < 2; i++) {
		int status = -1;
		pid_t child = fork();

		assert_true(child >= 0);
		if (child == 0) {
			struct cgpool *c = NULL;
			int r = cgpool_connect(f->path, &c);

			if (r == 0)
				r = cgpool_exec(c, "job", NULL, argvs[i]);
			cgpool_close(c);
			_exit(r == -ENOENT ? 42 : 1);
		}
		f->attached = 0;
		PUMP_UNTIL(f, waitpid(child, &status, WNOHANG) == child);
		assert_int_equal(f->attached, child);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), i == 0 ? 0 : 42);
	}
}

/* A kernel without SO_PEERPIDFD: the pidfd opened at accept is of the peer
 * only if that pid is still a process of the peer's uid. Here: this process
 * (its uid, not another), a child that exited (gone), and pid 1 under a uid
 * that is not init's. */
static void test_pid_of_uid(void **state)
{
	int self = (int)syscall(SYS_pidfd_open, getpid(), 0), init, child;
	bool peer, open_;
	pid_t pid;

	(void)state;
	vl_kernel_peer(&peer, &open_);
	if (self < 0) {
		assert_false(open_);
		skip();
	}
	assert_true(open_);
	assert_int_equal(vl_pid_of_uid(self, getpid(), getuid()), 0);
	assert_int_equal(vl_pid_of_uid(self, getpid(), getuid() + 4242), -EPERM);
	close(self);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	child = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(child >= 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid); /* reaped: no /proc entry, or a reused pid */
	assert_int_equal(vl_pid_of_uid(child, pid, getuid()), -ESRCH);
	close(child);

	init = (int)syscall(SYS_pidfd_open, 1, 0);
	if (init >= 0) { /* a pid namespace's init may be ours to see only */
		assert_int_equal(vl_pid_of_uid(init, 1, 4242), -EPERM);
		close(init);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_good),
		cmocka_unit_test(test_decode_bad),
		cmocka_unit_test(test_encode),
		cmocka_unit_test_setup_teardown(test_service, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferred_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disconnect_while_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_with_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_wire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_backpressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_disconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec, setup, teardown),
		cmocka_unit_test(test_pid_of_uid),
	};

	log_init("test_varlink");
	log_set_level(LOG_CRIT); /* the refusals below are expected */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
