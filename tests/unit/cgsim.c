/* cgsim.c - a simulated cgroupfs for unit tests (see cgsim.h for the model):
 * setup, the cg_fs_ops the cgroup layer calls, faults and call records */
#include "config.h"

#include "cgsim_internal.h"
#include "simclock.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* ---- the lock */

struct cgsim *sim_lock(const struct cgsim *csim)
{
	struct cgsim *sim = (struct cgsim *)csim; /* the lock is not the state */

	pthread_mutex_lock(&sim->mu);
	return sim;
}

void sim_unlock_at_exit(struct cgsim **held)
{
	pthread_mutex_unlock(&(*held)->mu);
}

/* ---- call records and injected faults */

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

/* record the call, sleep and inject; returns the call's index or -errno.
 * The sleep is taken without the lock (when the caller holds it once, as
 * the ops do), so a slow call on one thread does not hold up the others. */
static int op_begin(struct cgsim *sim, enum cgsim_op op, const char *path, const char *val, int *injected)
{
	struct call *c;
	unsigned usec = 0;

	*injected = 0;
	if (sim->ncalls == sim->capcalls) {
		size_t cap = sim->capcalls ? sim->capcalls * 2 : 256;
		c = realloc(sim->calls, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		sim->calls = c;
		sim->capcalls = cap;
	}
	c = &sim->calls[sim->ncalls];
	c->op = op;
	c->path = strdup(path);
	c->val = val ? strdup(val) : NULL;
	c->res = 0;
	sim->ncalls++;
	sim_sweep(sim);
	sim_pfd_refresh(sim);
	for (size_t i = 0; i < sim->nrules; i++) {
		struct rule *r = &sim->rules[i];
		if ((r->op != op && r->op != CGSIM_OP_ANY) || !pat_match(r->pat, path))
			continue;
		if (!r->err && r->usec &&
		    (op == CGSIM_OP_MKDIR || op == CGSIM_OP_RMDIR || op == CGSIM_OP_WRITE || r->op == op))
			usec += r->usec;
		if (r->err && r->count != 0 && !*injected) {
			if (r->count > 0)
				r->count--;
			*injected = r->err;
		}
	}
	if (usec) {
		pthread_mutex_unlock(&sim->mu);
		simclock_sleep_us(usec);
		pthread_mutex_lock(&sim->mu);
	}
	return (int)sim->ncalls - 1;
}

static int op_end(struct cgsim *sim, int idx, int res)
{
	if (idx >= 0)
		sim->calls[idx].res = res;
	sim_pfd_refresh(sim);
	return res;
}

/* ---- cg_fs_ops */

static int op_mkdir(void *ctx, const char *path)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	int inj, i = op_begin(sim, CGSIM_OP_MKDIR, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	return op_end(sim, i, sim_mkdir_at(sim, path));
}

static int op_rmdir(void *ctx, const char *path)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_RMDIR, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = sim_resolve(sim, path, &n, &f);
	if (r == 0)
		r = f >= 0 ? -ENOTDIR : sim_rmdir_node(sim, n);
	return op_end(sim, i, r);
}

static void op_sync(void *ctx)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);

	sim_sync(sim);
}

static ssize_t op_read(void *ctx, const char *path, char *buf, size_t len)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	int inj, i = op_begin(sim, CGSIM_OP_READ, path, NULL, &inj);
	ssize_t r;

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = sim_do_read(sim, path, buf, len, true);
	op_end(sim, i, r < 0 ? (int)r : 0);
	return r;
}

static int op_write(void *ctx, const char *path, const char *s)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_WRITE, path, s, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = sim_resolve(sim, path, &n, &f);
	if (r == 0 && f < 0)
		r = -EISDIR;
	else if (r == 0)
		r = sim_file_write(sim, n, f, s);
	if (r == 0 && sim->hook && pat_match(sim->hook_pat, path))
		sim->hook(sim, path, s, sim->hook_ud);
	return op_end(sim, i, r);
}

/* a device filter: its rules in the directory's cgsim.devices */
static int op_devices(void *ctx, const char *dir, const char *deny)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/cgsim.devices", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return op_write(ctx, path, deny);
}

