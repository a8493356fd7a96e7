/* cgsim.c - a simulated cgroupfs for unit tests (see cgsim.h for the model) */
#include "config.h"

#include "cgsim.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define HMAX 6
#define PAGE 4096ULL
#define V1_UNLIMITED 9223372036854771712ULL
#define PIDS_LIMIT 4194304ULL
#define VAL_MAX 72
#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

enum { C_MEMORY = 1, C_PIDS = 2, C_CPU = 4, C_IO = 8, C_CPUSET = 16, C_HUGETLB = 32, C_RDMA = 64, C_MISC = 128 };
#define C_ALL_V2 255u
#define C_DOMAIN (C_MEMORY | C_IO | C_HUGETLB | C_RDMA | C_MISC) /* no internal processes */

/* v2 names, in the kernel's order */
static const struct {
	unsigned bit;
	const char *name;
} ctrl_names[] = {
	{ C_CPUSET, "cpuset" }, { C_CPU, "cpu" }, { C_IO, "io" }, { C_MEMORY, "memory" },
	{ C_HUGETLB, "hugetlb" }, { C_PIDS, "pids" }, { C_RDMA, "rdma" }, { C_MISC, "misc" },
};

struct hier {
	char mount[64];
	const char *opts;   /* v1 super options, "memory" */
	const char *cgname; /* field 2 of /proc/self/cgroup */
	int id;
	bool v2;
	unsigned ctrls;
	struct node *root;
};

#define NFILES 48

struct node {
	char name[NAME_MAX + 1];
	struct node *parent;
	struct node **kids; /* live and dying */
	size_t nkids, capkids;
	struct hier *h;
	uint64_t ino;
	bool dying;
	unsigned lag;    /* reads left once it may be freed */
	unsigned css;    /* controllers with state here */
	unsigned subtree; /* v2 subtree_control */
	uint64_t file, anon, dirty, peak, oom, reclaimed;
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
	char tmpdir[64];
	char mi_text[4096], cg_text[4096];
	char *hook_pat;
	cgsim_write_fn hook;
	void *hook_ud;
};

struct sb {
	char *p;
	size_t n, cap;
	bool oom;
};

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (n < 0 || b->oom)
			return;
		if (b->p && b->n + (size_t)n < b->cap) {
			b->n += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

/* ---- tree */

static char *rel_path(const struct node *n, char *buf)
{
	char tmp[PATH_MAX];

	buf[0] = '\0';
	for (; n && n->parent; n = n->parent) {
		snprintf(tmp, sizeof(tmp), "/%s%s", n->name, buf);
		memcpy(buf, tmp, strlen(tmp) + 1);
	}
	if (!buf[0])
		strcpy(buf, "/");
	return buf;
}

static struct node *node_new(struct cgsim *sim, struct hier *h, struct node *parent, const char *name)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (parent && parent->nkids == parent->capkids) {
		size_t cap = parent->capkids ? parent->capkids * 2 : 8;
		struct node **k = realloc(parent->kids, cap * sizeof(*k));
		if (!k) {
			free(n);
			return NULL;
		}
		parent->kids = k;
		parent->capkids = cap;
	}
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->parent = parent;
	n->h = h;
	n->ino = ++sim->next_ino;
	n->css = !h->v2 || !parent ? h->ctrls : parent->subtree;
	if (parent)
		parent->kids[parent->nkids++] = n;
	return n;
}

static void unshadow(struct node *n)
{
	for (int i = 0; i < NFILES; i++) {
		if (n->shadow[i])
			unlink(n->shadow[i]);
		free(n->shadow[i]);
		n->shadow[i] = NULL;
	}
}

static void node_free(struct cgsim *sim, struct node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nkids; i++)
		node_free(sim, n->kids[i]);
	for (size_t i = 0; i < sim->npfds; i++)
		if (sim->pfds[i].node == n)
			sim->pfds[i].node = NULL;
	unshadow(n);
	for (int i = 0; i < NFILES; i++)
		free(n->val[i]);
	free(n->kids);
	free(n);
}

static struct node *kid(const struct node *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nkids; i++)
		if (!n->kids[i]->dying && strlen(n->kids[i]->name) == len && strncmp(n->kids[i]->name, name, len) == 0)
			return n->kids[i];
	return NULL;
}

/* the live cgroup at rel ("/a/b") in h; with nearest, its deepest live ancestor */
static struct node *node_at(struct hier *h, const char *rel, bool nearest)
{
	struct node *n = h->root;

	for (const char *p = rel; *p;) {
		size_t len;
		struct node *k;
		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (!len)
			break;
		k = kid(n, p, len);
		if (!k)
			return nearest ? n : NULL;
		n = k;
		p += len;
	}
	return n;
}

/* a mount dir or a cgroup path -> the cgroup path; *hp the mount's hierarchy or NULL */
static const char *to_rel(struct cgsim *sim, const char *path, struct hier **hp)
{
	size_t best = 0;

	*hp = NULL;
	for (unsigned k = 0; k < sim->nh; k++) {
		size_t l = strlen(sim->h[k].mount);
		if (l > best && strncmp(path, sim->h[k].mount, l) == 0 && (path[l] == '/' || !path[l])) {
			best = l;
			*hp = &sim->h[k];
		}
	}
	return path[best] ? path + best : "/";
}

static bool subtree_has(const struct node *top, const struct node *n)
{
	for (; n; n = n->parent)
		if (n == top)
			return true;
	return false;
}

struct tot {
	uint64_t file, anon, dirty, oom;
	unsigned live, dying, live_mem, dying_mem, live_pids, dying_pids;
};

static void tot_add(const struct node *n, struct tot *t, bool self)
{
	if (self) {
		t->file += n->file;
		t->anon += n->anon;
		t->dirty += n->dirty;
		t->oom += n->oom;
	}
	for (size_t i = 0; i < n->nkids; i++) {
		const struct node *k = n->kids[i];
		if (k->dying) {
			t->dying++;
			t->dying_mem += !!(k->css & C_MEMORY);
			t->dying_pids += !!(k->css & C_PIDS);
		} else {
			t->live++;
			t->live_mem += !!(k->css & C_MEMORY);
			t->live_pids += !!(k->css & C_PIDS);
		}
		tot_add(k, t, true);
	}
}

static struct tot totals(const struct node *n)
{
	struct tot t = { 0 };

	tot_add(n, &t, true);
	return t;
}

static uint64_t current(const struct node *n)
{
	struct tot t = totals(n);

	return t.file + t.anon;
}

static bool pinned(const struct node *n)
{
	return (n->css & C_MEMORY) && n->file + n->anon > 0;
}

static bool freeable(const struct node *n)
{
	return n->dying && n->nkids == 0 && !pinned(n);
}

static void detach(struct node *n)
{
	struct node *p = n->parent;

	for (size_t i = 0; i < p->nkids; i++) {
		if (p->kids[i] == n) {
			memmove(&p->kids[i], &p->kids[i + 1], (p->nkids - i - 1) * sizeof(*p->kids));
			p->nkids--;
			break;
		}
	}
}

/* free dying groups below n whose lag ran out; with tick, first count one
 * read for the ones that may go */
static void reap(struct cgsim *sim, struct node *n, bool tick)
{
	for (size_t i = n->nkids; i-- > 0;) {
		struct node *k = n->kids[i];
		reap(sim, k, tick);
		if (!freeable(k))
			continue;
		if (tick && k->lag > 0)
			k->lag--;
		if (k->lag == 0) {
			detach(k);
			node_free(sim, k);
		}
	}
}

static void reap_all(struct cgsim *sim)
{
	for (unsigned k = 0; k < sim->nh; k++)
		reap(sim, sim->h[k].root, false);
}

static struct node *memcg_of(struct node *n)
{
	while (n->parent && !(n->css & C_MEMORY))
		n = n->parent;
	return n;
}

/* after charges grew below n: the peaks of n and its ancestors */
static void update_peaks(struct cgsim *sim, struct node *n)
{
	for (; n; n = n->parent) {
		uint64_t cur = current(n);
		if (cur > n->peak)
			n->peak = cur;
		for (size_t i = 0; i < sim->npfds; i++)
			if (sim->pfds[i].node == n && cur > sim->pfds[i].peak)
				sim->pfds[i].peak = cur;
	}
}

