/* cg_res.c - resource settings, memory counters, reclaim and the feature probe.
 *
 * Settings use cgroup v2 file names and syntax. Where a controller lives on a
 * v1 hierarchy, a setting maps to its v1 file only when the meaning is the
 * same; otherwise it is not supported (-EOPNOTSUPP, a config error):
 *   memory.max      -> memory.limit_in_bytes ("max" -> -1)
 *   memory.high     -> none. memory.soft_limit_in_bytes only matters under
 *                      global pressure and never throttles: not the same.
 *   memory.low      -> none.
 *   memory.swap.max -> memory.memsw.limit_in_bytes = memory limit + swap,
 *                      kept by a later memory.max (v1_memory_max keeps the
 *                      difference); only with swap accounting.
 *   pids.max        -> pids.max
 *   cpu.max         -> cpu.cfs_quota_us / cpu.cfs_period_us
 *   cpu.weight      -> cpu.shares = weight * 1024 / 100, clamped to 2..262144
 *   io.weight       -> none. blkio.weight went with CFQ; BFQ's blkio.bfq.weight
 *                      applies only to devices using BFQ.
 * Memory counters on v1 come from the hierarchical total_cache/total_rss of
 * memory.stat, as v2's memory.stat is hierarchical (for a leaf slot the local
 * and total values are equal). */
#include "config.h"

#include "cg_internal.h"
#include "res.h"
#include "util.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPU_PERIOD_MIN 1000ULL      /* us, as the kernel enforces */
#define CPU_PERIOD_MAX 1000000ULL
#define CPU_SHARES_MIN 2ULL
#define CPU_SHARES_MAX 262144ULL

typedef int (*v1_setter)(struct cg *cg, int h, const char *name, const char *value);

static int slot_write(struct cg *cg, int h, const char *name, const char *file, const char *s)
{
	char path[PATH_MAX];
	int r = cg_spath(cg, h, name, file, path);

	/* an empty cpuset.cpus or cpuset.mems is the parent's; "" would be no write at all */
	return r < 0 ? r : cg_write(cg, path, *s ? s : "\n");
}

/* a v1 byte count at or above this is no limit (the kernel shows "no
 * limit" as 9223372036854771712) */
#define V1_NO_LIMIT (1ULL << 62)

