/* unit tests: the state that survives a daemon restart (state.c,
 * state_load.c): journal records, snapshots, compaction in a child, and what
 * a crash at any moment leaves behind */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "log.h"
#include "pool.h"
#include "state.h"
#include "util.h"

#define ROOT "/sys/fs/cgroup/test.slice/cgpool"
#define NS 16     /* slots in the small models */
#define BIG big_slots() /* slots in the large ones */

/* the scale cases at full size (make check-scale): 10,000 slots, else 1,000 */
static bool scale(void)
{
	const char *v = getenv("CGPOOL_TEST_SCALE");

	return v && strcmp(v, "1") == 0;
}

static unsigned big_slots(void)
{
	return scale() ? 10000 : 1000;
}

/* ---- the expected state */

struct model {
	struct slot *s; /* by id */
	bool *present;
	size_t cap;
	unsigned next_id;
};

static void model_init(struct model *m, size_t cap)
{
	m->s = calloc(cap, sizeof(*m->s));
	m->present = calloc(cap, sizeof(*m->present));
	m->cap = cap;
	m->next_id = 0;
	assert_non_null(m->s);
	assert_non_null(m->present);
}

static void model_copy(struct model *dst, const struct model *src)
{
	model_init(dst, src->cap);
	memcpy(dst->s, src->s, src->cap * sizeof(*src->s));
	memcpy(dst->present, src->present, src->cap * sizeof(*src->present));
	dst->next_id = src->next_id;
}

static void model_free(struct model *m)
{
	free(m->s);
	free(m->present);
}

/* slot id with content derived from seed: key, class, runs, recent runs */
static struct slot *model_set(struct model *m, unsigned id, unsigned seed)
{
	struct slot *s = &m->s[id];

	memset(s, 0, sizeof(*s));
	s->id = id;
	snprintf(s->name, sizeof(s->name), SLOT_PREFIX "%u", id);
	s->state = (enum slot_state)(seed % 3); /* warm, running, idle */
	if (s->state != SLOT_WARM) {
		snprintf(s->key, sizeof(s->key), "job-%u.%u:x@y+z=w,v", id, seed);
		/* a class name with what JSON text must escape */
		snprintf(s->class_name, sizeof(s->class_name), seed % 2 ? "batch" : seed % 4 ? "q\"b\\s\x01\x1f\xc3\xa9" : "");
		s->runs = seed;
		s->nrecent = seed % 13; /* up to 12: the ring wraps */
		s->owner_uid = seed % 5 ? 0 : 1000 + seed;
		s->released = seed % 7 == 1;
		s->run_limits = (uint8_t)(seed % 4); /* the first two resource keys */
	}
	s->cgroup_id = 1000 + id;
	s->idle_since_us = s->state == SLOT_IDLE ? 1700000000000000LL + seed : 0;
	for (unsigned i = 0; i < SLOT_RECENT_RUNS; i++) {
		struct run *r = &s->recent[i];
		r->started_us = 1700000000000000LL + seed * 100 + i;
		r->ended_us = i % 3 ? r->started_us + 5 : 0;
		r->exit_status = i % 4 ? (int)i : -1;
		r->memory_peak = (uint64_t)seed << 20 | i;
		r->peak_sampled = (seed + i) % 3 == 1;
		r->oom_kills = i % 2;
		r->oom_base = seed + i;
		r->signal = i % 5 == 2 ? 9 : 0;
		r->unsupervised = i % 6 == 5;
	}
	m->present[id] = true;
	if (id >= m->next_id)
		m->next_id = id + 1;
	return s;
}

static void assert_run_equal(const struct run *a, const struct run *b)
{
	assert_int_equal(a->started_us, b->started_us);
	assert_int_equal(a->ended_us, b->ended_us);
	assert_int_equal(a->exit_status, b->exit_status);
	assert_int_equal(a->memory_peak, b->memory_peak);
	assert_int_equal(a->peak_sampled, b->peak_sampled);
	assert_int_equal(a->oom_kills, b->oom_kills);
	assert_int_equal(a->oom_base, b->oom_base);
	assert_int_equal(a->signal, b->signal);
	assert_int_equal(a->unsupervised, b->unsupervised);
}

