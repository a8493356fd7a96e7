/* unit tests: the simulated cgroupfs itself (cgsim.h), driven mostly through
 * the real cgroup layer, so that tests of the pool and of retirement can
 * trust what it models: layouts and features, rmdir rules, pinning and
 * reparenting, the dying counters and their lag, reclaim, faults, delays,
 * processes, memory.peak descriptors and cgroup.events watching. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cg.h"
#include "cgsim.h"
#include "util.h"

#define MiB (1024ULL * 1024)
#define NO_SUCH_PID ((pid_t)0x7ffffff0) /* above any pid_max */

struct t {
	struct cgsim *sim;
	struct cg *cg;
	const struct cg_fs_ops *ops;
	char err[512];
	char root[PATH_MAX];  /* pool root, memory hierarchy directory */
	char cgroot[PATH_MAX]; /* pool root, cgroup path */
};

static struct t *open_now; /* freed by the teardown when an assertion fails */

static void t_open(struct t *t, const struct cgsim_opts *o)
{
	int r;

	memset(t, 0, sizeof(*t));
	open_now = t;
	t->sim = cgsim_new(o);
	assert_non_null(t->sim);
	t->ops = cgsim_ops(t->sim);
	r = cg_open_fs(t->ops, t->sim, cgsim_mountinfo(t->sim), cgsim_proc_self_cgroup(t->sim), "auto",
		       CG_CTRL_MEMORY | CG_CTRL_PIDS, &t->cg, t->err, sizeof(t->err));
	if (r < 0)
		fail_msg("cg_open_fs: %s: %s", strerror(-r), t->err);
	snprintf(t->root, sizeof(t->root), "%s", cg_get_info(t->cg)->memory_root);
	snprintf(t->cgroot, sizeof(t->cgroot), "%s", cg_get_info(t->cg)->root);
	cgsim_settle(t->sim); /* the feature probe's removed cgroup */
}

static void t_close(struct t *t)
{
	cg_close(t->cg);
	cgsim_free(t->sim);
	open_now = NULL;
}

static int teardown(void **state)
{
	if (open_now)
		t_close(open_now);
	return 0;
}

static struct cgsim_opts opts(enum cgsim_layout l, enum cgsim_kernel k)
{
	struct cgsim_opts o = cgsim_opts_default(l);

	o.kernel = k;
	return o;
}

/* "<pool root>/<rel>" in the memory hierarchy; rotating buffers */
static const char *P(struct t *t, const char *rel)
{
	static char buf[4][PATH_MAX * 2];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s%s%s", t->root, rel[0] ? "/" : "", rel);
	return buf[i];
}

static const char *C(struct t *t, const char *name)
{
	static char buf[PATH_MAX * 2];

	snprintf(buf, sizeof(buf), "%s/%s", t->cgroot, name);
	return buf;
}

static uint64_t key(struct t *t, const char *path, const char *k)
{
	char buf[8192];
	uint64_t v = ~0ULL;

	assert_true(cgsim_peek(t->sim, path, buf, sizeof(buf)) >= 0);
	for (char *l = buf; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, k, strlen(k)) == 0 && l[strlen(k)] == ' ')
			v = strtoull(l + strlen(k) + 1, NULL, 10);
	return v;
}

static uint64_t dying(struct t *t)
{
	struct cg_dying d;

	assert_int_equal(cg_dying(t->cg, &d), 0);
	return d.count;
}