static int op_inode(void *ctx, const char *path, uint64_t *ino)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_INODE, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = sim_resolve(sim, path, &n, &f);
	if (r == 0)
		*ino = f < 0 ? n->ino : (1ULL << 40) | (n->ino << 8) | (uint64_t)(f + 1);
	return op_end(sim, i, r);
}

static int op_list(void *ctx, const char *path, int (*fn)(const char *name, void *ud), void *ud)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_LIST, path, NULL, &inj);
	char (*names_copy)[NAME_MAX + 1] = NULL;
	size_t cnt = 0;

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = sim_resolve(sim, path, &n, &f);
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

static int op_open(void *ctx, const char *path, int flags)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	struct node *n;
	int f, r, inj, i = op_begin(sim, CGSIM_OP_OPEN, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = sim_resolve(sim, path, &n, &f);
	if (r == 0 && (f < 0 || strcmp(sim_file_name(f), "memory.peak") != 0))
		r = -EOPNOTSUPP; /* only what cg opens */
	if (r == 0 && (flags & O_ACCMODE) != O_RDONLY && !sim->o.peak_reset)
		r = -EACCES;
	if (r == 0)
		r = sim_peak_fd(sim, n);
	return op_end(sim, i, r); /* op_end writes the content */
}

static int op_watch(void *ctx, int ifd, const char *path, uint32_t mask)
{
	struct cgsim *sim = ctx;
	SIM_LOCKED(sim);
	struct node *n;
	char sh[PATH_MAX + 64];
	int f, r, fd, inj, i = op_begin(sim, CGSIM_OP_WATCH, path, NULL, &inj);

	if (i < 0 || inj)
		return op_end(sim, i, i < 0 ? i : inj);
	r = sim_resolve(sim, path, &n, &f);
	if (r == 0 && f < 0)
		r = -EOPNOTSUPP;
	if (r == 0 && !n->shadow[f]) {
		snprintf(sh, sizeof(sh), "%s/%llu-%s", sim->tmpdir, (unsigned long long)n->ino, sim_file_name(f));
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
		.dying_subsys_stat = true, .memory_reclaim = true, .memory_peak = true, .peak_reset = true,
		.cgroup_kill = true, .open = true, .watch = true, .max_memcgs = 65535,
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

/* the test process's cgroup in every hierarchy; v2 delegates cpu io memory pids cpuset to it */
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
			struct node *next = sim_kid(n, c, strlen(c));
			if (h->v2)
				n->subtree = h->ctrls & (C_CPU | C_IO | C_MEMORY | C_PIDS | C_CPUSET);
			if (!next && !(next = sim_node_new(sim, h, n, c)))
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
	pthread_mutexattr_t ma;
	const char *t;

	if (!sim)
		return NULL;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&sim->mu, &ma);
	pthread_mutexattr_destroy(&ma);
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
		if (!(sim->h[k].root = sim_node_new(sim, &sim->h[k], NULL, ""))) {
			cgsim_free(sim);
			return NULL;
		}
	t = getenv("TMPDIR");
	/* cut short, it is no template: mkdtemp fails */
	snprintf(sim->tmpdir, sizeof(sim->tmpdir), "%s/cgsim-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(sim->tmpdir) || make_self(sim) < 0) {
		cgsim_free(sim);
		return NULL;
	}
	sim->ops = (struct cg_fs_ops){
		.devices = op_devices,
		.mkdir = op_mkdir, .rmdir = op_rmdir, .read = op_read, .write = op_write, .inode = op_inode,
		.list_dirs = op_list, .open = sim->o.open ? op_open : NULL, .watch = sim->o.watch ? op_watch : NULL,
		.sync = op_sync,
	};
	sim_sync_events(sim);
	return sim;
}

void cgsim_free(struct cgsim *sim)
{
	if (!sim)
		return;
	while (sim->nprocs)
		sim_proc_exit(sim, sim->procs[sim->nprocs - 1].pid);
	free(sim->procs);
	for (unsigned k = 0; k < sim->nh; k++)
		sim_node_free(sim, sim->h[k].root);
	for (size_t i = 0; i < sim->npfds; i++)
		close(sim->pfds[i].fd);
	free(sim->pfds);
	cgsim_fail_clear(sim);
	cgsim_calls_clear(sim);
	free(sim->hook_pat);
	if (sim->tmpdir[0])
		rmdir(sim->tmpdir);
	pthread_mutex_destroy(&sim->mu);
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
	SIM_LOCKED(sim);
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
	SIM_LOCKED(sim);
	struct sb b = { 0 };
	const struct proc *pr = sim_proc_find(sim, getpid());

	sim->cg_text[0] = '\0';
	if (pr)
		sim_proc_cgroup_text(sim, pr, &b);
	if (b.p)
		snprintf(sim->cg_text, sizeof(sim->cg_text), "%s", b.p);
	free(b.p);
	return sim->cg_text;
}

