/* test_spank_plugin.c - the Slurm plug-in's callbacks against a fake SPANK
 * and a fake client library: the key and job of a step, one Attach with all
 * of its tasks at the last one, the extern step, failures told to the tasks,
 * the OOM line, the setup check at slurmd's start, cpuset=yes (the job's
 * cores mapped by slurmstepd's xcpuinfo_abs_to_mac, which this program
 * exports in its stead, and each task's CPU binding set again after the
 * move), devices=yes (the node's GRES devices from slurmstepd's
 * gres_g_get_devices and the job's GPUs from the step's environment, both
 * faked here).
 *
 * The plug-in keeps a step's state in statics (slurmstepd runs one step), so
 * every scenario runs in a child process; what the fakes saw is kept in a
 * shared page the test reads after the child exits. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "cgpool.h"
#include "slurm_release.h"

/* the plug-in's callbacks (cgpool_spank.c) */
int slurm_spank_init(spank_t sp, int ac, char **av);
int slurm_spank_user_init(spank_t sp, int ac, char **av);
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av);
int slurm_spank_task_init(spank_t sp, int ac, char **av);
int slurm_spank_task_exit(spank_t sp, int ac, char **av);

/* what the fakes answer (set in the child before the callbacks) */
static struct {
	spank_context_t ctx;
	uint32_t job_id, step_id, ntasks;
	uid_t uid;
	int task_id;
	pid_t task_pid;
	uint64_t mem_mb;
	int connect_rc, attach_rc; /* 0 or -errno */
	const char *refusal;      /* the daemon's message with -EREMOTEIO */
	char slot_path[4096 + 64];
	struct spank_option *option;
	const char *cores;        /* S_JOB_ALLOC_CORES; NULL: not known */
	bool map_fails;           /* xcpuinfo_abs_to_mac fails */
	bool attach_rebinds;      /* the Attach binds the caller to CPU 0, as a move did before 6.2 */
	int ndevs;                /* gres_g_get_devices: /dev/nvidia0..N-1, char 195:0..N-1 */
	const char *env[4];       /* the step's environment for spank_getenv: "NAME=value" */
} fake;

/* what they saw (shared with the parent) */
struct seen {
	int connects, attaches;
	char key[160], job[64], limit[64], limit2[64], limit3[64];
	size_t nlimits;
	size_t npids;
	pid_t pids[8], hold;
	char log[8192];   /* slurm_error and slurm_info lines, "E: " / "I: " */
	char stderr_text[1024];
	int rc[8];        /* callbacks' results, by scenario step */
	char oom_env[8];
};
static struct seen *seen;

static void logv(const char *level, const char *fmt, va_list ap)
{
	size_t n = strlen(seen->log);

	if (n + 4 >= sizeof(seen->log))
		return;
	n += (size_t)snprintf(seen->log + n, sizeof(seen->log) - n, "%s", level);
	vsnprintf(seen->log + n, sizeof(seen->log) - n, fmt, ap);
	n = strlen(seen->log);
	if (n + 1 < sizeof(seen->log))
		strcat(seen->log, "\n");
}

void slurm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	logv("E: ", fmt, ap);
	va_end(ap);
}

void slurm_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	logv("I: ", fmt, ap);
	va_end(ap);
}

spank_context_t spank_context(void)
{
	return fake.ctx;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	fake.option = opt;
	return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	va_list ap;
	spank_err_t rc = ESPANK_SUCCESS;

	va_start(ap, item);
	switch (item) {
	case S_JOB_ID:
		*va_arg(ap, uint32_t *) = fake.job_id;
		break;
	case S_JOB_STEPID:
		*va_arg(ap, uint32_t *) = fake.step_id;
		break;
	case S_JOB_UID:
		*va_arg(ap, uid_t *) = fake.uid;
		break;
	case S_TASK_PID:
		*va_arg(ap, pid_t *) = fake.task_pid;
		break;
	case S_TASK_ID:
		*va_arg(ap, int *) = fake.task_id;
		break;
	case S_JOB_LOCAL_TASK_COUNT:
		*va_arg(ap, uint32_t *) = fake.ntasks;
		break;
	case S_JOB_ALLOC_MEM:
		*va_arg(ap, uint64_t *) = fake.mem_mb;
		break;
	case S_JOB_ALLOC_CORES:
		*va_arg(ap, char **) = (char *)fake.cores;
		if (!fake.cores)
			rc = ESPANK_BAD_ARG;
		break;
	default:
		rc = ESPANK_BAD_ARG;
	}
	va_end(ap);
	return rc;
}

