/* conf_value.c - the keys of each config section: what their values parse to
 * and how they print. The parsers are pure: they say what is wrong with a
 * value in a buffer, and conf.c puts the file and line in front. */
#include "config.h"

#include "conf_value.h"
#include "res.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <syslog.h>

#define DUR_MAX (8760ULL * 3600 * 1000) /* 8760h, a year */
#define WS " \t\r\n\v\f"

/* enum fields are written as int */
_Static_assert(sizeof(enum retire_mode) == sizeof(int), "enum retire_mode is not an int");
_Static_assert(sizeof(enum restart_policy) == sizeof(int), "enum restart_policy is not an int");

static const char *const ctrl_names[] = { "memory", "pids", "cpu", "io", "cpuset" }; /* enum conf_ctrl bits */
static const char *const mode_names[] = { "auto", "reparent", "drain", "keep" };
static const char *const restart_names[] = { "no", "on-failure", "always" };
static const char *const level_names[] = {
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

/* ---- helpers */

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* `KEY: invalid WHAT "VALUE" (HINT)`: the one form for a value that does not parse */
__attribute__((format(printf, 6, 7))) static int bad(char *err, size_t len, const char *key, const char *what,
						     const char *v, const char *hint, ...)
{
	char h[200];
	va_list ap;
	int n = (int)strnlen(v, 81);

	va_start(ap, hint);
	vsnprintf(h, sizeof(h), hint, ap);
	va_end(ap);
	return fail(err, len, "%s: invalid %s \"%.*s%s\" (%s)", key, what, n > 80 ? 77 : n, v, n > 80 ? "..." : "",
		    h);
}

/* index of s in names (NULL entries are holes), or -1 */
static int lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

/* "a, b, c or d" */
static const char *join_names(char *buf, size_t len, const char *const *names, size_t n)
{
	size_t off = 0, left = 0;

	for (size_t i = 0; i < n; i++)
		left += names[i] != NULL;
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		if (!names[i])
			continue;
		left--;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off == 0 ? "" : left == 0 ? " or " : ", ",
					names[i]);
	}
	return buf;
}

/* The next blank-separated word of *p, copied to w: its length, 0 at the
 * end, -EINVAL when it does not fit. */
static int next_word(const char **p, char *w, size_t len)
{
	size_t n;

	*p += strspn(*p, WS);
	n = strcspn(*p, WS);
	if (n >= len)
		return -EINVAL;
	memcpy(w, *p, n);
	w[n] = '\0';
	*p += n;
	return (int)n;
}

static int set_str(char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* an absolute cgroup path without empty, "." or ".." components */
static bool cgpath_ok(const char *p)
{
	if (p[0] != '/' || strlen(p) >= PATH_MAX)
		return false;
	if (p[1] == '\0')
		return true;
	for (p++;; p++) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return false;
		p += n;
		if (*p == '\0')
			return true;
	}
}

/* ---- parsers */

static int p_match(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	if (strchr(v, '/'))
		return fail(err, len, "%s: pattern \"%s\" can never match, keys do not contain '/'", k->name, v);
	return set_str(field, v);
}

/* a glob for keys with %u (uid) and %n (user name): no '/', no other % */
static int p_user_keys(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	if (strchr(v, '/'))
		return fail(err, len, "%s: pattern \"%s\" can never match, keys do not contain '/'", k->name, v);
	for (const char *p = strchr(v, '%'); p; p = strchr(p + 2, '%'))
		if (p[1] != 'u' && p[1] != 'n' && p[1] != '%')
			return bad(err, len, k->name, "pattern", v, "%%u is the uid, %%n the user name, %%%% a %%");
	return set_str(field, v);
}

static int p_path(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	if (v[0] != '/' || strlen(v) >= PATH_MAX)
		return bad(err, len, k->name, "path", v, "use an absolute path");
	return set_str(field, v);
}

static int p_socket(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path);

	if (v[0] != '/' || strlen(v) >= max)
		return bad(err, len, k->name, "path", v, "use an absolute path shorter than %zu bytes", max);
	return set_str(field, v);
}

