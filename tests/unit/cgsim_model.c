/* cgsim_model.c - the simulated kernel: one cgroup tree per hierarchy,
 * processes and population, page charges, rmdir and dying groups (the model
 * is described in cgsim.h). */
#include "config.h"

#include "cgsim_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- trees */

char *sim_rel_path(const struct node *n, char *buf)
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

struct node *sim_node_new(struct cgsim *sim, struct hier *h, struct node *parent, const char *name)
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

void sim_node_free(struct cgsim *sim, struct node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nkids; i++)
		sim_node_free(sim, n->kids[i]);
	for (size_t i = 0; i < sim->npfds; i++)
		if (sim->pfds[i].node == n)
			sim->pfds[i].node = NULL;
	unshadow(n);
	for (int i = 0; i < NFILES; i++)
		free(n->val[i]);
	free(n->kids);
	free(n);
}

struct node *sim_kid(const struct node *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nkids; i++)
		if (!n->kids[i]->dying && strlen(n->kids[i]->name) == len && strncmp(n->kids[i]->name, name, len) == 0)
			return n->kids[i];
	return NULL;
}

/* the live cgroup at rel ("/a/b") in h; with nearest, its deepest live ancestor */
struct node *sim_node_at(struct hier *h, const char *rel, bool nearest)
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
		k = sim_kid(n, p, len);
		if (!k)
			return nearest ? n : NULL;
		n = k;
		p += len;
	}
	return n;
}

/* a mount dir or a cgroup path -> the cgroup path; *hp the mount's hierarchy or NULL */
const char *sim_to_rel(struct cgsim *sim, const char *path, struct hier **hp)
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

bool sim_subtree_has(const struct node *top, const struct node *n)
{
	for (; n; n = n->parent)
		if (n == top)
			return true;
	return false;
}


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
			t->dying_mem += (k->css & C_MEMORY) && !k->subsys_wait;
			t->dying_pids += (k->css & C_PIDS) && !k->subsys_wait;
		} else {
			t->live++;
			t->live_mem += !!(k->css & C_MEMORY);
			t->live_pids += !!(k->css & C_PIDS);
		}
		tot_add(k, t, true);
	}
}

struct tot sim_totals(const struct node *n)
{
	struct tot t = { 0 };

	tot_add(n, &t, true);
	return t;
}

uint64_t sim_current(const struct node *n)
{
	struct tot t = sim_totals(n);

	return t.file + t.anon;
}

/* ---- charges, rmdir, dying groups */

static bool pinned(const struct node *n)
{
	return (n->css & C_MEMORY) && (n->file + n->anon + n->wb > 0 || (n->dying && n->inodes));
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
void sim_reap(struct cgsim *sim, struct node *n, bool tick)
{
	for (size_t i = n->nkids; i-- > 0;) {
		struct node *k = n->kids[i];
		sim_reap(sim, k, tick);
		if (tick && k->dying && k->subsys_wait)
			k->subsys_wait--;
		if (!freeable(k))
			continue;
		if (tick && k->lag > 0)
			k->lag--;
		if (k->lag == 0) {
			detach(k);
			sim_node_free(sim, k);
		}
	}
}

void sim_reap_all(struct cgsim *sim)
{
	for (unsigned k = 0; k < sim->nh; k++)
		sim_reap(sim, sim->h[k].root, false);
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
		uint64_t cur = sim_current(n);
		if (cur > n->peak)
			n->peak = cur;
		for (size_t i = 0; i < sim->npfds; i++)
			if (sim->pfds[i].node == n && cur > sim->pfds[i].peak)
				sim->pfds[i].peak = cur;
	}
}

/* ---- processes and population */

struct proc *sim_proc_find(struct cgsim *sim, pid_t pid)
{
	for (size_t i = 0; i < sim->nprocs; i++)
		if (sim->procs[i].pid == pid)
			return &sim->procs[i];
	return NULL;
}

unsigned sim_local_procs(const struct cgsim *sim, const struct node *n)
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
/* Recounted only when a process moved, came or went since the last count
 * (a new cgroup starts at 0, which is right: nobody is in it yet). */
