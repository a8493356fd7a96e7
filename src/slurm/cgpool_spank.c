/* cgpool_spank.c - the Slurm SPANK plug-in: every task of a job goes into the
 * job's cgpool slot before it runs an instruction of its own.
 *
 * slurmstepd (remote context, root) forks all of a step's local tasks, holds
 * them before exec and calls slurm_spank_task_post_fork once per task: the
 * plug-in gathers their pids and, at the last one, makes one Attach for the
 * step (one connection, one timeout): the job's key, built from what
 * slurmctld signed only; the job's memory on this node as the run's
 * memory.max; the job as the run's tenant (no other job may use the key
 * meanwhile) and this slurmstepd as one of its holders. When the last
 * slurmstepd of the job on this node has exited, the daemon kills whatever
 * is left in the slot (daemonized strays too) and releases the key: there is
 * no call at the step's end, and no connection lives longer than one call.
 *
 * A step of more local tasks than one Attach takes (CGPOOL_MAX_PIDS) is
 * failed in slurm_spank_user_init, which slurmstepd calls before it forks
 * any task: no Attach, and every task fails as below.
 *
 * A failure is told to the tasks through a page this slurmstepd shares with
 * them (they are forked before the Attach): each task, in
 * slurm_spank_task_init, before exec, reads it; the first local task prints
 * the reason to the job's stderr, and the plug-in fails the task there, so a
 * `required` plug-in fails the job (exit 1) and never the node (a failed
 * post_fork of a batch step drains it). After the OUT_OF_MEMORY line of
 * Slurm (task_exit, when the slot's oom_kill count rose during the step) the
 * task/cgpool plug-in makes Slurm record the step as OUT_OF_MEMORY.
 *
 * With cpuset=yes the Attach also sets the slot's cpuset.cpus to the job's
 * CPUs on this node (cgroup v2, the daemon's controllers with cpuset). Slurm
 * binds each task (task/affinity, --cpu-bind) before post_fork, and a move
 * into another cpuset gives a task that cpuset's CPUs as its affinity on
 * kernels before 6.2: the plug-in reads each task's affinity at its
 * post_fork and sets it again after the Attach.
 *
 * With devices=yes the Attach also sets the slot's devices.deny to the
 * node's GRES device files that are not the job's GPUs (job_devices), as
 * Slurm's ConstrainDevices does: the daemon attaches a device filter to the
 * slot, and a later step of the job denies only what the slot denies
 * already. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "cgpool.h"
#include "slurm_release.h"
#include "spank_key.h"

#define EXPORT __attribute__((visibility("default")))
#define EXTERN_STEP 0xfffffffcU /* SLURM_EXTERN_CONT: PrologFlags=Contain's step */
#define BATCH_STEP 0xfffffffbU  /* SLURM_BATCH_SCRIPT */
#define INTERACTIVE_STEP 0xfffffffaU /* SLURM_INTERACTIVE_STEP */
#define MAX_TASKS CGPOOL_MAX_PIDS /* local tasks of one step, placed in one Attach */

#pragma GCC visibility push(default)
SPANK_PLUGIN(cgpool, 1);
#pragma GCC visibility pop

static struct spank_args args;
static char name[SPANK_NAME_MAX + 1]; /* --cgpool-key */

/* The step's outcome, shared with its tasks (MAP_SHARED, made before they
 * are forked) */
enum { STEP_PENDING, STEP_PLACED, STEP_FAILED };
struct step_page {
	int outcome;
	char reason[1024];
};
static struct step_page *page;

/* slurmstepd's own memory (post_fork runs there, once per task) */
static pid_t pids[MAX_TASKS];
static cpu_set_t affinity[MAX_TASKS]; /* as Slurm bound each task */
static bool affinity_known[MAX_TASKS];
static size_t npids;
static char oom_file[4096]; /* the slot's oom_kill counter, "" unknown */
static uint64_t oom_base;
static bool oom_told;

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

