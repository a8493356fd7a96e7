/* cgpoolctl.c - command-line client of cgpoold.
 *
 * Exit codes: 0 done, 1 the daemon refused or the operation failed, 64 usage,
 * 69 the daemon is not reachable; exec exits with its command's status (127
 * or 126 when the command cannot be run). */
#include "config.h"

#include "call.h"
#include "cgpool.h"
#include "cg_census.h"
#include "dying.h"
#include "text.h"
#include "top.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#define EX_FAIL 1
#define MAX_PIDS 4096

enum {
	OPT_SOCKET = 1 << 0,
	OPT_JSON = 1 << 1,
	OPT_HELP = 1 << 2,
	OPT_VERSION = 1 << 3,
	OPT_CLASS = 1 << 4,
	OPT_MODE = 1 << 5,
	OPT_WAIT = 1 << 6,
	OPT_LIMIT = 1 << 7,
	OPT_TOP = 1 << 8,
	OPT_DELAY = 1 << 9,
	OPT_ONCE = 1 << 10,
	OPT_GLOBAL = OPT_SOCKET | OPT_JSON | OPT_HELP | OPT_VERSION,
};

#define PROBE_WAIT_POLL_US 200000
#define PROBE_WAIT_MAX_POLLS 150 /* 30 s */

struct ctx {
	const char *socket; /* as resolved: --socket, $CGPOOL_SOCKET or the default */
	bool json, help, version, wait;
	const char *class_name, *mode;
	char **args; /* positional arguments after the command */
	int nargs;
	char **cmdv; /* exec: CMD [ARG...], NULL-terminated */
	json_t *pids; /* attach: validated before connecting */
	json_t *limits; /* attach, exec: --limit NAME=VALUE, as given */
	int top;	/* dying: subtrees shown */
	unsigned delay_ms; /* top: between refreshes, 0: the default */
	bool once;	    /* top: one frame */
	struct cgpool *c;
};

struct command {
	const char *name;
	int min, max;  /* positional arguments */
	unsigned opts; /* OPT_* accepted besides the global ones */
	bool rest;     /* followed by [--] CMD [ARG...] */
	int (*fn)(struct ctx *x);
	const char *args;
	const char *help;
};

struct option_def {
	const char *name;
	unsigned flag;
	bool has_arg;
};

static const struct option_def options[] = {
	{ "socket", OPT_SOCKET, true }, { "json", OPT_JSON, false }, { "help", OPT_HELP, false },
	{ "version", OPT_VERSION, false }, { "class", OPT_CLASS, true }, { "mode", OPT_MODE, true },
	{ "wait", OPT_WAIT, false }, { "limit", OPT_LIMIT, true }, { "top", OPT_TOP, true },
	{ "delay", OPT_DELAY, true }, { "once", OPT_ONCE, false },
};

static const char *const retire_modes[] = { "auto", "reparent", "drain" };

/* -------------------------------------------------------------- talking */

static int transport_error(struct ctx *x, int r)
{
	switch (r) {
	case -EPIPE:
	case -ECONNRESET:
	case -ENOTCONN:
		fprintf(stderr, "cgpoolctl: lost connection to cgpoold at %s: %s\n", x->socket, strerror(-r));
		return EX_UNAVAILABLE;
	case -EBADMSG:
		fprintf(stderr, "cgpoolctl: malformed reply from cgpoold at %s\n", x->socket);
		return EX_FAIL;
	case -EMSGSIZE:
		fprintf(stderr, "cgpoolctl: request or reply too large\n");
		return EX_FAIL;
	default:
		fprintf(stderr, "cgpoolctl: %s\n", strerror(-r));
		return EX_FAIL;
	}
}

/* print why a call failed; returns the exit code */
static int call_failed(struct ctx *x, int r)
{
	const char *msg = NULL;

	if (r != -EREMOTEIO)
		return transport_error(x, r);
	if (!cgpool_last_error(x->c, NULL, &msg) || !msg)
		msg = "the daemon refused";
	fprintf(stderr, "cgpoolctl: %s\n", msg);
	return EX_FAIL;
}

/* Call io.cgpool.Manager.<method>; params stolen (NULL: it could not be built,
 * a string argument that is not UTF-8). Returns 0 with *reply, or the exit
 * code after printing the error. */