/* a number (or "max") in a cgroup file */
static int read_u64(struct cg *cg, const char *path, uint64_t *out)
{
	char buf[64];
	int r = cg_read(cg, path, buf, sizeof(buf));

	if (r < 0)
		return r;
	buf[strcspn(buf, "\n")] = '\0';
	if (strcmp(buf, "max") == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	return parse_uint(buf, 0, UINT64_MAX, out);
}

/* a number in a slot's file */
static int slot_read_bytes(struct cg *cg, int h, const char *name, const char *file, uint64_t *out)
{
	char path[PATH_MAX];
	int r = cg_spath(cg, h, name, file, path);

	return r < 0 ? r : read_u64(cg, path, out);
}

static int slot_write_bytes(struct cg *cg, int h, const char *name, const char *file, uint64_t v)
{
	char num[32];

	if (v >= V1_NO_LIMIT)
		snprintf(num, sizeof(num), "-1");
	else
		snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	return slot_write(cg, h, name, file, num);
}

/* v1's memory+swap limit is never below the memory limit, and the swap a
 * slot may use is their difference: a new memory limit keeps that
 * difference (raising: memory+swap first; lowering: memory first). Without
 * swap accounting (no memory.memsw.limit_in_bytes) only the memory limit. */
static int v1_memory_max(struct cg *cg, int h, const char *name, const char *value)
{
	uint64_t v, old, memsw, next;
	int r;

	if (parse_size(value, &v) < 0)
		return -EINVAL;
	v = v == SIZE_MAX_VALUE ? V1_NO_LIMIT : v;
	if (slot_read_bytes(cg, h, name, "memory.memsw.limit_in_bytes", &memsw) < 0 || memsw >= V1_NO_LIMIT ||
	    slot_read_bytes(cg, h, name, "memory.limit_in_bytes", &old) < 0 || old > memsw)
		return slot_write_bytes(cg, h, name, "memory.limit_in_bytes", v);
	next = v >= V1_NO_LIMIT || memsw - old >= V1_NO_LIMIT - v ? V1_NO_LIMIT : v + (memsw - old);
	if (v <= old) {
		r = slot_write_bytes(cg, h, name, "memory.limit_in_bytes", v);
		return r < 0 ? r : slot_write_bytes(cg, h, name, "memory.memsw.limit_in_bytes", next);
	}
	r = slot_write_bytes(cg, h, name, "memory.memsw.limit_in_bytes", next);
	if (r < 0)
		return r;
	r = slot_write_bytes(cg, h, name, "memory.limit_in_bytes", v);
	if (r < 0)
		slot_write_bytes(cg, h, name, "memory.memsw.limit_in_bytes", memsw);
	return r;
}

/* v1 swap: memory+swap = the memory limit + value (no limit when either
 * has none); -EOPNOTSUPP without swap accounting */
static int v1_memory_swap_max(struct cg *cg, int h, const char *name, const char *value)
{
	uint64_t v, mem, memsw;
	int r;

	if (parse_size(value, &v) < 0)
		return -EINVAL;
	v = v == SIZE_MAX_VALUE ? V1_NO_LIMIT : v;
	r = slot_read_bytes(cg, h, name, "memory.memsw.limit_in_bytes", &memsw);
	if (r == -ENOENT)
		return -EOPNOTSUPP;
	if (r == 0)
		r = slot_read_bytes(cg, h, name, "memory.limit_in_bytes", &mem);
	if (r < 0)
		return r;
	memsw = mem >= V1_NO_LIMIT || v >= V1_NO_LIMIT - mem ? V1_NO_LIMIT : mem + v;
	return slot_write_bytes(cg, h, name, "memory.memsw.limit_in_bytes", memsw);
}

static int v1_pids_max(struct cg *cg, int h, const char *name, const char *value)
{
	uint64_t v;

	if (strcmp(value, "max") != 0 && parse_uint(value, 0, INT32_MAX, &v) < 0)
		return -EINVAL;
	return slot_write(cg, h, name, "pids.max", value);
}

/* "QUOTA [PERIOD]", QUOTA "max" or microseconds; without PERIOD the period
 * stays. Quota is lifted first so that no intermediate pair is refused. */
static int v1_cpu_max(struct cg *cg, int h, const char *name, const char *value)
{
	char quota[32], period[32], extra[2], num[32];
	uint64_t q = 0, p = 0;
	int n = sscanf(value, "%31s %31s %1s", quota, period, extra), r;

	if (n < 1 || n > 2)
		return -EINVAL;
	if (strcmp(quota, "max") != 0 && parse_uint(quota, CPU_PERIOD_MIN, INT64_MAX / 1000, &q) < 0)
		return -EINVAL;
	if (n == 2 && parse_uint(period, CPU_PERIOD_MIN, CPU_PERIOD_MAX, &p) < 0)
		return -EINVAL;
	r = slot_write(cg, h, name, "cpu.cfs_quota_us", "-1");
	if (r == 0 && n == 2) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)p);
		r = slot_write(cg, h, name, "cpu.cfs_period_us", num);
	}
	if (r == 0 && q) {
		snprintf(num, sizeof(num), "%llu", (unsigned long long)q);
		r = slot_write(cg, h, name, "cpu.cfs_quota_us", num);
	}
	return r;
}

static int v1_cpu_weight(struct cg *cg, int h, const char *name, const char *value)
{
	char num[32];
	uint64_t w, shares;

	if (parse_uint(value, 1, 10000, &w) < 0)
		return -EINVAL;
	shares = w * 1024 / 100;
	shares = shares < CPU_SHARES_MIN ? CPU_SHARES_MIN : shares > CPU_SHARES_MAX ? CPU_SHARES_MAX : shares;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)shares);
	return slot_write(cg, h, name, "cpu.shares", num);
}

