/* conf.c - the daemon's configuration: ini files parsed into typed structs
 *
 * This file reads the files, follows the sections and collects the errors;
 * conf_value.c knows what each key means.
 *
 * libinih splits the lines. Debian's libinih is built without
 * INI_HANDLER_LINENO, with ';' as its only inline comment character, with
 * multi-line continuation on and a 200-byte line buffer. So inih reads through
 * ld_reader(), which hands it one physical line per call, already without
 * comments ('#' or ';' at the start of a line, at the start of a value, or
 * after a blank) and without leading blanks (so there are no continuation
 * lines), as "[section]", "key=value" or "". The reader counts the lines,
 * opens the sections (inih does not tell the handler about them) and reports
 * malformed lines, so that every error carries its line and none stops the
 * pass. A value too long for inih's buffer is handed over aside (ld->stash).
 */
#include "config.h"

#include "conf.h"
#include "conf_value.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <ini.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#define CONF_MAX_LINE 4096  /* bytes in one line of a config file */
#define CONF_MAX_ERRORS 200 /* reported in one pass */
#define CONF_MAX_NAME 63    /* bytes in a key name */
#define WS " \t\r\n\v\f"

struct where {
	const char *file;
	int line;
	unsigned seq; /* which of two settings came last */
};

/* the loader's state, for one conf_load() */
struct ld {
	struct conf *c;
	struct conf_errors errs;
	bool oom;
	const char *file; /* in c->files */
	FILE *fp;
	int line, read_errno;
	const char *stash;           /* the value of a line too long for inih */
	const struct conf_sect *sect; /* NULL: outside any section */
	bool skip;                   /* in a section that failed to open */
	size_t idx;                  /* the current [class] or [job] */
	char secname[KEY_MAX + 16];  /* "[job web]", for messages */
	int seen[32];                /* line of each key of the current [class]/[job] */
	unsigned seq;
	struct where warm, slots;
	char buf[CONF_MAX_LINE + 1];
};

/* ---- errors */

static int errs_push(struct conf_errors *e, char *msg)
{
	if (e->n == 0 || (e->n & (e->n - 1)) == 0) { /* grow at powers of two */
		char **m = realloc(e->msgs, (e->n ? 2 * e->n : 1) * sizeof(*m));
		if (!m)
			return -ENOMEM;
		e->msgs = m;
	}
	e->msgs[e->n++] = msg;
	return 0;
}

/* "FILE:LINE: message", or "FILE: message" when line is 0 */
static int errs_vadd(struct conf_errors *e, const char *file, int line, const char *fmt, va_list ap)
{
	char *body, *msg;
	int r;

	if (vasprintf(&body, fmt, ap) < 0)
		return -ENOMEM;
	r = line > 0 ? asprintf(&msg, "%s:%d: %s", file, line, body) : asprintf(&msg, "%s: %s", file, body);
	free(body);
	if (r < 0)
		return -ENOMEM;
	r = errs_push(e, msg);
	if (r < 0)
		free(msg);
	return r;
}

__attribute__((format(printf, 4, 5))) static int errs_add(struct conf_errors *e, const char *file, int line,
							  const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = errs_vadd(e, file, line, fmt, ap);
	va_end(ap);
	return r;
}

void conf_errors_free(struct conf_errors *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->msgs[i]);
	free(e->msgs);
	e->msgs = NULL;
	e->n = 0;
}

/* Report an error at file:line (line 0: the file as a whole). Returns -EINVAL. */
__attribute__((format(printf, 4, 5))) static int ld_err_at(struct ld *ld, const char *file, int line,
							   const char *fmt, ...)
{
	va_list ap;
	int r;

	if (ld->errs.n > CONF_MAX_ERRORS)
		return -EINVAL;
	if (ld->errs.n == CONF_MAX_ERRORS) {
		r = errs_add(&ld->errs, file, line, "too many errors, not reporting more");
	} else {
		va_start(ap, fmt);
		r = errs_vadd(&ld->errs, file, line, fmt, ap);
		va_end(ap);
	}
	if (r < 0)
		ld->oom = true;
	return -EINVAL;
}
#define ld_err(ld, ...) ld_err_at(ld, (ld)->file, (ld)->line, __VA_ARGS__)

