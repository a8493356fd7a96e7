/* log.c - logging to stderr, or to the journal when started by systemd */
#include "config.h"

#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define SD_JOURNAL_SUPPRESS_LOCATION /* CODE_FILE would always say log.c */
#include <systemd/sd-journal.h>

static const char *const level_names[] = {
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

static const char *const ev_names[LOG_EV_N] = {
	[LOG_EV_NONE] = "", [LOG_EV_BIND] = "bind", [LOG_EV_RUN_START] = "run-start", [LOG_EV_RUN_END] = "run-end",
	[LOG_EV_RETIRE] = "retire", [LOG_EV_OUTCOME] = "outcome", [LOG_EV_JOB_START] = "job-start",
	[LOG_EV_JOB_EXIT] = "job-exit",
};

static int log_level = LOG_INFO;
static const char *log_ident = "cgpoold";
static bool to_journal;
static log_journal_fn journal_send = sd_journal_sendv;

/* systemd's documented test: JOURNAL_STREAM is "DEVICE:INODE" of the stream
 * it connected to the journal, and stderr is still that stream (not a file
 * or pipe a wrapper redirected it to) */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	if (!e || !*e)
		return false;
	errno = 0;
	dev = strtoull(e, &end, 10);
	if (errno || end == e || *end != ':')
		return false;
	e = end + 1;
	ino = strtoull(e, &end, 10);
	if (errno || end == e || *end)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *ident)
{
	log_ident = ident;
	to_journal = stderr_is_journal();
}

void log_set_journal(log_journal_fn fn)
{
	journal_send = fn ? fn : sd_journal_sendv;
	to_journal = fn != NULL;
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

int log_level_parse(const char *name)
{
	for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
		if (level_names[i] && strcmp(name, level_names[i]) == 0)
			return i;
	return -EINVAL;
}

const char *log_level_name(int level)
{
	if (level < 0 || level > LOG_DEBUG || !level_names[level])
		return "?";
	return level_names[level];
}

const char *log_ev_name(enum log_ev ev)
{
	return ev > LOG_EV_NONE && ev < LOG_EV_N ? ev_names[ev] : "";
}

static bool has(const char *s)
{
	return s && *s;
}

/* " [event=bind key=web ...]" into buf (len > 0); returns its length */
static size_t fields_short(const struct log_fields *f, char *buf, size_t len)
{
	const char *sep = " [";
	size_t n = 0;

#define ADD(...) do { \
		int m_ = snprintf(buf + n, len - n, __VA_ARGS__); \
		if (m_ > 0) n += (size_t)m_ < len - n ? (size_t)m_ : len - n - 1; \
		sep = " "; \
	} while (0)
	if (f->event != LOG_EV_NONE)
		ADD("%sevent=%s", sep, log_ev_name(f->event));
	if (has(f->key))
		ADD("%skey=%s", sep, f->key);
	if (has(f->slot))
		ADD("%sslot=%s", sep, f->slot);
	if (f->run)
		ADD("%srun=%llu", sep, f->run);
	if (has(f->outcome))
		ADD("%soutcome=%s", sep, f->outcome);
	if (f->has_lru_bytes)
		ADD("%slru_bytes=%" PRIu64, sep, f->lru_bytes);
	if (n)
		ADD("]");
#undef ADD
	return n;
}

/* one line, one write(2): lines of several threads or processes sharing
 * stderr do not interleave, and a line costs one system call */
static void log_line(int level, const struct log_fields *f, const char *fmt, va_list ap)
{
	char buf[2048];
	int n = snprintf(buf, sizeof(buf), "%s: %s: ", log_ident, log_level_name(level)), m;

	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return;
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	n += (size_t)m < sizeof(buf) - (size_t)n - 1 ? m : (int)(sizeof(buf) - (size_t)n - 2);
	if (f && log_level >= LOG_DEBUG)
		n += (int)fields_short(f, buf + n, sizeof(buf) - (size_t)n - 1);
	buf[n++] = '\n';
	fflush(stderr);
	while (write(STDERR_FILENO, buf, (size_t)n) < 0 && errno == EINTR)
		;
}

