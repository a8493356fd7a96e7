/* unit tests: the cgroup files kept open between accesses (cg_files.c), on
 * plain files in a temporary directory: what is read is the file's text at
 * that moment, the number of open descriptors stays bounded, a forgotten
 * directory's files are closed, a thread forgetting while another reads
 * breaks nothing, and out of descriptors the table gives some back. The kernel's side (a removed cgroup, ENODEV) is
 * test_cg.c's test_kept_files. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cg_files.h"
#include "util.h"

static char base[256]; /* in $TMPDIR (/tmp when unset) */

static void path_of(char *out, const char *dir, unsigned i)
{
	snprintf(out, PATH_MAX, "%s/%s/file-%u", base, dir, i);
}

static void make_files(const char *dir, unsigned n)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", base, dir);
	assert_int_equal(mkdir(p, 0755), 0);
	for (unsigned i = 0; i < n; i++) {
		int fd;
		path_of(p, dir, i);
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		assert_true(fd >= 0);
		close(fd);
	}
}

/* descriptors of this process on files below base */
static int open_below(const char *dir)
{
	char link[PATH_MAX], target[PATH_MAX], want[PATH_MAX];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	snprintf(want, sizeof(want), "%s/%s/", base, dir);
	while ((de = readdir(d))) {
		ssize_t len;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = '\0';
			n += strncmp(target, want, strlen(want)) == 0;
		}
	}
	closedir(d);
	return n;
}

static int setup(void **state)
{
	struct cg_files *f;
	const char *t = getenv("TMPDIR");

	assert_true(snprintf(base, sizeof(base), "%s/cgpool-test-files-XXXXXX", t && *t ? t : "/tmp") <
		    (int)sizeof(base));
	assert_non_null(mkdtemp(base));
	assert_int_equal(cg_files_new(&f), 0);
	*state = f;
	return 0;
}

static int rm_file(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static int teardown(void **state)
{
	cg_files_free(*state);
	nftw(base, rm_file, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

/* a write through the table and a read after it see each other, and the
 * read sees a change made behind its back (offset 0, the current text) */
static void test_read_write(void **state)
{
	struct cg_files *f = *state;
	char p[PATH_MAX], buf[64];

	make_files("a", 1);
	path_of(p, "a", 0);
	assert_int_equal(cg_files_write(f, p, "123\n"), 0);
	assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "123\n");
	assert_int_equal(file_write_str(p, "45"), 0); /* over the first bytes */
	assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), 4);
	assert_string_equal(buf, "453\n");
	assert_int_equal(cg_files_read(f, p, buf, 3), 2); /* len - 1 bytes and a NUL */
	assert_string_equal(buf, "45");
	assert_int_equal(open_below("a"), 2); /* one to read, one to write */
	path_of(p, "a", 7);
	assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), -ENOENT);
}

/* never more than CG_FILES_MAX open, the least recently used go first */
static void test_bounded(void **state)
{
	struct cg_files *f = *state;
	char p[PATH_MAX], buf[16];

	make_files("b", CG_FILES_MAX + 40);
	for (unsigned i = 0; i < CG_FILES_MAX + 40; i++) {
		path_of(p, "b", i);
		assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), 0);
		assert_true(open_below("b") <= CG_FILES_MAX);
	}
	assert_int_equal(open_below("b"), CG_FILES_MAX);
}

/* forgetting a directory closes its files and no other's, "b" not "b2" */
static void test_forget(void **state)
{
	struct cg_files *f = *state;
	char p[PATH_MAX], dir[PATH_MAX], buf[16];

	make_files("c", 4);
	make_files("c2", 4);
	for (unsigned i = 0; i < 4; i++) {
		path_of(p, "c", i);
		assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), 0);
		path_of(p, "c2", i);
		assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), 0);
	}
	snprintf(dir, sizeof(dir), "%s/c/", base); /* a trailing slash is the same directory */
	cg_files_forget(f, dir);
	assert_int_equal(open_below("c"), 0);
	assert_int_equal(open_below("c2"), 4);
	/* a file replaced after a forget is the new one */
	path_of(p, "c2", 0);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(file_write_atomic(p, "new", 3, 0644), 0);
	snprintf(dir, sizeof(dir), "%s/c2", base);
	cg_files_forget(f, dir);
	assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "new");
}

/* Files of several directories, more than the table holds, read in a
 * pseudo-random order while directories are forgotten now and then: every
 * read returns its own file's text (the index finds the right entry after
 * entries leave it), a forgotten directory keeps nothing open, and the
 * count stays bounded. */
