/* cg_dying.c - the witnesses of retirement: dying memory cgroups below the
 * pool root, and the memory pressure file for PSI triggers. */
#include "config.h"

#include "cg_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROC_CGROUPS "/proc/cgroups"
#define PROC_PRESSURE_MEMORY "/proc/pressure/memory"

/* v2: the root's cgroup.stat. nr_dying_descendants is raised in the rmdir
 * path itself and dropped only once the cgroup (and so its memcg) is freed;
 * nr_dying_subsys_memory (6.12+) counts memcgs alone but, before 2026
 * kernels, was raised only when the asynchronous offline work ran. Taking
 * the larger of the two is never early and never misses a memcg. */
static int dying_v2(struct cg *cg, struct cg_dying *out)
{
	char path[PATH_MAX], buf[4096];
	uint64_t desc, mem = 0;
	int r = cg_hpath(cg, cg->mem, NULL, "cgroup.stat", path);

	if (r == 0)
		r = cg_read(cg, path, buf, sizeof(buf));
	if (r < 0)
		return r;
	r = cg_keyed_u64(buf, "nr_dying_descendants", &desc);
	if (r < 0)
		return r;
	out->has_subsys = cg_keyed_u64(buf, "nr_dying_subsys_memory", &mem) == 0;
	/* not retirements: what cg_writeback_cleanup took offline, and the
	 * LRU probe's removed group */
	for (size_t i = 0; i < 2; i++) {
		uint64_t d = 0, m = 0;
		if (cg_hpath(cg, cg->mem, i ? CG_PROBE_PLACE : CG_WB_CLEANUP_NAME, "cgroup.stat", path) < 0 ||
		    cg_read(cg, path, buf, sizeof(buf)) < 0)
			continue;
		cg_keyed_u64(buf, "nr_dying_descendants", &d);
		cg_keyed_u64(buf, "nr_dying_subsys_memory", &m);
		desc -= d < desc ? d : desc;
		mem -= m < mem ? m : mem;
	}
	out->descendants = desc;
	out->memory = mem;
	out->count = desc > mem ? desc : mem;
	out->source = out->has_subsys ? "cgroup.stat nr_dying_descendants/nr_dying_subsys_memory"
				      : "cgroup.stat nr_dying_descendants";
	return 0;
}

struct walk {
	struct cg *cg;
	char path[PATH_MAX];
	uint64_t dirs;
	int depth;
};

/* one live directory, name, below w->path: counted, then listed unless it
 * is a leaf (nsub 0, most slots: no readdir); nsub -1: not known */
static int count_one(struct walk *w, const char *name, int64_t nsub);

static int count_dir_n(const char *name, int64_t nsub, void *ud)
{
	return count_one(ud, name, nsub);
}

static int count_dir(const char *name, void *ud)
{
	return count_one(ud, name, -1);
}

/* the directories below w->path, each through count_one: with their own
 * subdirectory counts when the filesystem gives them beside the listing */
static int count_below(struct walk *w)
{
	const struct cg_fs_ops *ops = w->cg->ops;

	return ops->list_subdirs ? ops->list_subdirs(w->cg->ctx, w->path, count_dir_n, w)
				 : ops->list_dirs(w->cg->ctx, w->path, count_dir, w);
}

static int count_one(struct walk *w, const char *name, int64_t nsub)
{
	const struct cg_fs_ops *ops = w->cg->ops;
	size_t len = strlen(w->path);
	uint64_t sub;
	int r;

	if (w->depth > 64 || len + 1 + strlen(name) >= sizeof(w->path))
		return -ELOOP;
	w->dirs++;
	snprintf(w->path + len, sizeof(w->path) - len, "/%s", name);
	w->depth++;
	if (nsub < 0 && !ops->list_subdirs && ops->subdirs && ops->subdirs(w->cg->ctx, w->path, &sub) == 0)
		nsub = (int64_t)sub; /* one stat instead of a readdir */
	r = nsub == 0 ? 0 : count_below(w);
	w->depth--;
	w->path[len] = '\0';
	return r == -ENOENT ? 0 : r; /* removed while we walked */
}

