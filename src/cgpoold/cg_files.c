/* cg_files.c - open cgroup files kept for the next access (cg_files.h). */
#include "config.h"

#include "cg_files.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cg_file {
	char *path;         /* NULL: a free entry */
	uint64_t hash;
	int mode;           /* O_RDONLY or O_WRONLY */
	int fd;
	unsigned users;     /* threads inside a read or write on fd */
	bool dead;          /* forgotten: out of lookups, closed by its last user */
	uint64_t used;      /* the tick of its last use */
};

/* The index of the entries that can be looked up: open addressing on the
 * path's hash, linear probing, removal by shifting back. */
#define IDX_SIZE (2 * CG_FILES_MAX) /* a power of two */

struct cg_files {
	pthread_mutex_t lock;
	uint64_t tick;
	unsigned n;                 /* entries with a path */
	unsigned long opened;       /* open(2) calls that succeeded */
	uint16_t idx[IDX_SIZE];     /* 0: empty, else 1 + the entry's index in v */
	struct cg_file v[CG_FILES_MAX];
};

int cg_files_new(struct cg_files **out)
{
	struct cg_files *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

static size_t idx_home(uint64_t hash)
{
	return (size_t)(hash ^ (hash >> 32)) & (IDX_SIZE - 1);
}

static void idx_add(struct cg_files *f, struct cg_file *e)
{
	size_t k = idx_home(e->hash), n = 0;

	while (f->idx[k] && ++n < IDX_SIZE) /* never full: twice the entries */
		k = (k + 1) & (IDX_SIZE - 1);
	if (!f->idx[k])
		f->idx[k] = (uint16_t)(e - f->v + 1);
}

/* e out of the index, if it is there; the entries after it in its run move
 * back to where a lookup still finds them */
static void idx_del(struct cg_files *f, struct cg_file *e)
{
	size_t k = idx_home(e->hash), j, n = 0;
	uint16_t want = (uint16_t)(e - f->v + 1);

	while (f->idx[k] && f->idx[k] != want && ++n < IDX_SIZE)
		k = (k + 1) & (IDX_SIZE - 1);
	if (f->idx[k] != want)
		return;
	for (j = k, n = 0; ++n < IDX_SIZE;) {
		j = (j + 1) & (IDX_SIZE - 1);
		if (!f->idx[j])
			break;
		size_t h = idx_home(f->v[f->idx[j] - 1].hash);
		bool stays = k <= j ? k < h && h <= j : k < h || h <= j; /* h in (k, j], cyclically */
		if (!stays) {
			f->idx[k] = f->idx[j];
			k = j;
		}
	}
	f->idx[k] = 0;
}

static void entry_clear(struct cg_files *f, struct cg_file *e)
{
	if (!e->dead)
		idx_del(f, e);
	f->n--;
	close(e->fd);
	free(e->path);
	memset(e, 0, sizeof(*e));
}

/* out of lookups; closed now or by its last user */
static void entry_forget(struct cg_files *f, struct cg_file *e)
{
	if (!e->dead)
		idx_del(f, e);
	e->dead = true;
	if (!e->users)
		entry_clear(f, e);
}

void cg_files_free(struct cg_files *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < CG_FILES_MAX; i++)
		if (f->v[i].path)
			entry_clear(f, &f->v[i]);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h | 1; /* never 0, the mark of a free entry */
}

/* locked: the live entry for path and mode, or NULL */
static struct cg_file *lookup(struct cg_files *f, const char *path, uint64_t hash, int mode)
{
	size_t k = idx_home(hash);

	for (size_t n = 0; f->idx[k] && n < IDX_SIZE; n++, k = (k + 1) & (IDX_SIZE - 1)) {
		struct cg_file *e = &f->v[f->idx[k] - 1];

		if (e->hash == hash && e->mode == mode && strcmp(e->path, path) == 0)
			return e;
	}
	return NULL;
}

/* locked: the least recently used entry nobody is in, or NULL */
static struct cg_file *lru_unused(struct cg_files *f)
{
	struct cg_file *lru = NULL;

	for (size_t i = 0; i < CG_FILES_MAX; i++) {
		struct cg_file *e = &f->v[i];

		if (e->path && !e->users && (!lru || e->used < lru->used))
			lru = e;
	}
	return lru;
}

/* locked: a free entry, else the least recently used one nobody is in (its
 * file closed), else NULL */
static struct cg_file *room(struct cg_files *f)
{
	struct cg_file *e;

