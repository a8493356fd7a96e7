/* cg.h - the cgroup filesystem behind one small interface.
 *
 * The rest of the daemon never builds a cgroup path or parses a kernel file:
 * it names a slot by its directory name (one path component below the pool
 * root, e.g. "slot-7") and calls these functions. A slot is two levels: its
 * directory, which holds nothing but its run ("slot-7/run"), where the
 * processes, limits and counters are. When the run is removed the directory
 * is its witness: what it reads moves with the removed run alone. A slot exists in every
 * hierarchy that hosts a managed controller (on hybrid hosts: the v1 memory
 * and pids hierarchies) and, where a cgroup2 hierarchy is mounted, in that
 * one too, which is used to track whether the slot holds processes.
 *
 * Every file access goes through struct cg_fs_ops so that a simulated
 * cgroupfs can stand in for the kernel in unit tests. All functions return 0
 * or a negative errno; output parameters are written only on success.
 *
 * Threads: the layer belongs to the loop thread. Only the functions marked
 * [any thread] below may also run on a worker thread (work.h), at the same
 * time as the loop thread uses the layer: they read only what cg_open set
 * and never the per-slot bookkeeping (inotify watches, memory.peak fds).
 * The fs ops must then be thread-safe themselves (cg_fs_real is: plain
 * syscalls; a simulated one needs a lock). cg_close only when no worker
 * call is running. */
#ifndef CGPOOL_CG_H
#define CGPOOL_CG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cg;

enum cg_hierarchy { CG_HIER_V2, CG_HIER_V1, CG_HIER_HYBRID };

struct cg_features {
	bool memory_reclaim;    /* memory.reclaim (v2, 5.19+); v1 reclaims with memory.force_empty */
	bool memory_peak;       /* a peak file: memory.peak (v2, 5.19+) or v1 memory.max_usage_in_bytes */
	bool memory_peak_reset; /* cg_slot_reset_peak works: writable memory.peak (v2, 6.12+),
				 * or v1 memory.max_usage_in_bytes (found by trying) */
	bool cgroup_kill;       /* cgroup.kill (5.14+) */
	bool clone_into_cgroup; /* clone3(CLONE_INTO_CGROUP), v2 only (5.7+) */
	bool dying_subsys_stat; /* nr_dying_subsys_memory in cgroup.stat (6.12+) */
};

struct cg_info {
	enum cg_hierarchy hierarchy;
	bool memory_v2;          /* memory controller on the cgroup2 hierarchy */
	bool tracking;           /* a cgroup2 hierarchy gives cgroup.events for slots */
	char kernel[65];         /* uname -r */
	char root[4096];         /* the pool root as a cgroup path, e.g. "/cgpool" */
	char memory_root[4096];  /* absolute directory of the root in the memory hierarchy */
	struct cg_features features;
};

/* File operations on absolute paths, so tests can simulate cgroupfs. */
struct cg_fs_ops {
	int (*mkdir)(void *ctx, const char *path);
	int (*rmdir)(void *ctx, const char *path);
	/* read up to len-1 bytes, NUL-terminate, return bytes read or -errno */
	ssize_t (*read)(void *ctx, const char *path, char *buf, size_t len);
	/* one write(2) of the whole string; 0 or -errno */
	int (*write)(void *ctx, const char *path, const char *s);
	int (*inode)(void *ctx, const char *path, uint64_t *ino);
	/* calls fn for each subdirectory name of path; a negative return of fn
	 * stops the walk and is returned */
	int (*list_dirs)(void *ctx, const char *path, int (*fn)(const char *name, void *ud), void *ud);
	/* Optional (NULL turns the feature off). open(2) with flags (O_CLOEXEC
	 * added), returning an fd or -errno: memory.peak is reset per open file
	 * (v2, 6.12+), so the reset and later reads need one fd kept open. */
	int (*open)(void *ctx, const char *path, int flags);
	/* Optional (NULL: no watching, cg_watch_fd() is -1). inotify_add_watch(2)
	 * on path with mask into the inotify fd ifd; the wd or -errno. */
	int (*watch)(void *ctx, int ifd, const char *path, uint32_t mask);
	/* Optional (NULL: every directory is listed). The number of
	 * subdirectories of a cgroup directory (cgroupfs keeps a directory's
	 * link count at 2 + its subdirectories), so walks skip the leaves. */
	int (*subdirs)(void *ctx, const char *path, uint64_t *n);
	/* Optional (NULL: list_dirs, then subdirs on each path). list_dirs
	 * with each subdirectory's own number of subdirectories, read beside
	 * the listing (a stat relative to the open directory, not a walk of
	 * the whole path); -1 where it could not be read. */
	int (*list_subdirs)(void *ctx, const char *path, int (*fn)(const char *name, int64_t nsub, void *ud),
			    void *ud);
	/* Optional (NULL: sync(2)). Write dirty data back, machine-wide. */
	void (*sync)(void *ctx);
	/* Optional (NULL: no devices.deny). Give the cgroup2 directory dir the
	 * device filter denying the normalised rules of deny ("c 195:0,b 8:*"),
	 * allowing every other device; "" takes the filter away. On failure
	 * the directory keeps the filter it had. */
	int (*devices)(void *ctx, const char *dir, const char *deny);
};
extern const struct cg_fs_ops cg_fs_real;

