/* state_load.c - loading: the snapshot, then every journal it does not
 * cover, in order. A bad entry costs that entry only; what makes the whole state unusable is
 * a snapshot that is not JSON or not ours, or another pool root. */
#include "config.h"

#include "state_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "slot.h"
#include "res.h"
#include "util.h"

#define EROOT EXDEV /* internal: a journal written for another pool root */

/* ---- one slot */

/* names of resource keys: their bits, or -EINVAL */
static int run_limits_from_json(json_t *a, uint16_t *mask)
{
	unsigned m;

	if (!a)
		return 0;
	if (res_mask_from_json(a, &m) < 0)
		return -EINVAL;
	*mask = (uint16_t)m;
	return 0;
}

static int run_from_json(json_t *j, struct run *r)
{
	json_int_t started, ended, peak, ooms, base;
	int status, sig = 0, unsup = 0, sampled = 0;

	/* memory_peak_sampled: absent from the records of older daemons (false) */
	if (json_unpack(j, "{s:I, s:I, s:i, s:I, s:I, s:I, s?i, s?b, s?b}", "started", &started, "ended", &ended,
			"exit_status", &status, "memory_peak", &peak, "oom_kills", &ooms, "oom_base", &base, "signal",
			&sig, "unsupervised", &unsup, "memory_peak_sampled", &sampled) < 0 ||
	    sig < 0 || sig >= 65)
		return -EINVAL;
	r->signal = sig;
	r->unsupervised = unsup;
	r->peak_sampled = sampled;
	r->started_us = started;
	r->ended_us = ended;
	r->exit_status = status;
	r->memory_peak = (uint64_t)peak;
	r->oom_kills = (uint64_t)ooms;
	r->oom_base = (uint64_t)base;
	return 0;
}

static int slot_fields(struct slot *s, const char *name, const char *key, const char *cls, const char *state,
		       json_int_t runs, const char **why)
{
	const char *reason;

	if (slot_name_id(name, &s->id) < 0)
		*why = "bad slot name";
	else if (*key && key_validate(key, &reason) < 0)
		*why = "bad key";
	else if (strlen(cls) >= sizeof(s->class_name))
		*why = "class name too long";
	else if (runs < 0)
		*why = "negative run count";
	else if (slot_state_parse(state, &s->state) < 0)
		*why = "unknown state";
	else
		return 0;
	return -EINVAL;
}

/* "tenant": {"job": s, "release": b, "ending": b, "holders": [[pid, start], ...]} */
static int tenant_from_json(json_t *j, struct slot *s, const char **why)
{
	json_t *holders, *h;
	struct tenant *t;
	const char *job;
	int release = 1, ending = 0;
	size_t i;

	if (!j)
		return 0;
	if (json_unpack(j, "{s:s, s?b, s?b, s:o}", "job", &job, "release", &release, "ending", &ending, "holders",
			&holders) < 0 ||
	    !json_is_array(holders) || strlen(job) > KEY_MAX) {
		*why = "bad tenant";
		return -EINVAL;
	}
	if (!(t = slot_tenant_new(s)) || (!t->job && !(t->job = strdup(job)))) {
		*why = "out of memory";
		return -ENOMEM;
	}
	t->release = release;
	t->ending = ending;
	json_array_foreach(holders, i, h) {
		json_int_t pid, start;
		if (json_unpack(h, "[I, I]", &pid, &start) < 0 || pid <= 0 || pid > INT32_MAX || start < 0) {
			*why = "bad tenant holder";
			return -EINVAL;
		}
		if (!slot_holder_add(s, (pid_t)pid, (uint64_t)start)) {
			*why = "out of memory";
			return -ENOMEM;
		}
	}
	return 0;
}

