/* retire_probe.c - does the running kernel reparent LRU pages on cgroup removal?
 *
 * A child process enters a probe cgroup, writes PROBE_BYTES to an unlinked
 * file and writes them back (dirty pages pin a memcg through writeback
 * structures even on reparenting kernels), then exits. The file is made in
 * conf.retire.probe_dir (a real disk); where that directory is missing,
 * read-only or not ours to write, it is a memfd instead, whose shmem pages a
 * reparenting kernel moves as it moves page cache. The file stays open here,
 * so its pages stay charged to the probe cgroup. The cgroup is removed and
 * verified like a retirement: freed while holding the pages means the kernel
 * reparented them; still dying after PROBE_VERIFY_MS means it does not.
 * Closing the file then drops the pages, which frees the probe's memcg on
 * either kind of kernel: nothing is left dying.
 *
 * A file's group can stay dying past the deadline on a reparenting kernel
 * too, while its inode is moved off the group's writeback structures (slow
 * on a loaded machine): a file round that ends pinned is checked by a second
 * round with a memfd, which has no writeback, and that round decides. */
#include "config.h"

#include "retire_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "retire.h"

#define PROBE_NAME "cgpool-lru-probe"
#define PROBE_BYTES (4U << 20)
#define PROBE_MIN_CHARGED (1U << 20)
#define PROBE_VERIFY_MS 5000

struct probe {
	struct ev_loop *loop;
	struct cg *cg;
	struct retire *r;
	const struct conf *const *conf;
	bool running;
	int fd; /* the unlinked file (or memfd) holding the pages */
	char medium[PROBE_MEDIUM_MAX]; /* "file:<dir>" or "memfd"; "" before the first probe */
	char first[512]; /* a file round that ended pinned, for the evidence of the memfd round */
	ev_child child;
};

static void probe_end(struct probe *p, enum lru_reparenting v, const char *why)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->running = false;
	retire_set_probing(p->r, false);
	log_notice("probe: lru_reparenting %s: %s", lru_reparenting_name(v), why);
	retire_set_lru_reparenting(p->r, v, why);
}

/* what the probe's pages were, for its evidence */
static const char *pages_name(const struct probe *p)
{
	static char buf[360];

	if (strcmp(p->medium, "memfd") == 0)
		return "shmem pages (memfd)";
	snprintf(buf, sizeof(buf), "page cache (%.320s)", p->medium);
	return buf;
}

static int memfd_round(struct probe *p, const char *first);

static void probe_done(const struct retire_result *res, void *ud)
{
	struct probe *p = ud;
	char why[1200];

	switch (res->outcome) {
	case OUTCOME_REPARENTED:
		snprintf(why, sizeof(why), "%s%sa cgroup holding %llu bytes of %s was freed %lld ms after rmdir", p->first,
			 p->first[0] ? "; " : "", (unsigned long long)res->lru_bytes, pages_name(p),
			 (long long)res->elapsed_ms);
		probe_end(p, LRU_YES, why);
		return;
	case OUTCOME_PINNED:
		snprintf(why, sizeof(why), "%s%sa cgroup holding %llu bytes of %s was still dying %lld ms after rmdir",
			 p->first, p->first[0] ? "; " : "", (unsigned long long)res->lru_bytes, pages_name(p),
			 (long long)res->elapsed_ms);
		if (!p->first[0] && strcmp(p->medium, "memfd") != 0 && memfd_round(p, why) == 0)
			return;
		probe_end(p, LRU_NO, why);
		return;
	default:
		snprintf(why, sizeof(why), "probe cgroup %s: %s (%s)", res->outcome == OUTCOME_FAILED ? "not removed" : "held no page cache",
			 retire_outcome_name(res->outcome), res->error ? strerror(-res->error) : "no error");
		probe_end(p, LRU_UNKNOWN, why);
	}
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct probe *p = w->data;
	struct cg_memory m = { 0 };
	char why[512];
	int r;

	ev_child_stop(loop, w);
	if (!WIFEXITED(w->rstatus) || WEXITSTATUS(w->rstatus) != 0) {
		snprintf(why, sizeof(why), "probe writer failed (status %d)", w->rstatus);
		goto fail;
	}
	cg_slot_memory(p->cg, PROBE_NAME, &m);
	if (m.file < PROBE_MIN_CHARGED) {
		snprintf(why, sizeof(why), "page cache written in the probe cgroup was not charged to it (%llu bytes)",
			 (unsigned long long)m.file);
		goto fail;
	}
	r = retire_start_probe(p->r, PROBE_NAME, PROBE_VERIFY_MS, probe_done, p);
	if (r == 0)
		return;
	snprintf(why, sizeof(why), "cannot remove the probe cgroup: %s", strerror(-r));
fail:
	cg_slot_remove(p->cg, PROBE_NAME);
	probe_end(p, LRU_UNKNOWN, why);
}

