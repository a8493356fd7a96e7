/* unit tests: the cgroup layer's discovery and v1 mapping, on fake /proc
 * texts over a tiny cg_fs_ops that maps every path into a temporary
 * directory and calls the real operations there (runs as any user).
 * The real kernel is test_cg.c. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cg.h"
#include "util.h"

struct fake {
	char base[PATH_MAX];
	char ctrls[128]; /* cgroup.controllers of every new directory */
};

static void fmap(const struct fake *f, const char *path, char *buf)
{
	if (snprintf(buf, PATH_MAX, "%s%s", f->base, path) >= PATH_MAX)
		abort();
}

static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -EIO;
}

/* what the kernel puts in a new cgroup directory, as far as cg reads it */
static int fake_files(const char *dir, const char *ctrls)
{
	const char *const files[][2] = {
		{ "cgroup.procs", "" },
		{ "cgroup.subtree_control", "" },
		{ "cgroup.controllers", ctrls },
		{ "cgroup.events", "populated 0\nfrozen 0\n" },
		{ "cgroup.stat", "nr_descendants 0\nnr_dying_subsys_memory 0\n" },
	};
	char q[PATH_MAX + 32];
	int r = 0;

	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(files); i++) {
		snprintf(q, sizeof(q), "%s/%s", dir, files[i][0]);
		r = put(q, files[i][1]);
	}
	return r;
}

static int fake_mkdir(void *ctx, const char *path)
{
	const struct fake *f = ctx;
	char p[PATH_MAX];

	fmap(f, path, p);
	if (mkdir(p, 0755) < 0)
		return -errno;
	return fake_files(p, f->ctrls);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p) < 0 ? -errno : 0;
}

