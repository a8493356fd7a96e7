/* cgsim_files.c - the simulated cgroupfs's interface files: what reading
 * one shows, what writing one does (with the kernel's validation), and the
 * /proc files cg reads. */
#include "config.h"

#include "cgsim_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* v2 names, in the kernel's order */
static const struct {
	unsigned bit;
	const char *name;
} ctrl_names[] = {
	{ C_CPUSET, "cpuset" }, { C_CPU, "cpu" }, { C_IO, "io" }, { C_MEMORY, "memory" },
	{ C_HUGETLB, "hugetlb" }, { C_PIDS, "pids" }, { C_RDMA, "rdma" }, { C_MISC, "misc" },
};

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

static uint64_t val_u64(const struct node *n, int idx, uint64_t def);

/* ---- reading */

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
	sim_count_pop(sim, n->h);
	sb_printf(b, "populated %d\nfrozen 0\n", n->npop > 0);
	return 0;
}

static int gen_stat(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	struct tot t = sim_totals(n);
	bool mem = n->css & C_MEMORY, pids = n->css & C_PIDS;

	sb_printf(b, "nr_descendants %u\n", t.live);
	if (sim->o.dying_subsys_stat)
		sb_printf(b, "nr_subsys_memory %u\nnr_subsys_pids %u\n", t.live_mem + mem, t.live_pids + pids);
	sb_printf(b, "nr_dying_descendants %u\n", t.dying);
	if (sim->o.dying_subsys_stat)
		sb_printf(b, "nr_dying_subsys_memory %u\nnr_dying_subsys_pids %u\n", t.dying_mem, t.dying_pids);
	if (consume)
		sim_reap(sim, n, true);
	return 0;
}

static int gen_current(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	sb_printf(b, "%llu\n", (unsigned long long)sim_current(n));
	return 0;
}

static int gen_peak(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	sb_printf(b, "%llu\n", (unsigned long long)n->peak);
	return 0;
}

