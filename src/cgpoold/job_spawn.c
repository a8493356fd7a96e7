/* job_spawn.c - starting a job's process inside its slot.
 *
 * Where the caller gives a cgroup v2 directory, the child is born in it:
 * clone3() with CLONE_INTO_CGROUP (5.7+). Where the caller gives a place()
 * function (hierarchies clone3 cannot reach: v1, or no clone3), the child
 * first waits on a pipe; place() writes its pid to every hierarchy and only
 * then is the child released. Either way the job's program never runs one
 * instruction outside its slot.
 *
 * Between fork and execve the child makes system calls only: new session,
 * default signal dispositions and mask, its three descriptors, groups, gid,
 * uid, working directory, execve. A failure there is written to a
 * close-on-exec pipe as (stage, errno); end of file on that pipe means the
 * program runs. */
#include "config.h"

#include "job_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#define FD_HIGH 64 /* the child's descriptors are moved above this before dup2 to 0-2 */

struct report {
	int stage;
	int err;
};

static const char *const stage_names[] = {
	[SPAWN_OK] = "ok", [SPAWN_HOLD] = "placement", [SPAWN_SESSION] = "setsid", [SPAWN_STDIO] = "stdio",
	[SPAWN_GROUPS] = "setgroups", [SPAWN_GID] = "setgid", [SPAWN_UID] = "setuid",
	[SPAWN_CHDIR] = "chdir", [SPAWN_EXEC] = "execve",
};

const char *spawn_stage_name(enum spawn_stage st)
{
	return (unsigned)st < sizeof(stage_names) / sizeof(stage_names[0]) ? stage_names[st] : "?";
}

/* ---- in the child: system calls only */

static _Noreturn void child_fail(int errfd, enum spawn_stage st, int err)
{
	struct report rep = { st, err };

	(void)!write(errfd, &rep, sizeof(rep));
	_exit(127);
}

/* fds 0-2 from fds[0..2], then 3 and 4 from keep[0..1] (where >= 0) */
static int child_fds(const int fds[3], const int keep[2])
{
	int moved[5], want[5] = { fds[0], fds[1], fds[2], keep[0], keep[1] };

	/* first above 0-4, so that dup2 below cannot clobber one of them */
	for (int i = 0; i < 5; i++) {
		if (i >= 3 && want[i] < 0)
			moved[i] = -1;
		else if (want[i] >= 0)
			moved[i] = fcntl(want[i], F_DUPFD, FD_HIGH);
		else
			moved[i] = open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_NOCTTY);
		if (i < 3 && moved[i] < 0)
			return -errno;
		if (i >= 3 && want[i] >= 0 && moved[i] < 0)
			return -errno;
	}
	for (int i = 0; i < 5; i++) {
		if (moved[i] < 0)
			continue;
		if (dup2(moved[i], i) < 0)
			return -errno;
		close(moved[i]);
	}
	return 0;
}

