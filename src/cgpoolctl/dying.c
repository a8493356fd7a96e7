/* dying.c - cgpoolctl dying: the census (cg_census.c) as text */
#include "config.h"

#include "dying.h"

#include <stdio.h>
#include <string.h>

#include "cg_census.h"

/* ------------------------------------------------------------------ text */

static void size_text(json_t *v, char *buf, size_t len)
{
	double d = (double)json_integer_value(v);
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f%c" : "%.0f%c", d, "BKMGT"[u]);
}

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : "?";
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
	if (json_is_integer(json_object_get(c, "percpu_bytes"))) {
		size_text(json_object_get(c, "percpu_bytes"), buf, sizeof(buf));
		printf("per-CPU memory: %s (machine-wide: /proc/meminfo Percpu)\n", buf);
	}
	if (json_is_string(json_object_get(c, "subtrees_note")))
		print_wrapped("subtrees", str(c, "subtrees_note"));
	else if (json_array_size(subtrees) > 0)
		printf("subtrees (where they were removed):\n  %7s  %s\n", "DYING", "PATH");
	else if (json_is_integer(json_object_get(c, "total")))
		printf("subtrees: none holds dying memory cgroups\n");
	json_array_foreach(subtrees, i, s)
		printf("  %7lld  %s\n", num(s, "dying"), str(s, "path"));
	if (num(c, "subtrees_other") > 0)
		printf("  %7lld  (in other subtrees)\n", num(c, "subtrees_other"));
	if (!json_is_true(json_object_get(c, "complete")))
		printf("incomplete: %lld path(s) could not be read (see standard error)\n", num(c, "unreadable_count"));
}