void sim_count_pop(struct cgsim *sim, struct hier *h)
{
	uint64_t sig = 0xcbf29ce484222325ULL ^ sim->nprocs;

	for (size_t i = 0; i < sim->nprocs; i++)
		sig = (sig ^ (uint64_t)sim->procs[i].pid ^ ((uint64_t)(uintptr_t)sim->procs[i].at[h - sim->h] << 16)) *
		      0x100000001b3ULL;
	if (h->pop_counted && sig == h->pop_sig)
		return;
	h->pop_sig = sig;
	h->pop_counted = true;
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
void sim_sync_events(struct cgsim *sim)
{
	int ev = sim_file_index("cgroup.events");

	for (unsigned k = 0; k < sim->nh; k++) {
		sim_count_pop(sim, &sim->h[k]);
		notify_tree(sim, sim->h[k].root, sim->h[k].v2 ? ev : -1);
	}
}

/* ---- memory.peak descriptors, kept current before and after every call */

/* the caller closed its descriptor (the number is gone or is another file) */
static bool pfd_closed(const struct pfd *f)
{
	struct stat st;

	return fstat(f->theirs, &st) < 0 || st.st_ino != f->ino;
}

void sim_pfd_refresh(struct cgsim *sim)
{
	for (size_t i = 0; i < sim->npfds; i++) {
		struct pfd *f = &sim->pfds[i];
		char buf[32], text[32];
		if (pfd_closed(f)) {
			close(f->fd);
			sim->pfds[i--] = sim->pfds[--sim->npfds];
			continue;
		}
		ssize_t n = pread(f->fd, buf, sizeof(buf) - 1, 0);
		bool reset;
		buf[n > 0 ? n : 0] = '\0';
		reset = strcmp(buf, f->last) != 0; /* someone wrote to it */
		if (reset && f->node && sim->o.peak_reset)
			f->peak = sim_current(f->node);
		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)f->peak);
		if (!reset && strcmp(text, f->last) == 0)
			continue;
		if (ftruncate(f->fd, 0) < 0 || pwrite(f->fd, text, strlen(text), 0) < 0)
			continue; /* tried again on the next call */
		lseek(f->fd, 0, SEEK_SET);
		memcpy(f->last, text, sizeof(f->last));
	}
}

/* clean file pages from n's subtree, dying groups too, pre-order */
uint64_t sim_reclaim(struct node *n, uint64_t want)
{
	uint64_t clean = n->file - n->dirty, got = clean < want ? clean : want;

	n->file -= got;
	n->reclaimed += got;
	for (size_t i = 0; i < n->nkids && got < want; i++)
		got += sim_reclaim(n->kids[i], want - got);
	return got;
}

static unsigned count_memcgs(const struct node *n)
{
	unsigned c = !!(n->css & C_MEMORY);

	for (size_t i = 0; i < n->nkids; i++)
		c += count_memcgs(n->kids[i]);
	return c;
}

int sim_mkdir_at(struct cgsim *sim, const char *path)
{
	struct hier *h;
	const char *rel = sim_to_rel(sim, path, &h), *slash = strrchr(rel, '/');
	char dir[PATH_MAX];
	struct node *p;

	if (!h)
		return -ENOENT;
	if (strcmp(rel, "/") == 0 || sim_node_at(h, rel, false))
		return -EEXIST;
	if ((size_t)(slash - rel) >= sizeof(dir) || strlen(slash + 1) > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(dir, rel, (size_t)(slash - rel));
	dir[slash - rel] = '\0';
	p = sim_node_at(h, dir, false);
	if (!p)
		return -ENOENT;
	if (sim_file_on(sim, p, slash + 1) >= 0)
		return -EEXIST;
	if ((h->ctrls & C_MEMORY) && (!h->v2 || (p->subtree & C_MEMORY)) &&
	    count_memcgs(h->root) >= sim->o.max_memcgs)
		return -ENOSPC;
	return sim_node_new(sim, h, p, slash + 1) ? 0 : -ENOMEM;
}

/* a memcg went offline: the clean inodes attached to dying groups move to
 * the root's writeback (cgsim.h) */
static void offline_cleanup(struct node *n)
{
	if (n->dying && n->inodes && !n->inodes_dirty)
		n->inodes = 0;
	for (size_t i = 0; i < n->nkids; i++)
		offline_cleanup(n->kids[i]);
}

static void inodes_clean(struct node *n)
{
	n->inodes_dirty = false;
	for (size_t i = 0; i < n->nkids; i++)
		inodes_clean(n->kids[i]);
}

/* the cgroup leaves the namespace and dies (cgsim.h) */
int sim_rmdir_node(struct cgsim *sim, struct node *n)
{
	struct node *p = n->parent;

	if (!p)
		return -EBUSY;
	for (size_t i = 0; i < n->nkids; i++)
		if (!n->kids[i]->dying)
			return -EBUSY;
	if (sim_local_procs(sim, n))
		return -EBUSY;
	n->dying = true;
	n->lag = sim->o.lag;
	n->subsys_wait = sim->o.subsys_lag;
	unshadow(n); /* watchers get IN_IGNORED */
	if ((n->css & C_MEMORY) && sim->o.kernel == CGSIM_REPARENT) {
		struct node *to = memcg_of(p);
		n->wb = n->dirty; /* the pages go; their writeback still points here */
		to->file += n->file;
		to->anon += n->anon;
		to->dirty += n->dirty;
		n->file = n->anon = n->dirty = 0;
	}
	if ((n->css & C_MEMORY) && n->h->v2)
		offline_cleanup(n->h->root);
	sim_reap(sim, p, false);
	return 0;
}

/* a memfd standing for an open memory.peak; pfd_refresh keeps its text */
int sim_peak_fd(struct cgsim *sim, struct node *n)
{
	struct pfd *v = realloc(sim->pfds, (sim->npfds + 1) * sizeof(*v));
	struct stat st;
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
	if (fstat(fd, &st) < 0) {
		close(fd);
		close(mine);
		return -errno;
	}
	v[sim->npfds++] = (struct pfd){ .fd = mine, .theirs = fd, .ino = st.st_ino, .node = n, .peak = n->peak,
					.last = "" };
	return fd;
}

/* ---- processes */

/* adopted processes leave once they are reaped */
void sim_sweep(struct cgsim *sim)
{
	bool gone = false;

	for (size_t i = sim->nprocs; i-- > 0;) {
		const struct proc *pr = &sim->procs[i];
		if (pr->child || pr->pid == getpid() || kill(pr->pid, 0) == 0 || errno != ESRCH)
			continue;
		sim->procs[i] = sim->procs[--sim->nprocs];
		gone = true;
	}
	if (gone)
		sim_sync_events(sim);
}

uint64_t sim_proc_exit(struct cgsim *sim, pid_t pid)
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
		sim_sync_events(sim);
		return 1;
	}
	return 0;
}