static void test_layouts(void **state)
{
	static const struct {
		enum cgsim_layout l;
		const char *name, *proc_self;
		bool v2mem, tracking, kill, reclaim, subsys;
	} want[] = {
		{ CGSIM_V2, "v2", "0::/user.slice/cgsim.scope/cgpoold\n", true, true, true, true, true },
		{ CGSIM_HYBRID, "hybrid", NULL, false, true, true, false, false },
		{ CGSIM_V1, "v1", NULL, false, false, false, false, false },
	};
	struct cgsim_opts o;
	struct t t;

	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		const struct cg_info *in;
		o = cgsim_opts_default(want[i].l);
		t_open(&t, &o);
		in = cg_get_info(t.cg);
		assert_string_equal(cg_hierarchy_name(in->hierarchy), want[i].name);
		assert_int_equal(in->memory_v2, want[i].v2mem);
		assert_int_equal(in->tracking, want[i].tracking);
		assert_string_equal(in->root, "/user.slice/cgsim.scope");
		assert_true(in->features.memory_peak);
		assert_true(in->features.memory_peak_reset);
		assert_int_equal(in->features.cgroup_kill, want[i].kill);
		assert_int_equal(in->features.memory_reclaim, want[i].reclaim);
		assert_int_equal(in->features.dying_subsys_stat, want[i].subsys);
		if (want[i].proc_self) /* v2 auto: the daemon moved into its leaf */
			assert_string_equal(cgsim_proc_self_cgroup(t.sim), want[i].proc_self);
		assert_int_equal(cg_watch_fd(t.cg) >= 0, want[i].tracking);
		t_close(&t);
	}
	/* an older v2 kernel */
	o = cgsim_opts_default(CGSIM_V2);
	o.memory_reclaim = o.peak_reset = o.cgroup_kill = o.dying_subsys_stat = false;
	o.watch = false;
	t_open(&t, &o);
	assert_false(cg_get_info(t.cg)->features.memory_reclaim);
	assert_true(cg_get_info(t.cg)->features.memory_peak); /* read-only: 5.19-6.11 */
	assert_false(cg_get_info(t.cg)->features.memory_peak_reset);
	assert_false(cg_get_info(t.cg)->features.cgroup_kill);
	assert_false(cg_get_info(t.cg)->features.dying_subsys_stat);
	assert_int_equal(cg_watch_fd(t.cg), -1);
	t_close(&t);
	/* before 5.19: no memory.peak at all */
	o.memory_peak = false;
	t_open(&t, &o);
	assert_false(cg_get_info(t.cg)->features.memory_peak);
	assert_false(cg_get_info(t.cg)->features.memory_peak_reset);
	t_close(&t);
}

static int count(const char *name, void *ud)
{
	(*(int *)ud)++;
	return 0;
}

static void test_rmdir_rules(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_REPARENT);
	uint64_t id1, id2;
	pid_t pid;
	struct t t;
	int n = 0;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "a"), 0);
	assert_int_equal(cg_slot_create(t.cg, "a"), -EEXIST);
	assert_int_equal(cg_slot_id(t.cg, "a", &id1), 0);
	pid = cgsim_spawn(t.sim, "/");
	assert_true(pid > 0);
	assert_int_equal(cg_slot_attach(t.cg, "a", pid), 0);
	assert_int_equal(t.ops->rmdir(t.sim, P(&t, "a/run")), -EBUSY); /* processes */
	assert_int_equal(cgsim_exit(t.sim, pid), 0);
	assert_int_equal(t.ops->mkdir(t.sim, P(&t, "a/run/b")), 0);
	assert_int_equal(t.ops->rmdir(t.sim, P(&t, "a/run")), -EBUSY); /* a child */
	assert_int_equal(t.ops->rmdir(t.sim, P(&t, "a/run/b")), 0);
	assert_int_equal(t.ops->rmdir(t.sim, P(&t, "a/run")), 0);
	assert_int_equal(t.ops->rmdir(t.sim, P(&t, "a")), 0); /* dying children do not count */
	assert_int_equal(t.ops->rmdir(t.sim, P(&t, "a")), -ENOENT);
	assert_int_equal(cg_slot_list(t.cg, "", count, &n), 0);
	assert_int_equal(n, 0); /* gone from the namespace at once */
	assert_false(cgsim_exists(t.sim, C(&t, "a")));
	assert_int_equal(t.ops->rmdir(t.sim, P(&t, "cgroup.procs")), -ENOTDIR);
	assert_int_equal(t.ops->rmdir(t.sim, "/sys/fs/cgroup"), -EBUSY);
	assert_int_equal(t.ops->mkdir(t.sim, P(&t, "x/y")), -ENOENT);
	assert_int_equal(t.ops->mkdir(t.sim, P(&t, "memory.max")), -EEXIST);
	assert_int_equal(t.ops->mkdir(t.sim, "/elsewhere/x"), -ENOENT);
	/* made again: a new cgroup */
	assert_int_equal(cg_slot_create(t.cg, "a"), 0);
	assert_int_equal(cg_slot_id(t.cg, "a", &id2), 0);
	assert_true(id2 != id1);
	assert_int_equal(cg_slot_list(t.cg, "", count, &n), 0);
	assert_int_equal(n, 1);
	t_close(&t);
}

