/* cgsim_internal.h - shared by the simulated cgroupfs's files only:
 * cgsim.c (setup, the cg_fs_ops, faults and call records), cgsim_model.c
 * (the kernel's model: cgroup trees, processes, charges, dying groups) and
 * cgsim_files.c (the interface files' contents and writes, /proc). */
#ifndef CGPOOL_TEST_CGSIM_INTERNAL_H
#define CGPOOL_TEST_CGSIM_INTERNAL_H

#include "cgsim.h"

#include <limits.h>
#include <pthread.h>

#define HMAX 6

#define PAGE 4096ULL

#define V1_UNLIMITED 9223372036854771712ULL

#define PIDS_LIMIT 4194304ULL

#define VAL_MAX 72

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

enum { C_MEMORY = 1, C_PIDS = 2, C_CPU = 4, C_IO = 8, C_CPUSET = 16, C_HUGETLB = 32, C_RDMA = 64, C_MISC = 128 };

#define C_ALL_V2 255u

#define C_DOMAIN (C_MEMORY | C_IO | C_HUGETLB | C_RDMA | C_MISC) /* no internal processes */

struct hier {
	char mount[64];
	const char *opts;   /* v1 super options, "memory" */
	const char *cgname; /* field 2 of /proc/self/cgroup */
	int id;
	bool v2;
	unsigned ctrls;
	struct node *root;
	uint64_t pop_sig;   /* where the processes were when npop was last counted */
	bool pop_counted;
};

#define NFILES 56

struct node {
	char name[NAME_MAX + 1];
	struct node *parent;
	struct node **kids; /* live and dying */
	size_t nkids, capkids;
	struct hier *h;
	uint64_t ino;
	bool dying;
	unsigned lag;    /* reads left once it may be freed */
	unsigned subsys_wait; /* reads before nr_dying_subsys_* counts it */
	unsigned css;    /* controllers with state here */
	unsigned subtree; /* v2 subtree_control */
	uint64_t file, anon, dirty, peak, oom, reclaimed;
	uint64_t wb;     /* dying, reparented: dirty bytes whose writeback still pins it */
	unsigned inodes; /* inodes whose writeback is attached to this memcg ... */
	bool inodes_dirty; /* ... and whether they are dirty (cgsim_attach_inode) */
	unsigned reclaim_calls, npop;
	bool pop_seen;
	char *val[NFILES];    /* stored settings, NULL: the default */
	char *shadow[NFILES]; /* watched files: a real file per (node, file) */
};

struct proc {
	pid_t pid;
	bool child; /* ours to kill */
	struct node *at[HMAX];
};

struct pfd {
	int fd; /* our dup of what ops->open returned */
	int theirs;   /* what ops->open returned: once the caller closed it, the pfd goes */
	uint64_t ino; /* of the memfd, to tell a reused fd number */
	struct node *node;
	uint64_t peak;
	char last[32];
};

struct rule {
	enum cgsim_op op;
	char *pat;
	int err, count;
	unsigned usec; /* delay rule when err == 0 */
};

struct call {
	enum cgsim_op op;
	char *path, *val;
	int res;
};

struct cgsim {
	pthread_mutex_t mu; /* recursive: held by every op and public call (SIM_LOCKED) */
	struct cgsim_opts o;
	char self[PATH_MAX];
	struct cg_fs_ops ops;
	struct hier h[HMAX];
	unsigned nh;
	struct hier *memh;
	uint64_t next_ino;
	struct proc *procs;
	size_t nprocs;
	struct pfd *pfds;
	size_t npfds;
	struct rule *rules;
	size_t nrules;
	struct call *calls;
	size_t ncalls;
	size_t capcalls; /* room in calls: grown by doubling (one realloc per call made 10,000-slot
			  * tests quadratic, under ASan most of all) */
	char tmpdir[PATH_MAX]; /* in $TMPDIR (/tmp when unset) */
	char mi_text[4096], cg_text[4096];
	char *hook_pat;
	cgsim_write_fn hook;
	void *hook_ud;
	unsigned syncs; /* ops->sync calls */
};

struct sb {
	char *p;
	size_t n, cap;
	bool oom;
};

struct tot {
	uint64_t file, anon, dirty, oom;
	unsigned live, dying, live_mem, dying_mem, live_pids, dying_pids;
};

/* The one lock: SIM_LOCKED(sim) as the first line of a function holds it
 * until the function returns (a write hook calls public functions: the
 * mutex is recursive). cgsim.c */
struct cgsim *sim_lock(const struct cgsim *sim);
void sim_unlock_at_exit(struct cgsim **held);
#define SIM_LOCKED(sim) \
	struct cgsim *sim_held_ __attribute__((cleanup(sim_unlock_at_exit), unused)) = sim_lock(sim)

/* cgsim_model.c */
char *sim_rel_path(const struct node *n, char *buf);
struct node *sim_node_new(struct cgsim *sim, struct hier *h, struct node *parent, const char *name);
void sim_node_free(struct cgsim *sim, struct node *n);
struct node *sim_kid(const struct node *n, const char *name, size_t len);
struct node *sim_node_at(struct hier *h, const char *rel, bool nearest);
const char *sim_to_rel(struct cgsim *sim, const char *path, struct hier **hp);
bool sim_subtree_has(const struct node *top, const struct node *n);
struct tot sim_totals(const struct node *n);
uint64_t sim_current(const struct node *n);
void sim_reap(struct cgsim *sim, struct node *n, bool tick);
void sim_reap_all(struct cgsim *sim);
struct proc *sim_proc_find(struct cgsim *sim, pid_t pid);
unsigned sim_local_procs(const struct cgsim *sim, const struct node *n);
void sim_count_pop(struct cgsim *sim, struct hier *h);
void sim_sync_events(struct cgsim *sim);
void sim_pfd_refresh(struct cgsim *sim);
uint64_t sim_reclaim(struct node *n, uint64_t want);
int sim_mkdir_at(struct cgsim *sim, const char *path);
/* ops->sync: every attached inode turns clean */
void sim_sync(struct cgsim *sim);
int sim_rmdir_node(struct cgsim *sim, struct node *n);
int sim_peak_fd(struct cgsim *sim, struct node *n);
uint64_t sim_proc_exit(struct cgsim *sim, pid_t pid);
void sim_sweep(struct cgsim *sim);

/* cgsim_files.c */
int sim_file_index(const char *name);
int sim_file_on(const struct cgsim *sim, const struct node *n, const char *name);
int sim_resolve(struct cgsim *sim, const char *path, struct node **np, int *fp);
void sim_proc_cgroup_text(struct cgsim *sim, const struct proc *pr, struct sb *b);
ssize_t sim_do_read(struct cgsim *sim, const char *path, char *buf, size_t len, bool consume);
int sim_file_write(struct cgsim *sim, struct node *n, int f, const char *s); /* -EACCES: read-only */
const char *sim_file_name(int f);

#endif