/* what the cgroup layer adds to a resource key (res.h): its v1 equivalent */
static const struct res_desc {
	enum res_id id;
	v1_setter v1set; /* NULL: no v1 equivalent (see the top of the file) */
} resources[RES_NKEYS] = {
	[RES_MEMORY_MAX] = { RES_MEMORY_MAX, v1_memory_max },
	[RES_MEMORY_HIGH] = { RES_MEMORY_HIGH, NULL },
	[RES_MEMORY_LOW] = { RES_MEMORY_LOW, NULL },
	[RES_MEMORY_SWAP_MAX] = { RES_MEMORY_SWAP_MAX, v1_memory_swap_max },
	[RES_PIDS_MAX] = { RES_PIDS_MAX, v1_pids_max },
	[RES_CPU_MAX] = { RES_CPU_MAX, v1_cpu_max },
	[RES_CPU_WEIGHT] = { RES_CPU_WEIGHT, v1_cpu_weight },
	[RES_IO_WEIGHT] = { RES_IO_WEIGHT, NULL },
	[RES_CPUSET_CPUS] = { RES_CPUSET_CPUS, NULL },
	[RES_CPUSET_MEMS] = { RES_CPUSET_MEMS, NULL },
	[RES_DEVICES_DENY] = { RES_DEVICES_DENY, NULL }, /* no controller: a filter program (cg_bpf.c) */
};

/* does the v1 memory hierarchy account swap (memory.memsw.* at the pool root)? */
static bool v1_swap_accounted(const struct cg *cg, int h)
{
	char path[PATH_MAX], buf[64];

	return cg_hpath(cg, h, NULL, "memory.memsw.limit_in_bytes", path) == 0 && cg_read(cg, path, buf, sizeof(buf)) >= 0;
}

/* the resource's descriptor when the pool can set it, with its hierarchy */
static const struct res_desc *res_usable(const struct cg *cg, const char *resource, int *h)
{
	int id = resource ? res_find(resource) : -1, ctrl, k;
	const struct res_desc *d;

	if (id < 0)
		return NULL;
	d = &resources[id]; /* in the order of res.h's ids */
	ctrl = res_key(d->id)->ctrl;
	if (ctrl < 0) {
		/* the filter goes on the slot's cgroup2 directory, on v2
		 * and hybrid alike */
		if (cg->track < 0 || !cg->ops->devices)
			return NULL;
		*h = cg->track;
		return d;
	}
	k = cg->ctrl_hier[ctrl];
	if (k < 0 || (!cg->hier[k].v2 && !d->v1set))
		return NULL;
	if (!cg->hier[k].v2 && d->v1set == v1_memory_swap_max && !v1_swap_accounted(cg, k))
		return NULL;
	*h = k;
	return d;
}

bool cg_resource_supported(const struct cg *cg, const char *name)
{
	int h;

	return res_usable(cg, name, &h) != NULL;
}

/* v2 values go to the kernel as they are; it parses them. Bound the bytes. */
static bool value_sane(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > 256)
		return false;
	for (size_t i = 0; i < n; i++)
		if (v[i] < 0x20 || v[i] == 0x7f)
			return false;
	return true;
}

int cg_slot_set(struct cg *cg, const char *name, const char *resource, const char *value)
{
	const struct res_desc *d;
	const struct res_key *key;
	int h, r = cg_name_valid(name);

	if (r < 0)
		return r;
	d = res_usable(cg, resource, &h);
	if (!d)
		return -EOPNOTSUPP;
	key = res_key(d->id);
	/* "" only to give a cpuset the parent's CPUs or memory nodes again,
	 * or to take a device filter away */
	if (!value || (*value ? !value_sane(value) : key->ctrl >= 0 && cg_ctrls[key->ctrl].bit != CG_CTRL_CPUSET))
		return -EINVAL;
	if (key->ctrl < 0) {
		char dir[PATH_MAX];
		r = cg_spath(cg, h, name, NULL, dir);
		return r < 0 ? r : cg->ops->devices(cg->ctx, dir, strcmp(value, "none") == 0 ? "" : value);
	}
	if (!cg->hier[h].v2)
		return d->v1set(cg, h, name, value);
	return slot_write(cg, h, name, key->name, value);
}