/* a config file's text (NULL: unreadable), at most 1 MiB */
static char *read_text(const char *path)
{
	size_t size = 1 << 20, n = 0;
	char *buf = malloc(size + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = 1;

	while (buf && fd >= 0 && n < size && (r = read(fd, buf + n, size - n)) > 0)
		n += (size_t)r;
	if (fd >= 0)
		close(fd);
	if (!buf || fd < 0 || r < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* slurmd's start: say once if Slurm's own plug-ins would put the tasks in
 * memory cgroups of their own (the cgroup.conf beside slurm.conf) */
static void check_setup(void)
{
	const char *conf = getenv("SLURM_CONF");
	char path[4096], why[512], *slash, *slurm_text, *cgroup_text;

	snprintf(path, sizeof(path), "%s", conf && *conf ? conf : "/etc/slurm/slurm.conf");
	slurm_text = read_text(path);
	slash = strrchr(path, '/');
	if (slash)
		snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "cgroup.conf");
	cgroup_text = slash ? read_text(path) : NULL;
	if (spank_conf_conflict(slurm_text, cgroup_text, why, sizeof(why)))
		slurm_error("cgpool: %s", why);
	free(slurm_text);
	free(cgroup_text);
}

EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[1024];

	if (spank_option_register(sp, &key_option) != ESPANK_SUCCESS)
		slurm_error("cgpool: cannot register --cgpool-key");
	if (spank_args_parse(ac, av, &args, err, sizeof(err)) < 0) {
		slurm_error("cgpool: %s", err);
		return -1;
	}
	if (spank_context() == S_CTX_SLURMD)
		check_setup();
	if (spank_context() == S_CTX_REMOTE) {
		uint32_t job_id = 0;
		char id[16];

		/* for task/cgpool in this slurmstepd (task_p_update_mem_limit) */
		if (spank_get_item(sp, S_JOB_ID, &job_id) == ESPANK_SUCCESS) {
			snprintf(id, sizeof(id), "%u", job_id);
			setenv("CGPOOL_SLURM_JOB", id, 1);
		}
	}
	if (spank_context() == S_CTX_REMOTE && !page) {
		void *m = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		page = m == MAP_FAILED ? NULL : m;
		if (!page)
			slurm_error("cgpool: mmap: %m");
	}
	return 0;
}

static void fail_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_step(const char *fmt, ...)
{
	char text[sizeof(page->reason)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	slurm_info("%s", text); /* the node's log (an error line would reach srun's stderr too) */
	if (page) {
		snprintf(page->reason, sizeof(page->reason), "%s", text);
		page->outcome = STEP_FAILED;
	}
}

/* slurmstepd, root, before it forks the step's tasks: a step with more
 * local tasks than one Attach takes fails whole, before any task runs */
EXPORT int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	uint32_t step = 0, ntasks = 0, job_id = 0;

	if (spank_context() != S_CTX_REMOTE ||
	    (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS && step == EXTERN_STEP))
		return 0;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS || ntasks <= MAX_TASKS)
		return 0;
	spank_get_item(sp, S_JOB_ID, &job_id);
	fail_step("cgpool: job %u: %u tasks of the step on this node, and cgpool places at most %d (CGPOOL_MAX_PIDS, "
		  "one Attach)", job_id, ntasks, MAX_TASKS);
	return 0; /* the tasks fail in task_init, told by the page: failing here would end srun's step with
		   * "Slurmd could not execve job", without the reason, and exit 0 */
}

/* the start of a small file (a /proc or cgroup file, one read), NUL-ended;
 * false when unreadable or empty */
static bool read_small(const char *path, char *buf, size_t size)
{
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* the parent of pid (its slurmstepd), 0 unknown */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!read_small(path, buf, sizeof(buf)))
		return 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

/* what the daemon said, in words */
static const char *why(struct cgpool *c, int r)
{
	const char *msg = NULL;

	if (r == -EREMOTEIO && c && cgpool_last_error(c, NULL, &msg) && msg)
		return msg;
	return strerror(-r);
}

/* The oom_kill count in the slot's memory.events (v2) or memory.oom_control
 * (v1); -1 unreadable */
static int oom_read(const char *file, uint64_t *out)
{
	char buf[1024], *p;

	if (!read_small(file, buf, sizeof(buf)))
		return -1;
	for (p = buf; (p = strstr(p, "oom_kill ")); p++) {
		if (p == buf || p[-1] == '\n') {
			*out = strtoull(p + 9, NULL, 10);
			return 0;
		}
	}
	return -1;
}

/* is pid in the slot whose directory is slot_path? Then remember where its
 * oom_kill counter is. */
static bool placed_in(pid_t pid, const char *slot_path)
{
	char path[64], buf[4096];

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	return slot_path && read_small(path, buf, sizeof(buf)) && spank_in_slot(buf, slot_path);
}

