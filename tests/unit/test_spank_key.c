/* test_spank_key.c - the Slurm plug-in's arguments, keys and placement check */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spank_key.h"

static void test_args(void **state)
{
	char *good[] = { "socket=/run/x.sock", "key=job.%u.%j", "class=batch", "release=no", "timeout=2500", "swap=30", "cpuset=yes",
			 "devices=yes" };
	char *bad[][1] = { { "socket=" }, { "release=maybe" }, { "timeout=5" }, { "key=slurm.%q" }, { "colour=red" },
			   /* keys that cannot tell two jobs apart, or that a user's environment steers */
			   { "key=slurm.const" }, { "key=slurm.%u" }, { "key=slurm.%J" }, { "key=s.%j.%A_%a" },
			   { "key=slurm.%%j" }, { "swap=-1" }, { "swap=10001" }, { "swap=5%" }, { "cpuset=1" },
			   { "devices=on" } };
	struct spank_args a;
	char err[256];

	assert_int_equal(spank_args_parse(0, NULL, &a, err, sizeof(err)), 0);
	assert_string_equal(a.pattern, "slurm.%j");
	assert_true(a.release);
	assert_int_equal(a.timeout_ms, 5000);
	assert_string_equal(a.socket, "");
	assert_int_equal(a.swap_pct, -1);
	assert_false(a.cpuset);
	assert_false(a.devices);
	assert_int_equal(spank_args_parse(8, good, &a, err, sizeof(err)), 0);
	assert_true(a.cpuset);
	assert_true(a.devices);
	assert_int_equal(a.swap_pct, 30);
	assert_string_equal(a.socket, "/run/x.sock");
	assert_string_equal(a.pattern, "job.%u.%j");
	assert_string_equal(a.class_name, "batch");
	assert_false(a.release);
	assert_int_equal(a.timeout_ms, 2500);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(spank_args_parse(1, bad[i], &a, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, i == 3 || (i >= 5 && i <= 9) ? "pattern" : bad[i][0])); /* names what is wrong */
		if (i == 5 || i == 6 || i == 9)
			assert_non_null(strstr(err, "%j is needed"));
		if (i == 7 || i == 8)
			assert_non_null(strstr(err, "environment"));
	}
}

/* key patterns whose keys two jobs, or a job and a user, could share are
 * refused at load, each with its reason; the others are taken */
static void test_pattern_apart(void **state)
{
	static const char *const good[] = {
		"key=" SPANK_DEFAULT_PATTERN, "key=slurm.%j_%u", "key=slurm.job%j", "key=%j", "key=%j.%u",
		"key=slurm.%j-%u", "key=job.%u.%j", "key=slurm%j.%u", "key=slurm.%j.", "key=slurm.0%j.x",
		"key=user.%j", "key=user%j.x",
	};
	static const struct {
		const char *arg, *why[2];
	} bad[] = {
		/* another user's named key: uid J with --cgpool-key=U holds slurm.J.U */
		{ "key=slurm.%j.%u", { "a job's key can be slurm.1.1, which is also the key uid 1 gets with --cgpool-key=1" } },
		{ "key=slurm.%u.%j", { "slurm.1.1, which is also the key uid 1 gets with --cgpool-key=1" } },
		{ "key=slurm.%j.x", { "slurm.1.x, which is also the key uid 1 gets with --cgpool-key=x" } },
		{ "key=slurm.%j.%j", { "slurm.1.1, which is also" } },
		{ "key=slurm.1%j.%u", { "slurm.11.1, which is also the key uid 11 gets with --cgpool-key=1" } },
		{ "key=slurm.%j.a_%u", { "slurm.1.a_1, which is also the key uid 1 gets with --cgpool-key=a_1" } },
		/* a key any user may bind under cgpoold's default user_keys */
		{ "key=user.%j.x", { "user.1.x, which uid 1 may also bind by itself", "user_keys (user.%u.*)" } },
		{ "key=user.%u.%j", { "user.1.1, which uid 1 may also bind" } },
		/* two jobs: a number that runs into a digit */
		{ "key=slurm.%j%u", { "a %j or %u followed by a digit or another %j or %u", "slurm.%j_%u" } },
		{ "key=s.%u%j", { "followed by a digit or another %j or %u" } },
		{ "key=slurm.%j0", { "followed by a digit" } },
		{ "key=%j1-%u", { "followed by a digit" } },
	};
	struct spank_args a;
	char err[1024];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *av[] = { (char *)good[i] };
		err[0] = '\0';
		if (spank_args_parse(1, av, &a, err, sizeof(err)) != 0)
			fail_msg("%s refused: %s", good[i], err);
		assert_string_equal(a.pattern, good[i] + 4);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *av[] = { (char *)bad[i].arg };
		err[0] = '\0';
		assert_int_equal(spank_args_parse(1, av, &a, err, sizeof(err)), -EINVAL);
		for (size_t k = 0; k < 2 && bad[i].why[k]; k++)
			if (!strstr(err, bad[i].why[k]))
				fail_msg("%s: \"%s\" not in: %s", bad[i].arg, bad[i].why[k], err);
		assert_non_null(strstr(err, bad[i].arg + 4)); /* names the pattern */
	}
}