static void test_churn(void **state)
{
	struct cg_files *f = *state;
	static const char *const dirs[] = { "e0", "e1", "e2", "e3" };
	const unsigned per = CG_FILES_MAX / 2;
	char p[PATH_MAX], buf[32], want[32];
	uint32_t x = 12345;
	unsigned forgets = 0;
	unsigned long opened;

	for (unsigned d = 0; d < 4; d++) {
		make_files(dirs[d], per);
		for (unsigned i = 0; i < per; i++) {
			path_of(p, dirs[d], i);
			snprintf(want, sizeof(want), "%s %u", dirs[d], i);
			assert_int_equal(file_write_str(p, want), 0);
		}
	}
	for (unsigned n = 0; n < 20000; n++) {
		unsigned d, i;
		x = x * 1103515245u + 12345u;
		d = (x >> 16) % 4;
		i = (x >> 4) % per;
		if ((x >> 24) % 64 == 0) {
			snprintf(p, sizeof(p), "%s/%s", base, dirs[d]);
			cg_files_forget(f, p);
			if (forgets++ % 16 == 0)
				assert_int_equal(open_below(dirs[d]), 0);
			continue;
		}
		path_of(p, dirs[d], i);
		snprintf(want, sizeof(want), "%s %u", dirs[d], i);
		assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), (ssize_t)strlen(want));
		assert_string_equal(buf, want);
		opened = cg_files_opened(f); /* read again: found, not opened again */
		assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), (ssize_t)strlen(want));
		assert_int_equal(cg_files_opened(f), opened);
	}
	assert_true(forgets > 0);
	/* A full table, half of it forgotten (entries move back in the index,
	 * across its end too): every file still kept is found, none opened
	 * again. Each round another window of files and another pair of
	 * directories. */
	for (unsigned round = 0; round < 64; round++) {
		unsigned o = round * 37 % (per - CG_FILES_MAX / 4), gone = round % 4,
			 gone2 = (gone + 1 + round / 4 % 3) % 4;
		for (unsigned d = 0; d < 4; d++)
			for (unsigned i = o; i < o + CG_FILES_MAX / 4; i++) {
				path_of(p, dirs[d], i);
				assert_true(cg_files_read(f, p, buf, sizeof(buf)) > 0);
			}
		snprintf(p, sizeof(p), "%s/%s", base, dirs[gone]);
		cg_files_forget(f, p);
		snprintf(p, sizeof(p), "%s/%s", base, dirs[gone2]);
		cg_files_forget(f, p);
		opened = cg_files_opened(f);
		for (unsigned d = 0; d < 4; d++)
			for (unsigned i = o; i < o + CG_FILES_MAX / 4; i++) {
				if (d == gone || d == gone2)
					continue;
				path_of(p, dirs[d], i);
				snprintf(want, sizeof(want), "%s %u", dirs[d], i);
				assert_true(cg_files_read(f, p, buf, sizeof(buf)) > 0);
				assert_string_equal(buf, want);
			}
		assert_int_equal(cg_files_opened(f), opened);
	}
	assert_true(open_below("e0") + open_below("e1") + open_below("e2") + open_below("e3") <= CG_FILES_MAX);
}

/* Out of descriptors (EMFILE), the table gives back the least recently used
 * quarter of its files and the access goes on. */
static void test_out_of_descriptors(void **state)
{
	struct cg_files *f = *state;
	char p[PATH_MAX], buf[16];
	struct rlimit old, low;
	int probe, before, r;

	make_files("g", CG_FILES_MAX + 1);
	for (unsigned i = 0; i < CG_FILES_MAX; i++) {
		path_of(p, "g", i);
		assert_int_equal(cg_files_read(f, p, buf, sizeof(buf)), 0);
	}
	before = open_below("g");
	assert_int_equal(before, CG_FILES_MAX);
	probe = open("/dev/null", O_RDONLY); /* the lowest free descriptor: no more after it */
	assert_true(probe >= 0);
	close(probe);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)probe;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_true(open("/dev/null", O_RDONLY) < 0 && errno == EMFILE);
	path_of(p, "g", CG_FILES_MAX);
	r = (int)cg_files_read(f, p, buf, sizeof(buf));
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, 0);
	assert_true(open_below("g") <= before - CG_FILES_MAX / 4 + 1);
}

struct race {
	struct cg_files *f;
	atomic_bool stop;
	unsigned forgets;
};

static void *forgetter(void *arg)
{
	struct race *r = arg;
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/d", base);
	while (!atomic_load(&r->stop)) {
		cg_files_forget(r->f, dir);
		r->forgets++;
	}
	return NULL;
}

/* one thread reads while another forgets the directory over and over:
 * every read returns its file's own text (a descriptor closed under a
 * reader and reused for another file would show) */
static void test_threads(void **state)
{
	struct race r = { .f = *state };
	char p[PATH_MAX], buf[32], want[32];
	pthread_t t;

	make_files("d", 8);
	for (unsigned i = 0; i < 8; i++) {
		path_of(p, "d", i);
		snprintf(want, sizeof(want), "file %u", i);
		assert_int_equal(file_write_str(p, want), 0);
	}
	assert_int_equal(pthread_create(&t, NULL, forgetter, &r), 0);
	for (unsigned n = 0; n < 40000; n++) {
		unsigned i = n % 8;
		path_of(p, "d", i);
		snprintf(want, sizeof(want), "file %u", i);
		assert_true(cg_files_read(r.f, p, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, want);
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	printf("# 40000 reads against %u forgets\n", r.forgets);
	assert_true(r.forgets > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_churn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_descriptors, setup, teardown),
	};

	return cmocka_run_group_tests_name("cgroup files kept open", tests, NULL, NULL);
}
