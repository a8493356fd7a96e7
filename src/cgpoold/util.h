/* util.h - small parsers and file helpers shared by the daemon's modules */
#ifndef CGPOOL_UTIL_H
#define CGPOOL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KEY_MAX 128                /* bytes in a job key, without the NUL */
#define SIZE_MAX_VALUE UINT64_MAX  /* what "max" parses to */

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* "4096", "512K", "4M", "2G", "1T" (powers of 1024) or "max". */
int parse_size(const char *s, uint64_t *out);
/* "250ms", "30s", "10m", "1h"; a bare number is seconds. */
int parse_duration_ms(const char *s, uint64_t *out);
/* the form parse_duration_ms reads, in the largest unit that divides ms:
 * "10m", "1500ms", "0" */
void format_duration_ms(char *buf, size_t len, uint64_t ms);
/* yes/no, true/false, on/off, 1/0 */
int parse_bool(const char *s, bool *out);
/* decimal integer within [min, max] */
int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A job key: 1..KEY_MAX bytes of [A-Za-z0-9._:@+=,-], not "." or "..",
 * not starting with '.' or '-'. On -EINVAL *reason says why (static text). */
int key_validate(const char *key, const char **reason);

/* Write data to path through a temporary file and rename(2): readers see
 * the old content or the new one, never a mix. The file is fsync'ed. */
int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* The same without fsync: it survives the process (a crash of the daemon),
 * not the machine; for state that means nothing after a reboot. */
int file_replace(const char *path, const void *data, size_t len, mode_t mode);
/* Read at most len-1 bytes of a (small, kernel or state) file, NUL-terminated.
 * Returns the number of bytes read or a negative errno. */
ssize_t file_read(const char *path, char *buf, size_t len);
/* file_read in one read(2), for a file the kernel makes whole at its first
 * read (a seq_file of one record, such as /proc/PID/cgroup) */
ssize_t file_read_once(const char *path, char *buf, size_t len);
/* Write a string to an existing file in one write(2). 0 or -errno. */
int file_write_str(const char *path, const char *s);
/* mkdir -p; 0 or -errno */
int mkdir_p(const char *path, mode_t mode);

/* CLOCK_MONOTONIC and CLOCK_REALTIME in microseconds */
int64_t now_mono_us(void);
int64_t now_real_us(void);
/* A process's start time (/proc/PID/stat field 22, clock ticks since boot):
 * with its pid, it names one process; -ESRCH when there is none. */
int proc_start_time(pid_t pid, uint64_t *out);

#endif
