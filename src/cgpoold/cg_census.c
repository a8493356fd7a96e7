/* cg_census.c - census of the machine's dying memory cgroups, for
 * cgpoolctl dying (compiled into it too) and the daemon's node metrics.
 *
 * It reads the kernel's files itself, so it works with or without a daemon:
 * the mount table for the layout; on cgroup v2 the hierarchical cgroup.stat
 * counters, walked from the root into the subtrees that hold dying ones
 * only; on v1 /proc/cgroups' memory num_cgroups (which counts dying memcgs
 * too) less the live directories of the memory hierarchy. What it cannot
 * read is listed, never skipped silently. */
#include "config.h"

#include "cg_census.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util.h"
#define MAX_DEPTH 64	      /* cgroup levels walked */
#define MAX_VISITS 200000     /* directories looked at, in all */
#define MAX_ERRORS 10	      /* unreadable paths listed (all are counted) */
#define V1_TRIES 3	      /* num_cgroups must not move during the directory count */

typedef unsigned long long ull;

struct census {
	char mnt[PATH_MAX]; /* where the memory controller's hierarchy is mounted */
	size_t mntlen;
	bool v2;	    /* memory on cgroup2 */
	bool other;	    /* the other kind of hierarchy is mounted too: hybrid */
	const char *key;    /* v2: the cgroup.stat counter walked */
	char path[PATH_MAX]; /* the walk's current directory */
	ull visits;
	bool incomplete; /* some directory or file could not be read */
	json_t *unreadable; /* "PATH: error", at most MAX_ERRORS */
	ull nunreadable;
	json_t *units; /* v2: cgroup path -> {dying, memory_bytes} removed below it */
	ull held;      /* v2: the memory_bytes of the units, summed */
	bool held_known;
	json_t *out;
};

/* ------------------------------------------------------------- helpers */

static void unreadable(struct census *c, const char *path, int err)
{
	char buf[PATH_MAX + 64];

	c->incomplete = true;
	if (c->nunreadable++ >= MAX_ERRORS)
		return;
	snprintf(buf, sizeof(buf), "%s: %s", path, strerror(err));
	json_array_append_new(c->unreadable, json_string(buf));
}

/* "KEY VALUE" line of a flat keyed file (cgroup.stat); meminfo's "KEY: N kB" too */
static int keyed(const char *buf, const char *key, ull *out)
{
	size_t klen = strlen(key);
	const char *p = buf;
	char *end;

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, klen) != 0 || (p[klen] != ' ' && p[klen] != ':'))
			continue;
		p += klen + 1;
		p += strspn(p, " \t");
		errno = 0;
		*out = strtoull(p, &end, 10);
		if (errno || end == p || *p == '-')
			return -EBADMSG;
		return 0;
	}
	return -ENOENT;
}

static bool append(struct census *c, size_t len, const char *name, size_t *newlen)
{
	int n = snprintf(c->path + len, sizeof(c->path) - len, "/%s", name);

	if (n < 0 || (size_t)n >= sizeof(c->path) - len) {
		c->path[len] = '\0';
		unreadable(c, c->path, ENAMETOOLONG);
		return false;
	}
	*newlen = len + (size_t)n;
	return true;
}

static bool is_subdir(struct dirent *e)
{
	if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
		return false;
	return strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
}

/* ---------------------------------------------------------------- layout */

/* mountinfo and /proc/mounts escape blanks as \040 */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

struct mounts {
	char v1mem[PATH_MAX], v2[PATH_MAX];
	bool any_v1;
};

/* one mount: fstype, mount point, super options (v1: the controllers) */
static void note_mount(struct mounts *m, const char *fstype, char *mnt, const char *opts)
{
	unescape(mnt);
	if (strcmp(fstype, "cgroup2") == 0 && !m->v2[0])
		snprintf(m->v2, sizeof(m->v2), "%s", mnt);
	if (strcmp(fstype, "cgroup") != 0)
		return;
	m->any_v1 = true;
	if (!m->v1mem[0] && has_word(opts, "memory"))
		snprintf(m->v1mem, sizeof(m->v1mem), "%s", mnt);
}