static void test_reparent_v2(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_REPARENT);
	struct cgsim_mem m;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 4 * MiB, 1 * MiB), 0);
	assert_int_equal(key(&t, P(&t, "memory.stat"), "file"), 4 * MiB);
	assert_int_equal(dying(&t), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "s"), 0);
	/* the run's pages are its directory's now */
	assert_int_equal(cgsim_memory(t.sim, C(&t, "s"), &m), 0);
	assert_int_equal(m.file, 4 * MiB);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	assert_int_equal(cg_slot_remove(t.cg, "s"), 0);
	/* the pages are the parent's now; nothing visible changes in its memory.stat */
	assert_int_equal(cgsim_memory(t.sim, t.cgroot, &m), 0);
	assert_int_equal(m.file, 4 * MiB);
	assert_int_equal(m.anon, 1 * MiB);
	assert_int_equal(key(&t, P(&t, "memory.stat"), "file"), 4 * MiB);
	assert_int_equal(cgsim_dying(t.sim, NULL, NULL), 1); /* freed after the lag */
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	assert_int_equal(cgsim_dying(t.sim, NULL, NULL), 0);
	t_close(&t);
}

static void test_pin_v2(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_PIN);
	uint64_t bytes;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 4 * MiB, 0), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "s"), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(dying(&t), 1);
	assert_int_equal(key(&t, P(&t, "cgroup.stat"), "nr_dying_subsys_memory"), 1);
	assert_int_equal(cgsim_dying(t.sim, NULL, &bytes), 1);
	assert_int_equal(bytes, 4 * MiB);
	/* still charged to the ancestors, hierarchically */
	assert_int_equal(key(&t, P(&t, "memory.stat"), "file"), 4 * MiB);
	/* memory.reclaim on an ancestor reaches it: 4M of the 8M asked */
	assert_int_equal(t.ops->write(t.sim, P(&t, "memory.reclaim"), "8M"), -EAGAIN);
	assert_int_equal(key(&t, P(&t, "memory.stat"), "file"), 0);
	assert_int_equal(dying(&t), 1); /* the lag */
	assert_int_equal(dying(&t), 0);

	/* anon cannot be reclaimed without swap: it stays pinned */
	assert_int_equal(cg_slot_create(t.cg, "t"), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "t/run"), 0, 1 * MiB), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "t"), 0);
	assert_int_equal(t.ops->write(t.sim, P(&t, "memory.reclaim"), "1M"), -EAGAIN);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(cgsim_drop_anon(t.sim, NULL), 1 * MiB);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);

	/* no charges: freed after the lag */
	assert_int_equal(cg_slot_create(t.cg, "u"), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "u"), 0);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	t_close(&t);
}

