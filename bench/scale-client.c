/* scale-client.c - load generator for bench/scale.sh, built on libcgpool.
 *
 *   scale-client [-s SOCKET] bind   -c CLIENTS -n COUNT [-t SECS] -p PREFIX
 *   scale-client [-s SOCKET] attach -c CLIENTS [-n COUNT] [-t SECS] -p PREFIX [-a]
 *   scale-client [-s SOCKET] place  -n CYCLES -k KEY [-b] [-d DIR,...] [-o FILE]
 *   scale-client [-s SOCKET] call   METHOD PARAMS_JSON REPEAT
 *   scale-client firstline -- CMD [ARG...]
 *
 * Every sub-command prints one result line of NAME=VALUE pairs on stdout; the
 * first error of a kind goes to stderr (place -o FILE: each cycle's latency
 * also goes to FILE, a line "CYCLE USUAL_US CGPOOL_US" per cycle, "-" for a
 * failed one). Exit status 0 when every operation succeeded, 1 when some
 * failed, 2 on bad usage. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgpool.h"

#define MAX_CLIENTS 128
#define MAX_HIER 8

struct opts {
	const char *socket;
	const char *prefix;
	const char *key;
	const char *dirs;
	const char *out; /* -o: place's per-cycle latencies */
	unsigned clients;
	unsigned long count;
	double secs;
	bool alternate;
	bool back_to_back;
	pid_t daemon; /* -P: the daemon, whose CPU time place counts too */
};

/* one client: a connection, a child process, its latencies */
struct client {
	const struct opts *o;
	unsigned id;
	pid_t child;
	unsigned long quota;
	uint32_t *lat_us;
	unsigned long ops;
	unsigned long errors;
	pthread_t thread;
};

static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static bool err_shown;
/* SIGTERM or SIGINT: finish the operation at hand, report, clean up */
static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the first failure of a run, on stderr */
static void report_error(struct cgpool *c, const char *what, int r)
{
	const char *msg = NULL;

	pthread_mutex_lock(&err_lock);
	if (!err_shown) {
		if (r == -EREMOTEIO && c)
			cgpool_last_error(c, NULL, &msg);
		fprintf(stderr, "scale-client: %s: %s\n", what, msg ? msg : strerror(-r));
		err_shown = true;
	}
	pthread_mutex_unlock(&err_lock);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* the q-quantile of n sorted samples (nearest rank) */
static uint32_t quantile(const uint32_t *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(q * (double)n + 0.999999);
	i = i == 0 ? 0 : i - 1;
	return v[i < n ? i : n - 1];
}

/* A child that waits to be killed, and dies with us. */
static int spawn_child(pid_t *out)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			pause();
	}
	*out = pid;
	return 0;
}

