/* cg_dir.c - cgroup2 directories by path, before the pool root is open (cg.h) */
#include "config.h"

#include "cg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define CG_DIR_PATH_MAX 4400

static int dir_path(const char *mnt, const char *path, const char *leaf, const char *file, char *out)
{
	int n = snprintf(out, CG_DIR_PATH_MAX, "%s%s%s%s%s%s", mnt, path, leaf ? "/" : "", leaf ? leaf : "",
			 file ? "/" : "", file ? file : "");

	return n < 0 || n >= CG_DIR_PATH_MAX ? -ENAMETOOLONG : 0;
}

int cg_dir_exists(const char *mnt, const char *path)
{
	char dir[CG_DIR_PATH_MAX];
	struct stat st;
	int r = dir_path(mnt, path, NULL, NULL, dir);

	if (r < 0)
		return r;
	return stat(dir, &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int cg_dir_mkdir(const char *mnt, const char *path, const char *leaf)
{
	char dir[CG_DIR_PATH_MAX];
	int r = dir_path(mnt, path, leaf, NULL, dir);

	if (r < 0)
		return r;
	return mkdir(dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

int cg_dir_move(const char *mnt, const char *path, const char *leaf, pid_t pid)
{
	char file[CG_DIR_PATH_MAX], num[16];
	int r = dir_path(mnt, path, leaf, "cgroup.procs", file);

	if (r < 0)
		return r;
	snprintf(num, sizeof(num), "%d", (int)pid);
	return file_write_str(file, num);
}

int cg_dir_first_pid(const char *mnt, const char *path, const char *leaf, pid_t *pid)
{
	char file[CG_DIR_PATH_MAX], buf[64];
	long v;
	int r = dir_path(mnt, path, leaf, "cgroup.procs", file);

	if (r < 0)
		return r;
	if (file_read(file, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9')
		return -ENOENT;
	v = strtol(buf, NULL, 10);
	if (v <= 0)
		return -ENOENT;
	*pid = (pid_t)v;
	return 0;
}

bool cg_dir_holds(pid_t pid, const char *path)
{
	char file[64], buf[4096];
	size_t n = strlen(path);

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	if (file_read(file, buf, sizeof(buf)) < 0)
		return false;
	return strncmp(buf, "0::", 3) == 0 && strncmp(buf + 3, path, n) == 0 && (buf[3 + n] == '\n' || buf[3 + n] == '\0');
}