/* the files a resource's value lives in on hierarchy h, in the order they
 * are written back */
static size_t res_files(const struct cg *cg, int h, const struct res_desc *d, const char *files[2])
{
	const struct res_key *key = res_key(d->id);

	if (key->ctrl < 0)
		return 0; /* a filter is not read back: see pool_attach.c */
	if (cg->hier[h].v2) {
		files[0] = key->name;
		return 1;
	}
	if (d->v1set == v1_memory_max) {
		files[0] = "memory.limit_in_bytes";
		files[1] = "memory.memsw.limit_in_bytes";
		return 2;
	} else if (d->v1set == v1_memory_swap_max)
		files[0] = "memory.memsw.limit_in_bytes";
	else if (d->v1set == v1_pids_max)
		files[0] = "pids.max";
	else if (d->v1set == v1_cpu_weight)
		files[0] = "cpu.shares";
	else if (d->v1set == v1_cpu_max) {
		files[0] = "cpu.cfs_period_us";
		files[1] = "cpu.cfs_quota_us";
		return 2;
	} else
		return 0;
	return 1;
}

int cg_slot_res_save(struct cg *cg, const char *name, const char *resource, struct cg_res_saved *out)
{
	const struct res_desc *d = res_usable(cg, resource, &out->h);
	char path[PATH_MAX];
	int r = cg_name_valid(name);

	if (r < 0)
		return r;
	if (!d)
		return -EOPNOTSUPP;
	out->n = res_files(cg, out->h, d, out->file);
	for (size_t i = 0; i < out->n; i++) {
		r = cg_spath(cg, out->h, name, out->file[i], path);
		if (r == 0)
			r = cg_read(cg, path, out->value[i], sizeof(out->value[i]));
		if (r == -ENOENT && i > 0 && strcmp(out->file[i], "memory.memsw.limit_in_bytes") == 0) {
			out->n = i; /* no swap accounting */
			break;
		}
		if (r < 0)
			return r;
		out->value[i][strcspn(out->value[i], "\n")] = '\0';
	}
	return 0;
}

int cg_slot_res_restore(struct cg *cg, const char *name, const struct cg_res_saved *saved)
{
	bool failed[2] = { false, false };
	int ret = 0;

	/* two files bound each other (v1 memory and memory+swap, cpu period and
	 * quota): one written before the other may be refused, so a second
	 * pass writes what the first could not */
	for (int pass = 0; pass < 2; pass++) {
		ret = 0;
		for (size_t i = 0; i < saved->n; i++) {
			if (pass == 1 && !failed[i])
				continue;
			int r = slot_write(cg, saved->h, name, saved->file[i], saved->value[i]);
			failed[i] = r < 0;
			if (r < 0 && ret == 0)
				ret = r;
		}
		if (ret == 0)
			break;
	}
	return ret;
}

/* ---- memory counters */

/* key from a flat-keyed file; a missing file or key reads as 0 when optional */
static int read_key(struct cg *cg, const char *path, const char *key, bool optional, uint64_t *out)
{
	char buf[16384];
	int r = cg_read(cg, path, buf, sizeof(buf));

	if (r >= 0)
		r = cg_keyed_u64(buf, key, out);
	if (r == -ENOENT && optional) {
		*out = 0;
		r = 0;
	}
	return r;
}

