/* job_exec.c - what a supervised job's process gets, resolved before the
 * fork (the child only makes system calls: job_spawn.c). */
#include "config.h"

#include "job_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_argv.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define MAX_GROUPS 1024

/* set NAME=VALUE (entry is "NAME=VALUE"), replacing an earlier NAME */
static int env_set(struct job_exec *x, const char *entry)
{
	size_t nl = strcspn(entry, "=");
	char *dup = strdup(entry), **grown;

	if (!dup)
		return -ENOMEM;
	for (size_t i = 0; i < x->nenv; i++) {
		if (strncmp(x->envp[i], entry, nl) == 0 && x->envp[i][nl] == '=') {
			free(x->envp[i]);
			x->envp[i] = dup;
			return 0;
		}
	}
	grown = realloc(x->envp, (x->nenv + 2) * sizeof(*grown));
	if (!grown) {
		free(dup);
		return -ENOMEM;
	}
	x->envp = grown;
	x->envp[x->nenv++] = dup;
	x->envp[x->nenv] = NULL;
	return 0;
}

static int env_setf(struct job_exec *x, const char *name, const char *value)
{
	char buf[PATH_MAX + 64];

	if (snprintf(buf, sizeof(buf), "%s=%s", name, value) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	return env_set(x, buf);
}

static int prepare_ids(const struct conf_job *cj, struct job_exec *x, char *err, size_t errlen)
{
	struct passwd *pw;
	struct group *gr;
	int n = MAX_GROUPS;

	if (!cj->user && !cj->group)
		return 0;
	errno = 0;
	pw = getpwnam(cj->user ? cj->user : "root");
	if (!pw) {
		snprintf(err, errlen, "user %s: %s", cj->user ? cj->user : "root", errno ? strerror(errno) : "no such user");
		return errno ? -errno : -ENOENT;
	}
	x->sp.set_ids = true;
	x->sp.uid = pw->pw_uid;
	x->sp.gid = pw->pw_gid;
	if (cj->group) {
		errno = 0;
		gr = getgrnam(cj->group);
		if (!gr) {
			snprintf(err, errlen, "group %s: %s", cj->group, errno ? strerror(errno) : "no such group");
			return errno ? -errno : -ENOENT;
		}
		x->sp.gid = gr->gr_gid;
	}
	x->groups = calloc(MAX_GROUPS, sizeof(gid_t));
	if (!x->groups)
		return -ENOMEM;
	if (getgrouplist(pw->pw_name, x->sp.gid, x->groups, &n) < 0)
		n = MAX_GROUPS; /* more than that: the first MAX_GROUPS */
	x->sp.ngroups = (size_t)n;
	if (cj->user) {
		int r = env_setf(x, "HOME", pw->pw_dir);
		if (r == 0)
			r = env_setf(x, "USER", pw->pw_name);
		if (r == 0)
			r = env_setf(x, "LOGNAME", pw->pw_name);
		if (r == 0)
			r = env_setf(x, "SHELL", pw->pw_shell && *pw->pw_shell ? pw->pw_shell : "/bin/sh");
		if (r < 0)
			return r;
		struct stat st;
		/* the home directory when there is one (nobody's is /nonexistent) */
		if (!cj->working_directory && stat(pw->pw_dir, &st) == 0 && S_ISDIR(st.st_mode))
			snprintf(x->cwd, sizeof(x->cwd), "%s", pw->pw_dir);
	}
	return 0;
}

/* one of stdout/stderr: the fd the child gets, and our read end for journal */
static int prepare_output(const struct conf_output *o, int std, int *child_fd, bool *own, int *read_end, char *err,
			  size_t errlen)
{
	int p[2], fd;

	*own = false;
	*read_end = -1;
	switch (o->kind) {
	case OUTPUT_NULL:
		*child_fd = -1;
		return 0;
	case OUTPUT_INHERIT:
		*child_fd = std;
		return 0;
	case OUTPUT_FILE:
	case OUTPUT_APPEND:
		fd = open(o->path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (o->kind == OUTPUT_FILE ? O_TRUNC : O_APPEND),
			  0644);
		if (fd < 0) {
			snprintf(err, errlen, "open %s: %s", o->path, strerror(errno));
			return -errno;
		}
		*child_fd = fd;
		*own = true;
		return 0;
	default:
		if (pipe2(p, O_CLOEXEC) < 0) {
			snprintf(err, errlen, "pipe: %s", strerror(errno));
			return -errno;
		}
		/* room for 1 MiB of output while no daemon reads it (best effort) */
		fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
		*child_fd = p[1];
		*own = true;
		*read_end = p[0];
		return 0;
	}
}

static int prepare_program(const struct conf_job *cj, struct job_exec *x, char *err, size_t errlen)
{
	const char *why = NULL, *path = DEFAULT_PATH;
	int r = argv_split(cj->exec, &x->argv, &why);

	if (r < 0) {
		snprintf(err, errlen, "exec: %s", why ? why : strerror(-r));
		return r;
	}
	for (size_t i = 0; i < x->nenv; i++)
		if (strncmp(x->envp[i], "PATH=", 5) == 0)
			path = x->envp[i] + 5;
	r = argv_find_program(x->argv[0], path, x->path, sizeof(x->path));
	if (r < 0)
		snprintf(err, errlen, "exec: %s: %s", x->argv[0],
			 r == -ENOENT && !strchr(x->argv[0], '/') ? "not found in PATH" : strerror(-r));
	return r;
}

int job_exec_prepare(const struct conf_job *cj, const char *key, struct job_exec *x, char *err, size_t errlen)
{
	int r;

	memset(x, 0, sizeof(*x));
	x->sp.fds[0] = x->sp.fds[1] = x->sp.fds[2] = -1;
	x->out_read = x->err_read = -1;
	snprintf(x->cwd, sizeof(x->cwd), "%s", cj->working_directory ? cj->working_directory : "/");
	r = env_setf(x, "PATH", DEFAULT_PATH);
	if (r == 0)
		r = prepare_ids(cj, x, err, errlen);
	if (r == 0)
		r = env_setf(x, "CGPOOL_KEY", key);
	for (size_t i = 0; r == 0 && i < cj->nenvironment; i++)
		r = env_set(x, cj->environment[i]);
	if (r == 0)
		r = prepare_program(cj, x, err, errlen);
	if (r == 0)
		r = prepare_output(&cj->out, STDOUT_FILENO, &x->sp.fds[1], &x->own_fd[1], &x->out_read, err, errlen);
	if (r == 0)
		r = prepare_output(&cj->err, STDERR_FILENO, &x->sp.fds[2], &x->own_fd[2], &x->err_read, err, errlen);
	if (r < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-r));
		if (x->out_read >= 0)
			close(x->out_read);
		if (x->err_read >= 0)
			close(x->err_read);
		job_exec_free(x);
		return r;
	}
	x->sp.path = x->path;
	x->sp.argv = x->argv;
	x->sp.envp = x->envp;
	x->sp.cwd = x->cwd;
	x->sp.groups = x->groups;
	x->sp.keep[0] = x->out_read;
	x->sp.keep[1] = x->err_read;
	x->sp.cgroup_fd = -1;
	return 0;
}

void job_exec_free(struct job_exec *x)
{
	argv_free(x->argv);
	x->argv = NULL;
	for (size_t i = 0; i < x->nenv; i++)
		free(x->envp[i]);
	free(x->envp);
	x->envp = NULL;
	x->nenv = 0;
	free(x->groups);
	x->groups = NULL;
	for (int i = 0; i < 3; i++) {
		if (x->own_fd[i] && x->sp.fds[i] >= 0)
			close(x->sp.fds[i]);
		x->sp.fds[i] = -1;
		x->own_fd[i] = false;
	}
}
