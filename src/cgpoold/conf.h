/* conf.h - the daemon's configuration: ini files parsed into typed structs */
#ifndef CGPOOL_CONF_H
#define CGPOOL_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CONF_DEFAULT_PATH SYSCONFDIR "/cgpool/cgpool.conf"
#define CONF_MAX_RES 16        /* resource settings per [class] or [job] */
#define CONF_MAX_SECTIONS 4096 /* [class] + [job] sections, all files together */
#define CONF_MAX_FILES 256     /* conf.d drop-ins */
#define CONF_AUTO UINT32_MAX     /* a number derived from others (max_slots_per_user = auto) */

/* controllers a slot may have enabled (bit mask) */
enum conf_ctrl {
	CONF_CTRL_MEMORY = 1 << 0,
	CONF_CTRL_PIDS = 1 << 1,
	CONF_CTRL_CPU = 1 << 2,
	CONF_CTRL_IO = 1 << 3,
	CONF_CTRL_CPUSET = 1 << 4,
};

enum retire_mode { RETIRE_AUTO, RETIRE_REPARENT, RETIRE_DRAIN, RETIRE_KEEP };
enum restart_policy { RESTART_NO, RESTART_ON_FAILURE, RESTART_ALWAYS };

/* One resource setting, e.g. memory.max = 2G. name is the cgroup v2 interface
 * file name; value is normalised to what that file accepts ("2147483648",
 * "max", "50000 100000", "default 100"). file/line say where it was set. */
struct conf_res {
	char name[32];
	char value[128]; /* devices.deny lists several devices */
	const char *file; /* points into struct conf's file name storage */
	int line;
};

struct conf_class {
	char *name;
	char *match; /* fnmatch(3) glob on the key; "" (not set) matches nothing */
	bool unprivileged; /* callers other than root and socket_group may pick it; default no */
	struct conf_res res[CONF_MAX_RES];
	size_t nres;
	const char *file;
	int line;
};

/* where a supervised job's stdout or stderr goes */
enum conf_output_kind { OUTPUT_JOURNAL, OUTPUT_NULL, OUTPUT_INHERIT, OUTPUT_FILE, OUTPUT_APPEND };
struct conf_output {
	enum conf_output_kind kind;
	char *path; /* OUTPUT_FILE, OUTPUT_APPEND: absolute */
};

struct conf_job {
	char *key;  /* validated with key_validate() */
	char *exec; /* NULL: a key with settings only; else a supervised job
		     * (split with argv_split(), checked at load) */
	enum restart_policy restart;
	uint64_t restart_sec_ms;
	struct {
		unsigned burst;       /* starts allowed within interval_ms; 0: no limit */
		uint64_t interval_ms;
	} start_limit;
	uint64_t stop_timeout_ms;
	int stop_signal;            /* default SIGTERM */
	char *user;                 /* NULL: root */
	char *group;                /* NULL: the user's primary group */
	char *working_directory;    /* NULL: the user's home (with user), else / */
	char **environment;         /* "NAME=VALUE", file order; a later NAME wins */
	size_t nenvironment;
	struct conf_output out, err; /* stdout, stderr; default journal */
	bool autostart;             /* default yes */
	struct conf_res res[CONF_MAX_RES];
	size_t nres;
	const char *file;
	int line;
};

struct conf {
	struct {
		char *socket;       /* default RUNSTATEDIR "/cgpool/cgpool.sock" */
		char *socket_group; /* NULL: root only */
		char *root;         /* "auto" or an absolute cgroup path */
		unsigned controllers; /* enum conf_ctrl bits; memory is always set */
		int log_level;      /* syslog level */
		char *state_dir;    /* default RUNSTATEDIR "/cgpool" */
		gid_t socket_gid;   /* socket_group resolved at load; (gid_t)-1 when not set */
		char *user_keys;    /* keys of unprivileged callers: glob with %u, %n; default "user.%u.*" */
		unsigned max_connections;          /* default 128 */
		unsigned max_connections_per_user; /* unprivileged uids; default 16 */
		uint64_t connection_idle_timeout_ms; /* default 60s; 0: never */
		bool favordynmods;  /* give the cgroup2 mount favordynmods at start; default no */
	} daemon;
	struct {
		unsigned warm;       /* default 2 */
		unsigned max_slots;  /* default 1024 */
		unsigned max_slots_per_user; /* per unprivileged uid; CONF_AUTO (default): max_slots/32, at least 1 */
		uint64_t idle_timeout_ms; /* default 10m */
		bool recycle;        /* default yes */
		uint64_t recycle_max_memory; /* a scrubbed slot charged more (memory + swap) is set aside; 16M */
	} pool;
	struct {
		enum retire_mode mode; /* default auto */
		uint64_t drain_timeout_ms;  /* 30s */
		uint64_t verify_timeout_ms; /* 60s */
		unsigned rate;              /* 20 removals/s */
		char *probe_dir;            /* where the probe writes its page cache; default /var/tmp */
	} retire;
	struct conf_class *classes; /* in the order they were read */
	size_t nclasses;
	struct conf_job *jobs;
	size_t njobs;
	char **files; /* names of the files read, owned here */
	size_t nfiles;
};

/* Errors collected in one pass, each "FILE:LINE: message" (or "FILE: message"
 * when there is no line, e.g. a file that cannot be opened). */
struct conf_errors {
	char **msgs;
	size_t n;
};
void conf_errors_free(struct conf_errors *e);

/* A struct conf holding the built-in defaults. Never NULL except on ENOMEM. */
struct conf *conf_new_defaults(void);

/* Load path (when required is false and path does not exist, the defaults are
 * used and no error is reported), then every "*.conf" file in the directory
 * "conf.d" beside path, in strcmp order. Returns 0 and *out, or -EINVAL with
 * every error in *errs (*out untouched), or another negative errno. */
int conf_load(const char *path, bool required, struct conf **out, struct conf_errors *errs);
void conf_free(struct conf *c);
/* A reload cannot change these [daemon] keys: they take effect when the
 * daemon starts. True when c differs from old in one of them. */
#define CONF_RESTART_KEYS "socket, root, state_dir and controllers"
bool conf_needs_restart(const struct conf *old, const struct conf *c);

/* One resource setting given outside a file (Attach limits): name checked,
 * value normalised into out (file NULL, line 0), or -EINVAL with err saying
 * why ("memory.max: invalid size ..."). */
int conf_res_value(const char *name, const char *value, struct conf_res *out, char *err, size_t errlen);
/* The devices both normalised devices.deny lists a and b deny, into out
 * ("none" when none): -EINVAL for a list not normalised, -ENOSPC when out is
 * too short. */
int conf_devices_common(const char *a, const char *b, char *out, size_t len);

/* Report every resource setting that the running hierarchy cannot apply
 * (supported() returns false) as "FILE:LINE: memory.swap.max: not supported
 * on <why>". Returns the number of errors added. */
int conf_check_resources(const struct conf *c, bool (*supported)(const char *name, void *ud),
			 const char *why, void *ud, struct conf_errors *errs);

/* The effective configuration, normalised, as an ini file that conf_load
 * reads back to the same struct. */
int conf_print(const struct conf *c, FILE *f);

/* First [class] in file order whose match glob matches key, or NULL. */
const struct conf_class *conf_class_for_key(const struct conf *c, const char *key);
const struct conf_class *conf_class_by_name(const struct conf *c, const char *name);
const struct conf_job *conf_job_for_key(const struct conf *c, const char *key);

const char *conf_retire_mode_name(enum retire_mode m);
int conf_retire_mode_parse(const char *s, enum retire_mode *out);

#endif