/* ---- processes and population */

static struct proc *proc_find(struct cgsim *sim, pid_t pid)
{
	for (size_t i = 0; i < sim->nprocs; i++)
		if (sim->procs[i].pid == pid)
			return &sim->procs[i];
	return NULL;
}

static unsigned local_procs(const struct cgsim *sim, const struct node *n)
{
	unsigned c = 0;

	for (size_t i = 0; i < sim->nprocs; i++)
		c += sim->procs[i].at[n->h - sim->h] == n;
	return c;
}

static void zero_pop(struct node *n)
{
	n->npop = 0;
	for (size_t i = 0; i < n->nkids; i++)
		zero_pop(n->kids[i]);
}

/* npop: processes in each cgroup's subtree */
static void count_pop(struct cgsim *sim, struct hier *h)
{
	zero_pop(h->root);
	for (size_t i = 0; i < sim->nprocs; i++)
		for (struct node *n = sim->procs[i].at[h - sim->h]; n; n = n->parent)
			n->npop++;
}

static void touch(const char *shadow)
{
	int fd = shadow ? open(shadow, O_WRONLY | O_TRUNC | O_CLOEXEC) : -1;

	if (fd < 0)
		return;
	if (write(fd, "x", 1) < 0) {
		/* a lost wake-up; the watcher's next read still sees the truth */
	}
	close(fd);
}

static int file_index(const char *name);

static void notify_tree(struct cgsim *sim, struct node *n, int ev)
{
	bool pop = n->npop > 0;

	if (pop != n->pop_seen) {
		n->pop_seen = pop;
		if (ev >= 0)
			touch(n->shadow[ev]);
	}
	for (size_t i = 0; i < n->nkids; i++)
		notify_tree(sim, n->kids[i], ev);
}

/* cgroup.events changes wake their watchers (IN_MODIFY), as kernfs_notify does */
static void sync_events(struct cgsim *sim)
{
	int ev = file_index("cgroup.events");

	for (unsigned k = 0; k < sim->nh; k++) {
		count_pop(sim, &sim->h[k]);
		notify_tree(sim, sim->h[k].root, sim->h[k].v2 ? ev : -1);
	}
}

/* ---- memory.peak descriptors: kept current before every call */

static void pfd_refresh(struct cgsim *sim)
{
	for (size_t i = 0; i < sim->npfds; i++) {
		struct pfd *f = &sim->pfds[i];
		char buf[32], text[32];
		ssize_t n = pread(f->fd, buf, sizeof(buf) - 1, 0);
		bool reset;
		buf[n > 0 ? n : 0] = '\0';
		reset = strcmp(buf, f->last) != 0; /* someone wrote to it */
		if (reset && f->node && sim->o.peak_reset)
			f->peak = current(f->node);
		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)f->peak);
		if (!reset && strcmp(text, f->last) == 0)
			continue;
		if (ftruncate(f->fd, 0) < 0 || pwrite(f->fd, text, strlen(text), 0) < 0)
			continue; /* tried again on the next call */
		lseek(f->fd, 0, SEEK_SET);
		memcpy(f->last, text, sizeof(f->last));
	}
}

/* ---- calls, rules */

static bool pat_match(const char *pat, const char *path)
{
	size_t pl, l;

	if (!pat || !*pat)
		return true;
	if (strpbrk(pat, "*?["))
		return fnmatch(pat, path, 0) == 0;
	pl = strlen(pat);
	l = strlen(path);
	return l >= pl && strcmp(path + l - pl, pat) == 0;
}

/* record the call, sleep and inject; returns the call's index or -errno */
static int op_begin(struct cgsim *sim, enum cgsim_op op, const char *path, const char *val, int *injected)
{
	struct call *c = realloc(sim->calls, (sim->ncalls + 1) * sizeof(*c));

	*injected = 0;
	if (!c)
		return -ENOMEM;
	sim->calls = c;
	c = &sim->calls[sim->ncalls];
	c->op = op;
	c->path = strdup(path);
	c->val = val ? strdup(val) : NULL;
	c->res = 0;
	sim->ncalls++;
	pfd_refresh(sim);
	for (size_t i = 0; i < sim->nrules; i++) {
		struct rule *r = &sim->rules[i];
		if ((r->op != op && r->op != CGSIM_OP_ANY) || !pat_match(r->pat, path))
			continue;
		if (!r->err && r->usec && (op == CGSIM_OP_MKDIR || op == CGSIM_OP_RMDIR || op == CGSIM_OP_WRITE))
			usleep(r->usec);
		if (r->err && r->count != 0 && !*injected) {
			if (r->count > 0)
				r->count--;
			*injected = r->err;
		}
	}
	return (int)sim->ncalls - 1;
}

static int op_end(struct cgsim *sim, int idx, int res)
{
	if (idx >= 0)
		sim->calls[idx].res = res;
	pfd_refresh(sim);
	return res;
}

/* ---- file contents */

static uint64_t val_u64(const struct node *n, int idx, uint64_t def);

static int gen_procs(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	for (size_t i = 0; i < sim->nprocs; i++)
		if (sim->procs[i].at[n->h - sim->h] == n)
			sb_printf(b, "%d\n", (int)sim->procs[i].pid);
	return 0;
}

static void names(struct sb *b, unsigned mask)
{
	bool first = true;

	for (size_t i = 0; i < N_ELEMS(ctrl_names); i++) {
		if (!(mask & ctrl_names[i].bit))
			continue;
		sb_printf(b, "%s%s", first ? "" : " ", ctrl_names[i].name);
		first = false;
	}
	sb_printf(b, "\n");
}

static int gen_controllers(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	names(b, n->parent ? n->parent->subtree : n->h->ctrls);
	return 0;
}

static int gen_subtree(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	names(b, n->subtree);
	return 0;
}

static int gen_events(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	count_pop(sim, n->h);
	sb_printf(b, "populated %d\nfrozen 0\n", n->npop > 0);
	return 0;
}

static int gen_stat(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	struct tot t = totals(n);
	bool mem = n->css & C_MEMORY, pids = n->css & C_PIDS;

	sb_printf(b, "nr_descendants %u\n", t.live);
	if (sim->o.dying_subsys_stat)
		sb_printf(b, "nr_subsys_memory %u\nnr_subsys_pids %u\n", t.live_mem + mem, t.live_pids + pids);
	sb_printf(b, "nr_dying_descendants %u\n", t.dying);
	if (sim->o.dying_subsys_stat)
		sb_printf(b, "nr_dying_subsys_memory %u\nnr_dying_subsys_pids %u\n", t.dying_mem, t.dying_pids);
	if (consume)
		reap(sim, n, true);
	return 0;
}

static int gen_current(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	sb_printf(b, "%llu\n", (unsigned long long)current(n));
	return 0;
}

static int gen_peak(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	sb_printf(b, "%llu\n", (unsigned long long)n->peak);
	return 0;
}

static int gen_mem_events(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	struct tot t = totals(n);

	sb_printf(b, "low 0\nhigh 0\nmax 0\noom %llu\noom_kill %llu\noom_group_kill 0\n", (unsigned long long)t.oom,
		  (unsigned long long)t.oom);
	return 0;
}

static int gen_mem_events_local(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	sb_printf(b, "low 0\nhigh 0\nmax 0\noom %llu\noom_kill %llu\noom_group_kill 0\n", (unsigned long long)n->oom,
		  (unsigned long long)n->oom);
	return 0;
}

static int gen_stat_v2(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	struct tot t = totals(n);
	unsigned long long f = t.file, a = t.anon, d = t.dirty;

	sb_printf(b, "anon %llu\nfile %llu\nkernel 0\nkernel_stack 0\npagetables 0\nsec_pagetables 0\npercpu 0\n"
		  "sock 0\nvmalloc 0\nshmem 0\nfile_mapped 0\nfile_dirty %llu\nfile_writeback 0\nswapcached 0\n"
		  "anon_thp 0\ninactive_anon 0\nactive_anon %llu\ninactive_file %llu\nactive_file 0\n"
		  "unevictable 0\nslab_reclaimable 0\nslab_unreclaimable 0\nslab 0\npgscan 0\npgsteal 0\n",
		  a, f, d, a, f);
	return 0;
}

