/* unit tests: the cgroup layer on the running kernel.
 *
 * A pool root below this process's own memory cgroup, "<own>/cgpool-test-<pid>",
 * in every hierarchy the pool uses. Skipped (77) when not root or without a
 * usable memory controller. Everything it creates is removed on every exit
 * path, deepest first. Discovery on fake layouts is test_cg_fs.c. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cg.h"
#include "util.h"

#define MiB (1024ULL * 1024)

struct tmount {
	char point[PATH_MAX];
	bool v2, memory, pids;
};

static struct {
	struct cg *cg;
	char root[PATH_MAX];     /* cgroup path of the pool root */
	struct tmount mounts[16];
	size_t nmounts;
	char created[64][PATH_MAX]; /* directories that did not exist before, outermost first */
	size_t ncreated;
	pid_t children[16];
	size_t nchildren;
	bool want_v2, want_hybrid;
	int lockfd;
} T = { .lockfd = -1 };

static bool exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

/* cgroup mounts of this process (mount root "/" only, as on these hosts) */
static void scan_mounts(void)
{
	char *buf = malloc(1 << 20), *save = NULL;

	if (!buf || file_read("/proc/self/mountinfo", buf, 1 << 20) < 0) {
		free(buf);
		return;
	}
	for (char *l = strtok_r(buf, "\n", &save); l && T.nmounts < ARRAY_SIZE(T.mounts); l = strtok_r(NULL, "\n", &save)) {
		char root[256], point[PATH_MAX], fstype[32], opts[512], path[PATH_MAX + 32], ctl[512];
		const char *dash = strstr(l, " - ");
		struct tmount *m = &T.mounts[T.nmounts];
		if (!dash || sscanf(l, "%*s %*s %*s %255s %4095s", root, point) != 2 ||
		    sscanf(dash, " - %31s %*s %511s", fstype, opts) != 2 || strcmp(root, "/") != 0)
			continue;
		memset(m, 0, sizeof(*m));
		snprintf(m->point, sizeof(m->point), "%s", point);
		if (strcmp(fstype, "cgroup2") == 0) {
			snprintf(path, sizeof(path), "%s/cgroup.controllers", point);
			m->v2 = true;
			m->memory = file_read(path, ctl, sizeof(ctl)) >= 0 && strstr(ctl, "memory");
			m->pids = m->memory && strstr(ctl, "pids");
		} else if (strcmp(fstype, "cgroup") == 0) {
			m->memory = strstr(opts, "memory") != NULL;
			m->pids = strstr(opts, ",pids") != NULL;
			if (!m->memory && !m->pids)
				continue;
		} else {
			continue;
		}
		T.nmounts++;
	}
	free(buf);
}

/* The pool root's path: below this process's memory cgroup. */
static int find_root(void)
{
	char buf[8192], *save = NULL;
	bool v1mem = false, v2 = false;

	for (size_t i = 0; i < T.nmounts; i++) {
		v1mem |= !T.mounts[i].v2 && T.mounts[i].memory;
		v2 |= T.mounts[i].v2;
	}
	if (file_read("/proc/self/cgroup", buf, sizeof(buf)) < 0)
		return -ENOENT;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *path = strchr(strchr(l, ':') ? strchr(l, ':') + 1 : l, ':');
		bool mem = v1mem ? strstr(l, ":memory:") || strstr(l, ",memory") : strncmp(l, "0::", 3) == 0;
		if (!mem || !path)
			continue;
		snprintf(T.root, sizeof(T.root), "%s/cgpool-test-%d", strcmp(path + 1, "/") ? path + 1 : "",
			 (int)getpid());
		T.want_hybrid = v1mem && v2;
		T.want_v2 = !v1mem && v2;
		return v1mem || v2 ? 0 : -ENOENT;
	}
	return -ENOENT;
}

