/* test_list.c - io.cgpool.Manager.List over the real Varlink server and the
 * client library, on a pool of the simulated cgroupfs: one reply per slot
 * with "more", ExpectedMore without it above the 1 MiB limit, and a cursor
 * that survives slots going and coming while it streams. Status's run
 * fields on the same server. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cgpool.h"
#include "cgsim.h"
#include "log.h"
#include "manager.h"
#include "pool.h"
#include "util.h"
#include "varlink.h"

#define DEADLINE_US (180 * 1000 * 1000) /* generous: 6,000 slots under ASan or valgrind */
#define MANY 6000 /* slots whose List is over 1 MiB (some 200 bytes each; 5,000 fit) */

struct env {
	struct cgsim *sim;
	struct cg *cg;
	struct conf *conf;
	struct pool *pool;
	struct ev_loop *loop;
	struct vl_server *srv;
	struct manager *mgr;
	struct env *next; /* in live until env_free */
	char dir[PATH_MAX], sock[PATH_MAX];
};

/* the envs made and not freed: a failed assertion leaves the test before its
 * env_free, and the teardown removes their state dirs */
static struct env *live;

static void pump(struct env *e, int ms)
{
	int64_t end = now_mono_us() + ms * 1000;

	while (now_mono_us() < end) {
		ev_run(e->loop, EVRUN_NOWAIT);
		usleep(100);
	}
}

/* a pool of warm slots on a sim with those options, and the manager on a
 * real socket */
static struct env *env_new_sim(unsigned warm, const struct cgsim_opts *o)
{
	static const struct vl_server_info info = { "cgpool", "test_list", "0", "" };
	struct env *e = calloc(1, sizeof(*e));
	const struct conf *const *confp;
	const char *tmp;
	char err[256];
	int fd;

	assert_non_null(e);
	e->sim = cgsim_new(o);
	e->conf = conf_new_defaults();
	e->loop = ev_loop_new(EVFLAG_AUTO);
	tmp = getenv("TMPDIR");
	assert_true(snprintf(e->dir, sizeof(e->dir), "%s/cgpool-test-list-XXXXXX", tmp && *tmp ? tmp : "/tmp") <
		    (int)sizeof(e->dir));
	assert_true(e->sim && e->conf && e->loop && mkdtemp(e->dir));
	e->next = live;
	live = e;
	free(e->conf->daemon.state_dir);
	e->conf->daemon.state_dir = strdup(e->dir);
	e->conf->pool.warm = warm;
	e->conf->pool.max_slots = warm + 100;
	assert_int_equal(cg_open_fs(cgsim_ops(e->sim), e->sim, cgsim_mountinfo(e->sim), cgsim_proc_self_cgroup(e->sim),
				    "auto", CG_CTRL_MEMORY | CG_CTRL_PIDS, &e->cg, err, sizeof(err)),
			 0);
	assert_int_equal(pool_new(e->loop, e->cg, e->conf, &e->pool), 0);
	assert_true(snprintf(e->sock, sizeof(e->sock), "%s/cgpool.sock", e->dir) < (int)sizeof(e->sock));
	assert_int_equal(vl_listen(e->sock, 0600, (gid_t)-1, &fd), 0);
	assert_int_equal(vl_server_new(e->loop, fd, &info, &e->srv), 0);
	confp = (const struct conf *const *)&e->conf;
	assert_int_equal(manager_new(e->srv, e->pool, confp, NULL, &e->mgr), 0);
	return e;
}

static struct env *env_new(unsigned warm)
{
	struct cgsim_opts o = cgsim_opts_default(CGSIM_V2);

	o.watch = false; /* thousands of slots: no inotify watch each */
	return env_new_sim(warm, &o);
}

/* the state dir and what the pool and the server made in it (the socket,
 * state.json and the journals); -errno of the rmdir */
static int rm_state_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	return rmdir(dir) == 0 || errno == ENOENT ? 0 : -errno;
}

static void env_unlink(struct env *e)
{
	struct env **pp = &live;

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
}

static void env_free(struct env *e)
{
	char dir[sizeof(e->dir)];
	int r;

	manager_free(e->mgr); /* before the server: it answers the calls still waiting */
	vl_server_free(e->srv);
	pool_free(e->pool);
	cg_close(e->cg);
	ev_loop_destroy(e->loop);
	cgsim_free(e->sim);
	conf_free(e->conf);
	env_unlink(e);
	strcpy(dir, e->dir);
	free(e);
	r = rm_state_dir(dir);
	if (r < 0)
		fail_msg("state dir %s not removed: %s", dir, strerror(-r));
}

/* after each test: the temp dirs of the envs a failure left behind, the
 * sim's and the state dir (their pools and servers are not freed: a client
 * thread may still use them) */