/* the patterns conf/slurm ships: none names a key= (the default) */
static void test_shipped_patterns(void **state)
{
	static const char *const setups[] = { "alone", "beside", "v2" };
	const char *top = getenv("top_srcdir"); /* make check's */
	char path[4096], line[1024], err[1024], *words[16];
	struct spank_args a;

	for (size_t i = 0; i < sizeof(setups) / sizeof(setups[0]); i++) {
		FILE *f;
		int n = 0, lines = 0;
		snprintf(path, sizeof(path), "%s/conf/slurm/%s/plugstack.conf", top ? top : ".", setups[i]);
		f = fopen(path, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			char *save = NULL, *w;
			if (line[0] == '#')
				continue;
			n = 0;
			for (w = strtok_r(line, " \t\n", &save); w && n < 16; w = strtok_r(NULL, " \t\n", &save))
				words[n++] = w;
			if (n < 2)
				continue;
			lines++;
			err[0] = '\0';
			if (spank_args_parse(n - 2, words + 2, &a, err, sizeof(err)) != 0)
				fail_msg("%s: %s", path, err);
		}
		fclose(f);
		assert_int_equal(lines, 1);
	}
}

static void test_keys(void **state)
{
	struct spank_job job = { 4711, 1000 };
	char key[SPANK_KEY_MAX + 1], tiny[8];
	char longname[SPANK_KEY_MAX + 2];

	assert_int_equal(spank_key_build(SPANK_DEFAULT_PATTERN, NULL, &job, key, sizeof(key)), 0);
	assert_string_equal(key, "slurm.4711");
	assert_int_equal(spank_key_build("u%u-j%j-%%", NULL, &job, key, sizeof(key)), 0);
	assert_string_equal(key, "u1000-j4711-%");
	assert_int_equal(spank_job_name(&job, key, sizeof(key)), 0);
	assert_string_equal(key, "slurm:4711:1000");
	assert_int_equal(spank_key_build("x%", NULL, &job, key, sizeof(key)), -EINVAL);
	assert_int_equal(spank_key_build(SPANK_DEFAULT_PATTERN, NULL, &job, tiny, sizeof(tiny)), -ENAMETOOLONG);
	/* a named key is per user, whatever the pattern */
	assert_int_equal(spank_key_build("other.%j", "svc", &job, key, sizeof(key)), 0);
	assert_string_equal(key, "slurm.1000.svc");
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(spank_key_build(SPANK_DEFAULT_PATTERN, longname, &job, key, sizeof(key)), -ENAMETOOLONG);
}

static void test_names(void **state)
{
	const char *why;
	char n65[66];

	assert_int_equal(spank_name_check("svc", &why), 0);
	assert_int_equal(spank_name_check("web-1.blue_2", &why), 0);
	assert_int_equal(spank_name_check("", &why), -EINVAL);
	assert_int_equal(spank_name_check("../x", &why), -EINVAL);
	assert_int_equal(spank_name_check(".hidden", &why), -EINVAL);
	assert_int_equal(spank_name_check("-x", &why), -EINVAL);
	assert_int_equal(spank_name_check("a b", &why), -EINVAL);
	assert_int_equal(spank_name_check("a/b", &why), -EINVAL);
	memset(n65, 'a', 65);
	n65[65] = '\0';
	assert_int_equal(spank_name_check(n65, &why), -EINVAL);
	n65[64] = '\0';
	assert_int_equal(spank_name_check(n65, &why), 0);
}

static void test_in_slot(void **state)
{
	const char *hybrid = "12:pids:/a/slot-3\n4:memory:/process_api/x/cgpool-t/slot-3\n0::/process_api/x\n";
	const char *v2 = "0::/system.slice/cgpoold.service/slot-1\n";
	const char *moved = "4:memory:/slurm/uid_0/job_5/step_0/task_0\n0::/\n";
	const char *joined = "7:cpu,memory:/pool/slot-2\n";

	assert_true(spank_in_slot(hybrid, "/sys/fs/cgroup/memory/process_api/x/cgpool-t/slot-3"));
	assert_false(spank_in_slot(hybrid, "/sys/fs/cgroup/memory/process_api/x/cgpool-t/slot-13"));
	assert_true(spank_in_slot(v2, "/sys/fs/cgroup/system.slice/cgpoold.service/slot-1"));
	assert_false(spank_in_slot(v2, "/sys/fs/cgroup/system.slice/cgpoold.service/slot-2"));
	assert_false(spank_in_slot(moved, "/sys/fs/cgroup/memory/pool/slot-0"));
	assert_true(spank_in_slot(joined, "/sys/fs/cgroup/cpu,memory/pool/slot-2"));
	assert_false(spank_in_slot("0::/\n", "/sys/fs/cgroup/"));
	assert_false(spank_in_slot("garbage", "/sys/fs/cgroup/x"));
}