static void reap_child(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* ---- bind and attach: C clients on threads */

static int client_attach(struct client *cl, struct cgpool *c, const char *key)
{
	double t = now_s();
	int r = cgpool_attach(c, key, &cl->child, 1, NULL, NULL);

	if (r) {
		cl->errors++;
		report_error(c, key, r);
		return r;
	}
	cl->lat_us[cl->ops++] = (uint32_t)((now_s() - t) * 1e6);
	return 0;
}

static void *bind_thread(void *arg)
{
	struct client *cl = arg;
	struct cgpool *c = NULL;
	double end = cl->o->secs > 0 ? now_s() + cl->o->secs : 0;
	char key[256];
	int r = cgpool_connect(cl->o->socket, &c);

	if (r) {
		cl->errors = cl->quota;
		report_error(NULL, "connect", r);
		return NULL;
	}
	for (unsigned long i = 0; !stopping && i < cl->quota && (end == 0 || now_s() < end); i++) {
		snprintf(key, sizeof(key), "%s-%u-%lu", cl->o->prefix, cl->id, i);
		if (client_attach(cl, c, key) == -ENOTCONN)
			break;
	}
	cgpool_close(c);
	return NULL;
}

/* keys of the bind run with the same prefix: index 0, and 1 to alternate */
static void *attach_thread(void *arg)
{
	struct client *cl = arg;
	struct cgpool *c = NULL;
	double end = cl->o->secs > 0 ? now_s() + cl->o->secs : 0;
	char key[2][256];
	int r = cgpool_connect(cl->o->socket, &c);

	if (r) {
		cl->errors = 1;
		report_error(NULL, "connect", r);
		return NULL;
	}
	for (int k = 0; k < 2; k++)
		snprintf(key[k], sizeof(key[k]), "%s-%u-%d", cl->o->prefix, cl->id, k);
	/* the child in key 0 before timing starts (untimed, not counted) */
	r = cgpool_attach(c, key[0], &cl->child, 1, NULL, NULL);
	if (r) {
		cl->errors = 1;
		report_error(c, key[0], r);
		cgpool_close(c);
		return NULL;
	}
	for (unsigned long i = 0; !stopping && i < cl->quota && (end == 0 || now_s() < end); i++) {
		const char *k = cl->o->alternate ? key[(i + 1) % 2] : key[0];

		if (client_attach(cl, c, k) == -ENOTCONN)
			break;
	}
	cgpool_close(c);
	return NULL;
}

static void print_load(const char *name, struct client *cls, unsigned n, double secs)
{
	unsigned long ops = 0, errors = 0, k = 0;
	uint32_t *all;

	for (unsigned i = 0; i < n; i++) {
		ops += cls[i].ops;
		errors += cls[i].errors;
	}
	all = calloc(ops ? ops : 1, sizeof(*all));
	if (!all) {
		perror("scale-client");
		exit(1);
	}
	for (unsigned i = 0; i < n; i++) {
		memcpy(all + k, cls[i].lat_us, cls[i].ops * sizeof(*all));
		k += cls[i].ops;
	}
	qsort(all, ops, sizeof(*all), cmp_u32);
	printf("%s clients=%u ops=%lu secs=%.3f per_sec=%.1f p50_us=%u p99_us=%u max_us=%u errors=%lu\n", name, n,
	       ops, secs, secs > 0 ? (double)ops / secs : 0.0, quantile(all, ops, 0.5), quantile(all, ops, 0.99),
	       ops ? all[ops - 1] : 0, errors);
	free(all);
}

static int run_load(const struct opts *o, const char *name, void *(*fn)(void *))
{
	struct client *cls = calloc(o->clients, sizeof(*cls));
	unsigned long errors = 0;
	unsigned started = 0;
	double t0, t1;
	int r = 0;

	if (!cls)
		return -ENOMEM;
	for (unsigned i = 0; i < o->clients && r == 0; i++) {
		cls[i].o = o;
		cls[i].id = i;
		cls[i].quota = o->count / o->clients + (i < o->count % o->clients);
		cls[i].lat_us = calloc(cls[i].quota ? cls[i].quota : 1, sizeof(uint32_t));
		r = cls[i].lat_us ? spawn_child(&cls[i].child) : -ENOMEM;
	}
	t0 = now_s();
	for (unsigned i = 0; i < o->clients && r == 0; i++, started++)
		r = -pthread_create(&cls[i].thread, NULL, fn, &cls[i]);
	for (unsigned i = 0; i < started; i++)
		pthread_join(cls[i].thread, NULL);
	t1 = now_s();
	if (r == 0)
		print_load(name, cls, o->clients, t1 - t0);
	for (unsigned i = 0; i < o->clients; i++) {
		reap_child(cls[i].child);
		errors += cls[i].errors;
		free(cls[i].lat_us);
	}
	free(cls);
	if (r)
		fprintf(stderr, "scale-client: %s: %s\n", name, strerror(-r));
	return r ? r : errors ? -EIO : 0;
}

static int cmd_bind(const struct opts *o)
{
	if (!o->prefix || o->count == 0) {
		fprintf(stderr, "scale-client: bind needs -p PREFIX and -n COUNT\n");
		return -EINVAL;
	}
	return run_load(o, "bind", bind_thread);
}

static int cmd_attach(struct opts *o)
{
	if (!o->prefix || (o->count == 0 && o->secs <= 0)) {
		fprintf(stderr, "scale-client: attach needs -p PREFIX and -n COUNT or -t SECS\n");
		return -EINVAL;
	}
	if (o->count == 0) /* bounded by time only: room for 100k ops per second and client */
		o->count = (unsigned long)(o->secs * 1e5) * o->clients;
	return run_load(o, o->alternate ? "attach-alternate" : "attach-same", attach_thread);
}

/* ---- place: restart placement, cgpool against the usual way */

struct place {
	const struct opts *o;
	char parent[MAX_HIER][PATH_MAX];
	char home[MAX_HIER][PATH_MAX + 32];
	unsigned n;
	pid_t child;
	struct cgpool *c;
};

/* the mount point of the hierarchy whose super options hold want
 * ("memory", "pids") or of the cgroup2 hierarchy (want "") */
static int find_mount(const char *want, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r == -ENOENT && fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], fstype[64], super[1024], *sep = strstr(line, " - ");
		char *tok, *save = NULL;

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s %*s %1023s", fstype, super) != 2)
			continue;
		if (!*want && strcmp(fstype, "cgroup2") == 0)
			r = 0;
		for (tok = strtok_r(super, ",", &save); *want && !strcmp(fstype, "cgroup") && tok;
		     tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, want) == 0)
				r = 0;
		if (r == 0 && (size_t)snprintf(out, size, "%s", mnt) >= size)
			r = -ENAMETOOLONG;
	}
	fclose(f);
	return r;
}

