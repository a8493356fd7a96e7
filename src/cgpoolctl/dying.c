/* dying.c - cgpoolctl dying: the census (cg_census.c) as text */
#include "config.h"

#include "dying.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "call.h"
#include "cg_census.h"
#include "cgpool.h"
#include "text.h"

/* ---------------------------------------------------------------- daemon */

static json_t *daemon_part(json_t *census, json_t *d)
{
	json_t *placed = json_object_get(d, "runs_placed"), *made = json_object_get(d, "slot_cgroups_created");
	json_t *hist = json_object_get(d, "census_history"), *total = json_object_get(census, "total");
	json_t *first = json_object_get(hist, "first"), *out;

	if (!json_is_integer(placed) || !json_is_integer(made))
		return NULL; /* a daemon from before these were kept */
	out = json_pack("{s:O, s:O, s:I}", "runs_placed", placed, "slot_cgroups_created", made, "memcgs_saved",
			json_integer_value(placed) > json_integer_value(made)
				? json_integer_value(placed) - json_integer_value(made) : (json_int_t)0);
	if (!out || !json_is_object(hist))
		return out;
	hist = json_deep_copy(hist);
	if (json_is_integer(json_object_get(first, "time"))) /* to now, not to the daemon's last census */
		json_object_set_new(hist, "span_seconds",
				    json_integer((json_int_t)time(NULL) - json_integer_value(json_object_get(first, "time"))));
	if (json_is_integer(total) && json_is_integer(json_object_get(first, "total")))
		json_object_set_new(hist, "change_since_first",
				    json_integer(json_integer_value(total) - json_integer_value(json_object_get(first, "total"))));
	json_object_set_new(out, "history", hist);
	return out;
}

void dying_daemon(const char *socket, json_t *census)
{
	struct cgpool *c = NULL;
	char err[512];
	json_t *j = NULL, *part = NULL;
	int r = cgpool_connect_timeout(socket, DYING_DAEMON_TIMEOUT_MS, &c);

	if (r == 0)
		r = call_json(c, "Status", "{}", &j);
	if (r == 0 && !(part = daemon_part(census, json_object_get(j, "daemon"))))
		r = -EPROTO;
	if (r < 0) {
		snprintf(err, sizeof(err), "cannot reach cgpoold at %s: %s", socket,
			 r == -EPROTO ? "it keeps no history (an older version)" : strerror(-r));
		json_object_set_new(census, "daemon", json_null());
		json_object_set_new(census, "daemon_error", json_string(err));
	} else {
		json_object_set_new(part, "socket", json_string(socket));
		json_object_set_new(census, "daemon", part);
	}
	json_decref(j);
	cgpool_close(c);
}

/* ------------------------------------------------------------------ text */

static const char *str(json_t *o, const char *k)
{
	return text_str_field(o, k, "?");
}