static int teardown(void **state)
{
	int r, rc = 0;

	while (live) {
		struct env *e = live;

		live = e->next;
		cgsim_free(e->sim);
		r = rm_state_dir(e->dir);
		if (r < 0) {
			fprintf(stderr, "state dir %s not removed: %s\n", e->dir, strerror(-r));
			rc = -1;
		}
	}
	return rc;
}

/* ---- List through the library, in a thread */

struct job {
	const char *sock;
	bool more;
	int rc, replies, slots, bad;
	unsigned last_id; /* ids come in ascending order */
	char *reply, *err;
	atomic_bool done;
};

static int on_reply(const char *text, void *ud)
{
	struct job *j = ud;
	json_t *r = json_loads(text, 0, NULL), *arr = json_object_get(r, "slots"), *s;
	size_t i;

	j->replies++;
	if (!json_is_array(arr) || json_array_size(arr) > 1)
		j->bad++;
	json_array_foreach(arr, i, s) {
		unsigned id = (unsigned)strtoul(json_string_value(json_object_get(s, "name")) + strlen(SLOT_PREFIX), NULL, 10);

		if (j->slots++ && id <= j->last_id)
			j->bad++;
		j->last_id = id;
	}
	json_decref(r);
	return 0;
}

static void *job_main(void *p)
{
	struct job *j = p;
	struct cgpool *c = NULL;

	j->rc = cgpool_connect(j->sock, &c);
	if (j->rc == 0 && j->more)
		j->rc = cgpool_call_more(c, "io.cgpool.Manager.List", NULL, on_reply, j);
	else if (j->rc == 0)
		j->rc = cgpool_call(c, "io.cgpool.Manager.List", NULL, &j->reply);
	if (j->rc == -EREMOTEIO)
		j->err = strdup(cgpool_last_error(c, NULL, NULL));
	cgpool_close(c);
	atomic_store(&j->done, true);
	return NULL;
}

static void run_job(struct env *e, struct job *j, bool more)
{
	int64_t end = now_mono_us() + DEADLINE_US;
	pthread_t th;

	memset(j, 0, sizeof(*j));
	j->sock = e->sock;
	j->more = more;
	assert_int_equal(pthread_create(&th, NULL, job_main, j), 0);
	while (!atomic_load(&j->done) && now_mono_us() < end) {
		ev_run(e->loop, EVRUN_NOWAIT);
		usleep(100);
	}
	assert_true(atomic_load(&j->done));
	pthread_join(th, NULL);
}

/* over 1 MiB: ExpectedMore without "more" (the connection stays), one slot
 * per reply with it */
static void test_list_many(void **state)
{
	struct env *e = env_new(MANY);
	struct job j;

	run_job(e, &j, false);
	assert_int_equal(j.rc, -EREMOTEIO);
	assert_string_equal(j.err, VL_ERR_EXPECTED_MORE);
	free(j.err);
	run_job(e, &j, true);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.replies, MANY);
	assert_int_equal(j.slots, MANY);
	assert_int_equal(j.bad, 0);
	env_free(e);
}

/* a small pool: all slots in one reply without "more"; an empty one streams
 * a single empty reply */
static void test_list_small(void **state)
{
	struct env *e = env_new(3);
	struct job j;
	json_t *r;

	run_job(e, &j, false);
	assert_int_equal(j.rc, 0);
	r = json_loads(j.reply, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(r, "slots")), 3);
	json_decref(r);
	free(j.reply);
	run_job(e, &j, true);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.replies, 3);
	assert_int_equal(j.bad, 0);
	env_free(e);
	e = env_new(0);
	run_job(e, &j, true);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.replies, 1);
	assert_int_equal(j.slots, 0);
	env_free(e);
}

/* ---- a raw client that reads when the test says so */

static int raw_connect(struct env *e)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, e->sock);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* the next message, parsed, pumping the loop while waiting */
static json_t *raw_next(struct env *e, int fd, char *buf, size_t *len, size_t size)
{
	int64_t end = now_mono_us() + DEADLINE_US;

	while (now_mono_us() < end) {
		char *nul = memchr(buf, '\0', *len);
		ssize_t n;

		if (nul) {
			json_t *v = json_loads(buf, 0, NULL);
			*len -= (size_t)(nul - buf) + 1;
			memmove(buf, nul + 1, *len);
			return v;
		}
		n = recv(fd, buf + *len, size - *len, MSG_DONTWAIT);
		if (n > 0)
			*len += (size_t)n;
		ev_run(e->loop, EVRUN_NOWAIT);
	}
	fail_msg("no reply");
	return NULL;
}