/* /proc/self/mountinfo ("ID PARENT MAJ:MIN ROOT MNT OPTS ... - FSTYPE SRC SUPEROPTS"),
 * else /proc/mounts ("SRC MNT FSTYPE OPTS ...") */
static int read_mounts(struct mounts *m)
{
	char line[3 * PATH_MAX], mnt[PATH_MAX], fstype[64], opts[1024];
	bool info = true;
	FILE *f = fopen("/proc/self/mountinfo", "re");

	if (!f) {
		info = false;
		f = fopen("/proc/mounts", "re");
	}
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *sep = info ? strstr(line, " - ") : NULL;

		if (info && sep && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 &&
		    sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) == 2)
			note_mount(m, fstype, mnt, opts);
		else if (!info && sscanf(line, "%*s %4095s %63s %1023s", mnt, fstype, opts) == 3)
			note_mount(m, fstype, mnt, opts);
	}
	fclose(f);
	return 0;
}

static int find_layout(struct census *c)
{
	struct mounts m = { .any_v1 = false };
	char path[PATH_MAX + 32], buf[512];
	int r = read_mounts(&m);

	if (r < 0) {
		unreadable(c, "/proc/self/mountinfo", -r);
		return r;
	}
	if (m.v1mem[0]) {
		snprintf(c->mnt, sizeof(c->mnt), "%s", m.v1mem);
		c->other = m.v2[0] != '\0';
	} else if (m.v2[0]) {
		snprintf(path, sizeof(path), "%s/cgroup.controllers", m.v2);
		r = (int)file_read(path, buf, sizeof(buf));
		if (r < 0)
			unreadable(c, path, -r);
		if (r < 0 || !strstr(buf, "memory"))
			return r < 0 ? r : -ENOENT;
		snprintf(c->mnt, sizeof(c->mnt), "%s", m.v2);
		c->v2 = true;
		c->other = m.any_v1;
	} else {
		return -ENOENT;
	}
	c->mntlen = strlen(c->mnt);
	while (c->mntlen > 1 && c->mnt[c->mntlen - 1] == '/')
		c->mnt[--c->mntlen] = '\0';
	return 0;
}

/* ------------------------------------------------------------ cgroup v2 */

/* Where a subtree's share is reported: below the grouping levels that name
 * no unit (slices, kubepods and its QoS classes), at the first level that
 * does; a path that starts with none of them, where its dying ones live. */