int state_slot_from_json(json_t *j, struct slot *s, const char **why)
{
	const char *name, *key, *cls, *state;
	json_int_t runs, id, idle, owner = 0;
	json_t *recent, *run;
	int released = 0;
	size_t i;

	if (json_unpack(j, "{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "name", &name, "key", &key, "class", &cls,
			"state", &state, "runs", &runs, "cgroup_id", &id, "idle_since", &idle, "recent_runs",
			&recent) < 0 ||
	    !json_is_array(recent)) {
		*why = "not a slot object";
		return -EINVAL;
	}
	/* owner_uid: files written before it existed hold slots bound by root */
	if (json_unpack(j, "{s?I}", "owner_uid", &owner) < 0 || owner < 0 || owner > UINT32_MAX - 1) {
		*why = "bad owner_uid";
		return -EINVAL;
	}
	s->run_limits = 0;
	if (json_unpack(j, "{s?b}", "released", &released) < 0 ||
	    run_limits_from_json(json_object_get(j, "run_limits"), &s->run_limits) < 0) {
		*why = "bad released or run_limits";
		return -EINVAL;
	}
	s->released = released;
	if (slot_fields(s, name, key, cls, state, runs, why) < 0)
		return -EINVAL;
	if (tenant_from_json(json_object_get(j, "tenant"), s, why) < 0)
		return -EINVAL;
	if (json_array_size(recent) > SLOT_RECENT_RUNS) {
		*why = "too many recent runs";
		return -EINVAL;
	}
	strcpy(s->name, name);
	strcpy(s->key, key);
	strcpy(s->class_name, cls);
	s->runs = (uint64_t)runs;
	s->cgroup_id = (uint64_t)id;
	s->idle_since_us = idle;
	s->owner_uid = (uid_t)owner;
	s->nrecent = 0;
	json_array_foreach(recent, i, run) {
		if (run_from_json(run, &s->recent[i]) < 0) {
			*why = "bad recent run";
			return -EINVAL;
		}
		s->nrecent++;
	}
	return 0;
}

/* ---- the directory */

void state_journal_name(char name[STATE_NAME_MAX], uint64_t seq)
{
	snprintf(name, STATE_NAME_MAX, STATE_JOURNAL "%" PRIu64, seq);
}

/* "journal.<n>", n written as state_journal_name writes it */
static bool journal_seq(const char *name, uint64_t *seq)
{
	char again[STATE_NAME_MAX];
	const char *digits = name + strlen(STATE_JOURNAL);
	unsigned long long v;
	char *end;

	if (strncmp(name, STATE_JOURNAL, strlen(STATE_JOURNAL)) != 0 || !isdigit((unsigned char)*digits))
		return false;
	errno = 0;
	v = strtoull(digits, &end, 10);
	if (*end || errno)
		return false;
	state_journal_name(again, v);
	if (strcmp(again, name) != 0)
		return false;
	*seq = v;
	return true;
}

static int cmp_seq(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int state_journals(int dirfd, uint64_t **out, size_t *n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t *v = NULL, seq;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!journal_seq(de->d_name, &seq))
			continue;
		if (cnt == cap) {
			uint64_t *nv = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt++] = seq;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_seq);
	*out = v;
	*n = cnt;
	return 0;
}

/* ---- the state being rebuilt */

struct loaded {
	struct state *st;
	json_t *index;     /* slot name -> position in v */
	struct slot **v;   /* NULL where a slot was dropped */
	size_t n, cap;
	unsigned next_id;
	bool found;        /* a snapshot or a journal exists */
	uint64_t seq;      /* journals below this one are in the snapshot */
};

/* takes s */
static void loaded_slot_free(struct slot *s)
{
	if (!s)
		return;
	slot_tenant_free(s);
	free(s);
}

static int loaded_put(struct loaded *l, struct slot *s)
{
	json_t *pos = json_object_get(l->index, s->name);

	if (pos) {
		size_t i = (size_t)json_integer_value(pos);
		loaded_slot_free(l->v[i]);
		l->v[i] = s;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct slot **nv = realloc(l->v, cap * sizeof(*nv));
		if (!nv)
			goto nomem;
		l->v = nv;
		l->cap = cap;
	}
	if (json_object_set_new(l->index, s->name, json_integer((json_int_t)l->n)) < 0)
		goto nomem;
	l->v[l->n++] = s;
	return 0;
nomem:
	loaded_slot_free(s);
	return -ENOMEM;
}

static void loaded_drop(struct loaded *l, const char *name)
{
	json_t *pos = json_object_get(l->index, name);
	size_t i;

	if (!pos)
		return;
	i = (size_t)json_integer_value(pos);
	loaded_slot_free(l->v[i]);
	l->v[i] = NULL;
	json_object_del(l->index, name);
}

static void loaded_free(struct loaded *l)
{
	for (size_t i = 0; i < l->n; i++)
		loaded_slot_free(l->v[i]);
	free(l->v);
	json_decref(l->index);
}