/* equal as the pool sees them: the last SLOT_RECENT_RUNS runs, in order */
static void assert_slot_equal(const struct slot *a, const struct slot *b)
{
	unsigned na = a->nrecent < SLOT_RECENT_RUNS ? a->nrecent : SLOT_RECENT_RUNS;
	unsigned nb = b->nrecent < SLOT_RECENT_RUNS ? b->nrecent : SLOT_RECENT_RUNS;

	assert_string_equal(a->name, b->name);
	assert_int_equal(a->id, b->id);
	assert_string_equal(a->key, b->key);
	assert_string_equal(a->class_name, b->class_name);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->cgroup_id, b->cgroup_id);
	assert_int_equal(a->runs, b->runs);
	assert_int_equal(a->idle_since_us, b->idle_since_us);
	assert_int_equal(a->owner_uid, b->owner_uid);
	assert_int_equal(a->released, b->released);
	assert_int_equal(a->run_limits, b->run_limits);
	assert_int_equal(na, nb);
	for (unsigned i = 0; i < na; i++)
		assert_run_equal(&a->recent[(a->nrecent - na + i) % SLOT_RECENT_RUNS],
				 &b->recent[(b->nrecent - nb + i) % SLOT_RECENT_RUNS]);
}

static void free_slots(struct slot **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void assert_model_loaded(const struct model *m, struct slot **v, size_t n, unsigned next_id)
{
	size_t k = 0;

	for (size_t id = 0; id < m->cap; id++) {
		if (!m->present[id])
			continue;
		assert_true(k < n);
		assert_slot_equal(v[k], &m->s[id]);
		k++;
	}
	assert_int_equal(k, n);
	assert_int_equal(next_id, m->next_id);
}

/* a fresh handle on dir loads exactly m */
static void assert_dir_holds(const char *dir, const struct model *m)
{
	struct state *st;
	struct slot **v;
	unsigned next_id;
	size_t n;

	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	assert_int_equal(state_load(st, &next_id, &v, &n), 0);
	assert_model_loaded(m, v, n, next_id);
	free_slots(v, n);
	state_close(st);
}

static void put(struct state *st, struct model *m, unsigned id, unsigned seed)
{
	struct slot *s = model_set(m, id, seed);

	assert_int_equal(state_put(st, s, m->next_id), 0);
}

static void drop(struct state *st, struct model *m, unsigned id)
{
	m->present[id] = false;
	assert_int_equal(state_drop(st, m->s[id].name, m->next_id), 0);
}

static int compact(struct state *st, const struct model *m, bool now)
{
	const struct slot **v = calloc(m->cap, sizeof(*v));
	size_t n = 0;
	int r;

	assert_non_null(v);
	for (size_t id = 0; id < m->cap; id++)
		if (m->present[id])
			v[n++] = &m->s[id];
	r = state_compact(st, v, n, m->next_id, now);
	free(v);
	return r;
}

/* ---- files */

/* a new directory in $TMPDIR (/tmp when unset) */
static void make_dir(char dir[PATH_MAX])
{
	const char *t = getenv("TMPDIR");

	assert_true(snprintf(dir, PATH_MAX, "%s/cgpool-test-state-XXXXXX", t && *t ? t : "/tmp") < PATH_MAX);
	assert_non_null(mkdtemp(dir));
}

static void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    unlinkat(dirfd(d), de->d_name, 0) < 0)
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	if (d)
		closedir(d);
	rmdir(dir);
}

static char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[PATH_MAX + 64];
	struct stat sb;
	char *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	buf = malloc((size_t)sb.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)sb.st_size), sb.st_size);
	buf[sb.st_size] = '\0';
	close(fd);
	*len = (size_t)sb.st_size;
	return buf;
}

static void spit(const char *dir, const char *name, const char *buf, size_t len)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void copy_file(const char *from, const char *to, const char *name)
{
	size_t len;
	char *buf = slurp(from, name, &len);

	spit(to, name, buf, len);
	free(buf);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* the journals in dir, in order: how many, and the name of the i-th */
static unsigned journals(const char *dir, unsigned i, char name[64])
{
	unsigned long seqs[64], n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "journal.", 8) == 0 && n < 64)
			seqs[n++] = strtoul(de->d_name + 8, NULL, 10);
	closedir(d);
	for (unsigned a = 0; a < n; a++)
		for (unsigned b = a + 1; b < n; b++)
			if (seqs[b] < seqs[a]) {
				unsigned long t = seqs[a];
				seqs[a] = seqs[b];
				seqs[b] = t;
			}
	if (name && i < n)
		snprintf(name, 64, "journal.%lu", seqs[i]);
	return (unsigned)n;
}