/* our cgroup in the hierarchy with controller want ("" for cgroup2) */
static int own_cgroup(const char *want, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r == -ENOENT && fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *path = ctrl ? strchr(ctrl + 1, ':') : NULL, *tok, *save = NULL;

		if (!path)
			continue;
		*ctrl++ = '\0';
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		if (!*want && !*ctrl && strcmp(line, "0") == 0)
			r = 0;
		for (tok = strtok_r(ctrl, ",", &save); *want && tok; tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, want) == 0)
				r = 0;
		if (r == 0 && (size_t)snprintf(out, size, "%s", strcmp(path, "/") ? path : "") >= size)
			r = -ENAMETOOLONG;
	}
	fclose(f);
	return r;
}

/* the parents: -d DIR,DIR..., else our cgroup in the memory and pids
 * hierarchies and on cgroup2 (each once; v2 hosts them all in one) */
static int place_parents(struct place *p)
{
	static const char *const want[] = { "memory", "pids", "" };
	char mnt[PATH_MAX], own[PATH_MAX];

	if (p->o->dirs) {
		char *copy = strdup(p->o->dirs), *tok, *save = NULL;

		if (!copy)
			return -ENOMEM;
		for (tok = strtok_r(copy, ",", &save); tok && p->n < MAX_HIER; tok = strtok_r(NULL, ",", &save))
			snprintf(p->parent[p->n++], PATH_MAX, "%s", tok);
		free(copy);
		return p->n ? 0 : -EINVAL;
	}
	char seen[MAX_HIER][PATH_MAX];

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool dup = false;

		if (find_mount(want[i], mnt, sizeof(mnt)) < 0 || own_cgroup(want[i], own, sizeof(own)) < 0)
			continue;
		if (strlen(mnt) + strlen(own) >= PATH_MAX)
			return -ENAMETOOLONG;
		for (unsigned j = 0; j < p->n; j++)
			dup = dup || strcmp(seen[j], mnt) == 0;
		if (dup)
			continue;
		snprintf(seen[p->n], PATH_MAX, "%s", mnt);
		snprintf(p->parent[p->n++], PATH_MAX, "%s%s", mnt, own);
	}
	return p->n ? 0 : -ENOENT;
}

static int write_pid(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 64], buf[32];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (write(fd, buf, (size_t)n) != n)
		r = -errno;
	close(fd);
	return r;
}