static long long num(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* "LABEL: TEXT", TEXT wrapped at blanks to fit 80 columns, then indented */
static void print_wrapped(const char *label, const char *text)
{
	int col = printf("%s:", label);

	while (*text) {
		size_t n = strcspn(text, " ");

		if (col + 1 + (int)n > 79 && col > 4) {
			printf("\n   ");
			col = 3;
		}
		col += printf(" %.*s", (int)n, text);
		text += n;
		text += strspn(text, " ");
	}
	putchar('\n');
}

/* "3h 12m", "5m 2s" */
static void span_text(long long s, char *buf, size_t len)
{
	if (s >= 86400)
		snprintf(buf, len, "%lldd %lldh", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		snprintf(buf, len, "%lldh %lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, len, "%lldm %llds", s / 60, s % 60);
}

static void rate_text(json_t *v, char *buf, size_t len)
{
	if (json_is_number(v))
		snprintf(buf, len, "%+.1f/hour", json_number_value(v));
	else
		snprintf(buf, len, "not yet");
}

static void print_daemon(json_t *c)
{
	json_t *d = json_object_get(c, "daemon"), *h = json_object_get(d, "history");
	json_t *g = json_object_get(h, "growth_per_hour");
	char span[32], all[32], hour[32], day[32];

	if (!json_is_object(d)) {
		if (json_is_string(json_object_get(c, "daemon_error")))
			print_wrapped("daemon", str(c, "daemon_error"));
		return;
	}
	printf("saved by cgpool: %lld runs placed in %lld slot cgroups made: %lld memory\n"
	       "    cgroups the usual way would have made and left to die\n",
	       num(d, "runs_placed"), num(d, "slot_cgroups_created"), num(d, "memcgs_saved"));
	if (!json_is_integer(json_object_get(h, "change_since_first"))) {
		printf("growth: no history yet\n");
		return;
	}
	span_text(num(h, "span_seconds"), span, sizeof(span));
	rate_text(json_object_get(g, "all"), all, sizeof(all));
	rate_text(json_object_get(g, "last_hour"), hour, sizeof(hour));
	rate_text(json_object_get(g, "last_day"), day, sizeof(day));
	printf("growth: %+lld since the daemon's first census %s ago (%s);\n    last hour %s, last day %s\n",
	       num(h, "change_since_first"), span, all, hour, day);
}

void dying_print(json_t *c)
{
	json_t *subtrees = json_object_get(c, "subtrees"), *s;
	char buf[64];
	size_t i;

	if (json_is_integer(json_object_get(c, "total")))
		printf("dying memory cgroups: %lld\n", num(c, "total"));
	else
		printf("dying memory cgroups: unknown\n");
	if (json_is_string(json_object_get(c, "source")))
		print_wrapped("  from", str(c, "source"));
	if (json_is_string(json_object_get(c, "layout")))
		printf("layout: %s, memory controller on cgroup %s at %s\n", str(c, "layout"), str(c, "memory"),
		       str(c, "mount"));
	if (json_is_integer(json_object_get(c, "live"))) {
		printf("live memory cgroups: %lld\n", num(c, "live"));
		print_wrapped("  from", str(c, "live_source"));
	}
	if (json_is_integer(json_object_get(c, "memcg_ids_left"))) {
		printf("memcg IDs left: %lld of %llu\n", num(c, "memcg_ids_left"), CG_MEMCG_ID_MAX);
		print_wrapped("  counted", str(c, "memcg_ids_rule"));
	}
	if (json_is_integer(json_object_get(c, "dying_memory_bytes"))) {
		text_size_json(json_object_get(c, "dying_memory_bytes"), buf, sizeof(buf));
		printf("memory they hold: %s (charged below the subtrees outside their live\n    children)\n", buf);
	}
	if (json_is_integer(json_object_get(c, "percpu_bytes"))) {
		text_size_json(json_object_get(c, "percpu_bytes"), buf, sizeof(buf));
		printf("per-CPU memory: %s (machine-wide: /proc/meminfo Percpu)\n", buf);
	}
	print_daemon(c);
	if (json_is_string(json_object_get(c, "subtrees_note")))
		print_wrapped("subtrees", str(c, "subtrees_note"));
	else if (json_array_size(subtrees) > 0)
		printf("subtrees (where they were removed):\n  %7s  %7s  %s\n", "DYING", "MEMORY", "PATH");
	else if (json_is_integer(json_object_get(c, "total")))
		printf("subtrees: none holds dying memory cgroups\n");
	json_array_foreach(subtrees, i, s) {
		if (json_is_integer(json_object_get(s, "memory_bytes")))
			text_size_json(json_object_get(s, "memory_bytes"), buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "-");
		printf("  %7lld  %7s  %.60s\n", num(s, "dying"), buf, str(s, "path"));
	}
	if (num(c, "subtrees_other") > 0)
		printf("  %7lld  %7s  (in other subtrees)\n", num(c, "subtrees_other"), "");
	if (!json_is_true(json_object_get(c, "complete")))
		printf("incomplete: %lld path(s) could not be read (see standard error)\n", num(c, "unreadable_count"));
}
