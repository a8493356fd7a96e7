/* cgpoold.c - the cgpool daemon: wires the modules together and runs the loop */
#include "config.h"

#include <errno.h>
#include <ev.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cg.h"
#include "cg_files.h"
#include "conf.h"
#include "metrics_census.h"
#include "metrics_dying.h"
#include "job.h"
#include "log.h"
#include "util.h"
#include "manager.h"
#include "sd_notify.h"
#include "pool.h"
#include "cg_pressure.h"
#include "retire_probe.h"
#include "retire.h"
#include "sd_scope.h"
#include "state.h"
#include "metrics_stall.h"
#include "varlink.h"
#include "work.h"

enum {
	EXIT_USAGE = 64,
	EXIT_UNAVAILABLE = 69,
	EXIT_CONFIG = 78,
};

struct daemon {
	struct ev_loop *loop;
	const char *config_path;
	bool config_required;
	const char *socket_override;
	struct conf *conf;
	struct cg *cg;
	struct work *work;
	struct dying_cache *dying;
	struct census_cache *census;
	struct pool *pool;
	struct jobs *jobs;
	struct retire *retire;
	struct probe *probe;      /* LRU reparenting, found through retire */
	struct pressure *pressure;
	struct vl_server *server;
	struct manager *manager;
	ev_signal sig_term, sig_int, sig_hup;
	struct notify *notify;    /* READY, STATUS, WATCHDOG to the service manager */
	struct stall_watch stall; /* how long the loop runs callbacks between waits */
	struct sd_scope_keeper *keeper; /* the slots' scope under systemd, NULL without one */
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: cgpoold [--config FILE] [--socket PATH] [--check-config] [--print-config]\n"
		   "               [--version] [--help]\n"
		   "Keeps one long-lived cgroup per job key and retires cgroups without leaving\n"
		   "dying memory cgroups behind. Runs in the foreground.\n"
		   "  --config FILE    read FILE (and conf.d/*.conf beside it) instead of %s\n"
		   "  --socket PATH    control socket (also $CGPOOL_SOCKET)\n"
		   "  --check-config   validate the configuration, print every error, exit 0 or 78\n"
		   "  --print-config   print the effective configuration\n",
		CONF_DEFAULT_PATH);
}

static void print_errors(const struct conf_errors *e)
{
	for (size_t i = 0; i < e->n; i++)
		fprintf(stderr, "%s\n", e->msgs[i]);
}

static bool resource_supported(const char *name, void *ud)
{
	return cg_resource_supported(ud, name);
}