static int move_home(struct place *p)
{
	int r = 0;

	for (unsigned i = 0; i < p->n && r == 0; i++)
		r = write_pid(p->home[i], p->child);
	return r;
}

static int cycle_cgpool(struct place *p)
{
	int r = cgpool_attach(p->c, p->o->key, &p->child, 1, NULL, NULL);

	if (r) {
		report_error(p->c, p->o->key, r);
		return r;
	}
	r = move_home(p);
	if (r)
		report_error(NULL, "move home", r);
	return r;
}

static int cycle_usual(struct place *p, unsigned long i)
{
	char dir[MAX_HIER][PATH_MAX + 64];
	unsigned made = 0;
	int r = 0;

	while (made < p->n && r == 0) {
		snprintf(dir[made], sizeof(dir[made]), "%s/cgpool-place-%d-%lu", p->parent[made], (int)getpid(), i);
		if (mkdir(dir[made], 0755) == 0)
			made++;
		else
			r = -errno;
	}
	for (unsigned h = 0; h < made && r == 0; h++)
		r = write_pid(dir[h], p->child);
	if (r == 0)
		r = move_home(p);
	for (unsigned h = 0; h < made; h++)
		if (rmdir(dir[h]) && r == 0)
			r = -errno;
	if (r)
		report_error(NULL, "usual way", r);
	return r;
}

static int place_setup(struct place *p)
{
	int r = place_parents(p);

	for (unsigned i = 0; i < p->n && r == 0; i++) {
		size_t len = strlen(p->parent[i]);

		memcpy(p->home[i], p->parent[i], len);
		snprintf(p->home[i] + len, sizeof(p->home[i]) - len, "/cgpool-place-home-%d", (int)getpid());
		if (mkdir(p->home[i], 0755))
			r = -errno;
	}
	if (r == 0)
		r = spawn_child(&p->child);
	if (r == 0)
		r = move_home(p);
	if (r == 0)
		r = cgpool_connect(p->o->socket, &p->c);
	if (r == 0) /* bind the key once, untimed */
		r = cycle_cgpool(p);
	return r;
}