static int call(struct ctx *x, const char *method, json_t *params, json_t **reply)
{
	char *ptext = params ? json_dumps(params, JSON_COMPACT) : NULL;
	int r;

	json_decref(params);
	if (!ptext) {
		fprintf(stderr, "cgpoolctl: an argument is not valid UTF-8\n");
		return EX_USAGE;
	}
	r = call_json(x->c, method, ptext, reply);
	free(ptext);
	return r < 0 ? call_failed(x, r) : 0;
}

/* ------------------------------------------------------------- commands */

static int print_slot_reply(struct ctx *x, json_t *reply)
{
	json_t *slot = json_object_get(reply, "slot");

	const char *job = json_is_object(slot) ? text_str_field(slot, "job_state", NULL) : NULL;
	int rc = job && strcmp(job, "failed") == 0 ? 1 : 0; /* run/restart that did not start */

	if (x->json) {
		text_print_json(json_is_object(slot) ? slot : reply);
	} else if (json_is_object(slot)) {
		printf("%s: %s", text_str_field(slot, "key", x->args[0]), text_str_field(slot, "state", "?"));
		if (job)
			printf(", job %s", job);
		if (text_str_field(slot, "path", NULL))
			printf(", %s", text_str_field(slot, "path", ""));
		putchar('\n');
	}
	if (rc)
		fprintf(stderr, "cgpoolctl: job %s failed to start (see the daemon's log)\n", x->args[0]);
	json_decref(reply);
	return rc;
}

static int slot_call(struct ctx *x, const char *method, json_t *params)
{
	json_t *reply;
	int r = call(x, method, params, &reply);

	return r ? r : print_slot_reply(x, reply);
}

static int parse_pid(const char *s, json_int_t *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -EINVAL;
	*out = v;
	return 0;
}

static json_t *attach_params(struct ctx *x, json_t *pids)
{
	json_t *params = json_pack("{s:s, s:O}", "key", x->args[0], "pids", pids);

	if (params && x->class_name)
		json_object_set_new(params, "class", json_string(x->class_name));
	if (params && x->limits)
		json_object_set(params, "limits", x->limits);
	return params;
}

static int cmd_attach(struct ctx *x)
{
	return slot_call(x, "Attach", attach_params(x, x->pids));
}

static int cmd_exec(struct ctx *x)
{
	json_t *self = json_pack("[i]", (int)getpid()), *params = self ? attach_params(x, self) : NULL;
	char *text = params ? json_dumps(params, JSON_COMPACT) : NULL;
	int r = text ? cgpool_call(x->c, CGPOOL_INTERFACE ".Attach", text, NULL) : -ENOMEM;
	int e;

	free(text);
	json_decref(params);
	json_decref(self);
	if (r < 0)
		return call_failed(x, r);
	cgpool_close(x->c);
	x->c = NULL;
	fflush(NULL);
	execvp(x->cmdv[0], x->cmdv);
	e = errno;
	fprintf(stderr, "cgpoolctl: %s: %s\n", x->cmdv[0], strerror(e));
	return e == ENOENT ? 127 : 126;
}

static int cmd_key(struct ctx *x, const char *method)
{
	return slot_call(x, method, json_pack("{s:s}", "key", x->args[0]));
}

static int cmd_run(struct ctx *x)
{
	return cmd_key(x, "Run");
}

static int cmd_stop(struct ctx *x)
{
	return cmd_key(x, "Stop");
}

static int cmd_restart(struct ctx *x)
{
	return cmd_key(x, "Restart");
}

static int cmd_release(struct ctx *x)
{
	return cmd_key(x, "Release");
}

/* the reply of a call on JOB's slots: "JOB: WHAT (KEY, ...)", or that it has none here */
static int print_job_slots(struct ctx *x, json_t *reply, const char *what)
{
	json_t *slots = json_object_get(reply, "slots"), *s;
	size_t i;

	if (x->json)
		text_print_json(reply);
	else if (json_array_size(slots) == 0)
		printf("%s: no slot of this job here\n", x->args[0]);
	else {
		printf("%s: %s", x->args[0], what);
		json_array_foreach(slots, i, s)
			printf("%s%s", i ? ", " : " (", text_str_field(s, "key", "?"));
		printf(")\n");
	}
	json_decref(reply);
	return 0;
}