static void oom_start(const char *slot_path)
{
	static const char *const files[] = { "memory.events", "memory.oom_control" };

	oom_file[0] = '\0';
	oom_told = false;
	for (size_t i = 0; slot_path && i < 2; i++) {
		snprintf(oom_file, sizeof(oom_file), "%s/%s", slot_path, files[i]);
		if (oom_read(oom_file, &oom_base) == 0)
			return;
	}
	oom_file[0] = '\0';
}

/* The job's memory on this node (--mem, --mem-per-cpu), in MiB; 0 unknown. */
static uint64_t job_memory_mb(spank_t sp)
{
	uint64_t mb = 0;

	if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mb) != ESPANK_SUCCESS)
		mb = 0;
	return mb;
}

/* The job's CPUs on this node as CPU ids, mapped from its abstract cores
 * (S_JOB_ALLOC_CORES) the way task/cgroup maps them: by slurmstepd's own
 * xcpuinfo_abs_to_mac, with the node's layout slurmd gave it. 0, or -1 with
 * why. */
static int job_cpus(spank_t sp, char *out, size_t len, const char **why)
{
	int (*abs_to_mac)(char *, char **) = NULL;
	void (*xfree)(void **) = NULL;
	void *f = dlsym(RTLD_DEFAULT, "xcpuinfo_abs_to_mac"), *g = dlsym(RTLD_DEFAULT, "slurm_xfree");
	char *cores = NULL, *cpus = NULL;

	memcpy(&abs_to_mac, &f, sizeof(f));
	memcpy(&xfree, &g, sizeof(g));
	if (spank_get_item(sp, S_JOB_ALLOC_CORES, &cores) != ESPANK_SUCCESS || !cores || !*cores) {
		*why = "the job's cores on this node are not known";
		return -1;
	}
	if (!abs_to_mac || !xfree) {
		*why = "this slurmstepd has no xcpuinfo_abs_to_mac to map the job's cores to CPUs";
		return -1;
	}
	if (abs_to_mac(cores, &cpus) != 0 || !cpus || !*cpus || strlen(cpus) >= len) {
		*why = "the job's cores could not be mapped to CPUs";
		if (cpus)
			xfree((void **)&cpus);
		return -1;
	}
	snprintf(out, len, "%s", cpus);
	xfree((void **)&cpus);
	return 0;
}

/* Slurm's gres_device_t (src/common/gres.h), as 22.05 to 25.05 have it */
struct slurm_gres_device {
	int index;
	int alloc;
	struct {
		uint32_t major, minor;
		int type; /* DEV_TYPE_NONE, _BLOCK, _CHAR */
	} dev_desc;
	int dev_num;
	char *path;
	char *unique_id;
};

/* The job's devices.deny on this node (devices=yes): every GRES device file
 * of the node, as slurmstepd's gres plug-ins loaded gres.conf (its own
 * gres_g_get_devices, through dlsym), except the job's GPUs. Which GPUs are
 * the job's, slurmstepd has written into the step's environment from the
 * credential before any task forks: SLURM_JOB_GPUS for the batch script
 * and the interactive step, SLURM_STEP_GPUS for a step (it removes the
 * variable when none is allocated, so nothing the user set survives). That
 * holds only when gres/gpu is one of the node's GresTypes: otherwise the
 * variables are the user's, and the plug-in refuses. out is "" when the
 * node has no GRES device file. 0, or -1 with why. */