/* slurmstepd's own, found by the plug-in through dlsym: a node whose
 * abstract cores 0-1 are CPUs 0,2 (two threads a core, numbered apart) */
int xcpuinfo_abs_to_mac(char *lrange, char **prange);
int xcpuinfo_abs_to_mac(char *lrange, char **prange)
{
	if (fake.map_fails || strcmp(lrange, "0-1") != 0)
		return -1;
	*prange = strdup("0,2");
	return *prange ? 0 : -1;
}

/* slurmstepd's gres_g_get_devices and list functions, and its slurm_conf:
 * a node whose gres.conf names fake.ndevs GPUs */
struct fake_dev {
	int index, alloc;
	uint32_t major, minor;
	int type;
	int dev_num;
	char *path, *unique_id;
};
static struct fake_dev devs[4];
static struct {
	int next, n;
} fake_list;
slurm_conf_t slurm_conf;

void *gres_g_get_devices(void *gres_list, bool is_job, uint16_t accel_bind_type, char *tres_bind_str,
			 int local_proc_id, void *step);
void *gres_g_get_devices(void *gres_list, bool is_job, uint16_t accel_bind_type, char *tres_bind_str,
			 int local_proc_id, void *step)
{
	if (gres_list || fake.ndevs == 0)
		return NULL; /* asked for the node's devices only */
	for (int i = 0; i < fake.ndevs; i++)
		devs[i] = (struct fake_dev){ i, 0, 195, (uint32_t)i, 2, i, NULL, NULL };
	fake_list.n = fake.ndevs;
	return &fake_list;
}

slurm_list_itr_t slurm_list_iterator_create(slurm_list_t l)
{
	fake_list.next = 0;
	return (slurm_list_itr_t)l;
}

void *slurm_list_next(slurm_list_itr_t it)
{
	return fake_list.next < fake_list.n ? &devs[fake_list.next++] : NULL;
}

void slurm_list_iterator_destroy(slurm_list_itr_t it)
{
}

void slurm_list_destroy(slurm_list_t l)
{
	fake_list.n = 0;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	size_t n = strlen(var);

	for (size_t i = 0; i < 4 && fake.env[i]; i++)
		if (strncmp(fake.env[i], var, n) == 0 && fake.env[i][n] == '=') {
			snprintf(buf, (size_t)len, "%s", fake.env[i] + n + 1);
			return ESPANK_SUCCESS;
		}
	return ESPANK_ENV_NOEXIST;
}

void slurm_xfree(void **item);
void slurm_xfree(void **item)
{
	free(*item);
	*item = NULL;
}

struct cgpool {
	int unused;
};