/* v1 has no cgroup.stat: /proc/cgroups and the parent's local counters */
static void test_v1_witnesses(void **state)
{
	struct cgsim_opts o = opts(CGSIM_HYBRID, CGSIM_REPARENT);
	struct cg_place pl;
	uint64_t local;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 4 * MiB, 0), 0);
	assert_int_equal(cg_slot_witness(t.cg, "s", &pl), 0);
	assert_int_equal(pl.local, 0);
	assert_int_equal(pl.charged, 4 * MiB);
	assert_int_equal(dying(&t), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "s"), 0);
	assert_int_equal(cg_slot_witness(t.cg, "s", &pl), 0);
	assert_int_equal(pl.local, 4 * MiB); /* the parent's own cache grew */
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	assert_int_equal(cg_slot_remove(t.cg, "s"), 0);
	assert_int_equal(cg_root_local_lru(t.cg, &local), 0);
	assert_int_equal(local, 4 * MiB); /* and the pool root's, from its removed child */
	assert_int_equal(key(&t, P(&t, "memory.stat"), "total_cache"), 4 * MiB);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	t_close(&t);

	o = opts(CGSIM_HYBRID, CGSIM_PIN);
	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 4 * MiB, 0), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "s"), 0);
	assert_int_equal(cg_slot_witness(t.cg, "s", &pl), 0);
	assert_int_equal(pl.local, 0);
	assert_int_equal(pl.charged, 4 * MiB); /* still charged below it */
	assert_int_equal(cg_root_local_lru(t.cg, &local), 0);
	assert_int_equal(local, 0);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 1);
	/* force_empty on the parent reaches the dying child */
	assert_int_equal(t.ops->write(t.sim, P(&t, "memory.force_empty"), "0"), 0);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	assert_int_equal(t.ops->write(t.sim, "/sys/fs/cgroup/memory/memory.force_empty", "0"), -EINVAL);
	t_close(&t);
}

static void test_lag(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_REPARENT);
	const char *stat;
	struct t t;

	o.lag = 3;
	o.subsys_lag = 1;
	t_open(&t, &o);
	stat = P(&t, "cgroup.stat");
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "s"), 0);
	/* cgsim_peek consumes nothing */
	assert_int_equal(key(&t, stat, "nr_dying_descendants"), 1);
	assert_int_equal(key(&t, stat, "nr_dying_subsys_memory"), 0);
	/* read 1: the subsystem counter is late, cg_dying takes the larger */
	assert_int_equal(dying(&t), 1);
	assert_int_equal(key(&t, stat, "nr_dying_subsys_memory"), 1);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	t_close(&t);

	o.lag = 0;
	o.subsys_lag = 0;
	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cg_slot_rmdir(t.cg, "s"), 0);
	assert_int_equal(dying(&t), 0);
	t_close(&t);
}

/* reparenting kernels: dirty pages under writeback still pin the memcg */
static void test_dirty_reparent(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_REPARENT);
	struct cgsim_mem m;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cgsim_charge_dirty(t.sim, C(&t, "s/run"), 1 * MiB), 0);
	assert_int_equal(key(&t, P(&t, "s/run/memory.stat"), "file_dirty"), 1 * MiB);
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/memory.reclaim"), "1M"), -EAGAIN); /* dirty: skipped */
	assert_int_equal(cg_slot_rmdir(t.cg, "s"), 0);
	assert_int_equal(cgsim_memory(t.sim, C(&t, "s"), &m), 0);
	assert_int_equal(m.dirty, 1 * MiB); /* the pages moved to its directory */
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 1); /* the memcg did not */
	assert_int_equal(cgsim_writeback(t.sim, NULL), 1 * MiB);
	assert_int_equal(dying(&t), 1);
	assert_int_equal(dying(&t), 0);
	t_close(&t);
}