/* controller bits, same values as enum conf_ctrl */
#define CG_CTRL_MEMORY (1u << 0)
#define CG_CTRL_PIDS (1u << 1)
#define CG_CTRL_CPU (1u << 2)
#define CG_CTRL_IO (1u << 3)
#define CG_CTRL_CPUSET (1u << 4) /* cgroup v2 only */

/* Discover the hierarchies (libcgroup, /proc/self/mountinfo, /proc/self/cgroup),
 * create or adopt the pool root below every hierarchy hosting a controller in
 * ctrl_mask (and the cgroup2 tracking hierarchy), enable the controllers for
 * its children on v2. root is "auto" (the calling process's own cgroup in each
 * hierarchy; on v2 the process then moves itself into the leaf "<root>/cgpoold"
 * since inner nodes may not hold processes; started again from inside that
 * leaf, it takes the leaf's parent) or a cgroup path like "/cgpool".
 * On failure err says what failed and on what. Errors: -ENOENT no cgroup
 * filesystem or no memory controller mounted, -EACCES no permission,
 * -ENODEV a controller in ctrl_mask is missing. */
int cg_open(const char *root, unsigned ctrl_mask, struct cg **out, char *err, size_t errlen);
/* The same with another filesystem (tests); mountinfo/cgroup_file are the text
 * of /proc/self/mountinfo and /proc/self/cgroup to discover from. */
int cg_open_fs(const struct cg_fs_ops *ops, void *ctx, const char *mountinfo, const char *cgroup_file,
	       const char *root, unsigned ctrl_mask, struct cg **out, char *err, size_t errlen);
void cg_close(struct cg *cg);
const struct cg_info *cg_get_info(const struct cg *cg);
const char *cg_hierarchy_name(enum cg_hierarchy h); /* "v2", "v1", "hybrid" */

/* ---- slots: name is one path component, [A-Za-z0-9._-], not "." or ".." */
/* [any thread] the directory and its run in every hierarchy (on v2 the
 * directory gives its run the managed controllers). -EEXIST if the run
 * exists already everywhere. */
int cg_slot_create(struct cg *cg, const char *name);
/* The whole slot: cg_slot_rmdir, then the witness, then cg_slot_forget.
 * -ENOENT when it was gone everywhere already (forgotten too). */
int cg_slot_remove(struct cg *cg, const char *name);
/* [any thread] a retirement's removal: rmdir the run in every hierarchy
 * (memory last), then the directory in every hierarchy but memory's, which
 * stays as the run's witness (cg_slot_witness, then cg_slot_remove).
 * -ENOENT when the run was gone everywhere already. */
int cg_slot_rmdir(struct cg *cg, const char *name);
/* The slot's directory in the memory hierarchy, read as a place (struct
 * cg_place below): after cg_slot_rmdir, dying counts the removed run alone
 * (v2), and charged less local is what is still charged to it (v1).
 * -ENOENT when the directory is gone. */
struct cg_place;
int cg_slot_witness(struct cg *cg, const char *name, struct cg_place *out);
/* the slot's run exists (memory hierarchy) */
bool cg_slot_has_run(struct cg *cg, const char *name);
/* A slot found at start: on v2 its directory gives its run the controllers
 * managed now (a restart with more controllers: cpuset, say). One without a
 * run (made by a cgpoold before slots had one, or left half made) first gets
 * its run in every hierarchy, the directory's processes moved into it; the
 * directory keeps what was charged to it and the limits it had. *was_flat:
 * there was no run. */
int cg_slot_nest(struct cg *cg, const char *name, bool *was_flat);
/* loop thread: after a cg_slot_rmdir that returned 0 or -ENOENT, drop the
 * slot's inotify watch and memory.peak fd */