static int gen_mem_events(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	struct tot t = sim_totals(n);

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
	struct tot t = sim_totals(n);
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
	struct tot t = sim_totals(n);
	unsigned long long f = n->file, a = n->anon, d = n->dirty, tf = t.file, ta = t.anon, td = t.dirty;
	uint64_t lim = UINT64_MAX;

	for (const struct node *p = n; p; p = p->parent) {
		uint64_t v = val_u64(p, sim_file_index("memory.limit_in_bytes"), V1_UNLIMITED);
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
	sb_printf(b, "oom_kill_disable 0\nunder_oom 0\noom_kill %llu\n", (unsigned long long)sim_totals(n).oom);
	return 0;
}

static int gen_pids_current(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	sim_count_pop(sim, n->h);
	sb_printf(b, "%u\n", n->npop);
	return 0;
}

static int gen_fixed(struct cgsim *sim, struct node *n, struct sb *b, bool consume)
{
	return 0; /* the text is the table's default */
}

/* ---- writing */

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

/* memory.high below the usage: the write reclaims down to it, as the kernel's does */
static int wr_mem_high(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	int r = wr_mem_v2(sim, n, idx, s);
	uint64_t high, cur = sim_current(n);
	char v[VAL_MAX];

	trim(s, v, sizeof(v));
	if (r < 0 || strcmp(v, "max") == 0 || memparse(v, &high) < 0 || high >= cur)
		return r;
	n->reclaim_calls++;
	sim_reclaim(n, cur - high);
	sim_reap_all(sim);
	return 0;
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
	pr = sim_proc_find(sim, pid ? pid : getpid());
	if (!pr && pid && sim->o.adopt_real && kill(pid, 0) == 0 && cgsim_adopt(sim, pid, "/") == 0)
		pr = sim_proc_find(sim, pid);
	if (!pr)
		return -ESRCH;
	if (n->h->v2 && n->parent && (n->subtree & C_DOMAIN))
		return -EBUSY; /* no internal processes */
	pr->at[n->h - sim->h] = n;
	sim_sync_events(sim);
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
	if ((on & C_DOMAIN & ~n->subtree) && n->parent && sim_local_procs(sim, n))
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

static int wr_kill(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	pid_t v;

	if (parse_pid(s, &v) < 0 || v != 1)
		return -ERANGE;
	for (size_t i = sim->nprocs; i-- > 0;)
		if (sim->procs[i].child && sim_subtree_has(n, sim->procs[i].at[n->h - sim->h]))
			sim_proc_exit(sim, sim->procs[i].pid);
	return 0;
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
	got = sim_reclaim(n, want);
	sim_reap_all(sim);
	return got < want ? -EAGAIN : 0; /* what it got stays reclaimed */
}

static int wr_force_empty(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	if (!n->parent)
		return -EINVAL;
	n->reclaim_calls++;
	sim_reclaim(n, UINT64_MAX);
	sim_reap_all(sim);
	return 0;
}

static int wr_reset_peak(struct cgsim *sim, struct node *n, int idx, const char *s)
{
	n->peak = sim_current(n); /* v1: for every reader */
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
	FKILL = 1 << 6, FRECLAIM = 1 << 7, FPEAK = 1 << 8,
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
	{ "memory.peak", FV2 | FNOROOT | FRW | FPEAK, C_MEMORY, NULL, gen_peak, wr_peak_v2 },
	{ "memory.min", FV2 | FNOROOT | FRW, C_MEMORY, "0", NULL, wr_mem_v2 },
	{ "memory.low", FV2 | FNOROOT | FRW, C_MEMORY, "0", NULL, wr_mem_v2 },
	{ "memory.high", FV2 | FNOROOT | FRW, C_MEMORY, "max", NULL, wr_mem_high },
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
	/* empty: the parent's (the sim checks no list) */
	{ "cpuset.cpus", FV2 | FNOROOT | FRW, C_CPUSET, "", NULL, wr_store },
	{ "cpuset.mems", FV2 | FNOROOT | FRW, C_CPUSET, "", NULL, wr_store },
	/* the device filter cg_fs_ops devices gives the directory, as its rules */
	{ "cgsim.devices", FV2 | FNOROOT | FRW, 0, "", NULL, wr_store },
};

_Static_assert(N_ELEMS(files) <= NFILES, "NFILES too small");

int sim_file_index(const char *name)
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
int sim_file_on(const struct cgsim *sim, const struct node *n, const char *name)
{
	for (size_t i = 0; i < N_ELEMS(files); i++) {
		const struct sim_file *f = &files[i];
		if (strcmp(f->name, name) != 0 || !(f->flags & (n->h->v2 ? FV2 : FV1)))
			continue;
		if ((f->flags & FNOROOT && !n->parent) || (f->flags & FONLYROOT && n->parent))
			continue;
		if ((f->ctrl && !(n->css & f->ctrl)) || (f->flags & FKILL && !sim->o.cgroup_kill) ||
		    (f->flags & FRECLAIM && !sim->o.memory_reclaim) || (f->flags & FPEAK && !sim->o.memory_peak))
			continue;
		return (int)i;
	}
	return -ENOENT;
}

/* path -> live node, and the file index (-1: the directory itself) */
int sim_resolve(struct cgsim *sim, const char *path, struct node **np, int *fp)
{
	struct hier *h;
	const char *rel = sim_to_rel(sim, path, &h);
	const char *slash;
	char dir[PATH_MAX];
	struct node *n;
	int f;

	if (!h)
		return -ENOENT;
	n = sim_node_at(h, rel, false);
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
	n = sim_node_at(h, dir, false);
	if (!n)
		return -ENOENT;
	f = sim_file_on(sim, n, slash + 1);
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

/* ---- /proc, and reading any file */

void sim_proc_cgroup_text(struct cgsim *sim, const struct proc *pr, struct sb *b)
{
	char rel[PATH_MAX];

	for (unsigned k = sim->nh; k-- > 0;)
		sb_printf(b, "%d:%s:%s\n", sim->h[k].id, sim->h[k].cgname, sim_rel_path(pr->at[k], rel));
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
		sim_reap(sim, sim->h[k].root, true);
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
	pr = sim_proc_find(sim, (pid_t)pid);
	if (!pr || strcmp(rest, "/cgroup") != 0)
		return -ENOENT;
	sim_proc_cgroup_text(sim, pr, b);
	return 0;
}

ssize_t sim_do_read(struct cgsim *sim, const char *path, char *buf, size_t len, bool consume)
{
	struct sb b = { 0 };
	struct node *n;
	int f, r;
	size_t c;

	if (len == 0)
		return -EINVAL;
	r = sim_resolve(sim, path, &n, &f);
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

int sim_file_write(struct cgsim *sim, struct node *n, int f, const char *s)
{
	return files[f].flags & FW ? files[f].wr(sim, n, f, s) : -EACCES;
}

const char *sim_file_name(int f)
{
	return files[f].name;
}