static void test_faults(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_REPARENT);
	struct cg_memory mem;
	int64_t t0;
	int res = 0;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "slot-3"), 0);
	assert_int_equal(cg_slot_create(t.cg, "slot-13"), 0);
	cgsim_calls_clear(t.sim);
	assert_int_equal(cgsim_fail(t.sim, CGSIM_OP_RMDIR, "/slot-3", -EBUSY, 2), 0);
	assert_int_equal(cg_slot_remove(t.cg, "slot-3"), -EBUSY);
	assert_int_equal(cg_slot_remove(t.cg, "slot-3"), -EBUSY);
	assert_true(cgsim_exists(t.sim, C(&t, "slot-3")));
	assert_int_equal(cg_slot_remove(t.cg, "slot-3"), 0);
	assert_int_equal(cgsim_calls(t.sim, CGSIM_OP_RMDIR, "/slot-3"), 3);
	assert_int_equal(cg_slot_remove(t.cg, "slot-13"), 0); /* a suffix of whole components */

	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cgsim_fail(t.sim, CGSIM_OP_WRITE, "/memory.reclaim", -EAGAIN, CGSIM_FOREVER), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(cg_slot_reclaim(t.cg, "s", 4096), -EAGAIN);
	assert_string_equal(cgsim_last_write(t.sim, "/s/run/memory.reclaim", &res), "4096");
	assert_int_equal(res, -EAGAIN);
	assert_int_equal(cgsim_fail(t.sim, CGSIM_OP_READ, "/s/run/memory.current", -EIO, 1), 0);
	assert_int_equal(cg_slot_memory(t.cg, "s", &mem), -EIO);
	assert_int_equal(cg_slot_memory(t.cg, "s", &mem), 0);
	/* a glob on the whole path */
	assert_int_equal(cgsim_fail(t.sim, CGSIM_OP_WRITE, "/sys/fs/cgroup/*/s/run/memory.max", -EPERM, 1), 0);
	assert_int_equal(cg_slot_set(t.cg, "s", "memory.max", "1G"), -EPERM);
	assert_int_equal(cg_slot_set(t.cg, "s", "memory.max", "1G"), 0);
	cgsim_fail_clear(t.sim);
	assert_int_equal(cg_slot_reclaim(t.cg, "s", 0), 0);

	/* a slow write is slow */
	assert_int_equal(cgsim_set_delay(t.sim, "/memory.reclaim", 50000), 0);
	t0 = now_mono_us();
	assert_int_equal(cg_slot_reclaim(t.cg, "s", 0), 0);
	assert_true(now_mono_us() - t0 >= 50000);
	assert_int_equal(cgsim_set_delay(t.sim, "/memory.reclaim", 0), 0);
	t0 = now_mono_us();
	assert_int_equal(cg_slot_reclaim(t.cg, "s", 0), 0);
	assert_true(now_mono_us() - t0 < 50000);
	assert_true(cgsim_calls(t.sim, CGSIM_OP_WRITE, "/s/run/memory.reclaim") >= 6);
	cgsim_calls_clear(t.sim);
	assert_int_equal(cgsim_calls(t.sim, CGSIM_OP_ANY, NULL), 0);
	t_close(&t);
}

