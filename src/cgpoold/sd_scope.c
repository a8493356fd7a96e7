/* sd_scope.c - the slots in a scope unit of their own under systemd (see sd_scope.h) */
#include "config.h"

#include "sd_scope.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <ev.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "cg.h"
#include "log.h"
#include "util.h"

#define SCOPE_SUFFIX "-slots.scope"
#define KEEPER_LEAF "keeper"
#define SCOPE_WAIT_MS 5000

int sd_scope_names(const char *cgroup_text, char *path, size_t plen, char *unit, size_t ulen, char *slice,
		   size_t slen)
{
	char cg[4096], *last, *up;
	size_t n;

	/* pure v2: the one line is "0::PATH" */
	if (strncmp(cgroup_text, "0::/", 4) != 0 || strchr(cgroup_text, '\n') != cgroup_text + strlen(cgroup_text) - 1)
		return -ENOENT;
	snprintf(cg, sizeof(cg), "%.*s", (int)strcspn(cgroup_text + 3, "\n"), cgroup_text + 3);
	last = strrchr(cg, '/');
	if (last && strcmp(last + 1, "cgpoold") == 0 && last != cg) /* a leaf left by an older layout */
		*last = '\0', last = strrchr(cg, '/');
	n = strlen(last + 1);
	if (n <= 8 || strcmp(last + 1 + n - 8, ".service") != 0)
		return -ENOENT;
	up = last == cg ? NULL : last;
	*last = '\0';
	if (snprintf(unit, ulen, "%.*s" SCOPE_SUFFIX, (int)(n - 8), last + 1) >= (int)ulen)
		return -ENAMETOOLONG;
	/* the slice: the parent's last component, "-.slice" at the top */
	if (snprintf(slice, slen, "%s", up ? strrchr(cg, '/') + 1 : "-.slice") >= (int)slen ||
	    (up && !strstr(slice, ".slice")))
		return -ENOENT;
	if (snprintf(path, plen, "%s/%s", up ? cg : "", unit) >= (int)plen)
		return -ENAMETOOLONG;
	return 0;
}

/* asleep until killed: the scope is never empty while it lives */
static void __attribute__((noreturn)) keeper_main(void)
{
	sigset_t all;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	sigfillset(&all);
	sigdelset(&all, SIGTERM);
	sigdelset(&all, SIGKILL);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGTERM, SIG_DFL);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	/* every descriptor of the daemon's: kept cgroup files among them, which
	 * must not outlive the daemon's own copies */
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0)
#endif
		for (long i = 3, n = sysconf(_SC_OPEN_MAX); i < n; i++)
			close((int)i);
	setsid();
	prctl(PR_SET_NAME, "cgpool-keeper");
	for (;;)
		pause();
}

static int keeper_spawn(pid_t *out)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		keeper_main();
	*out = pid;
	return 0;
}

/* systemd's Manager API: its private socket (root), else the system bus */
static int manager_bus(sd_bus **out)
{
	sd_bus *bus = NULL;
	int r = sd_bus_new(&bus);

	if (r >= 0)
		r = sd_bus_set_address(bus, "unix:path=/run/systemd/private");
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r >= 0) {
		*out = bus;
		return 0;
	}
	sd_bus_unref(bus);
	return sd_bus_open_system(out);
}

static int start_scope(const char *unit, const char *slice, pid_t keeper, char *err, size_t errlen)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	sd_bus *bus = NULL;
	int r = manager_bus(&bus);

	if (r < 0) {
		snprintf(err, errlen, "cannot reach systemd's manager (private socket or system bus): %s", strerror(-r));
		return r;
	}
	r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			       "org.freedesktop.systemd1.Manager", "StartTransientUnit", &e, &reply,
			       "ssa(sv)a(sa(sv))", unit, "fail", 4, "PIDs", "au", 1, (uint32_t)keeper, "Delegate", "b", 1,
			       "Slice", "s", slice, "Description", "s", "cgpool slots (jobs keep running here)", 0);
	if (r < 0)
		snprintf(err, errlen, "StartTransientUnit %s: %s", unit, e.message ? e.message : strerror(-r));
	sd_bus_error_free(&e);
	sd_bus_message_unref(reply);
	sd_bus_flush_close_unref(bus);
	return r;
}

/* the keeper into <scope>/keeper: the scope itself then holds no process */
static int keeper_to_leaf(const char *mnt, const char *path, pid_t pid, char *err, size_t errlen)
{
	int r = cg_dir_mkdir(mnt, path, KEEPER_LEAF);

	if (r < 0) {
		snprintf(err, errlen, "mkdir %s%s/" KEEPER_LEAF ": %s", mnt, path, strerror(-r));
		return r;
	}
	r = cg_dir_move(mnt, path, KEEPER_LEAF, pid);
	if (r < 0)
		snprintf(err, errlen, "move the keeper into %s%s/" KEEPER_LEAF "/cgroup.procs: %s", mnt, path,
			 strerror(-r));
	return r;
}