/* ---- sections */

static bool named_exists(const struct conf *c, enum conf_sect_kind kind, const char *name, const char **file,
			 int *line)
{
	for (size_t i = 0; kind == CONF_SECT_CLASS && i < c->nclasses; i++) {
		if (strcmp(c->classes[i].name, name) == 0) {
			*file = c->classes[i].file;
			*line = c->classes[i].line;
			return true;
		}
	}
	for (size_t i = 0; kind == CONF_SECT_JOB && i < c->njobs; i++) {
		if (strcmp(c->jobs[i].key, name) == 0) {
			*file = c->jobs[i].file;
			*line = c->jobs[i].line;
			return true;
		}
	}
	return false;
}

/* a new zeroed element at the end of *arr of *n elements, growing at powers of two */
static void *grow(void **arr, size_t *n, size_t size)
{
	if (*n == 0 || (*n & (*n - 1)) == 0) {
		void *p = realloc(*arr, (*n ? 2 * *n : 1) * size);
		if (!p)
			return NULL;
		*arr = p;
	}
	memset((char *)*arr + *n * size, 0, size);
	return (char *)*arr + (*n)++ * size;
}

static int add_named(struct ld *ld, enum conf_sect_kind kind, const char *name)
{
	struct conf *c = ld->c;
	struct conf_class *cl = NULL;
	struct conf_job *j;
	char *n, *m = NULL;

	if (c->nclasses + c->njobs >= CONF_MAX_SECTIONS)
		return ld_err(ld, "too many [class] and [job] sections (at most %d)", CONF_MAX_SECTIONS);
	n = strdup(name);
	if (n && kind == CONF_SECT_CLASS) {
		m = strdup("");
		cl = m ? grow((void **)&c->classes, &c->nclasses, sizeof(*cl)) : NULL;
		if (!cl)
			goto oom;
		*cl = (struct conf_class){ .name = n, .match = m, .file = ld->file, .line = ld->line };
		ld->idx = c->nclasses - 1;
		return 0;
	}
	j = n ? grow((void **)&c->jobs, &c->njobs, sizeof(*j)) : NULL;
	if (!j)
		goto oom;
	*j = (struct conf_job){ .key = n, .restart = RESTART_ON_FAILURE, .restart_sec_ms = 1000,
				.start_limit = { 5, 10000 }, .stop_timeout_ms = 10000, .stop_signal = SIGTERM,
				.autostart = true, .file = ld->file, .line = ld->line };
	ld->idx = c->njobs - 1;
	return 0;
oom:
	free(n);
	free(m);
	ld->oom = true;
	return -ENOMEM;
}

static int open_named(struct ld *ld, const struct conf_sect *sd, const char *name)
{
	const char *reason, *file;
	int line;

	if (key_validate(name, &reason) < 0 && sd->kind == CONF_SECT_JOB)
		return ld_err(ld, "invalid key \"%s\": %s", name, reason);
	if (key_validate(name, &reason) < 0)
		return ld_err(ld, "invalid class name \"%s\" (class names follow the rules for keys: %s)", name,
			      reason);
	if (named_exists(ld->c, sd->kind, name, &file, &line))
		return ld_err(ld, "duplicate [%s %s], first at %s:%d", sd->name, name, file, line);
	return add_named(ld, sd->kind, name);
}