void cg_slot_forget(struct cg *cg, const char *name);
/* fn is called for each existing child directory of the root whose name
 * starts with prefix (in the memory hierarchy); the layer's own directories
 * (the "cgpoold" leaf, the ".cgpool-probe" probe) are not listed. */
int cg_slot_list(struct cg *cg, const char *prefix, int (*fn)(const char *name, void *ud), void *ud);
int cg_slot_path(struct cg *cg, const char *name, char *buf, size_t len); /* memory hierarchy dir */
int cg_slot_id(struct cg *cg, const char *name, uint64_t *id);             /* inode of that dir */
/* Move pid into the slot in every hierarchy, or in none: when a hierarchy
 * refuses it after others took it, it is moved back where /proc/<pid>/cgroup
 * said it was before. -ESRCH: no such process; -EIO: refused, and it could
 * not be moved back everywhere either. */
int cg_slot_attach(struct cg *cg, const char *name, pid_t pid);
/* populated: some process is in the slot or below it (cgroup.events
 * "populated" where tracking, else a non-empty cgroup.procs). */
int cg_slot_populated(struct cg *cg, const char *name, bool *populated);
/* Number of processes in the slot (cgroup.procs lines). */
int cg_slot_nprocs(struct cg *cg, const char *name, unsigned *n);

/* Give the cgroup2 mount the favordynmods option (cg_mount.c), keeping
 * its others; done says what was done. -EOPNOTSUPP with no cgroup2 or on a
 * simulated cgroupfs, -EINVAL from a kernel without the option (< 6.0). */
int cg_favordynmods(struct cg *cg, char *done, size_t len);

/* Resource settings use cgroup v2 file names (memory.max, memory.high,
 * memory.low, memory.swap.max, cpu.max, cpu.weight, io.weight, pids.max,
 * cpuset.cpus, cpuset.mems) and v2 value syntax; on a v1 memory hierarchy
 * the memory keys are mapped to their v1 files. -EOPNOTSUPP when the
 * hierarchy has no equivalent. devices.deny is no file: it gives the slot's
 * cgroup2 directory a device filter program (cg_fs_ops devices), on v2 and
 * hybrid, and is not saved by cg_slot_res_save (n = 0). */
bool cg_resource_supported(const struct cg *cg, const char *name);
/* [any thread] */
int cg_slot_set(struct cg *cg, const char *name, const char *resource, const char *value);

/* A resource's value as the kernel holds it now (its files, raw), to be
 * written back when a change of several values fails half way. */
struct cg_res_saved {
	int h;
	size_t n;
	const char *file[2];
	char value[2][64];
};
int cg_slot_res_save(struct cg *cg, const char *name, const char *resource, struct cg_res_saved *out);
int cg_slot_res_restore(struct cg *cg, const char *name, const struct cg_res_saved *saved);

struct cg_memory {
	uint64_t current;  /* memory.current / memory.usage_in_bytes */
	uint64_t peak;     /* memory.peak / memory.max_usage_in_bytes; 0 when absent */
	uint64_t oom_kill; /* memory.events oom_kill / memory.oom_control oom_kill */
	uint64_t file;     /* page cache bytes charged (memory.stat file / cache) */
	uint64_t anon;     /* anonymous bytes (memory.stat anon / rss) */
	uint64_t dirty;    /* dirty page cache (memory.stat file_dirty / dirty); 0 when absent */
	uint64_t writeback; /* under writeback (memory.stat file_writeback / writeback); 0 when absent */
	uint64_t swap;     /* swapped out (memory.swap.current / memory.memsw.usage_in_bytes less
			    * usage_in_bytes); 0 without swap accounting */
};
/* Loop thread: on v2 memory.peak is read through the slot's own fd after a
 * reset (per-slot bookkeeping). */
int cg_slot_memory(struct cg *cg, const char *name, struct cg_memory *out);
/* Only some counters (the others read as 0): fewer kernel files read. */
#define CG_MEM_CURRENT (1u << 0)
#define CG_MEM_PEAK (1u << 1)
#define CG_MEM_OOM (1u << 2)
#define CG_MEM_LRU (1u << 3) /* file and anon */
#define CG_MEM_DIRTY (1u << 4) /* dirty and writeback */
#define CG_MEM_ALL 0x1fu
#define CG_MEM_SWAP (1u << 5) /* swap, with current (not in CG_MEM_ALL) */
int cg_slot_memory_some(struct cg *cg, const char *name, unsigned what, struct cg_memory *out);
/* Reset the peak for a new run: -EOPNOTSUPP where the kernel cannot. On v2
 * the reset holds only for the file descriptor that wrote it, so the layer
 * keeps that one open until cg_slot_peak_close(): one fd per running slot,
 * none for the others. */
