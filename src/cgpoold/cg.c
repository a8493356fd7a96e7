/* cg.c - the cgroup layer: opening the pool root, slots.
 *
 * Discovery lives in cg_discover.c, resources, memory counters and the
 * feature probe in cg_res.c, the population watch in cg_watch.c. Every file
 * access goes through cg->ops. */
#include "config.h"

#include "cg_files.h"
#include "cg_internal.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ---- the real filesystem; ctx is a struct cg_real (cg_internal.h) */

/* The files a placement and a run's end touch each time: kept open. */
static bool kept_file(const char *path, bool write)
{
	static const char *const names[] = { "cgroup.procs", "cgroup.events", "memory.oom_control",
					     "memory.max_usage_in_bytes", "memory.usage_in_bytes", "memory.current",
					     "memory.events" };
	const char *base = strrchr(path, '/');

	if (!base || strncmp(path, "/proc/", 6) == 0)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(base + 1, names[i]) == 0)
			return write || i > 0;
	return false;
}

/* A pid list kept open for reading: cgroup.procs below the cgroup2 pool
 * root, where a read at offset 0 walks the cgroup's tasks again. On cgroup
 * v1 an open file goes on reading the pid list the kernel built for it
 * (cached for a second after each read). */
static bool kept_list(const struct cg_real *real, const char *path)
{
	size_t n = real->v2len;

	return n && strncmp(path, real->v2, n) == 0 && path[n] == '/' && strcmp(strrchr(path, '/'), "/cgroup.procs") == 0;
}

/* One read of a seq_file stops at its buffer (a page at least) less the
 * longest record ("4194304\n"): a shorter pid list read at once is whole. */
#define LIST_ONE_READ (4096 - 8)

/* /proc/PID/cgroup: one seq_file record, made whole at the first read */
static bool proc_cgroup(const char *path)
{
	size_t n = strlen(path);

	return strncmp(path, "/proc/", 6) == 0 && n > 7 && strcmp(path + n - 7, "/cgroup") == 0;
}

static int real_mkdir(void *ctx, const char *path)
{
	struct cg_real *real = ctx;

	if (real) /* a cgroup of this name removed behind our back */
		cg_files_forget(real->files, path);
	return mkdir(path, 0755) < 0 ? -errno : 0;
}

static int real_rmdir(void *ctx, const char *path)
{
	struct cg_real *real = ctx;

	if (real)
		cg_files_forget(real->files, path);
	return rmdir(path) < 0 ? -errno : 0;
}

static ssize_t real_read(void *ctx, const char *path, char *buf, size_t len)
{
	struct cg_real *real = ctx;
	ssize_t r;

	if (real && kept_file(path, false))
		return cg_files_read(real->files, path, buf, len);
	if (real && kept_list(real, path)) {
		r = cg_files_read(real->files, path, buf, len); /* one pread */
		if (r < 0 || ((size_t)r < len - 1 && r < LIST_ONE_READ))
			return r;
	}
	if (proc_cgroup(path))
		return file_read_once(path, buf, len);
	return file_read(path, buf, len);
}

static int real_write(void *ctx, const char *path, const char *s)
{
	struct cg_real *real = ctx;

	if (real && kept_file(path, true))
		return cg_files_write(real->files, path, s);
	return file_write_str(path, s);
}

static int real_inode(void *ctx, const char *path, uint64_t *ino)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	*ino = (uint64_t)st.st_ino;
	return 0;
}

static int real_subdirs(void *ctx, const char *path, uint64_t *n)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_nlink < 2)
		return -EINVAL;
	*n = (uint64_t)st.st_nlink - 2;
	return 0;
}

/* the subdirectories of path to fn (one of fn1, fnn): with their own
 * subdirectory counts for fnn, by a stat relative to the open directory */
