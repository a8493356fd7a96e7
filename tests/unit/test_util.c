/* unit tests: value parsers, key validation, atomic files */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hmap.h"
#include "sd_scope.h"
#include "util.h"

static void test_sizes(void **state)
{
	uint64_t v;

	assert_int_equal(parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(parse_size("512K", &v), 0);
	assert_int_equal(v, 512 * 1024);
	assert_int_equal(parse_size("4G", &v), 0);
	assert_int_equal(v, 4ULL << 30);
	assert_int_equal(parse_size("max", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_size("2Q", &v), -EINVAL);
	assert_int_equal(parse_size("", &v), -EINVAL);
	assert_int_equal(parse_size("-1", &v), -EINVAL);
	assert_int_equal(parse_size(" 4M", &v), -EINVAL);
	assert_int_equal(parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(parse_size("99999999999T", &v), -ERANGE);
}

static void test_durations(void **state)
{
	uint64_t v;

	assert_int_equal(parse_duration_ms("250ms", &v), 0);
	assert_int_equal(v, 250);
	assert_int_equal(parse_duration_ms("30s", &v), 0);
	assert_int_equal(v, 30000);
	assert_int_equal(parse_duration_ms("10m", &v), 0);
	assert_int_equal(v, 600000);
	assert_int_equal(parse_duration_ms("1h", &v), 0);
	assert_int_equal(v, 3600000);
	assert_int_equal(parse_duration_ms("5", &v), 0);
	assert_int_equal(v, 5000);
	assert_int_equal(parse_duration_ms("5d", &v), -EINVAL);
	assert_int_equal(parse_duration_ms("s", &v), -EINVAL);
}

static void test_bools_uints(void **state)
{
	bool b;
	uint64_t v;

	assert_int_equal(parse_bool("yes", &b), 0);
	assert_true(b);
	assert_int_equal(parse_bool("Off", &b), 0);
	assert_false(b);
	assert_int_equal(parse_bool("maybe", &b), -EINVAL);
	assert_int_equal(parse_uint("20", 1, 100, &v), 0);
	assert_int_equal(v, 20);
	assert_int_equal(parse_uint("0", 1, 100, &v), -ERANGE);
	assert_int_equal(parse_uint("20x", 1, 100, &v), -EINVAL);
}

static void test_keys(void **state)
{
	static const struct {
		const char *key;
		const char *reason; /* NULL: valid */
	} cases[] = {
		{ "web", NULL },
		{ "slurm.4711", NULL },
		{ "nightly-etl", NULL },
		{ "a:b@c+d=e,f_g", NULL },
		{ "", "key is empty" },
		{ ".", "key may not be \".\" or \"..\"" },
		{ "..", "key may not be \".\" or \"..\"" },
		{ ".hidden", "key may not start with '.' or '-'" },
		{ "-rf", "key may not start with '.' or '-'" },
		{ "a/b", "key may not contain '/'" },
		{ "/", "key may not contain '/'" },
		{ "a\nb", "key may not contain control characters" },
		{ "tab\there", "key may not contain control characters" },
		{ "a b", "key may contain only letters, digits and . _ : @ + = , -" },
		{ "caf\xc3\xa9", "key may contain only letters, digits and . _ : @ + = , -" },
	};
	char longkey[KEY_MAX + 2];
	const char *why;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		why = NULL;
		if (!cases[i].reason) {
			assert_int_equal(key_validate(cases[i].key, &why), 0);
			continue;
		}
		assert_int_equal(key_validate(cases[i].key, &why), -EINVAL);
		assert_string_equal(why, cases[i].reason);
	}
	memset(longkey, 'k', KEY_MAX);
	longkey[KEY_MAX] = '\0';
	assert_int_equal(key_validate(longkey, &why), 0);
	longkey[KEY_MAX] = 'k';
	longkey[KEY_MAX + 1] = '\0';
	assert_int_equal(key_validate(longkey, &why), -EINVAL);
	assert_string_equal(why, "key is longer than 128 bytes");
}

static void test_atomic_file(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], buf[64];
	const char *t = getenv("TMPDIR");

	assert_true(snprintf(dir, sizeof(dir), "%s/cgpool-util-XXXXXX", t && *t ? t : "/tmp") < (int)sizeof(dir));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a/b/state", dir);
	assert_int_equal(file_write_atomic(path, "x", 1, 0644), -ENOENT);
	snprintf(path, sizeof(path), "%s/a/b", dir);
	assert_int_equal(mkdir_p(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/a/b/state", dir);
	assert_int_equal(file_write_atomic(path, "first", 5, 0644), 0);
	assert_int_equal(file_write_atomic(path, "second", 6, 0644), 0);
	assert_int_equal(file_read(path, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "second");
	assert_int_equal(file_read(path, buf, 4), 3); /* truncated, still terminated */
	assert_string_equal(buf, "sec");
	assert_int_equal(file_read_once(path, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "second");
	assert_int_equal(file_read_once(path, buf, 4), 3);
	assert_string_equal(buf, "sec");
	unlink(path);
	assert_int_equal(file_read_once(path, buf, sizeof(buf)), -ENOENT);
	/* /proc/PID/cgroup: the whole text in the one read */
	char whole[4096], once[4096];
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)getpid());
	assert_true(file_read(path, whole, sizeof(whole)) > 0);
	assert_int_equal(file_read_once(path, once, sizeof(once)), (ssize_t)strlen(whole));
	assert_string_equal(once, whole);
	snprintf(path, sizeof(path), "rm -r %s", dir);
	assert_int_equal(system(path), 0);
}

/* against a plain array: inserts, replacements and deletions in any order
 * leave exactly the live entries findable (backward-shift deletion) */
static void test_hmap(void **state)
{
	enum { N = 20000 };
	static char names[N][16];
	static void *ref[N];
	struct hmap ms, mi;
	unsigned seed = 7;

	hmap_init(&ms, true);
	hmap_init(&mi, false);
	for (int i = 0; i < N; i++)
		snprintf(names[i], sizeof(names[i]), "key-%d", i);
	for (int round = 0; round < 4 * N; round++) {
		int i = (int)(rand_r(&seed) % N);
		void *v = &names[i][round % 4];
		if (rand_r(&seed) % 3) {
			assert_int_equal(hmap_put(&ms, HMAP_STR(names[i]), v), 0);
			assert_int_equal(hmap_put(&mi, (uintptr_t)i * 4096, v), 0);
			ref[i] = v;
		} else {
			assert_ptr_equal(hmap_del(&ms, HMAP_STR(names[i])), ref[i]);
			assert_ptr_equal(hmap_del(&mi, (uintptr_t)i * 4096), ref[i]);
			ref[i] = NULL;
		}
	}
	size_t live = 0;
	for (int i = 0; i < N; i++) {
		char copy[16];
		memcpy(copy, names[i], sizeof(copy)); /* equal strings, another pointer */
		assert_ptr_equal(hmap_get(&ms, HMAP_STR(copy)), ref[i]);
		assert_ptr_equal(hmap_get(&mi, (uintptr_t)i * 4096), ref[i]);
		live += ref[i] != NULL;
	}
	assert_int_equal(ms.n, live);
	assert_int_equal(mi.n, live);
	assert_null(hmap_get(&ms, HMAP_STR("absent")));
	assert_int_equal(hmap_put(&ms, HMAP_STR("x"), NULL), -EINVAL);
	hmap_fini(&ms);
	hmap_fini(&mi);
	assert_null(hmap_get(&ms, HMAP_STR(names[0])));
}


/* the slots' scope beside the daemon's service, in its slice */
static void test_scope_names(void **state)
{
	char path[256], unit[128], slice[128];

	assert_int_equal(sd_scope_names("0::/system.slice/cgpoold.service\n", path, sizeof(path), unit, sizeof(unit),
					slice, sizeof(slice)), 0);
	assert_string_equal(path, "/system.slice/cgpoold-slots.scope");
	assert_string_equal(unit, "cgpoold-slots.scope");
	assert_string_equal(slice, "system.slice");
	/* the leaf an older layout left the daemon in */
	assert_int_equal(sd_scope_names("0::/system.slice/cgpoold.service/cgpoold\n", path, sizeof(path), unit,
					sizeof(unit), slice, sizeof(slice)), 0);
	assert_string_equal(path, "/system.slice/cgpoold-slots.scope");
	assert_int_equal(sd_scope_names("0::/a.slice/b.slice/pool@x.service\n", path, sizeof(path), unit, sizeof(unit),
					slice, sizeof(slice)), 0);
	assert_string_equal(path, "/a.slice/b.slice/pool@x-slots.scope");
	assert_string_equal(slice, "b.slice");
	/* not a service, not pure v2, not in a slice */
	assert_int_equal(sd_scope_names("0::/user.slice/session-1.scope\n", path, sizeof(path), unit, sizeof(unit),
					slice, sizeof(slice)), -ENOENT);
	assert_int_equal(sd_scope_names("4:memory:/x\n0::/system.slice/cgpoold.service\n", path, sizeof(path), unit,
					sizeof(unit), slice, sizeof(slice)), -ENOENT);
	assert_int_equal(sd_scope_names("0::/tmp/cgpoold.service\n", path, sizeof(path), unit, sizeof(unit), slice,
					sizeof(slice)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),      cmocka_unit_test(test_durations),   cmocka_unit_test(test_bools_uints),
		cmocka_unit_test(test_keys),       cmocka_unit_test(test_atomic_file), cmocka_unit_test(test_hmap),
		cmocka_unit_test(test_scope_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