/* freeze or thaw JOB's slots */
static int freeze(struct ctx *x, bool frozen)
{
	json_t *reply = NULL;
	int r = call(x, "Freeze", json_pack("{s:s, s:b}", "job", x->args[0], "frozen", frozen), &reply);

	return r != 0 ? r : print_job_slots(x, reply, frozen ? "frozen" : "thawed");
}

static int cmd_freeze(struct ctx *x)
{
	return freeze(x, true);
}

static int cmd_thaw(struct ctx *x)
{
	return freeze(x, false);
}

/* set limits on JOB's slots: "JOB: memory.max=2G (KEY, ...)" */
static int cmd_limit(struct ctx *x)
{
	json_t *reply = NULL, *v;
	const char *name;
	char what[512] = "";
	size_t len = 0;
	int r;

	if (!x->limits) {
		fprintf(stderr, "cgpoolctl: limit: give at least one --limit NAME=VALUE (memory.max=2G)\n");
		return EX_USAGE;
	}
	r = call(x, "Limit", json_pack("{s:s, s:O}", "job", x->args[0], "limits", x->limits), &reply);
	if (r != 0)
		return r;
	json_object_foreach(x->limits, name, v)
		if (len < sizeof(what))
			len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s=%s", len ? " " : "", name,
						json_string_value(v));
	return print_job_slots(x, reply, what);
}

static void print_retire(struct ctx *x, json_t *reply)
{
	const char *outcome = text_str_field(reply, "outcome", "?");
	json_t *elapsed = json_object_get(reply, "elapsed_ms");
	char size[32];

	printf("%s: %s", text_str_field(reply, "key", x->args[0]), outcome);
	if (json_is_integer(json_object_get(reply, "lru_bytes"))) {
		text_size_json(json_object_get(reply, "lru_bytes"), size, sizeof(size));
		printf(", %s LRU", size);
	}
	if (json_integer_value(json_object_get(reply, "flushed_bytes")) > 0) {
		text_size_json(json_object_get(reply, "flushed_bytes"), size, sizeof(size));
		printf(", %s written back first", size);
	}
	if (x->wait && json_is_integer(elapsed))
		printf(", %s %lld ms", strcmp(outcome, "pinned") == 0 ? "still dying after" : "verified in",
		       (long long)json_integer_value(elapsed));
	if (x->wait && *text_str_field(reply, "evidence", ""))
		printf(" (%s)", text_str_field(reply, "evidence", ""));
	putchar('\n');
}

static int cmd_retire(struct ctx *x)
{
	json_t *params = json_pack("{s:s}", "key", x->args[0]), *reply;
	int r;

	if (params && x->mode)
		json_object_set_new(params, "mode", json_string(x->mode));
	if (params && x->wait)
		json_object_set_new(params, "wait", json_true());
	r = call(x, "Retire", params, &reply);
	if (r)
		return r;
	if (x->json)
		text_print_json(reply);
	else
		print_retire(x, reply);
	json_decref(reply);
	return 0;
}

/* list: the slots arrive one reply at a time, so the columns have fixed
 * widths (a longer key or state shifts its own line only) */
#define LIST_FORMAT "%-16s  %-8s  %6s  %6s  %s\n"

static void print_slot_line(json_t *s)
{
	char runs[24], mem[32];

	snprintf(runs, sizeof(runs), "%lld", (long long)json_integer_value(json_object_get(s, "runs")));
	text_size_json(json_object_get(s, "memory_current"), mem, sizeof(mem));
	/* a supervised key that never started has no slot: its job state */
	printf(LIST_FORMAT, text_str_field(s, "key", "-"), text_str_field(s, "state", text_str_field(s, "job_state", "?")), runs, mem,
	       text_str_field(s, "path", "-"));
}

struct list_out {
	struct ctx *x;
	size_t n; /* slots printed */
	bool started, tty;
};

/* one reply of a streamed List: {"slots": [Slot...]}, printed at once */
static int list_reply(const char *text, void *ud)
{
	struct list_out *o = ud;
	json_t *reply = json_loads(text, 0, NULL), *slots = json_object_get(reply, "slots"), *s;
	size_t i;

	if (!json_is_array(slots)) {
		json_decref(reply);
		return -EBADMSG;
	}
	if (!o->started)
		fputs(o->x->json ? "[" : "", stdout);
	if (!o->started && !o->x->json)
		printf(LIST_FORMAT, "KEY", "STATE", "RUNS", "MEMORY", "PATH");
	o->started = true;
	json_array_foreach(slots, i, s) {
		if (o->x->json) {
			fputs(o->n ? (o->tty ? ",\n  " : ",") : (o->tty ? "\n  " : ""), stdout);
			json_dumpf(s, stdout, JSON_COMPACT);
		} else {
			print_slot_line(s);
		}
		o->n++;
	}
	json_decref(reply);
	fflush(stdout);
	return 0;
}

