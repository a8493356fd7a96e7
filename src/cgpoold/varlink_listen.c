/* varlink_listen.c - the Varlink server's listening socket: bind, permissions,
 * stale socket files. */
#include "config.h"

#include "varlink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* mkdir -p of path's directory; directories created here get 0755 whatever
 * the umask is. */
static int make_parent_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		char save = *p;

		if (save != '/' && save != '\0')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) == 0) {
			if (chmod(dir, 0755) < 0)
				return -errno;
		} else if (errno != EEXIST) {
			return -errno;
		}
		if (save == '\0')
			return 0;
		*p = save;
	}
}

/* Remove a socket file left by a dead daemon. Anything that is not a socket
 * is left alone (-EEXIST); a socket somebody listens on is -EADDRINUSE. */
static int remove_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, r, e;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	e = errno;
	close(fd);
	if (r == 0 || e == EAGAIN || e == EINPROGRESS)
		return -EADDRINUSE;
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int vl_listen(const char *path, mode_t mode, gid_t gid, int *out_fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	bool bound = false;
	mode_t old;
	int fd, r;

	if (!path || !*path || !out_fd)
		return -EINVAL;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	r = make_parent_dir(path);
	if (r == 0)
		r = remove_stale(&sa);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* The file gets its final mode at bind (fchmod on the socket before
	 * bind sets it, the umask keeps the rest out meanwhile), and nobody can
	 * connect before listen(): no chmod by path, which a rename could
	 * redirect. */
	r = fchmod(fd, mode) < 0 ? -errno : 0;
	old = umask(~mode & 0777);
	if (r == 0)
		r = bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old);
	bound = r == 0;
	if (r == 0 && gid != (gid_t)-1 && fchownat(AT_FDCWD, path, (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW) < 0)
		r = -errno;
	if (r == 0 && listen(fd, SOMAXCONN) < 0)
		r = -errno;
	if (r < 0) {
		if (bound)
			unlink(path);
		close(fd);
		return r;
	}
	*out_fd = fd;
	return 0;
}
