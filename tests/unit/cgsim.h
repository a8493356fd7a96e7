/* cgsim.h - a simulated cgroupfs behind struct cg_fs_ops, for unit tests and
 * fault injection only.
 *
 * The real-kernel tests (test_cg.c, tests/integ, tests/vm) stay the
 * authority on what the kernel does; the sim adds what a real kernel cannot
 * give on demand: a chosen kernel behaviour at rmdir (pin or reparent), exact
 * page charges, a lagging dying counter, injected errors and slow writes, and
 * a record of every call. Open the cgroup layer on it with
 *
 *	sim = cgsim_new(&opts);
 *	cg_open_fs(cgsim_ops(sim), sim, cgsim_mountinfo(sim), cgsim_proc_self_cgroup(sim),
 *		   "auto", CG_CTRL_MEMORY | CG_CTRL_PIDS, &cg, err, sizeof(err));
 *
 * ---- Layouts (cgsim_opts.layout)
 * CGSIM_V2:     one cgroup2 at /sys/fs/cgroup; its root offers cpuset cpu io
 *               memory hugetlb pids rdma misc; "cpu io memory pids" are
 *               enabled down to the parent of opts.self.
 * CGSIM_HYBRID: v1 hierarchies name=systemd, cpu,cpuacct, memory, blkio and
 *               pids under /sys/fs/cgroup/<name>, and a controller-less
 *               cgroup2 at /sys/fs/cgroup/unified (population tracking).
 * CGSIM_V1:     the same without the cgroup2.
 * The test process (getpid()) starts in opts.self in every hierarchy; writing
 * "0" to a cgroup.procs moves it. Every hierarchy is its own tree; a cgroup
 * named by a cgroup path ("/a/b") exists separately in each.
 *
 * ---- Files
 * The layer's reads and writes go to generated files: cgroup.procs, tasks
 * (v1), cgroup.controllers/subtree_control/events/stat/kill/freeze/type (v2),
 * memory.current/peak/stat/events/events.local/min/low/high/max/swap.max/
 * reclaim (v2), memory.usage_in_bytes/max_usage_in_bytes/limit_in_bytes/
 * soft_limit_in_bytes/stat/force_empty/oom_control/use_hierarchy (v1),
 * pids.max/current/events, cpu.max/weight/stat (v2), cpu.shares/
 * cfs_quota_us/cfs_period_us (v1), io.weight (v2). A v2 cgroup has a
 * controller's files only when its parent enables it in subtree_control.
 * Settings store what is written after the kernel's validation (-EINVAL on a
 * bad value; memory sizes round down to 4 KiB; v1 "-1" reads back as
 * 9223372036854771712). Outside the mounts, ops->read serves /proc/cgroups,
 * /proc/self/cgroup, /proc/<pid>/cgroup and /proc/self/mountinfo.
 * Kernel rules enforced: writing a pid nobody spawned -> -ESRCH (unless
 * opts.adopt_real); v2 "no
 * internal processes" (-EBUSY); controllers must be available (-ENOENT);
 * read-only/write-only files -> -EACCES; mkdir -> -EEXIST, -ENOENT, and
 * -ENOSPC past opts.max_memcgs memory cgroups (live + dying). Not modelled:
 * PSI (memory.pressure, /proc/pressure: absent, so cg_pressure_path says
 * -EOPNOTSUPP), limits (charges never fail), threads, swap.
 *
 * ---- Memory
 * Pages are charged explicitly (cgsim_charge*) to a memory cgroup, which is
 * the named cgroup or, on v2 without memory enabled there, its nearest
 * ancestor with it. memory.current, memory.stat (v2) and usage_in_bytes and
 * total_* (v1) are hierarchical and include dying descendants; v1 cache/rss/
 * inactive_file/... are local. File pages are inactive_file, anon pages
 * active_anon; dirty pages are file pages that reclaim skips until
 * cgsim_writeback. memory.peak is the highest memory.current seen; on v2 a
 * descriptor from ops->open (a memfd the sim keeps current) resets with a
 * write of "reset" to its own peak (6.12+, opts.peak_reset), as the kernel's;
 * without opts.peak_reset it is read-only (5.19-6.11), without
 * opts.memory_peak there is none (v2 before 5.19).
 * memory.reclaim (v2) reclaims clean file pages from the cgroup and every
 * descendant, dying ones too, in pre-order, up to the amount; it returns
 * -EAGAIN when it got less (what it got stays reclaimed). Anon is never
 * reclaimed (no swap). memory.force_empty (v1) reclaims what it can, 0.
 * A write of memory.high below memory.current reclaims the difference the
 * same way before it returns, as the kernel's does.
 * cgsim_oom_kill counts in memory.events (hierarchical) and .local (v2) and
 * in memory.oom_control (v1).
 *
 * ---- rmdir and dying cgroups (what retirement tests build on)
 * rmdir: -ENOENT no such cgroup, -ENOTDIR a file, -EBUSY when the cgroup holds
 * processes or live child cgroups, or is the mount root; never -ENOTEMPTY.
 * On success the directory leaves the namespace at once (list_dirs no longer
 * shows it, mkdir of the name makes a new cgroup with a new inode) and the
 * cgroup turns dying. Then, by opts.kernel:
 *   CGSIM_REPARENT (7.1+): its charges (file, anon, dirty) move to the
 *       parent's local counters at rmdir (v1 parent's cache/rss grow; v2
 *       memory.stat shows no change) and it is freed after the lag; but
 *       when it held dirty pages, their writeback still pins it until
 *       cgsim_writeback (why retire_probe.c writes its pages back before rmdir).
 *   CGSIM_PIN (older): with charges it stays dying until they reach 0
 *       (memory.reclaim / memory.force_empty on an ancestor, cgsim_drop_cache,
 *       cgsim_drop_anon), then is freed after the lag; without charges it is
 *       freed after the lag.
 * A dying group with dying children is freed only after them. While dying it
 * counts in every ancestor's cgroup.stat nr_dying_descendants (and, with
 * opts.dying_subsys_stat, nr_dying_subsys_memory; live ones in nr_subsys_*)
 * on v2, and in /proc/cgroups num_cgroups of its hierarchy (v1 and v2).
 * Lag: a group that may be freed stays counted as dying for opts.lag more
 * reads of a file that counts it (cgroup.stat of an ancestor, /proc/cgroups),
 * then goes; lag 0 frees at once. With opts.subsys_lag, nr_dying_subsys_*
 * leaves a new dying group out for that many reads (nr_dying_descendants
 * counts it at once). cgsim_settle() frees every such group now (cg_open_fs
 * leaves its removed probe cgroup behind like this).
 * The kernels of KERNELS.md: host 6.18 = CGSIM_HYBRID + CGSIM_PIN; Debian 6.1
 * = CGSIM_V2 + CGSIM_PIN, dying_subsys_stat false; Debian 7.2 = CGSIM_V2 +
 * CGSIM_REPARENT.
 * A retirement test, say: cg_slot_create, cgsim_charge(sim, path, 4M, 0),
 * cg_slot_remove, then poll cg_dying() (or cgroup.stat / /proc/cgroups)
 * with the loop: on CGSIM_REPARENT it reads 1 then 0 and the parent holds the
 * 4M; on CGSIM_PIN it stays 1 until a memory.reclaim of an ancestor (drain)
 * or cgsim_drop_cache. cgsim_fail(sim, CGSIM_OP_RMDIR, "/slot-3", -EBUSY, 2)
 * makes rmdir retries happen, cgsim_set_delay bounded-work checks, and
 * cgsim_dying() tells the truth without consuming the lag.
 *
 * ---- Faults, delays, call records
 * A pattern names paths: NULL or "" any path; with a glob character (*?[) an
 * fnmatch(3) glob on the whole path ("/sys/fs/cgroup/pids/ * /slot-1" without
 * the spaces); else a suffix of the path ("/slot-3", "/memory.reclaim"; begin
 * it with "/" to match whole components). An injected error is returned before
 * the call does anything. Every ops call is recorded (op, path, value written,
 * result), injected failures too.
 *
 * ---- Threads
 * One lock (recursive) serializes every ops call and every function here,
 * so code under test may call the ops from worker threads (write hooks then
 * run on those threads, with the lock held). A delay (cgsim_set_delay)
 * sleeps without the lock: a slow rmdir on one thread does not hold up
 * reads on another. cgsim_options' pointer is not covered: change options
 * only while no other thread calls into the sim.
 *
 * All int functions return 0 or a negative errno. */