static int cmd_list(struct ctx *x)
{
	struct list_out o = { x, 0, false, isatty(STDOUT_FILENO) };
	int r = cgpool_call_more(x->c, CGPOOL_INTERFACE ".List", "{}", list_reply, &o);

	if (r < 0)
		return call_failed(x, r);
	if (x->json)
		fputs(o.n && o.tty ? "\n]\n" : "]\n", stdout);
	return 0;
}

static void print_runs(json_t *runs)
{
	char start[32], end[32], peak[32], exit_status[24];
	size_t i;
	json_t *run, *st, *sig;

	if (json_array_size(runs) == 0)
		return;
	printf("recent runs:\n  %-19s  %-19s  %-7s  %6s  %s\n", "STARTED", "ENDED", "EXIT", "PEAK", "OOM");
	json_array_foreach(runs, i, run) {
		text_time(json_object_get(run, "started"), start, sizeof(start));
		text_time(json_object_get(run, "ended"), end, sizeof(end));
		text_size_json(json_object_get(run, "memory_peak"), peak, sizeof(peak));
		st = json_object_get(run, "exit_status");
		sig = json_object_get(run, "signal");
		if (json_is_string(sig))
			snprintf(exit_status, sizeof(exit_status), "SIG%s", json_string_value(sig));
		else if (json_is_integer(st))
			snprintf(exit_status, sizeof(exit_status), "%lld", (long long)json_integer_value(st));
		else if (json_is_string(json_object_get(run, "reason")))
			snprintf(exit_status, sizeof(exit_status), "?");
		else
			snprintf(exit_status, sizeof(exit_status), "-");
		printf("  %-19s  %-19s  %-7s  %6s  %lld\n", start, end, exit_status, peak,
		       (long long)json_integer_value(json_object_get(run, "oom_kills")));
	}
}

/* status KEY --json: the slot's fields at top level, plus recent_runs */
static void print_status_key(struct ctx *x, json_t *reply)
{
	json_t *slot = json_object_get(reply, "slot");
	json_t *runs = json_object_get(reply, "recent_runs");
	json_t *out = json_object();

	if (json_is_object(slot)) { /* the key first, then the rest in the daemon's order */
		json_object_set(out, "key", json_object_get(slot, "key") ? json_object_get(slot, "key") : json_null());
		json_object_update_missing(out, slot);
	}
	if (!json_is_array(runs))
		runs = NULL;
	if (x->json) {
		json_object_set_new(out, "recent_runs", runs ? json_incref(runs) : json_array());
		text_print_json(out);
	} else {
		text_print_object(out, 0);
		print_runs(runs);
	}
	json_decref(out);
}

static int cmd_status(struct ctx *x)
{
	json_t *params = x->nargs ? json_pack("{s:s}", "key", x->args[0]) : json_object(), *reply, *daemon;
	int r = call(x, "Status", params, &reply);

	if (r)
		return r;
	daemon = json_object_get(reply, "daemon");
	if (x->nargs)
		print_status_key(x, reply);
	else if (x->json)
		text_print_json(json_is_object(daemon) ? daemon : reply);
	else
		text_print_object(json_is_object(daemon) ? daemon : reply, 0);
	json_decref(reply);
	return 0;
}

/* probe --wait: run the experiment again and wait for its verdict */
static int probe_again(struct ctx *x, json_t **reply)
{
	int r = call(x, "Probe", json_pack("{s:b}", "refresh", 1), reply);

	for (int i = 0; r == 0 && i < PROBE_WAIT_MAX_POLLS && json_is_true(json_object_get(*reply, "probe_running")); i++) {
		json_decref(*reply);
		usleep(PROBE_WAIT_POLL_US);
		r = call(x, "Probe", json_object(), reply);
	}
	return r;
}

