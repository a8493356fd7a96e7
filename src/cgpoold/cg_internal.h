/* cg_internal.h - private to the cgroup layer (cg.c, cg_discover.c, cg_res.c).
 * Nothing outside those files may include it: the rest of the daemon sees
 * only cg.h. */
#ifndef CGPOOL_CG_INTERNAL_H
#define CGPOOL_CG_INTERNAL_H

#include "cg.h"
#include "hmap.h"

#include <limits.h>

#define CG_NCTRL 5                   /* CG_CTRL_MEMORY .. CG_CTRL_CPUSET */
#define CG_NHIER_MAX (CG_NCTRL + 1)  /* one per controller, plus tracking */
#define CG_PROBE_NAME ".cgpool-probe" /* short-lived child used to probe features */
#define CG_SELF_LEAF "cgpoold"          /* v2, root auto: the daemon's own leaf */

/* One mounted hierarchy the pool uses. */
struct cg_hier {
	char mount[PATH_MAX]; /* mount point */
	char dir[PATH_MAX];   /* directory of the pool root */
	unsigned ctrls;       /* managed controllers (CG_CTRL_*) it hosts */
	bool v2;              /* a cgroup2 hierarchy */
};

/* Per-slot state that outlives one call: the inotify watch on the tracking
 * cgroup.events and the memory.peak fd whose reset is local to it (v2). */
struct cg_slotent {
	int wd;      /* -1: not watched */
	int peak_fd; /* -1: none */
	char name[]; /* the slot's directory name */
};

/* The real filesystem's ctx: the files kept open, and the cgroup2 pool root
 * below which a pid list may be read from a kept file. */
struct cg_real {
	struct cg_files *files;
	char v2[PATH_MAX]; /* "" when there is no cgroup2 hierarchy */
	size_t v2len;
};

struct cg {
	const struct cg_fs_ops *ops;
	void *ctx;
	struct cg_info info;
	struct cg_hier hier[CG_NHIER_MAX];
	unsigned nhier;
	int mem;                   /* index in hier of the memory hierarchy */
	int track;                 /* index of the cgroup2 hierarchy, -1 when none */
	int ctrl_hier[CG_NCTRL];   /* index per controller, -1 when not managed */
	bool auto_root;            /* root was "auto" */
	int ifd;                   /* inotify fd, -1 without tracking */
	struct hmap ents;          /* name -> struct cg_slotent */
	struct hmap ents_by_wd;    /* inotify wd -> struct cg_slotent */
	struct cg_real *real;      /* the real filesystem's ctx, NULL simulated */
};

/* controller table: bit, v2 name, v1 name */
struct cg_ctrl_desc {
	unsigned bit;
	const char *v2name;
	const char *v1name;
};
extern const struct cg_ctrl_desc cg_ctrls[CG_NCTRL];
/* The cgroup path of a process in a v1 hierarchy carrying v1name, or in the
 * cgroup2 one (v1name NULL), from the "ID:CONTROLLERS:PATH" lines of
 * /proc/<pid>/cgroup. -ENOENT: no such line. */
int cg_proc_path(const char *text, const char *v1name, char *out, size_t len);
/* the v1 name of hierarchy k's first controller (NULL: the cgroup2 one) */
const char *cg_hier_v1name(const struct cg *cg, unsigned k);

/* cg_fs_real's devices (cg_bpf.c) */
int cg_bpf_devices(const char *dir, const char *deny);

void cg_errf(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Fill cg->hier, nhier, mem, track, ctrl_hier and info.hierarchy, memory_v2,
 * tracking, root, memory_root from the text of /proc/self/mountinfo and
 * /proc/self/cgroup. use_libcgroup: locate the v1 controllers with libcgroup
 * (the real system), falling back to the text. */
int cg_discover(struct cg *cg, const char *mountinfo, const char *cgroup_file, const char *root,
		unsigned ctrl_mask, bool use_libcgroup, char *err, size_t errlen);

/* "<hier dir>/<name>/<file>" (name and file may be NULL) into buf[PATH_MAX] */
int cg_hpath(const struct cg *cg, int h, const char *name, const char *file, char *buf);
/* a slot's run: "<hier dir>/<name>/run/<file>" (name NULL: the root's, as cg_hpath) */
int cg_spath(const struct cg *cg, int h, const char *name, const char *file, char *buf);
/* v2: make the hierarchy's managed controllers available to dir's children */
int cg_level_enable(struct cg *cg, const struct cg_hier *h, const char *dir, char *err, size_t errlen);
int cg_read(const struct cg *cg, const char *path, char *buf, size_t len);
int cg_write(const struct cg *cg, const char *path, const char *s);
bool cg_exists(const struct cg *cg, const char *path);
/* the value of "key N" in a flat-keyed file's text; -ENOENT when absent */
int cg_keyed_u64(const char *text, const char *key, uint64_t *out);
int cg_name_valid(const char *name);
/* the slot's cgroup.procs (memory hierarchy), whole, malloc'd */
int cg_read_procs(struct cg *cg, const char *name, char **out);

/* per-slot entries (cg.c) */
struct cg_slotent *cg_ent_find(struct cg *cg, const char *name);
struct cg_slotent *cg_ent_get(struct cg *cg, const char *name); /* find or add */
void cg_ent_put(struct cg *cg, struct cg_slotent *e);             /* drop when unused */

/* cg_res.c */
int cg_res_probe(struct cg *cg, char *err, size_t errlen);
void cg_res_forget(struct cg *cg, const char *name); /* close the slot's peak fd */

#endif
