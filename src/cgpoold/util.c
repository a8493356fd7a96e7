/* util.c - small parsers and file helpers shared by the daemon's modules */
#include "config.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* number followed by a unit from table; scale must not overflow */
struct unit {
	const char *suffix;
	uint64_t scale;
};

static int parse_scaled(const char *s, const struct unit *units, size_t nunits, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	for (size_t i = 0; i < nunits; i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (units[i].scale && v > UINT64_MAX / units[i].scale)
			return -ERANGE;
		*out = v * units[i].scale;
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *out)
{
	static const struct unit units[] = {
		{ "", 1 }, { "K", 1ULL << 10 }, { "M", 1ULL << 20 }, { "G", 1ULL << 30 }, { "T", 1ULL << 40 },
		{ "k", 1ULL << 10 }, { "m", 1ULL << 20 }, { "g", 1ULL << 30 }, { "t", 1ULL << 40 },
	};

	if (s && strcmp(s, "max") == 0) {
		*out = SIZE_MAX_VALUE;
		return 0;
	}
	return parse_scaled(s, units, ARRAY_SIZE(units), out);
}

int parse_duration_ms(const char *s, uint64_t *out)
{
	static const struct unit units[] = {
		{ "", 1000 }, { "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 }, { "h", 3600 * 1000 },
	};

	return parse_scaled(s, units, ARRAY_SIZE(units), out);
}

int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static bool key_char_ok(unsigned char c)
{
	return isalnum(c) || strchr("._:@+=,-", c) != NULL;
}

int key_validate(const char *key, const char **reason)
{
	size_t len;

	if (!key || !*key) {
		*reason = "key is empty";
		return -EINVAL;
	}
	len = strnlen(key, KEY_MAX + 1);
	if (len > KEY_MAX) {
		*reason = "key is longer than 128 bytes";
		return -EINVAL;
	}
	if (strcmp(key, ".") == 0 || strcmp(key, "..") == 0) {
		*reason = "key may not be \".\" or \"..\"";
		return -EINVAL;
	}
	if (key[0] == '.' || key[0] == '-') {
		*reason = "key may not start with '.' or '-'";
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)key[i];
		if (c == '/') {
			*reason = "key may not contain '/'";
			return -EINVAL;
		}
		if (c < 0x20 || c == 0x7f) {
			*reason = "key may not contain control characters";
			return -EINVAL;
		}
		if (!key_char_ok(c)) {
			*reason = "key may contain only letters, digits and . _ : @ + = , -";
			return -EINVAL;
		}
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_replace(const char *path, const void *data, size_t len, mode_t mode, bool durable)
{
	char tmp[PATH_MAX];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	/* never through a link planted at the temporary name, never into a
	 * file somebody else opened: a new file, or none */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) /* left by an earlier crash */
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (r == 0 && durable && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int file_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_replace(path, data, len, mode, true);
}

int file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	return write_replace(path, data, len, mode, false);
}

static ssize_t read_upto(const char *path, char *buf, size_t len, bool once)
{
	size_t off = 0;
	int fd;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (off < len - 1) {
		ssize_t n = read(fd, buf + off, len - 1 - off);
		if (n < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		off += (size_t)n;
		if (once)
			break;
	}
	close(fd);
	buf[off] = '\0';
	return (ssize_t)off;
}

ssize_t file_read(const char *path, char *buf, size_t len)
{
	return read_upto(path, buf, len, false);
}

ssize_t file_read_once(const char *path, char *buf, size_t len)
{
	return read_upto(path, buf, len, true);
}

int file_write_str(const char *path, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int64_t clock_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t now_mono_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
}

int64_t now_real_us(void)
{
	return clock_us(CLOCK_REALTIME);
}

/* the largest unit that divides ms: "10m", "1500ms", "0" */
void format_duration_ms(char *buf, size_t len, uint64_t ms)
{
	static const struct {
		uint64_t scale;
		const char *unit;
	} units[] = { { 3600000, "h" }, { 60000, "m" }, { 1000, "s" }, { 1, "ms" } };

	snprintf(buf, len, "0");
	for (size_t i = 0; ms && i < ARRAY_SIZE(units); i++) {
		if (ms % units[i].scale == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ms / units[i].scale), units[i].unit);
			return;
		}
	}
}

int proc_start_time(pid_t pid, uint64_t *out)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = file_read_once(path, buf, sizeof(buf));
	if (n <= 0)
		return -ESRCH;
	buf[n < (ssize_t)sizeof(buf) ? n : (ssize_t)sizeof(buf) - 1] = '\0';
	/* the name may hold anything: fields go on after its last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &v) != 1)
		return -ESRCH;
	*out = v;
	return 0;
}