static int job_devices(spank_t sp, uint32_t step, char *out, size_t len, char *why, size_t whylen)
{
	/* the same six parameters in every release known (the last one a pid_t, then a step) */
	slurm_list_t (*get_devices)(slurm_list_t, bool, uint16_t, char *, int, void *) = NULL;
	void *f = dlsym(RTLD_DEFAULT, "gres_g_get_devices");
	const slurm_conf_t *conf = dlsym(RTLD_DEFAULT, "slurm_conf");
	const char *var = step == BATCH_STEP || step == INTERACTIVE_STEP ? "SLURM_JOB_GPUS" : "SLURM_STEP_GPUS";
	struct spank_dev devs[256];
	struct slurm_gres_device *d;
	char allowed[1024] = "";
	slurm_list_itr_t it = NULL;
	slurm_list_t list;
	size_t n = 0;
	int r;

	if (!f || !conf) {
		snprintf(why, whylen, "this slurmstepd has no gres_g_get_devices to read the node's GRES devices");
		return -1;
	}
	memcpy(&get_devices, &f, sizeof(f));
	list = get_devices(NULL, true, 0, NULL, 0, NULL); /* every device, none allocated */
	if (list)
		it = slurm_list_iterator_create(list);
	while (it && (d = slurm_list_next(it)) && n < sizeof(devs) / sizeof(devs[0])) {
		if (d->dev_desc.type != 1 && d->dev_desc.type != 2)
			continue;
		devs[n++] = (struct spank_dev){ d->index, d->dev_desc.type == 1 ? 'b' : 'c', d->dev_desc.major,
						d->dev_desc.minor };
	}
	if (it)
		slurm_list_iterator_destroy(it);
	if (list)
		slurm_list_destroy(list); /* the records are the plug-ins' own */
	out[0] = '\0';
	if (n == 0)
		return 0;
	if (!spank_list_has(conf->gres_plugins, "gpu")) {
		snprintf(why, whylen, "the node's GRES devices are not GPUs (GresTypes has no gpu), and only for GPUs "
				      "does slurmstepd tell the job which are its own");
		return -1;
	}
	if (spank_getenv(sp, var, allowed, sizeof(allowed)) != ESPANK_SUCCESS)
		allowed[0] = '\0';
	r = spank_devices_deny(devs, n, allowed, out, len);
	if (r < 0)
		snprintf(why, whylen, "%s=%s: %s", var, allowed,
			 r == -EINVAL ? "not a list of GRES indices" : "too many devices to deny");
	return r < 0 ? -1 : 0;
}

/* each task's affinity as it was before the move into the slot */
static void affinity_restore(void)
{
	for (size_t i = 0; i < npids; i++)
		if (affinity_known[i] && sched_setaffinity(pids[i], sizeof(affinity[i]), &affinity[i]) < 0)
			slurm_info("cgpool: task pid %d: its CPU binding was not set again after the move: %m",
				   (int)pids[i]);
}

/* One Attach for the step's local tasks: a connection of its own, closed at once */
static void place_step(spank_t sp, const struct spank_job *job)
{
	struct cgpool_limit limits[4] = { { "memory.max", NULL }, { "memory.swap.max", NULL } };
	struct cgpool_job tenant = { NULL, 0, args.release };
	char key[SPANK_KEY_MAX + 1], jobname[64], mem[32], swap[32], cpus[1024], devices[128], *slot = NULL;
	const char *sock = args.socket[0] ? args.socket : NULL, *env = getenv("CGPOOL_SOCKET");
	uint64_t mb = job_memory_mb(sp);
	struct cgpool *c = NULL;
	json_t *reply = NULL;
	size_t nlimits = 0;
	const char *path, *no_cpus;
	int r;

	r = spank_key_build(args.pattern, name[0] ? name : NULL, job, key, sizeof(key));
	if (r < 0) {
		fail_step("cgpool: job %u: no key from pattern %s: %s", job->job_id, args.pattern, strerror(-r));
		return;
	}
	spank_job_name(job, jobname, sizeof(jobname));
	tenant.id = jobname;
	tenant.hold = parent_of(pids[0]);
	if (tenant.hold <= 0)
		tenant.hold = getpid();
	/* the job's memory on the node, and swap=PERCENT of it */
	if (mb) {
		snprintf(mem, sizeof(mem), "%" PRIu64 "M", mb);
		limits[nlimits++].value = mem;
		if (args.swap_pct >= 0) {
			snprintf(swap, sizeof(swap), "%" PRIu64 "M", mb * (uint64_t)args.swap_pct / 100);
			limits[nlimits++].value = swap;
		}
	}
	if (args.cpuset) {
		if (job_cpus(sp, cpus, sizeof(cpus), &no_cpus) < 0) {
			fail_step("cgpool: job %u: cpuset=yes: %s", job->job_id, no_cpus);
			return;
		}
		limits[nlimits].name = "cpuset.cpus";
		limits[nlimits++].value = cpus;
	}
	if (args.devices) {
		char no_devices[256];
		uint32_t step = 0;
		spank_get_item(sp, S_JOB_STEPID, &step);
		if (job_devices(sp, step, devices, sizeof(devices), no_devices, sizeof(no_devices)) < 0) {
			fail_step("cgpool: job %u: devices=yes: %s", job->job_id, no_devices);
			return;
		}
		if (devices[0]) {
			limits[nlimits].name = "devices.deny";
			limits[nlimits++].value = devices;
		}
	}
	r = cgpool_connect_timeout(sock, args.timeout_ms, &c);
	if (r == 0)
		r = cgpool_attach_job(c, key, pids, npids, args.class_name[0] ? args.class_name : NULL, limits,
				      nlimits, &tenant, &slot);
	if (r < 0) {
		char where[160] = "";

		if (r != -EREMOTEIO) /* not the daemon's refusal: reaching it failed */
			snprintf(where, sizeof(where), " (cgpoold at %s)",
				 sock ? sock : env && *env ? env : CGPOOL_DEFAULT_SOCKET);
		fail_step("cgpool: job %u: %zu task(s) not placed in the slot of %s: %s%s", job->job_id, npids, key,
			  why(c, r), where);
		cgpool_close(c);
		return;
	}
	cgpool_close(c);
	affinity_restore();
	reply = json_loads(slot, 0, NULL);
	path = json_string_value(json_object_get(reply, "path"));
	if (!placed_in(pids[0], path))
		slurm_error("cgpool: job %u: attached to %s, but the task is not in its slot (another cgroup "
			    "plug-in moved it? see doc/slurm.md)", job->job_id, key);
	oom_start(path);
	json_decref(reply);
	free(slot);
	if (page)
		page->outcome = STEP_PLACED;
}