/* remember which directories of the root's chain cg_open will create */
static void record_chain(void)
{
	for (size_t i = 0; i < T.nmounts; i++) {
		char p[PATH_MAX];
		for (const char *s = T.root + 1;; s++) {
			if (*s != '/' && *s != '\0')
				continue;
			snprintf(p, sizeof(p), "%s%.*s", T.mounts[i].point, (int)(s - T.root), T.root);
			if (!exists(p) && T.ncreated < ARRAY_SIZE(T.created))
				snprintf(T.created[T.ncreated++], PATH_MAX, "%s", p);
			if (*s == '\0')
				break;
		}
	}
}

static int rmdir_child(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[PATH_MAX * 2 + 256];

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			if (rmdir(p) < 0)
				fprintf(stderr, "cleanup: rmdir %s: %s\n", p, strerror(errno));
		}
	closedir(d);
	return 0;
}

static void cleanup(void)
{
	for (size_t i = 0; i < T.nchildren; i++) {
		kill(T.children[i], SIGKILL);
		waitpid(T.children[i], NULL, 0);
	}
	T.nchildren = 0;
	cg_close(T.cg);
	T.cg = NULL;
	for (size_t i = 0; T.root[0] && i < T.nmounts; i++) {
		char p[PATH_MAX * 2];
		snprintf(p, sizeof(p), "%s%s", T.mounts[i].point, T.root);
		rmdir_child(p);
	}
	while (T.ncreated > 0) {
		const char *p = T.created[--T.ncreated];
		if (rmdir(p) < 0 && errno != ENOENT)
			fprintf(stderr, "cleanup: rmdir %s: %s\n", p, strerror(errno));
	}
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* child side: 8 MiB to file, on disk (fsync'ed, so reclaimable) */
static int write_8m(const char *file)
{
	static char chunk[64 * 1024];
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	memset(chunk, 'x', sizeof(chunk));
	for (size_t n = 0; fd >= 0 && n < 8 * MiB; n += sizeof(chunk))
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			return 1;
	return fd >= 0 && fsync(fd) == 0 && close(fd) == 0 ? 0 : 1;
}

/* A child that waits on a pipe: a byte makes it write file (if any) and
 * exit, EOF makes it exit. */
static pid_t spawn(const char *file, int *wfd)
{
	int p[2];
	ssize_t n;
	pid_t pid;
	char c;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(T.lockfd);
		close(p[1]);
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		_exit(file && n == 1 ? write_8m(file) : 0);
	}
	close(p[0]);
	T.children[T.nchildren++] = pid;
	*wfd = p[1];
	return pid;
}

static void reap(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (size_t i = 0; i < T.nchildren; i++)
		if (T.children[i] == pid)
			T.children[i] = T.children[--T.nchildren];
}

struct seen {
	const char *want;
	int hits;
};

static void on_event(const char *name, void *ud)
{
	struct seen *s = ud;

	if (strcmp(name, s->want) == 0)
		s->hits++;
}

/* wait (bounded, 5 s) until populated == want and, where there is a
 * watch fd, an event named the slot */
static bool wait_for(const char *name, bool want)
{
	struct seen s = { name, 0 };
	int64_t deadline = now_mono_us() + 5000000;
	int fd = cg_watch_fd(T.cg);
	bool pop = !want;

	while (now_mono_us() < deadline) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		assert_int_equal(cg_slot_populated(T.cg, name, &pop), 0);
		if (pop == want && (fd < 0 || s.hits > 0))
			return true;
		if (fd < 0)
			usleep(20000);
		else if (poll(&pfd, 1, (int)((deadline - now_mono_us()) / 1000) + 1) > 0)
			assert_int_equal(cg_watch_read(T.cg, on_event, &s), 0);
	}
	return false;
}