static int cmd_probe(struct ctx *x)
{
	json_t *reply;
	int r = x->wait ? probe_again(x, &reply) : call(x, "Probe", json_object(), &reply);

	if (r)
		return r;
	if (x->json)
		text_print_json(reply);
	else
		text_print_object(reply, 0);
	json_decref(reply);
	return 0;
}

static int cmd_reload(struct ctx *x)
{
	json_t *reply, *errors, *e;
	size_t i;
	int r = call(x, "Reload", json_object(), &reply);

	if (r)
		return r;
	errors = json_object_get(reply, "errors");
	r = json_array_size(errors) > 0 ? EX_FAIL : 0;
	if (x->json)
		text_print_json(reply);
	else if (r == 0)
		puts("reloaded");
	if (!x->json)
		json_array_foreach(errors, i, e)
			fprintf(stderr, "%s\n", json_is_string(e) ? json_string_value(e) : "?");
	if (r && !x->json)
		fprintf(stderr, "cgpoolctl: configuration not reloaded, the old one stays\n");
	json_decref(reply);
	return r;
}

static int cmd_metrics(struct ctx *x)
{
	json_t *reply;
	int r = call(x, "Metrics", json_object(), &reply);

	if (r)
		return r;
	if (x->json)
		text_print_json(reply);
	else
		fputs(text_str_field(reply, "text", ""), stdout);
	json_decref(reply);
	return 0;
}

/* health: can the daemon place a job now? For Slurm's HealthCheckProgram
 * (a node-health script drains a node on a non-zero exit): it answers
 * within HEALTH_TIMEOUT_MS, and it has a warm slot or room for a new one. */
#define HEALTH_TIMEOUT_MS 5000
static int cmd_health(struct ctx *x)
{
	json_t *reply, *d, *slots;
	long long total, warm, max;
	char why[160] = "";
	int r;

	cgpool_set_timeout(x->c, HEALTH_TIMEOUT_MS);
	r = call(x, "Status", json_object(), &reply);
	if (r)
		return r;
	d = json_object_get(reply, "daemon");
	slots = json_object_get(d, "slots");
	total = json_integer_value(json_object_get(slots, "total"));
	warm = json_integer_value(json_object_get(slots, "warm"));
	max = json_integer_value(json_object_get(d, "max_slots"));
	if (!json_is_object(slots))
		snprintf(why, sizeof(why), "the daemon's status has no slot counts");
	else if (warm == 0 && total >= max)
		snprintf(why, sizeof(why), "no slot to place a job in: all %lld slots (max_slots) are in use", max);
	if (x->json) {
		json_t *out = json_pack("{s:b, s:I, s:I, s:I}", "healthy", !why[0], "slots", (json_int_t)total, "warm",
					(json_int_t)warm, "max_slots", (json_int_t)max);
		json_object_set_new(out, "reason", why[0] ? json_string(why) : json_null());
		text_print_json(out);
		json_decref(out);
	} else if (why[0]) {
		printf("unhealthy: %s\n", why);
	} else {
		printf("healthy: %lld of %lld slots, %lld warm\n", total, max, warm);
	}
	json_decref(reply);
	return why[0] ? EX_FAIL : 0;
}

/* dying: the census of dying memory cgroups, from the kernel's files; what
 * could not be read goes to stderr (and "unreadable" in the JSON) */
static int cmd_dying(struct ctx *x)
{
	json_t *census, *e;
	size_t i;
	int r = cg_census(x->top ? x->top : CG_CENSUS_TOP_DEFAULT, &census);

	if (!census) {
		fprintf(stderr, "cgpoolctl: dying: %s\n", strerror(-r));
		return EX_FAIL;
	}
	dying_daemon(x->socket, census);
	if (x->json)
		text_print_json(census);
	else
		dying_print(census);
	fflush(stdout);
	json_array_foreach(json_object_get(census, "unreadable"), i, e)
		fprintf(stderr, "cgpoolctl: dying: cannot read %s\n", json_string_value(e));
	if (json_integer_value(json_object_get(census, "unreadable_count")) > (json_int_t)i)
		fprintf(stderr, "cgpoolctl: dying: and %lld more\n",
			(long long)(json_integer_value(json_object_get(census, "unreadable_count")) - (json_int_t)i));
	if (r == -ENOENT && !json_object_get(census, "layout"))
		fprintf(stderr, "cgpoolctl: dying: no memory controller is mounted (cgroup2 or a v1 memory hierarchy)\n");
	else if (r < 0)
		fprintf(stderr, "cgpoolctl: dying: the total is not known: %s\n", strerror(-r));
	json_decref(census);
	return r < 0 ? EX_FAIL : 0;
}

