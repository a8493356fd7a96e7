/* cg_discover.c - where the cgroup hierarchies are and which one hosts what.
 *
 * Input is the text of /proc/self/mountinfo and /proc/self/cgroup (so tests
 * can hand in any layout) plus, for the real system, libcgroup's view of the
 * v1 controllers. libcgroup knows neither mount roots (bind-mounted subtrees)
 * nor the cgroup2 hierarchy's tracking role, so the text stays the authority
 * for cgroup2, for the mount root of every mount and for the classification;
 * libcgroup picks the mount point and own path of a v1 controller when it can
 * answer and its mount point is one the text also lists. */
#include "config.h"

#include "cg_internal.h"
#include "util.h"

#include <errno.h>
#include <libcgroup.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct cg_ctrl_desc cg_ctrls[CG_NCTRL] = {
	{ CG_CTRL_MEMORY, "memory", "memory" },
	{ CG_CTRL_PIDS, "pids", "pids" },
	{ CG_CTRL_CPU, "cpu", "cpu" },
	{ CG_CTRL_IO, "io", "blkio" },
	{ CG_CTRL_CPUSET, "cpuset", "cpuset" },
};

/* A v1 mount with one of these is a controller hierarchy; "name=systemd"
 * alone is not, and does not make a layout hybrid. */
static const char *const v1_known[] = {
	"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "net_cls",
	"blkio", "perf_event", "net_prio", "hugetlb", "pids", "rdma", "misc",
};

struct mnt {
	char point[PATH_MAX]; /* mount point */
	char root[PATH_MAX];  /* cgroup path shown at the mount point */
	bool v2;
	bool v1ctrl;          /* v1 mount with a real controller */
	unsigned ctrls;       /* CG_CTRL_* it hosts */
};

struct mnts {
	struct mnt *v;
	size_t n;
};

void cg_errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static int unescape(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s; s++) {
		char c = *s;
		if (c == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			c = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		}
		if (o + 1 >= len)
			return -ENAMETOOLONG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static bool in_list(const char *word, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(word, list[i]) == 0)
			return true;
	return false;
}

/* v1: the superblock options name the controllers */
static void v1_ctrls(char *opts, struct mnt *m)
{
	char *save = NULL;

	for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (in_list(o, v1_known, ARRAY_SIZE(v1_known)))
			m->v1ctrl = true;
		for (size_t i = 0; i < CG_NCTRL; i++)
			if (strcmp(o, cg_ctrls[i].v1name) == 0)
				m->ctrls |= cg_ctrls[i].bit;
	}
}

/* cgroup2: the mount's cgroup.controllers names them */
static int v2_ctrls(const struct cg *cg, struct mnt *m, char *err, size_t errlen)
{
	char path[PATH_MAX], buf[1024], *save = NULL;
	int r;

	if (snprintf(path, sizeof(path), "%s/cgroup.controllers", m->point) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = cg_read(cg, path, buf, sizeof(buf));
	if (r < 0) {
		cg_errf(err, errlen, "read %s: %s", path, strerror(-r));
		return r;
	}
	for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		for (size_t i = 0; i < CG_NCTRL; i++)
			if (strcmp(w, cg_ctrls[i].v2name) == 0)
				m->ctrls |= cg_ctrls[i].bit;
	return 0;
}

/* One mountinfo line, split in place: "ID PARENT DEV ROOT POINT OPTS [TAGS] - FSTYPE SRC SUPEROPTS".
 * Returns 1 with *m filled for a cgroup mount, 0 for any other line. */
static int parse_mount_line(char *line, struct mnt *m)
{
	char *f[64], *save = NULL;
	size_t n = 0, dash = 0;

	for (char *t = strtok_r(line, " ", &save); t && n < ARRAY_SIZE(f); t = strtok_r(NULL, " ", &save))
		f[n++] = t;
	for (size_t i = 6; i < n && !dash; i++)
		if (strcmp(f[i], "-") == 0)
			dash = i;
	if (!dash || n < dash + 4)
		return 0;
	memset(m, 0, sizeof(*m));
	if (strcmp(f[dash + 1], "cgroup2") == 0)
		m->v2 = true;
	else if (strcmp(f[dash + 1], "cgroup") != 0)
		return 0;
	if (unescape(f[3], m->root, sizeof(m->root)) < 0 || unescape(f[4], m->point, sizeof(m->point)) < 0)
		return 0;
	if (!m->v2)
		v1_ctrls(f[dash + 3], m);
	return 1;
}

static int parse_mountinfo(const struct cg *cg, const char *text, struct mnts *out, char *err, size_t errlen)
{
	char *copy = strdup(text), *save = NULL;
	struct mnt m;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct mnt *v;
		if (parse_mount_line(l, &m) != 1)
			continue;
		if (m.v2 && (r = v2_ctrls(cg, &m, err, errlen)) < 0)
			break;
		v = realloc(out->v, (out->n + 1) * sizeof(*v));
		if (!v) {
			r = -ENOMEM;
			break;
		}
		out->v = v;
		out->v[out->n++] = m;
	}
	free(copy);
	return r;
}