int cgpool_connect_timeout(const char *path, unsigned timeout_ms, struct cgpool **out)
{
	seen->connects++;
	*out = NULL;
	if (fake.connect_rc < 0)
		return fake.connect_rc;
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void cgpool_close(struct cgpool *c)
{
	free(c);
}

const char *cgpool_last_error(const struct cgpool *c, const char **params_json, const char **message)
{
	if (message)
		*message = fake.refusal;
	return "io.cgpool.Manager.KeyBusy";
}

int cgpool_attach_job(struct cgpool *c, const char *key, const pid_t *pids, size_t npids, const char *class_name,
		      const struct cgpool_limit *limits, size_t nlimits, const struct cgpool_job *job, char **slot_json)
{
	seen->attaches++;
	snprintf(seen->key, sizeof(seen->key), "%s", key);
	snprintf(seen->job, sizeof(seen->job), "%s", job && job->id ? job->id : "");
	seen->hold = job ? job->hold : 0;
	seen->npids = npids;
	for (size_t i = 0; i < npids && i < 8; i++)
		seen->pids[i] = pids[i];
	seen->nlimits = nlimits;
	if (nlimits)
		snprintf(seen->limit, sizeof(seen->limit), "%s=%s", limits[0].name, limits[0].value);
	if (nlimits > 1)
		snprintf(seen->limit2, sizeof(seen->limit2), "%s=%s", limits[1].name, limits[1].value);
	if (nlimits > 2)
		snprintf(seen->limit3, sizeof(seen->limit3), "%s=%s", limits[2].name, limits[2].value);
	if (fake.attach_rebinds) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(0, &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	if (fake.attach_rc < 0)
		return fake.attach_rc;
	if (slot_json && asprintf(slot_json, "{\"key\":\"%s\",\"path\":\"%s\"}", key, fake.slot_path) < 0)
		return -ENOMEM;
	return 0;
}

/* a remote (slurmstepd) context for job, uid, step */
static void step_of(uint32_t job, uid_t uid, uint32_t step, uint32_t ntasks)
{
	fake.ctx = S_CTX_REMOTE;
	fake.job_id = job;
	fake.uid = uid;
	fake.step_id = step;
	fake.ntasks = ntasks;
	fake.mem_mb = 512;
}

/* post_fork for every local task, each with pid (the child's own pid, whose
 * parent, the test, stands for slurmstepd) */
static int post_fork_all(void)
{
	int rc = 0;

	for (uint32_t i = 0; i < fake.ntasks; i++) {
		fake.task_id = (int)i;
		fake.task_pid = getpid();
		rc |= slurm_spank_task_post_fork(NULL, 0, NULL);
	}
	return rc;
}

/* the memory cgroup of this process as in /proc/self/cgroup ("" unknown) */
static void own_cgroup(char *out, size_t len)
{
	char buf[4096], *line, *save = NULL;
	FILE *f = fopen("/proc/self/cgroup", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	out[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		if (strncmp(c1 + 1, "memory:", 7) == 0 || (!out[0] && strncmp(line, "0::", 3) == 0))
			snprintf(out, len, "%s", c2 + 1);
	}
}

/* run scenario in a child; the parent gets what it saw */
static void run(void (*scenario)(void))
{
	pid_t pid;
	int status;

	memset(seen, 0, sizeof(*seen));
	memset(&fake, 0, sizeof(fake));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		scenario();
		fflush(NULL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- a step of two tasks: one Attach with both, at the last one */
static void two_tasks(void)
{
	step_of(5, 1000, 0, 2);
	seen->rc[0] = slurm_spank_init(NULL, 0, NULL);
	fake.task_id = 0;
	fake.task_pid = getpid();
	seen->rc[1] = slurm_spank_task_post_fork(NULL, 0, NULL);
	seen->rc[2] = seen->attaches; /* none before the last task */
	fake.task_id = 1;
	seen->rc[3] = slurm_spank_task_post_fork(NULL, 0, NULL);
	seen->rc[4] = slurm_spank_task_init(NULL, 0, NULL);
}

static void test_step(void **state)
{
	run(two_tasks);
	assert_int_equal(seen->rc[0], 0);
	assert_int_equal(seen->rc[1], 0);
	assert_int_equal(seen->rc[2], 0);
	assert_int_equal(seen->rc[3], 0);
	assert_int_equal(seen->rc[4], 0); /* placed: the task runs */
	assert_int_equal(seen->connects, 1);
	assert_int_equal(seen->attaches, 1);
	assert_string_equal(seen->key, "slurm.5");
	assert_string_equal(seen->job, "slurm:5:1000");
	assert_int_equal(seen->npids, 2);
	assert_int_equal(seen->hold, getpid()); /* the task's parent: its slurmstepd */
	assert_string_equal(seen->limit, "memory.max=512M");
	assert_int_equal(seen->nlimits, 1); /* no swap= argument: no swap limit */
}

/* ---- the limit of tasks a step: CGPOOL_MAX_PIDS in one Attach; one more
 * and the step fails before slurmstepd forks a task (user_init), every
 * task with the reason, none placed */
static int stderr_to_file(char *path);
static void stderr_keep(int fd, const char *path);

/* name in $TMPDIR (/tmp when unset); called in a scenario's child, which
 * exits 1 (the test fails) when it does not fit */
static void tmp_path(char *buf, size_t size, const char *name)
{
	const char *t = getenv("TMPDIR");

	if (snprintf(buf, size, "%s/%s", t && *t ? t : "/tmp", name) >= (int)size)
		_exit(1);
}

static void step_at_limit(void)
{
	step_of(20, 1000, 0, CGPOOL_MAX_PIDS);
	slurm_spank_init(NULL, 0, NULL);
	seen->rc[0] = slurm_spank_user_init(NULL, 0, NULL);
	post_fork_all();
	fake.task_id = 0;
	seen->rc[1] = slurm_spank_task_init(NULL, 0, NULL);
}

static void step_over_limit(void)
{
	char path[512];
	int fd;

	tmp_path(path, sizeof(path), "cgpool-spank-XXXXXX");
	step_of(21, 1000, 0, CGPOOL_MAX_PIDS + 1);
	slurm_spank_init(NULL, 0, NULL);
	seen->rc[0] = slurm_spank_user_init(NULL, 0, NULL);
	seen->rc[1] = post_fork_all();
	fd = stderr_to_file(path);
	for (int t = 0; t < 3; t++) {
		fake.task_id = t * CGPOOL_MAX_PIDS / 2; /* 0, the middle, the last */
		seen->rc[2 + t] = slurm_spank_task_init(NULL, 0, NULL);
	}
	stderr_keep(fd, path);
}

/* the count not known before the tasks are forked: the Attach waits for the
 * last one, and one past the limit fails them all */
static void count_unknown_over_limit(void)
{
	char path[512];
	int fd;

	tmp_path(path, sizeof(path), "cgpool-spank-XXXXXX");
	step_of(22, 1000, 0, CGPOOL_MAX_PIDS + 1);
	slurm_spank_init(NULL, 0, NULL);
	fake.ntasks = 0;
	for (uint32_t i = 0; i < CGPOOL_MAX_PIDS + 1; i++) {
		fake.task_id = (int)i;
		fake.task_pid = getpid();
		slurm_spank_task_post_fork(NULL, 0, NULL);
	}
	fd = stderr_to_file(path);
	fake.task_id = 0;
	seen->rc[0] = slurm_spank_task_init(NULL, 0, NULL);
	stderr_keep(fd, path);
}

static void test_task_limit(void **state)
{
	assert_true(CGPOOL_MAX_PIDS >= 4096);
	run(step_at_limit);
	assert_int_equal(seen->rc[0], 0);
	assert_int_equal(seen->attaches, 1);
	assert_int_equal(seen->npids, CGPOOL_MAX_PIDS); /* all of them, in one Attach */
	assert_int_equal(seen->rc[1], 0);
	run(step_over_limit);
	assert_int_equal(seen->rc[0], 0); /* never fails a hook of slurmstepd's: the tasks fail */
	assert_int_equal(seen->rc[1], 0);
	assert_int_equal(seen->connects, 0);
	assert_int_equal(seen->attaches, 0);
	for (int t = 2; t <= 4; t++)
		assert_int_equal(seen->rc[t], -1);
	assert_non_null(strstr(seen->stderr_text, "cgpool: job 21: 4097 tasks of the step on this node, and cgpool "
						  "places at most 4096 (CGPOOL_MAX_PIDS, one Attach)"));
	assert_ptr_equal(strchr(seen->stderr_text, '\n'), strrchr(seen->stderr_text, '\n')); /* task 0 says it */
	assert_non_null(strstr(seen->log, "I: cgpool: job 21: 4097 tasks"));
	run(count_unknown_over_limit);
	assert_int_equal(seen->rc[0], -1);
	assert_non_null(strstr(seen->stderr_text, "cgpool: job 22: more than 4096 tasks of the step"));
}

/* ---- swap=PERCENT: the job's swap beside its memory; no memory, no limits */
static void swap_step(void)
{
	char *av[] = { "swap=25" };

	step_of(12, 1000, 0, 1);
	seen->rc[0] = slurm_spank_init(NULL, 1, av);
	post_fork_all();
}

static void no_memory_step(void)
{
	char *av[] = { "swap=25" };

	step_of(13, 1000, 0, 1);
	fake.mem_mb = 0;
	slurm_spank_init(NULL, 1, av);
	post_fork_all();
}

static void test_swap(void **state)
{
	run(swap_step);
	assert_int_equal(seen->rc[0], 0);
	assert_int_equal(seen->nlimits, 2);
	assert_string_equal(seen->limit, "memory.max=512M");
	assert_string_equal(seen->limit2, "memory.swap.max=128M");
	run(no_memory_step);
	assert_int_equal(seen->attaches, 1);
	assert_int_equal(seen->nlimits, 0);
}

/* ---- cpuset=yes: the job's CPUs as the slot's cpuset.cpus; the tasks'
 * binding as before the move; a job whose cores cannot be mapped fails */
static void cpuset_step(void)
{
	char *av[] = { "cpuset=yes" };
	cpu_set_t all;

	step_of(14, 1000, 0, 1);
	fake.cores = "0-1";
	fake.attach_rebinds = true;
	sched_getaffinity(0, sizeof(all), &all);
	seen->rc[0] = slurm_spank_init(NULL, 1, av);
	post_fork_all();
	seen->rc[1] = slurm_spank_task_init(NULL, 0, NULL);
	cpu_set_t now;
	sched_getaffinity(0, sizeof(now), &now);
	seen->rc[2] = CPU_EQUAL(&all, &now);
	seen->rc[3] = CPU_COUNT(&all);
}

static void cpuset_unmapped(void)
{
	char *av[] = { "cpuset=yes" };

	step_of(15, 1000, 0, 1);
	fake.cores = "0-1";
	fake.map_fails = true;
	slurm_spank_init(NULL, 1, av);
	post_fork_all();
	seen->rc[0] = slurm_spank_task_init(NULL, 0, NULL);
}

static void test_cpuset(void **state)
{
	run(cpuset_step);
	assert_int_equal(seen->rc[0], 0);
	assert_int_equal(seen->rc[1], 0);
	assert_int_equal(seen->nlimits, 2);
	assert_string_equal(seen->limit, "memory.max=512M");
	assert_string_equal(seen->limit2, "cpuset.cpus=0,2");
	if (seen->rc[3] > 1) /* the Attach bound the task to CPU 0: the plug-in put its binding back */
		assert_int_equal(seen->rc[2], 1);
	run(cpuset_unmapped);
	assert_int_equal(seen->attaches, 0);
	assert_int_equal(seen->rc[0], -1);
	assert_non_null(strstr(seen->log, "I: cgpool: job 15: cpuset=yes: the job's cores could not be mapped to CPUs"));
}

/* ---- devices=yes: the node's GPUs that are not the job's, as devices.deny */
static void devices_batch(void)
{
	char *av[] = { "devices=yes" };

	step_of(16, 1000, 0xfffffffbU, 1); /* the batch script */
	fake.ndevs = 3;
	fake.env[0] = "SLURM_STEP_GPUS=0,1,2"; /* the user's: not the batch step's */
	fake.env[1] = "SLURM_JOB_GPUS=1";
	slurm_conf.gres_plugins = "gpu";
	seen->rc[0] = slurm_spank_init(NULL, 1, av);
	post_fork_all();
	seen->rc[1] = slurm_spank_task_init(NULL, 0, NULL);
}

static void devices_step(void)
{
	char *av[] = { "devices=yes" };

	step_of(17, 1000, 0, 1);
	fake.ndevs = 3;
	fake.env[0] = "SLURM_JOB_GPUS=0,1,2"; /* the user's, for a step */
	slurm_conf.gres_plugins = "mps,gpu";
	slurm_spank_init(NULL, 1, av);
	post_fork_all();
	seen->rc[1] = slurm_spank_task_init(NULL, 0, NULL);
}

static void devices_none(void)
{
	char *av[] = { "devices=yes" };

	step_of(18, 1000, 0, 1);
	slurm_spank_init(NULL, 1, av);
	post_fork_all();
	seen->rc[1] = slurm_spank_task_init(NULL, 0, NULL);
}

static void devices_not_gpus(void)
{
	char *av[] = { "devices=yes" };

	step_of(19, 1000, 0, 1);
	fake.ndevs = 2;
	fake.env[0] = "SLURM_STEP_GPUS=0,1";
	slurm_conf.gres_plugins = "nic";
	slurm_spank_init(NULL, 1, av);
	post_fork_all();
	seen->rc[1] = slurm_spank_task_init(NULL, 0, NULL);
}

static void test_devices(void **state)
{
	run(devices_batch);
	assert_int_equal(seen->rc[0], 0);
	assert_int_equal(seen->rc[1], 0);
	assert_int_equal(seen->nlimits, 2);
	assert_string_equal(seen->limit2, "devices.deny=c 195:0,c 195:2");
	/* a step: SLURM_STEP_GPUS, which slurmstepd removed since it has none */
	run(devices_step);
	assert_int_equal(seen->rc[1], 0);
	assert_string_equal(seen->limit2, "devices.deny=c 195:0-2");
	/* no GRES device on the node: nothing to deny */
	run(devices_none);
	assert_int_equal(seen->rc[1], 0);
	assert_int_equal(seen->nlimits, 1);
	/* GRES files that are not GPUs: the variables would be the user's */
	run(devices_not_gpus);
	assert_int_equal(seen->attaches, 0);
	assert_int_equal(seen->rc[1], -1);
	assert_non_null(strstr(seen->log, "I: cgpool: job 19: devices=yes: the node's GRES devices are not GPUs"));
}

/* ---- --cgpool-key: the user's own key, whatever the environment says */
static void named(void)
{
	setenv("SLURM_ARRAY_JOB_ID", "1", 1);
	setenv("SLURM_ARRAY_TASK_ID", "7", 1);
	step_of(6, 1000, 0, 1);
	slurm_spank_init(NULL, 0, NULL);
	seen->rc[0] = fake.option ? fake.option->cb(fake.option->val, "svc", 1) : -99;
	seen->rc[1] = fake.option ? fake.option->cb(fake.option->val, "../x", 1) : -99;
	post_fork_all();
}

static void test_named(void **state)
{
	run(named);
	assert_int_equal(seen->rc[0], 0);
	assert_int_equal(seen->rc[1], -1);
	assert_non_null(strstr(seen->log, "E: cgpool: --cgpool-key ../x"));
	assert_string_equal(seen->key, "slurm.1000.svc");
	assert_string_equal(seen->job, "slurm:6:1000");
}

/* ---- PrologFlags=Contain: the extern step has no task, nothing to place */
static void extern_step(void)
{
	step_of(7, 0, 0xfffffffcU, 1);
	seen->rc[0] = slurm_spank_init(NULL, 0, NULL);
	seen->rc[1] = post_fork_all();
	seen->rc[2] = slurm_spank_task_exit(NULL, 0, NULL);
}

static void test_extern(void **state)
{
	run(extern_step);
	assert_int_equal(seen->rc[0] | seen->rc[1] | seen->rc[2], 0);
	assert_int_equal(seen->connects, 0);
	assert_string_equal(seen->log, "");
}

/* stderr into a file of its own (stderr_keep reads it into seen, then removes it) */
static int stderr_to_file(char *path)
{
	int fd = mkstemp(path);

	dup2(fd, 2);
	return fd;
}

static void stderr_keep(int fd, const char *path)
{
	int n;

	fflush(stderr);
	n = (int)pread(fd, seen->stderr_text, sizeof(seen->stderr_text) - 1, 0);
	seen->stderr_text[n > 0 ? n : 0] = '\0';
	unlink(path);
}

/* ---- the daemon down: one try for the step, every task fails, task 0 says why */
static void daemon_down(void)
{
	char path[512];
	int fd;

	tmp_path(path, sizeof(path), "cgpool-spank-XXXXXX");
	step_of(8, 1000, 0, 3);
	fake.connect_rc = -ECONNREFUSED;
	slurm_spank_init(NULL, 0, NULL);
	seen->rc[0] = post_fork_all();
	fd = stderr_to_file(path);
	for (int t = 0; t < 3; t++) {
		fake.task_id = t;
		seen->rc[1 + t] = slurm_spank_task_init(NULL, 0, NULL);
	}
	stderr_keep(fd, path);
}

static void test_daemon_down(void **state)
{
	run(daemon_down);
	assert_int_equal(seen->rc[0], 0); /* post_fork never fails: that would drain the node */
	assert_int_equal(seen->connects, 1);
	assert_int_equal(seen->attaches, 0);
	for (int t = 1; t <= 3; t++)
		assert_int_equal(seen->rc[t], -1);
	assert_non_null(strstr(seen->stderr_text, "cgpool: job 8: 3 task(s) not placed in the slot of slurm.8"));
	assert_non_null(strstr(seen->stderr_text, "Connection refused (cgpoold at"));
	/* one line in the job's stderr, one in the node's log (info: not srun's stderr) */
	assert_ptr_equal(strchr(seen->stderr_text, '\n'), strrchr(seen->stderr_text, '\n'));
	assert_non_null(strstr(seen->log, "I: cgpool: job 8"));
	assert_null(strstr(seen->log, "E: "));
}

/* ---- the daemon refuses: its reason reaches the job */
static void refused(void)
{
	char path[512];
	int fd;

	tmp_path(path, sizeof(path), "cgpool-spank-XXXXXX");
	step_of(9, 1000, 0, 1);
	fake.attach_rc = -EREMOTEIO;
	fake.refusal = "key slurm.9 runs another job (slurm:4:0)";
	slurm_spank_init(NULL, 0, NULL);
	post_fork_all();
	fd = stderr_to_file(path);
	fake.task_id = 0;
	seen->rc[0] = slurm_spank_task_init(NULL, 0, NULL);
	stderr_keep(fd, path);
}

static void test_refused(void **state)
{
	run(refused);
	assert_int_equal(seen->rc[0], -1);
	assert_non_null(strstr(seen->stderr_text, "runs another job (slurm:4:0)"));
	assert_null(strstr(seen->stderr_text, "cgpoold at")); /* the daemon answered */
}

/* ---- an OOM kill in the slot during the step: Slurm's line, once, and the
 * mark task/cgpool reads */
static void oom(void)
{
	char name[64], top[512], cg[2048], dir[sizeof(top) + sizeof(cg)], file[sizeof(dir) + 32], cmd[sizeof(dir) + 16];
	FILE *f;

	snprintf(name, sizeof(name), "cgpool-spank-%d", (int)getpid());
	tmp_path(top, sizeof(top), name);
	own_cgroup(cg, sizeof(cg));
	snprintf(dir, sizeof(dir), "%s%s", top, cg);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	if (system(cmd) != 0)
		return;
	snprintf(file, sizeof(file), "%s/memory.events", dir);
	f = fopen(file, "w");
	fputs("low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n", f);
	fclose(f);
	step_of(10, 1000, 0, 1);
	snprintf(fake.slot_path, sizeof(fake.slot_path), "%s", dir);
	slurm_spank_init(NULL, 0, NULL);
	post_fork_all();
	seen->rc[0] = slurm_spank_task_exit(NULL, 0, NULL); /* no new kill: nothing */
	f = fopen(file, "w");
	fputs("low 0\nhigh 0\nmax 9\noom 2\noom_kill 3\n", f);
	fclose(f);
	seen->rc[1] = slurm_spank_task_exit(NULL, 0, NULL);
	seen->rc[2] = slurm_spank_task_exit(NULL, 0, NULL); /* told once a step */
	snprintf(seen->oom_env, sizeof(seen->oom_env), "%s", getenv("CGPOOL_SLURM_OOM") ? "1" : "");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd) != 0)
		return;
}

static void test_oom(void **state)
{
	const char *line = "E: Detected 1 oom-kill event(s) in StepId=10.0. Some of your processes";
	char *first;

	run(oom);
	assert_int_equal(seen->rc[0] | seen->rc[1] | seen->rc[2], 0);
	first = strstr(seen->log, line);
	assert_non_null(first);
	assert_null(strstr(first + strlen(line), "Detected"));
	assert_null(strstr(seen->log, "is not in its slot")); /* the slot path is the process's cgroup */
	assert_string_equal(seen->oom_env, "1");
}

/* ---- slurmd's start: a setup that would fight the slot is named once */
static void slurmd_start(void)
{
	char dir[512], path[sizeof(dir) + 16];
	FILE *f;

	tmp_path(dir, sizeof(dir), "cgpool-spank-conf-XXXXXX");
	if (!mkdtemp(dir))
		return;
	snprintf(path, sizeof(path), "%s/slurm.conf", dir);
	f = fopen(path, "w");
	fputs("ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\n", f);
	fclose(f);
	setenv("SLURM_CONF", path, 1);
	snprintf(path, sizeof(path), "%s/cgroup.conf", dir);
	f = fopen(path, "w");
	fputs("ConstrainCores=yes\nConstrainRAMSpace=yes\n", f);
	fclose(f);
	fake.ctx = S_CTX_SLURMD;
	seen->rc[0] = slurm_spank_init(NULL, 0, NULL);
	unlink(path);
	snprintf(path, sizeof(path), "%s/slurm.conf", dir);
	unlink(path);
	rmdir(dir);
}

static void test_slurmd_start(void **state)
{
	run(slurmd_start);
	assert_int_equal(seen->rc[0], 0); /* slurmd starts all the same */
	assert_non_null(strstr(seen->log, "E: cgpool: task/cgroup with ConstrainRAMSpace=yes"));
	assert_ptr_equal(strchr(seen->log, '\n'), strrchr(seen->log, '\n'));
}

/* ---- a bad plugstack.conf argument stops the plug-in with its name: at
 * slurmd's start (a required plug-in that fails to load stops slurmd) */
static void bad_args(void)
{
	char *av[] = { "key=slurm.%u" }, *av2[] = { "key=slurm.%j.%u" };

	step_of(11, 0, 0, 1);
	seen->rc[0] = slurm_spank_init(NULL, 1, av);
	fake.ctx = S_CTX_SLURMD;
	seen->rc[1] = slurm_spank_init(NULL, 1, av2);
}

static void test_bad_args(void **state)
{
	run(bad_args);
	assert_int_equal(seen->rc[0], -1);
	assert_non_null(strstr(seen->log, "E: cgpool: "));
	assert_non_null(strstr(seen->log, "%j is needed"));
	/* uid J's --cgpool-key=U is job J's key of uid U: the whole reason in slurmd's log */
	assert_int_equal(seen->rc[1], -1);
	assert_non_null(strstr(seen->log, "E: cgpool: plugstack.conf argument \"slurm.%j.%u\": key pattern: a job's "
					  "key can be slurm.1.1, which is also the key uid 1 gets with --cgpool-key=1: "
					  "that user could take it first and the job would be refused; put %j first after "
					  "a fixed prefix and a separator after it, as in slurm.%j or slurm.%j_%u "
					  "(doc/slurm.md)\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step),     cmocka_unit_test(test_task_limit), cmocka_unit_test(test_swap),    cmocka_unit_test(test_cpuset), cmocka_unit_test(test_devices), cmocka_unit_test(test_named),   cmocka_unit_test(test_extern),
		cmocka_unit_test(test_daemon_down), cmocka_unit_test(test_refused), cmocka_unit_test(test_oom),
		cmocka_unit_test(test_slurmd_start), cmocka_unit_test(test_bad_args),
	};
	void *m = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 99;
	seen = m;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