/* ---- tests */

static void test_round_trip(void **state)
{
	struct model m;
	struct state *st;
	char dir[PATH_MAX], *snap;
	size_t len;

	make_dir(dir);
	model_init(&m, NS);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	for (unsigned id = 0; id < 10; id++)
		put(st, &m, id, id * 7 + 5); /* 12 recent runs among them: the ring wrapped */
	put(st, &m, 3, 99);
	drop(st, &m, 4);
	put(st, &m, 8, 1);
	assert_dir_holds(dir, &m);
	assert_int_equal(journals(dir, 0, NULL), 1);

	assert_int_equal(compact(st, &m, true), 0);
	assert_dir_holds(dir, &m);
	assert_true(exists(dir, "state.json"));
	/* a run's peak_sampled, both ways, under its name in the record */
	snap = slurp(dir, "state.json", &len);
	assert_non_null(strstr(snap, "\"memory_peak_sampled\":true"));
	assert_non_null(strstr(snap, "\"memory_peak_sampled\":false"));
	free(snap);
	assert_int_equal(journals(dir, 0, NULL), 1); /* the new one, holding only its header */
	put(st, &m, 12, 40);
	assert_dir_holds(dir, &m);
	state_close(st);

	/* the next daemon appends to a journal of its own */
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	put(st, &m, 13, 41);
	assert_int_equal(journals(dir, 0, NULL), 2);
	state_close(st);
	assert_dir_holds(dir, &m);
	model_free(&m);
	rm_dir(dir);
}

/* the node's totals ride on every record and snapshot: a restart, a
 * compaction or a crash after the last record loses none */
static struct state_totals reopen_totals(const char *dir, struct state **st)
{
	struct state_totals t = { 99, 99 };
	struct slot **v = NULL;
	unsigned next_id = 0;
	size_t n = 0;

	state_close(*st);
	assert_int_equal(state_open(NULL, dir, ROOT, st), 0);
	assert_int_equal(state_load(*st, &next_id, &v, &n), 0);
	for (size_t i = 0; i < n; i++) {
		slot_tenant_free(v[i]);
		free(v[i]);
	}
	free(v);
	state_get_totals(*st, &t);
	return t;
}

static void test_totals(void **state)
{
	struct model m;
	struct state *st;
	struct state_totals t;
	char dir[PATH_MAX];

	make_dir(dir);
	model_init(&m, NS);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	put(st, &m, 1, 3); /* written before any total: 0 */
	t = reopen_totals(dir, &st);
	assert_true(t.runs_placed == 0 && t.slot_cgroups == 0);
	state_set_totals(st, &(struct state_totals){ 5, 2 });
	put(st, &m, 1, 4);
	state_set_totals(st, &(struct state_totals){ 7, 3 });
	drop(st, &m, 1);
	t = reopen_totals(dir, &st); /* from the journal's last record */
	assert_true(t.runs_placed == 7 && t.slot_cgroups == 3);
	assert_int_equal(compact(st, &m, true), 0);
	t = reopen_totals(dir, &st); /* from the snapshot */
	assert_true(t.runs_placed == 7 && t.slot_cgroups == 3);
	assert_dir_holds(dir, &m);
	state_close(st);
	model_free(&m);
	rm_dir(dir);
}

static void test_enoent(void **state)
{
	struct state *st;
	struct slot **v = NULL;
	unsigned next_id = 77;
	size_t n = 77;
	char dir[PATH_MAX], sub[PATH_MAX + 8];

	make_dir(dir);
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	assert_int_equal(state_open(NULL, sub, ROOT, &st), 0); /* created */
	assert_int_equal(state_load(st, &next_id, &v, &n), -ENOENT);
	assert_null(v);
	assert_int_equal(next_id, 77);
	assert_int_equal(n, 77);
	state_close(st);
	state_close(NULL);
	rm_dir(sub);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	rm_dir(sub);
	rm_dir(dir);
}