/* Slurm's own settings that would put tasks in memory cgroups of Slurm's */
static void test_conf_conflict(void **state)
{
	const char *alone = "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/affinity,task/cgpool\n"
			    "JobAcctGatherType=jobacct_gather/linux\n";
	const char *beside = "# TaskPlugin=task/cgroup\nProctrackType=proctrack/cgroup\n"
			     "TaskPlugin=task/cgroup,task/affinity,task/cgpool  JobAcctGatherType=jobacct_gather/linux\n";
	const char *beside_cg = "ConstrainCores=yes\nConstrainDevices=yes\nConstrainRAMSpace=no\nConstrainSwapSpace=no\n";
	char why[512] = "";

	assert_int_equal(spank_conf_conflict(alone, "ConstrainRAMSpace=yes\n", why, sizeof(why)), 0);
	assert_int_equal(spank_conf_conflict(beside, beside_cg, why, sizeof(why)), 0);
	assert_int_equal(spank_conf_conflict(NULL, NULL, why, sizeof(why)), 0);
	assert_int_equal(spank_conf_conflict(beside, NULL, why, sizeof(why)), 0);
	/* the last value counts, keys in any case, a comment is none */
	assert_int_equal(spank_conf_conflict(beside, "ConstrainRAMSpace=no\nconstrainramspace=YES\n", why, sizeof(why)), 1);
	assert_non_null(strstr(why, "ConstrainRAMSpace=yes"));
	assert_int_equal(spank_conf_conflict(beside, "ConstrainRAMSpace=yes\nConstrainRAMSpace=no # yes\n", why,
					     sizeof(why)), 0);
	assert_int_equal(spank_conf_conflict("TaskPlugin=cgroup", "ConstrainSwapSpace=yes", why, sizeof(why)), 1);
	assert_non_null(strstr(why, "ConstrainSwapSpace=yes"));
	assert_int_equal(spank_conf_conflict("JobAcctGatherType=jobacct_gather/cgroup\n", NULL, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "jobacct_gather/linux"));
	/* another plug-in whose name starts the same is not task/cgroup */
	assert_int_equal(spank_conf_conflict("TaskPlugin=task/cgroupx", "ConstrainRAMSpace=yes", why, sizeof(why)), 0);
}

/* devices=yes: the node's GRES devices not in the job's list, consecutive
 * minors merged */
static void test_devices_deny(void **state)
{
	struct spank_dev devs[] = { { 0, 'c', 195, 0 }, { 1, 'c', 195, 1 }, { 2, 'c', 195, 2 }, { 3, 'c', 195, 3 },
				    { 4, 'c', 195, 5 }, { 5, 'b', 8, SPANK_DEV_ANY } };
	char out[128];

	assert_int_equal(spank_devices_deny(devs, 6, "1", out, sizeof(out)), 0);
	assert_string_equal(out, "b 8:*,c 195:0,c 195:2-3,c 195:5");
	assert_int_equal(spank_devices_deny(devs, 6, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "b 8:*,c 195:0-3,c 195:5");
	assert_int_equal(spank_devices_deny(devs, 6, "0,1,2,3,4,5", out, sizeof(out)), 0);
	assert_string_equal(out, "none");
	assert_int_equal(spank_devices_deny(devs, 0, "", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* index 10 is no device of the node: it allows nothing */
	assert_int_equal(spank_devices_deny(devs, 4, "10", out, sizeof(out)), 0);
	assert_string_equal(out, "c 195:0-3");
	assert_int_equal(spank_devices_deny(devs, 4, "0,x", out, sizeof(out)), -EINVAL);
	assert_int_equal(spank_devices_deny(devs, 4, "-1", out, sizeof(out)), -EINVAL);
	assert_int_equal(spank_devices_deny(devs, 6, "", out, 8), -ENOSPC);
	assert_true(spank_list_has("mps,gpu", "gpu"));
	assert_false(spank_list_has("gpux", "gpu"));
	assert_false(spank_list_has(NULL, "gpu"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_pattern_apart),
		cmocka_unit_test(test_shipped_patterns),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_in_slot),
		cmocka_unit_test(test_conf_conflict),
		cmocka_unit_test(test_devices_deny),
	};

	return cmocka_run_group_tests_name("the Slurm plug-in's decisions", tests, NULL, NULL);
}
