/* capture.h - unit tests: capture what the code under test logs to stderr */
#ifndef CGPOOL_TEST_CAPTURE_H
#define CGPOOL_TEST_CAPTURE_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct capture {
	int saved;
	char path[PATH_MAX]; /* in $TMPDIR (/tmp when unset) */
	char text[8192];
};

static inline void capture_begin(struct capture *c)
{
	const char *t = getenv("TMPDIR");
	int fd;

	assert_true(snprintf(c->path, sizeof(c->path), "%s/cgpool-test-log-XXXXXX", t && *t ? t : "/tmp") <
		    (int)sizeof(c->path));
	fflush(stderr);
	fd = mkstemp(c->path);
	assert_true(fd >= 0);
	c->saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

static inline void capture_end(struct capture *c)
{
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	assert_true(file_read(c->path, c->text, sizeof(c->text)) >= 0);
	unlink(c->path);
}

#endif