static int gen_stat_v1(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	struct tot t = totals(n);
	unsigned long long f = n->file, a = n->anon, d = n->dirty, tf = t.file, ta = t.anon, td = t.dirty;
	uint64_t lim = UINT64_MAX;

	for (const struct node *p = n; p; p = p->parent) {
		uint64_t v = val_u64(p, file_index("memory.limit_in_bytes"), V1_UNLIMITED);
		lim = v < lim ? v : lim;
	}
	sb_printf(b, "cache %llu\nrss %llu\nrss_huge 0\nshmem 0\nmapped_file 0\ndirty %llu\nwriteback 0\n"
		  "pgpgin 0\npgpgout 0\npgfault 0\npgmajfault 0\ninactive_anon 0\nactive_anon %llu\n"
		  "inactive_file %llu\nactive_file 0\nunevictable 0\nhierarchical_memory_limit %llu\n"
		  "total_cache %llu\ntotal_rss %llu\ntotal_rss_huge 0\ntotal_shmem 0\ntotal_mapped_file 0\n"
		  "total_dirty %llu\ntotal_writeback 0\ntotal_inactive_anon 0\ntotal_active_anon %llu\n"
		  "total_inactive_file %llu\ntotal_active_file 0\ntotal_unevictable 0\n",
		  f, a, d, a, f, (unsigned long long)lim, tf, ta, td, ta, tf);
	return 0;
}

static int gen_oom_control(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	sb_printf(b, "oom_kill_disable 0\nunder_oom 0\noom_kill %llu\n", (unsigned long long)totals(n).oom);
	return 0;
}

static int gen_pids_current(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	count_pop(sim, n->h);
	sb_printf(b, "%u\n", n->npop);
	return 0;
}

static int gen_fixed(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	return 0; /* the text is the table's default */
}

/* ---- writes */

static void trim(const char *s, char *out, size_t len)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* memparse: digits with an optional K/M/G/T suffix */
static int memparse(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int store(struct node *n, int idx, const char *v)
{
	char *c = strdup(v);

	if (!c)
		return -ENOMEM;
	free(n->val[idx]);
	n->val[idx] = c;
	return 0;
}

static int wr_store(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	char v[VAL_MAX];

	trim(s, v, sizeof(v));
	return store(n, idx, v);
}

/* v2 memory.min/low/high/max/swap.max: "max" or bytes, kept in pages */
static int wr_mem_v2(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	char v[VAL_MAX];
	uint64_t b;

	trim(s, v, sizeof(v));
	if (strcmp(v, "max") == 0)
		return store(n, idx, v);
	if (memparse(v, &b) < 0)
		return -EINVAL;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)(b / PAGE * PAGE));
	return store(n, idx, v);
}

static int wr_limit_v1(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	char v[VAL_MAX];
	uint64_t b;

	trim(s, v, sizeof(v));
	if (!n->parent)
		return -EINVAL;
	if (strcmp(v, "-1") == 0)
		b = V1_UNLIMITED;
	else if (memparse(v, &b) < 0)
		return -EINVAL;
	b = b > V1_UNLIMITED ? V1_UNLIMITED : b / PAGE * PAGE;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)b);
	return store(n, idx, v);
}

static int wr_uint_range(struct node *n, int idx, const char *s, uint64_t lo, uint64_t hi, bool max_ok)
{
	char v[VAL_MAX], *end;
	unsigned long long x;

	trim(s, v, sizeof(v));
	if (max_ok && strcmp(v, "max") == 0)
		return store(n, idx, v);
	errno = 0;
	x = strtoull(v, &end, 10);
	if (v[0] < '0' || v[0] > '9' || *end || errno || x < lo || x > hi)
		return -EINVAL;
	return store(n, idx, v);
}

static int wr_pids_max(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	return wr_uint_range(n, idx, s, 0, PIDS_LIMIT, true);
}

static int wr_cpu_weight(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	return wr_uint_range(n, idx, s, 1, 10000, false);
}

static int wr_cpu_shares(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	return wr_uint_range(n, idx, s, 2, 262144, false);
}

static int wr_cfs_period(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	return wr_uint_range(n, idx, s, 1000, 1000000, false);
}

static int wr_cfs_quota(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	char v[VAL_MAX];

	trim(s, v, sizeof(v));
	return strcmp(v, "-1") == 0 ? store(n, idx, v) : wr_uint_range(n, idx, s, 1000, INT64_MAX / 1000, false);
}

/* "QUOTA [PERIOD]": without PERIOD the period stays */
static int wr_cpu_max(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	char q[32], p[32] = "", x[2], v[VAL_MAX];
	const char *old = n->val[idx] ? n->val[idx] : "max 100000";
	uint64_t qv, pv;
	int k = sscanf(s, "%31s %31s %1s", q, p, x);

	if (k < 1 || k > 2 || (strcmp(q, "max") != 0 && (memparse(q, &qv) < 0 || qv < 1000)))
		return -EINVAL;
	if (k == 1)
		snprintf(p, sizeof(p), "%s", strchr(old, ' ') + 1);
	if (memparse(p, &pv) < 0 || pv < 1000 || pv > 1000000)
		return -EINVAL;
	snprintf(v, sizeof(v), "%s %s", q, p);
	return store(n, idx, v);
}

static int wr_io_weight(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	char v[VAL_MAX], *end;
	const char *num = strncmp(s, "default ", 8) == 0 ? s + 8 : s;
	unsigned long w = strtoul(num, &end, 10);

	if (end == num || (*end && *end != '\n') || w < 1 || w > 10000)
		return -EINVAL;
	snprintf(v, sizeof(v), "default %lu", w);
	return store(n, idx, v);
}