static int p_root(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	if (strcmp(v, "auto") != 0 && !cgpath_ok(v))
		return bad(err, len, k->name, "cgroup path", v,
			   "use auto, or an absolute path such as /cgpool without \"//\", \".\" or \"..\"");
	return set_str(field, v);
}

/* a user or group name that exists; empty: not set */
static int p_account(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	const char *what = k->flags & CONF_KEY_GROUP ? "group" : "user";
	bool found;
	char **dst = field;

	if (*v == '\0') {
		free(*dst);
		*dst = NULL;
		return 0;
	}
	errno = 0;
	found = k->flags & CONF_KEY_GROUP ? getgrnam(v) != NULL : getpwnam(v) != NULL;
	if (!found && errno && errno != ENOENT && errno != ESRCH && errno != EBADF && errno != EPERM)
		return fail(err, len, "%s: cannot look up %s \"%s\": %s", k->name, what, v, strerror(errno));
	if (!found)
		return fail(err, len, "%s: no such %s \"%s\"", k->name, what, v);
	return set_str(dst, v);
}

static int p_ctrls(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	char w[32], names[64];
	unsigned mask = 0;
	int i, n;

	join_names(names, sizeof(names), ctrl_names, ARRAY_SIZE(ctrl_names));
	while ((n = next_word(&v, w, sizeof(w))) > 0) {
		i = lookup(ctrl_names, ARRAY_SIZE(ctrl_names), w);
		if (i < 0)
			return fail(err, len, "%s: unknown controller \"%s\" (use %s)", k->name, w, names);
		mask |= 1u << i;
	}
	if (n < 0)
		return fail(err, len, "%s: unknown controller \"%.31s...\" (use %s)", k->name, v + strspn(v, WS),
			    names);
	if (!(mask & CONF_CTRL_MEMORY))
		return fail(err, len, "%s: memory is missing (cgpool always manages memory; add it to the list)",
			    k->name);
	*(unsigned *)field = mask;
	return 0;
}

static int p_uint(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	uint64_t n;

	if (parse_uint(v, k->min, k->max, &n) < 0)
		return bad(err, len, k->name, "number", v, "use a number from %llu to %llu",
			   (unsigned long long)k->min, (unsigned long long)k->max);
	*(unsigned *)field = (unsigned)n;
	return 0;
}

/* a number, or auto (CONF_AUTO) */
static int p_uint_auto(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	uint64_t n;

	if (strcmp(v, "auto") == 0) {
		*(unsigned *)field = CONF_AUTO;
		return 0;
	}
	if (parse_uint(v, k->min, k->max, &n) < 0)
		return bad(err, len, k->name, "number", v, "use auto or a number from %llu to %llu",
			   (unsigned long long)k->min, (unsigned long long)k->max);
	*(unsigned *)field = (unsigned)n;
	return 0;
}

static int p_duration(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	char lo[24], hi[24];
	uint64_t ms;
	int r = parse_duration_ms(v, &ms);

	if (r == -EINVAL)
		return bad(err, len, k->name, "duration", v, "use a number with ms, s, m or h");
	if (r < 0 || ms < k->min || ms > k->max) {
		format_duration_ms(lo, sizeof(lo), k->min);
		format_duration_ms(hi, sizeof(hi), k->max);
		return bad(err, len, k->name, "duration", v, "use %s to %s", lo, hi);
	}
	*(uint64_t *)field = ms;
	return 0;
}

/* a size: 4096, 512K, 16M, 2G (powers of 1024) */
static int p_size(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	uint64_t n;

	if (strcmp(v, "max") == 0 || parse_size(v, &n) < 0 || n < k->min || n > k->max)
		return bad(err, len, k->name, "size", v, "use a number of bytes with K, M or G, up to %lluG",
			   (unsigned long long)(k->max >> 30));
	*(uint64_t *)field = n;
	return 0;
}

static int p_bool(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	if (parse_bool(v, field) < 0)
		return bad(err, len, k->name, "boolean", v, "use yes or no");
	return 0;
}

