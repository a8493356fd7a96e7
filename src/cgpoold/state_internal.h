/* state_internal.h - shared by state.c and state_load.c only */
#ifndef CGPOOL_STATE_INTERNAL_H
#define CGPOOL_STATE_INTERNAL_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "state.h"

#define STATE_VERSION 2
#define STATE_SNAPSHOT "state.json"
#define STATE_TEMP "state.json.tmp" /* also the prefix of older daemons' temporary files */
#define STATE_JOURNAL "journal."
#define STATE_NAME_MAX 32 /* "journal." and 20 digits */

struct state {
	struct ev_loop *loop;
	char *dir;
	char *root;
	int dirfd;
	int jfd;                 /* the journal records go to; -1 until the next record */
	uint64_t seq;            /* its number (the file may not exist yet) */
	uint64_t jbytes;         /* journal bytes no finished snapshot covers */
	uint64_t snap_bytes;     /* size of the last snapshot */
	uint64_t due_floor;      /* after a failed compaction: jbytes that makes the next one due */
	pid_t child_pid;         /* the compaction running, 0 when none */
	uint64_t child_seq;      /* its snapshot covers the journals below this one */
	uint64_t child_covered;  /* jbytes it covers */
	size_t child_nslots;
	int64_t child_start_us;
	ev_child child;
	struct state_totals totals; /* written with every record */
};

/* Text built in a caller's buffer, moved to the heap when it outgrows it;
 * err is set (-ENOMEM) once an append fails, and later appends do nothing. */
struct state_text {
	char *p;
	size_t len, cap;
	bool heap;
	int err;
};

void state_text_init(struct state_text *t, char *buf, size_t cap);
void state_text_fini(struct state_text *t);
void state_text_put(struct state_text *t, const char *s, size_t n);
void state_text_printf(struct state_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s quoted as a JSON string */
void state_text_str(struct state_text *t, const char *s);
/* one slot, as in the snapshot's "slots" array and in a journal's put record
 * (state_text.c) */
void state_text_slot(struct state_text *t, const struct slot *s);
/* ,"runs_placed":N,"slot_cgroups":N */
void state_text_totals(struct state_text *t, const struct state_totals *tot);
/* 0, or -EINVAL with *why (static text) */
int state_slot_from_json(json_t *j, struct slot *s, const char **why);

/* the journals' numbers, ascending (free *out) */
int state_journals(int dirfd, uint64_t **out, size_t *n);
void state_journal_name(char name[STATE_NAME_MAX], uint64_t seq);

#endif
