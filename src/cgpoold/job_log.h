/* job_log.h - a supervised job's output, line by line, into the log */
#ifndef CGPOOL_JOB_LOG_H
#define CGPOOL_JOB_LOG_H

#include <ev.h>

#define JOBLOG_LINE_MAX 4096 /* longer lines are cut into entries of this size */

struct joblog;

/* Read fd (the read end of the job's stdout or stderr pipe; taken over and
 * closed here) in loop; each line becomes one log_job_line(key, run,
 * stream). At end of file (every writer gone) or a read error, closed(ud)
 * is called and the joblog frees itself. */
int joblog_new(struct ev_loop *loop, int fd, const char *key, unsigned long long run, const char *stream,
	       void (*closed)(void *ud), void *ud, struct joblog **out);
/* Stop reading now: what is buffered is written, closed() is not called. */
void joblog_free(struct joblog *l);

#endif