static int p_enum(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	char hint[96];
	int i = lookup(k->names, k->nnames, v);

	if (i < 0)
		return bad(err, len, k->name, k->what, v, "use %s", join_names(hint, sizeof(hint), k->names, k->nnames));
	*(int *)field = i;
	return 0;
}

/* ---- printers */

static void pr_str(FILE *f, const struct conf_key *k, const void *field)
{
	const char *s = *(char *const *)field;

	if (s && *s)
		fprintf(f, "%s = %s\n", k->name, s);
	else if (k->flags & CONF_KEY_PRINT_EMPTY)
		fprintf(f, "%s =\n", k->name);
}

static void pr_ctrls(FILE *f, const struct conf_key *k, const void *field)
{
	unsigned mask = *(const unsigned *)field;

	fprintf(f, "%s =", k->name);
	for (size_t i = 0; i < ARRAY_SIZE(ctrl_names); i++)
		if (mask & (1u << i))
			fprintf(f, " %s", ctrl_names[i]);
	fputc('\n', f);
}

static void pr_uint(FILE *f, const struct conf_key *k, const void *field)
{
	fprintf(f, "%s = %u\n", k->name, *(const unsigned *)field);
}

static void pr_uint_auto(FILE *f, const struct conf_key *k, const void *field)
{
	if (*(const unsigned *)field == CONF_AUTO)
		fprintf(f, "%s = auto\n", k->name);
	else
		pr_uint(f, k, field);
}

static void pr_duration(FILE *f, const struct conf_key *k, const void *field)
{
	char buf[32];

	format_duration_ms(buf, sizeof(buf), *(const uint64_t *)field);
	fprintf(f, "%s = %s\n", k->name, buf);
}

static void pr_size(FILE *f, const struct conf_key *k, const void *field)
{
	static const char units[] = "KMGT";
	uint64_t n = *(const uint64_t *)field;
	int u = -1;

	while (n && n % 1024 == 0 && u < 3) {
		n /= 1024;
		u++;
	}
	if (u < 0)
		fprintf(f, "%s = %llu\n", k->name, (unsigned long long)n);
	else
		fprintf(f, "%s = %llu%c\n", k->name, (unsigned long long)n, units[u]);
}

static void pr_bool(FILE *f, const struct conf_key *k, const void *field)
{
	fprintf(f, "%s = %s\n", k->name, *(const bool *)field ? "yes" : "no");
}

static void pr_enum(FILE *f, const struct conf_key *k, const void *field)
{
	int i = *(const int *)field;

	fprintf(f, "%s = %s\n", k->name, i >= 0 && (size_t)i < k->nnames && k->names[i] ? k->names[i] : "?");
}

/* ---- resource values, normalised to what the cgroup v2 file accepts */

static int rn_size(const char *v, char *out, size_t len)
{
	uint64_t n;

	if (parse_size(v, &n) < 0)
		return -EINVAL;
	if (n == SIZE_MAX_VALUE)
		snprintf(out, len, "max");
	else
		snprintf(out, len, "%llu", (unsigned long long)n);
	return 0;
}

static int rn_pids(const char *v, char *out, size_t len)
{
	uint64_t n;

	if (strcmp(v, "max") == 0) {
		snprintf(out, len, "max");
		return 0;
	}
	if (parse_uint(v, 0, 4194304, &n) < 0)
		return -EINVAL;
	snprintf(out, len, "%llu", (unsigned long long)n);
	return 0;
}

static int rn_weight(const char *v, char *out, size_t len)
{
	uint64_t n;

	if (parse_uint(v, 1, 10000, &n) < 0)
		return -EINVAL;
	snprintf(out, len, "%llu", (unsigned long long)n);
	return 0;
}

/* "N" or "default N" -> "default N" */
static int rn_ioweight(const char *v, char *out, size_t len)
{
	char w[3][24], n[24];
	int nw = 0, r;

	while (nw < 3 && (r = next_word(&v, w[nw], sizeof(w[nw]))) > 0)
		nw++;
	if (r < 0 || nw == 0 || nw == 3 || (nw == 2 && strcmp(w[0], "default") != 0))
		return -EINVAL;
	if (rn_weight(w[nw - 1], n, sizeof(n)) < 0)
		return -EINVAL;
	snprintf(out, len, "default %s", n);
	return 0;
}

