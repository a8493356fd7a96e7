/* state.c - what must survive a daemon restart, in <state_dir>/state.json
 *
 * The file is rewritten whole through rename(2) after every transition, so a
 * daemon killed at any moment leaves either the previous or the new content.
 * It lives on /run (tmpfs): it needs to survive the daemon, not a reboot, so
 * it is not fsync'ed. */
#include "config.h"

#include "state.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"
#include "util.h"

#define STATE_VERSION 1
#define STATE_FILE "state.json"

static json_t *run_to_json(const struct run *r)
{
	return json_pack("{s:I, s:I, s:i, s:I, s:I, s:I}", "started", (json_int_t)r->started_us, "ended",
			 (json_int_t)r->ended_us, "exit_status", r->exit_status, "memory_peak",
			 (json_int_t)r->memory_peak, "oom_kills", (json_int_t)r->oom_kills, "oom_base",
			 (json_int_t)r->oom_base);
}

static json_t *slot_to_json(const struct slot *s)
{
	json_t *runs = json_array();
	unsigned n = s->nrecent < SLOT_RECENT_RUNS ? s->nrecent : SLOT_RECENT_RUNS;

	for (unsigned i = 0; i < n; i++) {
		unsigned idx = (s->nrecent - n + i) % SLOT_RECENT_RUNS;
		json_array_append_new(runs, run_to_json(&s->recent[idx]));
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "name", s->name, "key", s->key, "class",
			 s->class_name, "state", slot_state_name(s->state), "runs", (json_int_t)s->runs,
			 "cgroup_id", (json_int_t)s->cgroup_id, "idle_since", (json_int_t)s->idle_since_us,
			 "recent_runs", runs);
}

int state_save(const char *dir, const char *root, unsigned next_id, const struct slot *const *slots, size_t n)
{
	char path[PATH_MAX];
	json_t *arr = json_array(), *top;
	char *text;
	int r;

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, slot_to_json(slots[i]));
	top = json_pack("{s:i, s:s, s:i, s:o}", "version", STATE_VERSION, "root", root, "next_id", (int)next_id,
			"slots", arr);
	if (!top)
		return -ENOMEM;
	text = json_dumps(top, JSON_COMPACT);
	json_decref(top);
	if (!text)
		return -ENOMEM;
	r = mkdir_p(dir, 0755);
	if (r == 0 && snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE) >= (int)sizeof(path))
		r = -ENAMETOOLONG;
	if (r == 0)
		r = file_write_atomic(path, text, strlen(text), 0644);
	free(text);
	return r;
}

static int run_from_json(json_t *j, struct run *r)
{
	json_int_t started, ended, peak, ooms, base;
	int status;

	if (json_unpack(j, "{s:I, s:I, s:i, s:I, s:I, s:I}", "started", &started, "ended", &ended, "exit_status",
			&status, "memory_peak", &peak, "oom_kills", &ooms, "oom_base", &base) < 0)
		return -EINVAL;
	r->started_us = started;
	r->ended_us = ended;
	r->exit_status = status;
	r->memory_peak = (uint64_t)peak;
	r->oom_kills = (uint64_t)ooms;
	r->oom_base = (uint64_t)base;
	return 0;
}

static int slot_from_json(json_t *j, struct slot *s)
{
	const char *name, *key, *cls, *state;
	json_int_t runs, id, idle;
	json_t *recent, *run;
	size_t i;

	if (json_unpack(j, "{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "name", &name, "key", &key, "class", &cls,
			"state", &state, "runs", &runs, "cgroup_id", &id, "idle_since", &idle, "recent_runs",
			&recent) < 0 ||
	    !json_is_array(recent))
		return -EINVAL;
	if (strlen(name) >= sizeof(s->name) || strncmp(name, SLOT_PREFIX, strlen(SLOT_PREFIX)) != 0 ||
	    strchr(name, '/') || strlen(cls) >= sizeof(s->class_name) || runs < 0)
		return -EINVAL;
	if (*key) {
		const char *why;
		if (key_validate(key, &why) < 0)
			return -EINVAL;
	}
	if (slot_state_parse(state, &s->state) < 0)
		return -EINVAL;
	strcpy(s->name, name);
	strcpy(s->key, key);
	strcpy(s->class_name, cls);
	s->runs = (uint64_t)runs;
	s->cgroup_id = (uint64_t)id;
	s->idle_since_us = idle;
	s->nrecent = 0;
	json_array_foreach(recent, i, run) {
		if (i >= SLOT_RECENT_RUNS || run_from_json(run, &s->recent[i]) < 0)
			return -EINVAL;
		s->nrecent++;
	}
	return 0;
}

static int slots_from_json(json_t *arr, struct slot ***out, size_t *n)
{
	size_t cnt = json_array_size(arr), i;
	struct slot **v = calloc(cnt ? cnt : 1, sizeof(*v));
	json_t *j;

	if (!v)
		return -ENOMEM;
	json_array_foreach(arr, i, j) {
		v[i] = calloc(1, sizeof(**v));
		if (!v[i] || slot_from_json(j, v[i]) < 0) {
			for (size_t k = 0; k <= i; k++)
				free(v[k]);
			free(v);
			return -EINVAL;
		}
	}
	*out = v;
	*n = cnt;
	return 0;
}

int state_load(const char *dir, const char *root, unsigned *next_id, struct slot ***out, size_t *n)
{
	char path[PATH_MAX];
	json_t *top, *slots;
	const char *saved_root;
	int version, next, r;

	if (snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	top = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	if (!top)
		return access(path, F_OK) == 0 ? -EINVAL : -ENOENT;
	r = -EINVAL;
	if (json_unpack(top, "{s:i, s:s, s:i, s:o}", "version", &version, "root", &saved_root, "next_id", &next,
			"slots", &slots) < 0 ||
	    version != STATE_VERSION || strcmp(saved_root, root) != 0 || !json_is_array(slots) || next < 0)
		goto out;
	r = slots_from_json(slots, out, n);
	if (r == 0)
		*next_id = (unsigned)next;
out:
	json_decref(top);
	return r;
}