/* K records, then the journal cut at every byte: what loads is the state
 * after the last whole record, never an error, never a warning */
static void test_torn_everywhere(void **state)
{
	enum { K = 40 };
	struct model m, after[K + 1];
	size_t ends[K + 1], len, rec = 0;
	struct capture cap;
	struct state *st;
	char dir[PATH_MAX], scratch[PATH_MAX], jname[64], *text;
	int level = log_get_level();

	make_dir(dir);
	make_dir(scratch);
	model_init(&m, NS);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	for (unsigned id = 0; id < 5; id++)
		put(st, &m, id, id + 1);
	assert_int_equal(compact(st, &m, true), 0);
	assert_int_equal(journals(dir, 0, jname), 1);
	free(slurp(dir, jname, &ends[0]));
	model_copy(&after[0], &m);
	for (unsigned k = 1; k <= K; k++) {
		unsigned id = (k * 5) % NS;
		if (k % 4 == 0 && m.present[id])
			drop(st, &m, id);
		else
			put(st, &m, id, k * 3);
		free(slurp(dir, jname, &ends[k]));
		model_copy(&after[k], &m);
	}
	state_close(st);
	copy_file(dir, scratch, "state.json");
	text = slurp(dir, jname, &len);
	assert_int_equal(len, ends[K]);

	log_set_level(LOG_NOTICE); /* the torn line is reported at info */
	capture_begin(&cap);
	for (size_t cut = 0; cut <= len; cut++) {
		while (rec < K && ends[rec + 1] <= cut)
			rec++;
		spit(scratch, jname, text, cut);
		assert_dir_holds(scratch, &after[rec]);
	}
	capture_end(&cap);
	log_set_level(level);
	assert_string_equal(cap.text, "");
	printf("# %zu cuts of a journal of %d records loaded\n", len + 1, K);

	free(text);
	for (unsigned k = 0; k <= K; k++)
		model_free(&after[k]);
	model_free(&m);
	rm_dir(dir);
	rm_dir(scratch);
}

/* a compaction stopped between any two of its steps loses nothing */
static void test_compaction_interrupted(void **state)
{
	struct model m;
	struct state *st;
	char dir[PATH_MAX], before[PATH_MAX], scen[PATH_MAX], j1[64], j2[64], *snap;
	size_t len;

	make_dir(dir);
	make_dir(before);
	model_init(&m, NS);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	for (unsigned id = 0; id < 8; id++)
		put(st, &m, id, id + 2);
	assert_int_equal(compact(st, &m, true), 0);
	put(st, &m, 2, 50);
	drop(st, &m, 5);
	/* the directory before the compaction */
	assert_int_equal(journals(dir, 0, j1), 1);
	copy_file(dir, before, "state.json");
	copy_file(dir, before, j1);
	assert_int_equal(compact(st, &m, true), 0);
	put(st, &m, 9, 60); /* records after the rotation */
	drop(st, &m, 1);
	assert_int_equal(journals(dir, 0, j2), 1);
	assert_string_not_equal(j1, j2);
	state_close(st);
	assert_dir_holds(dir, &m);

	/* the parent died after the rotation, before the fork */
	make_dir(scen);
	copy_file(before, scen, "state.json");
	copy_file(before, scen, j1);
	copy_file(dir, scen, j2);
	assert_dir_holds(scen, &m);

	/* the child died writing the temporary file */
	snap = slurp(dir, "state.json", &len);
	spit(scen, "state.json.tmp", snap, len / 2);
	assert_dir_holds(scen, &m);
	assert_false(exists(scen, "state.json.tmp")); /* removed at open */

	/* the child wrote it and died before the rename */
	spit(scen, "state.json.tmp", snap, len);
	assert_dir_holds(scen, &m);
	rm_dir(scen);

	/* renamed, the parent died before unlinking the old journal */
	make_dir(scen);
	copy_file(dir, scen, "state.json");
	copy_file(before, scen, j1);
	copy_file(dir, scen, j2);
	assert_dir_holds(scen, &m);
	rm_dir(scen);

	free(snap);
	model_free(&m);
	rm_dir(dir);
	rm_dir(before);
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
}