/* "max" | "QUOTA" | "QUOTA PERIOD" | "max PERIOD" -> "QUOTA PERIOD" */
static int rn_cpumax(const char *v, char *out, size_t len)
{
	char w[3][24];
	uint64_t quota = 0, period = 100000;
	int n = 0, r;

	while (n < 3 && (r = next_word(&v, w[n], sizeof(w[n]))) > 0)
		n++;
	if (r < 0 || n == 0 || n == 3)
		return -EINVAL;
	if (strcmp(w[0], "max") != 0 && parse_uint(w[0], 1000, 1000000000000ULL, &quota) < 0)
		return -EINVAL;
	if (n == 2 && parse_uint(w[1], 1000, 1000000, &period) < 0)
		return -EINVAL;
	if (quota)
		snprintf(out, len, "%llu %llu", (unsigned long long)quota, (unsigned long long)period);
	else
		snprintf(out, len, "max %llu", (unsigned long long)period);
	return 0;
}

/* a list of CPU or memory node numbers below max and ranges of them
 * ("0-3,8"), in ascending order, as the kernel prints cpuset.cpus */
static int rn_idlist(const char *v, unsigned max, char *out, size_t len)
{
	size_t o = 0;
	long prev = -1;

	v += strspn(v, WS);
	if (!*v)
		return -EINVAL;
	for (;;) {
		char *end;
		unsigned long a, b;
		if (*v < '0' || *v > '9')
			return -EINVAL;
		a = strtoul(v, &end, 10);
		b = a;
		if (*end == '-') {
			v = end + 1;
			if (*v < '0' || *v > '9')
				return -EINVAL;
			b = strtoul(v, &end, 10);
		}
		if (a > b || b >= max || (long)a <= prev)
			return -EINVAL;
		prev = (long)b;
		int n = a == b ? snprintf(out + o, len - o, "%s%lu", o ? "," : "", a)
			       : snprintf(out + o, len - o, "%s%lu-%lu", o ? "," : "", a, b);
		if (n < 0 || (size_t)n >= len - o)
			return -EINVAL;
		o += (size_t)n;
		v = end;
		if (*v != ',')
			break;
		v++;
	}
	return v[strspn(v, WS)] ? -EINVAL : 0;
}

static int rn_cpus(const char *v, char *out, size_t len)
{
	return rn_idlist(v, 8192, out, len);
}

static int rn_mems(const char *v, char *out, size_t len)
{
	return rn_idlist(v, 1024, out, len);
}

/* one device rule of devices.deny: "c 195:0", "c 195:0-3" or "b 8:*" */
static int rn_device(const char **pv, char *out, size_t len)
{
	const char *v = *pv + strspn(*pv, WS);
	char type = *v;
	unsigned long major, lo = 0, hi = 0;
	char *end;

	if ((type != 'c' && type != 'b') || !strchr(WS, v[1]) || !v[1])
		return -EINVAL;
	v += 1 + strspn(v + 1, WS);
	if (*v < '0' || *v > '9')
		return -EINVAL;
	major = strtoul(v, &end, 10);
	if (*end != ':' || major > 4095)
		return -EINVAL;
	v = end + 1;
	if (*v == '*') {
		v++;
		hi = ULONG_MAX;
	} else {
		if (*v < '0' || *v > '9')
			return -EINVAL;
		lo = hi = strtoul(v, &end, 10);
		v = end;
		if (*v == '-') {
			if (v[1] < '0' || v[1] > '9')
				return -EINVAL;
			hi = strtoul(v + 1, &end, 10);
			v = end;
		}
		if (hi > 1048575 || lo > hi)
			return -EINVAL;
	}
	*pv = v;
	int n = hi == ULONG_MAX ? snprintf(out, len, "%c %lu:*", type, major)
	      : lo == hi	? snprintf(out, len, "%c %lu:%lu", type, major, lo)
				: snprintf(out, len, "%c %lu:%lu-%lu", type, major, lo, hi);
	return n < 0 || (size_t)n >= len ? -EINVAL : n;
}

