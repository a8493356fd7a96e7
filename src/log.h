/* log.h - logging to stderr, or to the journal when started by systemd */
#ifndef CGPOOL_LOG_H
#define CGPOOL_LOG_H

#include <stddef.h>
#include <syslog.h>

/* levels are syslog's: LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG */
void log_init(const char *ident);
void log_set_level(int level);
int log_get_level(void);
/* "err", "warning", "notice", "info", "debug" -> level, or -EINVAL */
int log_level_parse(const char *name);
const char *log_level_name(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line of a supervised job's output (no newline; len bytes, may hold
 * any byte but NUL is cut): a journal entry with CGPOOL_KEY, CGPOOL_RUN and
 * CGPOOL_STREAM ("stdout", "stderr"), or "KEY[RUN]: line" on stderr. */
void log_job_line(const char *key, unsigned long long run, const char *stream, const char *line, size_t len);

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