/* memory.peak through the slot's own fd after a reset, else the file */
static int read_peak_v2(struct cg *cg, const char *name, const char *path, uint64_t *out)
{
	struct cg_slotent *e = cg_ent_find(cg, name);
	char buf[64];
	ssize_t n;
	int r;

	if (!e || e->peak_fd < 0) {
		r = read_u64(cg, path, out);
		if (r == -ENOENT) { /* before 5.19 */
			*out = 0;
			r = 0;
		}
		return r;
	}
	n = pread(e->peak_fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return parse_uint(buf, 0, UINT64_MAX, out);
}

/* where each counter comes from: file, key in it (NULL: a single value) */
struct mem_field {
	const char *file;
	const char *key;
	bool optional; /* absent reads as 0 (older kernels) */
	size_t off;
};

#define MF(file, key, opt, field) { file, key, opt, offsetof(struct cg_memory, field) }
static const struct mem_field mem_v2[] = {
	MF("memory.current", NULL, false, current),
	MF("memory.peak", NULL, true, peak), /* 5.19+; see read_peak_v2 */
	MF("memory.events", "oom_kill", true, oom_kill),
	MF("memory.stat", "file", false, file),
	MF("memory.stat", "anon", false, anon),
	MF("memory.stat", "file_dirty", true, dirty),
	MF("memory.stat", "file_writeback", true, writeback),
};
static const struct mem_field mem_v1[] = {
	MF("memory.usage_in_bytes", NULL, false, current),
	MF("memory.max_usage_in_bytes", NULL, false, peak),
	MF("memory.oom_control", "oom_kill", true, oom_kill), /* 4.13+ */
	MF("memory.stat", "total_cache", false, file),
	MF("memory.stat", "total_rss", false, anon),
	MF("memory.stat", "total_dirty", true, dirty),
	MF("memory.stat", "total_writeback", true, writeback),
};
#undef MF
_Static_assert(ARRAY_SIZE(mem_v1) == ARRAY_SIZE(mem_v2), "same counters on v1 and v2");

static int read_field(struct cg *cg, const char *name, const struct mem_field *f, uint64_t *out)
{
	char path[PATH_MAX];
	int r = cg_spath(cg, cg->mem, name, f->file, path);

	if (r < 0)
		return r;
	if (cg->info.memory_v2 && f->off == offsetof(struct cg_memory, peak))
		return read_peak_v2(cg, name, path, out);
	if (f->key)
		return read_key(cg, path, f->key, f->optional, out);
	r = read_u64(cg, path, out);
	if (r == -ENOENT && f->optional) {
		*out = 0;
		r = 0;
	}
	return r;
}

/* the LRU counters (f[0], f[1]) and/or the dirty ones (f[2], f[3]) from
 * one read of memory.stat */
static int read_stat(struct cg *cg, const char *name, const struct mem_field *f, unsigned what,
		     struct cg_memory *m)
{
	char path[PATH_MAX], buf[16384];
	int r = cg_spath(cg, cg->mem, name, f[0].file, path);

	if (r == 0)
		r = cg_read(cg, path, buf, sizeof(buf));
	for (int i = 0; r >= 0 && i < 4; i++) {
		if (!(what & (i < 2 ? CG_MEM_LRU : CG_MEM_DIRTY)))
			continue;
		r = cg_keyed_u64(buf, f[i].key, (uint64_t *)((char *)m + f[i].off));
		if (r == -ENOENT && f[i].optional)
			r = 0;
	}
	return r < 0 ? r : 0;
}

/* swap: its own file on v2; on v1 memory+swap less memory (m->current is
 * read first); absent (no swap accounting) reads as 0 */
static int read_swap(struct cg *cg, const char *name, struct cg_memory *m)
{
	const struct mem_field v2 = { "memory.swap.current", NULL, true, offsetof(struct cg_memory, swap) };
	const struct mem_field v1 = { "memory.memsw.usage_in_bytes", NULL, true, offsetof(struct cg_memory, swap) };
	uint64_t both;
	int r;

	if (cg->info.memory_v2)
		return read_field(cg, name, &v2, &m->swap);
	r = read_field(cg, name, &mem_v1[0], &m->current);
	if (r == 0)
		r = read_field(cg, name, &v1, &both);
	if (r == 0)
		m->swap = both > m->current ? both - m->current : 0;
	return r;
}

int cg_slot_memory_some(struct cg *cg, const char *name, unsigned what, struct cg_memory *out)
{
	const struct mem_field *fields = cg->info.memory_v2 ? mem_v2 : mem_v1;
	struct cg_memory m = { 0 };
	int r = cg_name_valid(name);

	for (size_t i = 0; r == 0 && i < 3; i++)
		if (what & (1u << i))
			r = read_field(cg, name, &fields[i], (uint64_t *)((char *)&m + fields[i].off));
	if (r == 0 && (what & (CG_MEM_LRU | CG_MEM_DIRTY)))
		r = read_stat(cg, name, &fields[3], what, &m);
	if (r == 0 && (what & CG_MEM_SWAP))
		r = read_swap(cg, name, &m);
	if (r < 0)
		return r;
	*out = m;
	return 0;
}

int cg_slot_memory(struct cg *cg, const char *name, struct cg_memory *out)
{
	return cg_slot_memory_some(cg, name, CG_MEM_ALL, out);
}

/* v2: write to an fd of memory.peak kept open for the slot; later reads
 * through it see the peak since this reset (6.12+). */
static int reset_peak_v2(struct cg *cg, const char *name)
{
	char path[PATH_MAX];
	struct cg_slotent *e;
	int r;

	if (!cg->info.features.memory_peak_reset || !cg->ops->open)
		return -EOPNOTSUPP;
	r = cg_spath(cg, cg->mem, name, "memory.peak", path);
	if (r < 0)
		return r;
	e = cg_ent_get(cg, name);
	if (!e)
		return -ENOMEM;
	if (e->peak_fd < 0) {
		r = cg->ops->open(cg->ctx, path, O_RDWR);
		if (r < 0) {
			cg_ent_put(cg, e);
			return r;
		}
		e->peak_fd = r;
	}
	if (write(e->peak_fd, "reset", 5) == 5)
		return 0;
	r = -errno;
	cg_res_forget(cg, name);
	return r;
}

int cg_slot_reset_peak(struct cg *cg, const char *name)
{
	int r = cg_name_valid(name);

	if (r < 0)
		return r;
	if (cg->info.memory_v2)
		return reset_peak_v2(cg, name);
	/* v1: any write resets the watermark, for every reader */
	return slot_write(cg, cg->mem, name, "memory.max_usage_in_bytes", "0");
}

void cg_slot_peak_close(struct cg *cg, const char *name)
{
	cg_res_forget(cg, name);
}

void cg_res_forget(struct cg *cg, const char *name)
{
	struct cg_slotent *e = cg_ent_find(cg, name);

	if (!e || e->peak_fd < 0)
		return;
	close(e->peak_fd);
	e->peak_fd = -1;
	cg_ent_put(cg, e);
}

/* v2 before 5.19, no memory.reclaim: the write of a memory.high below the
 * usage reclaims down to it before it returns (the kernel does that since
 * 4.x). It is lowered by bytes and then put back to what it was. A slot is
 * only reclaimed while it runs nothing (scrub, drain), so no process is
 * throttled meanwhile. -EAGAIN when less than bytes went, as memory.reclaim. */
static int reclaim_by_high(struct cg *cg, const char *name, uint64_t bytes)
{
	char path[PATH_MAX], old[64], num[32];
	struct cg_memory before, after;
	uint64_t want, got;
	int r = cg_slot_memory_some(cg, name, CG_MEM_CURRENT, &before), w;

	if (r == 0)
		r = cg_spath(cg, cg->mem, name, "memory.high", path);
	if (r == 0 && (r = cg_read(cg, path, old, sizeof(old))) > 0)
		r = 0;
	if (r < 0)
		return r;
	old[strcspn(old, "\n")] = '\0';
	want = bytes < before.current ? bytes : before.current;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)(before.current - want));
	w = cg_write(cg, path, num);
	r = cg_write(cg, path, old[0] ? old : "max");
	if (w < 0)
		return w;
	if (r < 0 || cg_slot_memory_some(cg, name, CG_MEM_CURRENT, &after) < 0)
		return r;
	got = after.current < before.current ? before.current - after.current : 0;
	return got < want ? -EAGAIN : 0;
}

