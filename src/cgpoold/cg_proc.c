/* cg_proc.c - the processes of a slot: listing, signalling and killing them,
 * and the directory a supervised job is born in. */
#include "config.h"

#include "cg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the pids of cgroup.procs text; every line must be a positive number */
static int parse_pids(const char *text, pid_t **out, size_t *n)
{
	size_t cap = 0, count = 0;
	pid_t *pids = NULL;

	for (const char *p = text; *p;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p || v <= 0 || v > INT32_MAX || (*end != '\n' && *end != '\0')) {
			free(pids);
			return -EINVAL;
		}
		if (count == cap) {
			pid_t *np = realloc(pids, (cap = cap ? cap * 2 : 16) * sizeof(*np));
			if (!np) {
				free(pids);
				return -ENOMEM;
			}
			pids = np;
		}
		pids[count++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	*out = pids;
	*n = count;
	return 0;
}

int cg_slot_pids(struct cg *cg, const char *name, pid_t **out, size_t *n)
{
	char *text;
	int r = cg_read_procs(cg, name, &text);

	if (r < 0)
		return r;
	r = parse_pids(text, out, n);
	free(text);
	return r;
}

int cg_slot_signal(struct cg *cg, const char *name, int sig, unsigned *n)
{
	pid_t *pids;
	size_t count;
	unsigned sent = 0;
	int r = cg_slot_pids(cg, name, &pids, &count);

	if (r < 0)
		return r;
	for (size_t i = 0; i < count; i++)
		if (kill(pids[i], sig) == 0)
			sent++;
	free(pids);
	*n = sent;
	return 0;
}

int cg_slot_kill(struct cg *cg, const char *name, bool *atomic)
{
	char path[PATH_MAX];
	unsigned n;
	bool frozen;
	int r = cg_name_valid(name);

	if (r < 0)
		return r;
	if (cg->info.features.cgroup_kill && cg->track >= 0 &&
	    cg_spath(cg, cg->track, name, "cgroup.kill", path) == 0 && cg_write(cg, path, "1") == 0) {
		*atomic = true;
		return 0;
	}
	/* Without cgroup.kill (before 5.14, or no cgroup2 hierarchy): the slot
	 * frozen first where it can be (cgroup.freeze, 5.2+), so that what runs
	 * in it cannot fork between the read of cgroup.procs and the signals,
	 * then SIGKILL to each, then thawed (SIGKILL kills a frozen process on
	 * cgroup2, and the slot must not stay frozen). A child forked while the
	 * freeze took hold is not in the list: the callers kill in rounds until
	 * the slot is empty. */
	frozen = cg_slot_freeze(cg, name, true) == 0;
	r = cg_slot_signal(cg, name, SIGKILL, &n);
	if (frozen)
		cg_slot_freeze(cg, name, false);
	if (r == 0)
		*atomic = false;
	return r;
}

int cg_slot_freeze(struct cg *cg, const char *name, bool frozen)
{
	char path[PATH_MAX];
	int r = cg_name_valid(name);

	if (r < 0)
		return r;
	if (cg->track < 0)
		return -EOPNOTSUPP;
	r = cg_spath(cg, cg->track, name, "cgroup.freeze", path);
	if (r == 0)
		r = cg_write(cg, path, frozen ? "1" : "0");
	return r == -ENOENT ? -EOPNOTSUPP : r;
}

int cg_slot_dirfd(struct cg *cg, const char *name, int *fd, bool *everywhere)
{
	char path[PATH_MAX];
	int r = cg_name_valid(name), f;

	if (r < 0)
		return r;
	if (cg->track < 0 || !cg->info.features.clone_into_cgroup || !cg->ops->open)
		return -EOPNOTSUPP;
	r = cg_spath(cg, cg->track, name, NULL, path);
	if (r < 0)
		return r;
	f = cg->ops->open(cg->ctx, path, O_RDONLY | O_DIRECTORY);
	if (f < 0)
		return f;
	*fd = f;
	*everywhere = cg->nhier == 1;
	return 0;
}

int cg_pid_slot(struct cg *cg, pid_t pid, char *name, size_t len)
{
	const struct cg_hier *h = &cg->hier[cg->mem];
	const char *root = h->dir + strlen(h->mount), *rel;
	char path[64], text[4096], cgpath[PATH_MAX];
	size_t rl = strlen(root), n;
	ssize_t got;
	int r;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	got = cg->ops->read(cg->ctx, path, text, sizeof(text));
	if (got < 0)
		return (int)got == -ENOENT ? -ESRCH : (int)got;
	r = cg_proc_path(text, cg_hier_v1name(cg, (unsigned)cg->mem), cgpath, sizeof(cgpath));
	if (r < 0)
		return r;
	/* the pool root "" (the hierarchy's root) or "/a/b": the slot is the
	 * first component below it */
	if (strncmp(cgpath, root, rl) != 0 || cgpath[rl] != '/')
		return -ENOENT;
	rel = cgpath + rl + 1;
	n = strcspn(rel, "/");
	if (n == 0 || n >= len)
		return -ENOENT;
	memcpy(name, rel, n);
	name[n] = '\0';
	return 0;
}