/* top: a live view (top.c); it connects by itself and goes on without a daemon */
static int cmd_top(struct ctx *x)
{
	struct top_opts o = { .socket = x->socket, .json = x->json, .once = x->once, .delay_ms = x->delay_ms };

	return top_run(&o);
}

static const struct command commands[] = {
	{ "exec", 1, 1, OPT_CLASS | OPT_LIMIT, true, cmd_exec, "KEY [--class NAME] [--limit NAME=VALUE]... -- CMD [ARG...]",
	  "run CMD in KEY's slot (this process moves there, then executes CMD)" },
	{ "attach", 2, 1 + MAX_PIDS, OPT_CLASS | OPT_LIMIT, false, cmd_attach,
	  "KEY [--class NAME] [--limit NAME=VALUE]... PID...",
	  "move running processes into KEY's slot" },
	{ "run", 1, 1, 0, false, cmd_run, "KEY", "start the supervised job KEY" },
	{ "stop", 1, 1, 0, false, cmd_stop, "KEY", "stop the supervised job KEY" },
	{ "restart", 1, 1, 0, false, cmd_restart, "KEY", "restart the supervised job KEY in its slot" },
	{ "release", 1, 1, 0, false, cmd_release, "KEY", "KEY is done for now: keep its slot idle" },
	{ "freeze", 1, 1, 0, false, cmd_freeze, "JOB",
	  "freeze every process in the slots of JOB (slurm:ID for a Slurm job) until thaw" },
	{ "thaw", 1, 1, 0, false, cmd_thaw, "JOB", "let the processes of JOB's slots run again" },
	{ "limit", 1, 1, OPT_LIMIT, false, cmd_limit, "JOB --limit NAME=VALUE...",
	  "set limits (memory.max=2G, ...) on the running slots of JOB (slurm:ID for a Slurm job)" },
	{ "retire", 1, 1, OPT_MODE | OPT_WAIT, false, cmd_retire, "KEY [--mode auto|reparent|drain] [--wait]",
	  "remove KEY's slot; --wait prints the verified outcome" },
	{ "list", 0, 0, 0, false, cmd_list, "", "one line per slot" },
	{ "status", 0, 1, 0, false, cmd_status, "[KEY]", "the daemon, or one key with its recent runs" },
	{ "probe", 0, 0, OPT_WAIT, false, cmd_probe, "[--wait]",
	  "what the kernel can do; --wait runs the LRU-reparenting experiment again first" },
	{ "reload", 0, 0, 0, false, cmd_reload, "", "reload the daemon's configuration" },
	{ "metrics", 0, 0, 0, false, cmd_metrics, "", "Prometheus text exposition of the counters" },
	{ "health", 0, 0, 0, false, cmd_health, "",
	  "exit 0 when the daemon answers and can place a job now (for a node health check)" },
	{ "dying", 0, 0, OPT_TOP, false, cmd_dying, "[--top N]",
	  "the machine's dying memory cgroups, from the kernel's files (no daemon needed)" },
	{ "top", 0, 0, OPT_DELAY | OPT_ONCE, false, cmd_top, "[-d|--delay SECONDS] [--once]",
	  "the slots and the dying memory cgroups, redrawn until q (--once: one frame as text)" },
};

/* ------------------------------------------------------------------ main */

static void help(void)
{
	printf("Usage: cgpoolctl [--socket PATH] [--json] COMMAND [ARGS]\n\n"
	       "Control cgpoold, the cgroup pool daemon.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		printf("  %s%s%s\n      %s\n", commands[i].name, *commands[i].args ? " " : "", commands[i].args,
		       commands[i].help);
	printf("\nOptions:\n"
	       "  --socket PATH  the daemon's socket (default: $CGPOOL_SOCKET, else %s)\n"
	       "  --json         print one JSON value on stdout\n"
	       "  --help         show this help\n  --version      show the version\n\n"
	       "Exit status: 0 done, 1 refused or failed, 64 usage, 69 daemon not reachable.\n",
	       CGPOOL_DEFAULT_SOCKET);
}