/* Every slot goes while the stream is held up by a client that does not
 * read, and new ones come with the freed ids, below the cursor: the stream
 * goes on in id order without them, and ends with a final reply. */
static void test_list_cursor(void **state)
{
	static char buf[1 << 20];
	static const char req[] = "{\"method\":\"io.cgpool.Manager.List\",\"more\":true}";
	struct env *e = env_new(400);
	int fd = raw_connect(e), seen = 0;
	unsigned last = 0, first_new;
	size_t len = 0;
	json_t *r;

	assert_int_equal(send(fd, req, sizeof(req), 0), (ssize_t)sizeof(req));
	pump(e, 50); /* the socket and the queue fill up */
	e->conf->pool.warm = 0;
	e->conf->pool.idle_timeout_ms = 0;
	e->conf->retire.rate = 10000;
	assert_int_equal(pool_shrink(e->pool, 100000), 400);
	assert_null(pool_slot_from(e->pool, 0));
	e->conf->pool.warm = 5;
	pool_set_conf(e->pool, e->conf);
	first_new = pool_slot_from(e->pool, 0)->id;
	assert_int_equal(first_new, 0); /* freed ids are used again, the lowest first */
	do {
		json_t *arr, *s;
		size_t i;

		r = raw_next(e, fd, buf, &len, sizeof(buf));
		arr = json_object_get(json_object_get(r, "parameters"), "slots");
		assert_true(json_is_array(arr));
		json_array_foreach(arr, i, s) {
			unsigned id = (unsigned)strtoul(json_string_value(json_object_get(s, "name")) + 5, NULL, 10);
			assert_true(seen++ == 0 || id > last);
			last = id;
		}
		if (!json_is_true(json_object_get(r, "continues")))
			break;
		json_decref(r);
	} while (1);
	json_decref(r);
	assert_true(seen > 5 && seen < 400); /* what was queued before the removal */
	close(fd);
	env_free(e);
}

/* one run of key "job" that charged 4 MiB, then Status of the key: its
 * recent run as the reply shows it */
static json_t *status_run(bool peak_reset)
{
	static char buf[1 << 16];
	static const char req[] = "{\"method\":\"io.cgpool.Manager.Status\",\"parameters\":{\"key\":\"job\"}}";
	struct cgsim_opts o = cgsim_opts_default(CGSIM_V2);
	struct env *e;
	struct slot *s = NULL;
	int64_t end = now_mono_us() + DEADLINE_US;
	char path[PATH_MAX + 64];
	size_t len = 0;
	pid_t pid, bad;
	json_t *r, *run;
	int fd;

	o.memory_peak = o.peak_reset = peak_reset; /* false: v2 before 5.19 */
	e = env_new_sim(1, &o);
	pid = cgsim_spawn(e->sim, "/");
	assert_true(pid > 0);
	assert_int_equal(pool_attach(e->pool, "job", NULL, &pid, 1, &s, &bad), 0);
	assert_non_null(s);
	snprintf(path, sizeof(path), "%s/%s/run", cg_get_info(e->cg)->root, s->name);
	assert_int_equal(cgsim_charge(e->sim, path, 0, 4 << 20), 0);
	assert_int_equal(cgsim_exit(e->sim, pid), 0); /* the run's end samples it */
	while (s->state != SLOT_IDLE && now_mono_us() < end)
		pump(e, 10);
	assert_int_equal(s->state, SLOT_IDLE);
	fd = raw_connect(e);
	assert_int_equal(send(fd, req, sizeof(req), 0), (ssize_t)sizeof(req));
	r = raw_next(e, fd, buf, &len, sizeof(buf));
	close(fd);
	run = json_incref(json_array_get(json_object_get(json_object_get(r, "parameters"), "recent_runs"), 0));
	json_decref(r);
	env_free(e);
	assert_non_null(run);
	return run;
}

/* memory_peak_sampled, next to memory_peak: true where the peak was
 * sampled, false where it is the kernel's own for the run */
static void test_status_peak_sampled(void **state)
{
	json_t *run = status_run(false);

	assert_true(json_is_true(json_object_get(run, "memory_peak_sampled")));
	assert_int_equal(json_integer_value(json_object_get(run, "memory_peak")), 4 << 20);
	json_decref(run);
	run = status_run(true);
	assert_true(json_is_false(json_object_get(run, "memory_peak_sampled")));
	assert_int_equal(json_integer_value(json_object_get(run, "memory_peak")), 4 << 20);
	json_decref(run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_list_many, teardown),
		cmocka_unit_test_teardown(test_list_small, teardown),
		cmocka_unit_test_teardown(test_list_cursor, teardown),
		cmocka_unit_test_teardown(test_status_peak_sampled, teardown),
	};

	log_init("test_list");
	log_set_level(LOG_CRIT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