static int fake_rmdir(void *ctx, const char *path)
{
	char p[PATH_MAX];
	struct stat st;

	fmap(ctx, path, p);
	if (stat(p, &st) < 0)
		return -errno;
	return nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* the rest maps the path and calls the real operations */
static ssize_t fake_read(void *ctx, const char *path, char *buf, size_t len)
{
	char p[PATH_MAX];

	fmap(ctx, path, p);
	return cg_fs_real.read(NULL, p, buf, len);
}

static int fake_write(void *ctx, const char *path, const char *s)
{
	char p[PATH_MAX];

	fmap(ctx, path, p);
	return put(p, s); /* creates the file, unlike cgroupfs */
}

static int fake_inode(void *ctx, const char *path, uint64_t *ino)
{
	char p[PATH_MAX];

	fmap(ctx, path, p);
	return cg_fs_real.inode(NULL, p, ino);
}

static int fake_list(void *ctx, const char *path, int (*fn)(const char *, void *), void *ud)
{
	char p[PATH_MAX];

	fmap(ctx, path, p);
	return cg_fs_real.list_dirs(NULL, p, fn, ud);
}

static const struct cg_fs_ops fake_ops = {
	.mkdir = fake_mkdir,
	.rmdir = fake_rmdir,
	.read = fake_read,
	.write = fake_write,
	.inode = fake_inode,
	.list_dirs = fake_list,
};

#define MI_CPU "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
#define MI_MEM "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
#define MI_PIDS "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime shared:9 - cgroup cgroup rw,pids\n"
#define MI_SYSD "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
#define MI_UNI "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
#define MI_V2 "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
#define MI_OTHER "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
#define CG_V1 "9:name=systemd:/\n8:pids:/\n4:memory:/job/a\n2:cpu,cpuacct:/\n"
#define CG_V2 "0::/user.slice/x\n"

/* a fake tree: mount points with their cgroup.controllers */
static void fake_setup(struct fake *f, const char *ctrls, const char *const *dirs, size_t n)
{
	char p[PATH_MAX];
	const char *t = getenv("TMPDIR");

	assert_true(snprintf(f->base, sizeof(f->base), "%s/cgpool-test-fake-XXXXXX", t && *t ? t : "/tmp") <
		    (int)sizeof(f->base));
	assert_non_null(mkdtemp(f->base));
	snprintf(f->ctrls, sizeof(f->ctrls), "%s", ctrls);
	for (size_t i = 0; i < n; i++) {
		fmap(f, dirs[i], p);
		assert_int_equal(mkdir_p(p, 0755), 0);
		assert_int_equal(fake_files(p, strstr(dirs[i], "unified") ? "" : ctrls), 0);
	}
}

static void fake_teardown(struct fake *f)
{
	nftw(f->base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *const v1_dirs[] = { "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids",
				       "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/unified" };

static int fake_open(struct fake *f, const char *mi, const char *cgf, const char *root, unsigned mask,
		     struct cg **cg, char *err)
{
	err[0] = '\0';
	return cg_open_fs(&fake_ops, f, mi, cgf, root, mask, cg, err, 512);
}

static int count_dirs(const char *name, void *ud)
{
	(*(int *)ud)++;
	return 0;
}

static void test_fake_v2(void **state)
{
	static const char *const dirs[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/user.slice/x" };
	struct fake f;
	struct cg *cg = NULL;
	char err[512], p[PATH_MAX], buf[64];
	const struct cg_info *in;
	int n = 0;

	fake_setup(&f, "cpuset cpu io memory hugetlb pids\n", dirs, ARRAY_SIZE(dirs));
	assert_int_equal(fake_open(&f, MI_OTHER MI_V2, CG_V2, "/pool/a", CG_CTRL_MEMORY | CG_CTRL_PIDS, &cg, err), 0);
	in = cg_get_info(cg);
	assert_string_equal(cg_hierarchy_name(in->hierarchy), "v2");
	assert_true(in->memory_v2);
	assert_true(in->tracking);
	assert_string_equal(in->root, "/pool/a");
	assert_string_equal(in->memory_root, "/sys/fs/cgroup/pool/a");
	assert_true(in->features.dying_subsys_stat);
	assert_false(in->features.memory_reclaim);
	assert_true(cg_resource_supported(cg, "memory.high"));
	assert_false(cg_resource_supported(cg, "cpu.weight")); /* cpu not managed */
	assert_int_equal(cg_watch_fd(cg), -1);                  /* fake has no watch op */
	cg_close(cg);

	/* auto: the process's own cgroup; the daemon moves into a leaf */
	assert_int_equal(fake_open(&f, MI_V2, CG_V2, "auto", CG_CTRL_PIDS, &cg, err), 0);
	in = cg_get_info(cg);
	assert_string_equal(in->root, "/user.slice/x");
	fmap(&f, "/sys/fs/cgroup/user.slice/x/cgpoold/cgroup.procs", p);
	assert_true(file_read(p, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "0");
	assert_int_equal(cg_slot_create(cg, "slot-1"), 0);
	assert_int_equal(cg_slot_list(cg, "", count_dirs, &n), 0);
	assert_int_equal(n, 1); /* the daemon's leaf is not a slot */
	cg_close(cg);

	/* started again from inside that leaf: the pool stays where it is */
	assert_int_equal(fake_open(&f, MI_V2, "0::/user.slice/x/cgpoold\n", "auto", CG_CTRL_PIDS, &cg, err), 0);
	assert_string_equal(cg_get_info(cg)->root, "/user.slice/x");
	assert_string_equal(cg_get_info(cg)->memory_root, "/sys/fs/cgroup/user.slice/x");
	cg_close(cg);

	/* memory not among cgroup2's controllers */
	fmap(&f, "/sys/fs/cgroup/cgroup.controllers", p);
	assert_int_equal(put(p, "cpu io pids\n"), 0);
	assert_int_equal(fake_open(&f, MI_V2, CG_V2, "/pool", 0, &cg, err), -ENOENT);
	assert_non_null(strstr(err, "memory"));
	fake_teardown(&f);
}

static void test_fake_hybrid(void **state)
{
	struct fake f;
	struct cg *cg = NULL;
	char err[512];
	const struct cg_info *in;

	static const char *const dirs[] = { "/sys/fs/cgroup/memory/job/a", "/sys/fs/cgroup/pids",
					    "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/unified" };

	fake_setup(&f, "", dirs, ARRAY_SIZE(dirs));
	assert_int_equal(fake_open(&f, MI_OTHER MI_CPU MI_MEM MI_PIDS MI_SYSD MI_UNI, CG_V1 "0::/\n", "auto",
				   CG_CTRL_PIDS | CG_CTRL_CPU, &cg, err), 0);
	in = cg_get_info(cg);
	assert_string_equal(cg_hierarchy_name(in->hierarchy), "hybrid");
	assert_false(in->memory_v2);
	assert_true(in->tracking);
	assert_string_equal(in->root, "/job/a");
	assert_string_equal(in->memory_root, "/sys/fs/cgroup/memory/job/a");
	assert_false(cg_resource_supported(cg, "memory.high"));
	assert_false(cg_resource_supported(cg, "memory.swap.max"));
	assert_false(cg_resource_supported(cg, "io.weight"));
	assert_true(cg_resource_supported(cg, "cpu.weight"));
	assert_true(cg_resource_supported(cg, "pids.max"));
	cg_close(cg);
	fake_teardown(&f);
}

static void expect_file(const struct fake *f, const char *path, const char *want)
{
	char p[PATH_MAX], buf[128];

	fmap(f, path, p);
	assert_true(file_read(p, buf, sizeof(buf)) >= 0);
	assert_string_equal(buf, want);
}

static void test_fake_v1(void **state)
{
	struct fake f;
	struct cg *cg = NULL;
	char err[512];
	const struct cg_info *in;

	fake_setup(&f, "", v1_dirs, 3);
	assert_int_equal(fake_open(&f, MI_CPU MI_MEM MI_PIDS MI_SYSD, CG_V1, "/pool",
				   CG_CTRL_PIDS | CG_CTRL_CPU, &cg, err), 0);
	in = cg_get_info(cg);
	assert_string_equal(cg_hierarchy_name(in->hierarchy), "v1");
	assert_false(in->tracking);
	assert_int_equal(cg_watch_fd(cg), -1);
	assert_true(in->features.memory_peak_reset); /* the fake takes the write */
	assert_false(in->features.cgroup_kill);
	/* the v1 mapping, written through the fake */
	assert_int_equal(cg_slot_create(cg, "s1"), 0);
	assert_int_equal(cg_slot_create(cg, "s1"), -EEXIST);
	assert_int_equal(cg_slot_set(cg, "s1", "memory.max", "max"), 0);
	expect_file(&f, "/sys/fs/cgroup/memory/pool/s1/run/memory.limit_in_bytes", "-1");
	assert_int_equal(cg_slot_set(cg, "s1", "memory.max", "2G"), 0);
	expect_file(&f, "/sys/fs/cgroup/memory/pool/s1/run/memory.limit_in_bytes", "2147483648");
	assert_int_equal(cg_slot_set(cg, "s1", "cpu.weight", "100"), 0);
	expect_file(&f, "/sys/fs/cgroup/cpu,cpuacct/pool/s1/run/cpu.shares", "1024");
	assert_int_equal(cg_slot_set(cg, "s1", "cpu.max", "50000 200000"), 0);
	expect_file(&f, "/sys/fs/cgroup/cpu,cpuacct/pool/s1/run/cpu.cfs_period_us", "200000");
	expect_file(&f, "/sys/fs/cgroup/cpu,cpuacct/pool/s1/run/cpu.cfs_quota_us", "50000");
	assert_int_equal(cg_slot_set(cg, "s1", "cpu.max", "max"), 0);
	expect_file(&f, "/sys/fs/cgroup/cpu,cpuacct/pool/s1/run/cpu.cfs_quota_us", "-1");
	assert_int_equal(cg_slot_set(cg, "s1", "cpu.weight", "0"), -EINVAL);
	assert_int_equal(cg_slot_set(cg, "s1", "memory.high", "1G"), -EOPNOTSUPP);
	assert_int_equal(cg_slot_set(cg, "../x", "memory.max", "1G"), -EINVAL);
	assert_int_equal(cg_slot_remove(cg, "s1"), 0);
	assert_int_equal(cg_slot_remove(cg, "s1"), -ENOENT);
	cg_close(cg);

	/* no memory hierarchy: -ENOENT; a managed controller missing: -ENODEV */
	assert_int_equal(fake_open(&f, MI_CPU MI_PIDS, CG_V1, "/pool", 0, &cg, err), -ENOENT);
	assert_non_null(strstr(err, "memory"));
	assert_int_equal(fake_open(&f, MI_MEM MI_CPU, CG_V1, "/pool", CG_CTRL_PIDS, &cg, err), -ENODEV);
	assert_non_null(strstr(err, "pids"));
	assert_int_equal(fake_open(&f, MI_OTHER, "", "/pool", 0, &cg, err), -ENOENT);
	assert_int_equal(fake_open(&f, MI_MEM, CG_V1, "pool", 0, &cg, err), -EINVAL);
	assert_int_equal(fake_open(&f, MI_MEM, CG_V1, "/a/../b", 0, &cg, err), -EINVAL);
	fake_teardown(&f);
}

struct seen_dir {
	char name[16];
	int64_t nsub;
};

static int record_dir(const char *name, int64_t nsub, void *ud)
{
	struct seen_dir *seen = ud;
	int i = 0;

	while (seen[i].name[0])
		i++;
	snprintf(seen[i].name, sizeof(seen[i].name), "%s", name);
	seen[i].nsub = nsub;
	return 0;
}

static int64_t nsub_of(const struct seen_dir *seen, const char *name)
{
	for (int i = 0; seen[i].name[0]; i++)
		if (strcmp(seen[i].name, name) == 0)
			return seen[i].nsub;
	return -2;
}

/* the real listing with each subdirectory's own count of subdirectories
 * (its link count less 2, on any filesystem that keeps it: cgroupfs, tmpfs,
 * ext4), files left out */
static void test_list_subdirs(void **state)
{
	static const char *const made[] = { "a", "a/x", "a/y", "a/y/z", "b", "c", "c/w" };
	char base[PATH_MAX], p[PATH_MAX + 16];
	struct seen_dir seen[8] = { 0 };
	const char *t = getenv("TMPDIR");

	assert_true(snprintf(base, sizeof(base), "%s/cgpool-test-subdirs-XXXXXX", t && *t ? t : "/tmp") <
		    (int)sizeof(base));
	assert_non_null(mkdtemp(base));
	for (size_t i = 0; i < ARRAY_SIZE(made); i++) {
		snprintf(p, sizeof(p), "%s/%s", base, made[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	snprintf(p, sizeof(p), "%s/file", base);
	assert_int_equal(put(p, "x"), 0);
	assert_int_equal(cg_fs_real.list_subdirs(NULL, base, record_dir, seen), 0);
	assert_int_equal(nsub_of(seen, "a"), 2);
	assert_int_equal(nsub_of(seen, "b"), 0);
	assert_int_equal(nsub_of(seen, "c"), 1);
	assert_int_equal(nsub_of(seen, "file"), -2); /* not a directory: not listed */
	assert_string_equal(seen[3].name, "");
	snprintf(p, sizeof(p), "%s/a", base);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(cg_fs_real.list_subdirs(NULL, p, record_dir, seen), 0);
	assert_int_equal(nsub_of(seen, "x"), 0);
	assert_int_equal(nsub_of(seen, "y"), 1);
	snprintf(p, sizeof(p), "%s/gone", base);
	assert_int_equal(cg_fs_real.list_subdirs(NULL, p, record_dir, seen), -ENOENT);
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fake_v2),
		cmocka_unit_test(test_fake_hybrid),
		cmocka_unit_test(test_fake_v1),
		cmocka_unit_test(test_list_subdirs),
	};

	return cmocka_run_group_tests_name("cg discovery (fake fs)", tests, NULL, NULL);
}