int cg_slot_reclaim(struct cg *cg, const char *name, uint64_t bytes)
{
	char num[32];
	int r = cg_name_valid(name);

	if (r < 0)
		return r;
	if (!cg->info.memory_v2)
		return slot_write(cg, cg->mem, name, "memory.force_empty", "0");
	if (!cg->info.features.memory_reclaim)
		return reclaim_by_high(cg, name, bytes);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)bytes);
	return slot_write(cg, cg->mem, name, "memory.reclaim", num);
}

/* ---- features, by experiment on a short-lived child of the pool root */

static bool kernel_at_least(const char *release, unsigned major, unsigned minor)
{
	unsigned a = 0, b = 0;

	if (sscanf(release, "%u.%u", &a, &b) != 2)
		return false;
	return a > major || (a == major && b >= minor);
}

static bool probe_peak_reset(struct cg *cg, const char *path)
{
	int fd;
	bool ok;

	if (!cg->info.memory_v2) /* v1: memory.max_usage_in_bytes takes any write */
		return cg_write(cg, path, "0") == 0;
	if (!cg->ops->open || (fd = cg->ops->open(cg->ctx, path, O_RDWR)) < 0)
		return false;
	ok = write(fd, "reset", 5) == 5;
	close(fd);
	return ok;
}