static void test_processes(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_REPARENT);
	char buf[256], p[64];
	bool populated;
	unsigned n;
	pid_t pid, own;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/cgroup.procs"), "abc"), -EINVAL);
	assert_int_equal(cg_slot_attach(t.cg, "s", getppid()), -ESRCH); /* not the sim's */
	pid = cgsim_spawn(t.sim, "/");
	assert_true(pid > 0);
	assert_int_equal(kill(pid, 0), 0); /* a real process */
	assert_int_equal(cg_slot_populated(t.cg, "s", &populated), 0);
	assert_false(populated);
	assert_int_equal(cg_slot_attach(t.cg, "s", pid), 0);
	assert_int_equal(cg_slot_populated(t.cg, "s", &populated), 0);
	assert_true(populated);
	assert_int_equal(cg_slot_nprocs(t.cg, "s", &n), 0);
	assert_int_equal(n, 1);
	snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
	assert_true(t.ops->read(t.sim, p, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "0::/user.slice/cgsim.scope/s/run\n");
	/* v2: no processes in an inner cgroup with domain controllers on */
	assert_int_equal(t.ops->write(t.sim, P(&t, "cgroup.procs"), buf), -EINVAL);
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	assert_int_equal(t.ops->write(t.sim, P(&t, "cgroup.procs"), buf), -EBUSY);
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/cgroup.subtree_control"), "+memory"), -EBUSY);
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/cgroup.subtree_control"), "+rdma"), -ENOENT);
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/memory.current"), "0"), -EACCES);
	assert_int_equal(t.ops->read(t.sim, P(&t, "s/run/memory.reclaim"), buf, sizeof(buf)), -EACCES);
	/* cgroup.kill */
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/cgroup.kill"), "1"), 0);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(cg_slot_populated(t.cg, "s", &populated), 0);
	assert_false(populated);
	/* a process the code under test forked itself */
	own = fork();
	assert_true(own >= 0);
	if (own == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(cgsim_adopt(t.sim, own, "/"), 0);
	assert_int_equal(cg_slot_attach(t.cg, "s", own), 0);
	assert_int_equal(cgsim_nprocs(t.sim, C(&t, "s/run"), &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(cgsim_exit(t.sim, own), 0); /* forgotten, not killed */
	assert_int_equal(kill(own, 0), 0);
	assert_int_equal(cg_slot_attach(t.cg, "s", own), -ESRCH);
	/* or adopted when written, and gone once reaped */
	cgsim_options(t.sim)->adopt_real = true;
	assert_int_equal(cg_slot_attach(t.cg, "s", own), 0);
	assert_int_equal(cg_slot_populated(t.cg, "s", &populated), 0);
	assert_true(populated);
	kill(own, SIGKILL);
	waitpid(own, NULL, 0);
	assert_int_equal(cg_slot_populated(t.cg, "s", &populated), 0);
	assert_false(populated);
	assert_int_equal(cg_slot_attach(t.cg, "s", NO_SUCH_PID), -ESRCH);
	t_close(&t);
}

static void test_peak(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_REPARENT);
	struct cg_memory m;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 0, 2 * MiB), 0);
	assert_int_equal(cg_slot_reset_peak(t.cg, "s"), 0);
	assert_int_equal(cgsim_uncharge(t.sim, C(&t, "s/run"), 0, 2 * MiB), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 0, 1 * MiB), 0);
	assert_int_equal(cg_slot_memory(t.cg, "s", &m), 0);
	assert_int_equal(m.peak, 2 * MiB); /* the usage at the reset */
	assert_int_equal(cg_slot_reset_peak(t.cg, "s"), 0);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 0, MiB / 2), 0);
	assert_int_equal(cg_slot_memory(t.cg, "s", &m), 0);
	assert_int_equal(m.peak, 3 * MiB / 2);
	assert_int_equal(m.current, 3 * MiB / 2);
	assert_int_equal(key(&t, P(&t, "s/run/memory.stat"), "anon"), 3 * MiB / 2);
	/* the file itself: the peak since the cgroup was made */
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 0, 0), 0);
	{
		char buf[64];
		assert_true(t.ops->read(t.sim, P(&t, "s/run/memory.peak"), buf, sizeof(buf)) > 0);
		assert_int_equal(strtoull(buf, NULL, 10), 2 * MiB);
	}
	t_close(&t);

	o.peak_reset = false; /* 5.19 .. 6.11 */
	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cg_slot_reset_peak(t.cg, "s"), -EOPNOTSUPP);
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s/run"), 0, 2 * MiB), 0);
	assert_int_equal(cgsim_uncharge(t.sim, C(&t, "s/run"), 0, 2 * MiB), 0);
	assert_int_equal(cg_slot_memory(t.cg, "s", &m), 0);
	assert_int_equal(m.peak, 2 * MiB);
	t_close(&t);
}

static void test_memcg_ids(void **state)
{
	struct cgsim_opts o = opts(CGSIM_V2, CGSIM_PIN);
	char name[16];
	struct t t;
	int made = 0, r = 0;

	o.max_memcgs = 10;
	t_open(&t, &o);
	while (made < 20) {
		snprintf(name, sizeof(name), "s%d", made);
		if ((r = cg_slot_create(t.cg, name)) < 0)
			break;
		made++;
	}
	assert_int_equal(r, -ENOSPC);
	assert_true(made > 0 && made < 10);
	/* dying memcgs hold their ids */
	assert_int_equal(cgsim_charge(t.sim, C(&t, "s0"), 4096, 0), 0);
	assert_int_equal(cg_slot_remove(t.cg, "s0"), 0);
	assert_int_equal(cg_slot_create(t.cg, "x"), -ENOSPC);
	assert_int_equal(cgsim_drop_cache(t.sim, NULL), 4096);
	cgsim_settle(t.sim);
	assert_int_equal(cg_slot_create(t.cg, "x"), 0);
	t_close(&t);
}

static void seen(const char *name, void *ud)
{
	strcat(ud, name);
	strcat(ud, " ");
}

