/* cg_watch.c - the population watch: inotify on each slot's cgroup.events
 * (the tracking hierarchy on hybrid hosts), read by the loop */
#include "config.h"

#include "cg_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

int cg_watch_fd(const struct cg *cg)
{
	return cg->ifd;
}

int cg_slot_watch(struct cg *cg, const char *name)
{
	char path[PATH_MAX];
	struct cg_slotent *e;
	int r = cg_name_valid(name), wd;

	if (r < 0)
		return r;
	if (cg->ifd < 0)
		return -EOPNOTSUPP;
	r = cg_spath(cg, cg->track, name, "cgroup.events", path);
	if (r < 0)
		return r;
	e = cg_ent_get(cg, name);
	if (!e)
		return -ENOMEM;
	if (e->wd >= 0)
		return 0;
	wd = cg->ops->watch(cg->ctx, cg->ifd, path, IN_MODIFY);
	if (wd >= 0 && hmap_put(&cg->ents_by_wd, (uintptr_t)wd, e) < 0) {
		inotify_rm_watch(cg->ifd, wd);
		wd = -ENOMEM;
	}
	if (wd < 0) {
		cg_ent_put(cg, e);
		return wd;
	}
	e->wd = wd;
	return 0;
}

int cg_slot_unwatch(struct cg *cg, const char *name)
{
	struct cg_slotent *e = cg_ent_find(cg, name);

	if (!e || e->wd < 0)
		return -ENOENT;
	inotify_rm_watch(cg->ifd, e->wd);
	hmap_del(&cg->ents_by_wd, (uintptr_t)e->wd);
	e->wd = -1;
	cg_ent_put(cg, e);
	return 0;
}

/* The queue overflowed: any watched slot may have changed. */
static int notify_all(struct cg *cg, void (*fn)(const char *name, void *ud), void *ud)
{
	size_t n = 0, cap = cg->ents_by_wd.cap;
	char **names = calloc(cap ? cap : 1, sizeof(*names));
	int r = 0;

	if (!names)
		return -ENOMEM;
	/* copied first: fn may remove slots, and with them entries */
	for (size_t i = 0; i < cap; i++) {
		const struct cg_slotent *e = cg->ents_by_wd.v[i].val;
		if (e && !(names[n++] = strdup(e->name)))
			r = -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (names[i] && r == 0)
			fn(names[i], ud);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

static void dispatch(struct cg *cg, const struct inotify_event *ev, void (*fn)(const char *name, void *ud),
		     void *ud)
{
	struct cg_slotent *e = hmap_get(&cg->ents_by_wd, (uintptr_t)ev->wd);
	char name[NAME_MAX + 1];

	if (!e)
		return;
	/* copied: fn may remove the slot, and with it e */
	snprintf(name, sizeof(name), "%s", e->name);
	if (ev->mask & IN_IGNORED) {
		hmap_del(&cg->ents_by_wd, (uintptr_t)e->wd);
		e->wd = -1; /* the directory is gone, the watch with it */
		cg_ent_put(cg, e);
	}
	fn(name, ud);
}

int cg_watch_read(struct cg *cg, void (*fn)(const char *name, void *ud), void *ud)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int r = 0;

	if (cg->ifd < 0 || !fn)
		return -EINVAL;
	for (;;) {
		ssize_t n = read(cg->ifd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? r : -errno;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW)
				r = notify_all(cg, fn, ud);
			else
				dispatch(cg, ev, fn, ud);
			p += sizeof(*ev) + ev->len;
		}
	}
}