static int parse_pid(const char *s, pid_t *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	while (*end == '\n' || *end == ' ')
		end++;
	if (end == s || *end || v < 0 || v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

static int wr_procs(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	struct proc *pr;
	pid_t pid;

	if (parse_pid(s, &pid) < 0)
		return -EINVAL;
	pr = proc_find(sim, pid ? pid : getpid());
	if (!pr)
		return -ESRCH;
	if (n->h->v2 && n->parent && (n->subtree & C_DOMAIN))
		return -EBUSY; /* no internal processes */
	pr->at[n->h - sim->h] = n;
	sync_events(sim);
	return 0;
}

static int wr_subtree(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	unsigned have = n->parent ? n->parent->subtree : n->h->ctrls, on = 0, off = 0;
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
		unsigned bit = 0;
		for (size_t i = 0; i < N_ELEMS(ctrl_names); i++)
			if (strcmp(w + 1, ctrl_names[i].name) == 0)
				bit = ctrl_names[i].bit;
		if (!bit || (w[0] != '+' && w[0] != '-'))
			return -EINVAL;
		if (w[0] == '+')
			on |= bit;
		else
			off |= bit;
	}
	if (on & ~have)
		return -ENOENT;
	if ((on & C_DOMAIN & ~n->subtree) && n->parent && local_procs(sim, n))
		return -EBUSY;
	for (size_t i = 0; i < n->nkids; i++)
		if (n->kids[i]->subtree & off)
			return -EBUSY;
	n->subtree = (n->subtree | on) & ~off;
	for (size_t i = 0; i < n->nkids; i++)
		if (!n->kids[i]->dying)
			n->kids[i]->css = n->subtree;
	return 0;
}

static uint64_t proc_exit(struct cgsim *sim, pid_t pid);

static int wr_kill(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	pid_t v;

	if (parse_pid(s, &v) < 0 || v != 1)
		return -ERANGE;
	for (size_t i = sim->nprocs; i-- > 0;)
		if (sim->procs[i].child && subtree_has(n, sim->procs[i].at[n->h - sim->h]))
			proc_exit(sim, sim->procs[i].pid);
	return 0;
}

/* clean file pages from n's subtree, dying groups too, pre-order */
static uint64_t reclaim(struct node *n, uint64_t want)
{
	uint64_t clean = n->file - n->dirty, got = clean < want ? clean : want;

	n->file -= got;
	n->reclaimed += got;
	for (size_t i = 0; i < n->nkids && got < want; i++)
		got += reclaim(n->kids[i], want - got);
	return got;
}

static int wr_reclaim(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	char v[VAL_MAX], *sp;
	uint64_t want, got;

	trim(s, v, sizeof(v));
	sp = strchr(v, ' ');
	if (sp) {
		*sp = '\0';
		if (strncmp(sp + 1, "swappiness=", 11) != 0)
			return -EINVAL;
	}
	if (memparse(v, &want) < 0)
		return -EINVAL;
	n->reclaim_calls++;
	got = reclaim(n, want);
	reap_all(sim);
	return got < want ? -EAGAIN : 0; /* what it got stays reclaimed */
}

static int wr_force_empty(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	if (!n->parent)
		return -EINVAL;
	n->reclaim_calls++;
	reclaim(n, UINT64_MAX);
	reap_all(sim);
	return 0;
}

static int wr_reset_peak(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	n->peak = current(n); /* v1: for every reader */
	return 0;
}

static int wr_peak_v2(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	/* 6.12+: resets the peak of this open file only, which closes right away */
	return sim->o.peak_reset ? 0 : -EACCES;
}

/* ---- the file table */

enum {
	FV2 = 1 << 0, FV1 = 1 << 1, FNOROOT = 1 << 2, FONLYROOT = 1 << 3, FR = 1 << 4, FW = 1 << 5,
	FKILL = 1 << 6, FRECLAIM = 1 << 7,
};
#define FB (FV2 | FV1)
#define FRW (FR | FW)

typedef int (*gen_fn)(struct cgsim *, struct node *, struct sb *, bool);
typedef int (*wr_fn)(struct cgsim *, struct node *, int, const char *);

static const struct sim_file {
	const char *name;
	unsigned flags;
	unsigned ctrl;
	const char *def; /* stored settings (and fixed texts) */
	gen_fn gen;
	wr_fn wr;
} files[] = {
	{ "cgroup.procs", FB | FRW, 0, NULL, gen_procs, wr_procs },
	{ "tasks", FV1 | FRW, 0, NULL, gen_procs, wr_procs },
	{ "notify_on_release", FV1 | FRW, 0, "0", NULL, wr_store },
	{ "cgroup.clone_children", FV1 | FRW, 0, "0", NULL, wr_store },
	{ "release_agent", FV1 | FONLYROOT | FRW, 0, "", NULL, wr_store },
	{ "cgroup.sane_behavior", FV1 | FONLYROOT | FR, 0, "0", gen_fixed, NULL },
	{ "cgroup.controllers", FV2 | FR, 0, NULL, gen_controllers, NULL },
	{ "cgroup.subtree_control", FV2 | FRW, 0, NULL, gen_subtree, wr_subtree },
	{ "cgroup.events", FV2 | FNOROOT | FR, 0, NULL, gen_events, NULL },
	{ "cgroup.stat", FV2 | FR, 0, NULL, gen_stat, NULL },
	{ "cgroup.type", FV2 | FNOROOT | FRW, 0, "domain", NULL, wr_store },
	{ "cgroup.freeze", FV2 | FNOROOT | FRW, 0, "0", NULL, wr_store },
	{ "cgroup.max.depth", FV2 | FRW, 0, "max", NULL, wr_store },
	{ "cgroup.max.descendants", FV2 | FRW, 0, "max", NULL, wr_store },
	{ "cgroup.kill", FV2 | FNOROOT | FW | FKILL, 0, NULL, NULL, wr_kill },
	{ "memory.current", FV2 | FNOROOT | FR, C_MEMORY, NULL, gen_current, NULL },
	{ "memory.peak", FV2 | FNOROOT | FRW, C_MEMORY, NULL, gen_peak, wr_peak_v2 },
	{ "memory.min", FV2 | FNOROOT | FRW, C_MEMORY, "0", NULL, wr_mem_v2 },
	{ "memory.low", FV2 | FNOROOT | FRW, C_MEMORY, "0", NULL, wr_mem_v2 },
	{ "memory.high", FV2 | FNOROOT | FRW, C_MEMORY, "max", NULL, wr_mem_v2 },
	{ "memory.max", FV2 | FNOROOT | FRW, C_MEMORY, "max", NULL, wr_mem_v2 },
	{ "memory.swap.max", FV2 | FNOROOT | FRW, C_MEMORY, "max", NULL, wr_mem_v2 },
	{ "memory.swap.current", FV2 | FNOROOT | FR, C_MEMORY, "0", gen_fixed, NULL },
	{ "memory.oom.group", FV2 | FNOROOT | FRW, C_MEMORY, "0", NULL, wr_store },
	{ "memory.events", FV2 | FNOROOT | FR, C_MEMORY, NULL, gen_mem_events, NULL },
	{ "memory.events.local", FV2 | FNOROOT | FR, C_MEMORY, NULL, gen_mem_events_local, NULL },
	{ "memory.stat", FV2 | FR, C_MEMORY, NULL, gen_stat_v2, NULL },
	{ "memory.reclaim", FV2 | FW | FRECLAIM, C_MEMORY, NULL, NULL, wr_reclaim },
	{ "memory.usage_in_bytes", FV1 | FR, C_MEMORY, NULL, gen_current, NULL },
	{ "memory.max_usage_in_bytes", FV1 | FRW, C_MEMORY, NULL, gen_peak, wr_reset_peak },
	{ "memory.limit_in_bytes", FV1 | FRW, C_MEMORY, "9223372036854771712", NULL, wr_limit_v1 },
	{ "memory.soft_limit_in_bytes", FV1 | FRW, C_MEMORY, "9223372036854771712", NULL, wr_limit_v1 },
	{ "memory.failcnt", FV1 | FRW, C_MEMORY, "0", NULL, wr_store },
	{ "memory.stat", FV1 | FR, C_MEMORY, NULL, gen_stat_v1, NULL },
	{ "memory.force_empty", FV1 | FW, C_MEMORY, NULL, NULL, wr_force_empty },
	{ "memory.oom_control", FV1 | FRW, C_MEMORY, NULL, gen_oom_control, wr_store },
	{ "memory.use_hierarchy", FV1 | FRW, C_MEMORY, "1", NULL, wr_store },
	{ "memory.swappiness", FV1 | FRW, C_MEMORY, "60", NULL, wr_store },
	{ "pids.max", FB | FNOROOT | FRW, C_PIDS, "max", NULL, wr_pids_max },
	{ "pids.current", FB | FNOROOT | FR, C_PIDS, NULL, gen_pids_current, NULL },
	{ "pids.events", FB | FNOROOT | FR, C_PIDS, "max 0", gen_fixed, NULL },
	{ "cpu.max", FV2 | FNOROOT | FRW, C_CPU, "max 100000", NULL, wr_cpu_max },
	{ "cpu.weight", FV2 | FNOROOT | FRW, C_CPU, "100", NULL, wr_cpu_weight },
	{ "cpu.stat", FB | FR, C_CPU, "usage_usec 0\nuser_usec 0\nsystem_usec 0", gen_fixed, NULL },
	{ "cpu.shares", FV1 | FRW, C_CPU, "1024", NULL, wr_cpu_shares },
	{ "cpu.cfs_quota_us", FV1 | FRW, C_CPU, "-1", NULL, wr_cfs_quota },
	{ "cpu.cfs_period_us", FV1 | FRW, C_CPU, "100000", NULL, wr_cfs_period },
	{ "io.weight", FV2 | FNOROOT | FRW, C_IO, "default 100", NULL, wr_io_weight },
};
_Static_assert(N_ELEMS(files) <= NFILES, "NFILES too small");

static int file_index(const char *name)
{
	for (size_t i = 0; i < N_ELEMS(files); i++)
		if (strcmp(files[i].name, name) == 0)
			return (int)i;
	return -1;
}

static uint64_t val_u64(const struct node *n, int idx, uint64_t def)
{
	const char *v = n->val[idx] ? n->val[idx] : files[idx].def;

	return v && v[0] >= '0' && v[0] <= '9' ? strtoull(v, NULL, 10) : def;
}

/* the file of that name on n, or -ENOENT */
static int file_on(const struct cgsim *sim, const struct node *n, const char *name)
{
	for (size_t i = 0; i < N_ELEMS(files); i++) {
		const struct sim_file *f = &files[i];
		if (strcmp(f->name, name) != 0 || !(f->flags & (n->h->v2 ? FV2 : FV1)))
			continue;
		if ((f->flags & FNOROOT && !n->parent) || (f->flags & FONLYROOT && n->parent))
			continue;
		if ((f->ctrl && !(n->css & f->ctrl)) || (f->flags & FKILL && !sim->o.cgroup_kill) ||
		    (f->flags & FRECLAIM && !sim->o.memory_reclaim))
			continue;
		return (int)i;
	}
	return -ENOENT;
}

/* path -> live node, and the file index (-1: the directory itself) */
static int resolve(struct cgsim *sim, const char *path, struct node **np, int *fp)
{
	struct hier *h;
	const char *rel = to_rel(sim, path, &h);
	const char *slash;
	char dir[PATH_MAX];
	struct node *n;
	int f;

	if (!h)
		return -ENOENT;
	n = node_at(h, rel, false);
	if (n) {
		*np = n;
		*fp = -1;
		return 0;
	}
	slash = strrchr(rel, '/');
	if (!slash || (size_t)(slash - rel) >= sizeof(dir))
		return -ENOENT;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = '\0';
	n = node_at(h, dir, false);
	if (!n)
		return -ENOENT;
	f = file_on(sim, n, slash + 1);
	if (f < 0)
		return f;
	*np = n;
	*fp = f;
	return 0;
}

static int gen_file(struct cgsim *sim, struct node *n, int f, struct sb *b, bool consume)
{
	const struct sim_file *d = &files[f];

	if (!(d->flags & FR))
		return -EACCES;
	if (d->gen && d->gen != gen_fixed)
		return d->gen(sim, n, b, consume);
	sb_printf(b, "%s\n", n->val[f] ? n->val[f] : d->def);
	return 0;
}

/* ---- /proc */

static void proc_cgroup_text(struct cgsim *sim, const struct proc *pr, struct sb *b)
{
	char rel[PATH_MAX];

	for (unsigned k = sim->nh; k-- > 0;)
		sb_printf(b, "%d:%s:%s\n", sim->h[k].id, sim->h[k].cgname, rel_path(pr->at[k], rel));
}

static unsigned count_all(const struct node *n)
{
	unsigned c = 1;

	for (size_t i = 0; i < n->nkids; i++)
		c += count_all(n->kids[i]);
	return c;
}

static void proc_cgroups(struct cgsim *sim, struct sb *b, bool consume)
{
	static const struct {
		const char *name;
		unsigned bit;
	} v1[] = { { "cpuset", 0 }, { "cpu", C_CPU }, { "cpuacct", C_CPU }, { "blkio", C_IO }, { "memory", C_MEMORY },
		   { "devices", 0 }, { "freezer", 0 }, { "net_cls", 0 }, { "perf_event", 0 }, { "net_prio", 0 },
		   { "hugetlb", 0 }, { "pids", C_PIDS }, { "rdma", 0 }, { "misc", 0 } };

	sb_printf(b, "#subsys_name\thierarchy\tnum_cgroups\tenabled\n");
	for (size_t i = 0; i < N_ELEMS(v1); i++) {
		const struct hier *h = NULL;
		for (unsigned k = 0; k < sim->nh; k++)
			if ((!sim->h[k].v2 && v1[i].bit && (sim->h[k].ctrls & v1[i].bit)) ||
			    (sim->h[k].v2 && sim->o.layout == CGSIM_V2))
				h = &sim->h[k];
		sb_printf(b, "%s\t%d\t%u\t1\n", v1[i].name, h ? h->id : 0, h ? count_all(h->root) : 1);
	}
	for (unsigned k = 0; consume && k < sim->nh; k++)
		reap(sim, sim->h[k].root, true);
}

static int proc_read(struct cgsim *sim, const char *path, struct sb *b, bool consume)
{
	const char *rest = path + 6;
	char *end;
	long pid = getpid();
	const struct proc *pr;

	if (strcmp(path, "/proc/cgroups") == 0) {
		proc_cgroups(sim, b, consume);
		return 0;
	}
	if (strcmp(path, "/proc/self/mountinfo") == 0) {
		sb_printf(b, "%s", cgsim_mountinfo(sim));
		return 0;
	}
	if (strncmp(path, "/proc/", 6) != 0)
		return -ENOENT;
	if (strncmp(rest, "self/", 5) == 0) {
		rest += 4;
	} else {
		pid = strtol(rest, &end, 10);
		if (end == rest || *end != '/')
			return -ENOENT;
		rest = end;
	}
	pr = proc_find(sim, (pid_t)pid);
	if (!pr || strcmp(rest, "/cgroup") != 0)
		return -ENOENT;
	proc_cgroup_text(sim, pr, b);
	return 0;
}

static ssize_t do_read(struct cgsim *sim, const char *path, char *buf, size_t len, bool consume)
{
	struct sb b = { 0 };
	struct node *n;
	int f, r;
	size_t c;

	if (len == 0)
		return -EINVAL;
	r = resolve(sim, path, &n, &f);
	if (r == -ENOENT && strncmp(path, "/proc/", 6) == 0)
		r = proc_read(sim, path, &b, consume);
	else if (r == 0 && f < 0)
		r = -EISDIR;
	else if (r == 0)
		r = gen_file(sim, n, f, &b, consume);
	if (r == 0 && b.oom)
		r = -ENOMEM;
	if (r < 0) {
		free(b.p);
		return r;
	}
	c = b.n < len - 1 ? b.n : len - 1;
	if (c)
		memcpy(buf, b.p, c);
	buf[c] = '\0';
	free(b.p);
	return (ssize_t)c;
}

/* ---- cg_fs_ops */

static unsigned count_memcgs(const struct node *n)
{
	unsigned c = !!(n->css & C_MEMORY);

	for (size_t i = 0; i < n->nkids; i++)
		c += count_memcgs(n->kids[i]);
	return c;
}

static int sim_mkdir_at(struct cgsim *sim, const char *path)
{
	struct hier *h;
	const char *rel = to_rel(sim, path, &h), *slash = strrchr(rel, '/');
	char dir[PATH_MAX];
	struct node *p;

	if (!h)
		return -ENOENT;
	if (strcmp(rel, "/") == 0 || node_at(h, rel, false))
		return -EEXIST;
	if ((size_t)(slash - rel) >= sizeof(dir) || strlen(slash + 1) > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = '\0';
	p = node_at(h, dir, false);
	if (!p)
		return -ENOENT;
	if (file_on(sim, p, slash + 1) >= 0)
		return -EEXIST;
	if ((h->ctrls & C_MEMORY) && (!h->v2 || (p->subtree & C_MEMORY)) &&
	    count_memcgs(h->root) >= sim->o.max_memcgs)
		return -ENOSPC;
	return node_new(sim, h, p, slash + 1) ? 0 : -ENOMEM;
}

/* the cgroup leaves the namespace and dies (cgsim.h) */
static int sim_rmdir_node(struct cgsim *sim, struct node *n)
{
	struct node *p = n->parent;

	if (!p)
		return -EBUSY;
	for (size_t i = 0; i < n->nkids; i++)
		if (!n->kids[i]->dying)
			return -EBUSY;
	if (local_procs(sim, n))
		return -EBUSY;
	n->dying = true;
	n->lag = sim->o.lag;
	unshadow(n); /* watchers get IN_IGNORED */
	if ((n->css & C_MEMORY) && sim->o.kernel == CGSIM_REPARENT) {
		struct node *to = memcg_of(p);
		to->file += n->file;
		to->anon += n->anon;
		to->dirty += n->dirty;
		n->file = n->anon = n->dirty = 0;
	}
	reap(sim, p, false);
	return 0;
}

static int op_mkdir(void *ctx, const char *path)
{
	struct cgsim *sim = ctx;
	int inj, i = op_begin(sim, CGSIM_OP_MKDIR, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	return op_end(sim, i, sim_mkdir_at(sim, path));
}

static int op_rmdir(void *ctx, const char *path)
{
	struct cgsim *sim = ctx;
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_RMDIR, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = resolve(sim, path, &n, &f);
	if (r == 0)
		r = f >= 0 ? -ENOTDIR : sim_rmdir_node(sim, n);
	return op_end(sim, i, r);
}

static ssize_t op_read(void *ctx, const char *path, char *buf, size_t len)
{
	struct cgsim *sim = ctx;
	int inj, i = op_begin(sim, CGSIM_OP_READ, path, NULL, &inj);
	ssize_t r;

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = do_read(sim, path, buf, len, true);
	op_end(sim, i, r < 0 ? (int)r : 0);
	return r;
}

static int op_write(void *ctx, const char *path, const char *s)
{
	struct cgsim *sim = ctx;
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_WRITE, path, s, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = resolve(sim, path, &n, &f);
	if (r == 0 && f < 0)
		r = -EISDIR;
	else if (r == 0 && !(files[f].flags & FW))
		r = -EACCES;
	else if (r == 0)
		r = files[f].wr(sim, n, f, s);
	if (r == 0 && sim->hook && pat_match(sim->hook_pat, path))
		sim->hook(sim, path, s, sim->hook_ud);
	return op_end(sim, i, r);
}

static int op_inode(void *ctx, const char *path, uint64_t *ino)
{
	struct cgsim *sim = ctx;
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_INODE, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = resolve(sim, path, &n, &f);
	if (r == 0)
		*ino = f < 0 ? n->ino : (1ULL << 40) | (n->ino << 8) | (uint64_t)(f + 1);
	return op_end(sim, i, r);
}

static int op_list(void *ctx, const char *path, int (*fn)(const char *name, void *ud), void *ud)
{
	struct cgsim *sim = ctx;
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_LIST, path, NULL, &inj);
	char (*names_copy)[NAME_MAX + 1] = NULL;
	size_t cnt = 0;

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = resolve(sim, path, &n, &f);
	if (r == 0 && f >= 0)
		r = -ENOTDIR;
	if (r == 0 && !(names_copy = calloc(n->nkids + 1, sizeof(*names_copy))))
		r = -ENOMEM;
	for (size_t k = 0; r == 0 && k < n->nkids; k++)
		if (!n->kids[k]->dying)
			memcpy(names_copy[cnt++], n->kids[k]->name, sizeof(*names_copy));
	/* copied: fn may change the tree */
	for (size_t k = 0; r == 0 && k < cnt; k++) {
		int x = fn(names_copy[k], ud);
		if (x < 0)
			r = x;
	}
	free(names_copy);
	return op_end(sim, i, r);
}

/* a memfd standing for an open memory.peak; pfd_refresh keeps its text */
static int peak_fd(struct cgsim *sim, struct node *n)
{
	struct pfd *v = realloc(sim->pfds, (sim->npfds + 1) * sizeof(*v));
	int fd, mine;

	if (!v)
		return -ENOMEM;
	sim->pfds = v;
	fd = memfd_create("cgsim-memory.peak", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	mine = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (mine < 0) {
		close(fd);
		return -errno;
	}
	v[sim->npfds++] = (struct pfd){ .fd = mine, .node = n, .peak = n->peak, .last = "" };
	return fd;
}

static int op_open(void *ctx, const char *path, int flags)
{
	struct cgsim *sim = ctx;
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_OPEN, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = resolve(sim, path, &n, &f);
	if (r == 0 && (f < 0 || strcmp(files[f].name, "memory.peak") != 0))
		r = -EOPNOTSUPP; /* only what cg opens */
	if (r == 0 && (flags & O_ACCMODE) != O_RDONLY && !sim->o.peak_reset)
		r = -EACCES;
	if (r == 0)
		r = peak_fd(sim, n);
	return op_end(sim, i, r); /* op_end writes the content */
}

static int op_watch(void *ctx, int ifd, const char *path, uint32_t mask)
{
	struct cgsim *sim = ctx;
	struct node *n;
	char sh[128];
	int f, r, fd, inj, i = op_begin(sim, CGSIM_OP_WATCH, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = resolve(sim, path, &n, &f);
	if (r == 0 && f < 0)
		r = -EOPNOTSUPP;
	if (r == 0 && !n->shadow[f]) {
		snprintf(sh, sizeof(sh), "%s/%llu-%s", sim->tmpdir, (unsigned long long)n->ino, files[f].name);
		fd = open(sh, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			r = -errno;
		else
			close(fd);
		if (r == 0 && !(n->shadow[f] = strdup(sh)))
			r = -ENOMEM;
	}
	if (r == 0 && (r = inotify_add_watch(ifd, n->shadow[f], mask)) < 0)
		r = -errno;
	return op_end(sim, i, r);
}

/* ---- setup */

struct cgsim_opts cgsim_opts_default(enum cgsim_layout layout)
{
	return (struct cgsim_opts){
		.layout = layout, .kernel = CGSIM_REPARENT, .self = "/user.slice/cgsim.scope", .lag = 1,
		.dying_subsys_stat = true, .memory_reclaim = true, .peak_reset = true, .cgroup_kill = true,
		.open = true, .watch = true, .max_memcgs = 65535,
	};
}

static void add_hier(struct cgsim *sim, const char *mount, const char *opts, const char *cgname, int id, bool v2,
		     unsigned ctrls)
{
	struct hier *h = &sim->h[sim->nh++];

	snprintf(h->mount, sizeof(h->mount), "%s", mount);
	h->opts = opts;
	h->cgname = cgname;
	h->id = id;
	h->v2 = v2;
	h->ctrls = ctrls;
	if (ctrls & C_MEMORY)
		sim->memh = h;
}

/* the test process's cgroup in every hierarchy; v2 delegates cpu io memory pids to it */
static int make_self(struct cgsim *sim)
{
	struct proc *pr = calloc(1, sizeof(*pr));
	char rel[PATH_MAX];

	if (!pr)
		return -ENOMEM;
	sim->procs = pr;
	sim->nprocs = 1;
	pr->pid = getpid();
	for (unsigned k = 0; k < sim->nh; k++) {
		struct hier *h = &sim->h[k];
		struct node *n = h->root;
		snprintf(rel, sizeof(rel), "%s", sim->self);
		for (char *save = NULL, *c = strtok_r(rel, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
			struct node *next = kid(n, c, strlen(c));
			if (h->v2)
				n->subtree = h->ctrls & (C_CPU | C_IO | C_MEMORY | C_PIDS);
			if (!next && !(next = node_new(sim, h, n, c)))
				return -ENOMEM;
			n = next;
		}
		pr->at[k] = n;
	}
	return 0;
}

struct cgsim *cgsim_new(const struct cgsim_opts *opts)
{
	struct cgsim *sim = calloc(1, sizeof(*sim));
	struct cgsim_opts d = cgsim_opts_default(CGSIM_V2);

	if (!sim)
		return NULL;
	sim->o = opts ? *opts : d;
	snprintf(sim->self, sizeof(sim->self), "%s", sim->o.self ? sim->o.self : d.self);
	sim->o.self = sim->self;
	if (sim->o.layout == CGSIM_V2) {
		add_hier(sim, "/sys/fs/cgroup", NULL, "", 0, true, C_ALL_V2);
	} else {
		if (sim->o.layout == CGSIM_HYBRID)
			add_hier(sim, "/sys/fs/cgroup/unified", NULL, "", 0, true, 0);
		add_hier(sim, "/sys/fs/cgroup/systemd", "xattr,name=systemd", "name=systemd", 1, false, 0);
		add_hier(sim, "/sys/fs/cgroup/cpu,cpuacct", "cpu,cpuacct", "cpu,cpuacct", 3, false, C_CPU);
		add_hier(sim, "/sys/fs/cgroup/memory", "memory", "memory", 4, false, C_MEMORY);
		add_hier(sim, "/sys/fs/cgroup/blkio", "blkio", "blkio", 5, false, C_IO);
		add_hier(sim, "/sys/fs/cgroup/pids", "pids", "pids", 7, false, C_PIDS);
	}
	for (unsigned k = 0; k < sim->nh; k++)
		if (!(sim->h[k].root = node_new(sim, &sim->h[k], NULL, ""))) {
			cgsim_free(sim);
			return NULL;
		}
	strcpy(sim->tmpdir, "/tmp/cgsim-XXXXXX");
	if (!mkdtemp(sim->tmpdir) || make_self(sim) < 0) {
		cgsim_free(sim);
		return NULL;
	}
	sim->ops = (struct cg_fs_ops){
		.mkdir = op_mkdir, .rmdir = op_rmdir, .read = op_read, .write = op_write, .inode = op_inode,
		.list_dirs = op_list, .open = sim->o.open ? op_open : NULL, .watch = sim->o.watch ? op_watch : NULL,
	};
	sync_events(sim);
	return sim;
}

static uint64_t proc_exit(struct cgsim *sim, pid_t pid)
{
	for (size_t i = 0; i < sim->nprocs; i++) {
		struct proc *pr = &sim->procs[i];
		if (pr->pid != pid)
			continue;
		if (pr->child) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		sim->procs[i] = sim->procs[--sim->nprocs];
		sync_events(sim);
		return 1;
	}
	return 0;
}

void cgsim_free(struct cgsim *sim)
{
	if (!sim)
		return;
	while (sim->nprocs)
		proc_exit(sim, sim->procs[sim->nprocs - 1].pid);
	free(sim->procs);
	for (unsigned k = 0; k < sim->nh; k++)
		node_free(sim, sim->h[k].root);
	for (size_t i = 0; i < sim->npfds; i++)
		close(sim->pfds[i].fd);
	free(sim->pfds);
	cgsim_fail_clear(sim);
	cgsim_calls_clear(sim);
	free(sim->hook_pat);
	if (sim->tmpdir[0])
		rmdir(sim->tmpdir);
	free(sim);
}

struct cgsim_opts *cgsim_options(struct cgsim *sim)
{
	return &sim->o;
}

const struct cg_fs_ops *cgsim_ops(const struct cgsim *sim)
{
	return &sim->ops;
}

const char *cgsim_mountinfo(struct cgsim *sim)
{
	char *t = sim->mi_text;
	size_t o = 0, len = sizeof(sim->mi_text);

	o += (size_t)snprintf(t, len,
			      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
			      "25 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n");
	if (sim->o.layout != CGSIM_V2)
		o += (size_t)snprintf(t + o, len - o, "26 25 0:23 / /sys/fs/cgroup ro,nosuid,"
				      "nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755\n");
	for (unsigned k = 0; k < sim->nh && o < len; k++) {
		const struct hier *h = &sim->h[k];
		o += (size_t)snprintf(t + o, len - o,
				      "%u %d 0:%u / %s rw,nosuid,nodev,noexec,relatime shared:%u - %s %s rw%s%s\n",
				      30 + k, sim->o.layout == CGSIM_V2 ? 25 : 26, 30 + k, h->mount, 9 + k,
				      h->v2 ? "cgroup2" : "cgroup", h->v2 ? "cgroup2" : "cgroup", h->opts ? "," : "",
				      h->opts ? h->opts : (h->v2 ? ",nsdelegate,memory_recursiveprot" : ""));
	}
	return t;
}

const char *cgsim_proc_self_cgroup(struct cgsim *sim)
{
	struct sb b = { 0 };
	const struct proc *pr = proc_find(sim, getpid());

	sim->cg_text[0] = '\0';
	if (pr)
		proc_cgroup_text(sim, pr, &b);
	if (b.p)
		snprintf(sim->cg_text, sizeof(sim->cg_text), "%s", b.p);
	free(b.p);
	return sim->cg_text;
}

/* ---- the test's side */

int cgsim_mkdir(struct cgsim *sim, const char *path)
{
	struct hier *h;
	const char *rel = to_rel(sim, path, &h);
	char part[PATH_MAX], full[PATH_MAX + 64];
	unsigned made = 0;
	int r;

	for (unsigned k = 0; k < sim->nh; k++) {
		for (const char *p = strchr(rel + 1, '/');; p = strchr(p + 1, '/')) {
			size_t len = p ? (size_t)(p - rel) : strlen(rel);
			snprintf(part, sizeof(part), "%.*s", (int)len, rel);
			snprintf(full, sizeof(full), "%s%s", sim->h[k].mount, part);
			r = sim_mkdir_at(sim, full);
			if (r < 0 && r != -EEXIST)
				return r;
			made += r == 0 && !p;
			if (!p)
				break;
		}
	}
	sync_events(sim);
	return made ? 0 : -EEXIST;
}

int cgsim_rmdir(struct cgsim *sim, const char *path)
{
	struct hier *h;
	const char *rel = to_rel(sim, path, &h);
	int first = 0, gone = 0;

	for (unsigned k = 0; k < sim->nh; k++) {
		struct node *n = node_at(&sim->h[k], rel, false);
		int r = n ? sim_rmdir_node(sim, n) : -ENOENT;
		gone += r == -ENOENT;
		if (r < 0 && r != -ENOENT && !first)
			first = r;
	}
	pfd_refresh(sim);
	return first ? first : gone == (int)sim->nh ? -ENOENT : 0;
}

static struct node *mem_node(struct cgsim *sim, const char *path)
{
	struct hier *h;
	const char *rel;

	if (!path)
		return sim->memh->root;
	rel = to_rel(sim, path, &h);
	return node_at(sim->memh, rel, false);
}

bool cgsim_exists(struct cgsim *sim, const char *path)
{
	return mem_node(sim, path) != NULL;
}

ssize_t cgsim_peek(struct cgsim *sim, const char *path, char *buf, size_t len)
{
	return do_read(sim, path, buf, len, false);
}

pid_t cgsim_spawn(struct cgsim *sim, const char *path)
{
	struct hier *h;
	const char *rel = to_rel(sim, path, &h);
	struct proc pr = { 0 }, *v;
	bool exact = false;
	pid_t parent = getpid();

	for (unsigned k = 0; k < sim->nh; k++) {
		pr.at[k] = node_at(&sim->h[k], rel, true);
		exact |= node_at(&sim->h[k], rel, false) != NULL;
		if (sim->h[k].v2 && pr.at[k]->parent && (pr.at[k]->subtree & C_DOMAIN))
			return -EBUSY;
	}
	if (!exact)
		return -ENOENT;
	v = realloc(sim->procs, (sim->nprocs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	sim->procs = v;
	pr.child = true;
	pr.pid = fork();
	if (pr.pid < 0)
		return -errno;
	if (pr.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (int fd = 3; fd < 1024; fd++)
			close(fd); /* not the test's inotify, memfds or pipes */
		for (;;)
			pause();
	}
	sim->procs[sim->nprocs++] = pr;
	pfd_refresh(sim);
	sync_events(sim);
	return pr.pid;
}

int cgsim_exit(struct cgsim *sim, pid_t pid)
{
	const struct proc *pr = proc_find(sim, pid);

	if (!pr || pid == getpid())
		return -ESRCH;
	proc_exit(sim, pid);
	pfd_refresh(sim);
	return 0;
}

int cgsim_move(struct cgsim *sim, pid_t pid, const char *path)
{
	struct hier *h;
	const char *rel = to_rel(sim, path, &h);
	struct proc *pr = proc_find(sim, pid);

	if (!pr)
		return -ESRCH;
	for (unsigned k = 0; k < sim->nh; k++) {
		struct node *n = node_at(&sim->h[k], rel, true);
		if (sim->h[k].v2 && n->parent && (n->subtree & C_DOMAIN))
			return -EBUSY;
	}
	for (unsigned k = 0; k < sim->nh; k++)
		pr->at[k] = node_at(&sim->h[k], rel, true);
	sync_events(sim);
	return 0;
}

int cgsim_adopt(struct cgsim *sim, pid_t pid, const char *path)
{
	struct proc *v;
	int r;

	if (pid <= 0)
		return -EINVAL;
	if (proc_find(sim, pid))
		return -EEXIST;
	v = realloc(sim->procs, (sim->nprocs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	sim->procs = v;
	v[sim->nprocs++] = (struct proc){ .pid = pid, .at = { NULL } };
	for (unsigned k = 0; k < sim->nh; k++)
		v[sim->nprocs - 1].at[k] = sim->h[k].root;
	r = cgsim_move(sim, pid, path);
	if (r < 0)
		sim->nprocs--;
	return r;
}

int cgsim_nprocs(struct cgsim *sim, const char *path, unsigned *n)
{
	struct node *x = mem_node(sim, path);

	if (!x)
		return -ENOENT;
	*n = local_procs(sim, x);
	return 0;
}

int cgsim_charge(struct cgsim *sim, const char *path, uint64_t file_bytes, uint64_t anon_bytes)
{
	struct node *n = mem_node(sim, path);

	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	n->file += file_bytes;
	n->anon += anon_bytes;
	update_peaks(sim, n);
	pfd_refresh(sim);
	return 0;
}

int cgsim_charge_dirty(struct cgsim *sim, const char *path, uint64_t dirty_file_bytes)
{
	struct node *n = mem_node(sim, path);
	int r = cgsim_charge(sim, path, dirty_file_bytes, 0);

	if (r == 0)
		memcg_of(n)->dirty += dirty_file_bytes;
	return r;
}

int cgsim_uncharge(struct cgsim *sim, const char *path, uint64_t file_bytes, uint64_t anon_bytes)
{
	struct node *n = mem_node(sim, path);

	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	n->file -= file_bytes < n->file ? file_bytes : n->file;
	n->anon -= anon_bytes < n->anon ? anon_bytes : n->anon;
	if (n->dirty > n->file)
		n->dirty = n->file;
	pfd_refresh(sim);
	return 0;
}

enum drop_kind { DROP_CLEAN, DROP_ANON, DROP_DIRTY };

static uint64_t drop(struct node *n, enum drop_kind what)
{
	uint64_t got = 0;

	switch (what) {
	case DROP_CLEAN: got = n->file - n->dirty; n->file = n->dirty; break;
	case DROP_ANON: got = n->anon; n->anon = 0; break;
	case DROP_DIRTY: got = n->dirty; n->dirty = 0; break;
	}
	for (size_t i = 0; i < n->nkids; i++)
		got += drop(n->kids[i], what);
	return got;
}

static uint64_t drop_at(struct cgsim *sim, const char *path, enum drop_kind what)
{
	struct node *n = mem_node(sim, path);
	uint64_t got = n ? drop(n, what) : 0;

	reap_all(sim);
	pfd_refresh(sim);
	return got;
}

uint64_t cgsim_drop_cache(struct cgsim *sim, const char *path)
{
	return drop_at(sim, path, DROP_CLEAN);
}

uint64_t cgsim_drop_anon(struct cgsim *sim, const char *path)
{
	return drop_at(sim, path, DROP_ANON);
}

uint64_t cgsim_writeback(struct cgsim *sim, const char *path)
{
	return drop_at(sim, path, DROP_DIRTY);
}

int cgsim_oom_kill(struct cgsim *sim, const char *path)
{
	struct node *n = mem_node(sim, path);
	int ev = file_index("memory.events");

	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	n->oom++;
	for (struct node *p = n; p; p = p->parent)
		touch(p->shadow[ev]);
	return 0;
}

int cgsim_memory(struct cgsim *sim, const char *path, struct cgsim_mem *out)
{
	struct node *n = mem_node(sim, path);
	struct tot t;

	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	t = totals(n);
	*out = (struct cgsim_mem){ .file = n->file, .anon = n->anon, .dirty = n->dirty, .tfile = t.file,
				   .tanon = t.anon, .tdirty = t.dirty, .peak = n->peak, .reclaimed = n->reclaimed,
				   .reclaim_calls = n->reclaim_calls };
	return 0;
}

static unsigned dying_below(const struct node *n, uint64_t *bytes)
{
	unsigned c = 0;

	for (size_t i = 0; i < n->nkids; i++) {
		const struct node *k = n->kids[i];
		if (k->dying && (k->css & C_MEMORY)) {
			c++;
			*bytes += k->file + k->anon;
		}
		c += dying_below(k, bytes);
	}
	return c;
}

unsigned cgsim_dying(struct cgsim *sim, const char *path, uint64_t *bytes)
{
	struct node *n = mem_node(sim, path);
	uint64_t b = 0;
	unsigned c = n ? dying_below(n, &b) : 0;

	if (bytes)
		*bytes = b;
	return c;
}

static void settle(struct cgsim *sim, struct node *n)
{
	for (size_t i = 0; i < n->nkids; i++) {
		settle(sim, n->kids[i]);
		n->kids[i]->lag = 0;
	}
}

void cgsim_settle(struct cgsim *sim)
{
	for (unsigned k = 0; k < sim->nh; k++)
		settle(sim, sim->h[k].root);
	reap_all(sim);
}

int cgsim_fail(struct cgsim *sim, enum cgsim_op op, const char *pattern, int err, int count)
{
	struct rule *v;

	if (err >= 0)
		return -EINVAL;
	v = realloc(sim->rules, (sim->nrules + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	sim->rules = v;
	v[sim->nrules] = (struct rule){ .op = op, .pat = pattern ? strdup(pattern) : NULL, .err = err, .count = count };
	sim->nrules++;
	return 0;
}

void cgsim_fail_clear(struct cgsim *sim)
{
	for (size_t i = 0; i < sim->nrules; i++)
		free(sim->rules[i].pat);
	free(sim->rules);
	sim->rules = NULL;
	sim->nrules = 0;
}

int cgsim_set_delay(struct cgsim *sim, const char *pattern, unsigned usec)
{
	struct rule *v;

	for (size_t i = 0; i < sim->nrules; i++) {
		struct rule *r = &sim->rules[i];
		if (!r->err && ((!r->pat && !pattern) || (r->pat && pattern && strcmp(r->pat, pattern) == 0))) {
			r->usec = usec;
			return 0;
		}
	}
	v = realloc(sim->rules, (sim->nrules + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	sim->rules = v;
	v[sim->nrules++] = (struct rule){ .op = CGSIM_OP_ANY, .pat = pattern ? strdup(pattern) : NULL, .usec = usec };
	return 0;
}

unsigned cgsim_calls(const struct cgsim *sim, enum cgsim_op op, const char *pattern)
{
	unsigned c = 0;

	for (size_t i = 0; i < sim->ncalls; i++)
		c += (op == CGSIM_OP_ANY || sim->calls[i].op == op) && pat_match(pattern, sim->calls[i].path);
	return c;
}

const char *cgsim_last_write(const struct cgsim *sim, const char *pattern, int *result)
{
	for (size_t i = sim->ncalls; i-- > 0;) {
		const struct call *c = &sim->calls[i];
		if (c->op == CGSIM_OP_WRITE && pat_match(pattern, c->path)) {
			if (result)
				*result = c->res;
			return c->val;
		}
	}
	return NULL;
}

void cgsim_calls_clear(struct cgsim *sim)
{
	for (size_t i = 0; i < sim->ncalls; i++) {
		free(sim->calls[i].path);
		free(sim->calls[i].val);
	}
	free(sim->calls);
	sim->calls = NULL;
	sim->ncalls = 0;
}

int cgsim_on_write(struct cgsim *sim, const char *pattern, cgsim_write_fn fn, void *ud)
{
	char *pat = pattern ? strdup(pattern) : NULL;

	if (pattern && !pat)
		return -ENOMEM;
	free(sim->hook_pat);
	sim->hook_pat = pat;
	sim->hook = fn;
	sim->hook_ud = ud;
	return 0;
}
