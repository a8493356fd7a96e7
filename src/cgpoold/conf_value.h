/* conf_value.h - the keys of each config section: what their values parse
 * to and how they print. Internal to conf.c; no file names or lines here. */
#ifndef CGPOOL_CONF_VALUE_H
#define CGPOOL_CONF_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf.h"

#define CONF_ERR_MAX 320 /* bytes of one message from a parser */

struct conf_key;
/* Parse v into field. On -EINVAL, err holds the message that goes after
 * "FILE:LINE: ", e.g. `warm: invalid number "x" (use a number from 0 to 65535)`.
 * -ENOMEM leaves err alone. field is written only on success. */
typedef int conf_parse_fn(const struct conf_key *k, const char *v, void *field, char *err, size_t errlen);
typedef void conf_print_fn(FILE *f, const struct conf_key *k, const void *field);

enum {
	CONF_KEY_EMPTY_OK = 1 << 0, /* an empty value means "not set" */
	CONF_KEY_GROUP = 1 << 1,    /* the account is a group, not a user */
	CONF_KEY_WARM = 1 << 2,     /* pool.warm and pool.max_slots: checked together */
	CONF_KEY_SLOTS = 1 << 3,
	CONF_KEY_PRINT_EMPTY = 1 << 4, /* print "key =" when not set */
	CONF_KEY_REPEAT = 1 << 5,      /* every setting adds to the list (environment) */
};

struct conf_key {
	const char *name;
	conf_parse_fn *parse;
	conf_print_fn *print;
	size_t off; /* of the field in struct conf, conf_class or conf_job */
	uint64_t min, max;
	const char *const *names; /* enums: the value is the index of the name */
	size_t nnames;
	const char *what; /* enums: "mode", "policy", "level" */
	unsigned flags;
};

enum conf_sect_kind { CONF_SECT_GLOBAL, CONF_SECT_CLASS, CONF_SECT_JOB };

struct conf_sect {
	const char *name;
	enum conf_sect_kind kind; /* GLOBAL fields live in struct conf */
	const struct conf_key *keys;
	size_t nkeys;
};

#define CONF_SECTS_HINT "use [daemon], [pool], [retire], [class NAME] or [job KEY]"

/* [daemon], [pool], [retire], [class], [job] by name, or NULL */
const struct conf_sect *conf_sect_find(const char *name);
const struct conf_key *conf_key_find(const struct conf_sect *s, const char *name);
/* print every key of s whose fields are at base, as "key = value" lines */
void conf_keys_print(FILE *f, const struct conf_sect *s, const void *base);
/* the sections in the order conf_print writes them */
const struct conf_sect *conf_sect_at(size_t i);

/* Resource keys of [class] and [job]: the controller bit name needs, 0 when
 * name is not a resource key, CONF_RES_NOCTRL for one that needs no
 * controller (devices.deny: a device filter program on the slot). */
#define CONF_RES_NOCTRL (1u << 31)
unsigned conf_res_ctrl(const char *name);
/* normalise v into out (see struct conf_res), or -EINVAL with err */
int conf_res_parse(const char *name, const char *v, char *out, size_t outlen, char *err, size_t errlen);

/* [job] values (conf_job.c) */
conf_parse_fn conf_p_exec, conf_p_start_limit, conf_p_signal, conf_p_environment, conf_p_output;
conf_print_fn conf_pr_start_limit, conf_pr_signal, conf_pr_environment, conf_pr_output;
/* "TERM" for SIGTERM; NULL for a signal a job may not be stopped with */
const char *conf_signal_name(int sig);
/* the strings a [job] owns */
void conf_job_free(struct conf_job *j);

/* "memory" for CONF_CTRL_MEMORY, ... */
const char *conf_ctrl_name(unsigned bit);

#endif
