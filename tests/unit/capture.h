/* capture.h - unit tests: capture what the code under test logs to stderr */
#ifndef CGPOOL_TEST_CAPTURE_H
#define CGPOOL_TEST_CAPTURE_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct capture {
	int saved;
	char path[64];
	char text[8192];
};

static inline void capture_begin(struct capture *c)
{
	int fd;

	strcpy(c->path, "/tmp/cgpool-test-log-XXXXXX");
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