static void test_info(void **state)
{
	const struct cg_info *in = cg_get_info(T.cg);

	assert_string_equal(cg_hierarchy_name(in->hierarchy), T.want_v2 ? "v2" : T.want_hybrid ? "hybrid" : "v1");
	assert_int_equal(in->memory_v2, T.want_v2);
	assert_int_equal(in->tracking, T.want_v2 || T.want_hybrid);
	assert_string_equal(in->root, T.root);
	assert_true(exists(in->memory_root));
	assert_non_null(strstr(in->memory_root, T.root));
	assert_true(in->kernel[0]);
	printf("# %s kernel %s, memory %s, root %s; features: reclaim %d peak %d peak_reset %d kill %d "
	       "clone_into %d dying_subsys %d\n", cg_hierarchy_name(in->hierarchy), in->kernel,
	       in->memory_v2 ? "v2" : "v1", in->memory_root, in->features.memory_reclaim, in->features.memory_peak,
	       in->features.memory_peak_reset, in->features.cgroup_kill, in->features.clone_into_cgroup,
	       in->features.dying_subsys_stat);
	/* v1 always has memory.max_usage_in_bytes; a peak that resets exists */
	assert_true(in->features.memory_peak || (in->memory_v2 && !in->features.memory_peak_reset));
}

static int count_dirs(const char *name, void *ud)
{
	(*(int *)ud)++;
	return 0;
}