static void place_teardown(struct place *p)
{
	reap_child(p->child);
	cgpool_close(p->c);
	for (unsigned i = 0; i < p->n; i++)
		if (p->home[i][0] && rmdir(p->home[i]) && errno != ENOENT)
			fprintf(stderr, "scale-client: rmdir %s: %s\n", p->home[i], strerror(errno));
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of every thread of pid so far, ns (the first field of each
 * /proc/PID/task/TID/schedstat); 0 when unreadable */
static uint64_t process_cpu_ns(pid_t pid)
{
	char path[64];
	uint64_t sum = 0;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		char file[PATH_MAX];
		unsigned long long ns;
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%s/schedstat", (int)pid, d->d_name);
		f = fopen(file, "re");
		if (f && fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	closedir(dir);
	return sum;
}

/* the machine's busy CPU time so far, ns: every CPU's time in /proc/stat
 * but idle and iowait (USER_HZ ticks); 0 when unreadable */
static uint64_t machine_busy_ns(void)
{
	unsigned long long v[10] = { 0 }, busy = 0;
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		   &v[5], &v[6], &v[7], &v[8], &v[9]);
	fclose(f);
	if (n < 8)
		return 0;
	for (int i = 0; i < 8; i++) /* user nice system idle iowait irq softirq steal */
		busy += i == 3 || i == 4 ? 0 : v[i];
	return busy * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* one timed cycle of kind (0 cgpool, 1 usual); its CPU time in this
 * thread added to *cpu_ns */
static void place_time(struct place *p, int kind, unsigned long i, uint32_t *lat, unsigned long *n,
		       unsigned long *errors, uint64_t *cpu_ns)
{
	uint64_t c = thread_cpu_ns();
	double t = now_s();
	int r = kind == 0 ? cycle_cgpool(p) : cycle_usual(p, i);

	if (r) {
		(*errors)++;
		return;
	}
	lat[(*n)++] = (uint32_t)((now_s() - t) * 1e6);
	*cpu_ns += thread_cpu_ns() - c;
}

static void place_report(const struct place *p, uint32_t *lat[2], unsigned long n[2], unsigned long errors,
			 const uint64_t cpu_ns[2], uint64_t daemon_ns, const uint64_t busy_ns[2])
{
	double cpu[2] = { n[0] ? (double)cpu_ns[0] / n[0] / 1e3 : 0, n[1] ? (double)cpu_ns[1] / n[1] / 1e3 : 0 };
	double dcpu = n[0] ? (double)daemon_ns / n[0] / 1e3 : 0;
	uint32_t q[2][3];

	for (int k = 0; k < 2; k++) {
		qsort(lat[k], n[k], sizeof(uint32_t), cmp_u32);
		q[k][0] = quantile(lat[k], n[k], 0.5);
		q[k][1] = quantile(lat[k], n[k], 0.99);
		q[k][2] = n[k] ? lat[k][n[k] - 1] : 0;
	}
	printf("place cycles=%lu hierarchies=%u order=%s cgpool_p50_us=%u cgpool_p99_us=%u cgpool_max_us=%u "
	       "usual_p50_us=%u usual_p99_us=%u usual_max_us=%u ratio_p50=%.2f ratio_p99=%.2f errors=%lu\n",
	       p->o->count, p->n, p->o->back_to_back ? "back-to-back" : "interleaved", q[0][0], q[0][1], q[0][2],
	       q[1][0], q[1][1], q[1][2], q[1][0] ? (double)q[0][0] / q[1][0] : 0.0,
	       q[1][1] ? (double)q[0][1] / q[1][1] : 0.0, errors);
	/* CPU per cycle: this client's, plus for cgpool the daemon's (all of
	 * it during the run: it serves nothing else) */
	if (p->o->daemon > 0)
		printf("place_cpu client_us=%.1f daemon_us=%.1f cgpool_cpu_us=%.1f usual_cpu_us=%.1f cpu_ratio=%.2f\n",
		       cpu[0], dcpu, cpu[0] + dcpu, cpu[1], cpu[1] > 0 ? (cpu[0] + dcpu) / cpu[1] : 0.0);
	/* back to back: the whole machine's busy time in each phase, the
	 * kernel's deferred work included (a removed cgroup is freed later,
	 * by kernel workers) */
	if (p->o->back_to_back && n[0] && n[1] && busy_ns[0] && busy_ns[1])
		printf("place_machine cgpool_busy_us=%.1f usual_busy_us=%.1f busy_ratio=%.2f\n",
		       (double)busy_ns[0] / n[0] / 1e3, (double)busy_ns[1] / n[1] / 1e3,
		       ((double)busy_ns[0] / n[0]) / ((double)busy_ns[1] / n[1]));
}

/* the cycles' latencies, in their order (before place_report sorts them):
 * "CYCLE USUAL_US CGPOOL_US" lines, "-" where a way has fewer */
static int place_write(const char *path, uint32_t *lat[2], const unsigned long n[2])
{
	FILE *f = fopen(path, "w");
	unsigned long m = n[0] > n[1] ? n[0] : n[1];

	if (!f)
		return -1;
	for (unsigned long i = 0; i < m; i++) {
		char u[16] = "-", c[16] = "-";

		if (i < n[1])
			snprintf(u, sizeof(u), "%u", lat[1][i]);
		if (i < n[0])
			snprintf(c, sizeof(c), "%u", lat[0][i]);
		fprintf(f, "%lu %s %s\n", i + 1, u, c);
	}
	return fclose(f) == 0 ? 0 : -1;
}

static int cmd_place(const struct opts *o)
{
	struct place p = { .o = o };
	uint32_t *lat[2] = { calloc(o->count + 1, sizeof(uint32_t)), calloc(o->count + 1, sizeof(uint32_t)) };
	unsigned long n[2] = { 0, 0 }, errors = 0;
	uint64_t cpu_ns[2] = { 0, 0 }, daemon_ns, busy_ns[2] = { 0, 0 };
	int r = 0;

	if (!o->key || o->count == 0) {
		fprintf(stderr, "scale-client: place needs -k KEY and -n CYCLES\n");
		r = -EINVAL;
	} else if (!lat[0] || !lat[1]) {
		r = -ENOMEM;
	} else if ((r = place_setup(&p)) < 0) {
		report_error(NULL, "place setup", r);
	}
	/* the daemon's CPU time over the cgpool cycles: the whole run
	 * interleaved, the first phase back to back */
	uint64_t d0 = r == 0 && o->daemon > 0 ? process_cpu_ns(o->daemon) : 0, d1 = 0;
	/* interleaved: cgpool first on even cycles, the usual way first on odd ones */
	for (unsigned long i = 0; r == 0 && !o->back_to_back && !stopping && i < o->count; i++)
		for (int j = 0; j < 2; j++) {
			int k = (int)((i + (unsigned long)j) % 2);

			place_time(&p, k, i, lat[k], &n[k], &errors, &cpu_ns[k]);
		}
	for (int k = 0; r == 0 && o->back_to_back && k < 2; k++) {
		busy_ns[k] = machine_busy_ns();
		for (unsigned long i = 0; !stopping && i < o->count; i++)
			place_time(&p, k, i, lat[k], &n[k], &errors, &cpu_ns[k]);
		busy_ns[k] = machine_busy_ns() - busy_ns[k];
		if (k == 0 && d0)
			d1 = process_cpu_ns(o->daemon);
	}
	if (d0 && !o->back_to_back)
		d1 = process_cpu_ns(o->daemon);
	daemon_ns = d1 > d0 && d0 ? d1 - d0 : 0;
	if (r == 0 && o->out && place_write(o->out, lat, n) < 0) {
		fprintf(stderr, "scale-client: %s: %s\n", o->out, strerror(errno));
		r = -EIO;
	}
	if (r == 0)
		place_report(&p, lat, n, errors, cpu_ns, daemon_ns, busy_ns);
	place_teardown(&p);
	free(lat[0]);
	free(lat[1]);
	return r ? r : errors ? -EIO : 0;
}

/* ---- firstline: time to a command's first stdout line and to its EOF */

static int read_lines(int fd, double t0, double *first, unsigned long *lines)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n')
				continue;
			if ((*lines)++ == 0)
				*first = (now_s() - t0) * 1e3;
		}
	}
	return 0;
}