static int usage(const struct command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage(const struct command *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "cgpoolctl: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "\nusage: cgpoolctl [--socket PATH] [--json] %s%s%s\n", cmd->name, *cmd->args ? " " : "",
			cmd->args);
	else
		fprintf(stderr, "\nusage: cgpoolctl [--socket PATH] [--json] COMMAND [ARGS] (see cgpoolctl --help)\n");
	return EX_USAGE;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* --limit NAME=VALUE (the daemon checks name and value) */
static int add_limit(struct ctx *x, const struct command *cmd, const char *val)
{
	const char *eq = strchr(val, '=');
	char name[64];

	if (!eq || eq == val || !eq[1] || (size_t)(eq - val) >= sizeof(name))
		return usage(cmd, "--limit takes NAME=VALUE (memory.max=64M): %s", val);
	snprintf(name, sizeof(name), "%.*s", (int)(eq - val), val);
	if (!x->limits)
		x->limits = json_object();
	if (!x->limits || json_object_set_new(x->limits, name, json_string(eq + 1)) < 0)
		return usage(cmd, "--limit: not UTF-8: %s", val);
	return 0;
}

/* --top N: 1 to CG_CENSUS_TOP_MAX */
static int parse_top(struct ctx *x, const struct command *cmd, const char *val)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (!isdigit((unsigned char)val[0]) || errno || *end || v < 1 || v > CG_CENSUS_TOP_MAX)
		return usage(cmd, "--top takes a number from 1 to %d: %s", CG_CENSUS_TOP_MAX, val);
	x->top = (int)v;
	return 0;
}

/* --delay SECONDS, -d SECONDS: TOP_DELAY_MIN_MS to TOP_DELAY_MAX_MS */
static int parse_delay(struct ctx *x, const struct command *cmd, const char *val)
{
	if (top_parse_delay(val, &x->delay_ms) < 0)
		return usage(cmd, "--delay takes seconds, %g to %d with at most 3 decimals (0.5): %s",
			     TOP_DELAY_MIN_MS / 1000.0, TOP_DELAY_MAX_MS / 1000, val);
	return 0;
}

/* -h, and -d SECONDS where --delay is taken */
static int parse_short(struct ctx *x, const struct command *cmd, char **argv, int argc, int *i)
{
	if (strcmp(argv[*i], "-h") == 0) {
		x->help = true;
		return 0;
	}
	if (strcmp(argv[*i], "-d") != 0 || !cmd || !(cmd->opts & OPT_DELAY))
		return usage(cmd, "unknown option %s", argv[*i]);
	if (*i + 1 >= argc || !*argv[*i + 1])
		return usage(cmd, "option -d needs a value");
	return parse_delay(x, cmd, argv[++*i]);
}

/* one "--name[=value]" at argv[*i]; returns 0 or the usage exit code */
static int parse_option(struct ctx *x, const struct command *cmd, char **argv, int argc, int *i)
{
	const char *arg = argv[*i] + 2, *eq = strchr(arg, '='), *val = NULL;
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	const struct option_def *o = NULL;

	for (size_t k = 0; k < sizeof(options) / sizeof(options[0]); k++)
		if (strlen(options[k].name) == len && strncmp(options[k].name, arg, len) == 0)
			o = &options[k];
	if (!o || !(o->flag & (OPT_GLOBAL | (cmd ? cmd->opts : 0))))
		return usage(cmd, "unknown option %s", argv[*i]);
	if (o->has_arg) {
		val = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
		if (!val || !*val)
			return usage(cmd, "option --%s needs a value", o->name);
	} else if (eq) {
		return usage(cmd, "option --%s takes no value", o->name);
	}
	switch (o->flag) {
	case OPT_SOCKET: x->socket = val; break;
	case OPT_JSON: x->json = true; break;
	case OPT_HELP: x->help = true; break;
	case OPT_VERSION: x->version = true; break;
	case OPT_CLASS: x->class_name = val; break;
	case OPT_MODE: x->mode = val; break;
	case OPT_WAIT: x->wait = true; break;
	case OPT_LIMIT: return add_limit(x, cmd, val);
	case OPT_TOP: return parse_top(x, cmd, val);
	case OPT_DELAY: return parse_delay(x, cmd, val);
	case OPT_ONCE: x->once = true; break;
	}
	return 0;
}