int cg_slot_reset_peak(struct cg *cg, const char *name);
void cg_slot_peak_close(struct cg *cg, const char *name);
/* [any thread] Reclaim up to bytes from the slot: memory.reclaim on v2
 * (-EAGAIN when the kernel could not reclaim that much), memory.force_empty
 * on v1 (bytes ignored). Either write can take long (it reclaims inline). */
int cg_slot_reclaim(struct cg *cg, const char *name, uint64_t bytes);

/* ---- the processes of a slot (cg_proc.c): supervision */
/* The pids in the slot (cgroup.procs), malloc'd into *out (free), *n of them. */
int cg_slot_pids(struct cg *cg, const char *name, pid_t **out, size_t *n);
/* The name of the slot pid is in now (the first directory below the pool
 * root, in the memory hierarchy), from /proc/PID/cgroup. -ENOENT: pid is
 * not below the pool root; -ESRCH: no such process. */
int cg_pid_slot(struct cg *cg, pid_t pid, char *name, size_t len);
/* Send sig to every process of the slot once; *n: how many were signalled. */
int cg_slot_signal(struct cg *cg, const char *name, int sig, unsigned *n);
/* Kill every process of the slot, also those forking meanwhile: cgroup.kill
 * where the kernel has it (5.14+, on the cgroup2 hierarchy, also on hybrid
 * hosts), else one round of SIGKILL to cgroup.procs with the slot frozen
 * meanwhile where cgroup.freeze exists (5.2+, cgroup2), which the caller
 * repeats until the slot is empty. *atomic tells which one it was. */
int cg_slot_kill(struct cg *cg, const char *name, bool *atomic);
/* Freeze or thaw every process of the slot (cgroup.freeze, 5.2+, on the
 * cgroup2 hierarchy, also on hybrid hosts). -EOPNOTSUPP without one. */
int cg_slot_freeze(struct cg *cg, const char *name, bool frozen);
/* A directory fd of the slot on the cgroup2 hierarchy, for clone3 with
 * CLONE_INTO_CGROUP (close it). *everywhere: the cgroup2 hierarchy is the
 * only one (pure v2), so a child born there is in the slot everywhere; else
 * it must still be moved into the other hierarchies. -EOPNOTSUPP without a
 * cgroup2 hierarchy or clone_into_cgroup. */
int cg_slot_dirfd(struct cg *cg, const char *name, int *fd, bool *everywhere);

/* ---- population changes without polling. cg_watch_fd() is an inotify fd to
 * put in the event loop (-1 when no cgroup2 hierarchy gives cgroup.events: the
 * caller then polls cg_slot_populated). cg_watch_read() reads the pending
 * events and calls fn with the name of each slot whose cgroup.events changed. */
int cg_watch_fd(const struct cg *cg);
int cg_slot_watch(struct cg *cg, const char *name);
int cg_slot_unwatch(struct cg *cg, const char *name);
int cg_watch_read(struct cg *cg, void (*fn)(const char *name, void *ud), void *ud);

/* ---- retirement witnesses */
struct cg_dying {
	uint64_t count;       /* dying memory cgroups the witness sees */
	uint64_t descendants; /* v2 nr_dying_descendants */
	uint64_t memory;      /* v2 nr_dying_subsys_memory, when has_subsys */
	bool has_subsys;
	const char *source;   /* which counters, for logs */
};
/* Dying memory cgroups: below the pool root on v2 (cgroup.stat); on v1,
 * machine-wide (/proc/cgroups num_cgroups minus the live directories of the
 * memory hierarchy), since v1 has no per-cgroup counter. On v2 the LRU
 * probe's group (CG_PROBE_PLACE) and the writeback clean-up's are left out. Counters can lag
 * rmdir: poll them, never read once. */
int cg_dying(struct cg *cg, struct cg_dying *out);
/* [any thread] v2: sync(2), then take a memory cgroup offline, an empty one
 * of our own (CG_WB_CLEANUP_NAME/offline below the pool root, made and
 * removed at once; its live parent stays, and cg_dying leaves what dies
 * below it out of the count). Each memcg going offline runs the kernel's
 * clean-up of offline writeback structures again: clean inodes still
 * attached to the writeback of a removed group move to the root's, which
 * lets the group be freed. Without it such a group waits for the next memcg
 * offline on the machine. -EOPNOTSUPP on v1 (no cgroup writeback there). */