static void test_watch(void **state)
{
	struct cgsim_opts o = opts(CGSIM_HYBRID, CGSIM_REPARENT);
	struct pollfd pfd;
	char names[256] = "";
	pid_t pid;
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cg_slot_watch(t.cg, "s"), 0);
	pfd = (struct pollfd){ .fd = cg_watch_fd(t.cg), .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 0), 0);
	pid = cgsim_spawn(t.sim, "/");
	assert_int_equal(cg_slot_attach(t.cg, "s", pid), 0);
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	assert_int_equal(cg_watch_read(t.cg, seen, names), 0);
	assert_string_equal(names, "s ");
	names[0] = '\0';
	assert_int_equal(cgsim_exit(t.sim, pid), 0);
	assert_int_equal(cg_watch_read(t.cg, seen, names), 0);
	assert_string_equal(names, "s ");
	/* removed: the watch goes (IN_IGNORED) */
	names[0] = '\0';
	assert_int_equal(cg_slot_remove(t.cg, "s"), 0);
	assert_int_equal(cg_watch_read(t.cg, seen, names), 0);
	assert_int_equal(cg_slot_unwatch(t.cg, "s"), -ENOENT);
	t_close(&t);
}

static void test_values(void **state)
{
	struct cgsim_opts o = opts(CGSIM_HYBRID, CGSIM_REPARENT);
	char buf[64];
	struct t t;

	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(cg_slot_set(t.cg, "s", "memory.max", "1G"), 0);
	assert_true(cgsim_peek(t.sim, P(&t, "s/run/memory.limit_in_bytes"), buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "1073741824\n");
	assert_int_equal(cg_slot_set(t.cg, "s", "memory.max", "max"), 0);
	assert_true(cgsim_peek(t.sim, P(&t, "s/run/memory.limit_in_bytes"), buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "9223372036854771712\n");
	assert_int_equal(cg_slot_set(t.cg, "s", "pids.max", "64"), 0);
	assert_true(cgsim_peek(t.sim, "/sys/fs/cgroup/pids/user.slice/cgsim.scope/s/run/pids.max", buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "64\n");
	assert_int_equal(t.ops->write(t.sim, "/sys/fs/cgroup/pids/user.slice/cgsim.scope/s/run/pids.max", "-5"), -EINVAL);
	t_close(&t);

	o = opts(CGSIM_V2, CGSIM_REPARENT);
	t_open(&t, &o);
	assert_int_equal(cg_slot_create(t.cg, "s"), 0);
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/memory.max"), "5000"), 0);
	assert_true(cgsim_peek(t.sim, P(&t, "s/run/memory.max"), buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "4096\n"); /* pages */
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/memory.high"), "abc"), -EINVAL);
	assert_int_equal(t.ops->write(t.sim, P(&t, "s/run/memory.high"), "2M\n"), 0);
	assert_true(cgsim_peek(t.sim, P(&t, "s/run/memory.high"), buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "2097152\n");
	/* files of controllers not enabled do not exist */
	assert_int_equal(t.ops->read(t.sim, P(&t, "s/run/cpu.max"), buf, sizeof(buf)), -ENOENT);
	assert_int_equal(t.ops->read(t.sim, "/proc/cgroups", buf, sizeof(buf)) > 0, 1);
	t_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_layouts, teardown),
		cmocka_unit_test_teardown(test_rmdir_rules, teardown),
		cmocka_unit_test_teardown(test_reparent_v2, teardown),
		cmocka_unit_test_teardown(test_pin_v2, teardown),
		cmocka_unit_test_teardown(test_v1_witnesses, teardown),
		cmocka_unit_test_teardown(test_lag, teardown),
		cmocka_unit_test_teardown(test_dirty_reparent, teardown),
		cmocka_unit_test_teardown(test_faults, teardown),
		cmocka_unit_test_teardown(test_processes, teardown),
		cmocka_unit_test_teardown(test_peak, teardown),
		cmocka_unit_test_teardown(test_memcg_ids, teardown),
		cmocka_unit_test_teardown(test_watch, teardown),
		cmocka_unit_test_teardown(test_values, teardown),
	};

	return cmocka_run_group_tests_name("the simulated cgroupfs", tests, NULL, NULL);
}