#ifndef CGPOOL_TEST_CGSIM_H
#define CGPOOL_TEST_CGSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cg.h"

struct cgsim;

enum cgsim_layout { CGSIM_V2, CGSIM_HYBRID, CGSIM_V1 };
enum cgsim_kernel { CGSIM_PIN, CGSIM_REPARENT };

struct cgsim_opts {
	enum cgsim_layout layout;
	enum cgsim_kernel kernel; /* what rmdir does with the pages (above) */
	const char *self;         /* the test process's cgroup; "/user.slice/cgsim.scope" */
	unsigned lag;             /* dying-count lag in reads (above); 1 */
	unsigned subsys_lag;      /* reads after rmdir before nr_dying_subsys_memory counts the
				   * group (before 2026 it was raised by the async offline
				   * work, after nr_dying_descendants); 0 */
	bool dying_subsys_stat;   /* nr_subsys_* in cgroup.stat (6.12+); true */
	bool memory_reclaim;      /* memory.reclaim exists (5.19+); true */
	bool memory_peak;         /* memory.peak exists (v2, 5.19+); true. false: absent, as
				   * before 5.19 (v1's max_usage_in_bytes stays) */
	bool peak_reset;          /* memory.peak resettable per fd (6.12+); true. false with
				   * memory_peak: read-only, the peak since mkdir (5.19-6.11) */
	bool cgroup_kill;         /* cgroup.kill (5.14+); true */
	bool open;                /* ops->open (memfd for v2 memory.peak); true. false: NULL */
	bool watch;               /* ops->watch through real inotify on shadow files; true.
				   * false: NULL, so cg_watch_fd() is -1 and the pool polls */
	unsigned max_memcgs;      /* memory cgroups (live + dying, root too) before
				   * mkdir fails -ENOSPC; 65535 */
	bool adopt_real;          /* writing the pid of a real process the sim does not know
				   * to a cgroup.procs adopts it (code under test that forks
				   * its own children, like retire_probe.c's writer); it leaves the
				   * sim once reaped. false: -ESRCH, as for any unknown pid */
};