#define CG_WB_CLEANUP_NAME "cgpool-wb-cleanup"
int cg_writeback_cleanup(struct cg *cg);
/* v1 only: the pool root's local (not hierarchical) LRU bytes, which grow by
 * what a removed child held when the kernel reparents. -EOPNOTSUPP on v2. */
int cg_root_local_lru(struct cg *cg, uint64_t *bytes);
/* A place of the daemon's own below the pool root, in the memory hierarchy
 * only: the directory place (a name, or a path of names), which holds no
 * process and no other child, and its one child place/CG_PLACE_RUN, where an
 * experiment charges pages and which it then removes. What the place reads
 * moves with that experiment alone, whatever else runs in or below the pool
 * root. */
#define CG_PLACE_RUN "run"
#define CG_PROBE_PLACE "cgpool-lru-probe" /* the LRU probe's (retire_probe.c); cg_dying leaves it out on v2 */
struct cg_place {
	uint64_t dying;   /* v2: dying cgroups below the place (cgroup.stat, the larger count) */
	uint64_t charged; /* bytes charged to the place and below it (memory.current / usage_in_bytes) */
	uint64_t local;   /* v1: page cache and anon bytes charged to the place itself (memory.stat cache + rss) */
	uint64_t lru_below; /* v1: page cache and anon bytes charged below it (total_cache + total_rss less
			     * local; usage_in_bytes also counts the kernel memory a removed child's
			     * objects moved up with) */
	bool has_dying, has_local;
};
/* Make place fresh (one left by a daemon that died is removed first:
 * -EBUSY while its run holds processes), the levels above it where missing,
 * and place/run; v2 gives memory to each level's children, v1 turns
 * use_hierarchy on. */
int cg_place_make(struct cg *cg, const char *place);
/* Move pid into place/run (memory hierarchy). */
int cg_place_attach(struct cg *cg, const char *place, pid_t pid);
/* Page cache and anon bytes charged to place/run. */
int cg_place_run_lru(struct cg *cg, const char *place, uint64_t *bytes);
/* rmdir place/run. */
int cg_place_remove_run(struct cg *cg, const char *place);
int cg_place_read(struct cg *cg, const char *place, struct cg_place *out);
/* rmdir place (its run first, when it is there): a removed run still dying
 * keeps place dying with it, below the levels above. */
int cg_place_remove(struct cg *cg, const char *place);
/* Remove the places below place (each with its run): what a daemon that
 * died left. -ENOENT when place is not there. */
int cg_place_clear(struct cg *cg, const char *place);
/* What in the pool root (memory hierarchy) is not cgpool's: processes other
 * than self, and child cgroups that are not slots or the daemon's own
 * places; the first of each, for a message. */
struct cg_shared {
	unsigned procs, dirs;
	pid_t pid;
	char dir[64];
};
int cg_root_shared(struct cg *cg, pid_t self, struct cg_shared *out);
/* The memory pressure file to put a PSI trigger on: the pool root's
 * memory.pressure on the cgroup2 hierarchy (v2, or the tracking hierarchy on
 * hybrid hosts), else /proc/pressure/memory. -EOPNOTSUPP without PSI. */
int cg_pressure_path(const struct cg *cg, char *buf, size_t len);

/* ---- cgroup2 directories by path (cg_dir.c), before the pool root is
 * open: systemd's scope for the slots is made with them (sd_scope.c). mnt is
 * the cgroup2 mount, path a cgroup path ("/system.slice/x-slots.scope"),
 * leaf a child directory of it or NULL. All return 0 or -errno. */
int cg_dir_exists(const char *mnt, const char *path);
/* the leaf made, or there already */
int cg_dir_mkdir(const char *mnt, const char *path, const char *leaf);
/* pid into the directory (its cgroup.procs) */
int cg_dir_move(const char *mnt, const char *path, const char *leaf, pid_t pid);
/* the first process in the directory; -ENOENT: none */
int cg_dir_first_pid(const char *mnt, const char *path, const char *leaf, pid_t *pid);
/* /proc/PID/cgroup says pid is in path (pure v2: "0::PATH") */
bool cg_dir_holds(pid_t pid, const char *path);

#endif