/* slurmstepd, root: task (local id) is forked and held before exec */
EXPORT int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	struct spank_job job = { 0 };
	uint32_t step = 0, ntasks = 0;
	uid_t uid;
	pid_t pid;
	int task_id = -1;

	if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS && step == EXTERN_STEP)
		return 0; /* PrologFlags=Contain: no task; the steps hold the job */
	if (page && page->outcome == STEP_FAILED)
		return 0; /* told once, for the whole step */
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job.job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
		fail_step("cgpool: the task's pid or the job's id is not known");
		return 0;
	}
	job.uid = uid;
	if (spank_get_item(sp, S_TASK_ID, &task_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS)
		ntasks = 0;
	if (npids == MAX_TASKS) { /* the count was not known before the tasks were forked */
		fail_step("cgpool: job %u: more than %d tasks of the step on this node, and cgpool places at most %d "
			  "(CGPOOL_MAX_PIDS, one Attach)", job.job_id, MAX_TASKS, MAX_TASKS);
		return 0;
	}
	affinity_known[npids] = sched_getaffinity(pid, sizeof(affinity[npids]), &affinity[npids]) == 0;
	pids[npids++] = pid;
	/* the tasks wait for exec until every post_fork is done: one Attach at the last */
	if (ntasks == 0 || (uint32_t)(task_id + 1) >= ntasks)
		place_step(sp, &job);
	return 0;
}

/* the task, as the user, just before exec: fail it when its step was not placed */
EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	int task_id = 0;

	if (!page || page->outcome != STEP_FAILED)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &task_id) != ESPANK_SUCCESS || task_id == 0) {
		fprintf(stderr, "%s\n", page->reason);
		fflush(stderr);
	}
	return -1; /* required: the task exits 1; optional: it runs where it is */
}

/* slurmstepd, a task has exited: Slurm's line for OOM kills in the slot
 * during the step; task/cgpool makes the step OUT_OF_MEMORY */
EXPORT int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	uint32_t job_id = 0, step = 0;
	uint64_t now;

	if (!oom_file[0] || oom_told || oom_read(oom_file, &now) < 0 || now <= oom_base)
		return 0;
	oom_told = true;
	spank_get_item(sp, S_JOB_ID, &job_id);
	spank_get_item(sp, S_JOB_STEPID, &step);
	if (step == BATCH_STEP)
		slurm_error("Detected %" PRIu64 " oom-kill event(s) in StepId=%u.batch. Some of your processes may "
			    "have been killed by the cgroup out-of-memory handler.", now - oom_base, job_id);
	else
		slurm_error("Detected %" PRIu64 " oom-kill event(s) in StepId=%u.%u. Some of your processes may "
			    "have been killed by the cgroup out-of-memory handler.", now - oom_base, job_id, step);
	setenv("CGPOOL_SLURM_OOM", "1", 1); /* read by task/cgpool's post_term in this slurmstepd */
	return 0;
}

EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	return 0;
}
