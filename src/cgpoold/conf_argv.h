/* conf_argv.h - command lines of supervised jobs */
#ifndef CGPOOL_CONF_ARGV_H
#define CGPOOL_CONF_ARGV_H

#include <stddef.h>

/* Split s into words like a POSIX shell, without expansion (conf_argv.c says the
 * rules). On success *out is a NULL-terminated array (argv_free) and the
 * number of words (>= 1) is returned; else -EINVAL with *why saying what is
 * wrong (unterminated quote, trailing backslash, no command) or -ENOMEM. */
int argv_split(const char *s, char ***out, const char **why);
void argv_free(char **argv);

/* The program a job runs: an absolute path as it is, a name without a slash
 * looked up in path (a PATH value; NULL: the usual system directories).
 * 0 with the absolute path in buf, -ENOENT when not found, -EACCES when found
 * but not an executable regular file, -EINVAL for a relative path. */
int argv_find_program(const char *name, const char *path, char *buf, size_t len);

#endif