/* word is one of the comma-separated items in s[0..len) */
static bool csv_has(const char *s, size_t len, const char *word)
{
	const char *end = s + len;
	size_t wl = strlen(word);

	while (s < end) {
		const char *c = memchr(s, ',', (size_t)(end - s));
		size_t n = c ? (size_t)(c - s) : (size_t)(end - s);
		if (n == wl && strncmp(s, word, wl) == 0)
			return true;
		s += n + 1;
	}
	return false;
}

/* The path of this process's cgroup in a v1 hierarchy carrying v1name, or
 * in the cgroup2 one (v1name NULL), from "ID:CONTROLLERS:PATH" lines. */
int cg_proc_path(const char *text, const char *v1name, char *out, size_t len)
{
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
		const char *c1 = memchr(l, ':', (size_t)(end - l));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		bool match = false;

		if (c2 && c2 + 1 < end && c2[1] == '/')
			match = v1name ? csv_has(c1 + 1, (size_t)(c2 - c1 - 1), v1name)
				       : c2 == c1 + 1 && c1 == l + 1 && l[0] == '0';
		if (match) {
			size_t pl = (size_t)(end - c2 - 1);
			if (pl >= len)
				return -ENAMETOOLONG;
			memcpy(out, c2 + 1, pl);
			out[pl] = '\0';
			return 0;
		}
		l = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

static bool path_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return true;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* the directory of cgroup path p on mount m */
static int mnt_dir(const struct mnt *m, const char *p, char *buf, size_t len)
{
	const char *rest = p;

	if (!path_under(p, m->root))
		return -ENOENT;
	if (strcmp(m->root, "/") != 0)
		rest = p + strlen(m->root);
	if (strcmp(rest, "/") == 0)
		rest = "";
	if (snprintf(buf, len, "%s%s", m->point, rest) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* An explicit root: absolute, no empty, "." or ".." components. */
static bool root_valid(const char *root)
{
	const char *p = root;

	if (root[0] != '/' || strlen(root) >= PATH_MAX / 2)
		return false;
	if (strcmp(root, "/") == 0)
		return true;
	while (*p == '/') {
		const char *e = strchr(p + 1, '/');
		size_t n = e ? (size_t)(e - p - 1) : strlen(p + 1);
		if (n == 0 || (n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
			return false;
		p += n + 1;
	}
	return *p == '\0';
}

static void lc_quiet(void *ud, int level, const char *fmt, va_list ap)
{
}

/* libcgroup's mount point and own path for a v1 controller */
static int lc_locate(const char *v1name, char *point, char *path)
{
	char *m = NULL, *p = NULL;
	int r = -ENOENT;

	if (cgroup_get_subsys_mount_point(v1name, &m) == 0 &&
	    cgroup_get_current_controller_path(getpid(), v1name, &p) == 0 && m && p &&
	    strlen(m) < PATH_MAX && strlen(p) < PATH_MAX) {
		strcpy(point, m);
		strcpy(path, p);
		r = 0;
	}
	free(m);
	free(p);
	return r;
}

struct disc {
	struct cg *cg;
	struct mnts mnts;
	const char *cgfile;
	const char *root;    /* NULL: auto */
	bool use_lc;
	char *err;
	size_t errlen;
};

/* libcgroup's choice for controller i, if it is one of the parsed mounts */
static int pick_lc(const struct disc *d, int i, size_t *mi, char *path)
{
	char point[PATH_MAX];

	if (!d->use_lc || lc_locate(cg_ctrls[i].v1name, point, path) < 0)
		return -ENOENT;
	for (size_t k = 0; k < d->mnts.n; k++) {
		const struct mnt *m = &d->mnts.v[k];
		if (!m->v2 && (m->ctrls & cg_ctrls[i].bit) && strcmp(m->point, point) == 0) {
			*mi = k;
			return 0;
		}
	}
	return -ENOENT;
}

/* Choose the mount hosting controller i (or cgroup2 for i < 0) and this
 * process's cgroup path in it: the first mount whose root shows that path,
 * else the first one hosting it. -ENOENT when nothing hosts it. */
static int pick_mount(const struct disc *d, int i, size_t *mi, char *path)
{
	const char *v1name = i >= 0 ? cg_ctrls[i].v1name : NULL;
	int first = -1;

	if (i >= 0 && pick_lc(d, i, mi, path) == 0)
		return 0;
	for (size_t k = 0; k < d->mnts.n; k++) {
		const struct mnt *m = &d->mnts.v[k];
		bool hosts = i >= 0 ? (m->ctrls & cg_ctrls[i].bit) != 0 : m->v2;
		if (!hosts || cg_proc_path(d->cgfile, m->v2 ? NULL : v1name, path, PATH_MAX) < 0)
			continue;
		if (first < 0)
			first = (int)k;
		if (path_under(path, m->root)) {
			*mi = k;
			return 0;
		}
	}
	if (first < 0)
		return -ENOENT;
	*mi = (size_t)first;
	return cg_proc_path(d->cgfile, d->mnts.v[first].v2 ? NULL : v1name, path, PATH_MAX);
}

/* Add (or find) the hierarchy of mount mi; returns its index. */
static int add_hier(struct disc *d, size_t mi, const char *own_cg)
{
	struct cg *cg = d->cg;
	const struct mnt *m = &d->mnts.v[mi];
	struct cg_hier *h;
	int r;

	for (unsigned k = 0; k < cg->nhier; k++)
		if (strcmp(cg->hier[k].mount, m->point) == 0)
			return (int)k;
	if (cg->nhier >= CG_NHIER_MAX)
		return -E2BIG;
	h = &cg->hier[cg->nhier];
	memset(h, 0, sizeof(*h));
	strcpy(h->mount, m->point);
	h->v2 = m->v2;
	r = mnt_dir(m, d->root ? d->root : own_cg, h->dir, sizeof(h->dir));
	if (r < 0) {
		cg_errf(d->err, d->errlen, "cgroup %s: not visible below mount %s (root %s): %s",
			d->root ? d->root : own_cg, m->point, m->root, strerror(-r));
		return r;
	}
	return (int)cg->nhier++;
}

static int add_ctrl(struct disc *d, int i)
{
	char path[PATH_MAX];
	size_t mi;
	int h, r;

	r = pick_mount(d, i, &mi, path);
	if (r < 0) {
		if (i == 0)
			cg_errf(d->err, d->errlen, "memory controller: not mounted (no v1 hierarchy "
				"and no cgroup2 cgroup.controllers has it)");
		else
			cg_errf(d->err, d->errlen, "controller %s: not mounted (no v1 hierarchy and no "
				"cgroup2 cgroup.controllers has it)", cg_ctrls[i].v2name);
		return i == 0 ? -ENOENT : -ENODEV;
	}
	if (cg_ctrls[i].bit == CG_CTRL_CPUSET && !d->mnts.v[mi].v2) {
		/* a new v1 cpuset has no CPUs and takes no process until they are copied in */
		cg_errf(d->err, d->errlen, "controller cpuset: cgpool manages it on cgroup v2 only, and it is on a "
			"v1 hierarchy here (%s); leave cpuset out of controllers", d->mnts.v[mi].point);
		return -ENODEV;
	}
	h = add_hier(d, mi, path);
	if (h < 0)
		return h;
	d->cg->hier[h].ctrls |= cg_ctrls[i].bit;
	d->cg->ctrl_hier[i] = h;
	if (i == 0 && !d->root)
		snprintf(d->cg->info.root, sizeof(d->cg->info.root), "%s", path);
	return 0;
}

/* the cgroup2 hierarchy, when mounted, tracks population */
static int add_tracking(struct disc *d)
{
	char path[PATH_MAX];
	size_t mi;
	int h;

	if (pick_mount(d, -1, &mi, path) < 0)
		return 0;
	h = add_hier(d, mi, path);
	if (h < 0)
		return h;
	d->cg->track = h;
	return 0;
}

/* v2, root auto: a daemon started again from its own leaf (exec in place)
 * takes the leaf's parent, where the first one put the pool. */
static void skip_self_leaf(struct disc *d)
{
	struct cg *cg = d->cg;

	for (unsigned k = 0; !d->root && k < cg->nhier; k++) {
		struct cg_hier *h = &cg->hier[k];
		char *slash = strrchr(h->dir, '/');
		if (!h->v2 || !h->ctrls || !slash || strcmp(slash + 1, CG_SELF_LEAF) != 0 ||
		    strlen(h->dir) <= strlen(h->mount))
			continue;
		*slash = '\0';
		if ((int)k == cg->mem && (slash = strrchr(cg->info.root, '/')) != NULL)
			*(slash == cg->info.root ? slash + 1 : slash) = '\0';
	}
}

static void classify(struct disc *d)
{
	struct cg *cg = d->cg;
	bool v2 = false, v1 = false;

	for (size_t k = 0; k < d->mnts.n; k++) {
		v2 |= d->mnts.v[k].v2;
		v1 |= d->mnts.v[k].v1ctrl;
	}
	cg->info.hierarchy = !v2 ? CG_HIER_V1 : v1 ? CG_HIER_HYBRID : CG_HIER_V2;
	cg->info.memory_v2 = cg->hier[cg->mem].v2;
	cg->info.tracking = cg->track >= 0;
	if (d->root)
		snprintf(cg->info.root, sizeof(cg->info.root), "%s", d->root);
	snprintf(cg->info.memory_root, sizeof(cg->info.memory_root), "%s", cg->hier[cg->mem].dir);
}

static int discover_mounts(struct disc *d, unsigned ctrl_mask)
{
	int r;

	if (d->mnts.n == 0) {
		cg_errf(d->err, d->errlen, "no cgroup filesystem mounted (none in mountinfo)");
		return -ENOENT;
	}
	for (int i = 0; i < CG_NCTRL; i++) {
		d->cg->ctrl_hier[i] = -1;
		if (i != 0 && !(ctrl_mask & cg_ctrls[i].bit))
			continue;
		r = add_ctrl(d, i);
		if (r < 0)
			return r;
	}
	d->cg->mem = d->cg->ctrl_hier[0];
	r = add_tracking(d);
	if (r < 0)
		return r;
	skip_self_leaf(d);
	classify(d);
	return 0;
}

int cg_discover(struct cg *cg, const char *mountinfo, const char *cgroup_file, const char *root,
		unsigned ctrl_mask, bool use_libcgroup, char *err, size_t errlen)
{
	struct disc d = { .cg = cg, .cgfile = cgroup_file, .err = err, .errlen = errlen };
	int r;

	if (!root || !*root || (strcmp(root, "auto") != 0 && !root_valid(root))) {
		cg_errf(err, errlen, "root %s: must be auto or an absolute cgroup path", root ? root : "(null)");
		return -EINVAL;
	}
	d.root = strcmp(root, "auto") == 0 ? NULL : root;
	cg->auto_root = d.root == NULL;
	cg->nhier = 0;
	cg->track = -1;
	if (use_libcgroup) {
		cgroup_set_logger(lc_quiet, CGROUP_LOG_ERROR, NULL);
		d.use_lc = cgroup_init() == 0;
	}
	r = parse_mountinfo(cg, mountinfo, &d.mnts, err, errlen);
	if (r == 0)
		r = discover_mounts(&d, ctrl_mask);
	free(d.mnts.v);
	return r;
}
