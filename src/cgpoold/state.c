/* state.c - what must survive a daemon restart: which key owns which slot,
 * its class, state, run count and recent runs.
 *
 * Layout of <state_dir>:
 *   state.json     the snapshot: {"version":2, "root":R, "next_id":N,
 *                  "journal":SEQ, "slots":[slot, ...]}; it holds everything
 *                  recorded in the journals numbered below SEQ
 *   journal.<SEQ>  newline-terminated JSON lines: a header {"version":2,
 *                  "root":R, "journal":SEQ}, then records {"put":slot,
 *                  "next_id":N} (the slot's whole current content) and
 *                  {"drop":"slot-<n>", "next_id":N} (the slot is gone)
 *   state.json.tmp a snapshot being written (O_EXCL|O_NOFOLLOW, 0644);
 *                  removed at open when a compaction died
 * Loading is the snapshot, then every journal numbered SEQ or above in
 * order, the last record of a slot winning (state_load.c). A version 1
 * state.json (one file rewritten whole, no journals) loads as a snapshot.
 *
 * Crash safety. A transition costs one record (an Attach one for all of its
 * slot's transitions): one write(2) of one line to the current journal
 * (O_APPEND), done before the client hears of it. The
 * state dir lives on /run, a tmpfs: what write(2) returned for is in the
 * page cache, which survives the daemon (kill -9 included) but not a
 * reboot, and the state is of no use after a reboot (the cgroups are gone
 * too). So nothing is fsync'ed. A daemon killed mid-write leaves a last line
 * without its newline: loading ignores it, and the next daemon never appends
 * after it (each daemon, and each failed write, starts a new journal file).
 *
 * Compaction keeps the journals short: the parent closes the current journal
 * and starts journal.<SEQ+1> (new records go there), then forks; the child
 * serializes the slots as they were at the fork into state.json.tmp, renames
 * it over state.json (whose "journal" is SEQ+1) and exits; when the loop
 * reaps it with success, the parent unlinks the journals below SEQ+1. A
 * crash between any two steps leaves the old snapshot with every journal it
 * needs, or the new one with journals it skips. One compaction at a time;
 * one that fails keeps the journals and is retried once they grow again. */
#include "config.h"

#include "state_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "slot.h"
#include "util.h"

#define COMPACT_MIN_BYTES (1024 * 1024) /* journals below this are never compacted */
#define SLOT_JSON_MIN 160               /* bytes of the smallest slot object */
#define JOURNAL_TRIES 16                /* journal numbers tried when one exists */

static void child_cb(struct ev_loop *loop, ev_child *w, int revents);

/* ---- the directory */

static void remove_stale_temps(struct state *st)
{
	int fd = openat(st->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strncmp(de->d_name, STATE_TEMP, strlen(STATE_TEMP)) == 0 &&
		    unlinkat(st->dirfd, de->d_name, 0) == 0)
			log_info("state: %s/%s: left by a compaction that did not finish; removed", st->dir,
				 de->d_name);
	closedir(d);
}

static void unlink_journals_below(struct state *st, uint64_t seq)
{
	char name[STATE_NAME_MAX];
	uint64_t *v;
	size_t n;

	if (state_journals(st->dirfd, &v, &n) < 0)
		return; /* they are skipped at load, and tried again next time */
	for (size_t i = 0; i < n && v[i] < seq; i++) {
		state_journal_name(name, v[i]);
		if (unlinkat(st->dirfd, name, 0) < 0)
			log_warn("state: unlink %s/%s: %s", st->dir, name, strerror(errno));
	}
	free(v);
}

int state_open(struct ev_loop *loop, const char *dir, const char *root, struct state **out)
{
	struct state *st = calloc(1, sizeof(*st));
	uint64_t *seqs = NULL;
	size_t n = 0;
	int r = -ENOMEM;

	if (!st)
		return -ENOMEM;
	st->loop = loop;
	st->dirfd = st->jfd = -1;
	st->dir = strdup(dir);
	st->root = strdup(root);
	if (!st->dir || !st->root)
		goto fail;
	r = mkdir_p(dir, 0755);
	if (r < 0)
		goto fail;
	st->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dirfd < 0) {
		r = -errno;
		goto fail;
	}
	r = state_journals(st->dirfd, &seqs, &n);
	if (r < 0)
		goto fail;
	st->seq = n ? seqs[n - 1] + 1 : 1;
	free(seqs);
	remove_stale_temps(st);
	ev_child_init(&st->child, child_cb, 0, 0);
	st->child.data = st;
	*out = st;
	return 0;
fail:
	state_close(st);
	return r;
}

/* ---- the journal */

