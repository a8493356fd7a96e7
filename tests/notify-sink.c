/* notify-sink - a service manager's notification socket for the tests:
 * binds the datagram socket SOCKET and prints each message as one line,
 * "MONOTONIC_US field|field|...". A message with READY=1 gets " socket=up"
 * when a connection to the stream socket PROBE is accepted at that moment,
 * else " socket=down". Runs until killed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int unix_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -1;
	strcpy(sa->sun_path, path);
	return 0;
}

static const char *probe(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0 || unix_addr(path, &sa) < 0)
		return "down";
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return r == 0 ? "up" : "down";
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa;
	char msg[4097];
	int fd;

	if (argc != 3 || unix_addr(argv[1], &sa) < 0) {
		fprintf(stderr, "usage: notify-sink SOCKET PROBE\n");
		return 2;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror(argv[1]);
		return 1;
	}
	for (;;) {
		struct timespec ts;
		ssize_t n = recv(fd, msg, sizeof(msg) - 1, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("recv");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		msg[n] = '\0';
		while (n > 0 && msg[n - 1] == '\n')
			msg[--n] = '\0';
		for (char *p = msg; *p; p++)
			if (*p == '\n')
				*p = '|';
		printf("%lld %s", (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, msg);
		if (strstr(msg, "READY=1"))
			printf(" socket=%s", probe(argv[2]));
		printf("\n");
		fflush(stdout);
	}
}
