/* cg_mount.c - the cgroup2 mount's favordynmods option ([daemon]
 * favordynmods = yes).
 *
 * Every move of a process between cgroups (a write to cgroup.procs) takes
 * the kernel's global cgroup_threadgroup_rwsem for writing, and that waits
 * for an RCU grace period: several milliseconds a move, on every hierarchy,
 * which is most of the time an Attach takes. With favordynmods (Linux 6.0+)
 * the semaphore stays in its slow mode for good: a move costs microseconds,
 * and every fork and exit on the node a little more. It is an option of the
 * cgroup2 superblock, so it is set by reconfiguring that superblock
 * (fspick, fsconfig): a reconfiguration sets the options it is given and
 * clears the others, so every option the superblock has now
 * (/proc/self/mountinfo: nsdelegate, memory_recursiveprot, ...) is given
 * again beside favordynmods. The mount's own flags (nosuid, nodev, noexec)
 * are not touched. */
#include "config.h"

#include "cg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef FSPICK_CLOEXEC
#define FSPICK_CLOEXEC 0x00000001
#endif
#define CMD_SET_FLAG 0    /* FSCONFIG_SET_FLAG */
#define CMD_RECONFIGURE 7 /* FSCONFIG_CMD_RECONFIGURE */

/* The super options of the cgroup2 mount at mnt ("rw,nsdelegate"), from
 * /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTS ... - cgroup2 SRC SUPER" */
static int super_options(const char *mnt, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r == -ENOENT && fgets(line, sizeof(line), f)) {
		char point[4096], src[4096], super[1024];
		const char *dash = strstr(line, " - cgroup2 ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 || strcmp(point, mnt) != 0)
			continue;
		if (sscanf(dash + 11, "%4095s %1023s", src, super) != 2)
			continue;
		r = snprintf(out, len, "%s", super) >= (int)len ? -ENAMETOOLONG : 0;
	}
	fclose(f);
	return r;
}

static bool has_option(const char *opts, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = opts; *p;) {
		size_t w = strcspn(p, ",");
		if (w == n && strncmp(p, name, n) == 0)
			return true;
		p += w + (p[w] == ',');
	}
	return false;
}

int cg_favordynmods(struct cg *cg, char *done, size_t len)
{
#if defined(SYS_fspick) && defined(SYS_fsconfig)
	char opts[1024];
	const char *mnt;
	int fd, r;

	if (!cg->real || cg->track < 0 || !cg->hier[cg->track].v2)
		return -EOPNOTSUPP;
	mnt = cg->hier[cg->track].mount;
	r = super_options(mnt, opts, sizeof(opts));
	if (r < 0)
		return r;
	if (has_option(opts, "favordynmods")) {
		snprintf(done, len, "%s has favordynmods already (%s)", mnt, opts);
		return 0;
	}
	fd = (int)syscall(SYS_fspick, AT_FDCWD, mnt, FSPICK_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = 0;
	for (const char *p = opts; r == 0 && *p;) {
		char name[128];
		size_t w = strcspn(p, ",");
		snprintf(name, sizeof(name), "%.*s", (int)(w < sizeof(name) ? w : sizeof(name) - 1), p);
		p += w + (p[w] == ',');
		if (strcmp(name, "rw") == 0 || strcmp(name, "ro") == 0)
			continue; /* the superblock's, and not a cgroup2 parameter */
		if (syscall(SYS_fsconfig, fd, CMD_SET_FLAG, name, NULL, 0) < 0)
			r = -errno;
	}
	if (r == 0 && syscall(SYS_fsconfig, fd, CMD_SET_FLAG, "favordynmods", NULL, 0) < 0)
		r = -errno; /* EINVAL: a kernel before 6.0 has no such option */
	if (r == 0 && syscall(SYS_fsconfig, fd, CMD_RECONFIGURE, NULL, NULL, 0) < 0)
		r = -errno;
	close(fd);
	if (r == 0)
		snprintf(done, len, "%s reconfigured with favordynmods (it had %s)", mnt, opts);
	return r;
#else
	(void)cg;
	(void)done;
	(void)len;
	return -ENOSYS;
#endif
}