/* a scope found at start, or while the daemon runs: its keeper may have
 * gone (killed, or the scope's jobs kept it alive without one). 1: a new
 * keeper was started */
static int keep_alive(const char *mnt, const char *path, char *err, size_t errlen)
{
	pid_t pid = 0;
	int r;

	if (cg_dir_first_pid(mnt, path, KEEPER_LEAF, &pid) == 0)
		return 0;
	pid = 0;
	r = keeper_spawn(&pid);
	if (r == 0)
		r = keeper_to_leaf(mnt, path, pid, err, errlen);
	if (r < 0) {
		if (pid > 0)
			kill(pid, SIGKILL);
		return r;
	}
	log_notice("slots scope %s%s: its keeper was gone; a new one is pid %d", mnt, path, (int)pid);
	return 1;
}

int sd_scope_check(const char *mnt, const char *root, char *err, size_t errlen)
{
	int r = cg_dir_exists(mnt, root);

	if (r < 0) {
		snprintf(err, errlen, "%s%s: %s", mnt, root, strerror(-r));
		return -ENOENT;
	}
	return keep_alive(mnt, root, err, errlen);
}

static int make_scope(const char *mnt, const char *path, const char *unit, const char *slice, char *err,
		      size_t errlen)
{
	pid_t pid = 0;
	int r = keeper_spawn(&pid);

	if (r < 0) {
		snprintf(err, errlen, "fork the scope's keeper: %s", strerror(-r));
		return r;
	}
	r = start_scope(unit, slice, pid, err, errlen);
	/* systemd moves the keeper into the scope's cgroup */
	for (int waited = 0; r >= 0 && !cg_dir_holds(pid, path); waited += 10) {
		if (waited >= SCOPE_WAIT_MS) {
			snprintf(err, errlen, "scope %s: the keeper (pid %d) did not arrive in %s within %d ms", unit,
				 (int)pid, path, SCOPE_WAIT_MS);
			r = -ETIMEDOUT;
			break;
		}
		usleep(10000);
	}
	if (r >= 0)
		r = keeper_to_leaf(mnt, path, pid, err, errlen);
	if (r < 0) {
		kill(pid, SIGKILL);
		return r;
	}
	log_notice("slots scope %s made (%s), keeper pid %d", unit, path, (int)pid);
	return 0;
}

int sd_scope_root(const char *cgroup_file, const char *mnt, char *root, size_t len, char *err, size_t errlen)
{
	char text[4096], path[4096], unit[256], slice[256];
	int r;

	if (sd_booted() <= 0 || file_read(cgroup_file, text, sizeof(text)) < 0 ||
	    sd_scope_names(text, path, sizeof(path), unit, sizeof(unit), slice, sizeof(slice)) < 0)
		return -ENOENT;
	if (cg_dir_exists(mnt, path) == 0)
		r = keep_alive(mnt, path, err, errlen);
	else
		r = make_scope(mnt, path, unit, slice, err, errlen);
	if (r < 0)
		return r;
	if (snprintf(root, len, "%s", path) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

struct sd_scope_keeper {
	struct ev_loop *loop;
	ev_timer timer;
	bool gone; /* logged once until it is back */
	char mnt[256];
	char root[4096];
};

static void keeper_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sd_scope_keeper *k = w->data;
	char err[512] = "";
	int r = sd_scope_check(k->mnt, k->root, err, sizeof(err));

	if (r >= 0) {
		k->gone = false;
		return;
	}
	if (!k->gone)
		log_err("slots scope: %s (%s)", err[0] ? err : strerror(-r),
			r == -ENOENT ? "systemd stopped it; restart cgpoold to make it again" : "no keeper in it");
	k->gone = true;
}

int sd_scope_keeper_start(struct ev_loop *loop, const char *mnt, const char *root, struct sd_scope_keeper **out)
{
	struct sd_scope_keeper *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->loop = loop;
	snprintf(k->mnt, sizeof(k->mnt), "%s", mnt);
	snprintf(k->root, sizeof(k->root), "%s", root);
	ev_timer_init(&k->timer, keeper_cb, SD_SCOPE_KEEPER_CHECK_S, SD_SCOPE_KEEPER_CHECK_S);
	k->timer.data = k;
	ev_timer_start(loop, &k->timer);
	*out = k;
	return 0;
}

void sd_scope_keeper_free(struct sd_scope_keeper *k)
{
	if (!k)
		return;
	ev_timer_stop(k->loop, &k->timer);
	free(k);
}