static int list_dirs(const char *path, int (*fn1)(const char *name, void *ud),
		     int (*fnn)(const char *name, int64_t nsub, void *ud), void *ud)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int r = 0;

	if (!d)
		return -errno;
	while (r >= 0 && (errno = 0, de = readdir(d)) != NULL) {
		struct stat st;
		bool dir = de->d_type == DT_DIR, known = false;
		if (de->d_type == DT_UNKNOWN || (fnn && dir)) {
			known = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
			dir = known ? S_ISDIR(st.st_mode) : dir;
		}
		if (!dir || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fnn)
			r = fnn(de->d_name, known && st.st_nlink >= 2 ? (int64_t)st.st_nlink - 2 : -1, ud);
		else
			r = fn1(de->d_name, ud);
	}
	if (r >= 0 && !de && errno)
		r = -errno;
	closedir(d);
	return r < 0 ? r : 0;
}

static int real_list_dirs(void *ctx, const char *path, int (*fn)(const char *name, void *ud), void *ud)
{
	return list_dirs(path, fn, NULL, ud);
}

static int real_list_subdirs(void *ctx, const char *path, int (*fn)(const char *name, int64_t nsub, void *ud),
			     void *ud)
{
	return list_dirs(path, NULL, fn, ud);
}

static int real_open(void *ctx, const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int real_watch(void *ctx, int ifd, const char *path, uint32_t mask)
{
	int wd = inotify_add_watch(ifd, path, mask);

	return wd < 0 ? -errno : wd;
}

static int real_devices(void *ctx, const char *dir, const char *deny)
{
	return cg_bpf_devices(dir, deny);
}

const struct cg_fs_ops cg_fs_real = {
	.mkdir = real_mkdir,
	.rmdir = real_rmdir,
	.read = real_read,
	.write = real_write,
	.inode = real_inode,
	.list_dirs = real_list_dirs,
	.open = real_open,
	.watch = real_watch,
	.subdirs = real_subdirs,
	.list_subdirs = real_list_subdirs,
	.devices = real_devices,
};

/* ---- helpers shared with cg_discover.c and cg_res.c */

/* appends s (and a '/' before it when slash) at buf + *len, within PATH_MAX */
static bool path_add(char *buf, size_t *len, const char *s, bool slash)
{
	size_t n = strlen(s);

	if (*len + slash + n >= PATH_MAX)
		return false;
	if (slash)
		buf[(*len)++] = '/';
	memcpy(buf + *len, s, n + 1);
	*len += n;
	return true;
}

/* dir[/name][/file]; called for every file access, so no printf */
int cg_hpath(const struct cg *cg, int h, const char *name, const char *file, char *buf)
{
	size_t len = 0;

	if (!path_add(buf, &len, cg->hier[h].dir, false) || (name && !path_add(buf, &len, name, true)) ||
	    (file && !path_add(buf, &len, file, true)))
		return -ENAMETOOLONG;
	return 0;
}

/* a slot's processes, limits and counters live in its run: dir/name/run[/file] */
int cg_spath(const struct cg *cg, int h, const char *name, const char *file, char *buf)
{
	size_t len = 0;

	if (!path_add(buf, &len, cg->hier[h].dir, false) || (name && !path_add(buf, &len, name, true)) ||
	    (name && !path_add(buf, &len, CG_PLACE_RUN, true)) || (file && !path_add(buf, &len, file, true)))
		return -ENAMETOOLONG;
	return 0;
}

int cg_read(const struct cg *cg, const char *path, char *buf, size_t len)
{
	return (int)cg->ops->read(cg->ctx, path, buf, len);
}

int cg_write(const struct cg *cg, const char *path, const char *s)
{
	return cg->ops->write(cg->ctx, path, s);
}

bool cg_exists(const struct cg *cg, const char *path)
{
	uint64_t ino;

	return cg->ops->inode(cg->ctx, path, &ino) == 0;
}

int cg_keyed_u64(const char *text, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char num[32];
		size_t n;
		if (strncmp(l, key, kl) != 0 || l[kl] != ' ')
			continue;
		n = strcspn(l + kl + 1, "\n");
		if (n == 0 || n >= sizeof(num))
			return -EINVAL;
		memcpy(num, l + kl + 1, n);
		num[n] = '\0';
		return parse_uint(num, 0, UINT64_MAX, out);
	}
	return -ENOENT;
}