	if (f->n < CG_FILES_MAX) {
		for (size_t i = 0; i < CG_FILES_MAX; i++)
			if (!f->v[i].path)
				return &f->v[i];
	}
	e = lru_unused(f);
	if (e)
		entry_clear(f, e);
	return e;
}

/* Out of descriptors: the least recently used quarter of the kept files is
 * closed so the daemon's other descriptors (clients, new cgroups) get room. */
static void give_back(struct cg_files *f)
{
	pthread_mutex_lock(&f->lock);
	for (unsigned i = 0; i < CG_FILES_MAX / 4; i++) {
		struct cg_file *e = lru_unused(f);

		if (!e)
			break;
		entry_clear(f, e);
	}
	pthread_mutex_unlock(&f->lock);
}

/* The entry for path, in use by the caller until put(); NULL when the file
 * cannot be opened (*err) or there is no room (*fd then holds a descriptor
 * of the caller's own to close). */
static struct cg_file *get(struct cg_files *f, const char *path, int mode, int *fd, int *err)
{
	uint64_t hash = path_hash(path);
	struct cg_file *e;

	*fd = -1;
	pthread_mutex_lock(&f->lock);
	e = lookup(f, path, hash, mode);
	if (e) {
		e->users++;
		e->used = ++f->tick;
	}
	pthread_mutex_unlock(&f->lock);
	if (e)
		return e;
	*fd = open(path, mode | O_CLOEXEC);
	if (*fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		give_back(f);
		*fd = open(path, mode | O_CLOEXEC);
	}
	if (*fd < 0) {
		*err = -errno;
		return NULL;
	}
	char *copy = strdup(path);

	pthread_mutex_lock(&f->lock);
	f->opened++;
	e = copy ? room(f) : NULL;
	if (e) {
		*e = (struct cg_file){ copy, hash, mode, *fd, 1, false, ++f->tick };
		f->n++;
		idx_add(f, e);
		*fd = -1;
	} else {
		free(copy);
	}
	pthread_mutex_unlock(&f->lock);
	return e;
}

/* done with e; gone: its cgroup was removed behind our back */
static void put(struct cg_files *f, struct cg_file *e, bool gone)
{
	pthread_mutex_lock(&f->lock);
	e->users--;
	if (gone || e->dead)
		entry_forget(f, e);
	pthread_mutex_unlock(&f->lock);
}

/* The kernel prints these files whole at each read (one record): a read
 * shorter than asked for is the whole text, and no second read is needed
 * to see the end. */
static ssize_t read_at0(int fd, char *buf, size_t len)
{
	size_t off = 0;

	while (off < len - 1) {
		size_t want = len - 1 - off;
		ssize_t n = pread(fd, buf + off, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
		if ((size_t)n < want)
			break;
	}
	buf[off] = '\0';
	return (ssize_t)off;
}

static ssize_t write_at0(int fd, const char *s)
{
	size_t len = strlen(s);
	ssize_t n = pwrite(fd, s, len, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* one access through the table, opened again once when the cgroup of a kept
 * descriptor is gone */
static ssize_t access_file(struct cg_files *f, const char *path, int mode, char *buf, size_t len, const char *s)
{
	ssize_t r = 0;

	for (int tries = 0; tries < 2; tries++) {
		int fd, err = 0;
		struct cg_file *e = get(f, path, mode, &fd, &err);

		if (!e && fd < 0)
			return err;
		r = mode == O_RDONLY ? read_at0(e ? e->fd : fd, buf, len) : write_at0(e ? e->fd : fd, s);
		if (!e) {
			close(fd);
			return r;
		}
		put(f, e, r == -ENODEV);
		if (r != -ENODEV)
			break;
	}
	return r;
}

ssize_t cg_files_read(struct cg_files *f, const char *path, char *buf, size_t len)
{
	if (len == 0)
		return -EINVAL;
	return access_file(f, path, O_RDONLY, buf, len, NULL);
}

int cg_files_write(struct cg_files *f, const char *path, const char *s)
{
	return (int)access_file(f, path, O_WRONLY, NULL, 0, s);
}

unsigned long cg_files_opened(struct cg_files *f)
{
	unsigned long n;

	pthread_mutex_lock(&f->lock);
	n = f->opened;
	pthread_mutex_unlock(&f->lock);
	return n;
}

void cg_files_forget(struct cg_files *f, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < CG_FILES_MAX; i++) {
		struct cg_file *e = &f->v[i];

		if (!e->path || strncmp(e->path, dir, n) != 0 || e->path[n] != '/')
			continue;
		entry_forget(f, e);
	}
	pthread_mutex_unlock(&f->lock);
}