static int open_tmpfile(const char *dir, int *out)
{
	char path[PATH_MAX];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0) {
		if (snprintf(path, sizeof(path), "%s/cgpool-probe.XXXXXX", dir) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			return -errno;
		unlink(path);
	}
	*out = fd;
	return 0;
}

/* The file for the probe's pages: an unlinked file in probe_dir, else a
 * memfd (shmem pages, which a reparenting kernel moves as it moves page
 * cache). Sets p->fd and p->medium. */
static int open_medium(struct probe *p)
{
	const char *dir = (*p->conf)->retire.probe_dir;
	int r = open_tmpfile(dir, &p->fd);

	if (r == 0) {
		snprintf(p->medium, sizeof(p->medium), "file:%s", dir);
		return 0;
	}
	log_notice("probe: cannot make a file in %s (%s); using memfd pages", dir, strerror(-r));
	p->fd = memfd_create(PROBE_NAME, MFD_CLOEXEC);
	if (p->fd < 0) {
		r = -errno;
		log_warn("probe: memfd_create: %s", strerror(-r));
		return r;
	}
	snprintf(p->medium, sizeof(p->medium), "memfd");
	return 0;
}

/* in the child: wait until moved into the probe cgroup, then dirty and write back */
static void __attribute__((noreturn)) writer(int go, int fd)
{
	static char block[64 * 1024];
	char c;

	if (read(go, &c, 1) != 1)
		_exit(2);
	memset(block, 'p', sizeof(block));
	for (unsigned off = 0; off < PROBE_BYTES; off += sizeof(block))
		if (pwrite(fd, block, sizeof(block), off) != (ssize_t)sizeof(block))
			_exit(3);
	_exit(fdatasync(fd) == 0 ? 0 : 4);
}

static int spawn_writer(struct probe *p)
{
	int pipefd[2], r;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	}
	if (pid == 0)
		writer(pipefd[0], p->fd);
	ev_child_init(&p->child, child_cb, pid, 0);
	p->child.data = p;
	ev_child_start(p->loop, &p->child);
	close(pipefd[0]);
	r = cg_slot_attach(p->cg, PROBE_NAME, pid);
	if (r < 0)
		kill(pid, SIGKILL); /* child_cb reports the failure */
	else if (write(pipefd[1], "g", 1) != 1)
		kill(pid, SIGKILL);
	close(pipefd[1]);
	return 0;
}

/* The second round, after a file round that ended pinned. */
static int memfd_round(struct probe *p, const char *first)
{
	int r = cg_slot_create(p->cg, PROBE_NAME);

	if (r < 0)
		return r;
	close(p->fd);
	p->fd = memfd_create(PROBE_NAME, MFD_CLOEXEC);
	if (p->fd < 0) {
		r = -errno;
		cg_slot_remove(p->cg, PROBE_NAME);
		return r;
	}
	snprintf(p->first, sizeof(p->first), "%.500s", first);
	snprintf(p->medium, sizeof(p->medium), "memfd");
	log_info("probe: %s; checking with shmem pages (memfd), which have no writeback", first);
	r = spawn_writer(p);
	if (r < 0)
		cg_slot_remove(p->cg, PROBE_NAME);
	return r;
}

int probe_start(struct probe *p)
{
	int r;

	if (p->running)
		return -EALREADY;
	r = cg_slot_create(p->cg, PROBE_NAME);
	if (r == -EEXIST) /* left by a daemon that died mid-probe */
		r = cg_slot_remove(p->cg, PROBE_NAME) ?: cg_slot_create(p->cg, PROBE_NAME);
	if (r < 0)
		goto fail;
	p->first[0] = '\0';
	r = open_medium(p);
	if (r < 0) {
		cg_slot_remove(p->cg, PROBE_NAME);
		retire_set_lru_reparenting(p->r, LRU_UNKNOWN, "no file for the probe's pages: neither probe_dir nor a memfd");
		return r;
	}
	p->running = true;
	retire_set_probing(p->r, true);
	r = spawn_writer(p);
	if (r < 0) {
		cg_slot_remove(p->cg, PROBE_NAME);
		probe_end(p, LRU_UNKNOWN, "cannot start the probe writer");
		return r;
	}
	log_info("probe: started (%u bytes in %s)", PROBE_BYTES, p->medium);
	return 0;
fail:
	log_warn("probe: cannot set up the probe cgroup: %s", strerror(-r));
	retire_set_lru_reparenting(p->r, LRU_UNKNOWN, "the probe cgroup could not be set up");
	return r;
}

bool probe_running(const struct probe *p)
{
	return p && p->running;
}

const char *probe_medium(const struct probe *p)
{
	return p ? p->medium : "";
}

int probe_new(struct ev_loop *loop, struct cg *cg, struct retire *r, const struct conf *const *conf,
	      struct probe **out)
{
	struct probe *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->loop = loop;
	p->cg = cg;
	p->r = r;
	p->conf = conf;
	p->fd = -1;
	*out = p;
	return 0;
}

void probe_free(struct probe *p)
{
	if (!p)
		return;
	if (p->running)
		ev_child_stop(p->loop, &p->child);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}