/* v1 has no per-cgroup dying counter: /proc/cgroups counts every memcg not
 * yet freed, live or dying, machine-wide; subtract the live directories. */
static int dying_v1(struct cg *cg, struct cg_dying *out)
{
	char buf[4096];
	struct walk w = { .cg = cg, .dirs = 1 };
	unsigned long long total = 0;
	int r = cg_read(cg, PROC_CGROUPS, buf, sizeof(buf)), found = 0;

	if (r < 0)
		return r;
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned hier;
		if (sscanf(l, "memory %u %llu", &hier, &total) == 2) {
			found = 1;
			break;
		}
	}
	if (!found)
		return -ENOENT;
	snprintf(w.path, sizeof(w.path), "%s", cg->hier[cg->mem].mount);
	r = count_below(&w);
	if (r < 0)
		return r;
	out->count = total > w.dirs ? total - w.dirs : 0;
	out->descendants = out->count;
	out->memory = out->count;
	out->has_subsys = false;
	out->source = "/proc/cgroups minus live memory cgroups (machine-wide)";
	return 0;
}

int cg_dying(struct cg *cg, struct cg_dying *out)
{
	return cg->info.memory_v2 ? dying_v2(cg, out) : dying_v1(cg, out);
}

int cg_writeback_cleanup(struct cg *cg)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int r;

	if (!cg->info.memory_v2)
		return -EOPNOTSUPP;
	if (cg->ops->sync) /* a clean inode is moved; a dirty one stays */
		cg->ops->sync(cg->ctx);
	else
		sync();
	r = cg_hpath(cg, cg->mem, CG_WB_CLEANUP_NAME, NULL, dir);
	if (r == 0 && (size_t)snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir) >= sizeof(path))
		r = -ENAMETOOLONG;
	if (r == 0 && (r = cg->ops->mkdir(cg->ctx, dir)) == -EEXIST)
		r = 0;
	if (r == 0) /* its child must be a memcg of its own */
		r = cg->ops->write(cg->ctx, path, "+memory");
	if (r == 0 && (size_t)snprintf(path, sizeof(path), "%s/offline", dir) >= sizeof(path))
		r = -ENAMETOOLONG;
	if (r == 0 && (r = cg->ops->mkdir(cg->ctx, path)) == -EEXIST)
		r = 0; /* left by a daemon killed in between: it goes now */
	if (r == 0)
		r = cg->ops->rmdir(cg->ctx, path);
	return r;
}

/* PSI per cgroup lives on cgroup2 even without the memory controller there:
 * the pool root's memory.pressure (v2, or the tracking hierarchy on hybrid
 * hosts) covers the pool's own processes; /proc/pressure/memory the machine. */