/* a slot object: 0, -EINVAL (*why says why) or -ENOMEM */
static int put_json(struct loaded *l, json_t *j, const char **why)
{
	struct slot *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	if (state_slot_from_json(j, s, why) < 0) {
		loaded_slot_free(s);
		return -EINVAL;
	}
	return loaded_put(l, s);
}

static int cmp_slot_id(const void *a, const void *b)
{
	const struct slot *x = *(struct slot *const *)a, *y = *(struct slot *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* A snapshot's or record's totals, when it has them (state written before
 * they were kept has none): they only grow, so the largest seen stands. */
static void load_totals(struct loaded *l, json_t *obj)
{
	json_int_t placed = -1, made = -1;
	struct state_totals *t = &l->st->totals;

	if (json_unpack(obj, "{s?I, s?I}", "runs_placed", &placed, "slot_cgroups", &made) < 0)
		return;
	if (placed > 0 && (uint64_t)placed > t->runs_placed)
		t->runs_placed = (uint64_t)placed;
	if (made > 0 && (uint64_t)made > t->slot_cgroups)
		t->slot_cgroups = (uint64_t)made;
}

/* ---- the snapshot */

static int snapshot_header(struct loaded *l, json_t *top, json_t **slots)
{
	const char *root;
	json_int_t seq = 0;
	int version, next;

	if (json_unpack(top, "{s:i, s:s, s:i, s:o}", "version", &version, "root", &root, "next_id", &next, "slots",
			slots) < 0 ||
	    !json_is_array(*slots) || next < 0 || (version != 1 && version != STATE_VERSION) ||
	    (version == STATE_VERSION && (json_unpack(top, "{s:I}", "journal", &seq) < 0 || seq < 0))) {
		log_warn("state: %s/" STATE_SNAPSHOT ": not a state snapshot of a known version", l->st->dir);
		return -EINVAL;
	}
	if (strcmp(root, l->st->root) != 0) {
		log_warn("state: %s/" STATE_SNAPSHOT ": written for pool root %s, not %s", l->st->dir, root,
			 l->st->root);
		return -EINVAL;
	}
	l->next_id = (unsigned)next;
	l->seq = (uint64_t)seq; /* version 1 had no journal: every journal is newer */
	load_totals(l, top);
	return 0;
}

static int read_all(int fd, char **out, size_t *len);

static int load_snapshot(struct loaded *l)
{
	struct state *st = l->st;
	int fd = openat(st->dirfd, STATE_SNAPSHOT, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	json_t *top, *slots, *j;
	json_error_t err;
	struct stat sb;
	char *text;
	size_t i, len;
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	l->found = true;
	st->snap_bytes = fstat(fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	/* read whole, then parsed: json_loadfd reads a byte per system call */
	r = read_all(fd, &text, &len);
	close(fd);
	if (r < 0) {
		log_warn("state: %s/" STATE_SNAPSHOT ": %s", st->dir, strerror(-r));
		return r;
	}
	top = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	free(text);
	if (!top) {
		log_warn("state: %s/" STATE_SNAPSHOT ": line %d: %s", st->dir, err.line, err.text);
		return -EINVAL;
	}
	r = snapshot_header(l, top, &slots);
	json_array_foreach(slots, i, j) {
		const char *why, *name;
		if (r < 0)
			break;
		r = put_json(l, j, &why);
		if (r != -EINVAL)
			continue;
		name = json_string_value(json_object_get(j, "name"));
		log_warn("state: %s/" STATE_SNAPSHOT ": slot entry %zu (%s) dropped: %s", st->dir, i,
			 name ? name : "no name", why);
		r = 0;
	}
	json_decref(top);
	return r;
}

/* ---- the journals */

/* one line: 0, -EINVAL (*why), -EROOT or -ENOMEM */
static int apply_record(struct loaded *l, json_t *rec, const char **why)
{
	json_t *put = json_object_get(rec, "put"), *drop = json_object_get(rec, "drop");
	const char *root, *name;
	json_int_t next;
	unsigned id;
	int version, r;

	if (json_unpack(rec, "{s:i, s:s}", "version", &version, "root", &root) == 0) {
		*why = "journal of an unknown version";
		if (version != STATE_VERSION)
			return -EINVAL;
		return strcmp(root, l->st->root) == 0 ? 0 : -EROOT;
	}
	*why = "no next_id";
	if (json_unpack(rec, "{s:I}", "next_id", &next) < 0 || next < 0 || next > UINT_MAX)
		return -EINVAL;
	if (put) {
		r = put_json(l, put, why);
	} else if ((name = json_string_value(drop)) && slot_name_id(name, &id) == 0) {
		loaded_drop(l, name);
		r = 0;
	} else {
		*why = "neither a slot put nor a slot drop";
		r = -EINVAL;
	}
	if (r == 0) {
		l->next_id = (unsigned)next;
		load_totals(l, rec);
	}
	return r;
}

static int grow(char **buf, size_t *cap)
{
	size_t ncap = *cap ? *cap * 2 : 64 * 1024;
	char *nb = realloc(*buf, ncap);

	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

static int read_all(int fd, char **out, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	ssize_t k = 1;
	int r = 0;

	while (r == 0 && k != 0) {
		if (n == cap && (r = grow(&buf, &cap)) < 0)
			break;
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno != EINTR)
			r = -errno;
		else if (k > 0)
			n += (size_t)k;
	}
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	*len = n;
	return 0;
}

static int replay_lines(struct loaded *l, const char *name, const char *buf, size_t len)
{
	unsigned line = 0;

	for (size_t off = 0; off < len; line++) {
		const char *nl = memchr(buf + off, '\n', len - off), *why = "not JSON";
		json_t *rec;
		int r;

		if (!nl) {
			log_info("state: %s/%s: line %u torn (the daemon stopped while writing it); ignored",
				 l->st->dir, name, line + 1);
			break;
		}
		rec = json_loadb(buf + off, (size_t)(nl - (buf + off)), JSON_REJECT_DUPLICATES, NULL);
		r = rec ? apply_record(l, rec, &why) : -EINVAL;
		json_decref(rec);
		if (r == -EROOT) {
			log_warn("state: %s/%s: written for another pool root than %s", l->st->dir, name, l->st->root);
			return -EINVAL;
		}
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			log_warn("state: %s/%s: line %u dropped: %s", l->st->dir, name, line + 1, why);
		off = (size_t)(nl - buf) + 1;
	}
	return 0;
}

static int replay_journal(struct loaded *l, uint64_t seq)
{
	char name[STATE_NAME_MAX], *buf;
	size_t len;
	int fd, r;

	state_journal_name(name, seq);
	fd = openat(l->st->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		log_warn("state: %s/%s: %s; skipped", l->st->dir, name, strerror(errno));
		return 0;
	}
	l->found = true;
	r = read_all(fd, &buf, &len);
	close(fd);
	if (r < 0) {
		log_warn("state: %s/%s: %s; skipped", l->st->dir, name, strerror(-r));
		return r == -ENOMEM ? r : 0;
	}
	l->st->jbytes += len;
	r = replay_lines(l, name, buf, len);
	free(buf);
	return r;
}

static int load_journals(struct loaded *l)
{
	uint64_t *seqs;
	size_t n;
	int r = state_journals(l->st->dirfd, &seqs, &n);

	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (seqs[i] >= l->seq)
			r = replay_journal(l, seqs[i]);
	/* the next record goes to a new journal, never after a torn line */
	if (r == 0 && l->st->jfd < 0) {
		if (n && seqs[n - 1] >= l->st->seq)
			l->st->seq = seqs[n - 1] + 1;
		if (l->seq > l->st->seq)
			l->st->seq = l->seq;
	}
	free(seqs);
	return r;
}

static int loaded_result(struct loaded *l, unsigned *next_id, struct slot ***out, size_t *n)
{
	size_t k = 0;

	for (size_t i = 0; i < l->n; i++)
		if (l->v[i])
			l->v[k++] = l->v[i];
	if (k)
		qsort(l->v, k, sizeof(*l->v), cmp_slot_id);
	if (!l->v && !(l->v = calloc(1, sizeof(*l->v))))
		return -ENOMEM;
	*out = l->v;
	*n = k;
	*next_id = l->next_id;
	l->v = NULL;
	l->n = 0;
	return 0;
}

int state_load(struct state *st, unsigned *next_id, struct slot ***out, size_t *n)
{
	struct loaded l = { .st = st, .index = json_object() };
	int r;

	if (!l.index)
		return -ENOMEM;
	st->jbytes = 0;
	r = load_snapshot(&l);
	if (r == 0)
		r = load_journals(&l);
	if (r == 0 && !l.found)
		r = -ENOENT;
	if (r == 0)
		r = loaded_result(&l, next_id, out, n);
	loaded_free(&l);
	return r;
}