static void child_signals(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t all;

	/* the standard signals: the daemon's handlers and ignores are among
	 * them (real-time ones it never touches) */
	for (int sig = 1; sig < 32; sig++)
		sigaction(sig, &sa, NULL); /* EINVAL for KILL and STOP: fine */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

static _Noreturn void child_run(const struct spawn *sp, int holdfd, int errfd)
{
	char c;

	/* the report pipe out of the way of the descriptors the job gets */
	if (errfd < FD_HIGH) {
		int high = fcntl(errfd, F_DUPFD_CLOEXEC, FD_HIGH);
		if (high >= 0)
			errfd = high;
	}
	if (holdfd >= 0) {
		ssize_t n;
		do
			n = read(holdfd, &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			child_fail(errfd, SPAWN_HOLD, n < 0 ? errno : ECANCELED);
		close(holdfd);
	}
	if (setsid() < 0)
		child_fail(errfd, SPAWN_SESSION, errno);
	child_signals();
	if (child_fds(sp->fds, sp->keep) < 0)
		child_fail(errfd, SPAWN_STDIO, errno);
	if (sp->set_ids) {
		if (setgroups(sp->ngroups, sp->groups) < 0)
			child_fail(errfd, SPAWN_GROUPS, errno);
		if (setresgid(sp->gid, sp->gid, sp->gid) < 0)
			child_fail(errfd, SPAWN_GID, errno);
		if (setresuid(sp->uid, sp->uid, sp->uid) < 0)
			child_fail(errfd, SPAWN_UID, errno);
	}
	if (chdir(sp->cwd ? sp->cwd : "/") < 0)
		child_fail(errfd, SPAWN_CHDIR, errno);
	/* the daemon's descriptors are close-on-exec; close the rest of what
	 * might leak (inherited without the flag), errfd aside */
#ifdef SYS_close_range
	unsigned first = sp->keep[1] >= 0 ? 5 : sp->keep[0] >= 0 ? 4 : 3;
	if ((unsigned)errfd > first)
		syscall(SYS_close_range, first, (unsigned)errfd - 1, 0U);
	syscall(SYS_close_range, (unsigned)errfd + 1, ~0U, 0U);
#endif
	execve(sp->path, sp->argv, sp->envp);
	child_fail(errfd, SPAWN_EXEC, errno);
}

/* ---- in the daemon */

static pid_t clone_into(const struct spawn *sp, int *pidfd)
{
	struct clone_args args;

	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP | CLONE_PIDFD;
	args.pidfd = (uint64_t)(uintptr_t)pidfd;
	args.exit_signal = SIGCHLD;
	args.cgroup = (uint64_t)sp->cgroup_fd;
	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0) {
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		return fd;
	}
#endif
	(void)pid;
	return -1;
}

/* the child never got to run the job: take it away */
static void discard(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int release(const struct spawn *sp, pid_t pid, int holdfd)
{
	int r = sp->place(pid, sp->ud);

	if (r == 0 && write(holdfd, "g", 1) != 1)
		r = -errno;
	return r;
}

int spawn_start(const struct spawn *sp, pid_t *pid, int *pidfd, int *errfd)
{
	int ep[2], hp[2] = { -1, -1 }, pfd = -1, r = 0;
	pid_t child;

	if (!sp || !sp->path || !sp->argv || !sp->envp || !pid || !errfd)
		return -EINVAL;
	if (pipe2(ep, O_CLOEXEC) < 0)
		return -errno;
	if (sp->place && pipe2(hp, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	child = sp->cgroup_fd >= 0 ? clone_into(sp, &pfd) : fork();
	if (child < 0) {
		r = -errno;
		goto out;
	}
	if (child == 0) {
		close(ep[0]);
		if (hp[1] >= 0)
			close(hp[1]);
		child_run(sp, hp[0], ep[1]);
	}
	if (sp->place && (r = release(sp, child, hp[1])) < 0) {
		discard(child);
		if (pfd >= 0)
			close(pfd);
		goto out;
	}
	*pid = child;
	if (pidfd)
		*pidfd = pfd >= 0 ? pfd : open_pidfd(child);
	else if (pfd >= 0)
		close(pfd);
	*errfd = ep[0];
	ep[0] = -1;
out:
	if (ep[0] >= 0)
		close(ep[0]);
	close(ep[1]);
	if (hp[0] >= 0)
		close(hp[0]);
	if (hp[1] >= 0)
		close(hp[1]);
	return r;
}

int spawn_outcome(int errfd, enum spawn_stage *stage)
{
	struct report rep;
	ssize_t n;

	do
		n = read(errfd, &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -EAGAIN : -errno;
	if (n == 0)
		return 0;
	if (n != sizeof(rep) || rep.err <= 0)
		return -EIO;
	if (stage)
		*stage = (enum spawn_stage)rep.stage;
	return -rep.err;
}