/* Options may come anywhere before CMD of exec or a "--". */
static int parse_args(struct ctx *x, int argc, char **argv, const struct command **out)
{
	const struct command *cmd = NULL;
	bool opts_done = false;
	int r;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!opts_done && strcmp(a, "--") == 0) {
			opts_done = true;
			if (cmd && cmd->rest && x->nargs >= cmd->min) {
				x->cmdv = &argv[i + 1];
				break;
			}
		} else if (!opts_done && strncmp(a, "--", 2) == 0) {
			if ((r = parse_option(x, cmd, argv, argc, &i)) != 0)
				return r;
		} else if (!opts_done && a[0] == '-' && a[1]) {
			if ((r = parse_short(x, cmd, argv, argc, &i)) != 0)
				return r;
		} else if (!cmd) {
			if (!(cmd = find_command(a)))
				return usage(NULL, "unknown command: %s", a);
		} else if (cmd->rest && x->nargs == cmd->max) {
			x->cmdv = &argv[i];
			break;
		} else if (x->nargs == cmd->max) {
			return usage(cmd, "unexpected argument: %s", a);
		} else {
			x->args[x->nargs++] = argv[i];
		}
	}
	*out = cmd;
	return 0;
}

/* attach: PIDs are positive integers, checked before the daemon is asked */
static int check_pids(struct ctx *x, const struct command *cmd)
{
	json_int_t pid;

	x->pids = json_array();
	for (int i = 1; x->pids && i < x->nargs; i++) {
		if (parse_pid(x->args[i], &pid) < 0)
			return usage(cmd, "not a process ID: %s", x->args[i]);
		json_array_append_new(x->pids, json_integer(pid));
	}
	return 0;
}

static int check_args(struct ctx *x, const struct command *cmd)
{
	if (!cmd)
		return usage(NULL, "no command given");
	if (x->nargs < cmd->min)
		return usage(cmd, "missing argument%s", cmd->min - x->nargs > 1 ? "s" : "");
	if (cmd->rest && (!x->cmdv || !x->cmdv[0]))
		return usage(cmd, "missing the command to run");
	if (cmd->fn == cmd_attach && check_pids(x, cmd) != 0)
		return EX_USAGE;
	if (x->mode) {
		for (size_t i = 0; i < sizeof(retire_modes) / sizeof(retire_modes[0]); i++)
			if (strcmp(x->mode, retire_modes[i]) == 0)
				return 0;
		return usage(cmd, "unknown retire mode: %s", x->mode);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ctx x = { .socket = NULL };
	const struct command *cmd = NULL;
	int r;

	x.args = calloc((size_t)argc + 1, sizeof(char *));
	if (!x.args)
		return EX_FAIL;
	r = parse_args(&x, argc, argv, &cmd);
	if (r == 0 && x.help)
		help();
	else if (r == 0 && x.version)
		printf("cgpoolctl (cgpool) %s\n", PACKAGE_VERSION);
	else if (r == 0)
		r = check_args(&x, cmd);
	if (r || x.help || x.version)
		goto out;
	if (!x.socket)
		x.socket = getenv("CGPOOL_SOCKET");
	if (!x.socket || !*x.socket)
		x.socket = CGPOOL_DEFAULT_SOCKET;
	if (cmd->fn == cmd_top) {
		r = cmd_top(&x);
		goto out;
	}
	if (cmd->fn == cmd_dying) { /* reads the kernel's files itself: the daemon is optional */
		r = cmd_dying(&x);
		goto out;
	}
	r = strcmp(cmd->name, "health") == 0 ? cgpool_connect_timeout(x.socket, HEALTH_TIMEOUT_MS, &x.c)
					       : cgpool_connect(x.socket, &x.c);
	if (r < 0) {
		fprintf(stderr, "cgpoolctl: cannot reach cgpoold at %s: %s\n", x.socket, strerror(-r));
		r = EX_UNAVAILABLE;
		goto out;
	}
	r = cmd->fn(&x);
out:
	cgpool_close(x.c);
	json_decref(x.pids);
	json_decref(x.limits);
	free(x.args);
	if ((fflush(stdout) != 0 || ferror(stdout)) && r == 0) {
		fprintf(stderr, "cgpoolctl: write error: %s\n", strerror(errno));
		r = EX_FAIL;
	}
	return r;
}