int cg_name_valid(const char *name)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len > NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != len)
		return -EINVAL;
	return 0;
}

/* ---- per-slot entries */

struct cg_slotent *cg_ent_find(struct cg *cg, const char *name)
{
	return hmap_get(&cg->ents, HMAP_STR(name));
}

struct cg_slotent *cg_ent_get(struct cg *cg, const char *name)
{
	struct cg_slotent *e = cg_ent_find(cg, name);
	size_t len = strlen(name);

	if (e)
		return e;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->name, name, len + 1);
	e->wd = -1;
	e->peak_fd = -1;
	if (hmap_put(&cg->ents, HMAP_STR(e->name), e) < 0) {
		free(e);
		return NULL;
	}
	return e;
}

void cg_ent_put(struct cg *cg, struct cg_slotent *e)
{
	if (!e || e->wd >= 0 || e->peak_fd >= 0)
		return;
	hmap_del(&cg->ents, HMAP_STR(e->name));
	free(e);
}

/* ---- opening */

/* Call fn on every directory from the hierarchy's mount point down to the
 * pool root, outermost first. */
static int walk_levels(struct cg *cg, const struct cg_hier *h,
		       int (*fn)(struct cg *cg, const struct cg_hier *h, const char *dir, char *err, size_t errlen),
		       char *err, size_t errlen)
{
	char buf[PATH_MAX];
	size_t i = strlen(h->mount);
	int r;

	memcpy(buf, h->dir, strlen(h->dir) + 1);
	for (;; i++) {
		char c = buf[i];
		if (c != '/' && c != '\0')
			continue;
		buf[i] = '\0';
		r = fn(cg, h, buf, err, errlen);
		buf[i] = c;
		if (r < 0 || c == '\0')
			return r;
	}
}

static int level_mkdir(struct cg *cg, const struct cg_hier *h, const char *dir, char *err, size_t errlen)
{
	int r = cg->ops->mkdir(cg->ctx, dir);

	if (r == -EEXIST)
		return 0;
	if (r < 0)
		cg_errf(err, errlen, "mkdir %s: %s", dir, strerror(-r));
	return r;
}

static bool word_in(const char *text, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = text; (p = strstr(p, word)) != NULL; p += wl)
		if ((p == text || p[-1] == ' ' || p[-1] == '\n') && (p[wl] == '\0' || p[wl] == ' ' || p[wl] == '\n'))
			return true;
	return false;
}

/* v2: make the hierarchy's managed controllers available to dir's children */
int cg_level_enable(struct cg *cg, const struct cg_hier *h, const char *dir, char *err, size_t errlen)
{
	char path[PATH_MAX], have[512] = "", on[512], plus[32];
	bool have_read = false;
	int r;

	/* cgroup.controllers only when one is missing: every slot found at
	 * start comes through here, and has them all but after a change */
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	r = cg_read(cg, path, on, sizeof(on));
	if (r < 0) {
		cg_errf(err, errlen, "read %s: %s", path, strerror(-r));
		return r;
	}
	for (int i = 0; i < CG_NCTRL; i++) {
		const char *c = cg_ctrls[i].v2name;
		if (!(h->ctrls & cg_ctrls[i].bit) || word_in(on, c))
			continue;
		if (!have_read) {
			char cpath[PATH_MAX];
			snprintf(cpath, sizeof(cpath), "%s/cgroup.controllers", dir);
			r = cg_read(cg, cpath, have, sizeof(have));
			if (r < 0) {
				cg_errf(err, errlen, "read %s: %s", cpath, strerror(-r));
				return r;
			}
			have_read = true;
		}
		if (!word_in(have, c)) {
			cg_errf(err, errlen, "controller %s: not available in %s/cgroup.controllers (not delegated)",
				c, dir);
			return -ENODEV;
		}
		snprintf(plus, sizeof(plus), "+%s", c);
		r = cg_write(cg, path, plus);
		if (r < 0) {
			/* EBUSY: processes in dir itself (no internal processes rule) */
			cg_errf(err, errlen, "enable %s in %s: %s%s", c, path, strerror(-r),
				r == -EBUSY ? " (processes in an inner cgroup)" : "");
			return r;
		}
	}
	return 0;
}