static void probe_features(struct cg *cg)
{
	struct cg_features *f = &cg->info.features;
	const char *peak = cg->info.memory_v2 ? "memory.peak" : "memory.max_usage_in_bytes";
	char path[PATH_MAX], buf[4096];
	uint64_t v;

	memset(f, 0, sizeof(*f));
	if (cg_hpath(cg, cg->mem, CG_PROBE_NAME, peak, path) == 0) {
		f->memory_peak_reset = probe_peak_reset(cg, path);
		f->memory_peak = f->memory_peak_reset || cg_exists(cg, path);
	}
	if (cg->track >= 0 && cg_hpath(cg, cg->track, CG_PROBE_NAME, "cgroup.kill", path) == 0)
		f->cgroup_kill = cg_exists(cg, path);
	if (!cg->info.memory_v2)
		return;
	if (cg_hpath(cg, cg->mem, CG_PROBE_NAME, "memory.reclaim", path) == 0)
		f->memory_reclaim = cg_exists(cg, path);
	f->clone_into_cgroup = kernel_at_least(cg->info.kernel, 5, 7);
	if (cg_hpath(cg, cg->mem, NULL, "cgroup.stat", path) == 0 && cg_read(cg, path, buf, sizeof(buf)) >= 0)
		f->dying_subsys_stat = cg_keyed_u64(buf, "nr_dying_subsys_memory", &v) == 0;
}

/* the probe cgroup, one level, in every hierarchy (rmdir: memory last) */
static int probe_dirs(struct cg *cg, bool make)
{
	char path[PATH_MAX];
	int r = 0, first = 0;

	for (unsigned i = 0; i < cg->nhier; i++) {
		int k = make ? (int)i : (int)(cg->nhier - 1 - i);
		r = cg_hpath(cg, k, CG_PROBE_NAME, NULL, path);
		if (r == 0)
			r = make ? cg->ops->mkdir(cg->ctx, path) : cg->ops->rmdir(cg->ctx, path);
		if (r == -EEXIST && make) /* left over by a crash, reused */
			r = 0;
		if (r == -ENOENT && !make)
			r = 0;
		if (r < 0 && make)
			return r;
		if (r < 0 && first == 0)
			first = r;
	}
	return first;
}

int cg_res_probe(struct cg *cg, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int r = probe_dirs(cg, true);

	cg_hpath(cg, cg->mem, CG_PROBE_NAME, NULL, path);
	if (r < 0) {
		probe_dirs(cg, false);
		cg_errf(err, errlen, "create probe cgroup %s: %s", path, strerror(-r));
		return r;
	}
	probe_features(cg);
	r = probe_dirs(cg, false);
	if (r < 0)
		cg_errf(err, errlen, "remove probe cgroup %s: %s", path, strerror(-r));
	return r;
}