static bool grouping(const char *name, size_t n)
{
	static const char *const names[] = { "kubepods", "burstable", "besteffort" };

	if (n > 6 && strncmp(name + n - 6, ".slice", 6) == 0)
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (n >= strlen(names[i]) && strncmp(name, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

static size_t unit_len(const char *rel)
{
	const char *p = rel;
	bool first = true;

	while (*p == '/') {
		const char *name = p + 1, *end = strchrnul(name, '/');

		if (!grouping(name, (size_t)(end - name)))
			return first ? strlen(rel) : (size_t)(end - rel);
		first = false;
		p = end;
	}
	return strlen(rel);
}

/* n dying memcgs were removed right below dir; bytes: what is charged to dir
 * outside its live children (-1: not known) */
static void attribute(struct census *c, const char *dir, ull n, long long bytes)
{
	const char *rel = dir[c->mntlen] ? dir + c->mntlen : "/";
	char key[PATH_MAX];
	json_t *u, *b;

	snprintf(key, sizeof(key), "%.*s", (int)unit_len(rel), rel);
	u = json_object_get(c->units, key);
	if (!u) {
		u = json_pack("{s:I, s:n}", "dying", (json_int_t)0, "memory_bytes");
		if (json_object_set_new(c->units, key, u) < 0)
			return;
	}
	json_object_set_new(u, "dying", json_integer(json_integer_value(json_object_get(u, "dying")) + (json_int_t)n));
	if (bytes < 0)
		return;
	b = json_object_get(u, "memory_bytes");
	json_object_set_new(u, "memory_bytes", json_integer((json_is_integer(b) ? json_integer_value(b) : 0) + bytes));
	c->held += (ull)bytes;
	c->held_known = true;
}

/* memory.current of c->path: bytes, or -1; 0 for a cgroup removed since
 * it was listed (its charges are its parent's now) */
static long long v2_memory(struct census *c)
{
	char file[PATH_MAX + 16], buf[64];
	char *end;
	unsigned long long v;
	int r;

	snprintf(file, sizeof(file), "%s/memory.current", c->path);
	r = (int)file_read(file, buf, sizeof(buf));
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return -1;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n') || v > LLONG_MAX)
		return -1;
	return (long long)v;
}

static int v2_count(struct census *c, const char *key, ull *out)
{
	char file[PATH_MAX + 16], buf[4096];
	int r;

	snprintf(file, sizeof(file), "%s/cgroup.stat", c->path);
	r = (int)file_read(file, buf, sizeof(buf));
	if (r >= 0)
		r = keyed(buf, key, out);
	if (r < 0)
		unreadable(c, file, -r);
	return r;
}

/* c->path (len bytes) holds `dying` dying memcgs: what its children's
 * counters do not account for was removed right below it. mem: its
 * memory.current (-1: not known, or the root, which has none); what its
 * live children's do not account for is charged to the ones removed there
 * (and to what the kernel reparented to it: a cgroup with children has no
 * processes of its own on v2). */
static void v2_walk(struct census *c, size_t len, ull dying, long long mem, int depth)
{
	DIR *d = opendir(c->path);
	struct dirent *e;
	size_t sublen;
	ull sum = 0, n;
	long long live_mem = 0, m;
	bool known = mem >= 0;

	if (!d) {
		unreadable(c, c->path, errno);
		return;
	}
	while ((e = readdir(d))) {
		if (!is_subdir(e) || !append(c, len, e->d_name, &sublen))
			continue;
		if (++c->visits > MAX_VISITS) {
			unreadable(c, c->path, E2BIG);
			break;
		}
		m = v2_memory(c);
		if (m < 0)
			known = false; /* a child's share is not known: neither is the rest */
		else
			live_mem += m;
		if (v2_count(c, c->key, &n) == 0 && n > 0) {
			sum += n;
			if (depth < MAX_DEPTH)
				v2_walk(c, sublen, n, m, depth + 1);
			else
				unreadable(c, c->path, ELOOP);
		}
		c->path[len] = '\0';
	}
	closedir(d);
	c->path[len] = '\0';
	if (dying > sum)
		attribute(c, c->path, dying - sum, !known ? -1 : mem > live_mem ? mem - live_mem : 0);
}

static int cmp_dying(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "dying"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "dying"));

	return x < y ? 1 : x > y ? -1 : strcmp(json_string_value(json_object_get(*(json_t *const *)a, "path")),
					      json_string_value(json_object_get(*(json_t *const *)b, "path")));
}

/* units -> "subtrees", the top ones by count, and "subtrees_other" */
static void v2_subtrees(struct census *c, int top)
{
	size_t n = json_object_size(c->units), i = 0;
	json_t **v = calloc(n ? n : 1, sizeof(*v)), *arr = json_array(), *val;
	const char *key;
	ull other = 0;

	json_object_foreach(c->units, key, val)
		if (v)
			v[i++] = json_pack("{s:s, s:O, s:O}", "path", key, "dying", json_object_get(val, "dying"),
					   "memory_bytes", json_object_get(val, "memory_bytes"));
	if (v)
		qsort(v, n, sizeof(*v), cmp_dying);
	for (i = 0; v && i < n; i++) {
		if (i < (size_t)top)
			json_array_append(arr, v[i]);
		else
			other += (ull)json_integer_value(json_object_get(v[i], "dying"));
		json_decref(v[i]);
	}
	free(v);
	json_object_set_new(c->out, "subtrees", arr);
	json_object_set_new(c->out, "subtrees_other", json_integer((json_int_t)other));
	json_object_set_new(c->out, "dying_memory_bytes", c->held_known ? json_integer((json_int_t)c->held) : json_null());
}

static int census_v2(struct census *c, int top, ull *total, ull *live, const char **live_rule)
{
	char file[PATH_MAX + 16], buf[4096], src[PATH_MAX + 64];
	ull all = 0, n;
	int r;

	snprintf(c->path, sizeof(c->path), "%s", c->mnt);
	snprintf(file, sizeof(file), "%s/cgroup.stat", c->mnt);
	r = (int)file_read(file, buf, sizeof(buf));
	if (r >= 0)
		r = keyed(buf, "nr_dying_descendants", &all);
	if (r < 0) {
		unreadable(c, file, -r);
		return r;
	}
	c->key = keyed(buf, "nr_dying_subsys_memory", total) == 0 ? "nr_dying_subsys_memory" : "nr_dying_descendants";
	if (strcmp(c->key, "nr_dying_descendants") == 0)
		*total = all;
	if (keyed(buf, "nr_subsys_memory", live) == 0) {
		*live_rule = "nr_subsys_memory";
	} else if (keyed(buf, "nr_descendants", &n) == 0) {
		*live = n + 1;
		*live_rule = "nr_descendants + 1 (every live cgroup, memory enabled or not: a bound)";
	}
	snprintf(src, sizeof(src), "%s %s", file, c->key);
	json_object_set_new(c->out, "source", json_string(src));
	json_object_set_new(c->out, "dying_cgroups", json_integer((json_int_t)all));
	c->units = json_object();
	if (*total > 0)
		v2_walk(c, c->mntlen, *total, -1, 0);
	v2_subtrees(c, top);
	json_decref(c->units);
	return 0;
}

/* ------------------------------------------------------------ cgroup v1 */

static int v1_num_cgroups(struct census *c, ull *out)
{
	char line[256], name[64];
	ull n;
	int enabled;
	FILE *f = fopen("/proc/cgroups", "re");

	if (!f) {
		unreadable(c, "/proc/cgroups", errno);
		return -errno;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %*u %llu %d", name, &n, &enabled) == 3 && strcmp(name, "memory") == 0) {
			fclose(f);
			*out = n;
			return 0;
		}
	fclose(f);
	unreadable(c, "/proc/cgroups", ENOENT);
	return -ENOENT;
}

/* the live directories below c->path; a cgroupfs directory's link count is
 * 2 + its subdirectories, so leaves are not listed */
static void v1_count_dirs(struct census *c, size_t len, int depth, ull *dirs)
{
	DIR *d = opendir(c->path);
	struct dirent *e;
	struct stat st;
	size_t sublen;

	if (!d) {
		unreadable(c, c->path, errno);
		return;
	}
	while ((e = readdir(d))) {
		if (!is_subdir(e))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue; /* removed meanwhile, or not a directory */
		(*dirs)++;
		if (++c->visits > MAX_VISITS) {
			unreadable(c, c->path, E2BIG);
			break;
		}
		if (st.st_nlink == 2 || !append(c, len, e->d_name, &sublen))
			continue;
		if (depth < MAX_DEPTH)
			v1_count_dirs(c, sublen, depth + 1, dirs);
		else
			unreadable(c, c->path, ELOOP);
		c->path[len] = '\0';
	}
	closedir(d);
}

static int census_v1(struct census *c, ull *total, ull *live)
{
	char src[PATH_MAX + 96];
	ull before, after = 0, dirs = 0;
	int r = v1_num_cgroups(c, &before);

	for (int i = 0; r == 0 && i < V1_TRIES; i++, before = after) {
		dirs = 1; /* the root */
		c->visits = 0;
		snprintf(c->path, sizeof(c->path), "%s", c->mnt);
		v1_count_dirs(c, c->mntlen, 0, &dirs);
		r = v1_num_cgroups(c, &after);
		if (r == 0 && after == before)
			break;
	}
	if (r < 0)
		return r;
	*live = dirs;
	*total = after > dirs ? after - dirs : 0;
	snprintf(src, sizeof(src), "/proc/cgroups memory num_cgroups - live directories of %s", c->mnt);
	json_object_set_new(c->out, "source", json_string(src));
	json_object_set_new(c->out, "subtrees", json_array());
	json_object_set_new(c->out, "dying_memory_bytes", json_null());
	json_object_set_new(c->out, "subtrees_note",
			    json_string("not attributable on cgroup v1, which counts dying memory cgroups only machine-wide"));
	return c->incomplete ? -EACCES : 0;
}

/* ------------------------------------------------------- IDs and memory */

/* since 4.8 a memcg's ID is freed when it goes offline, unless swap entries
 * still name it: with swap in use, the dying ones may all hold theirs */
static void memcg_ids(struct census *c, ull live, ull dying)
{
	struct utsname u;
	unsigned maj = 0, min = 0;
	char buf[8192];
	ull swap_total = 0, swap_free = 0, used;
	const char *rule;

	if (uname(&u) == 0)
		sscanf(u.release, "%u.%u", &maj, &min);
	if (file_read("/proc/meminfo", buf, sizeof(buf)) >= 0) {
		keyed(buf, "SwapTotal", &swap_total);
		keyed(buf, "SwapFree", &swap_free);
	}
	if (maj < 4 || (maj == 4 && min < 8)) {
		used = live + dying;
		rule = "live + dying (before 4.8 a dying memcg keeps its ID)";
	} else if (swap_total > swap_free) {
		used = live + dying;
		rule = "live + dying (4.8+ frees the ID at offline unless swap still names the memcg; swap is in use: a bound)";
	} else {
		used = live;
		rule = "live (4.8+ frees a dying memcg's ID at offline; no swap is in use)";
	}
	json_object_set_new(c->out, "memcg_ids_left", json_integer((json_int_t)(used < CG_MEMCG_ID_MAX ? CG_MEMCG_ID_MAX - used : 0)));
	json_object_set_new(c->out, "memcg_ids_rule", json_string(rule));
}

static void percpu(struct census *c)
{
	char buf[8192];
	ull kb;

	if (file_read("/proc/meminfo", buf, sizeof(buf)) >= 0 && keyed(buf, "Percpu", &kb) == 0)
		json_object_set_new(c->out, "percpu_bytes", json_integer((json_int_t)(kb * 1024)));
	else
		json_object_set_new(c->out, "percpu_bytes", json_null());
}

/* --------------------------------------------------------------- census */

int cg_census(int top, json_t **out)
{
	struct census *c = calloc(1, sizeof(*c));
	ull total = 0, live = 0;
	const char *live_rule = "live directories of the memory hierarchy";
	int r;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->out = json_object();
	c->unreadable = json_array();
	json_object_set_new(c->out, "total", json_null()); /* first; set below */
	r = find_layout(c);
	if (r == 0) {
		json_object_set_new(c->out, "layout", json_string(!c->other ? (c->v2 ? "v2" : "v1") : "hybrid"));
		json_object_set_new(c->out, "memory", json_string(c->v2 ? "v2" : "v1"));
		json_object_set_new(c->out, "mount", json_string(c->mnt));
		r = c->v2 ? census_v2(c, top, &total, &live, &live_rule) : census_v1(c, &total, &live);
	}
	json_object_set_new(c->out, "total", r == 0 ? json_integer((json_int_t)total) : json_null());
	if (r == 0) {
		json_object_set_new(c->out, "live", json_integer((json_int_t)live));
		json_object_set_new(c->out, "live_source", json_string(live_rule));
		memcg_ids(c, live, total);
	}
	percpu(c);
	json_object_set_new(c->out, "complete", json_boolean(!c->incomplete && r == 0));
	json_object_set_new(c->out, "unreadable", c->unreadable);
	json_object_set_new(c->out, "unreadable_count", json_integer((json_int_t)c->nunreadable));
	*out = c->out;
	free(c);
	return r;
}

