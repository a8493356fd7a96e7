/* test_conf.c - the config loader: defaults, every key, every error with its
 * exact message, conf.d, conf_print round trips, class matching, and the
 * files in conf/ and tests/conf/bad/.
 *
 * Golden files: tests/conf/bad/NAME.conf is loaded as "NAME.conf" from inside
 * tests/conf/bad/ (so FILE in the messages is "NAME.conf"), and
 * tests/conf/bad/NAME.expected holds the messages, one per line, exactly as
 * `cgpoold --check-config --config NAME.conf` prints them there. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "conf.h"

#ifndef TEST_SRCDIR
#define TEST_SRCDIR "."
#endif

/* ---- helpers: a temporary directory per test */

static char tmpdir[256];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup_dir(void **state)
{
	const char *t = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/cgpool-test-conf.XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmpdir/name; a static buffer per call site is enough for the tests */
static const char *tpath(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
	return buf;
}

/* cut every "tmpdir/" out of s */
static char *untmp(char *s)
{
	char prefix[300], *p;
	size_t n = (size_t)snprintf(prefix, sizeof(prefix), "%s/", tmpdir);

	while ((p = strstr(s, prefix)))
		memmove(p, p + n, strlen(p + n) + 1);
	return s;
}

static void write_file(const char *name, const char *content)
{
	char path[512];
	FILE *f = fopen(tpath(path, sizeof(path), name), "w");

	assert_non_null(f);
	assert_int_equal(fwrite(content, 1, strlen(content), f), strlen(content));
	assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int ch;

	assert_non_null(f);
	assert_non_null(m);
	while ((ch = getc(f)) != EOF)
		putc(ch, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* every message followed by "\n", as cgpoold prints them */
static char *joined(const struct conf_errors *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	for (size_t i = 0; i < e->n; i++)
		fprintf(m, "%s\n", e->msgs[i]);
	fclose(m);
	return buf;
}

/* write tmpdir/main.conf and load it */
static int load_text(const char *text, struct conf **c, struct conf_errors *e)
{
	char path[512];

	write_file("main.conf", text);
	return conf_load(tpath(path, sizeof(path), "main.conf"), true, c, e);
}

/* load text expecting errors; returns them joined, with tmpdir/ cut out */
static char *load_bad(const char *text)
{
	struct conf *c = NULL;
	struct conf_errors e = { 0 };
	char *s;

	assert_int_equal(load_text(text, &c, &e), -EINVAL);
	assert_null(c);
	s = untmp(joined(&e));
	conf_errors_free(&e);
	return s;
}

static struct conf *load_good(const char *text)
{
	struct conf *c = NULL;
	struct conf_errors e = { 0 };
	int r = load_text(text, &c, &e);

	for (size_t i = 0; i < e.n; i++)
		print_message("unexpected: %s\n", e.msgs[i]);
	assert_int_equal(r, 0);
	assert_int_equal(e.n, 0);
	assert_non_null(c);
	return c;
}

static char *printed(const struct conf *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_int_equal(conf_print(c, m), 0);
	fclose(m);
	return buf;
}

static const struct conf_res *res(const struct conf_res *r, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(r[i].name, name) == 0)
			return &r[i];
	fail_msg("no resource setting %s", name);
	return NULL;
}

/* ---- defaults */

static void test_defaults(void **state)
{
	struct conf *c = conf_new_defaults();

	assert_non_null(c);
	assert_string_equal(c->daemon.socket, "/run/cgpool/cgpool.sock");
	assert_null(c->daemon.socket_group);
	assert_string_equal(c->daemon.root, "auto");
	assert_int_equal(c->daemon.controllers, CONF_CTRL_MEMORY | CONF_CTRL_PIDS);
	assert_int_equal(c->daemon.log_level, LOG_INFO);
	assert_string_equal(c->daemon.state_dir, "/run/cgpool");
	assert_string_equal(c->daemon.user_keys, "user.%u.*");
	assert_int_equal(c->daemon.socket_gid, (gid_t)-1);
	assert_int_equal(c->daemon.max_connections, 128);
	assert_int_equal(c->daemon.max_connections_per_user, 16);
	assert_int_equal(c->daemon.connection_idle_timeout_ms, 60000);
	assert_int_equal(c->pool.max_slots_per_user, CONF_AUTO);
	assert_int_equal(c->pool.warm, 2);
	assert_int_equal(c->pool.max_slots, 1024);
	assert_int_equal(c->pool.idle_timeout_ms, 600000);
	assert_true(c->pool.recycle);
	assert_int_equal(c->retire.mode, RETIRE_AUTO);
	assert_int_equal(c->retire.drain_timeout_ms, 30000);
	assert_int_equal(c->retire.verify_timeout_ms, 60000);
	assert_int_equal(c->retire.rate, 20);
	assert_int_equal(c->nclasses + c->njobs + c->nfiles, 0);
	conf_free(c);
	conf_free(NULL);
	conf_errors_free(NULL);
}

static void test_missing_file(void **state)
{
	struct conf *c = NULL, *d = conf_new_defaults();
	struct conf_errors e = { 0 };
	char path[512], msg[600];
	char *a, *b;

	tpath(path, sizeof(path), "missing.conf");
	assert_int_equal(conf_load(path, false, &c, &e), 0);
	assert_int_equal(e.n, 0);
	assert_int_equal(c->nfiles, 0);
	a = printed(c);
	b = printed(d);
	assert_string_equal(a, b);
	free(a);
	free(b);
	conf_free(c);
	conf_free(d);

	c = NULL;
	assert_int_equal(conf_load(path, true, &c, &e), -EINVAL);
	assert_null(c);
	assert_int_equal(e.n, 1);
	snprintf(msg, sizeof(msg), "%s: No such file or directory", path);
	assert_string_equal(e.msgs[0], msg);
	conf_errors_free(&e);

	assert_int_equal(conf_load(tmpdir, true, &c, &e), -EINVAL); /* a directory */
	snprintf(msg, sizeof(msg), "%s: Is a directory", tmpdir);
	assert_string_equal(e.msgs[0], msg);
	conf_errors_free(&e);
}

/* ---- every key */

static const char full_text[] =
	"[daemon]\n"
	"socket = /tmp/cgpool-test/ctl.sock\n"
	"socket_group = root\n"
	"root = /cgpool/sub\n"
	"controllers = io cpu memory pids\n"
	"log_level = debug\n"
	"state_dir = /var/lib/cgpool\n"
	"user_keys = u-%n-%u.*\n"
	"max_connections = 64\n"
	"max_connections_per_user = 4\n"
	"connection_idle_timeout = 5s\n"
	"[pool]\n"
	"warm = 3\n"
	"max_slots = 100\n"
	"max_slots_per_user = 7\n"
	"idle_timeout = 90s\n"
	"recycle = no\n"
	"[retire]\n"
	"mode = drain\n"
	"drain_timeout = 1500ms\n"
	"verify_timeout = 2m\n"
	"rate = 50\n"
	"[class batch]\n"
	"match = slurm.*\n"
	"unprivileged = yes\n"
	"memory.high = 4G\n"
	"memory.max = max\n"
	"memory.low = 512M\n"
	"memory.swap.max = 0\n"
	"pids.max = 1000\n"
	"cpu.weight = 200\n"
	"cpu.max = 50000\n"
	"io.weight = 300\n"
	"[job web]\n"
	"exec = /usr/bin/my-server --port 8080\n"
	"restart = always\n"
	"restart_sec = 250ms\n"
	"stop_timeout = 1h\n"
	"user = root\n"
	"group = root\n"
	"start_limit = 3/1m\n"
	"stop_signal = SIGINT\n"
	"working_directory = /srv/web\n"
	"environment = PORT=8080 \"MSG=hello world\"\n"
	"environment = MODE=prod\n"
	"stdout = append:/var/log/web.log\n"
	"stderr = null\n"
	"autostart = no\n"
	"cpu.max = max 20000\n"
	"io.weight = default 50\n"
	"pids.max = max\n"
	"[job plain]\n"
	"memory.max = 1K\n";

static void test_full_globals(void **state)
{
	struct conf *c = load_good(full_text);

	assert_string_equal(c->daemon.socket, "/tmp/cgpool-test/ctl.sock");
	assert_string_equal(c->daemon.socket_group, "root");
	assert_string_equal(c->daemon.root, "/cgpool/sub");
	assert_int_equal(c->daemon.controllers, CONF_CTRL_MEMORY | CONF_CTRL_PIDS | CONF_CTRL_CPU | CONF_CTRL_IO);
	assert_int_equal(c->daemon.log_level, LOG_DEBUG);
	assert_string_equal(c->daemon.state_dir, "/var/lib/cgpool");
	assert_int_equal(c->daemon.socket_gid, 0); /* root, resolved at load */
	assert_string_equal(c->daemon.user_keys, "u-%n-%u.*");
	assert_int_equal(c->daemon.max_connections, 64);
	assert_int_equal(c->daemon.max_connections_per_user, 4);
	assert_int_equal(c->daemon.connection_idle_timeout_ms, 5000);
	assert_int_equal(c->pool.warm, 3);
	assert_int_equal(c->pool.max_slots, 100);
	assert_int_equal(c->pool.max_slots_per_user, 7);
	assert_int_equal(c->pool.idle_timeout_ms, 90000);
	assert_false(c->pool.recycle);
	assert_int_equal(c->retire.mode, RETIRE_DRAIN);
	assert_int_equal(c->retire.drain_timeout_ms, 1500);
	assert_int_equal(c->retire.verify_timeout_ms, 120000);
	assert_int_equal(c->retire.rate, 50);
	assert_int_equal(c->nfiles, 1);
	conf_free(c);
}

static void test_full_sections(void **state)
{
	struct conf *c = load_good(full_text);
	const struct conf_class *b;
	const struct conf_job *w, *p;

	assert_int_equal(c->nclasses, 1);
	b = &c->classes[0];
	assert_string_equal(b->name, "batch");
	assert_string_equal(b->match, "slurm.*");
	assert_true(b->unprivileged);
	assert_int_equal(b->nres, 8);
	assert_string_equal(res(b->res, b->nres, "memory.high")->value, "4294967296");
	assert_string_equal(res(b->res, b->nres, "memory.max")->value, "max");
	assert_string_equal(res(b->res, b->nres, "memory.low")->value, "536870912");
	assert_string_equal(res(b->res, b->nres, "memory.swap.max")->value, "0");
	assert_string_equal(res(b->res, b->nres, "pids.max")->value, "1000");
	assert_string_equal(res(b->res, b->nres, "cpu.weight")->value, "200");
	assert_string_equal(res(b->res, b->nres, "cpu.max")->value, "50000 100000");
	assert_string_equal(res(b->res, b->nres, "io.weight")->value, "default 300");
	assert_string_equal(b->res[0].name, "memory.high"); /* in file order */
	assert_int_equal(b->res[0].line, 26);
	assert_ptr_equal(b->res[0].file, c->files[0]);
	assert_int_equal(b->line, 23);
	assert_ptr_equal(b->file, c->files[0]);

	assert_int_equal(c->njobs, 2);
	w = &c->jobs[0];
	assert_string_equal(w->key, "web");
	assert_string_equal(w->exec, "/usr/bin/my-server --port 8080");
	assert_int_equal(w->restart, RESTART_ALWAYS);
	assert_int_equal(w->restart_sec_ms, 250);
	assert_int_equal(w->stop_timeout_ms, 3600000);
	assert_string_equal(w->user, "root");
	assert_string_equal(w->group, "root");
	assert_int_equal(w->start_limit.burst, 3);
	assert_int_equal(w->start_limit.interval_ms, 60000);
	assert_int_equal(w->stop_signal, SIGINT);
	assert_string_equal(w->working_directory, "/srv/web");
	assert_int_equal(w->nenvironment, 3);
	assert_string_equal(w->environment[0], "PORT=8080");
	assert_string_equal(w->environment[1], "MSG=hello world");
	assert_string_equal(w->environment[2], "MODE=prod");
	assert_null(w->environment[3]);
	assert_int_equal(w->out.kind, OUTPUT_APPEND);
	assert_string_equal(w->out.path, "/var/log/web.log");
	assert_int_equal(w->err.kind, OUTPUT_NULL);
	assert_false(w->autostart);
	assert_int_equal(w->nres, 3);
	assert_string_equal(res(w->res, w->nres, "cpu.max")->value, "max 20000");
	assert_string_equal(res(w->res, w->nres, "io.weight")->value, "default 50");
	assert_string_equal(res(w->res, w->nres, "pids.max")->value, "max");
	assert_int_equal(w->line, 34);
	assert_int_equal(w->res[0].line, 49);

	p = &c->jobs[1]; /* the defaults of a [job] */
	assert_string_equal(p->key, "plain");
	assert_null(p->exec);
	assert_null(p->user);
	assert_int_equal(p->restart, RESTART_ON_FAILURE);
	assert_int_equal(p->restart_sec_ms, 1000);
	assert_int_equal(p->stop_timeout_ms, 10000);
	assert_int_equal(p->start_limit.burst, 5);
	assert_int_equal(p->start_limit.interval_ms, 10000);
	assert_int_equal(p->stop_signal, SIGTERM);
	assert_null(p->group);
	assert_null(p->working_directory);
	assert_int_equal(p->nenvironment, 0);
	assert_int_equal(p->out.kind, OUTPUT_JOURNAL);
	assert_int_equal(p->err.kind, OUTPUT_JOURNAL);
	assert_true(p->autostart);
	assert_string_equal(p->res[0].value, "1024");
	conf_free(c);
}

/* the [job] values that no other section has: each bad one named with its line */
static void test_job_errors(void **state)
{
	char *e = load_bad("[job a]\n"
			   "exec = /bin/sh -c 'open\n"
			   "exec = bin/x\n"
			   "start_limit = 5\n"
			   "start_limit = 0/10s\n"
			   "stop_signal = STOP\n"
			   "environment = 1X=y\n"
			   "environment = NOEQUALS\n"
			   "stdout = file:relative\n"
			   "stderr = syslog\n"
			   "user = no-such-user-cgpool\n"
			   "group = no-such-group-cgpool\n"
			   "working_directory = srv\n"
			   "[job b]\n"
			   "exec =\n");

	assert_non_null(strstr(e, "main.conf:2: exec: invalid command \"/bin/sh -c 'open\" (unterminated single quote)"));
	assert_non_null(strstr(e, "main.conf:3: exec: program \"bin/x\" is a relative path"));
	assert_non_null(strstr(e, "main.conf:4: start_limit: invalid limit \"5\""));
	assert_non_null(strstr(e, "main.conf:5: start_limit: invalid limit \"0/10s\""));
	assert_non_null(strstr(e, "main.conf:6: stop_signal: invalid signal \"STOP\""));
	assert_non_null(strstr(e, "main.conf:7: environment: \"1X=y\" is not NAME=VALUE"));
	assert_non_null(strstr(e, "main.conf:8: environment: \"NOEQUALS\" is not NAME=VALUE"));
	assert_non_null(strstr(e, "main.conf:9: stdout: invalid output \"file:relative\""));
	assert_non_null(strstr(e, "main.conf:10: stderr: invalid output \"syslog\""));
	assert_non_null(strstr(e, "main.conf:11: user: no such user \"no-such-user-cgpool\""));
	assert_non_null(strstr(e, "main.conf:12: group: no such group \"no-such-group-cgpool\""));
	assert_non_null(strstr(e, "main.conf:13: working_directory: invalid path \"srv\""));
	assert_non_null(strstr(e, "main.conf:15: exec: missing value"));
	free(e);

	struct conf *c = load_good("[job x]\nexec = prog\nstart_limit = off\nstop_signal = HUP\n");
	assert_int_equal(c->jobs[0].start_limit.burst, 0);
	assert_int_equal(c->jobs[0].stop_signal, SIGHUP);
	conf_free(c);
}

/* empty socket_group and user mean "not set" and override earlier settings */
static void test_empty_unsets(void **state)
{
	struct conf *c = load_good("[daemon]\nsocket_group = root\nsocket_group =\n"
				   "[job a]\nuser =\n");

	assert_null(c->daemon.socket_group);
	assert_null(c->jobs[0].user);
	conf_free(c);
}

/* ---- lexing: comments, blanks, BOM, CRLF, long lines */

static void test_lexing(void **state)
{
	char *text = NULL, *msgs;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct conf *c;

	fputs("\xEF\xBB\xBF[daemon]\r\n", m);
	fputs("  log_level = debug   # a comment\r\n", m);
	fputs("\tstate_dir = /var/lib/x;y ; a comment\n", m);
	fputs("; comment\n# comment\n   # indented comment\n\n", m);
	fputs("[ job   web ]  ; comment after a header\n", m);
	fputs("exec = /bin/sh -c 'a;b' # the rest\n", m);
	fputs("[job long]\nexec = /bin/echo", m);
	for (int i = 0; i < 60; i++)
		fputs(" word", m); /* 300 bytes: longer than inih's 200-byte line buffer */
	fputs("\n[job last]\nexec=/bin/true", m); /* no newline at the end */
	fclose(m);
	c = load_good(text);
	free(text);
	assert_int_equal(c->daemon.log_level, LOG_DEBUG);
	assert_string_equal(c->daemon.state_dir, "/var/lib/x;y");
	assert_string_equal(c->jobs[0].key, "web");
	assert_string_equal(c->jobs[0].exec, "/bin/sh -c 'a;b'");
	assert_int_equal(strlen(c->jobs[1].exec), strlen("/bin/echo") + 300);
	assert_string_equal(c->jobs[2].exec, "/bin/true");
	assert_int_equal(c->jobs[2].line, 12);
	conf_free(c);

	/* a comment right after "=" leaves the value empty */
	msgs = load_bad("[job a]\nexec =# nothing\nexec=;nothing\n");
	assert_string_equal(msgs, "main.conf:2: exec: missing value\n"
				  "main.conf:3: exec: missing value\n");
	free(msgs);
	/* a setting that failed does not count as the first one */
	msgs = load_bad("[job a]\nuser = no-such-user-cgpool-test\nuser = root\nuser = root\n");
	assert_string_equal(msgs, "main.conf:2: user: no such user \"no-such-user-cgpool-test\"\n"
				  "main.conf:4: duplicate key \"user\" in [job a], first at main.conf:3\n");
	free(msgs);
}

static void test_long_and_nul_lines(void **state)
{
	static const char tail[] = "\nexec = /bin/true\nmemory.max = 1\0G\n";
	struct conf *c = NULL;
	struct conf_errors e = { 0 };
	char path[512], *msgs;
	FILE *f = fopen(tpath(path, sizeof(path), "main.conf"), "w");

	assert_non_null(f);
	fputs("[job a]\nexec = ", f);
	for (int i = 0; i < 5000; i++)
		putc('x', f);
	fwrite(tail, 1, sizeof(tail) - 1, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(conf_load(path, true, &c, &e), -EINVAL);
	msgs = untmp(joined(&e));
	conf_errors_free(&e);
	assert_string_equal(msgs, "main.conf:2: line is longer than 4096 bytes\n"
				  "main.conf:4: line contains a NUL byte\n");
	free(msgs);
}

/* ---- errors */

static void test_multiple_errors(void **state)
{
	struct conf *c = NULL;
	struct conf_errors e = { 0 };
	char *msgs;

	/* errors already in e stay, the new ones come after them */
	e.msgs = malloc(sizeof(*e.msgs));
	e.msgs[0] = strdup("earlier");
	e.n = 1;
	assert_int_equal(load_text("[pool]\n"
				   "warm = many\n"
				   "max_slots = 10\n"
				   "bogus\n"
				   "recycle = yes\n"
				   "[retire]\n"
				   "mode = later\n"
				   "rate = 5\n"
				   "[jobs x]\n"
				   "exec = skipped\n"
				   "[job y]\n"
				   "memory.max = 1Q\n",
				   &c, &e),
			 -EINVAL);
	assert_null(c);
	assert_int_equal(e.n, 6);
	assert_string_equal(e.msgs[0], "earlier");
	msgs = untmp(joined(&e));
	assert_string_equal(msgs, "earlier\n"
				  "main.conf:2: warm: invalid number \"many\" (use a number from 0 to 65535)\n"
				  "main.conf:4: expected \"key = value\" or \"[section]\", found \"bogus\"\n"
				  "main.conf:7: mode: invalid mode \"later\" (use auto, reparent, drain or keep)\n"
				  "main.conf:9: unknown section [jobs x] (use [daemon], [pool], [retire], [class NAME] or [job KEY])\n"
				  "main.conf:12: memory.max: invalid size \"1Q\" (use a number with K, M, G or T, or max)\n");
	free(msgs);
	conf_errors_free(&e);

	/* NULL errs: the errors are counted out but the result stays */
	assert_int_equal(load_text("[pool]\nwarm = x\n", &c, NULL), -EINVAL);
	assert_null(c);
}

/* the keys of the rules for unprivileged callers */
static void test_auth_keys(void **state)
{
	struct conf *c = NULL;
	struct conf_errors e = { 0 };
	char *msgs;

	assert_int_equal(load_text("[daemon]\nuser_keys = u.%x\nmax_connections = 0\n"
				   "connection_idle_timeout = soon\n[pool]\nmax_slots_per_user = many\n"
				   "[class c]\nunprivileged = maybe\n", &c, &e), -EINVAL);
	msgs = untmp(joined(&e));
	assert_string_equal(msgs,
			    "main.conf:2: user_keys: invalid pattern \"u.%x\" (%u is the uid, %n the user name, %% a %)\n"
			    "main.conf:3: max_connections: invalid number \"0\" (use a number from 1 to 4096)\n"
			    "main.conf:4: connection_idle_timeout: invalid duration \"soon\" (use a number with ms, s, m or h)\n"
			    "main.conf:6: max_slots_per_user: invalid number \"many\" (use auto or a number from 0 to 65535)\n"
			    "main.conf:8: unprivileged: invalid boolean \"maybe\" (use yes or no)\n");
	free(msgs);
	conf_errors_free(&e);
	/* empty user_keys: unprivileged callers have no keys */
	c = load_good("[daemon]\nuser_keys =\n[pool]\nmax_slots_per_user = 0\n");
	assert_string_equal(c->daemon.user_keys, "");
	assert_int_equal(c->pool.max_slots_per_user, 0);
	conf_free(c);
}

static void test_too_many_errors(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct conf *c = NULL;
	struct conf_errors e = { 0 };

	fputs("[daemon]\n", m);
	for (int i = 0; i < 500; i++)
		fputs("nokey = 1\n", m);
	fclose(m);
	assert_int_equal(load_text(text, &c, &e), -EINVAL);
	free(text);
	assert_int_equal(e.n, 201);
	assert_non_null(strstr(e.msgs[200], ":202: too many errors, not reporting more"));
	conf_errors_free(&e);
}

/* every tests/conf/bad/NAME.conf gives exactly NAME.expected */
static void test_golden(void **state)
{
	char dir[1024], cwd[1024], *want, *got;
	struct dirent **list;
	int n, checked = 0;

	snprintf(dir, sizeof(dir), "%s/tests/conf/bad", TEST_SRCDIR);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	n = scandir(dir, &list, NULL, alphasort);
	assert_true(n > 0);
	assert_int_equal(chdir(dir), 0);
	for (int i = 0; i < n; i++) {
		char *name = list[i]->d_name, expected[300];
		size_t l = strlen(name);
		struct conf *c = NULL;
		struct conf_errors e = { 0 };

		if (l > 5 && strcmp(name + l - 5, ".conf") == 0) {
			snprintf(expected, sizeof(expected), "%.*s.expected", (int)(l - 5), name);
			want = slurp(expected);
			if (conf_load(name, true, &c, &e) != -EINVAL)
				fail_msg("%s: loaded without errors", name);
			got = joined(&e);
			if (strcmp(got, want) != 0)
				fail_msg("%s: got\n%s\nwant\n%s", name, got, want);
			free(want);
			free(got);
			conf_errors_free(&e);
			checked++;
		}
		free(list[i]);
	}
	free(list);
	assert_int_equal(chdir(cwd), 0);
	assert_true(checked >= 10);
}

/* ---- conf.d */

static void test_confd(void **state)
{
	struct conf *c = NULL;
	struct conf_errors e = { 0 };
	char path[512], d[512], *msgs;

	assert_int_equal(mkdir(tpath(d, sizeof(d), "conf.d"), 0755), 0);
	write_file("conf.d/20-b.conf", "[pool]\nwarm = 3\n[job b]\nexec = /bin/b\n");
	write_file("conf.d/10-a.conf", "[pool]\nwarm = 2\nmax_slots = 20\n[class c1]\nmatch = x*\n");
	write_file("conf.d/notes.txt", "not ini at all\n");
	write_file("conf.d/.hidden.conf", "not ini either\n");
	c = load_good("[pool]\nwarm = 1\nmax_slots = 10\n[job a]\n");
	assert_int_equal(c->pool.warm, 3);       /* 20-b.conf came last */
	assert_int_equal(c->pool.max_slots, 20); /* from 10-a.conf */
	assert_int_equal(c->nfiles, 3);
	assert_string_equal(c->files[0], tpath(path, sizeof(path), "main.conf"));
	assert_string_equal(c->files[1], tpath(path, sizeof(path), "conf.d/10-a.conf"));
	assert_string_equal(c->files[2], tpath(path, sizeof(path), "conf.d/20-b.conf"));
	assert_int_equal(c->nclasses, 1);
	assert_ptr_equal(c->classes[0].file, c->files[1]);
	assert_int_equal(c->njobs, 2);
	assert_string_equal(c->jobs[0].key, "a");
	assert_string_equal(c->jobs[1].key, "b");
	assert_ptr_equal(c->jobs[1].file, c->files[2]);
	conf_free(c);

	/* the main file may be missing when not required; conf.d is still read */
	assert_int_equal(conf_load(tpath(path, sizeof(path), "absent.conf"), false, &c, &e), 0);
	assert_int_equal(c->pool.warm, 3);
	assert_int_equal(c->nfiles, 2);
	conf_free(c);

	/* a [job] declared twice across files; warm and max_slots across files */
	write_file("conf.d/30-dup.conf", "[job a]\nexec = /bin/a\n[pool]\nmax_slots = 2\n");
	msgs = load_bad("[pool]\nwarm = 1\n[job a]\n");
	assert_string_equal(msgs, "conf.d/30-dup.conf:1: duplicate [job a], first at main.conf:3\n"
				  "conf.d/30-dup.conf:4: max_slots: 2 is less than warm (3)\n");
	free(msgs);
	write_file("conf.d/30-dup.conf", "[pool]\nmax_slots = 4\n");
	write_file("conf.d/40-warm.conf", "[pool]\nwarm = 5\n");
	msgs = load_bad("");
	assert_string_equal(msgs, "conf.d/40-warm.conf:2: warm: 5 is more than max_slots (4)\n");
	free(msgs);
}

/* ---- conf_print */

static void round_trip(const char *text)
{
	struct conf *a = load_good(text), *b;
	char *pa = printed(a), *pb;

	b = load_good(pa);
	pb = printed(b);
	assert_string_equal(pa, pb);
	assert_int_equal(a->daemon.controllers, b->daemon.controllers);
	assert_int_equal(a->daemon.log_level, b->daemon.log_level);
	assert_int_equal(a->pool.idle_timeout_ms, b->pool.idle_timeout_ms);
	assert_int_equal(a->retire.drain_timeout_ms, b->retire.drain_timeout_ms);
	assert_int_equal(a->nclasses, b->nclasses);
	assert_int_equal(a->njobs, b->njobs);
	for (size_t i = 0; i < a->njobs; i++) {
		assert_int_equal(a->jobs[i].nres, b->jobs[i].nres);
		for (size_t k = 0; k < a->jobs[i].nres; k++)
			assert_string_equal(a->jobs[i].res[k].value, b->jobs[i].res[k].value);
		assert_int_equal(a->jobs[i].restart_sec_ms, b->jobs[i].restart_sec_ms);
	}
	free(pa);
	free(pb);
	conf_free(a);
	conf_free(b);
}

static void test_round_trip(void **state)
{
	struct conf *d = conf_new_defaults();
	char *p = printed(d);

	round_trip(full_text);
	round_trip("");
	round_trip(p);
	free(p);
	conf_free(d);
}

static void test_print(void **state)
{
	struct conf *c = load_good("[pool]\nidle_timeout = 0\n[retire]\ndrain_timeout = 1500ms\n"
				   "[class c]\n[job j]\nexec = /bin/j\nrestart = no\nmemory.max = 1M\n");
	char *p = printed(c);

	assert_non_null(strstr(p, "[daemon]\nsocket = /run/cgpool/cgpool.sock\nsocket_group =\nroot = auto\n"
				  "controllers = memory pids\nlog_level = info\nstate_dir = /run/cgpool\n"
				  "user_keys = user.%u.*\nmax_connections = 128\nmax_connections_per_user = 16\n"
				  "connection_idle_timeout = 1m\nfavordynmods = no\n\n"));
	assert_non_null(strstr(p, "max_slots_per_user = auto\n"));
	assert_non_null(strstr(p, "idle_timeout = 0\n"));
	assert_non_null(strstr(p, "drain_timeout = 1500ms\n"));
	assert_non_null(strstr(p, "verify_timeout = 1m\n"));
	assert_non_null(strstr(p, "\n[class c]\nunprivileged = no\n\n[job j]\nexec = /bin/j\nrestart = no\n"
				  "restart_sec = 1s\nstart_limit = 5/10s\nstop_timeout = 10s\nstop_signal = TERM\n"
				  "stdout = journal\nstderr = journal\nautostart = yes\nmemory.max = 1048576\n"));
	free(p);
	conf_free(c);
}

/* ---- lookups */

static void test_class_for_key(void **state)
{
	struct conf *c = load_good("[class first]\nmatch = slurm.*\n"
				   "[class second]\nmatch = slurm.1*\n"
				   "[class byname]\n"
				   "[class web]\nmatch = web\n"
				   "[class set]\nmatch = [ab]?-*\n"
				   "[job web]\n");

	assert_string_equal(conf_class_for_key(c, "slurm.123")->name, "first"); /* first match wins */
	assert_string_equal(conf_class_for_key(c, "slurm.")->name, "first");
	assert_string_equal(conf_class_for_key(c, "web")->name, "web");
	assert_string_equal(conf_class_for_key(c, "ax-1")->name, "set");
	assert_null(conf_class_for_key(c, "webx"));
	assert_null(conf_class_for_key(c, "byname"));
	assert_null(conf_class_for_key(c, ""));
	assert_string_equal(conf_class_by_name(c, "byname")->name, "byname");
	assert_null(conf_class_by_name(c, "nope"));
	assert_string_equal(conf_job_for_key(c, "web")->key, "web");
	assert_null(conf_job_for_key(c, "first"));
	conf_free(c);
}

static void test_retire_mode(void **state)
{
	static const char *const names[] = { "auto", "reparent", "drain", "keep" };
	enum retire_mode m = RETIRE_KEEP;

	for (int i = 0; i < 4; i++) {
		assert_int_equal(conf_retire_mode_parse(names[i], &m), 0);
		assert_int_equal(m, i);
		assert_string_equal(conf_retire_mode_name(m), names[i]);
	}
	assert_int_equal(conf_retire_mode_parse("Auto", &m), -EINVAL);
	assert_int_equal(conf_retire_mode_parse(NULL, &m), -EINVAL);
	assert_int_equal(m, RETIRE_KEEP); /* untouched on error */
}

/* ---- conf_check_resources */

static bool no_swap_no_io(const char *name, void *ud)
{
	(*(int *)ud)++;
	return strcmp(name, "memory.swap.max") != 0 && strcmp(name, "io.weight") != 0;
}

static void test_check_resources(void **state)
{
	struct conf *c = load_good("[daemon]\ncontrollers = memory io\n"
				   "[class a]\nmemory.max = 1G\nmemory.swap.max = 0\n"
				   "[job b]\nio.weight = 10\nmemory.high = 2G\n");
	struct conf_errors e = { 0 };
	int calls = 0;
	char *msgs;

	e.msgs = malloc(sizeof(*e.msgs));
	e.msgs[0] = strdup("earlier");
	e.n = 1;
	assert_int_equal(conf_check_resources(c, no_swap_no_io, "cgroup v1", &calls, &e), 2);
	assert_int_equal(calls, 4);
	msgs = untmp(joined(&e));
	assert_string_equal(msgs, "earlier\n"
				  "main.conf:5: memory.swap.max: not supported on cgroup v1\n"
				  "main.conf:7: io.weight: not supported on cgroup v1\n");
	free(msgs);
	conf_errors_free(&e);
	conf_free(c);
}

/* ---- the shipped example files */

/* conf/NAME.conf as is, and with its "#key = value" examples uncommented */
static void check_example(const char *path)
{
	char *text = slurp(path), *p;
	struct conf *c = NULL;
	struct conf_errors e = { 0 };

	if (conf_load(path, true, &c, &e) != 0 || e.n)
		fail_msg("%s: %s", path, e.n ? e.msgs[0] : "error");
	conf_free(c);
	for (p = text; (p = strchr(p, '#')); p++)
		if ((p == text || p[-1] == '\n') && (p[1] == '[' || (p[1] >= 'a' && p[1] <= 'z')))
			*p = ' ';
	c = load_good(text);
	conf_free(c);
	free(text);
}

static void test_conf_dir(void **state)
{
	char dir[1024], path[1300];
	struct dirent **list;
	int n, checked = 0;

	snprintf(dir, sizeof(dir), "%s/conf", TEST_SRCDIR);
	n = scandir(dir, &list, NULL, alphasort);
	assert_true(n > 0);
	for (int i = 0; i < n; i++) {
		size_t l = strlen(list[i]->d_name);
		if (l > 5 && strcmp(list[i]->d_name + l - 5, ".conf") == 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
			check_example(path);
			checked++;
		}
		free(list[i]);
	}
	free(list);
	assert_true(checked >= 1);
}

/* the uncommented example in conf/cgpool.conf really sets something */
static void test_example_content(void **state)
{
	char path[1024], *text, *p;
	struct conf *c;

	snprintf(path, sizeof(path), "%s/conf/cgpool.conf", TEST_SRCDIR);
	text = slurp(path);
	for (p = text; (p = strchr(p, '#')); p++)
		if ((p == text || p[-1] == '\n') && (p[1] == '[' || (p[1] >= 'a' && p[1] <= 'z')))
			*p = ' ';
	c = load_good(text);
	free(text);
	assert_non_null(conf_class_for_key(c, "slurm.42"));
	assert_non_null(conf_job_for_key(c, "web"));
	assert_non_null(conf_job_for_key(c, "web")->exec);
	conf_free(c);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		T(test_job_errors),
		T(test_missing_file),
		T(test_full_globals),
		T(test_full_sections),
		T(test_empty_unsets),
		T(test_lexing),
		T(test_long_and_nul_lines),
		T(test_multiple_errors),
		T(test_too_many_errors),
		cmocka_unit_test(test_golden),
		T(test_confd),
		T(test_round_trip),
		T(test_print),
		T(test_auth_keys),
		T(test_class_for_key),
		cmocka_unit_test(test_retire_mode),
		T(test_check_resources),
		T(test_conf_dir),
		T(test_example_content),
	};

	return cmocka_run_group_tests_name("conf", tests, NULL, NULL);
}