/* Load, then validate against the running hierarchy when we know it. */
static int load_config(struct daemon *d, struct conf **out, struct conf_errors *errs)
{
	struct conf *c = NULL;
	const char *env = getenv("CGPOOL_SOCKET");
	int r = conf_load(d->config_path, d->config_required, &c, errs);

	if (r < 0)
		return r;
	if (d->cg && conf_check_resources(c, resource_supported, cg_hierarchy_name(cg_get_info(d->cg)->hierarchy),
					  d->cg, errs) > 0) {
		conf_free(c);
		return -EINVAL;
	}
	if (d->socket_override || (env && *env)) {
		free(c->daemon.socket);
		c->daemon.socket = strdup(d->socket_override ? d->socket_override : env);
		if (!c->daemon.socket) {
			conf_free(c);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
}

/* the [daemon] keys that say who may connect, for the control server */
static void apply_limits(struct daemon *d)
{
	const struct conf *c = d->conf;
	struct vl_limits l = { c->daemon.socket_gid, c->daemon.max_connections, c->daemon.max_connections_per_user,
			       c->daemon.connection_idle_timeout_ms / 1000. };

	if (d->server)
		vl_server_set_limits(d->server, &l);
}

static int reload(void *ud, json_t *errors)
{
	struct daemon *d = ud;
	struct conf_errors errs = { 0 };
	struct conf *c, *old = d->conf;
	int r;

	notify_reloading(d->notify);
	r = load_config(d, &c, &errs);
	if (r == 0 && conf_needs_restart(old, c)) {
		json_array_append_new(errors, json_string(CONF_RESTART_KEYS " take effect only when cgpoold restarts"));
		conf_free(c);
		r = -EINVAL;
	}
	for (size_t i = 0; i < errs.n; i++) {
		log_err("reload refused: %s", errs.msgs[i]);
		if (errors)
			json_array_append_new(errors, json_string(errs.msgs[i]));
	}
	conf_errors_free(&errs);
	if (r == 0) {
		d->conf = c;
		log_set_level(c->daemon.log_level);
		pool_set_conf(d->pool, c);
		jobs_reload(d->jobs);
		apply_limits(d);
		conf_free(old);
		log_notice("configuration reloaded");
	} else {
		log_err("reload refused; the previous configuration stays in effect");
	}
	notify_ready(d->notify);
	return r;
}

static void on_stop(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct daemon *d = w->data;

	log_notice("signal %d: stopping (jobs keep running, slots stay)", w->signum);
	notify_stopping(d->notify);
	ev_break(loop, EVBREAK_ALL);
}

static void on_hup(struct ev_loop *loop, ev_signal *w, int revents)
{
	reload(w->data, NULL);
}

static void on_pressure(void *ud)
{
	pool_pressure(((struct daemon *)ud)->pool);
}

/* The control socket: from systemd (socket activation) or bound here. */
static int open_socket(struct daemon *d, int *fd)
{
	gid_t gid = d->conf->daemon.socket_gid;
	mode_t mode = gid == (gid_t)-1 ? 0666 : 0660; /* anyone may move itself; the credentials decide the rest */
	int n = sd_listen_fds(1);

	if (n > 1) {
		log_err("socket activation: expected 1 socket, got %d", n);
		return -EINVAL;
	}
	if (n == 1) {
		*fd = SD_LISTEN_FDS_START;
		log_info("control socket from the service manager (fd %d)", *fd);
		return 0;
	}
	return vl_listen(d->conf->daemon.socket, mode, gid, fd);
}

static void start_signals(struct daemon *d)
{
	ev_signal_init(&d->sig_term, on_stop, SIGTERM);
	ev_signal_init(&d->sig_int, on_stop, SIGINT);
	ev_signal_init(&d->sig_hup, on_hup, SIGHUP);
	d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
	ev_signal_start(d->loop, &d->sig_term);
	ev_signal_start(d->loop, &d->sig_int);
	ev_signal_start(d->loop, &d->sig_hup);
	stall_watch_start(d->loop, &d->stall);
}

/* The pool is usable: slots adopted and reconciled, warm slots asked for,
 * the control socket listening. The watchdog starts here, with READY=1. */
static void ready(struct daemon *d)
{
	const struct cg_info *info = cg_get_info(d->cg);
	int r = notify_new(d->loop, d->pool, d->retire, &d->notify);

	if (r < 0)
		log_warn("service manager notifications: %s", strerror(-r));
	notify_ready(d->notify);
	log_notice("ready: socket %s, pool root %s (%s, memory on %s)", d->conf->daemon.socket, info->root,
		   cg_hierarchy_name(info->hierarchy), info->memory_v2 ? "v2" : "v1");
}

/* One line at start when the pool root is not the daemon's alone: what
 * else is there, and what cgpoold needs instead. */
static void warn_shared_root(struct daemon *d)
{
	struct cg_shared sh;
	char procs[64] = "", dirs[128] = "";

	if (cg_root_shared(d->cg, getpid(), &sh) < 0 || (sh.procs == 0 && sh.dirs == 0))
		return;
	if (sh.procs)
		snprintf(procs, sizeof(procs), "%u process%s (pid %d%s)", sh.procs, sh.procs == 1 ? "" : "es",
			 (int)sh.pid, sh.procs == 1 ? "" : ", ...");
	if (sh.dirs)
		snprintf(dirs, sizeof(dirs), "%s%u cgroup%s (%s%s)", sh.procs ? " and " : "", sh.dirs,
			 sh.dirs == 1 ? "" : "s", sh.dir, sh.dirs == 1 ? "" : ", ...");
	log_warn("pool root %s is shared: %s%s in it %s not cgpool's; the LRU probe works in a place of its own, "
		 "but retirements are verified below the whole root, which these move too: give cgpoold a root of "
		 "its own ([daemon] root, or a cgroup delegated to it)",
		 cg_get_info(d->cg)->memory_root, procs, dirs, sh.procs + sh.dirs == 1 ? "is" : "are");
}

static void start_pressure(struct daemon *d)
{
	char path[4096];
	int r = cg_pressure_path(d->cg, path, sizeof(path));

	if (r == 0)
		r = pressure_new(d->loop, path, PRESSURE_TRIGGER, on_pressure, d, &d->pressure);
	if (r < 0)
		log_warn("memory pressure: no PSI trigger (%s); idle slots shrink only by idle_timeout and max_slots",
			 strerror(-r));
	else
		log_info("memory pressure: trigger \"%s\" on %s", PRESSURE_TRIGGER, path);
}

/* Descriptors: one per running slot (its memory.peak, v2), two per client
 * (socket, pidfd), the cgroup files kept open and a few of our own. Raise
 * the soft limit toward the hard one; say so when even the hard limit is
 * short of max_slots. */
static void raise_nofile(const struct conf *c)
{
	rlim_t want = (rlim_t)c->pool.max_slots + 2 * (rlim_t)c->daemon.max_connections + CG_FILES_MAX + 256;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("RLIMIT_NOFILE: cannot raise the soft limit to %llu: %s", (unsigned long long)rl.rlim_cur,
			 strerror(errno));
	if (rl.rlim_cur < want)
		log_warn("RLIMIT_NOFILE hard limit %llu is below the %llu that max_slots %u needs: past it, runs "
			 "lose their per-run memory.peak (raise LimitNOFILE= or ulimit -Hn)",
			 (unsigned long long)rl.rlim_max, (unsigned long long)want, c->pool.max_slots);
}

/* root = auto under systemd on cgroup v2: the slots' own scope (sd_scope.h,
 * *scope true); elsewhere what the configuration says */
static int pool_root(const struct conf *c, char *root, size_t len, bool *scope, char *err, size_t errlen)
{
	int r = strcmp(c->daemon.root, "auto") == 0
			? sd_scope_root("/proc/self/cgroup", SD_SCOPE_MNT, root, len, err, errlen)
			: -ENOENT;

	*scope = r == 0;
	if (r == -ENOENT)
		r = snprintf(root, len, "%s", c->daemon.root) >= (int)len ? -ENAMETOOLONG : 0;
	return r;
}

/* Everything from cgroups to the control socket; returns an exit code. */
static int start(struct daemon *d)
{
	static const struct vl_server_info vinfo = { "cgpool", "cgpoold", PACKAGE_VERSION, "" };
	struct manager_hooks hooks = { .reload = reload, .ud = d, .max_stall_ms = &d->stall.max_ms, .stall = &d->stall.hist };
	char err[512] = "", root[4096];
	bool scope;
	int fd = -1, r;

	raise_nofile(d->conf);
	if (state_dir_check(d->conf->daemon.state_dir) < 0)
		return EXIT_CONFIG;
	r = pool_root(d->conf, root, sizeof(root), &scope, err, sizeof(err));
	if (r < 0) {
		log_err("pool root under systemd: %s", err);
		return EXIT_UNAVAILABLE;
	}
	if (scope && sd_scope_keeper_start(d->loop, SD_SCOPE_MNT, root, &d->keeper) < 0) {
		log_err("slots scope: %s", strerror(ENOMEM));
		return EXIT_UNAVAILABLE;
	}
	r = cg_open(root, d->conf->daemon.controllers, &d->cg, err, sizeof(err));
	if (r < 0) {
		log_err("cgroup filesystem unusable: %s", err[0] ? err : strerror(-r));
		return EXIT_UNAVAILABLE;
	}
	if (d->conf->daemon.favordynmods) {
		r = cg_favordynmods(d->cg, err, sizeof(err));
		if (r < 0)
			log_warn("favordynmods: the cgroup2 mount keeps its options: %s",
				 r == -EINVAL ? "this kernel has no favordynmods (6.0+)" : strerror(-r));
		else
			log_info("favordynmods: %s", err);
	}
	struct conf_errors errs = { 0 };
	if (conf_check_resources(d->conf, resource_supported, cg_hierarchy_name(cg_get_info(d->cg)->hierarchy),
				 d->cg, &errs) > 0) {
		print_errors(&errs);
		conf_errors_free(&errs);
		return EXIT_CONFIG;
	}
	r = work_new(d->loop, WORK_THREADS_DEFAULT, &d->work);
	if (r < 0) {
		log_err("worker threads: %s", strerror(-r));
		return 1;
	}
	hooks.work = d->work;
	r = dying_cache_new(d->cg, d->work, &d->dying);
	if (r < 0) {
		log_err("dying-memcg count: %s", strerror(-r));
		return 1;
	}
	hooks.dying = d->dying;
	r = pool_new(d->loop, d->cg, d->conf, &d->pool);
	if (r < 0) {
		log_err("pool: %s", strerror(-r));
		return 1;
	}
	r = retire_new(d->loop, d->cg, (const struct conf *const *)&d->conf, &d->retire);
	if (r < 0) {
		log_err("retirement: %s", strerror(-r));
		return 1;
	}
	retire_set_work(d->retire, d->work);
	pool_set_work(d->pool, d->work);
	pool_set_retire(d->pool, d->retire);
	hooks.retire = d->retire;
	r = probe_new(d->loop, d->cg, d->retire, (const struct conf *const *)&d->conf, &d->probe);
	if (r < 0) {
		log_err("LRU probe: %s", strerror(-r));
		return 1;
	}
	hooks.probe = d->probe;
	/* orphans of supervised jobs (daemonized children) are reaped here */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		log_warn("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	r = jobs_new(d->loop, d->pool, (const struct conf *const *)&d->conf, &d->jobs);
	if (r < 0) {
		log_err("supervised jobs: %s", strerror(-r));
		return 1;
	}
	hooks.jobs = d->jobs;
	jobs_start(d->jobs);
	warn_shared_root(d);
	probe_start(d->probe);
	start_pressure(d);
	/* after the pool: its state directory holds the census history */
	r = census_cache_new(d->loop, d->work, d->conf->daemon.state_dir, &d->census);
	if (r < 0) {
		log_err("census of dying memcgs: %s", strerror(-r));
		return 1;
	}
	hooks.census = d->census;
	r = open_socket(d, &fd);
	if (r < 0) {
		log_err("control socket %s: %s", d->conf->daemon.socket, strerror(-r));
		return 1;
	}
	r = vl_server_new(d->loop, fd, &vinfo, &d->server);
	if (r == 0)
		r = manager_new(d->server, d->pool, (const struct conf *const *)&d->conf, &hooks, &d->manager);
	if (r < 0) {
		log_err("control server: %s", strerror(-r));
		if (!d->server)
			close(fd);
		return 1;
	}
	apply_limits(d);
	start_signals(d);
	ready(d);
	return 0;
}

static void stop(struct daemon *d)
{
	stall_watch_stop(d->loop, &d->stall);
	notify_free(d->notify);
	manager_free(d->manager);
	vl_server_free(d->server);
	pressure_free(d->pressure);
	jobs_free(d->jobs); /* the jobs keep running */
	/* retire cancels its writes still queued on the workers and waits for
	 * one running; work_free then runs what is left in the queue (the
	 * cgroup layer must still be open for that) without calling back, and
	 * joins the threads */
	probe_free(d->probe); /* right before the engine it uses */
	retire_free(d->retire);
	pool_free(d->pool);
	census_cache_free(d->census);
	dying_cache_free(d->dying);
	work_free(d->work);
	cg_close(d->cg);
	sd_scope_keeper_free(d->keeper);
	conf_free(d->conf);
}

enum { OPT_CHECK = 256, OPT_PRINT, OPT_VERSION, OPT_HELP };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },   { "socket", required_argument, NULL, 's' },
		{ "check-config", no_argument, NULL, OPT_CHECK }, { "print-config", no_argument, NULL, OPT_PRINT },
		{ "version", no_argument, NULL, OPT_VERSION }, { "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct daemon d = { .config_path = CONF_DEFAULT_PATH };
	struct conf_errors errs = { 0 };
	bool check = false, print = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "c:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': d.config_path = optarg; d.config_required = true; break;
		case 's': d.socket_override = optarg; break;
		case OPT_CHECK: check = true; break;
		case OPT_PRINT: print = true; break;
		case OPT_VERSION: printf("cgpoold %s\n", PACKAGE_VERSION); return 0;
		case OPT_HELP: usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cgpoold: unexpected argument: %s\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	log_init("cgpoold");
	r = load_config(&d, &d.conf, &errs);
	if (r < 0) {
		print_errors(&errs);
		if (errs.n == 0)
			fprintf(stderr, "%s: %s\n", d.config_path, strerror(-r));
		conf_errors_free(&errs);
		return EXIT_CONFIG;
	}
	if (check || print) {
		if (print)
			conf_print(d.conf, stdout);
		conf_free(d.conf);
		return 0;
	}
	log_set_level(d.conf->daemon.log_level);
	signal(SIGPIPE, SIG_IGN);
	d.loop = ev_default_loop(EVFLAG_AUTO);
	r = start(&d);
	if (r == 0)
		ev_run(d.loop, 0);
	stop(&d);
	return r;
}
