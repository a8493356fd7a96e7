/* log.c - logging to stderr, or to the journal when started by systemd */
#include "config.h"

#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

static const char *const level_names[] = {
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

static int log_level = LOG_INFO;
static const char *log_ident = "cgpoold";
static int log_to_journal;

void log_init(const char *ident)
{
	log_ident = ident;
	/* systemd sets JOURNAL_STREAM when stderr is connected to the journal */
	log_to_journal = getenv("JOURNAL_STREAM") != NULL;
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

/* one line, one write(2): lines of several threads or processes sharing
 * stderr do not interleave, and a line costs one system call */
static void log_line(int level, const char *fmt, va_list ap)
{
	char buf[2048];
	int n = snprintf(buf, sizeof(buf), "%s: %s: ", log_ident, log_level_name(level)), m;

	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return;
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	n += (size_t)m < sizeof(buf) - (size_t)n - 1 ? m : (int)(sizeof(buf) - (size_t)n - 2);
	buf[n++] = '\n';
	fflush(stderr);
	while (write(STDERR_FILENO, buf, (size_t)n) < 0 && errno == EINTR)
		;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	if (log_to_journal) {
		sd_journal_printv(level, fmt, ap);
	} else {
		log_line(level, fmt, ap);
	}
	va_end(ap);
}

void log_job_line(const char *key, unsigned long long run, const char *stream, const char *line, size_t len)
{
	char buf[4352];
	int n;

	len = strnlen(line, len);
	if (log_to_journal) {
		sd_journal_send("MESSAGE=%.*s", (int)len, line, "PRIORITY=%d", LOG_INFO, "CGPOOL_KEY=%s", key,
				"CGPOOL_RUN=%llu", run, "CGPOOL_STREAM=%s", stream, "SYSLOG_IDENTIFIER=%s", key, NULL);
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