static int cmd_firstline(char **argv)
{
	double t0 = now_s(), first = -1;
	unsigned long lines = 0;
	int fds[2], status = 0, r;
	pid_t pid;

	if (!argv[0] || pipe2(fds, O_CLOEXEC) < 0)
		return argv[0] ? -errno : -EINVAL;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "scale-client: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	r = read_lines(fds[0], t0, &first, &lines);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (first < 0)
		printf("firstline first_ms=n/a total_ms=%.1f lines=%lu status=%d\n", (now_s() - t0) * 1e3, lines,
		       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	else
		printf("firstline first_ms=%.1f total_ms=%.1f lines=%lu status=%d\n", first, (now_s() - t0) * 1e3,
		       lines, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return r;
}

/* ---- call: one Varlink method, timed */

static int cmd_call(const struct opts *o, char **argv)
{
	unsigned long repeat = argv[0] && argv[1] && argv[2] ? strtoul(argv[2], NULL, 10) : 0, n = 0, errors = 0;
	struct cgpool *c = NULL;
	uint32_t *lat;
	size_t bytes = 0;
	int r;

	if (repeat == 0) {
		fprintf(stderr, "scale-client: call METHOD PARAMS_JSON REPEAT\n");
		return -EINVAL;
	}
	lat = calloc(repeat, sizeof(*lat));
	r = lat ? cgpool_connect(o->socket, &c) : -ENOMEM;
	for (unsigned long i = 0; r == 0 && i < repeat; i++) {
		char *reply = NULL;
		double t = now_s();
		int e = cgpool_call(c, argv[0], argv[1], &reply);

		if (e == 0) {
			lat[n++] = (uint32_t)((now_s() - t) * 1e6);
			bytes = strlen(reply);
		} else {
			errors++;
			report_error(c, argv[0], e);
		}
		free(reply);
	}
	if (r == 0) {
		qsort(lat, n, sizeof(*lat), cmp_u32);
		printf("call method=%s repeat=%lu p50_ms=%.2f max_ms=%.2f reply_bytes=%zu errors=%lu\n", argv[0], repeat,
		       quantile(lat, n, 0.5) / 1e3, n ? lat[n - 1] / 1e3 : 0.0, bytes, errors);
	} else {
		report_error(NULL, "connect", r);
	}
	cgpool_close(c);
	free(lat);
	return r ? r : errors ? -EIO : 0;
}

/* ---- main */

static int usage(void)
{
	fputs("usage: scale-client [-s SOCKET] bind -c CLIENTS -n COUNT [-t SECS] -p PREFIX\n"
	      "       scale-client [-s SOCKET] attach -c CLIENTS [-n COUNT] [-t SECS] -p PREFIX [-a]\n"
	      "       scale-client [-s SOCKET] place -n CYCLES -k KEY [-b] [-d DIR,...] [-P DAEMON_PID] [-o FILE]\n"
	      "       scale-client [-s SOCKET] call METHOD PARAMS_JSON REPEAT\n"
	      "       scale-client firstline -- CMD [ARG...]\n",
	      stderr);
	return 2;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int ch;

	while ((ch = getopt(argc, argv, "+s:c:n:t:p:k:d:P:o:ab")) != -1) {
		switch (ch) {
		case 's': o->socket = optarg; break;
		case 'c': o->clients = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'n': o->count = strtoul(optarg, NULL, 10); break;
		case 't': o->secs = strtod(optarg, NULL); break;
		case 'p': o->prefix = optarg; break;
		case 'k': o->key = optarg; break;
		case 'd': o->dirs = optarg; break;
		case 'o': o->out = optarg; break;
		case 'a': o->alternate = true; break;
		case 'b': o->back_to_back = true; break;
		case 'P': o->daemon = (pid_t)strtol(optarg, NULL, 10); break;
		default: return -EINVAL;
		}
	}
	if (o->clients == 0 || o->clients > MAX_CLIENTS) {
		fprintf(stderr, "scale-client: -c takes 1 to %d clients\n", MAX_CLIENTS);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .clients = 1 };
	const char *cmd;
	int r;
	struct sigaction sa = { .sa_handler = on_stop };

	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (argc < 2)
		return usage();
	cmd = argv[1];
	if (strcmp(cmd, "firstline") == 0) {
		int first = argc > 2 && strcmp(argv[2], "--") == 0 ? 3 : 2;

		return cmd_firstline(argv + first) ? 1 : 0;
	}
	/* "-s SOCKET" may come before or after the sub-command */
	if (cmd[0] == '-') {
		if (parse_opts(argc, argv, &o) < 0 || optind >= argc)
			return usage();
		cmd = argv[optind];
	} else {
		optind = 1;
	}
	argv += optind;
	argc -= optind;
	optind = 0; /* glibc: start over on the new argv */
	if (parse_opts(argc, argv, &o) < 0)
		return usage();
	if (strcmp(cmd, "bind") == 0)
		r = cmd_bind(&o);
	else if (strcmp(cmd, "attach") == 0)
		r = cmd_attach(&o);
	else if (strcmp(cmd, "place") == 0)
		r = cmd_place(&o);
	else if (strcmp(cmd, "call") == 0)
		r = cmd_call(&o, argv + optind);
	else
		return usage();
	return r == -EINVAL ? 2 : r ? 1 : 0;
}