static void test_slots(void **state)
{
	char path[PATH_MAX], p[PATH_MAX * 2];
	struct stat st;
	uint64_t id;
	int n = 0;

	assert_int_equal(cg_slot_create(T.cg, "slot-a"), 0);
	assert_int_equal(cg_slot_create(T.cg, "slot-a"), -EEXIST);
	assert_int_equal(cg_slot_create(T.cg, "bad/name"), -EINVAL);
	assert_int_equal(cg_slot_list(T.cg, "slot-", count_dirs, &n), 0);
	assert_int_equal(n, 1);
	n = 0;
	assert_int_equal(cg_slot_list(T.cg, "zzz", count_dirs, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(cg_slot_path(T.cg, "slot-a", path, sizeof(path)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(cg_slot_id(T.cg, "slot-a", &id), 0);
	assert_int_equal(id, (uint64_t)st.st_ino);
	/* in every hierarchy; a partly missing slot is completed by create */
	for (size_t i = 0; i < T.nmounts; i++) {
		snprintf(p, sizeof(p), "%s%s/slot-a", T.mounts[i].point, T.root);
		assert_true(exists(p));
		strcat(p, "/run"); /* the processes' cgroup, below the slot's directory */
		assert_true(exists(p));
		if (!T.mounts[i].memory) {
			assert_int_equal(rmdir(p), 0);
			assert_int_equal(cg_slot_create(T.cg, "slot-a"), 0);
			assert_true(exists(p));
		}
	}
	assert_int_equal(cg_slot_remove(T.cg, "slot-a"), 0);
	assert_false(exists(path));
	for (size_t i = 0; i < T.nmounts; i++) {
		snprintf(p, sizeof(p), "%s%s/slot-a", T.mounts[i].point, T.root);
		assert_false(exists(p));
	}
	assert_int_equal(cg_slot_remove(T.cg, "slot-a"), -ENOENT);
}

static void test_attach_watch(void **state)
{
	bool watch = cg_watch_fd(T.cg) >= 0, pop = true;
	unsigned nprocs = 0;
	pid_t pid;
	int wfd;

	assert_int_equal(cg_slot_create(T.cg, "slot-w"), 0);
	assert_int_equal(cg_slot_populated(T.cg, "slot-w", &pop), 0);
	assert_false(pop);
	if (watch)
		assert_int_equal(cg_slot_watch(T.cg, "slot-w"), 0);
	pid = spawn(NULL, &wfd);
	assert_int_equal(cg_slot_attach(T.cg, "slot-w", pid), 0);
	assert_true(wait_for("slot-w", true));
	assert_int_equal(cg_slot_nprocs(T.cg, "slot-w", &nprocs), 0);
	assert_int_equal(nprocs, 1);
	close(wfd);
	reap(pid);
	assert_true(wait_for("slot-w", false));
	assert_int_equal(cg_slot_unwatch(T.cg, "slot-w"), cg_watch_fd(T.cg) >= 0 ? 0 : -ENOENT);
	assert_int_equal(cg_slot_remove(T.cg, "slot-w"), 0);
}

static void test_attach_esrch(void **state)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(cg_slot_create(T.cg, "slot-e"), 0);
	assert_int_equal(cg_slot_attach(T.cg, "slot-e", pid), -ESRCH);
	assert_int_equal(cg_slot_remove(T.cg, "slot-e"), 0);
}

/* A job that ignores SIGTERM and forks: one SIGTERM round reaches every
 * process and stops none; cg_slot_kill (cgroup.kill, or SIGKILL rounds)
 * empties the slot. */
static void test_kill(void **state)
{
	unsigned n = 0, rounds = 0;
	bool atomic = false, pop = true;
	pid_t pid, *pids = NULL;
	size_t npids = 0;
	int st, dfd = -1;

	assert_int_equal(cg_slot_create(T.cg, "slot-k"), 0);
	int go[2];
	char c = 'g';
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(T.lockfd);
		signal(SIGTERM, SIG_IGN);
		if (read(go[0], &c, 1) != 1) /* forks only once it is in the slot */
			_exit(1);
		for (int i = 0; i < 5; i++)
			if (fork() == 0)
				break;
		for (;;)
			pause();
	}
	T.children[T.nchildren++] = pid;
	assert_int_equal(cg_slot_attach(T.cg, "slot-k", pid), 0);
	assert_int_equal(write(go[1], &c, 1), 1);
	close(go[0]);
	close(go[1]);
	for (int i = 0; i < 200 && npids < 6; i++) {
		free(pids);
		pids = NULL;
		assert_int_equal(cg_slot_pids(T.cg, "slot-k", &pids, &npids), 0);
		usleep(10000);
	}
	assert_int_equal(npids, 6);
	free(pids);
	assert_int_equal(cg_slot_signal(T.cg, "slot-k", SIGTERM, &n), 0);
	assert_int_equal(n, 6);
	usleep(100000);
	assert_int_equal(cg_slot_nprocs(T.cg, "slot-k", &n), 0);
	assert_int_equal(n, 6); /* SIGTERM ignored by all */
	do {
		assert_int_equal(cg_slot_kill(T.cg, "slot-k", &atomic), 0);
		rounds++;
		usleep(20000);
		assert_int_equal(cg_slot_nprocs(T.cg, "slot-k", &n), 0);
	} while (n > 0 && rounds < 100);
	assert_int_equal(n, 0);
	printf("# slot emptied by %s in %u round(s)\n", atomic ? "cgroup.kill" : "SIGKILL to cgroup.procs", rounds);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	T.nchildren--;
	assert_true(wait_for("slot-k", false) || (cg_slot_populated(T.cg, "slot-k", &pop) == 0 && !pop));

	bool everywhere = false;
	int r = cg_slot_dirfd(T.cg, "slot-k", &dfd, &everywhere);
	const struct cg_info *info = cg_get_info(T.cg);
	if (info->features.clone_into_cgroup) {
		assert_int_equal(r, 0);
		assert_true(dfd >= 0);
		assert_int_equal(everywhere, info->hierarchy == CG_HIER_V2);
		close(dfd);
	} else {
		assert_int_equal(r, -EOPNOTSUPP);
	}
	assert_int_equal(cg_slot_remove(T.cg, "slot-k"), 0);
}

static void expect_kernel_file(const char *slot, const char *file, const char *want)
{
	char p[PATH_MAX * 2], buf[64];

	assert_int_equal(cg_slot_path(T.cg, slot, p, PATH_MAX), 0);
	strcat(p, "/");
	strcat(p, file);
	assert_true(file_read(p, buf, sizeof(buf)) > 0);
	buf[strcspn(buf, "\n")] = '\0';
	assert_string_equal(buf, want);
}

static void test_resources(void **state)
{
	const struct cg_info *in = cg_get_info(T.cg);
	const char *maxfile = in->memory_v2 ? "memory.max" : "memory.limit_in_bytes";

	assert_int_equal(cg_slot_create(T.cg, "slot-r"), 0);
	assert_int_equal(cg_slot_set(T.cg, "slot-r", "memory.max", "64M"), 0);
	expect_kernel_file("slot-r", maxfile, "67108864");
	assert_int_equal(cg_slot_set(T.cg, "slot-r", "memory.max", "max"), 0);
	expect_kernel_file("slot-r", maxfile, in->memory_v2 ? "max" : "9223372036854771712");
	assert_int_equal(cg_slot_set(T.cg, "slot-r", "pids.max", "100"), 0);
	assert_int_equal(cg_slot_set(T.cg, "slot-r", "memory.max", "lots"), -EINVAL);
	/* not managed here, or no v1 equivalent */
	assert_false(cg_resource_supported(T.cg, "cpu.weight"));
	assert_false(cg_resource_supported(T.cg, "nonsense.max"));
	assert_int_equal(cg_slot_set(T.cg, "slot-r", "io.weight", "100"), -EOPNOTSUPP);
	assert_int_equal(cg_resource_supported(T.cg, "memory.high"), in->memory_v2);
	if (!in->memory_v2)
		assert_int_equal(cg_slot_set(T.cg, "slot-r", "memory.high", "1G"), -EOPNOTSUPP);
	assert_int_equal(cg_slot_remove(T.cg, "slot-r"), 0);
}

/* swap: v2's memory.swap.max as it is; on v1 memory+swap = memory + swap,
 * and a later memory.max keeps the swap (raising and lowering) */
static void test_swap(void **state)
{
	const struct cg_info *in = cg_get_info(T.cg);
	const char *memsw = "memory.memsw.limit_in_bytes";

	if (!cg_resource_supported(T.cg, "memory.swap.max")) {
		assert_false(in->memory_v2);
		print_message("v1 without swap accounting: memory.swap.max not supported\n");
		return;
	}
	assert_int_equal(cg_slot_create(T.cg, "slot-s"), 0);
	assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.max", "64M"), 0);
	assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.swap.max", "32M"), 0);
	if (in->memory_v2) {
		expect_kernel_file("slot-s", "memory.swap.max", "33554432");
	} else {
		expect_kernel_file("slot-s", memsw, "100663296");
		assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.max", "128M"), 0);
		expect_kernel_file("slot-s", "memory.limit_in_bytes", "134217728");
		expect_kernel_file("slot-s", memsw, "167772160");
		assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.max", "16M"), 0);
		expect_kernel_file("slot-s", "memory.limit_in_bytes", "16777216");
		expect_kernel_file("slot-s", memsw, "50331648");
		assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.swap.max", "0"), 0);
		expect_kernel_file("slot-s", memsw, "16777216");
		/* the reset of a bind: no limit on either */
		assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.max", "max"), 0);
		assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.swap.max", "max"), 0);
		expect_kernel_file("slot-s", "memory.limit_in_bytes", "9223372036854771712");
		expect_kernel_file("slot-s", memsw, "9223372036854771712");
		/* swap without a memory limit: nothing to add it to, no limit */
		assert_int_equal(cg_slot_set(T.cg, "slot-s", "memory.swap.max", "32M"), 0);
		expect_kernel_file("slot-s", memsw, "9223372036854771712");
	}
	assert_int_equal(cg_slot_remove(T.cg, "slot-s"), 0);
}

/* the child writes 8 MiB to a file on a real disk from inside the slot */
static void write_in_slot(const char *slot, const char *file)
{
	int wfd;
	pid_t pid = spawn(file, &wfd);

	assert_int_equal(cg_slot_attach(T.cg, slot, pid), 0);
	assert_int_equal(write(wfd, "x", 1), 1);
	close(wfd);
	reap(pid);
}

static void test_memory(void **state)
{
	char dir[] = "/var/tmp/cgpool-test-XXXXXX", file[64];
	struct cg_memory m0, m1, m2;
	struct statfs sf;
	int r;

	if (statfs("/var/tmp", &sf) < 0 || sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC) {
		printf("# /var/tmp is tmpfs or ramfs: its page cache cannot be reclaimed, skipped\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/data", dir);
	assert_int_equal(cg_slot_create(T.cg, "slot-m"), 0);
	assert_int_equal(cg_slot_memory(T.cg, "slot-m", &m0), 0);
	write_in_slot("slot-m", file);
	assert_int_equal(cg_slot_memory(T.cg, "slot-m", &m1), 0);
	printf("# after 8 MiB written: current %llu peak %llu file %llu anon %llu oom_kill %llu\n",
	       (unsigned long long)m1.current, (unsigned long long)m1.peak, (unsigned long long)m1.file,
	       (unsigned long long)m1.anon, (unsigned long long)m1.oom_kill);
	r = cg_slot_reset_peak(T.cg, "slot-m");
	assert_true(r == 0 || (r == -EOPNOTSUPP && !cg_get_info(T.cg)->features.memory_peak_reset));
	r = cg_slot_reclaim(T.cg, "slot-m", 16 * MiB);
	assert_true(r == 0 || r == -EAGAIN);
	assert_int_equal(cg_slot_memory(T.cg, "slot-m", &m2), 0);
	printf("# after reclaim (%d): current %llu peak %llu file %llu\n", r, (unsigned long long)m2.current,
	       (unsigned long long)m2.peak, (unsigned long long)m2.file);
	unlink(file);
	rmdir(dir);
	assert_true(m1.file >= 8 * MiB - 64 * 1024);
	assert_true(m1.peak >= m1.file);
	assert_true(m1.current >= m1.file);
	assert_true(m2.file < m1.file / 2);
	if (cg_get_info(T.cg)->features.memory_peak_reset)
		assert_true(m2.peak < m1.peak);
	assert_int_equal(cg_slot_remove(T.cg, "slot-m"), 0);
}

/* descriptors this process holds on files below a slot's directories */
static int fds_below(const char *slot)
{
	char sub[64], link[PATH_MAX * 2], target[PATH_MAX];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	snprintf(sub, sizeof(sub), "/%s/", slot);
	while ((de = readdir(d))) {
		ssize_t len;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += strstr(target, sub) != NULL && strstr(target, T.root) != NULL;
		}
	}
	closedir(d);
	return n;
}

/* The files a placement touches stay open between accesses; a slot removed
 * and made again behind the layer's back is still placed into and read
 * right (the kept descriptors of the old directory are dropped on ENODEV),
 * and removing a slot closes its files. */
static void test_kept_files(void **state)
{
	char p[PATH_MAX * 2];
	unsigned nprocs = 0;
	int wfd, n;
	pid_t pid;

	assert_int_equal(cg_slot_create(T.cg, "slot-f"), 0);
	pid = spawn(NULL, &wfd);
	assert_int_equal(cg_slot_attach(T.cg, "slot-f", pid), 0);
	assert_int_equal(cg_slot_nprocs(T.cg, "slot-f", &nprocs), 0);
	assert_int_equal(nprocs, 1);
	n = fds_below("slot-f");
	printf("# %d files of slot-f kept open\n", n);
	assert_true(n >= (int)T.nmounts); /* cgroup.procs in every hierarchy at least */
	close(wfd);
	reap(pid);
	assert_int_equal(cg_slot_nprocs(T.cg, "slot-f", &nprocs), 0);
	assert_int_equal(nprocs, 0); /* read now, not a list kept from before */
	for (size_t i = 0; i < T.nmounts; i++) {
		snprintf(p, sizeof(p), "%s%s/slot-f/run", T.mounts[i].point, T.root);
		assert_int_equal(rmdir(p), 0);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	pid = spawn(NULL, &wfd);
	assert_int_equal(cg_slot_attach(T.cg, "slot-f", pid), 0);
	assert_int_equal(cg_slot_nprocs(T.cg, "slot-f", &nprocs), 0);
	assert_int_equal(nprocs, 1);
	for (size_t i = 0; i < T.nmounts; i++) {
		char procs[64] = "";
		snprintf(p, sizeof(p), "%s%s/slot-f/run/cgroup.procs", T.mounts[i].point, T.root);
		assert_true(file_read(p, procs, sizeof(procs)) > 0);
		assert_int_equal(atoi(procs), pid);
	}
	close(wfd);
	reap(pid);
	assert_int_equal(cg_slot_remove(T.cg, "slot-f"), 0);
	assert_int_equal(fds_below("slot-f"), 0);
}

static int real_setup(void)
{
	char err[512] = "";
	int r;

	if (geteuid() != 0) {
		printf("# skip: not root\n");
		return 77;
	}
	scan_mounts();
	if (find_root() < 0) {
		printf("# skip: no usable memory controller\n");
		return 77;
	}
	/* Runs of this test serialize on the memory mount's directory: the
	 * pool root's chain in the other hierarchies (e.g. pids/<own memory
	 * path>) is shared, so a parallel run could see a directory we made
	 * as existing and neither would remove it. */
	for (size_t i = 0; i < T.nmounts && T.lockfd < 0; i++)
		if (T.mounts[i].memory)
			T.lockfd = open(T.mounts[i].point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (T.lockfd < 0 || flock(T.lockfd, LOCK_EX) < 0) {
		printf("# cannot lock the memory mount: %s\n", strerror(errno));
		return 99;
	}
	record_chain();
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	r = cg_open(T.root, CG_CTRL_MEMORY | CG_CTRL_PIDS, &T.cg, err, sizeof(err));
	if (r == -ENOENT || r == -EACCES || r == -EBUSY || r == -ENODEV) {
		printf("# skip: cg_open %s: %s\n", T.root, err);
		return 77;
	}
	if (r < 0) {
		printf("# cg_open %s: %s\n", T.root, err);
		return 99;
	}
	return 0;
}

/* v1: the witness counts every live memory cgroup of the machine by a
 * walk. The listing that reads each subdirectory's link count beside it
 * finds what the walk by whole paths finds, and it goes below a slot that
 * has cgroups of its own (one made there leaves the dying count as it was). */
static void test_dying_walk(void **state)
{
	static char mi[1 << 16], cgf[1 << 12];
	struct cg_fs_ops plain = cg_fs_real;
	struct cg *by_path = NULL;
	struct cg_dying a, b, c;
	char err[512], dir[PATH_MAX], sub[PATH_MAX + 16];
	int tries = 0;

	if (cg_get_info(T.cg)->memory_v2) {
		printf("# memory on v2: cgroup.stat counts the dying, no walk\n");
		return;
	}
	plain.list_subdirs = NULL;
	assert_true(file_read("/proc/self/mountinfo", mi, sizeof(mi)) > 0);
	assert_true(file_read("/proc/self/cgroup", cgf, sizeof(cgf)) > 0);
	assert_int_equal(cg_open_fs(&plain, NULL, mi, cgf, T.root, CG_CTRL_MEMORY | CG_CTRL_PIDS, &by_path, err,
				    sizeof(err)), 0);
	assert_int_equal(cg_slot_create(T.cg, "slot-w"), 0);
	assert_int_equal(cg_slot_path(T.cg, "slot-w", dir, sizeof(dir)), 0);
	snprintf(sub, sizeof(sub), "%s/inner", dir);
	/* the machine's cgroups may change meanwhile: three readings that agree */
	do {
		assert_int_equal(cg_dying(T.cg, &a), 0);
		assert_int_equal(cg_dying(by_path, &b), 0);
		assert_int_equal(mkdir(sub, 0755), 0);
		assert_int_equal(cg_dying(T.cg, &c), 0);
		assert_int_equal(rmdir(sub), 0);
	} while ((a.count != b.count || b.count != c.count) && ++tries < 5);
	printf("# dying memory cgroups: %llu (walk by link counts), %llu (by paths), %llu with a cgroup inside a slot\n",
	       (unsigned long long)a.count, (unsigned long long)b.count, (unsigned long long)c.count);
	assert_int_equal(a.count, b.count);
	assert_int_equal(c.count, a.count);
	assert_int_equal(cg_slot_remove(T.cg, "slot-w"), 0);
	cg_close(by_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_info),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_attach_watch),
		cmocka_unit_test(test_attach_esrch),
		cmocka_unit_test(test_kept_files),
		cmocka_unit_test(test_kill),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_swap),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_dying_walk),
	};
	int r = real_setup();

	if (r == 0)
		r = cmocka_run_group_tests_name("cg on the running kernel", tests, NULL, NULL) ? 1 : 0;
	cleanup();
	return r;
}
