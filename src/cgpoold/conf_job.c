/* conf_job.c - the values of a [job KEY] section that no other section has:
 * the command line, the start limit, the stop signal, the environment and
 * where output goes. Parsers are pure, like those of conf_value.c. */
#include "config.h"

#include "conf_argv.h"
#include "conf_value.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DUR_MAX (8760ULL * 3600 * 1000)

__attribute__((format(printf, 3, 4))) static int refuse(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- exec */

int conf_p_exec(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	char **argv = NULL, **dst = field, *s;
	const char *why = NULL;
	int r = argv_split(v, &argv, &why);

	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return refuse(err, len, "%s: invalid command \"%.80s\" (%s)", k->name, v, why);
	if (strchr(argv[0], '/') && argv[0][0] != '/')
		r = refuse(err, len, "%s: program \"%.80s\" is a relative path (use an absolute path, or a name found in PATH)",
			   k->name, argv[0]);
	argv_free(argv);
	if (r < 0)
		return r;
	if (!(s = strdup(v)))
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* ---- start_limit = N/INTERVAL | off */

int conf_p_start_limit(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	struct conf_job *j = (struct conf_job *)((char *)field - offsetof(struct conf_job, start_limit));
	const char *slash = strchr(v, '/');
	char num[24];
	uint64_t burst, ms;

	if (strcmp(v, "off") == 0) {
		j->start_limit.burst = 0;
		j->start_limit.interval_ms = 0;
		return 0;
	}
	if (!slash || (size_t)(slash - v) >= sizeof(num))
		goto bad;
	memcpy(num, v, (size_t)(slash - v));
	num[slash - v] = '\0';
	if (parse_uint(num, 1, 1000000, &burst) < 0 || parse_duration_ms(slash + 1, &ms) < 0 || ms == 0 ||
	    ms > DUR_MAX)
		goto bad;
	j->start_limit.burst = (unsigned)burst;
	j->start_limit.interval_ms = ms;
	return 0;
bad:
	return refuse(err, len,
		      "%s: invalid limit \"%.80s\" (use STARTS/INTERVAL such as 5/10s: at most 1000000 starts "
		      "within 1ms to 8760h; or off)",
		      k->name, v);
}

void conf_pr_start_limit(FILE *f, const struct conf_key *k, const void *field)
{
	const struct conf_job *j = (const struct conf_job *)((const char *)field - offsetof(struct conf_job, start_limit));
	char d[32];

	if (!j->start_limit.burst) {
		fprintf(f, "%s = off\n", k->name);
		return;
	}
	format_duration_ms(d, sizeof(d), j->start_limit.interval_ms);
	fprintf(f, "%s = %u/%s\n", k->name, j->start_limit.burst, d);
}

/* ---- stop_signal */

static const struct {
	int sig;
	const char *name;
} signals[] = {
	{ SIGTERM, "TERM" }, { SIGINT, "INT" },   { SIGHUP, "HUP" },   { SIGQUIT, "QUIT" },
	{ SIGKILL, "KILL" }, { SIGUSR1, "USR1" }, { SIGUSR2, "USR2" }, { SIGWINCH, "WINCH" },
	{ SIGPWR, "PWR" },
};

const char *conf_signal_name(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (signals[i].sig == sig)
			return signals[i].name;
	return NULL;
}

int conf_p_signal(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	const char *name = strncmp(v, "SIG", 3) == 0 ? v + 3 : v;

	for (size_t i = 0; i < ARRAY_SIZE(signals); i++) {
		if (strcmp(signals[i].name, name) == 0) {
			*(int *)field = signals[i].sig;
			return 0;
		}
	}
	return refuse(err, len, "%s: invalid signal \"%.80s\" (use TERM, INT, HUP, QUIT, KILL, USR1, USR2, WINCH or PWR)",
		      k->name, v);
}

void conf_pr_signal(FILE *f, const struct conf_key *k, const void *field)
{
	const char *name = conf_signal_name(*(const int *)field);

	fprintf(f, "%s = %s\n", k->name, name ? name : "TERM");
}

/* ---- environment = NAME=VALUE ... (repeatable; words split like exec) */

static bool env_name_ok(const char *s, size_t n)
{
	if (n == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

int conf_p_environment(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	struct conf_job *j = (struct conf_job *)((char *)field - offsetof(struct conf_job, environment));
	char **words = NULL, **grown;
	const char *why = NULL;
	int n = argv_split(v, &words, &why), r = 0;

	if (n == -ENOMEM)
		return n;
	if (n < 0)
		return refuse(err, len, "%s: invalid value \"%.80s\" (%s)", k->name, v, why);
	for (int i = 0; i < n && r == 0; i++) {
		const char *eq = strchr(words[i], '=');
		if (!eq || !env_name_ok(words[i], (size_t)(eq - words[i])))
			r = refuse(err, len, "%s: \"%.80s\" is not NAME=VALUE (NAME: letters, digits and _, not first a digit)",
				   k->name, words[i]);
	}
	grown = r == 0 ? realloc(j->environment, (j->nenvironment + (size_t)n + 1) * sizeof(*grown)) : NULL;
	if (r == 0 && !grown)
		r = -ENOMEM;
	if (r < 0) {
		argv_free(words);
		return r;
	}
	for (int i = 0; i < n; i++)
		grown[j->nenvironment++] = words[i];
	grown[j->nenvironment] = NULL;
	j->environment = grown;
	free(words); /* the strings moved over */
	return 0;
}

/* one word that argv_split reads back as it is */
static void print_word(FILE *f, const char *s)
{
	if (*s && !strpbrk(s, " \t\n'\"\\")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (strchr("$`\"\\", *s))
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void conf_pr_environment(FILE *f, const struct conf_key *k, const void *field)
{
	const struct conf_job *j = (const struct conf_job *)((const char *)field - offsetof(struct conf_job, environment));

	for (size_t i = 0; i < j->nenvironment; i++) {
		fprintf(f, "%s = ", k->name);
		print_word(f, j->environment[i]);
		fputc('\n', f);
	}
}

/* ---- stdout / stderr = journal | null | inherit | file:PATH | append:PATH */

static const char *const output_names[] = {
	[OUTPUT_JOURNAL] = "journal", [OUTPUT_NULL] = "null", [OUTPUT_INHERIT] = "inherit",
	[OUTPUT_FILE] = "file:", [OUTPUT_APPEND] = "append:",
};

int conf_p_output(const struct conf_key *k, const char *v, void *field, char *err, size_t len)
{
	struct conf_output *o = field;

	for (size_t i = 0; i < ARRAY_SIZE(output_names); i++) {
		size_t n = strlen(output_names[i]);
		char *path = NULL;

		if (output_names[i][n - 1] == ':' ? strncmp(v, output_names[i], n) != 0 : strcmp(v, output_names[i]) != 0)
			continue;
		if (output_names[i][n - 1] == ':') {
			if (v[n] != '/' || strlen(v + n) >= PATH_MAX)
				return refuse(err, len, "%s: invalid output \"%.80s\" (%sPATH needs an absolute path)",
					      k->name, v, output_names[i]);
			if (!(path = strdup(v + n)))
				return -ENOMEM;
		}
		free(o->path);
		o->kind = (enum conf_output_kind)i;
		o->path = path;
		return 0;
	}
	return refuse(err, len, "%s: invalid output \"%.80s\" (use journal, null, inherit, file:PATH or append:PATH)",
		      k->name, v);
}

void conf_pr_output(FILE *f, const struct conf_key *k, const void *field)
{
	const struct conf_output *o = field;

	fprintf(f, "%s = %s%s\n", k->name, output_names[o->kind], o->path ? o->path : "");
}

void conf_job_free(struct conf_job *j)
{
	free(j->key);
	free(j->exec);
	free(j->user);
	free(j->group);
	free(j->working_directory);
	for (size_t i = 0; i < j->nenvironment; i++)
		free(j->environment[i]);
	free(j->environment);
	free(j->out.path);
	free(j->err.path);
}
