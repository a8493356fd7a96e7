/* unit tests: job command lines (conf_argv.c) and starting a job's process
 * (job_spawn.c): real processes, and a real cgroup v2 directory where there is
 * one to make below our own */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf_argv.h"
#include "job_log.h"
#include "job_spawn.h"

/* ---- argv */

static void expect_words(const char *line, const char *const *want)
{
	char **w = NULL;
	const char *why = NULL;
	int n = argv_split(line, &w, &why), i;

	if (n < 0)
		fail_msg("split \"%s\": %s", line, why);
	for (i = 0; want[i]; i++) {
		assert_non_null(w[i]);
		assert_string_equal(w[i], want[i]);
	}
	assert_int_equal(n, i);
	assert_null(w[i]);
	argv_free(w);
}

static void expect_refused(const char *line, const char *why_part)
{
	char **w = NULL;
	const char *why = NULL;

	assert_int_equal(argv_split(line, &w, &why), -EINVAL);
	assert_non_null(why);
	assert_non_null(strstr(why, why_part));
	assert_null(w);
}

static void test_split(void **state)
{
	(void)state;
	expect_words("/usr/bin/my-server --port 8080", (const char *const[]){ "/usr/bin/my-server", "--port", "8080", NULL });
	expect_words("  a\t b \n c  ", (const char *const[]){ "a", "b", "c", NULL });
	expect_words("sh -c 'echo \"$HOME\" > /tmp/x'", (const char *const[]){ "sh", "-c", "echo \"$HOME\" > /tmp/x", NULL });
	expect_words("echo \"a \\\"b\\\" \\$c \\d\"", (const char *const[]){ "echo", "a \"b\" $c \\d", NULL });
	expect_words("a\\ b c\\\\d", (const char *const[]){ "a b", "c\\d", NULL });
	expect_words("x '' \"\" y", (const char *const[]){ "x", "", "", "y", NULL });
	expect_words("pre'quoted'\"joined\"post", (const char *const[]){ "prequotedjoinedpost", NULL });
	expect_words("one \\\ntwo", (const char *const[]){ "one", "two", NULL });
	expect_words("$PATH ~ *", (const char *const[]){ "$PATH", "~", "*", NULL }); /* nothing expanded */
	expect_refused("echo 'open", "unterminated single quote");
	expect_refused("echo \"open", "unterminated double quote");
	expect_refused("echo \\", "backslash at the end");
	expect_refused("   ", "no command");
	expect_refused("", "no command");
}

/* name in $TMPDIR (/tmp when unset) */
static void tmp_path(char *buf, size_t size, const char *name)
{
	const char *t = getenv("TMPDIR");

	assert_true(snprintf(buf, size, "%s/%s", t && *t ? t : "/tmp", name) < (int)size);
}