static char *rstrip(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* s is "[...]", without comments or surrounding blanks; it is cut up here */
static int open_section(struct ld *ld, char *s)
{
	size_t len = strlen(s);
	const struct conf_sect *sd;
	char *word, *arg;

	ld->sect = NULL;
	ld->skip = true;
	memset(ld->seen, 0, sizeof(ld->seen));
	if (len < 2 || s[len - 1] != ']' || strpbrk(s + 1, "[]") != s + len - 1)
		return ld_err(ld, "invalid section header \"%s\" (%s)", s, CONF_SECTS_HINT);
	s[len - 1] = '\0';
	word = rstrip(s + 1);
	word += strspn(word, WS);
	arg = word + strcspn(word, WS);
	if (*arg)
		*arg++ = '\0';
	arg += strspn(arg, WS);
	sd = conf_sect_find(word);
	if (sd && sd->kind != CONF_SECT_GLOBAL && *arg == '\0')
		return ld_err(ld, "[%s] needs a %s, as in [%s %s]", word, sd->kind == CONF_SECT_JOB ? "key" : "name",
			      word, sd->kind == CONF_SECT_JOB ? "web" : "batch");
	if (!sd || (sd->kind == CONF_SECT_GLOBAL && *arg))
		return ld_err(ld, "unknown section [%s%s%s] (%s)", word, *arg ? " " : "", arg, CONF_SECTS_HINT);
	if (sd->kind != CONF_SECT_GLOBAL && open_named(ld, sd, arg) < 0)
		return -EINVAL;
	snprintf(ld->secname, sizeof(ld->secname), "[%s%s%s]", word, *arg ? " " : "", arg);
	ld->sect = sd;
	ld->skip = false;
	return 0;
}

/* ---- keys */

static void *section_base(struct ld *ld)
{
	switch (ld->sect->kind) {
	case CONF_SECT_CLASS:
		return &ld->c->classes[ld->idx];
	case CONF_SECT_JOB:
		return &ld->c->jobs[ld->idx];
	default:
		return ld->c;
	}
}

/* the resource settings of the i-th [class] or [job], classes first */
static struct conf_res *res_of(const struct conf *c, size_t i, size_t **n)
{
	if (i < c->nclasses) {
		*n = &c->classes[i].nres;
		return c->classes[i].res;
	}
	*n = &c->jobs[i - c->nclasses].nres;
	return c->jobs[i - c->nclasses].res;
}

static struct conf_res *cur_res(struct ld *ld, size_t **n)
{
	return res_of(ld->c, ld->sect->kind == CONF_SECT_JOB ? ld->c->nclasses + ld->idx : ld->idx, n);
}

/* line of an earlier setting of name in the current [class] or [job], or 0 */
static int first_line(struct ld *ld, const struct conf_key *k, const char *name)
{
	struct conf_res *res;
	size_t *n;

	if (ld->sect->kind == CONF_SECT_GLOBAL)
		return 0; /* later settings override earlier ones */
	if (k)
		return (size_t)(k - ld->sect->keys) < ARRAY_SIZE(ld->seen) ? ld->seen[k - ld->sect->keys] : 0;
	res = cur_res(ld, &n);
	for (size_t i = 0; i < *n; i++)
		if (strcmp(res[i].name, name) == 0)
			return res[i].line;
	return 0;
}

int conf_res_value(const char *name, const char *value, struct conf_res *out, char *err, size_t errlen)
{
	char v[sizeof(out->value)];

	if (strlen(name) >= sizeof(out->name))
		return snprintf(err, errlen, "%.40s...: not a resource key", name), -EINVAL;
	if (conf_res_parse(name, value, v, sizeof(v), err, errlen) < 0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	snprintf(out->value, sizeof(out->value), "%s", v);
	return 0;
}

static void add_res(struct ld *ld, const char *name, const char *v)
{
	char out[sizeof(ld->c->jobs->res->value)], err[CONF_ERR_MAX];
	struct conf_res *res;
	size_t *n;

	if (conf_res_parse(name, v, out, sizeof(out), err, sizeof(err)) < 0) {
		ld_err(ld, "%s", err);
		return;
	}
	res = cur_res(ld, &n);
	if (*n >= CONF_MAX_RES) {
		ld_err(ld, "too many resource settings in %s (at most %d)", ld->secname, CONF_MAX_RES);
		return;
	}
	res += (*n)++;
	snprintf(res->name, sizeof(res->name), "%s", name);
	snprintf(res->value, sizeof(res->value), "%s", out);
	res->file = ld->file;
	res->line = ld->line;
}

static void set_value(struct ld *ld, const struct conf_key *k, const char *v)
{
	char err[CONF_ERR_MAX];
	struct where *w = k->flags & CONF_KEY_WARM ? &ld->warm : k->flags & CONF_KEY_SLOTS ? &ld->slots : NULL;
	int r = k->parse(k, v, (char *)section_base(ld) + k->off, err, sizeof(err));

	if (r == -ENOMEM) {
		ld->oom = true;
	} else if (r < 0) {
		ld_err(ld, "%s", err);
	} else {
		if (ld->sect->kind != CONF_SECT_GLOBAL && (size_t)(k - ld->sect->keys) < ARRAY_SIZE(ld->seen))
			ld->seen[k - ld->sect->keys] = ld->line;
		if (w)
			*w = (struct where){ ld->file, ld->line, ++ld->seq };
	}
}

static void set_key(struct ld *ld, const char *name, const char *v)
{
	const struct conf_sect *sd = ld->sect;
	const struct conf_key *k;
	int first;

	if (ld->skip)
		return;
	if (!sd) {
		ld_err(ld, "key \"%s\" is outside any section (%s)", name, CONF_SECTS_HINT);
		return;
	}
	k = conf_key_find(sd, name);
	if (!k && (sd->kind == CONF_SECT_GLOBAL || !conf_res_ctrl(name))) {
		ld_err(ld, "unknown key \"%s\" in %s", name, ld->secname);
		return;
	}
	first = k && (k->flags & CONF_KEY_REPEAT) ? 0 : first_line(ld, k, name);
	if (first)
		ld_err(ld, "duplicate key \"%s\" in %s, first at %s:%d", name, ld->secname, ld->file, first);
	else if (*v == '\0' && !(k && (k->flags & CONF_KEY_EMPTY_OK)))
		ld_err(ld, "%s: missing value", name);
	else if (k)
		set_value(ld, k, v);
	else
		add_res(ld, name, v);
}

/* ---- reading: lines for inih */

enum { LINE_EOF, LINE_OK, LINE_LONG, LINE_NUL };

static int read_line(struct ld *ld)
{
	size_t n = 0;
	int ch, res = LINE_OK;

	while ((ch = getc(ld->fp)) != EOF && ch != '\n') {
		if (ch == '\0' && res == LINE_OK)
			res = LINE_NUL;
		if (n < CONF_MAX_LINE)
			ld->buf[n++] = (char)ch;
		else
			res = LINE_LONG;
	}
	ld->buf[n] = '\0';
	if (ch == EOF && ferror(ld->fp)) {
		ld->read_errno = errno ? errno : EIO;
		return LINE_EOF;
	}
	return ch == EOF && n == 0 ? LINE_EOF : res;
}

/* without the BOM, surrounding blanks and comments */
static char *clean(char *s, bool first)
{
	if (first && strncmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3;
	s += strspn(s, WS);
	for (char *p = s; *p; p++) {
		if ((*p == '#' || *p == ';') && (p == s || isspace((unsigned char)p[-1]))) {
			*p = '\0';
			break;
		}
	}
	return rstrip(s);
}

static bool name_ok(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");

	return n > 0 && n <= CONF_MAX_NAME && s[n] == '\0';
}

/* Put the canonical form of the cleaned line s into str for inih. */
static void feed(struct ld *ld, char *s, char *str, int num)
{
	char *eq, *name, *val;

	str[0] = '\0';
	if (*s == '\0')
		return;
	if (*s == '[') {
		if (open_section(ld, s) == 0)
			snprintf(str, (size_t)num, "%s", ld->secname);
		return;
	}
	eq = strchr(s, '=');
	if (!eq) {
		ld_err(ld, "expected \"key = value\" or \"[section]\", found \"%.60s%s\"", s, strlen(s) > 60 ? "..." : "");
		return;
	}
	*eq = '\0';
	name = rstrip(s);
	val = eq + 1 + strspn(eq + 1, WS);
	if (*val == '#' || *val == ';')
		*val = '\0';
	if (*name == '\0') {
		ld_err(ld, "missing key name before \"=\"");
		return;
	}
	if (!name_ok(name) || strlen(name) + 2 >= (size_t)num) {
		ld_err(ld, "invalid key name \"%.*s\"", CONF_MAX_NAME, name);
		return;
	}
	if (snprintf(str, (size_t)num, "%s=%s", name, val) >= num) {
		ld->stash = val;
		snprintf(str, (size_t)num, "%s=", name);
	}
}

static char *ld_reader(char *str, int num, void *stream)
{
	struct ld *ld = stream;
	int r;

	ld->stash = NULL;
	r = num > 1 ? read_line(ld) : LINE_EOF;
	if (r == LINE_EOF)
		return NULL;
	ld->line++;
	str[0] = '\0';
	if (r == LINE_LONG)
		ld_err(ld, "line is longer than %d bytes", CONF_MAX_LINE);
	else if (r == LINE_NUL)
		ld_err(ld, "line contains a NUL byte");
	else
		feed(ld, clean(ld->buf, ld->line == 1), str, num);
	return str;
}

static int ld_handler(void *user, const char *section, const char *name, const char *value)
{
	struct ld *ld = user;

	(void)section; /* the reader follows the sections, with their lines */
	set_key(ld, name, ld->stash ? ld->stash : value);
	ld->stash = NULL;
	return 1;
}

/* ---- files */

static const char *add_file(struct ld *ld, const char *path)
{
	char *s = strdup(path), **p = NULL;

	if (s)
		p = grow((void **)&ld->c->files, &ld->c->nfiles, sizeof(*p));
	if (!p) {
		free(s);
		ld->oom = true;
		return NULL;
	}
	*p = s;
	return s;
}

static void parse_file(struct ld *ld, FILE *fp, const char *file)
{
	int r;

	ld->file = file;
	ld->fp = fp;
	ld->line = ld->read_errno = 0;
	ld->sect = NULL;
	ld->skip = false;
	r = ini_parse_stream(ld_reader, ld, ld_handler, ld);
	if (ld->read_errno)
		ld_err_at(ld, file, 0, "%s", strerror(ld->read_errno));
	else if (r == -2)
		ld->oom = true;
	else if (r != 0) /* inih disagrees with feed(): not expected */
		ld_err_at(ld, file, r, "syntax error");
}

static void load_file(struct ld *ld, const char *path, bool required)
{
	FILE *fp = fopen(path, "re");
	struct stat st;
	const char *file;

	if (!fp) {
		if (errno != ENOENT || required)
			ld_err_at(ld, path, 0, "%s", strerror(errno));
		return;
	}
	if (fstat(fileno(fp), &st) < 0)
		ld_err_at(ld, path, 0, "%s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		ld_err_at(ld, path, 0, "%s", S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
	else if ((file = add_file(ld, path)))
		parse_file(ld, fp, file);
	fclose(fp);
}

static int is_dropin(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".conf") == 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* every "*.conf" in the directory conf.d beside path, in strcmp order */
static void load_dropins(struct ld *ld, const char *path)
{
	const char *slash = strrchr(path, '/');
	int plen = slash ? (int)(slash - path + 1) : 0, n;
	char dir[PATH_MAX], file[PATH_MAX];
	struct dirent **list;

	if (snprintf(dir, sizeof(dir), "%.*sconf.d", plen, path) >= (int)sizeof(dir)) {
		ld_err_at(ld, path, 0, "%s", strerror(ENAMETOOLONG));
		return;
	}
	n = scandir(dir, &list, is_dropin, by_name);
	if (n < 0) {
		if (errno != ENOENT)
			ld_err_at(ld, dir, 0, "%s", strerror(errno));
		return;
	}
	if (n > CONF_MAX_FILES)
		ld_err_at(ld, dir, 0, "more than %d *.conf files", CONF_MAX_FILES);
	for (int i = 0; i < n; i++) {
		if (n > CONF_MAX_FILES)
			; /* none of them */
		else if (snprintf(file, sizeof(file), "%s/%s", dir, list[i]->d_name) < (int)sizeof(file))
			load_file(ld, file, true);
		else
			ld_err_at(ld, dir, 0, "%s: %s", list[i]->d_name, strerror(ENAMETOOLONG));
		free(list[i]);
	}
	free(list);
}

/* checks across keys and files, once everything is read */
static void check_all(struct ld *ld)
{
	struct conf *c = ld->c;
	const struct conf_res *res;
	size_t *nres;
	unsigned ctrl;
	struct group *gr;

	if (c->pool.warm > c->pool.max_slots && ld->warm.seq > ld->slots.seq)
		ld_err_at(ld, ld->warm.file, ld->warm.line, "warm: %u is more than max_slots (%u)", c->pool.warm,
			  c->pool.max_slots);
	else if (c->pool.warm > c->pool.max_slots)
		ld_err_at(ld, ld->slots.file, ld->slots.line, "max_slots: %u is less than warm (%u)",
			  c->pool.max_slots, c->pool.warm);
	if (c->daemon.socket_group && (gr = getgrnam(c->daemon.socket_group)))
		c->daemon.socket_gid = gr->gr_gid; /* once per load, not per request */
	else if (c->daemon.socket_group)
		ld_err_at(ld, ld->c->files && c->nfiles ? c->files[0] : "config", 0, "socket_group: no such group \"%s\"",
			  c->daemon.socket_group);
	for (size_t i = 0; i < c->nclasses + c->njobs; i++) {
		res = res_of(c, i, &nres);
		for (size_t k = 0; k < *nres; k++) {
			ctrl = conf_res_ctrl(res[k].name);
			if (ctrl != CONF_RES_NOCTRL && !(c->daemon.controllers & ctrl))
				ld_err_at(ld, res[k].file, res[k].line,
					  "%s: the %s controller is not enabled (add it to controllers in [daemon])",
					  res[k].name, conf_ctrl_name(ctrl));
		}
	}
}

/* ---- the interface */

struct conf *conf_new_defaults(void)
{
	struct conf *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->daemon.socket = strdup(RUNSTATEDIR "/cgpool/cgpool.sock");
	c->daemon.root = strdup("auto");
	c->daemon.state_dir = strdup(RUNSTATEDIR "/cgpool");
	c->daemon.controllers = CONF_CTRL_MEMORY | CONF_CTRL_PIDS;
	c->daemon.log_level = LOG_INFO;
	c->daemon.socket_gid = (gid_t)-1;
	c->daemon.user_keys = strdup("user.%u.*");
	c->daemon.max_connections = 128;
	c->daemon.max_connections_per_user = 16;
	c->daemon.connection_idle_timeout_ms = 60 * 1000;
	c->pool.max_slots_per_user = CONF_AUTO;
	c->pool.warm = 2;
	c->pool.max_slots = 1024;
	c->pool.idle_timeout_ms = 10 * 60 * 1000;
	c->pool.recycle = true;
	c->pool.recycle_max_memory = 16u << 20;
	c->retire.mode = RETIRE_AUTO;
	c->retire.drain_timeout_ms = 30 * 1000;
	c->retire.verify_timeout_ms = 60 * 1000;
	c->retire.rate = 20;
	c->retire.probe_dir = strdup("/var/tmp");
	if (!c->daemon.socket || !c->daemon.root || !c->daemon.state_dir || !c->retire.probe_dir ||
	    !c->daemon.user_keys) {
		conf_free(c);
		return NULL;
	}
	return c;
}

void conf_free(struct conf *c)
{
	if (!c)
		return;
	free(c->daemon.socket);
	free(c->daemon.socket_group);
	free(c->daemon.root);
	free(c->daemon.state_dir);
	free(c->retire.probe_dir);
	free(c->daemon.user_keys);
	for (size_t i = 0; i < c->nclasses; i++) {
		free(c->classes[i].name);
		free(c->classes[i].match);
	}
	free(c->classes);
	for (size_t i = 0; i < c->njobs; i++)
		conf_job_free(&c->jobs[i]);
	free(c->jobs);
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	free(c);
}

/* move every message of from to the end of to (NULL: drop them) */
static int errs_move(struct conf_errors *to, struct conf_errors *from)
{
	size_t n0 = to ? to->n : 0;

	for (size_t i = 0; to && i < from->n; i++) {
		if (errs_push(to, from->msgs[i]) < 0) {
			to->n = n0; /* to as it was; from still owns the messages */
			return -ENOMEM;
		}
	}
	if (to)
		from->n = 0;
	return 0;
}

int conf_load(const char *path, bool required, struct conf **out, struct conf_errors *errs)
{
	struct ld *ld = calloc(1, sizeof(*ld));
	int r;

	if (!ld)
		return -ENOMEM;
	if (!path)
		path = CONF_DEFAULT_PATH;
	ld->c = conf_new_defaults();
	if (ld->c) {
		load_file(ld, path, required);
		load_dropins(ld, path);
		check_all(ld);
	}
	if (!ld->c || ld->oom) {
		r = -ENOMEM;
	} else if (ld->errs.n > 0) {
		r = errs_move(errs, &ld->errs) < 0 ? -ENOMEM : -EINVAL;
	} else {
		*out = ld->c;
		ld->c = NULL;
		r = 0;
	}
	conf_free(ld->c);
	conf_errors_free(&ld->errs);
	free(ld);
	return r;
}

int conf_check_resources(const struct conf *c, bool (*supported)(const char *name, void *ud), const char *why,
			 void *ud, struct conf_errors *errs)
{
	const struct conf_res *res;
	size_t *nres;
	int added = 0;

	for (size_t i = 0; i < c->nclasses + c->njobs; i++) {
		res = res_of(c, i, &nres);
		for (size_t k = 0; k < *nres; k++) {
			if (supported(res[k].name, ud))
				continue;
			if (errs_add(errs, res[k].file, res[k].line, "%s: not supported on %s", res[k].name, why) < 0)
				return -ENOMEM;
			added++;
		}
	}
	return added;
}

int conf_print(const struct conf *c, FILE *f)
{
	const struct conf_sect *s;
	const struct conf_res *res;
	size_t *nres;

	for (size_t i = 0; (s = conf_sect_at(i)); i++) {
		if (s->kind != CONF_SECT_GLOBAL)
			continue;
		fprintf(f, "%s[%s]\n", i ? "\n" : "", s->name);
		conf_keys_print(f, s, c);
	}
	for (size_t i = 0; i < c->nclasses + c->njobs; i++) {
		bool class = i < c->nclasses;
		s = conf_sect_find(class ? "class" : "job");
		fprintf(f, "\n[%s %s]\n", s->name, class ? c->classes[i].name : c->jobs[i - c->nclasses].key);
		conf_keys_print(f, s, class ? (const void *)&c->classes[i] : (const void *)&c->jobs[i - c->nclasses]);
		res = res_of(c, i, &nres);
		for (size_t k = 0; k < *nres; k++)
			fprintf(f, "%s = %s\n", res[k].name, res[k].value);
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

const struct conf_class *conf_class_for_key(const struct conf *c, const char *key)
{
	for (size_t i = 0; i < c->nclasses; i++)
		if (c->classes[i].match[0] && fnmatch(c->classes[i].match, key, 0) == 0)
			return &c->classes[i];
	return NULL;
}

const struct conf_class *conf_class_by_name(const struct conf *c, const char *name)
{
	for (size_t i = 0; i < c->nclasses; i++)
		if (strcmp(c->classes[i].name, name) == 0)
			return &c->classes[i];
	return NULL;
}

const struct conf_job *conf_job_for_key(const struct conf *c, const char *key)
{
	for (size_t i = 0; i < c->njobs; i++)
		if (strcmp(c->jobs[i].key, key) == 0)
			return &c->jobs[i];
	return NULL;
}

static bool str_differs(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") != 0;
}

bool conf_needs_restart(const struct conf *old, const struct conf *c)
{
	return str_differs(c->daemon.socket, old->daemon.socket) || str_differs(c->daemon.root, old->daemon.root) ||
	       str_differs(c->daemon.state_dir, old->daemon.state_dir) ||
	       c->daemon.controllers != old->daemon.controllers;
}