static int write_line(int fd, const char *buf, size_t len)
{
	ssize_t n;

	do
		n = write(fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* the current journal is not used any more: records go to a new file */
static void journal_end(struct state *st)
{
	if (st->jfd < 0)
		return;
	close(st->jfd);
	st->jfd = -1;
	st->seq++;
}

static int journal_create(struct state *st, char name[STATE_NAME_MAX])
{
	for (int i = 0; i < JOURNAL_TRIES; i++, st->seq++) {
		int fd;
		state_journal_name(name, st->seq);
		fd = openat(st->dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

static int journal_start(struct state *st)
{
	char name[STATE_NAME_MAX], buf[512];
	struct state_text t;
	int fd, r;

	state_text_init(&t, buf, sizeof(buf));
	state_text_printf(&t, "{\"version\":%d,\"root\":", STATE_VERSION);
	state_text_str(&t, st->root);
	state_text_printf(&t, ",\"journal\":%llu}\n", (unsigned long long)st->seq);
	if (t.err)
		return t.err;
	fd = journal_create(st, name);
	r = fd < 0 ? fd : write_line(fd, t.p, t.len);
	state_text_fini(&t);
	if (r < 0) { /* the caller says what it was for */
		if (fd >= 0) {
			close(fd);
			unlinkat(st->dirfd, name, 0);
		}
		return r;
	}
	st->jfd = fd;
	st->jbytes += t.len;
	return 0;
}

/* one record: t holds its text, without the newline */
static int journal_append(struct state *st, struct state_text *t)
{
	size_t len;
	int r;

	state_text_put(t, "\n", 1);
	if (t->err)
		return t->err;
	len = t->len;
	r = st->jfd < 0 ? journal_start(st) : 0;
	if (r == 0)
		r = write_line(st->jfd, t->p, len);
	if (r == 0) {
		st->jbytes += len;
	} else if (st->jfd >= 0) {
		log_err("state: write %s/" STATE_JOURNAL "%llu: %s; the next record starts a new journal", st->dir,
			(unsigned long long)st->seq, r == -EIO ? "short write" : strerror(-r));
		journal_end(st);
	}
	return r;
}

void state_set_totals(struct state *st, const struct state_totals *t)
{
	st->totals = *t;
}

void state_get_totals(const struct state *st, struct state_totals *out)
{
	*out = st->totals;
}

int state_put(struct state *st, const struct slot *s, unsigned next_id)
{
	char buf[4096];
	struct state_text t;
	int r;

	state_text_init(&t, buf, sizeof(buf));
	state_text_put(&t, "{\"put\":", 7);
	state_text_slot(&t, s);
	state_text_printf(&t, ",\"next_id\":%u", next_id);
	state_text_totals(&t, &st->totals);
	state_text_put(&t, "}", 1);
	r = journal_append(st, &t);
	state_text_fini(&t);
	return r;
}

int state_drop(struct state *st, const char *name, unsigned next_id)
{
	char buf[256];
	struct state_text t;
	int r;

	state_text_init(&t, buf, sizeof(buf));
	state_text_put(&t, "{\"drop\":", 8);
	state_text_str(&t, name);
	state_text_printf(&t, ",\"next_id\":%u", next_id);
	state_text_totals(&t, &st->totals);
	state_text_put(&t, "}", 1);
	r = journal_append(st, &t);
	state_text_fini(&t);
	return r;
}

/* ---- the snapshot */

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* the snapshot's text (free it) */
static char *snapshot_text(struct state *st, const struct slot *const *slots, size_t n, unsigned next_id,
			   uint64_t seq)
{
	struct state_text t;

	state_text_init(&t, NULL, 0);
	state_text_printf(&t, "{\"version\":%d,\"root\":", STATE_VERSION);
	state_text_str(&t, st->root);
	state_text_printf(&t, ",\"next_id\":%u,\"journal\":%llu", next_id, (unsigned long long)seq);
	state_text_totals(&t, &st->totals);
	state_text_put(&t, ",\"slots\":[", 10);
	for (size_t i = 0; i < n; i++) {
		if (i)
			state_text_put(&t, ",", 1);
		state_text_slot(&t, slots[i]);
	}
	state_text_put(&t, "]}", 2);
	if (t.err) {
		state_text_fini(&t);
		return NULL;
	}
	return t.p;
}

/* state.json.tmp, then rename over state.json */
static int snapshot_write(struct state *st, const struct slot *const *slots, size_t n, unsigned next_id,
			  uint64_t seq)
{
	char *text = snapshot_text(st, slots, n, next_id, seq);
	int fd, r;

	if (!text)
		return -ENOMEM;
	fd = openat(st->dirfd, STATE_TEMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST && unlinkat(st->dirfd, STATE_TEMP, 0) == 0)
		fd = openat(st->dirfd, STATE_TEMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		free(text);
		return -errno;
	}
	r = write_all(fd, text, strlen(text));
	free(text);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(st->dirfd, STATE_TEMP, st->dirfd, STATE_SNAPSHOT) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(st->dirfd, STATE_TEMP, 0);
	return r;
}

static uint64_t compact_threshold(const struct state *st, size_t nslots)
{
	uint64_t snap = st->snap_bytes > nslots * SLOT_JSON_MIN ? st->snap_bytes : nslots * SLOT_JSON_MIN;

	return snap * 2 > COMPACT_MIN_BYTES ? snap * 2 : COMPACT_MIN_BYTES;
}

bool state_compact_due(const struct state *st, size_t nslots)
{
	return !st->child_pid && st->jbytes > compact_threshold(st, nslots) && st->jbytes > st->due_floor;
}

/* the snapshot for journals below seq is in place */
static void compaction_done(struct state *st, uint64_t seq, uint64_t covered)
{
	struct stat sb;

	unlink_journals_below(st, seq);
	if (fstatat(st->dirfd, STATE_SNAPSHOT, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		st->snap_bytes = (uint64_t)sb.st_size;
	st->jbytes = st->jbytes > covered ? st->jbytes - covered : 0;
	st->due_floor = 0;
}

static void child_done(struct state *st, int status)
{
	double ms = (now_mono_us() - st->child_start_us) / 1e3;

	st->child_pid = 0;
	if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		compaction_done(st, st->child_seq, st->child_covered);
		log_info("state: snapshot of %zu slots written in %.0f ms", st->child_nslots, ms);
		return;
	}
	unlinkat(st->dirfd, STATE_TEMP, 0);
	st->due_floor = st->jbytes + compact_threshold(st, st->child_nslots);
	if (status != -1 && WIFEXITED(status))
		log_err("state: snapshot %s/" STATE_SNAPSHOT ": %s; the journals are kept", st->dir,
			strerror(WEXITSTATUS(status)));
	else
		log_err("state: snapshot %s/" STATE_SNAPSHOT ": writer %s; the journals are kept", st->dir,
			status == -1 ? "lost" : "killed by a signal");
}

static void child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct state *st = w->data;

	ev_child_stop(loop, w);
	child_done(st, w->rstatus);
}

/* block until the running compaction ends */
static void child_wait(struct state *st)
{
	int status = -1;
	pid_t r;

	ev_child_stop(st->loop, &st->child); /* its event may be pending: rstatus has it then */
	do
		r = waitpid(st->child_pid, &status, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		status = st->child.rpid == st->child_pid ? st->child.rstatus : -1;
	child_done(st, status);
}

static int compact_fork(struct state *st, const struct slot *const *slots, size_t n, unsigned next_id,
			uint64_t covered)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(-snapshot_write(st, slots, n, next_id, st->seq) & 0xff);
	ev_child_set(&st->child, pid, 0);
	st->child.rpid = 0;
	ev_child_start(st->loop, &st->child);
	st->child_pid = pid;
	st->child_seq = st->seq;
	st->child_covered = covered;
	st->child_nslots = n;
	st->child_start_us = now_mono_us();
	return 0;
}

int state_compact(struct state *st, const struct slot *const *slots, size_t n, unsigned next_id, bool now)
{
	uint64_t covered;
	int r;

	if (st->child_pid) {
		if (!now)
			return -EBUSY;
		child_wait(st);
	}
	journal_end(st);
	covered = st->jbytes;
	r = journal_start(st); /* journal.<seq> exists before a snapshot names it */
	if (r < 0)
		return r;
	if (now || !st->loop || !ev_is_default_loop(st->loop)) {
		r = snapshot_write(st, slots, n, next_id, st->seq);
		if (r == 0)
			compaction_done(st, st->seq, covered);
		return r; /* on failure the journals stay, the caller logs */
	}
	return compact_fork(st, slots, n, next_id, covered);
}

void state_close(struct state *st)
{
	if (!st)
		return;
	if (st->child_pid)
		child_wait(st);
	if (st->jfd >= 0)
		close(st->jfd);
	if (st->dirfd >= 0)
		close(st->dirfd);
	free(st->dir);
	free(st->root);
	free(st);
}

/* What survives a restart decides which process goes where: root's alone.
 * Refused when it is not owned by root or others may write to it. */
int state_dir_check(const char *dir)
{
	struct stat st;

	if (geteuid() != 0)
		return 0; /* a test run as a user: its own directory */
	if (lstat(dir, &st) < 0)
		return errno == ENOENT ? 0 : -errno; /* made by the state module, 0700 */
	if (!S_ISDIR(st.st_mode)) {
		log_err("state_dir %s: not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		log_err("state_dir %s: owned by uid %u with mode %04o; it must be owned by root and not writable by "
			"group or others (chown root %s; chmod go-w %s)", dir, (unsigned)st.st_uid,
			(unsigned)(st.st_mode & 07777), dir, dir);
		return -EPERM;
	}
	return 0;
}
