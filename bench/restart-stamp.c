/* restart-stamp.c - the two sides of bench/supervise.sh.
 *
 *   restart-stamp job FILE
 *       one instance of a job: appends "S <ns>" when it starts and
 *       "E <ns>" just before it exits 1 (CLOCK_MONOTONIC).
 *   restart-stamp fresh -n N DIR[,DIR...] -- FILE
 *       a supervisor that gives every start a fresh cgroup, as systemd
 *       does: N times mkdir DIR/fresh-I in every hierarchy, fork, the child
 *       writes itself into each cgroup.procs and execs "job FILE", wait for
 *       it, rmdir.
 *
 * The restart latency of either is S of one instance minus E of the one
 * before: exit seen, new cgroup (or the same slot), new process running. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_DIRS 8

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int stamp(const char *file, char what)
{
	char buf[64];
	int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644), n;

	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%c %lld\n", what, now_ns());
	n = write(fd, buf, (size_t)n) == n ? 0 : -1;
	close(fd);
	return n;
}

/* 4 KiB of page cache in a file of its own, as a job's data: the cgroup
 * it was charged to keeps it after the exit */
static int job(const char *file)
{
	char data[PATH_MAX + 32], page[4096];
	int fd;

	if (stamp(file, 'S') < 0)
		return 2;
	memset(page, 'x', sizeof(page));
	if (snprintf(data, sizeof(data), "%s.data.%d", file, (int)getpid()) >= (int)sizeof(data))
		return 2;
	fd = open(data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page))
		return 2;
	close(fd);
	if (stamp(file, 'E') < 0)
		return 2;
	return 1;
}

static int write_pid(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 64], buf[32];
	int fd, n, r = 0;

	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	if (write(fd, buf, (size_t)n) != n)
		r = -1;
	close(fd);
	return r;
}

static int fresh(unsigned long n, char *dirs, const char *self, const char *file)
{
	char *parent[MAX_DIRS], dir[MAX_DIRS][PATH_MAX];
	unsigned np = 0;

	for (char *d = strtok(dirs, ","); d && np < MAX_DIRS; d = strtok(NULL, ","))
		parent[np++] = d;
	for (unsigned long i = 0; i < n; i++) {
		pid_t pid;
		int st;

		for (unsigned h = 0; h < np; h++) {
			if (snprintf(dir[h], sizeof(dir[h]), "%s/fresh-%lu", parent[h], i) >= (int)sizeof(dir[h]) ||
			    mkdir(dir[h], 0755) < 0) {
				perror(dir[h]);
				return 1;
			}
		}
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			for (unsigned h = 0; h < np; h++)
				if (write_pid(dir[h], getpid()) < 0)
					_exit(3);
			execl(self, self, "job", file, (char *)NULL);
			_exit(4);
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 1) {
			fprintf(stderr, "restart-stamp: instance %lu failed (status %d)\n", i, st);
			return 1;
		}
		for (unsigned h = np; h-- > 0;)
			if (rmdir(dir[h]) < 0)
				perror(dir[h]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "job") == 0)
		return job(argv[2]);
	if (argc == 7 && strcmp(argv[1], "fresh") == 0 && strcmp(argv[2], "-n") == 0 && strcmp(argv[5], "--") == 0)
		return fresh(strtoul(argv[3], NULL, 10), argv[4], argv[0][0] == '/' ? argv[0] : realpath(argv[0], NULL),
			     argv[6]);
	fprintf(stderr, "usage: restart-stamp job FILE | restart-stamp fresh -n N DIR[,DIR...] -- FILE\n");
	return 2;
}
