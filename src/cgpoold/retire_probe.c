/* retire_probe.c - does the running kernel reparent LRU pages on cgroup removal?
 *
 * The experiment runs in a place of its own below the pool root, a fresh
 * one each round (cg_place_make: PROBE_NAME/r<n>, holding nothing, and its
 * child PROBE_NAME/r<n>/run), so what it reads moves with that round alone:
 * not with processes in the pool root, cgroups made and removed beside it,
 * retirements in flight, or an earlier round's group still dying. A child process enters run, writes PROBE_BYTES to an unlinked file
 * and writes them back (dirty pages pin a memcg through writeback structures
 * even on reparenting kernels), then exits. The file is made in
 * conf.retire.probe_dir (a real disk); where that directory is missing,
 * read-only or not ours to write, it is a memfd instead, whose shmem pages a
 * reparenting kernel moves as it moves page cache. The file stays open here,
 * so its pages stay charged. run is removed, and the place is read every
 * PROBE_POLL_S until PROBE_VERIFY_MS after the rmdir:
 *  - v2 (cgroup.stat and memory.current of the place): run freed while the
 *    pages are still charged to the place means the kernel reparented them
 *    (yes); run still dying at the deadline, holding them, means it does not
 *    (no).
 *  - v1 (the place's own memory.stat cache + rss, and usage_in_bytes, which
 *    counts what the removed run still holds): the pages charged to the
 *    place itself means reparented (yes); at the deadline still charged below
 *    the place and not to it means not (no).
 * Pages gone meanwhile (reclaimed under pressure) prove nothing: that round
 * is run again once, then the verdict is unknown, with what was read.
 * Closing the file then drops the pages, which frees run on either kind of
 * kernel; the round's place is removed, PROBE_NAME stays for the next.
 *
 * A file's group can stay dying past the deadline on a reparenting kernel
 * too, while its inode is moved off the group's writeback structures (slow
 * on a loaded machine): on v2, where the group's fate is what is read, a
 * file round that ends "no" is checked by a round with a memfd, which has
 * no writeback, and that round decides. */
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
#include "util.h"

#define PROBE_NAME CG_PROBE_PLACE
#define PROBE_BYTES (4U << 20)
#define PROBE_MIN_CHARGED (1U << 20)
#define PROBE_VERIFY_MS 5000
#define PROBE_POLL_S 0.1
#define PROBE_ROUNDS_MAX 3 /* a round that proved nothing is run again, once per medium */

struct probe {
	struct ev_loop *loop;
	struct cg *cg;
	struct retire *r;
	const struct conf *const *conf;
	bool running;
	int fd; /* the unlinked file (or memfd) holding the pages */
	char medium[PROBE_MEDIUM_MAX]; /* "file:<dir>" or "memfd"; "" before the first probe */
	char first[512]; /* a file round that ended "no", for the evidence of the memfd round */
	unsigned rounds;       /* rounds of this probe so far */
	unsigned seq;          /* rounds since the daemon started: each in a fresh place */
	char place[64];        /* this round's: PROBE_NAME/r<seq>; "" between rounds */
	uint64_t bytes;        /* charged to run when it was removed */
	struct cg_place base;  /* the place read right before the rmdir */
	int64_t rmdir_us;
	ev_child child;
	ev_timer timer;
};

/* The round's place goes (a run still dying keeps it dying with it, below
 * PROBE_NAME, where the retirements' witness does not count it). */
static void round_end(struct probe *p)
{
	if (p->place[0])
		cg_place_remove(p->cg, p->place);
	p->place[0] = '\0';
}

