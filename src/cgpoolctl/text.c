/* text.c - how cgpoolctl's commands show what the daemon answers */
#include "config.h"

#include "text.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void text_size(long long v, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double d = (double)v;
	int u = -1;

	if (v < 1024) {
		snprintf(buf, len, "%lldB", v);
		return;
	}
	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f%c", d, units[u]);
}

void text_size_json(json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		text_size((long long)json_integer_value(v), buf, len);
	else
		snprintf(buf, len, "-");
}

void text_time(json_t *v, char *buf, size_t len)
{
	time_t t;
	struct tm tm;

	if (!json_is_integer(v)) {
		snprintf(buf, len, "-");
		return;
	}
	t = (time_t)(json_integer_value(v) / 1000000);
	if (!localtime_r(&t, &tm) || strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
}

/* fields shown in human units */
static const char *const size_fields[] = { "memory_current", "memory_peak", "lru_bytes", "flushed_bytes" };
static const char *const time_fields[] = { "started", "ended", "idle_since" };

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static void print_scalar(const char *key, json_t *v)
{
	char buf[64];

	if (in_list(key, size_fields, sizeof(size_fields) / sizeof(size_fields[0]))) {
		text_size_json(v, buf, sizeof(buf));
		fputs(buf, stdout);
	} else if (in_list(key, time_fields, sizeof(time_fields) / sizeof(time_fields[0]))) {
		text_time(v, buf, sizeof(buf));
		fputs(buf, stdout);
	} else if (json_is_string(v)) {
		fputs(json_string_value(v), stdout);
	} else if (json_is_boolean(v)) {
		fputs(json_is_true(v) ? "yes" : "no", stdout);
	} else if (json_is_integer(v)) {
		printf("%lld", (long long)json_integer_value(v));
	} else {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		fputs(s ? s : "?", stdout);
		free(s);
	}
}

/* "key: value" lines; nested objects indented; absent and null fields skipped */
void text_print_object(json_t *obj, int indent)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		if (json_is_null(v))
			continue;
		printf("%*s%s:", indent, "", key);
		if (json_is_object(v)) {
			putchar('\n');
			text_print_object(v, indent + 2);
			continue;
		}
		putchar(' ');
		print_scalar(key, v);
		putchar('\n');
	}
}

void text_print_json(json_t *v)
{
	size_t flags = JSON_ENCODE_ANY | (isatty(STDOUT_FILENO) ? JSON_INDENT(2) : JSON_COMPACT);

	json_dumpf(v, stdout, flags);
	putchar('\n');
}

const char *text_str_field(json_t *obj, const char *name, const char *dflt)
{
	json_t *v = json_object_get(obj, name);

	return json_is_string(v) ? json_string_value(v) : dflt;
}