ssize_t cgsim_peek(struct cgsim *sim, const char *path, char *buf, size_t len)
{
	SIM_LOCKED(sim);
	return sim_do_read(sim, path, buf, len, false);
}

/* ---- faults and records, for the test */

/* a fault or delay rule after the others (rule.pat is set here from pattern) */
static int rule_add(struct cgsim *sim, struct rule rule, const char *pattern)
{
	struct rule *v = realloc(sim->rules, (sim->nrules + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	sim->rules = v;
	rule.pat = pattern ? strdup(pattern) : NULL;
	v[sim->nrules++] = rule;
	return 0;
}

int cgsim_fail(struct cgsim *sim, enum cgsim_op op, const char *pattern, int err, int count)
{
	SIM_LOCKED(sim);

	if (err >= 0)
		return -EINVAL;
	return rule_add(sim, (struct rule){ .op = op, .err = err, .count = count }, pattern);
}

void cgsim_fail_clear(struct cgsim *sim)
{
	SIM_LOCKED(sim);
	for (size_t i = 0; i < sim->nrules; i++)
		free(sim->rules[i].pat);
	free(sim->rules);
	sim->rules = NULL;
	sim->nrules = 0;
}

int cgsim_set_op_delay(struct cgsim *sim, enum cgsim_op op, const char *pattern, unsigned usec)
{
	SIM_LOCKED(sim);

	return rule_add(sim, (struct rule){ .op = op, .usec = usec }, pattern);
}

int cgsim_set_delay(struct cgsim *sim, const char *pattern, unsigned usec)
{
	SIM_LOCKED(sim);

	for (size_t i = 0; i < sim->nrules; i++) {
		struct rule *r = &sim->rules[i];
		if (!r->err && r->op == CGSIM_OP_ANY &&
		    ((!r->pat && !pattern) || (r->pat && pattern && strcmp(r->pat, pattern) == 0))) {
			r->usec = usec;
			return 0;
		}
	}
	return rule_add(sim, (struct rule){ .op = CGSIM_OP_ANY, .usec = usec }, pattern);
}

static bool call_is(const struct call *c, enum cgsim_op op, const char *pattern)
{
	return (op == CGSIM_OP_ANY || c->op == op) && pat_match(pattern, c->path);
}

long cgsim_call_first(const struct cgsim *sim, enum cgsim_op op, const char *pattern)
{
	SIM_LOCKED(sim);

	for (size_t i = 0; i < sim->ncalls; i++)
		if (call_is(&sim->calls[i], op, pattern))
			return (long)i;
	return -1;
}

unsigned cgsim_calls(const struct cgsim *sim, enum cgsim_op op, const char *pattern)
{
	SIM_LOCKED(sim);
	unsigned c = 0;

	for (size_t i = 0; i < sim->ncalls; i++)
		c += call_is(&sim->calls[i], op, pattern);
	return c;
}

const char *cgsim_last_write(const struct cgsim *sim, const char *pattern, int *result)
{
	SIM_LOCKED(sim);
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
	SIM_LOCKED(sim);
	for (size_t i = 0; i < sim->ncalls; i++) {
		free(sim->calls[i].path);
		free(sim->calls[i].val);
	}
	free(sim->calls);
	sim->calls = NULL;
	sim->ncalls = 0;
	sim->capcalls = 0;
}

int cgsim_on_write(struct cgsim *sim, const char *pattern, cgsim_write_fn fn, void *ud)
{
	SIM_LOCKED(sim);
	char *pat = pattern ? strdup(pattern) : NULL;

	if (pattern && !pat)
		return -ENOMEM;
	free(sim->hook_pat);
	sim->hook_pat = pat;
	sim->hook = fn;
	sim->hook_ud = ud;
	return 0;
}
