/* text.c - how cgpoolctl's commands show numbers */
#include "config.h"

#include "text.h"

#include <stdio.h>

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