static void test_find_program(void **state)
{
	char buf[PATH_MAX];

	(void)state;
	assert_int_equal(argv_find_program("sh", "/nonexistent:/bin:/usr/bin", buf, sizeof(buf)), 0);
	assert_true(strcmp(buf, "/bin/sh") == 0 || strcmp(buf, "/usr/bin/sh") == 0);
	assert_int_equal(argv_find_program("/bin/sh", NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/bin/sh");
	assert_int_equal(argv_find_program("no-such-program-here", "/bin:/usr/bin", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(argv_find_program("/no/such/program", NULL, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(argv_find_program("bin/sh", NULL, buf, sizeof(buf)), -EINVAL);
	char plain[PATH_MAX];
	tmp_path(plain, sizeof(plain), "cgpool-plain-XXXXXX");
	int fd = mkstemp(plain);
	assert_true(fd >= 0);
	close(fd); /* mode 0600: no execute bit for anybody */
	assert_int_equal(argv_find_program(plain, NULL, buf, sizeof(buf)), -EACCES);
	unlink(plain);
	assert_int_equal(argv_find_program("/bin", NULL, buf, sizeof(buf)), -EACCES);      /* a directory */
}

/* ---- spawn */

struct child {
	pid_t pid;
	int pidfd, errfd, out; /* out: the read end of its stdout */
};

static char *const default_env[] = { "PATH=/usr/bin:/bin", "CGPOOL_TEST=yes", NULL };

/* start sh -c SCRIPT with stdout to a pipe; 0 or -errno from spawn_start */
static int start_sh(const char *script, struct spawn *sp, struct child *c)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	int p[2], r;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	sp->path = "/bin/sh";
	sp->argv = argv;
	if (!sp->envp)
		sp->envp = default_env;
	sp->fds[0] = -1;
	sp->fds[1] = p[1];
	sp->fds[2] = -1;
	r = spawn_start(sp, &c->pid, &c->pidfd, &c->errfd);
	close(p[1]);
	c->out = p[0];
	if (r < 0)
		close(p[0]);
	return r;
}

/* everything the child printed, and its exit status */
static int finish(struct child *c, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int status;

	while (got + 1 < len && (n = read(c->out, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(c->out);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(c->errfd);
	return status;
}

static struct spawn base_spawn(void)
{
	struct spawn sp;

	memset(&sp, 0, sizeof(sp));
	sp.cgroup_fd = -1;
	sp.keep[0] = sp.keep[1] = -1;
	return sp;
}

static void test_spawn_runs(void **state)
{
	struct spawn sp = base_spawn();
	struct child c;
	char out[512];
	int st;

	(void)state;
	sp.cwd = "/tmp";
	assert_int_equal(start_sh("echo \"$CGPOOL_TEST $(pwd) $$\"; exit 3", &sp, &c), 0);
	assert_int_equal(spawn_outcome(c.errfd, NULL), 0); /* end of file: execve happened */
	st = finish(&c, out, sizeof(out));
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 3);
	char want[64];
	snprintf(want, sizeof(want), "yes /tmp %d\n", (int)c.pid);
	assert_string_equal(out, want);
}

static void test_spawn_exec_fails(void **state)
{
	struct spawn sp = base_spawn();
	char *argv[] = { "nothing", NULL };
	enum spawn_stage stage = SPAWN_OK;
	pid_t pid;
	int pidfd, errfd, status;

	(void)state;
	sp.path = "/no/such/program";
	sp.argv = argv;
	sp.envp = default_env;
	sp.fds[0] = sp.fds[1] = sp.fds[2] = -1;
	assert_int_equal(spawn_start(&sp, &pid, &pidfd, &errfd), 0);
	assert_int_equal(spawn_outcome(errfd, &stage), -ENOENT);
	assert_int_equal(stage, SPAWN_EXEC);
	assert_string_equal(spawn_stage_name(stage), "execve");
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 127);
	close(errfd);
	if (pidfd >= 0)
		close(pidfd);

	sp = base_spawn();
	struct child c;
	sp.cwd = "/no/such/dir";
	assert_int_equal(start_sh("echo ran", &sp, &c), 0);
	assert_int_equal(spawn_outcome(c.errfd, &stage), -ENOENT);
	assert_int_equal(stage, SPAWN_CHDIR);
	char out[64];
	finish(&c, out, sizeof(out));
	assert_string_equal(out, ""); /* the program never ran */
}

/* place(): the child must not have run anything of its own yet */
struct placement {
	char marker[PATH_MAX];
	int calls;
	int fail;
	pid_t seen;
};

static int place_marker(pid_t pid, void *ud)
{
	struct placement *pl = ud;
	struct stat st;
	int fd;

	pl->calls++;
	pl->seen = pid;
	usleep(50 * 1000); /* a child that did not wait would print first */
	if (stat(pl->marker, &st) == 0)
		return -EEXIST; /* it ran already */
	if (pl->fail)
		return -EIO;
	fd = open(pl->marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static void test_spawn_waits_for_placement(void **state)
{
	struct placement pl = { 0 };
	struct spawn sp = base_spawn();
	struct child c;
	char out[PATH_MAX + 64], script[PATH_MAX + 64], name[64];

	(void)state;
	snprintf(name, sizeof(name), "cgpool-spawn-%d", (int)getpid());
	tmp_path(pl.marker, sizeof(pl.marker), name);
	unlink(pl.marker);
	snprintf(script, sizeof(script), "test -e %s && echo placed-first || echo ran-early", pl.marker);
	sp.place = place_marker;
	sp.ud = &pl;
	assert_int_equal(start_sh(script, &sp, &c), 0);
	assert_int_equal(pl.calls, 1);
	assert_int_equal(pl.seen, c.pid);
	assert_int_equal(spawn_outcome(c.errfd, NULL), 0);
	finish(&c, out, sizeof(out));
	assert_string_equal(out, "placed-first\n");
	unlink(pl.marker);

	/* placement fails: no child is left, and it never ran */
	pl.fail = 1;
	pl.calls = 0;
	snprintf(script, sizeof(script), "echo ran > %s.ran", pl.marker);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	char *argv[] = { "sh", "-c", script, NULL };
	sp.path = "/bin/sh";
	sp.argv = argv;
	sp.fds[1] = p[1];
	pid_t pid = 0;
	int pidfd = -1, errfd = -1;
	assert_int_equal(spawn_start(&sp, &pid, &pidfd, &errfd), -EIO);
	assert_int_equal(pl.calls, 1);
	assert_int_equal(kill(pl.seen, 0), -1); /* reaped */
	char ran[PATH_MAX + 8];
	snprintf(ran, sizeof(ran), "%s.ran", pl.marker);
	assert_int_equal(access(ran, F_OK), -1);
	close(p[0]);
	close(p[1]);
	unlink(pl.marker);
}

static void test_spawn_ids(void **state)
{
	struct spawn sp = base_spawn();
	struct child c;
	gid_t groups[] = { 65534, 100 };
	char out[256];

	(void)state;
	if (geteuid() != 0)
		skip();
	sp.set_ids = true;
	sp.uid = 65534;
	sp.gid = 65534;
	sp.groups = groups;
	sp.ngroups = 2;
	assert_int_equal(start_sh("echo $(id -u) $(id -g) $(id -G)", &sp, &c), 0);
	assert_int_equal(spawn_outcome(c.errfd, NULL), 0);
	finish(&c, out, sizeof(out));
	assert_string_equal(out, "65534 65534 65534 100\n");
}

/* A real cgroup2 directory below our own: the child's /proc/self/cgroup
 * names it from its first instruction on. */
static int own_v2_dir(char *buf, size_t len)
{
	char line[PATH_MAX], mnt[PATH_MAX] = "";
	FILE *f = fopen("/proc/self/mounts", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char dev[64], dir[PATH_MAX], type[32];
		if (sscanf(line, "%63s %4095s %31s", dev, dir, type) == 3 && strcmp(type, "cgroup2") == 0) {
			snprintf(mnt, sizeof(mnt), "%s", dir);
			break;
		}
	}
	fclose(f);
	f = fopen("/proc/self/cgroup", "re");
	if (!f || !*mnt) {
		if (f)
			fclose(f);
		return -ENOENT;
	}
	int r = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			int n = snprintf(buf, len, "%s%s/cgpool-spawn-%d", mnt, strcmp(line + 3, "/") ? line + 3 : "",
					 (int)getpid());
			r = n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
		}
	}
	fclose(f);
	return r;
}

static void test_spawn_into_cgroup(void **state)
{
	char dir[PATH_MAX], out[PATH_MAX + 32], want[PATH_MAX + 32];
	struct spawn sp = base_spawn();
	struct child c;
	int r;

	(void)state;
	if (own_v2_dir(dir, sizeof(dir)) < 0 || mkdir(dir, 0755) < 0)
		skip(); /* no cgroup2 hierarchy we may write below */
	sp.cgroup_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(sp.cgroup_fd >= 0);
	r = start_sh("cat /proc/self/cgroup", &sp, &c);
	close(sp.cgroup_fd);
	if (r == -ENOSYS || r == -E2BIG) {
		rmdir(dir);
		skip(); /* no clone3 / CLONE_INTO_CGROUP on this kernel */
	}
	assert_int_equal(r, 0);
	assert_int_equal(spawn_outcome(c.errfd, NULL), 0);
	finish(&c, out, sizeof(out));
	/* the line for the v2 hierarchy ends in our directory */
	snprintf(want, sizeof(want), "%s\n", strstr(dir, "/cgpool-spawn-"));
	char *v2 = strstr(out, "0::");
	assert_non_null(v2);
	v2[strcspn(v2, "\n") + 1] = '\0';
	assert_non_null(strstr(v2, want));
	assert_true(c.pidfd >= 0);
	assert_int_equal(rmdir(dir), 0);
}

/* ---- joblog: a job's output, a log line per line */

static int closed_calls;
static void on_closed(void *ud)
{
	(void)ud;
	closed_calls++;
}

static void test_joblog_lines(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	char cap[PATH_MAX], got[16384], longline[5000];
	int p[2], capfd, saved = dup(STDERR_FILENO);
	struct joblog *l;
	ssize_t n;

	(void)state;
	tmp_path(cap, sizeof(cap), "cgpool-joblog-XXXXXX");
	capfd = mkstemp(cap);
	assert_true(capfd >= 0 && saved >= 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(joblog_new(loop, p[0], "web", 7, "stdout", on_closed, NULL, &l), 0);
	memset(longline, 'x', sizeof(longline));
	dup2(capfd, STDERR_FILENO); /* the daemon's stderr: no journal in tests */
	assert_int_equal(write(p[1], "one\ntw", 6), 6);
	ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(write(p[1], "o\n", 2), 2);
	assert_int_equal(write(p[1], longline, sizeof(longline)), (ssize_t)sizeof(longline));
	assert_int_equal(write(p[1], "\nlast without newline", 21), 21);
	close(p[1]);
	for (int i = 0; i < 50 && !closed_calls; i++)
		ev_run(loop, EVRUN_NOWAIT);
	dup2(saved, STDERR_FILENO);
	close(saved);
	assert_int_equal(closed_calls, 1);
	n = pread(capfd, got, sizeof(got) - 1, 0);
	assert_true(n > 0);
	got[n] = '\0';
	/* whole lines; the 5000-byte one cut at JOBLOG_LINE_MAX; the last flushed at end of file */
	char want[16384];
	snprintf(want, sizeof(want), "web[7]: one\nweb[7]: two\nweb[7]: %.*s\nweb[7]: %.*s\nweb[7]: last without newline\n",
		 JOBLOG_LINE_MAX, longline, (int)sizeof(longline) - JOBLOG_LINE_MAX, longline);
	assert_string_equal(got, want);
	close(capfd);
	unlink(cap);
	ev_loop_destroy(loop);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_find_program),
		cmocka_unit_test(test_spawn_runs),
		cmocka_unit_test(test_spawn_exec_fails),
		cmocka_unit_test(test_spawn_waits_for_placement),
		cmocka_unit_test(test_spawn_ids),
		cmocka_unit_test(test_spawn_into_cgroup),
		cmocka_unit_test(test_joblog_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