static void probe_end(struct probe *p, enum lru_reparenting v, const char *why)
{
	ev_timer_stop(p->loop, &p->timer);
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	round_end(p);
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

/* what the place read, for the evidence */
static const char *place_text(const struct probe *p, const struct cg_place *pl)
{
	static char buf[200];

	if (pl->has_dying)
		snprintf(buf, sizeof(buf), "%s: %llu dying below it, %llu bytes charged", p->place,
			 (unsigned long long)pl->dying, (unsigned long long)pl->charged);
	else
		snprintf(buf, sizeof(buf), "%s: %llu bytes charged to it, %llu with what is below it", p->place,
			 (unsigned long long)pl->local, (unsigned long long)pl->charged);
	return buf;
}

static int round_start(struct probe *p);
static int memfd_round(struct probe *p, const char *first);

enum reading { READ_WAIT, READ_YES, READ_NO, READ_NOTHING };

/* What one reading of the place says, at now (after the rmdir). */
static enum reading judge(const struct probe *p, const struct cg_place *pl, bool deadline)
{
	uint64_t half = p->bytes / 2;

	if (pl->has_dying) { /* v2 */
		bool freed = pl->dying <= p->base.dying;
		if (freed)
			return pl->charged >= half ? READ_YES : READ_NOTHING;
		if (!deadline)
			return READ_WAIT;
		return pl->charged >= half ? READ_NO : READ_NOTHING;
	}
	/* v1: the pages on the place's own counters: moved there */
	if (pl->local >= p->base.local + half)
		return pl->charged >= half ? READ_YES : READ_NOTHING;
	if (!deadline)
		return READ_WAIT;
	return pl->charged >= half ? READ_NO : READ_NOTHING;
}

static void verdict(struct probe *p, enum reading rd, const struct cg_place *pl)
{
	long long ms = (now_mono_us() - p->rmdir_us) / 1000;
	char why[1200];

	switch (rd) {
	case READ_YES:
		if (pl->has_dying)
			snprintf(why, sizeof(why), "%s%sa cgroup holding %llu bytes of %s was freed %lld ms after rmdir, "
				 "its pages still charged to its parent (%s)", p->first, p->first[0] ? "; " : "",
				 (unsigned long long)p->bytes, pages_name(p), ms, place_text(p, pl));
		else
			snprintf(why, sizeof(why), "%s%sthe %llu bytes of %s of a removed cgroup were charged to its parent "
				 "%lld ms after rmdir (%s)", p->first, p->first[0] ? "; " : "",
				 (unsigned long long)p->bytes, pages_name(p), ms, place_text(p, pl));
		probe_end(p, LRU_YES, why);
		return;
	case READ_NO:
		snprintf(why, sizeof(why), "%s%sa cgroup holding %llu bytes of %s was still dying %lld ms after rmdir, %s (%s)",
			 p->first, p->first[0] ? "; " : "", (unsigned long long)p->bytes, pages_name(p), ms,
			 pl->has_dying ? "holding its pages" : "its pages charged to it, not to its parent", place_text(p, pl));
		/* v2 reads the group's fate, which writeback can hold; v1 reads
		 * where the pages are, which it cannot */
		if (pl->has_dying && !p->first[0] && strcmp(p->medium, "memfd") != 0 && memfd_round(p, why) == 0)
			return;
		probe_end(p, LRU_NO, why);
		return;
	default:
		snprintf(why, sizeof(why), "the %llu bytes of %s of the removed probe cgroup were reclaimed before its fate "
			 "showed, %u time%s (%s)", (unsigned long long)p->bytes, pages_name(p), p->rounds,
			 p->rounds == 1 ? "" : "s", place_text(p, pl));
		if (p->rounds < PROBE_ROUNDS_MAX) {
			log_info("probe: %s; once more", why);
			if (round_start(p) == 0)
				return;
		}
		probe_end(p, LRU_UNKNOWN, why);
	}
}

static void poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct probe *p = w->data;
	struct cg_place pl;
	bool deadline = now_mono_us() - p->rmdir_us >= (int64_t)PROBE_VERIFY_MS * 1000;
	enum reading rd;
	char why[300];
	int r = cg_place_read(p->cg, p->place, &pl);

	if (r < 0) {
		snprintf(why, sizeof(why), "cannot read the probe's place %s: %s", p->place, strerror(-r));
		probe_end(p, LRU_UNKNOWN, why);
		return;
	}
	rd = judge(p, &pl, deadline);
	if (rd == READ_WAIT) {
		ev_timer_set(w, PROBE_POLL_S, 0.);
		ev_timer_start(loop, w);
		return;
	}
	verdict(p, rd, &pl);
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct probe *p = w->data;
	char why[512];
	int r;

	ev_child_stop(loop, w);
	if (!WIFEXITED(w->rstatus) || WEXITSTATUS(w->rstatus) != 0) {
		snprintf(why, sizeof(why), "probe writer failed (status %d)", w->rstatus);
		goto fail;
	}
	r = cg_place_run_lru(p->cg, p->place, &p->bytes);
	if (r < 0 || p->bytes < PROBE_MIN_CHARGED) {
		snprintf(why, sizeof(why), "page cache written in the probe cgroup was not charged to it (%llu bytes%s%s)",
			 r < 0 ? 0ULL : (unsigned long long)p->bytes, r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
		goto fail;
	}
	r = cg_place_read(p->cg, p->place, &p->base);
	if (r == 0)
		r = cg_place_remove_run(p->cg, p->place);
	if (r < 0) {
		snprintf(why, sizeof(why), "probe cgroup %s/%s not removed: %s", p->place, CG_PLACE_RUN, strerror(-r));
		goto fail;
	}
	p->rmdir_us = now_mono_us();
	ev_timer_set(&p->timer, PROBE_POLL_S, 0.);
	ev_timer_start(loop, &p->timer);
	return;
fail:
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
	r = cg_place_attach(p->cg, p->place, pid);
	if (r < 0)
		kill(pid, SIGKILL); /* child_cb reports the failure */
	else if (write(pipefd[1], "g", 1) != 1)
		kill(pid, SIGKILL);
	close(pipefd[1]);
	return 0;
}

/* One round: a fresh run in the place, a fresh file of the medium, the writer. */
static int round_start(struct probe *p)
{
	int r;

	round_end(p);
	snprintf(p->place, sizeof(p->place), "%s/r%u", PROBE_NAME, ++p->seq);
	r = cg_place_make(p->cg, p->place);
	if (r < 0) {
		log_warn("probe: cannot set up its place %s/%s below the pool root: %s", p->place, CG_PLACE_RUN,
			 strerror(-r));
		round_end(p);
		return r;
	}
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (strcmp(p->medium, "memfd") == 0) {
		p->fd = memfd_create(PROBE_NAME, MFD_CLOEXEC);
		r = p->fd < 0 ? -errno : 0;
	} else {
		r = open_medium(p);
	}
	if (r == 0)
		r = spawn_writer(p);
	if (r < 0) {
		round_end(p);
		return r;
	}
	p->rounds++;
	return 0;
}

/* The round after a file round that ended "no". */
static int memfd_round(struct probe *p, const char *first)
{
	snprintf(p->first, sizeof(p->first), "%.500s", first);
	snprintf(p->medium, sizeof(p->medium), "memfd");
	log_info("probe: %s; checking with shmem pages (memfd), which have no writeback", first);
	return round_start(p);
}

int probe_start(struct probe *p)
{
	int r;

	if (p->running)
		return -EALREADY;
	if (p->seq == 0) /* the rounds a daemon that died left */
		cg_place_clear(p->cg, PROBE_NAME);
	p->first[0] = '\0';
	p->medium[0] = '\0';
	p->rounds = 0;
	p->running = true;
	retire_set_probing(p->r, true);
	r = round_start(p);
	if (r < 0) {
		probe_end(p, LRU_UNKNOWN, r == -ENOENT || r == -EACCES || r == -EPERM || r == -EROFS
						  ? "the probe's place below the pool root could not be set up"
						  : "cannot start the probe writer");
		return r;
	}
	log_info("probe: started (%u bytes in %s, in %s/%s)", PROBE_BYTES, p->medium, p->place, CG_PLACE_RUN);
	return 0;
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
	ev_timer_init(&p->timer, poll_cb, PROBE_POLL_S, 0.);
	p->timer.data = p;
	*out = p;
	return 0;
}

void probe_free(struct probe *p)
{
	if (!p)
		return;
	if (p->running)
		ev_child_stop(p->loop, &p->child);
	ev_timer_stop(p->loop, &p->timer);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}
