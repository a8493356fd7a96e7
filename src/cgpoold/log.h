/* log.h - logging to stderr, or to the journal when started by systemd */
#ifndef CGPOOL_LOG_H
#define CGPOOL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <syslog.h>

/* levels are syslog's: LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG.
 * The journal is used when stderr is the stream systemd connected to it
 * (JOURNAL_STREAM names stderr's device and inode); else lines go to stderr
 * as "IDENT: LEVEL: message". */
void log_init(const char *ident);
void log_set_level(int level);
int log_get_level(void);
/* "err", "warning", "notice", "info", "debug" -> level, or -EINVAL */
int log_level_parse(const char *name);
const char *log_level_name(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What a line is about, as journal fields (CGPOOL_EVENT=...). */
enum log_ev {
	LOG_EV_NONE,
	LOG_EV_BIND,      /* a key bound to a slot */
	LOG_EV_RUN_START, /* a run of the key began in its slot */
	LOG_EV_RUN_END,
	LOG_EV_RETIRE,    /* a slot handed to retirement */
	LOG_EV_OUTCOME,   /* the verified outcome of a retirement */
	LOG_EV_JOB_START, /* a supervised job's main process started */
	LOG_EV_JOB_EXIT,  /* ... and ended */
	LOG_EV_N,
};

/* The fields of one line; NULL or "" strings and a zero run are left out.
 * Journal fields: CGPOOL_KEY, CGPOOL_SLOT, CGPOOL_EVENT, CGPOOL_RUN,
 * CGPOOL_OUTCOME, CGPOOL_LRU_BYTES (when has_lru_bytes). */
struct log_fields {
	const char *key;
	const char *slot;
	enum log_ev event;
	unsigned long long run;
	const char *outcome;
	uint64_t lru_bytes;
	bool has_lru_bytes;
};

/* log_msg with fields. On stderr the text is the same as log_msg's; at
 * level debug the fields follow it as " [event=bind key=web slot=slot-3]". */
void log_event(int level, const struct log_fields *f, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *log_ev_name(enum log_ev ev);

/* One line of a supervised job's output (no newline; len bytes, may hold
 * any byte but NUL is cut): a journal entry with CGPOOL_KEY, CGPOOL_RUN and
 * CGPOOL_STREAM ("stdout", "stderr"), or "KEY[RUN]: line" on stderr. */
void log_job_line(const char *key, unsigned long long run, const char *stream, const char *line, size_t len);

/* Tests: send journal entries to fn (sd_journal_sendv's signature) instead
 * of the journal, as if stderr were the journal; NULL: back to stderr. */
typedef int (*log_journal_fn)(const struct iovec *iov, int n);
void log_set_journal(log_journal_fn fn);

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
