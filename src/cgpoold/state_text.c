/* state_text.c - one slot as the JSON text of the state files.
 *
 * A journal record is written on every transition a client waits for, so
 * the text is built straight into a buffer instead of through a tree of JSON
 * values. The loader (state_load.c) reads it with jansson; test_state checks
 * that what is written loads back the same. */
#include "config.h"

#include "state_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slot.h"
#include "res.h"

void state_text_init(struct state_text *t, char *buf, size_t cap)
{
	*t = (struct state_text){ .p = buf, .cap = buf ? cap : 0 };
}

void state_text_fini(struct state_text *t)
{
	if (t->heap)
		free(t->p);
	t->p = NULL;
	t->len = t->cap = 0;
	t->heap = false;
}

/* room for n more bytes and a NUL */
static bool reserve(struct state_text *t, size_t n)
{
	size_t cap = t->cap ? t->cap : 256;
	char *p;

	if (t->err)
		return false;
	if (t->len + n + 1 <= t->cap)
		return true;
	while (cap < t->len + n + 1)
		cap *= 2;
	p = t->heap ? realloc(t->p, cap) : malloc(cap);
	if (!p) {
		t->err = -ENOMEM;
		return false;
	}
	if (!t->heap && t->len)
		memcpy(p, t->p, t->len);
	t->p = p;
	t->cap = cap;
	t->heap = true;
	return true;
}

void state_text_put(struct state_text *t, const char *s, size_t n)
{
	if (!reserve(t, n))
		return;
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

void state_text_printf(struct state_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->err || !t->p ? NULL : t->p + t->len, t->err ? 0 : t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->err = -EINVAL;
		return;
	}
	if (t->err || t->len + (size_t)n < t->cap) {
		t->len += t->err ? 0 : (size_t)n;
		return;
	}
	if (!reserve(t, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* s as a JSON string: quotes, backslashes and control bytes escaped; other
 * bytes as they are (keys and names arrive as valid UTF-8) */
void state_text_str(struct state_text *t, const char *s)
{
	const char *run = s;

	state_text_put(t, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		state_text_put(t, run, (size_t)(s - run));
		if (c == '"' || c == '\\')
			state_text_printf(t, "\\%c", c);
		else
			state_text_printf(t, "\\u%04x", c);
		run = s + 1;
	}
	state_text_put(t, run, (size_t)(s - run));
	state_text_put(t, "\"", 1);
}

static void run_text(struct state_text *t, const struct run *r)
{
	state_text_printf(t,
			  "{\"started\":%lld,\"ended\":%lld,\"exit_status\":%d,\"memory_peak\":%lld,"
			  "\"memory_peak_sampled\":%s,\"oom_kills\":%lld,\"oom_base\":%lld,\"signal\":%d,"
			  "\"unsupervised\":%s}",
			  (long long)r->started_us, (long long)r->ended_us, r->exit_status, (long long)r->memory_peak,
			  r->peak_sampled ? "true" : "false", (long long)r->oom_kills, (long long)r->oom_base, r->signal,
			  r->unsupervised ? "true" : "false");
}

/* the recent runs oldest first: at most SLOT_RECENT_RUNS of them */
void state_text_slot(struct state_text *t, const struct slot *s)
{
	unsigned n = s->nrecent < SLOT_RECENT_RUNS ? s->nrecent : SLOT_RECENT_RUNS;

	state_text_put(t, "{\"name\":", 8);
	state_text_str(t, s->name);
	state_text_put(t, ",\"key\":", 7);
	state_text_str(t, s->key);
	state_text_put(t, ",\"class\":", 9);
	state_text_str(t, s->class_name);
	state_text_printf(t, ",\"state\":\"%s\",\"runs\":%lld,\"cgroup_id\":%lld,\"idle_since\":%lld,\"recent_runs\":[",
			  slot_state_name(s->state), (long long)s->runs, (long long)s->cgroup_id,
			  (long long)s->idle_since_us);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			state_text_put(t, ",", 1);
		run_text(t, &s->recent[(s->nrecent - n + i) % SLOT_RECENT_RUNS]);
	}
	state_text_printf(t, "],\"owner_uid\":%lld,\"released\":%s,\"run_limits\":[", (long long)s->owner_uid,
			  s->released ? "true" : "false");
	for (unsigned i = 0, first = 1; i < RES_NKEYS; i++) {
		if (!(s->run_limits & (1U << i)))
			continue;
		if (!first)
			state_text_put(t, ",", 1);
		state_text_str(t, res_key(i)->name);
		first = 0;
	}
	state_text_put(t, "]", 1);
	if (s->tenant && s->tenant->job) {
		const struct tenant *tn = s->tenant;
		state_text_put(t, ",\"tenant\":{\"job\":", 17);
		state_text_str(t, tn->job);
		state_text_printf(t, ",\"release\":%s,\"ending\":%s,\"holders\":[", tn->release ? "true" : "false",
				  tn->ending ? "true" : "false");
		for (const struct holder *h = tn->holders; h; h = h->next)
			state_text_printf(t, "%s[%d,%llu]", h == tn->holders ? "" : ",", (int)h->pid,
					  (unsigned long long)h->start);
		state_text_put(t, "]}", 2);
	}
	state_text_put(t, "}", 1);
}

void state_text_totals(struct state_text *t, const struct state_totals *tot)
{
	state_text_printf(t, ",\"runs_placed\":%llu,\"slot_cgroups\":%llu", (unsigned long long)tot->runs_placed,
			  (unsigned long long)tot->slot_cgroups);
}