/* ---- the test's side */

int cgsim_mkdir(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	struct hier *h;
	const char *rel = sim_to_rel(sim, path, &h);
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
	sim_sync_events(sim);
	return made ? 0 : -EEXIST;
}

int cgsim_rmdir(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	struct hier *h;
	const char *rel = sim_to_rel(sim, path, &h);
	int first = 0, gone = 0;

	sim_pfd_refresh(sim);
	for (unsigned k = 0; k < sim->nh; k++) {
		struct node *n = sim_node_at(&sim->h[k], rel, false);
		int r = n ? sim_rmdir_node(sim, n) : -ENOENT;
		gone += r == -ENOENT;
		if (r < 0 && r != -ENOENT && !first)
			first = r;
	}
	sim_pfd_refresh(sim);
	return first ? first : gone == (int)sim->nh ? -ENOENT : 0;
}

static struct node *mem_node(struct cgsim *sim, const char *path)
{
	struct hier *h;
	const char *rel;

	if (!path)
		return sim->memh->root;
	rel = sim_to_rel(sim, path, &h);
	return sim_node_at(sim->memh, rel, false);
}

bool cgsim_exists(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	return mem_node(sim, path) != NULL;
}

pid_t cgsim_spawn(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	struct hier *h;
	const char *rel = sim_to_rel(sim, path, &h);
	struct proc pr = { 0 }, *v;
	bool exact = false;
	pid_t parent = getpid();

	for (unsigned k = 0; k < sim->nh; k++) {
		pr.at[k] = sim_node_at(&sim->h[k], rel, true);
		exact |= sim_node_at(&sim->h[k], rel, false) != NULL;
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
	sim_pfd_refresh(sim);
	sim_sync_events(sim);
	return pr.pid;
}

int cgsim_exit(struct cgsim *sim, pid_t pid)
{
	SIM_LOCKED(sim);
	const struct proc *pr = sim_proc_find(sim, pid);

	if (!pr || pid == getpid())
		return -ESRCH;
	sim_proc_exit(sim, pid);
	sim_pfd_refresh(sim);
	return 0;
}

int cgsim_move(struct cgsim *sim, pid_t pid, const char *path)
{
	SIM_LOCKED(sim);
	struct hier *h;
	const char *rel = sim_to_rel(sim, path, &h);
	struct proc *pr = sim_proc_find(sim, pid);

	if (!pr)
		return -ESRCH;
	for (unsigned k = 0; k < sim->nh; k++) {
		struct node *n = sim_node_at(&sim->h[k], rel, true);
		if (sim->h[k].v2 && n->parent && (n->subtree & C_DOMAIN))
			return -EBUSY;
	}
	for (unsigned k = 0; k < sim->nh; k++)
		pr->at[k] = sim_node_at(&sim->h[k], rel, true);
	sim_sync_events(sim);
	return 0;
}

int cgsim_adopt(struct cgsim *sim, pid_t pid, const char *path)
{
	SIM_LOCKED(sim);
	struct proc *v;
	int r;

	if (pid <= 0)
		return -EINVAL;
	if (sim_proc_find(sim, pid))
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
	SIM_LOCKED(sim);
	struct node *x = mem_node(sim, path);

	if (!x)
		return -ENOENT;
	*n = sim_local_procs(sim, x);
	return 0;
}

int cgsim_charge(struct cgsim *sim, const char *path, uint64_t file_bytes, uint64_t anon_bytes)
{
	SIM_LOCKED(sim);
	struct node *n = mem_node(sim, path);

	sim_pfd_refresh(sim); /* a reset written since the last call happened before this */
	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	n->file += file_bytes;
	n->anon += anon_bytes;
	update_peaks(sim, n);
	sim_pfd_refresh(sim);
	return 0;
}

int cgsim_charge_dirty(struct cgsim *sim, const char *path, uint64_t dirty_file_bytes)
{
	SIM_LOCKED(sim);
	struct node *n = mem_node(sim, path);
	int r = cgsim_charge(sim, path, dirty_file_bytes, 0);

	if (r == 0)
		memcg_of(n)->dirty += dirty_file_bytes;
	return r;
}

int cgsim_uncharge(struct cgsim *sim, const char *path, uint64_t file_bytes, uint64_t anon_bytes)
{
	SIM_LOCKED(sim);
	struct node *n = mem_node(sim, path);

	sim_pfd_refresh(sim);
	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	n->file -= file_bytes < n->file ? file_bytes : n->file;
	n->anon -= anon_bytes < n->anon ? anon_bytes : n->anon;
	if (n->dirty > n->file)
		n->dirty = n->file;
	sim_pfd_refresh(sim);
	return 0;
}

enum drop_kind { DROP_CLEAN, DROP_ANON, DROP_DIRTY };

static uint64_t drop(struct node *n, enum drop_kind what)
{
	uint64_t got = 0;

	switch (what) {
	case DROP_CLEAN: got = n->file - n->dirty; n->file = n->dirty; break;
	case DROP_ANON: got = n->anon; n->anon = 0; break;
	case DROP_DIRTY: got = n->dirty; n->dirty = 0; n->wb = 0; break;
	}
	for (size_t i = 0; i < n->nkids; i++)
		got += drop(n->kids[i], what);
	return got;
}

static uint64_t drop_at(struct cgsim *sim, const char *path, enum drop_kind what)
{
	struct node *n = mem_node(sim, path);
	uint64_t got;

	sim_pfd_refresh(sim);
	got = n ? drop(n, what) : 0;

	sim_reap_all(sim);
	sim_pfd_refresh(sim);
	return got;
}

uint64_t cgsim_drop_cache(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	return drop_at(sim, path, DROP_CLEAN);
}

uint64_t cgsim_drop_anon(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	return drop_at(sim, path, DROP_ANON);
}

uint64_t cgsim_writeback(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	return drop_at(sim, path, DROP_DIRTY);
}

int cgsim_attach_inode(struct cgsim *sim, const char *path, bool dirty)
{
	SIM_LOCKED(sim);
	struct node *n = mem_node(sim, path);

	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	n->inodes++;
	n->inodes_dirty = dirty;
	return 0;
}

unsigned cgsim_syncs(const struct cgsim *sim)
{
	return sim->syncs;
}

void sim_sync(struct cgsim *sim)
{
	for (unsigned k = 0; k < sim->nh; k++)
		inodes_clean(sim->h[k].root);
	sim->syncs++;
}

int cgsim_oom_kill(struct cgsim *sim, const char *path)
{
	SIM_LOCKED(sim);
	struct node *n = mem_node(sim, path);
	int ev = sim_file_index("memory.events");

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
	SIM_LOCKED(sim);
	struct node *n = mem_node(sim, path);
	struct tot t;

	if (!n)
		return -ENOENT;
	n = memcg_of(n);
	t = sim_totals(n);
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
	SIM_LOCKED(sim);
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
		n->kids[i]->subsys_wait = 0;
	}
}

void cgsim_settle(struct cgsim *sim)
{
	SIM_LOCKED(sim);
	for (unsigned k = 0; k < sim->nh; k++)
		settle(sim, sim->h[k].root);
	sim_reap_all(sim);
}