/* the defaults above for a layout */
struct cgsim_opts cgsim_opts_default(enum cgsim_layout layout);

/* NULL opts: cgsim_opts_default(CGSIM_V2). NULL on failure. The strings are copied. */
struct cgsim *cgsim_new(const struct cgsim_opts *opts);
/* Kills the spawned processes, closes the sim's descriptors, removes its files. */
void cgsim_free(struct cgsim *sim);
/* kernel, lag and the feature flags may be changed between calls; not layout or self */
struct cgsim_opts *cgsim_options(struct cgsim *sim);

const struct cg_fs_ops *cgsim_ops(const struct cgsim *sim);
/* /proc/self/mountinfo, and /proc/self/cgroup as it is now (the test process
 * moves when "0" is written to a cgroup.procs). Valid until the next call. */
const char *cgsim_mountinfo(struct cgsim *sim);
const char *cgsim_proc_self_cgroup(struct cgsim *sim);

/* ---- the tree. A path here is a directory under one of the mounts
 * ("/sys/fs/cgroup/memory/a/b") or a cgroup path ("/a/b"); either names the
 * cgroup "/a/b", in every hierarchy where that makes sense. These functions
 * are not recorded and not subject to injected faults. */
int cgsim_mkdir(struct cgsim *sim, const char *path); /* mkdir -p in every hierarchy */
int cgsim_rmdir(struct cgsim *sim, const char *path); /* rmdir in every hierarchy, kernel rules */
bool cgsim_exists(struct cgsim *sim, const char *path);    /* live, in the memory hierarchy */
/* Contents of a file as ops->read would give them, without recording the call,
 * faults or consuming the lag. Absolute file path. */
ssize_t cgsim_peek(struct cgsim *sim, const char *path, char *buf, size_t len);

/* ---- processes: real children that sleep until cgsim_exit, so kill(pid, 0)
 * finds them. Born in the cgroup path in every hierarchy (its nearest live
 * ancestor where it does not exist). */
pid_t cgsim_spawn(struct cgsim *sim, const char *path); /* pid or -errno */
int cgsim_exit(struct cgsim *sim, pid_t pid);           /* -ESRCH when unknown */
int cgsim_move(struct cgsim *sim, pid_t pid, const char *path); /* in every hierarchy */
/* Make a process the test did not spawn known to the sim (e.g. a child the
 * code under test forks itself), in path. The sim never kills or reaps it;
 * cgsim_exit forgets it. -EEXIST when known. */
int cgsim_adopt(struct cgsim *sim, pid_t pid, const char *path);
/* processes in the cgroup itself (memory hierarchy); -ENOENT when absent */
int cgsim_nprocs(struct cgsim *sim, const char *path, unsigned *n);