static void pump_until_gone(struct ev_loop *loop, const char *dir, const char *name)
{
	ev_timer tick;
	int64_t deadline = now_mono_us() + 60 * 1000000LL;

	ev_timer_init(&tick, tick_cb, 0.01, 0.01);
	ev_timer_start(loop, &tick);
	while (exists(dir, name) && now_mono_us() < deadline)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &tick);
	assert_false(exists(dir, name));
}

/* a compaction in a child, records going on meanwhile */
static void test_compaction_child(void **state)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct model m;
	struct state *st;
	char dir[PATH_MAX], old[64];
	int64_t t0, us;

	make_dir(dir);
	model_init(&m, BIG);
	assert_int_equal(state_open(loop, dir, ROOT, &st), 0);
	for (unsigned id = 0; id < BIG; id++)
		put(st, &m, id, id);
	/* more records until the journal is worth a compaction (the floor is in
	 * bytes: at 1,000 slots a few rounds) */
	for (unsigned r = 1; r < 64 && !state_compact_due(st, BIG); r++)
		for (unsigned id = 0; id < BIG; id++)
			put(st, &m, id, id + r);
	assert_int_equal(journals(dir, 0, old), 1);
	assert_true(state_compact_due(st, BIG));
	t0 = now_mono_us();
	assert_int_equal(compact(st, &m, false), 0);
	us = now_mono_us() - t0;
	printf("# compaction of %u slots: the parent returned after %.2f ms\n", BIG, us / 1e3);
	if (scale())
		assert_true(us < 1000 * 1000); /* loose: it is a rotation and a fork */
	assert_false(state_compact_due(st, BIG)); /* one at a time */
	assert_int_equal(compact(st, &m, false), -EBUSY);
	/* the parent goes on: the child serializes what was there at the fork */
	put(st, &m, 17, 4242);
	drop(st, &m, 18);
	put(st, &m, BIG - 1, 5);
	t0 = now_mono_us();
	pump_until_gone(loop, dir, old);
	printf("# the child's snapshot was in place %.0f ms later\n", (now_mono_us() - t0) / 1e3);
	assert_int_equal(journals(dir, 0, NULL), 1);
	assert_false(state_compact_due(st, BIG));
	assert_dir_holds(dir, &m);

	/* state_close waits for a running one */
	assert_int_equal(compact(st, &m, false), 0);
	state_close(st);
	assert_int_equal(journals(dir, 0, NULL), 1);
	assert_false(exists(dir, "state.json.tmp"));
	assert_dir_holds(dir, &m);
	model_free(&m);
	rm_dir(dir);
}

/* a child that cannot write its snapshot: the journals stay */
static void test_compaction_fails(void **state)
{
	struct ev_loop *loop = ev_default_loop(0);
	struct capture cap;
	struct model m;
	struct state *st;
	char dir[PATH_MAX], path[PATH_MAX + 32], first[64];

	make_dir(dir);
	model_init(&m, NS);
	assert_int_equal(state_open(loop, dir, ROOT, &st), 0);
	for (unsigned id = 0; id < 6; id++)
		put(st, &m, id, id);
	assert_int_equal(journals(dir, 0, first), 1);
	snprintf(path, sizeof(path), "%s/state.json.tmp", dir);
	assert_int_equal(mkdir(path, 0755), 0); /* in the way */

	capture_begin(&cap);
	assert_int_equal(compact(st, &m, false), 0);
	put(st, &m, 7, 3);
	state_close(st); /* waits for the child */
	capture_end(&cap);
	assert_non_null(strstr(cap.text, "the journals are kept"));
	assert_true(exists(dir, first));
	assert_int_equal(journals(dir, 0, NULL), 2);
	assert_dir_holds(dir, &m);

	/* in this process, the same */
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	assert_int_equal(compact(st, &m, true), -EISDIR);
	state_close(st);
	assert_dir_holds(dir, &m);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	assert_int_equal(compact(st, &m, true), 0);
	state_close(st);
	assert_int_equal(journals(dir, 0, NULL), 1);
	assert_dir_holds(dir, &m);
	model_free(&m);
	rm_dir(dir);
}