/* devices.deny: device rules separated by commas, each "TYPE MAJOR:MINOR"
 * with TYPE c or b and MINOR a number, a range N-M or *; or none */
static int rn_devices(const char *v, char *out, size_t len)
{
	const char *w = v + strspn(v, WS);
	size_t o = 0;

	if (strncmp(w, "none", 4) == 0 && w[4 + strspn(w + 4, WS)] == '\0')
		return snprintf(out, len, "none") >= (int)len ? -EINVAL : 0;

	for (;;) {
		int n = rn_device(&v, out + o, len - o);
		if (n < 0)
			return n;
		o += (size_t)n;
		v += strspn(v, WS);
		if (*v != ',')
			break;
		if (o + 1 >= len)
			return -EINVAL;
		out[o++] = ',';
		v++;
	}
	return *v ? -EINVAL : 0;
}

/* the next rule of a normalised devices.deny list, "*" as hi = UINT_MAX */
static int dev_scan(const char **v, char *type, unsigned *major, unsigned *lo, unsigned *hi)
{
	int used = 0;

	if (sscanf(*v, "%c %u:*%n", type, major, &used) == 2 && used) {
		*lo = 0;
		*hi = UINT_MAX;
	} else if (sscanf(*v, "%c %u:%u-%u%n", type, major, lo, hi, &used) == 4 && used) {
	} else if (sscanf(*v, "%c %u:%u%n", type, major, lo, &used) == 3 && used)
		*hi = *lo;
	else
		return -EINVAL;
	*v += used;
	if (**v == ',')
		(*v)++;
	return 0;
}

int conf_devices_common(const char *a, const char *b, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	if (strcmp(a, "none") == 0 || strcmp(b, "none") == 0)
		a = "";
	while (*a) {
		char ta, tb;
		unsigned ma, la, ha, mb, lb, hb;
		const char *bb = b;
		if (dev_scan(&a, &ta, &ma, &la, &ha) < 0)
			return -EINVAL;
		while (*bb) {
			if (dev_scan(&bb, &tb, &mb, &lb, &hb) < 0)
				return -EINVAL;
			unsigned lo = la > lb ? la : lb, hi = ha < hb ? ha : hb;
			if (ta != tb || ma != mb || lo > hi)
				continue;
			int n = hi == UINT_MAX && lo == 0 ? snprintf(out + o, len - o, "%s%c %u:*", o ? "," : "", ta, ma)
			      : lo == hi ? snprintf(out + o, len - o, "%s%c %u:%u", o ? "," : "", ta, ma, lo)
					 : snprintf(out + o, len - o, "%s%c %u:%u-%u", o ? "," : "", ta, ma, lo, hi);
			if (n < 0 || (size_t)n >= len - o)
				return -ENOSPC;
			o += (size_t)n;
		}
	}
	if (o == 0 && snprintf(out, len, "none") >= (int)len)
		return -ENOSPC;
	return 0;
}

#define SIZE_HINT "use a number with K, M, G or T, or max"
/* how the config parser takes the value of a resource key (res.h) */
static const struct resdef {
	int (*norm)(const char *v, char *out, size_t len);
	const char *what, *hint;
} resdefs[RES_NKEYS] = {
	[RES_MEMORY_MAX] = { rn_size, "size", SIZE_HINT },
	[RES_MEMORY_HIGH] = { rn_size, "size", SIZE_HINT },
	[RES_MEMORY_LOW] = { rn_size, "size", SIZE_HINT },
	[RES_MEMORY_SWAP_MAX] = { rn_size, "size", SIZE_HINT },
	[RES_PIDS_MAX] = { rn_pids, "number", "use a number from 0 to 4194304, or max" },
	[RES_CPU_WEIGHT] = { rn_weight, "weight", "use a number from 1 to 10000" },
	[RES_CPU_MAX] = { rn_cpumax, "value",
			  "use max or a quota of at least 1000, then optionally a period from 1000 to 1000000, in "
			  "microseconds" },
	[RES_IO_WEIGHT] = { rn_ioweight, "weight", "use a number from 1 to 10000, or default N" },
	[RES_CPUSET_CPUS] = { rn_cpus, "CPU list", "use CPU numbers below 8192 and ranges of them, ascending, like 0-3,8" },
	[RES_CPUSET_MEMS] = { rn_mems, "memory node list",
			      "use memory node numbers below 1024 and ranges of them, ascending, like 0-1" },
	[RES_DEVICES_DENY] = { rn_devices, "device list",
			       "use rules like c 195:0, c 195:2-3 or b 8:* separated by commas, or none" },
};