/* "NAME=value" into the next part of buf as the next iovec */
struct jbuf {
	struct iovec iov[10];
	int n;
	char text[1024];
	size_t used;
};

static void jfield(struct jbuf *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jfield(struct jbuf *j, const char *fmt, ...)
{
	size_t room = sizeof(j->text) - j->used;
	va_list ap;
	int m;

	if (j->n >= (int)(sizeof(j->iov) / sizeof(j->iov[0])) || room < 2)
		return;
	va_start(ap, fmt);
	m = vsnprintf(j->text + j->used, room, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= room)
		return; /* a field cut short would lie: left out */
	j->iov[j->n++] = (struct iovec){ j->text + j->used, (size_t)m };
	j->used += (size_t)m + 1;
}

static void log_journal(int level, const struct log_fields *f, const char *fmt, va_list ap)
{
	char msg[2048] = "MESSAGE=";
	struct jbuf j = { .n = 1 };
	int m = vsnprintf(msg + 8, sizeof(msg) - 8, fmt, ap);

	if (m < 0)
		return;
	j.iov[0] = (struct iovec){ msg, 8 + ((size_t)m < sizeof(msg) - 8 ? (size_t)m : sizeof(msg) - 9) };
	jfield(&j, "PRIORITY=%d", level);
	jfield(&j, "SYSLOG_IDENTIFIER=%s", log_ident);
	if (f && f->event != LOG_EV_NONE)
		jfield(&j, "CGPOOL_EVENT=%s", log_ev_name(f->event));
	if (f && has(f->key))
		jfield(&j, "CGPOOL_KEY=%s", f->key);
	if (f && has(f->slot))
		jfield(&j, "CGPOOL_SLOT=%s", f->slot);
	if (f && f->run)
		jfield(&j, "CGPOOL_RUN=%llu", f->run);
	if (f && has(f->outcome))
		jfield(&j, "CGPOOL_OUTCOME=%s", f->outcome);
	if (f && f->has_lru_bytes)
		jfield(&j, "CGPOOL_LRU_BYTES=%" PRIu64, f->lru_bytes);
	journal_send(j.iov, j.n);
}

static void log_v(int level, const struct log_fields *f, const char *fmt, va_list ap)
{
	if (to_journal)
		log_journal(level, f, fmt, ap);
	else
		log_line(level, f, fmt, ap);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_v(level, NULL, fmt, ap);
	va_end(ap);
}

void log_event(int level, const struct log_fields *f, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_v(level, f, fmt, ap);
	va_end(ap);
}

void log_job_line(const char *key, unsigned long long run, const char *stream, const char *line, size_t len)
{
	char buf[4352];
	int n;

	len = strnlen(line, len);
	if (to_journal) {
		struct jbuf j = { .n = 0 };

		n = snprintf(buf, sizeof(buf), "MESSAGE=%.*s", (int)len, line);
		if (n < 0)
			return;
		j.iov[j.n++] = (struct iovec){ buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1 };
		jfield(&j, "PRIORITY=%d", LOG_INFO);
		jfield(&j, "SYSLOG_IDENTIFIER=%s", key);
		jfield(&j, "CGPOOL_KEY=%s", key);
		jfield(&j, "CGPOOL_RUN=%llu", run);
		jfield(&j, "CGPOOL_STREAM=%s", stream);
		journal_send(j.iov, j.n);
		return;
	}
	n = snprintf(buf, sizeof(buf), "%s[%llu]: %.*s\n", key, run, (int)len, line);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf)) {
		n = sizeof(buf);
		buf[n - 1] = '\n';
	}
	while (write(STDERR_FILENO, buf, (size_t)n) < 0 && errno == EINTR)
		;
}