/* v2 with root auto: inner cgroups may not hold processes once controllers
 * are enabled for their children, so the daemon moves into a leaf. */
static int move_self(struct cg *cg, const struct cg_hier *h, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/%s", h->dir, CG_SELF_LEAF);
	r = cg->ops->mkdir(cg->ctx, path);
	if (r < 0 && r != -EEXIST) {
		cg_errf(err, errlen, "mkdir %s: %s", path, strerror(-r));
		return r;
	}
	strcat(path, "/cgroup.procs");
	r = cg_write(cg, path, "0");
	if (r < 0)
		cg_errf(err, errlen, "move self into %s: %s", path, strerror(-r));
	return r;
}

static int setup_root(struct cg *cg, char *err, size_t errlen)
{
	int r;

	for (unsigned k = 0; k < cg->nhier; k++) {
		const struct cg_hier *h = &cg->hier[k];
		if (strlen(h->dir) + NAME_MAX + 64 >= PATH_MAX) {
			cg_errf(err, errlen, "pool root %s: path too long", h->dir);
			return -ENAMETOOLONG;
		}
		if (!cg->auto_root && (r = walk_levels(cg, h, level_mkdir, err, errlen)) < 0)
			return r;
		if (!h->v2 || !h->ctrls)
			continue;
		if (cg->auto_root) {
			r = move_self(cg, h, err, errlen);
			if (r == 0)
				r = cg_level_enable(cg, h, h->dir, err, errlen);
		} else {
			r = walk_levels(cg, h, cg_level_enable, err, errlen);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int open_common(const struct cg_fs_ops *ops, void *ctx, const char *mountinfo, const char *cgroup_file,
		       const char *root, unsigned ctrl_mask, bool use_lc, struct cg **out, char *err, size_t errlen)
{
	struct cg *cg = calloc(1, sizeof(*cg));
	struct utsname u;
	int r;

	if (!cg)
		return -ENOMEM;
	cg->ops = ops;
	cg->ctx = ctx;
	cg->ifd = -1;
	hmap_init(&cg->ents, true);
	hmap_init(&cg->ents_by_wd, false);
	if (uname(&u) == 0)
		snprintf(cg->info.kernel, sizeof(cg->info.kernel), "%s", u.release);
	r = cg_discover(cg, mountinfo, cgroup_file, root, ctrl_mask | CG_CTRL_MEMORY, use_lc, err, errlen);
	if (r == 0)
		r = setup_root(cg, err, errlen);
	if (r == 0)
		r = cg_res_probe(cg, err, errlen);
	if (r == 0 && cg->track >= 0 && ops->watch) {
		cg->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (cg->ifd < 0) {
			r = -errno;
			cg_errf(err, errlen, "inotify_init1: %s", strerror(-r));
		}
	}
	if (r < 0) {
		cg_close(cg);
		return r;
	}
	*out = cg;
	return 0;
}

int cg_open_fs(const struct cg_fs_ops *ops, void *ctx, const char *mountinfo, const char *cgroup_file,
	       const char *root, unsigned ctrl_mask, struct cg **out, char *err, size_t errlen)
{
	if (!ops || !mountinfo || !cgroup_file || !out)
		return -EINVAL;
	return open_common(ops, ctx, mountinfo, cgroup_file, root, ctrl_mask, false, out, err, errlen);
}

/* a whole /proc file, however long */
static int read_all(const char *path, char **out, char *err, size_t errlen)
{
	size_t len = 16384;
	char *buf = NULL;

	for (;;) {
		char *b = realloc(buf, len);
		ssize_t n;
		if (!b) {
			free(buf);
			return -ENOMEM;
		}
		buf = b;
		n = file_read(path, buf, len);
		if (n < 0) {
			cg_errf(err, errlen, "read %s: %s", path, strerror((int)-n));
			free(buf);
			return (int)n;
		}
		if ((size_t)n < len - 1) {
			*out = buf;
			return 0;
		}
		len *= 2;
	}
}

int cg_open(const char *root, unsigned ctrl_mask, struct cg **out, char *err, size_t errlen)
{
	char *mountinfo = NULL, *cgroup_file = NULL;
	struct cg_real *real = NULL;
	int r;

	if (!out)
		return -EINVAL;
	r = read_all("/proc/self/mountinfo", &mountinfo, err, errlen);
	if (r == 0)
		r = read_all("/proc/self/cgroup", &cgroup_file, err, errlen);
	if (r == 0 && (real = calloc(1, sizeof(*real))) != NULL && cg_files_new(&real->files) < 0) {
		free(real);
		real = NULL; /* every access opens its file */
	}
	if (r == 0)
		r = open_common(&cg_fs_real, real, mountinfo, cgroup_file, root, ctrl_mask, true, out, err, errlen);
	if (r == 0 && real) {
		(*out)->real = real;
		if ((*out)->track >= 0) {
			snprintf(real->v2, sizeof(real->v2), "%s", (*out)->hier[(*out)->track].dir);
			real->v2len = strlen(real->v2);
		}
	} else if (real) {
		cg_files_free(real->files);
		free(real);
	}
	free(mountinfo);
	free(cgroup_file);
	return r;
}

void cg_close(struct cg *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->ents.cap; i++) {
		struct cg_slotent *e = cg->ents.v[i].val;
		if (!e)
			continue;
		if (e->peak_fd >= 0)
			close(e->peak_fd);
		free(e);
	}
	hmap_fini(&cg->ents);
	hmap_fini(&cg->ents_by_wd);
	if (cg->ifd >= 0)
		close(cg->ifd);
	if (cg->real) {
		cg_files_free(cg->real->files);
		free(cg->real);
	}
	free(cg);
}

const struct cg_info *cg_get_info(const struct cg *cg)
{
	return &cg->info;
}

const char *cg_hierarchy_name(enum cg_hierarchy h)
{
	static const char *const names[] = { [CG_HIER_V2] = "v2", [CG_HIER_V1] = "v1", [CG_HIER_HYBRID] = "hybrid" };

	return (unsigned)h < ARRAY_SIZE(names) ? names[h] : "unknown";
}

/* ---- slots */

/* mkdir path; *made when this call made it */
static int mkdir_kept(struct cg *cg, const char *path, bool *made)
{
	int r = cg->ops->mkdir(cg->ctx, path);

	*made = r == 0;
	return r == -EEXIST ? 0 : r;
}

/* Hierarchy k's part of a slot: its directory (the witness), the
 * controllers given to the directory's children on v2, and its run. */
static int slot_make(struct cg *cg, unsigned k, const char *name, bool *dir_made, bool *run_made)
{
	char path[PATH_MAX], err[256];
	int r = cg_hpath(cg, (int)k, name, NULL, path);

	*dir_made = *run_made = false;
	if (r == 0)
		r = mkdir_kept(cg, path, dir_made);
	if (r == 0 && cg->hier[k].v2 && cg->hier[k].ctrls)
		r = cg_level_enable(cg, &cg->hier[k], path, err, sizeof(err));
	if (r == 0)
		r = cg_spath(cg, (int)k, name, NULL, path);
	if (r == 0)
		r = mkdir_kept(cg, path, run_made);
	return r;
}

int cg_slot_create(struct cg *cg, const char *name)
{
	char path[PATH_MAX];
	bool dir_made[CG_NHIER_MAX] = { false }, run_made[CG_NHIER_MAX] = { false };
	unsigned existed = 0;
	int r = cg_name_valid(name);

	for (unsigned k = 0; r == 0 && k < cg->nhier; k++) {
		r = slot_make(cg, k, name, &dir_made[k], &run_made[k]);
		existed += r == 0 && !run_made[k];
	}
	if (r < 0) {
		/* undo this call's part, so a failed create leaves nothing new */
		for (unsigned k = 0; k < cg->nhier; k++) {
			if (run_made[k] && cg_spath(cg, (int)k, name, NULL, path) == 0)
				cg->ops->rmdir(cg->ctx, path);
			if (dir_made[k] && cg_hpath(cg, (int)k, name, NULL, path) == 0)
				cg->ops->rmdir(cg->ctx, path);
		}
		return r;
	}
	return existed == cg->nhier ? -EEXIST : 0;
}

bool cg_slot_has_run(struct cg *cg, const char *name)
{
	char path[PATH_MAX];

	return cg_name_valid(name) == 0 && cg_spath(cg, cg->mem, name, NULL, path) == 0 && cg_exists(cg, path);
}

/* the processes of hierarchy k's slot directory itself into its run, in
 * rounds while some fork meanwhile */
static int move_into_run(struct cg *cg, unsigned k, const char *name)
{
	char from[PATH_MAX], to[PATH_MAX], buf[16384];
	int r = cg_hpath(cg, (int)k, name, "cgroup.procs", from);

	if (r == 0)
		r = cg_spath(cg, (int)k, name, "cgroup.procs", to);
	for (int round = 0; r == 0 && round < 20; round++) {
		bool moved = false;
		r = cg_read(cg, from, buf, sizeof(buf));
		if (r <= 0)
			return r;
		for (char *l = buf, *nl; *l; l = nl ? nl + 1 : l + strlen(l)) {
			int w;
			nl = strchr(l, '\n');
			if (nl)
				*nl = '\0';
			if (!*l)
				continue;
			w = cg_write(cg, to, l);
			if (w < 0 && w != -ESRCH)
				return w;
			moved = true;
		}
		if (!moved)
			return 0;
		r = 0;
	}
	return r < 0 ? r : -EBUSY;
}

int cg_slot_nest(struct cg *cg, const char *name, bool *was_flat)
{
	char path[PATH_MAX], err[256];
	int r = cg_name_valid(name);

	if (r < 0)
		return r;
	*was_flat = !cg_slot_has_run(cg, name);
	for (unsigned k = 0; r == 0 && k < cg->nhier; k++) {
		bool made;
		if (*was_flat) {
			r = cg_hpath(cg, (int)k, name, NULL, path);
			if (r == 0 && !cg_exists(cg, path))
				r = mkdir_kept(cg, path, &made);
			if (r == 0)
				r = cg_spath(cg, (int)k, name, NULL, path);
			if (r == 0)
				r = mkdir_kept(cg, path, &made);
			if (r == 0)
				r = move_into_run(cg, k, name);
		}
		/* the controllers managed now, which may be more than when it was made */
		if (r == 0 && cg->hier[k].v2 && cg->hier[k].ctrls && cg_hpath(cg, (int)k, name, NULL, path) == 0)
			r = cg_level_enable(cg, &cg->hier[k], path, err, sizeof(err));
	}
	return r;
}

/* rmdir the run (which) or the directory of hierarchy k's slot; 1 when it
 * was gone already */
static int slot_rmdir_one(struct cg *cg, int k, const char *name, bool run)
{
	char path[PATH_MAX];
	int r = run ? cg_spath(cg, k, name, NULL, path) : cg_hpath(cg, k, name, NULL, path);

	if (r == 0)
		r = cg->ops->rmdir(cg->ctx, path);
	return r == -ENOENT ? 1 : r;
}

/* the runs, then the directories but the memory hierarchy's; known_gone:
 * a run that is not there is not asked to go */
static int slot_rmdirs(struct cg *cg, const char *name, bool known_gone)
{
	char path[PATH_MAX];
	unsigned gone = 0;
	int r, first = 0;

	if ((r = cg_name_valid(name)) < 0)
		return r;
	/* memory last: while it exists the slot's run is still there, so a retry finds it */
	for (int k = (int)cg->nhier - 1; k >= 0; k--) {
		if (known_gone && cg_spath(cg, k, name, NULL, path) == 0 && !cg_exists(cg, path))
			r = 1;
		else
			r = slot_rmdir_one(cg, k, name, true);
		if (r == 1)
			gone++;
		else if (r < 0 && first == 0)
			first = r;
	}
	if (first < 0)
		return first;
	/* the directories, but the memory hierarchy's: its witness stays */
	for (int k = (int)cg->nhier - 1; k >= 0; k--)
		if (k != cg->mem)
			slot_rmdir_one(cg, k, name, false);
	return gone == cg->nhier ? -ENOENT : 0;
}

int cg_slot_rmdir(struct cg *cg, const char *name)
{
	return slot_rmdirs(cg, name, false);
}

int cg_slot_witness(struct cg *cg, const char *name, struct cg_place *out)
{
	int r = cg_name_valid(name);

	return r < 0 ? r : cg_place_read(cg, name, out);
}

void cg_slot_forget(struct cg *cg, const char *name)
{
	if (cg_name_valid(name) < 0)
		return;
	cg_slot_unwatch(cg, name);
	cg_res_forget(cg, name);
}

int cg_slot_remove(struct cg *cg, const char *name)
{
	int r = slot_rmdirs(cg, name, true), w;

	if (r < 0 && r != -ENOENT)
		return r;
	w = slot_rmdir_one(cg, cg->mem, name, false);
	if (w < 0)
		return w;
	cg_slot_forget(cg, name); /* gone: else its watch and peak fd stay */
	return r == -ENOENT && w == 1 ? -ENOENT : 0;
}

struct list_ctx {
	const char *prefix;
	int (*fn)(const char *name, void *ud);
	void *ud;
};

static int list_one(const char *name, void *ud)
{
	const struct list_ctx *lc = ud;

	/* the layer's own directories are not slots */
	if (strcmp(name, CG_PROBE_NAME) == 0 || strcmp(name, CG_SELF_LEAF) == 0)
		return 0;
	if (strncmp(name, lc->prefix, strlen(lc->prefix)) != 0)
		return 0;
	return lc->fn(name, lc->ud);
}

int cg_slot_list(struct cg *cg, const char *prefix, int (*fn)(const char *name, void *ud), void *ud)
{
	struct list_ctx lc = { prefix ? prefix : "", fn, ud };

	if (!fn)
		return -EINVAL;
	return cg->ops->list_dirs(cg->ctx, cg->hier[cg->mem].dir, list_one, &lc);
}

int cg_slot_path(struct cg *cg, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	int r = cg_name_valid(name);

	if (r == 0)
		r = cg_spath(cg, cg->mem, name, NULL, path);
	if (r < 0)
		return r;
	if (strlen(path) >= len)
		return -ENAMETOOLONG;
	memcpy(buf, path, strlen(path) + 1);
	return 0;
}

int cg_slot_id(struct cg *cg, const char *name, uint64_t *id)
{
	char path[PATH_MAX];
	int r = cg_name_valid(name);

	if (r == 0)
		r = cg_spath(cg, cg->mem, name, NULL, path);
	if (r < 0)
		return r;
	return cg->ops->inode(cg->ctx, path, id);
}

/* The v1 name of a controller hierarchy k hosts, NULL for cgroup2 */
const char *cg_hier_v1name(const struct cg *cg, unsigned k)
{
	if (cg->hier[k].v2)
		return NULL;
	for (size_t i = 0; i < CG_NCTRL; i++)
		if (cg->hier[k].ctrls & cg_ctrls[i].bit)
			return cg_ctrls[i].v1name;
	return NULL;
}

/* An attach failed in hierarchy n: pid goes back where it was (before, the
 * text of /proc/<pid>/cgroup read first) in the hierarchies 0..n-1 it was
 * moved in, so it is never left in a slot in some hierarchies only. */
static int attach_undo(struct cg *cg, pid_t pid, const char *before, unsigned n)
{
	char path[PATH_MAX], cgpath[PATH_MAX], num[32];
	int r, first = 0;

	snprintf(num, sizeof(num), "%d", (int)pid);
	for (unsigned k = 0; k < n; k++) {
		r = cg_proc_path(before, cg_hier_v1name(cg, k), cgpath, sizeof(cgpath));
		if (r == 0 && snprintf(path, sizeof(path), "%s%s/cgroup.procs", cg->hier[k].mount,
				       strcmp(cgpath, "/") == 0 ? "" : cgpath) >= (int)sizeof(path))
			r = -ENAMETOOLONG;
		if (r == 0)
			r = cg_write(cg, path, num);
		if (r < 0 && first == 0)
			first = r;
	}
	return first;
}

int cg_slot_attach(struct cg *cg, const char *name, pid_t pid)
{
	char path[PATH_MAX], num[32], before[4096];
	ssize_t len = 0;
	int r = cg_name_valid(name);

	if (r < 0 || pid <= 0)
		return -EINVAL;
	snprintf(num, sizeof(num), "%d", (int)pid);
	if (cg->nhier > 1) {
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
		len = cg->ops->read(cg->ctx, path, before, sizeof(before) - 1);
		before[len > 0 ? len : 0] = '\0'; /* unreadable: the kernel says why at the first write */
	}
	/* memory first (index 0), the tracking hierarchy last */
	for (unsigned k = 0; k < cg->nhier; k++) {
		r = cg_spath(cg, (int)k, name, "cgroup.procs", path);
		if (r == 0)
			r = cg_write(cg, path, num);
		if (r < 0 && k > 0 && attach_undo(cg, pid, before, k) < 0)
			return -EIO;
		if (r < 0)
			return r;
	}
	return 0;
}

/* cgroup.procs of the slot, whole: in the cgroup2 hierarchy when there is
 * one (whose cgroup.events ends a run), else in the memory hierarchy */
int cg_read_procs(struct cg *cg, const char *name, char **out)
{
	char path[PATH_MAX], *buf = NULL;
	int r = cg_name_valid(name);

	if (r == 0)
		r = cg_spath(cg, cg->track >= 0 ? cg->track : cg->mem, name, "cgroup.procs", path);
	if (r < 0)
		return r;
	for (size_t len = 4096; len <= (64u << 20); len *= 2) {
		char *b = realloc(buf, len);
		if (!b) {
			free(buf);
			return -ENOMEM;
		}
		buf = b;
		r = cg_read(cg, path, buf, len);
		if (r < 0)
			break;
		if ((size_t)r < len - 1) {
			*out = buf;
			return 0;
		}
		r = -E2BIG;
	}
	free(buf);
	return r;
}

int cg_slot_nprocs(struct cg *cg, const char *name, unsigned *n)
{
	char *procs;
	unsigned count = 0;
	int r = cg_read_procs(cg, name, &procs);

	if (r < 0)
		return r;
	for (const char *p = procs; *p; p++)
		count += *p == '\n';
	if (procs[0] && procs[strlen(procs) - 1] != '\n')
		count++;
	free(procs);
	*n = count;
	return 0;
}

int cg_slot_populated(struct cg *cg, const char *name, bool *populated)
{
	char path[PATH_MAX], buf[256];
	uint64_t v;
	int r = cg_name_valid(name);

	if (r < 0)
		return r;
	if (cg->track < 0) {
		/* pure v1: no cgroup.events; the slot's own processes */
		r = cg_spath(cg, cg->mem, name, "cgroup.procs", path);
		if (r == 0)
			r = cg_read(cg, path, buf, sizeof(buf));
		if (r >= 0)
			*populated = r > 0;
		return r < 0 ? r : 0;
	}
	r = cg_spath(cg, cg->track, name, "cgroup.events", path);
	if (r == 0)
		r = cg_read(cg, path, buf, sizeof(buf));
	if (r >= 0)
		r = cg_keyed_u64(buf, "populated", &v);
	if (r < 0)
		return r;
	*populated = v != 0;
	return 0;
}