int cg_pressure_path(const struct cg *cg, char *buf, size_t len)
{
	char path[PATH_MAX];
	int h = cg->info.memory_v2 ? cg->mem : cg->track;
	int r;

	if (h >= 0) {
		r = cg_hpath(cg, h, NULL, "memory.pressure", path);
		if (r < 0)
			return r;
	}
	if (h < 0 || !cg_exists(cg, path))
		snprintf(path, sizeof(path), "%s", PROC_PRESSURE_MEMORY);
	if (!cg_exists(cg, path))
		return -EOPNOTSUPP;
	if (snprintf(buf, len, "%s", path) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* v1 memory.stat has local counters: on a kernel that reparents, what a
 * removed child held shows up in its parent's own "cache" and "rss". */
int cg_root_local_lru(struct cg *cg, uint64_t *bytes)
{
	char path[PATH_MAX], buf[8192];
	uint64_t cache, rss;
	int r;

	if (cg->info.memory_v2)
		return -EOPNOTSUPP; /* v2 memory.stat is hierarchical only */
	r = cg_hpath(cg, cg->mem, NULL, "memory.stat", path);
	if (r == 0)
		r = cg_read(cg, path, buf, sizeof(buf));
	if (r < 0)
		return r;
	if (cg_keyed_u64(buf, "cache", &cache) < 0 || cg_keyed_u64(buf, "rss", &rss) < 0)
		return -EINVAL;
	*bytes = cache + rss;
	return 0;
}

/* ---- places of our own: the witness of one experiment */

/* place: one name or a path of names below the pool root ("a/b") */
static int place_valid(const char *place)
{
	char name[NAME_MAX + 1];
	const char *p = place, *slash;
	int r = 0;

	if (!place || !*place)
		return -EINVAL;
	for (; r == 0 && *p; p = *slash ? slash + 1 : slash) {
		slash = strchr(p, '/');
		if (!slash)
			slash = p + strlen(p);
		if ((size_t)(slash - p) > NAME_MAX)
			return -EINVAL;
		snprintf(name, sizeof(name), "%.*s", (int)(slash - p), p);
		r = cg_name_valid(name);
	}
	return r;
}

static int place_path(struct cg *cg, const char *place, const char *file, char *path)
{
	int r = place_valid(place);

	return r < 0 ? r : cg_hpath(cg, cg->mem, place, file, path);
}

/* mkdir path (kept when it exists), and let its children have memory */
static int place_level(struct cg *cg, const char *place)
{
	char path[PATH_MAX];
	int r = place_path(cg, place, NULL, path);

	if (r == 0 && (r = cg->ops->mkdir(cg->ctx, path)) == -EEXIST)
		r = 0;
	if (r < 0)
		return r;
	if (cg->info.memory_v2) {
		r = place_path(cg, place, "cgroup.subtree_control", path);
		return r < 0 ? r : cg->ops->write(cg->ctx, path, "+memory");
	}
	if (place_path(cg, place, "memory.use_hierarchy", path) == 0)
		cg->ops->write(cg->ctx, path, "1"); /* 1 already, or not a file on kernels where it always is */
	return 0;
}

/* the text of a file of place, whole (buf[16384]) */
static int place_text(struct cg *cg, const char *place, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	int r = place_path(cg, place, file, path);

	return r < 0 ? r : cg_read(cg, path, buf, len);
}

static int place_u64(struct cg *cg, const char *place, const char *file, const char *key, uint64_t *out)
{
	char buf[16384], *end;
	int r = place_text(cg, place, file, buf, sizeof(buf));

	if (r < 0)
		return r;
	if (key)
		return cg_keyed_u64(buf, key, out);
	errno = 0;
	*out = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

int cg_place_make(struct cg *cg, const char *place)
{
	char path[PATH_MAX], up[PATH_MAX];
	int r = place_valid(place);

	/* the levels above place, kept */
	for (const char *s = strchr(place, '/'); r == 0 && s; s = strchr(s + 1, '/')) {
		snprintf(up, sizeof(up), "%.*s", (int)(s - place), place);
		r = place_level(cg, up);
	}
	/* place itself, fresh: one left by a daemon that died goes first */
	if (r == 0)
		r = cg_place_remove(cg, place);
	if (r < 0 && r != -ENOENT)
		return r;
	r = place_level(cg, place);
	if (r == 0)
		r = place_path(cg, place, CG_PLACE_RUN, path);
	return r < 0 ? r : cg->ops->mkdir(cg->ctx, path);
}

int cg_place_attach(struct cg *cg, const char *place, pid_t pid)
{
	char path[PATH_MAX], s[24];
	int r = place_path(cg, place, CG_PLACE_RUN "/cgroup.procs", path);

	snprintf(s, sizeof(s), "%d", (int)pid);
	return r < 0 ? r : cg->ops->write(cg->ctx, path, s);
}

int cg_place_run_lru(struct cg *cg, const char *place, uint64_t *bytes)
{
	const char *file = cg->info.memory_v2 ? "file" : "cache", *anon = cg->info.memory_v2 ? "anon" : "rss";
	uint64_t f, a;
	int r = place_u64(cg, place, CG_PLACE_RUN "/memory.stat", file, &f);

	if (r == 0)
		r = place_u64(cg, place, CG_PLACE_RUN "/memory.stat", anon, &a);
	if (r == 0)
		*bytes = f + a;
	return r;
}

int cg_place_remove_run(struct cg *cg, const char *place)
{
	char path[PATH_MAX];
	int r = place_path(cg, place, CG_PLACE_RUN, path);

	return r < 0 ? r : cg->ops->rmdir(cg->ctx, path);
}

int cg_place_read(struct cg *cg, const char *place, struct cg_place *out)
{
	struct cg_place p = { 0 };
	uint64_t cache, rss, mem = 0;
	char text[16384];
	int r;

	/* each file read once, its keys taken from that one reading */
	if (cg->info.memory_v2) {
		r = place_u64(cg, place, "memory.current", NULL, &p.charged);
		if (r == 0 && (r = place_text(cg, place, "cgroup.stat", text, sizeof(text))) > 0)
			r = 0;
		if (r == 0)
			r = cg_keyed_u64(text, "nr_dying_descendants", &p.dying);
		if (r == 0 && cg_keyed_u64(text, "nr_dying_subsys_memory", &mem) == 0 && mem > p.dying)
			p.dying = mem;
		p.has_dying = true;
	} else {
		uint64_t tcache, trss;
		r = place_u64(cg, place, "memory.usage_in_bytes", NULL, &p.charged);
		if (r == 0 && (r = place_text(cg, place, "memory.stat", text, sizeof(text))) > 0)
			r = 0;
		if (r == 0)
			r = cg_keyed_u64(text, "cache", &cache);
		if (r == 0)
			r = cg_keyed_u64(text, "rss", &rss);
		if (r == 0)
			r = cg_keyed_u64(text, "total_cache", &tcache);
		if (r == 0)
			r = cg_keyed_u64(text, "total_rss", &trss);
		p.local = cache + rss;
		p.lru_below = tcache + trss > p.local ? tcache + trss - p.local : 0;
		p.has_local = true;
	}
	if (r < 0)
		return r;
	*out = p;
	return 0;
}

int cg_place_remove(struct cg *cg, const char *place)
{
	char path[PATH_MAX];
	int r = cg_place_remove_run(cg, place);

	if (r < 0 && r != -ENOENT)
		return r;
	r = place_path(cg, place, NULL, path);
	return r < 0 ? r : cg->ops->rmdir(cg->ctx, path);
}

/* ---- a pool root shared with others */

static bool ours(const char *name)
{
	return strncmp(name, "slot-", 5) == 0 || strcmp(name, CG_PROBE_PLACE) == 0 ||
	       strcmp(name, CG_WB_CLEANUP_NAME) == 0 || strcmp(name, CG_PROBE_NAME) == 0 ||
	       strcmp(name, CG_SELF_LEAF) == 0;
}

static int foreign_dir(const char *name, void *ud)
{
	struct cg_shared *sh = ud;

	if (ours(name))
		return 0;
	if (sh->dirs++ == 0)
		snprintf(sh->dir, sizeof(sh->dir), "%s", name);
	return 0;
}

int cg_root_shared(struct cg *cg, pid_t self, struct cg_shared *out)
{
	char path[PATH_MAX];
	static char buf[65536];
	struct cg_shared sh = { 0 };
	int r = cg_hpath(cg, cg->mem, NULL, "cgroup.procs", path);

	if (r == 0)
		r = cg_read(cg, path, buf, sizeof(buf));
	if (r < 0)
		return r;
	for (char *l = buf; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		pid_t pid = (pid_t)strtol(l, NULL, 10);
		if (pid > 0 && pid != self && sh.procs++ == 0)
			sh.pid = pid;
	}
	r = cg->ops->list_dirs(cg->ctx, cg->hier[cg->mem].dir, foreign_dir, &sh);
	if (r < 0)
		return r;
	*out = sh;
	return 0;
}

struct clear_ctx {
	struct cg *cg;
	const char *place;
};

static int clear_one(const char *name, void *ud)
{
	struct clear_ctx *c = ud;
	char sub[PATH_MAX];

	if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", c->place, name) < sizeof(sub))
		cg_place_remove(c->cg, sub);
	return 0;
}

int cg_place_clear(struct cg *cg, const char *place)
{
	char path[PATH_MAX];
	struct clear_ctx c = { cg, place };
	int r = place_path(cg, place, NULL, path);

	return r < 0 ? r : cg->ops->list_dirs(cg->ctx, path, clear_one, &c);
}