/* one slot object, as a daemon writes it (one from before
 * memory_peak_sampled: its run loads as not sampled) */
static void slot_text(char *buf, size_t len, const char *name, const char *key, const char *state)
{
	snprintf(buf, len,
		 "{\"name\":\"%s\",\"key\":\"%s\",\"class\":\"\",\"state\":\"%s\",\"runs\":1,\"cgroup_id\":9,"
		 "\"idle_since\":0,\"recent_runs\":[{\"started\":10,\"ended\":20,\"exit_status\":0,"
		 "\"memory_peak\":4096,\"oom_kills\":0,\"oom_base\":0}]}",
		 name, key, state);
}

static void expect_slot(struct slot *s, const char *name, const char *key)
{
	assert_string_equal(s->name, name);
	assert_string_equal(s->key, key);
	assert_int_equal(s->runs, 1);
	assert_int_equal(s->nrecent, 1);
	assert_int_equal(s->recent[0].memory_peak, 4096);
	assert_false(s->recent[0].peak_sampled);
}

static void test_bad_entries(void **state)
{
	char dir[PATH_MAX], a[1024], b[1024], c[1024], text[8192];
	struct capture cap;
	struct state *st;
	struct slot **v;
	unsigned next_id;
	size_t n;

	make_dir(dir);
	slot_text(a, sizeof(a), "slot-1", "web", "idle");
	slot_text(b, sizeof(b), "slot-2", "bad key!", "idle");
	slot_text(c, sizeof(c), "slot-3", "db", "running");
	snprintf(text, sizeof(text), "{\"version\":2,\"root\":\"%s\",\"next_id\":4,\"journal\":5,\"slots\":[%s,%s,%s]}",
		 ROOT, a, b, c);
	spit(dir, "state.json", text, strlen(text));
	slot_text(a, sizeof(a), "slot-4", "new", "running");
	slot_text(b, sizeof(b), "slot-5", "x", "zombie");
	snprintf(text, sizeof(text),
		 "{\"version\":2,\"root\":\"%s\",\"journal\":5}\n"
		 "{\"put\":%s,\"next_id\":5}\n"
		 "garbage\n"
		 "{\"put\":%s,\"next_id\":6}\n"
		 "{\"drop\":\"slot-../x\",\"next_id\":6}\n"
		 "{\"drop\":\"slot-3\",\"next_id\":6}\n"
		 "{\"put\":{\"name\":\"slot-6\"}",
		 ROOT, a, b);
	spit(dir, "journal.5", text, strlen(text));
	spit(dir, "journal.4", "not even JSON\n", 14); /* in the snapshot: not read */

	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	capture_begin(&cap);
	assert_int_equal(state_load(st, &next_id, &v, &n), 0);
	capture_end(&cap);
	state_close(st);
	assert_non_null(strstr(cap.text, "/state.json: slot entry 1 (slot-2) dropped: bad key"));
	assert_non_null(strstr(cap.text, "/journal.5: line 3 dropped: not JSON"));
	assert_non_null(strstr(cap.text, "/journal.5: line 4 dropped: unknown state"));
	assert_non_null(strstr(cap.text, "/journal.5: line 5 dropped"));
	assert_null(strstr(cap.text, "journal.4"));
	assert_null(strstr(cap.text, "line 7 dropped")); /* torn, not bad */
	assert_int_equal(n, 2);
	expect_slot(v[0], "slot-1", "web");
	expect_slot(v[1], "slot-4", "new");
	assert_int_equal(next_id, 6); /* the last record that applied */
	free_slots(v, n);
	rm_dir(dir);
}