/* ---- memory (the memory hierarchy) */
int cgsim_charge(struct cgsim *sim, const char *path, uint64_t file_bytes, uint64_t anon_bytes);
int cgsim_charge_dirty(struct cgsim *sim, const char *path, uint64_t dirty_file_bytes); /* file too */
int cgsim_uncharge(struct cgsim *sim, const char *path, uint64_t file_bytes, uint64_t anon_bytes);
/* Below path (NULL: the whole memory hierarchy), dying groups included; each
 * returns the bytes affected. drop_cache: clean file pages (drop_caches);
 * drop_anon: anon pages (the tmpfs files deleted); writeback: dirty -> clean. */
uint64_t cgsim_drop_cache(struct cgsim *sim, const char *path);
uint64_t cgsim_drop_anon(struct cgsim *sim, const char *path);
uint64_t cgsim_writeback(struct cgsim *sim, const char *path);
int cgsim_oom_kill(struct cgsim *sim, const char *path); /* memory.events oom, oom_kill += 1 */
/* An inode whose writeback is attached to path's memcg (v2 cgroup
 * writeback), dirty or clean. Once the group is dying it stays pinned by it
 * until a memcg goes offline (any rmdir in the memory hierarchy, its own
 * included) while the inode is clean; ops->sync (cg_fs_ops) cleans every
 * inode. The block device's inode, whose metadata pages many groups dirty,
 * is the real one. */
int cgsim_attach_inode(struct cgsim *sim, const char *path, bool dirty);
/* ops->sync calls so far */
unsigned cgsim_syncs(const struct cgsim *sim);

struct cgsim_mem {
	uint64_t file, anon, dirty;    /* local: charged to this group itself */
	uint64_t tfile, tanon, tdirty; /* hierarchical, dying descendants included */
	uint64_t peak;                 /* memory.peak / max_usage_in_bytes */
	uint64_t reclaimed;            /* bytes reclaim took from this group itself, ever */
	unsigned reclaim_calls;        /* memory.reclaim / force_empty writes on this group */
};
int cgsim_memory(struct cgsim *sim, const char *path, struct cgsim_mem *out);

/* Dying memory cgroups below path (NULL: all), the ones waiting for the lag
 * included; the bytes they hold in *bytes (may be NULL). Reads nothing, so it
 * consumes no lag. */
unsigned cgsim_dying(struct cgsim *sim, const char *path, uint64_t *bytes);
/* Free every dying group, in every hierarchy, that only waits for the lag. */
void cgsim_settle(struct cgsim *sim);

/* ---- faults, delays, call records */
enum cgsim_op {
	CGSIM_OP_MKDIR, CGSIM_OP_RMDIR, CGSIM_OP_READ, CGSIM_OP_WRITE, CGSIM_OP_INODE,
	CGSIM_OP_LIST, CGSIM_OP_OPEN, CGSIM_OP_WATCH, CGSIM_OP_ANY,
};
#define CGSIM_FOREVER (-1)

/* The next count calls of op (CGSIM_OP_ANY: every op) on a matching path
 * fail with err (negative), count CGSIM_FOREVER: all of them. Rules are tried
 * in the order they were added. */
int cgsim_fail(struct cgsim *sim, enum cgsim_op op, const char *pattern, int err, int count);
void cgsim_fail_clear(struct cgsim *sim);
/* mkdir, rmdir and write on a matching path sleep usec first (0 removes);
 * simulated time when the test runs the simulated clock (simclock.h) */
int cgsim_set_delay(struct cgsim *sim, const char *pattern, unsigned usec);
/* calls of op (a listing, a read...) on a matching path sleep usec first */
int cgsim_set_op_delay(struct cgsim *sim, enum cgsim_op op, const char *pattern, unsigned usec);

/* calls of op on matching paths since the last cgsim_calls_clear */
unsigned cgsim_calls(const struct cgsim *sim, enum cgsim_op op, const char *pattern);
/* the place of the first such call in the record since it was cleared (-1: none) */
long cgsim_call_first(const struct cgsim *sim, enum cgsim_op op, const char *pattern);
/* the value of the last write to a matching path (NULL: none), and its result */
const char *cgsim_last_write(const struct cgsim *sim, const char *pattern, int *result);
void cgsim_calls_clear(struct cgsim *sim);

/* fn runs after every successful ops->write to a matching path, with the
 * value written (e.g. charge the pages a probe writer would make once its pid
 * lands in cgroup.procs). One hook; fn NULL removes it. */
typedef void (*cgsim_write_fn)(struct cgsim *sim, const char *path, const char *value, void *ud);
int cgsim_on_write(struct cgsim *sim, const char *pattern, cgsim_write_fn fn, void *ud);

#endif