unsigned conf_res_ctrl(const char *name)
{
	int id = res_find(name), ctrl;

	if (id < 0)
		return 0;
	ctrl = res_key((unsigned)id)->ctrl;
	return ctrl < 0 ? CONF_RES_NOCTRL : 1U << ctrl;
}

int conf_res_parse(const char *name, const char *v, char *out, size_t outlen, char *err, size_t errlen)
{
	int id = res_find(name);
	const struct resdef *rd = id < 0 ? NULL : &resdefs[id];

	if (!rd)
		return fail(err, errlen, "%s: not a resource key", name);
	if (rd->norm(v, out, outlen) < 0)
		return bad(err, errlen, res_key((unsigned)id)->name, rd->what, v, "%s", rd->hint);
	return 0;
}

const char *conf_ctrl_name(unsigned bit)
{
	for (size_t i = 0; i < ARRAY_SIZE(ctrl_names); i++)
		if (bit == 1u << i)
			return ctrl_names[i];
	return "?";
}

/* ---- the sections and their keys */

#define D(f) offsetof(struct conf, f)
#define J(f) offsetof(struct conf_job, f)
#define KEY(n, p, pr, o, ...) { .name = n, .parse = p, .print = pr, .off = o, __VA_ARGS__ }
#define RANGE(lo, hi) .min = lo, .max = hi
#define ENUM(n, w) .names = n, .nnames = ARRAY_SIZE(n), .what = w
static const struct conf_key daemon_keys[] = {
	KEY("socket", p_socket, pr_str, D(daemon.socket)),
	KEY("socket_group", p_account, pr_str, D(daemon.socket_group),
	    .flags = CONF_KEY_EMPTY_OK | CONF_KEY_GROUP | CONF_KEY_PRINT_EMPTY),
	KEY("root", p_root, pr_str, D(daemon.root)),
	KEY("controllers", p_ctrls, pr_ctrls, D(daemon.controllers)),
	KEY("log_level", p_enum, pr_enum, D(daemon.log_level), ENUM(level_names, "level")),
	KEY("state_dir", p_path, pr_str, D(daemon.state_dir)),
	KEY("user_keys", p_user_keys, pr_str, D(daemon.user_keys), .flags = CONF_KEY_EMPTY_OK | CONF_KEY_PRINT_EMPTY),
	KEY("max_connections", p_uint, pr_uint, D(daemon.max_connections), RANGE(1, 4096)),
	KEY("max_connections_per_user", p_uint, pr_uint, D(daemon.max_connections_per_user), RANGE(1, 4096)),
	KEY("connection_idle_timeout", p_duration, pr_duration, D(daemon.connection_idle_timeout_ms),
	    RANGE(0, DUR_MAX)),
	KEY("favordynmods", p_bool, pr_bool, D(daemon.favordynmods)),
};
static const struct conf_key pool_keys[] = {
	KEY("warm", p_uint, pr_uint, D(pool.warm), RANGE(0, 65535), .flags = CONF_KEY_WARM),
	KEY("max_slots", p_uint, pr_uint, D(pool.max_slots), RANGE(1, 65535), .flags = CONF_KEY_SLOTS),
	KEY("max_slots_per_user", p_uint_auto, pr_uint_auto, D(pool.max_slots_per_user), RANGE(0, 65535)),
	KEY("idle_timeout", p_duration, pr_duration, D(pool.idle_timeout_ms), RANGE(0, DUR_MAX)),
	KEY("recycle", p_bool, pr_bool, D(pool.recycle)),
	KEY("recycle_max_memory", p_size, pr_size, D(pool.recycle_max_memory), RANGE(0, (uint64_t)1 << 40)),
};
static const struct conf_key retire_keys[] = {
	KEY("mode", p_enum, pr_enum, D(retire.mode), ENUM(mode_names, "mode")),
	KEY("drain_timeout", p_duration, pr_duration, D(retire.drain_timeout_ms), RANGE(1, DUR_MAX)),
	KEY("verify_timeout", p_duration, pr_duration, D(retire.verify_timeout_ms), RANGE(1, DUR_MAX)),
	KEY("rate", p_uint, pr_uint, D(retire.rate), RANGE(1, 10000)),
	KEY("probe_dir", p_path, pr_str, D(retire.probe_dir)),
};
static const struct conf_key class_keys[] = {
	KEY("match", p_match, pr_str, offsetof(struct conf_class, match)),
	KEY("unprivileged", p_bool, pr_bool, offsetof(struct conf_class, unprivileged)),
};
static const struct conf_key job_keys[] = {
	KEY("exec", conf_p_exec, pr_str, J(exec)),
	KEY("restart", p_enum, pr_enum, J(restart), ENUM(restart_names, "policy")),
	KEY("restart_sec", p_duration, pr_duration, J(restart_sec_ms), RANGE(0, DUR_MAX)),
	KEY("start_limit", conf_p_start_limit, conf_pr_start_limit, J(start_limit)),
	KEY("stop_timeout", p_duration, pr_duration, J(stop_timeout_ms), RANGE(1, DUR_MAX)),
	KEY("stop_signal", conf_p_signal, conf_pr_signal, J(stop_signal)),
	KEY("user", p_account, pr_str, J(user), .flags = CONF_KEY_EMPTY_OK),
	KEY("group", p_account, pr_str, J(group), .flags = CONF_KEY_EMPTY_OK | CONF_KEY_GROUP),
	KEY("working_directory", p_path, pr_str, J(working_directory)),
	KEY("environment", conf_p_environment, conf_pr_environment, J(environment), .flags = CONF_KEY_REPEAT),
	KEY("stdout", conf_p_output, conf_pr_output, J(out)),
	KEY("stderr", conf_p_output, conf_pr_output, J(err)),
	KEY("autostart", p_bool, pr_bool, J(autostart)),
};
static const struct conf_sect sects[] = {
	{ "daemon", CONF_SECT_GLOBAL, daemon_keys, ARRAY_SIZE(daemon_keys) },
	{ "pool", CONF_SECT_GLOBAL, pool_keys, ARRAY_SIZE(pool_keys) },
	{ "retire", CONF_SECT_GLOBAL, retire_keys, ARRAY_SIZE(retire_keys) },
	{ "class", CONF_SECT_CLASS, class_keys, ARRAY_SIZE(class_keys) },
	{ "job", CONF_SECT_JOB, job_keys, ARRAY_SIZE(job_keys) },
};

const struct conf_sect *conf_sect_at(size_t i)
{
	return i < ARRAY_SIZE(sects) ? &sects[i] : NULL;
}

const struct conf_sect *conf_sect_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(sects); i++)
		if (strcmp(sects[i].name, name) == 0)
			return &sects[i];
	return NULL;
}

const struct conf_key *conf_key_find(const struct conf_sect *s, const char *name)
{
	for (size_t i = 0; i < s->nkeys; i++)
		if (strcmp(s->keys[i].name, name) == 0)
			return &s->keys[i];
	return NULL;
}

void conf_keys_print(FILE *f, const struct conf_sect *s, const void *base)
{
	for (size_t i = 0; i < s->nkeys; i++)
		s->keys[i].print(f, &s->keys[i], (const char *)base + s->keys[i].off);
}

const char *conf_retire_mode_name(enum retire_mode m)
{
	return (unsigned)m < ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

int conf_retire_mode_parse(const char *s, enum retire_mode *out)
{
	int i = s ? lookup(mode_names, ARRAY_SIZE(mode_names), s) : -1;

	if (i < 0)
		return -EINVAL;
	*out = (enum retire_mode)i;
	return 0;
}
