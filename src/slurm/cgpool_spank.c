/* cgpool_spank.c - the Slurm SPANK plug-in: every task of a job goes into the
 * job's cgpool slot before it runs an instruction of its own.
 *
 * slurmstepd (remote context, root) calls slurm_spank_task_post_fork with the
 * task forked and held before exec: the task is attached there to the job's
 * key, with the job's memory allocation as the run's memory.max. When the
 * step ends (slurm_spank_exit) the key is released, so its slot is the first
 * recycled for the next job. Whether a failure fails the job is Slurm's
 * required/optional; its one-line reason goes to the node's log and the
 * job's stderr. Every call to the daemon has a timeout. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <slurm/spank.h>

#include "cgpool.h"
#include "spank_key.h"

#define EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(default)
SPANK_PLUGIN(cgpool, 1);
#pragma GCC visibility pop

static struct spank_args args;
static char name[SPANK_NAME_MAX + 1]; /* --cgpool-key */
static char key[SPANK_KEY_MAX + 1];   /* the key this step placed tasks under; "" none */
static struct cgpool *conn;

static int opt_key(int val, const char *optarg, int remote)
{
	const char *why;

	if (!optarg || spank_name_check(optarg, &why) < 0) {
		slurm_error("cgpool: --cgpool-key %s: %s", optarg ? optarg : "", optarg ? why : "a name is needed");
		return -1;
	}
	snprintf(name, sizeof(name), "%s", optarg);
	return 0;
}

static struct spank_option key_option = {
	"cgpool-key", "NAME",
	"run in the cgpool slot of key slurm.<uid>.NAME: every job of yours with that name reuses one slot",
	1, 0, opt_key,
};

EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[256];

	if (spank_option_register(sp, &key_option) != ESPANK_SUCCESS)
		slurm_error("cgpool: cannot register --cgpool-key");
	if (spank_args_parse(ac, av, &args, err, sizeof(err)) < 0) {
		slurm_error("cgpool: %s", err);
		return -1;
	}
	return 0;
}

/* one line in the node's log and, from slurmstepd, in the job's stderr (srun's,
 * or the batch job's output); -1 fails the task when the plug-in is required */
static int say(bool failed, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(bool failed, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	slurm_error("%s", text);
	return failed ? -1 : 0;
}

static int job_ids(spank_t sp, struct spank_job *job)
{
	uid_t uid;

	if (spank_get_item(sp, S_JOB_ID, &job->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return -1;
	job->uid = uid;
	if (spank_get_item(sp, S_JOB_ARRAY_ID, &job->array_job_id) != ESPANK_SUCCESS)
		job->array_job_id = 0;
	/* outside arrays the task id is NO_VAL (0xfffffffe) */
	if (job->array_job_id == 0 ||
	    spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &job->array_task_id) != ESPANK_SUCCESS ||
	    job->array_task_id >= 0xfffffffeU) {
		job->array_job_id = 0;
		job->array_task_id = 0;
	}
	return 0;
}

/* a connection for this slurmstepd, made once, bounded by the timeout */
static int connection(void)
{
	int r;

	if (conn)
		return 0;
	r = cgpool_connect_timeout(args.socket[0] ? args.socket : NULL, args.timeout_ms, &conn);
	if (r < 0)
		conn = NULL;
	return r;
}

/* what the daemon said, in words */
static const char *why(int r)
{
	const char *msg = NULL;

	if (r == -EREMOTEIO && conn && cgpool_last_error(conn, NULL, &msg) && msg)
		return msg;
	return strerror(-r);
}

/* is pid where the reply says its slot is? */
static bool placed_in(pid_t pid, const char *slot_json)
{
	json_t *slot = json_loads(slot_json, 0, NULL);
	const char *slot_path = json_string_value(json_object_get(slot, "path"));
	char path[64], buf[4096];
	bool in = false;
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n > 0 && slot_path) {
		buf[n] = '\0';
		in = spank_in_slot(buf, slot_path);
	}
	json_decref(slot);
	return in;
}

/* The job's memory on this node (--mem, --mem-per-cpu), in MiB; 0 unknown. */
static uint64_t job_memory_mb(spank_t sp)
{
	uint64_t mb = 0;

	if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mb) != ESPANK_SUCCESS)
		mb = 0;
	return mb;
}

/* slurmstepd, root: the task is forked and held before exec */
EXPORT int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	struct spank_job job = { 0 };
	struct cgpool_limit limit = { "memory.max", NULL };
	char mem[32], *slot = NULL;
	uint64_t mb = job_memory_mb(sp);
	pid_t pid;
	int task_id = -1, r;

	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS || job_ids(sp, &job) < 0)
		return say(true, "cgpool: the task's pid or the job's id is not known");
	if (spank_get_item(sp, S_TASK_ID, &task_id) != ESPANK_SUCCESS)
		task_id = -1;
	r = spank_key_build(args.pattern, name[0] ? name : NULL, &job, key, sizeof(key));
	if (r < 0)
		return say(true, "cgpool: job %u: no key from pattern %s: %s", job.job_id, args.pattern, strerror(-r));
	snprintf(mem, sizeof(mem), "%lluM", (unsigned long long)mb);
	limit.value = mem;
	r = connection();
	if (r == 0)
		r = cgpool_attach_limits(conn, key, &pid, 1, args.class_name[0] ? args.class_name : NULL, &limit,
					 mb ? 1 : 0, &slot);
	if (r < 0) {
		char where[160] = "";
		int ret;

		if (r != -EREMOTEIO) /* not the daemon's refusal: reaching it failed */
			snprintf(where, sizeof(where), " (cgpoold at %s)", args.socket[0] ? args.socket : CGPOOL_DEFAULT_SOCKET);
		ret = say(true, "cgpool: job %u task %d not placed in the slot of %s: %s%s", job.job_id, task_id, key,
			  why(r), where);
		cgpool_close(conn); /* a new connection for the next task */
		conn = NULL;
		key[0] = '\0';
		return ret;
	}
	if (!placed_in(pid, slot))
		say(false, "cgpool: job %u task %d: attached to %s, but the task is not in its slot (another cgroup "
			   "plug-in moved it? see doc/slurm.md)", job.job_id, task_id, key);
	free(slot);
	return 0;
}

/* the step ends: the key's slot, idle, is the first recycled for new keys */
EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	int r = 0;

	if (!spank_remote(sp) || !key[0] || !args.release)
		goto out;
	r = connection();
	if (r == 0)
		r = cgpool_release(conn, key, NULL);
	if (r < 0)
		slurm_error("cgpool: release %s: %s", key, why(r));
out:
	cgpool_close(conn);
	conn = NULL;
	return 0;
}