/* state.json as the daemon wrote it before journals: every key is kept */
static void test_version1(void **state)
{
	char dir[PATH_MAX], a[1024], b[1024], text[4096], *snap;
	struct state *st;
	struct slot **v;
	unsigned next_id;
	size_t n;

	make_dir(dir);
	slot_text(a, sizeof(a), "slot-0", "web", "idle");
	slot_text(b, sizeof(b), "slot-7", "db", "running");
	snprintf(text, sizeof(text), "{\"version\":1,\"root\":\"%s\",\"next_id\":8,\"slots\":[%s,%s]}", ROOT, b, a);
	spit(dir, "state.json", text, strlen(text));
	spit(dir, "state.json.tmp.1234", "{", 1); /* an older daemon's temporary file */
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	assert_false(exists(dir, "state.json.tmp.1234"));
	assert_int_equal(state_load(st, &next_id, &v, &n), 0);
	assert_int_equal(n, 2);
	expect_slot(v[0], "slot-0", "web");
	assert_int_equal(v[0]->state, SLOT_IDLE);
	expect_slot(v[1], "slot-7", "db");
	assert_int_equal(v[1]->state, SLOT_RUNNING);
	assert_int_equal(next_id, 8);
	free_slots(v, n);
	/* and the next snapshot is version 2 */
	assert_int_equal(state_compact(st, NULL, 0, 8, true), 0);
	state_close(st);
	snap = slurp(dir, "state.json", &n);
	assert_non_null(strstr(snap, "\"version\":2"));
	free(snap);
	assert_int_equal(journals(dir, 0, NULL), 1);
	rm_dir(dir);
}

static void test_other_root(void **state)
{
	struct state *st;
	struct slot **v;
	struct model m;
	unsigned next_id;
	size_t n;
	char dir[PATH_MAX];

	make_dir(dir);
	model_init(&m, NS);
	assert_int_equal(state_open(NULL, dir, "/sys/fs/cgroup/other", &st), 0);
	put(st, &m, 1, 1); /* a journal only */
	state_close(st);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	assert_int_equal(state_load(st, &next_id, &v, &n), -EINVAL);
	state_close(st);
	/* a snapshot */
	assert_int_equal(state_open(NULL, dir, "/sys/fs/cgroup/other", &st), 0);
	assert_int_equal(compact(st, &m, true), 0);
	state_close(st);
	assert_int_equal(journals(dir, 0, NULL), 1);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	assert_int_equal(state_load(st, &next_id, &v, &n), -EINVAL);
	state_close(st);
	/* a snapshot that is not JSON */
	rm_dir(dir);
	make_dir(dir);
	spit(dir, "state.json", "{\"version\": 2, \"slots\": [", 25);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	assert_int_equal(state_load(st, &next_id, &v, &n), -EINVAL);
	state_close(st);
	model_free(&m);
	rm_dir(dir);
}

static double time_puts(struct state *st, struct model *m, unsigned nslots)
{
	int64_t t0 = now_mono_us();

	for (unsigned i = 0; i < BIG; i++)
		put(st, m, i % nslots, i);
	return (double)(now_mono_us() - t0) / BIG;
}

/* a record costs the same whatever the number of slots */
static void test_put_cost(void **state)
{
	struct model m;
	struct state *st;
	double small, big;
	char dir[PATH_MAX];

	if (!scale())
		skip(); /* a measurement: make check-scale */
	make_dir(dir);
	model_init(&m, BIG);
	assert_int_equal(state_open(NULL, dir, ROOT, &st), 0);
	for (unsigned id = 0; id < 100; id++)
		put(st, &m, id, id);
	assert_int_equal(compact(st, &m, true), 0);
	small = time_puts(st, &m, 100);
	for (unsigned id = 0; id < BIG; id++)
		put(st, &m, id, id);
	assert_int_equal(compact(st, &m, true), 0);
	big = time_puts(st, &m, BIG);
	printf("# state_put: %.1f us at 100 slots, %.1f us at %u slots\n", small, big, BIG);
	assert_true(small < 5000 && big < 5000); /* loose sanity */
	state_close(st);
	assert_dir_holds(dir, &m);
	model_free(&m);
	rm_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),	    cmocka_unit_test(test_enoent), cmocka_unit_test(test_totals),
		cmocka_unit_test(test_torn_everywhere),	    cmocka_unit_test(test_compaction_interrupted),
		cmocka_unit_test(test_compaction_child),    cmocka_unit_test(test_compaction_fails),
		cmocka_unit_test(test_bad_entries),	    cmocka_unit_test(test_version1),
		cmocka_unit_test(test_other_root),	    cmocka_unit_test(test_put_cost),
	};

	log_init("test_state");
	log_set_level(LOG_WARNING);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
