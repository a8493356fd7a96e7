/* spank_key.c - the Slurm plug-in's arguments, keys and placement check */
#include "config.h"

#include "spank_key.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int bad_arg(char *err, size_t errlen, const char *arg, const char *what)
{
	snprintf(err, errlen, "plugstack.conf argument \"%s\": %s", arg, what);
	return -EINVAL;
}

static int set_str(char *dst, size_t size, const char *v, const char *arg, char *err, size_t errlen)
{
	if (!*v || strlen(v) >= size)
		return bad_arg(err, errlen, arg, !*v ? "empty value" : "too long");
	strcpy(dst, v);
	return 0;
}

static int one_arg(const char *a, struct spank_args *out, char *err, size_t errlen)
{
	const char *eq = strchr(a, '='), *v = eq ? eq + 1 : "";
	size_t n = eq ? (size_t)(eq - a) : strlen(a);
	char *end;

	if (n == 6 && strncmp(a, "socket", n) == 0)
		return set_str(out->socket, sizeof(out->socket), v, a, err, errlen);
	if (n == 3 && strncmp(a, "key", n) == 0)
		return set_str(out->pattern, sizeof(out->pattern), v, a, err, errlen);
	if (n == 5 && strncmp(a, "class", n) == 0)
		return set_str(out->class_name, sizeof(out->class_name), v, a, err, errlen);
	if ((n == 7 && strncmp(a, "release", n) == 0) || (n == 6 && strncmp(a, "cpuset", n) == 0) ||
	    (n == 7 && strncmp(a, "devices", n) == 0)) {
		bool *flag = a[0] == 'r' ? &out->release : a[0] == 'c' ? &out->cpuset : &out->devices;
		char hint[64];
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0) {
			snprintf(hint, sizeof(hint), "use %.*s=yes or %.*s=no", (int)n, a, (int)n, a);
			return bad_arg(err, errlen, a, hint);
		}
		*flag = strcmp(v, "yes") == 0;
		return 0;
	}
	if (n == 7 && strncmp(a, "timeout", n) == 0) {
		unsigned long ms = strtoul(v, &end, 10);
		if (!*v || *end || ms < 100 || ms > 600000)
			return bad_arg(err, errlen, a, "use timeout=MS, from 100 to 600000 milliseconds");
		out->timeout_ms = (unsigned)ms;
		return 0;
	}
	if (n == 4 && strncmp(a, "swap", n) == 0) {
		unsigned long pct = strtoul(v, &end, 10);
		if (!*v || *end || pct > 10000)
			return bad_arg(err, errlen, a, "use swap=PERCENT of the job's memory, from 0 to 10000");
		out->swap_pct = (int)pct;
		return 0;
	}
	return bad_arg(err, errlen, a, "unknown (use socket=, key=, class=, release=, timeout=, swap=, cpuset=, devices=)");
}

/* ---- can two jobs, or a job and a user, have one key?
 *
 * A key form is a sequence of parts: a literal character, a number (%j, %u:
 * decimal, no leading zero), a name (%n: what --cgpool-key takes) or any
 * key characters (%*, none included). A pattern's keys are one form; the
 * keys a user chooses are others: the plug-in's named keys, and the keys
 * cgpoold's default user_keys lets any user bind by itself. Whether the
 * pattern's form and one of those have a key in common is decided exactly
 * (the product of the two forms' automata, searched breadth first); a
 * pattern that repeats %j is treated as if each could differ, which can only
 * refuse more. */
enum part_kind { PART_CHAR, PART_NUM, PART_NAME, PART_ANY };
struct part {
	enum part_kind kind;
	char c;
};
struct form {
	struct part p[SPANK_KEY_MAX + 1];
	size_t n;
};
/* a state of a form: before part i (sub 0), inside it (1), or after a
 * number's single 0 (2) */
#define FORM_SUBS 3

/* the keys other than a pattern's that a user may choose */
#define NAMED_FORM "slurm.%u.%n"  /* spank_key_build's named key */
#define USER_KEYS_FORM "user.%u.%*" /* cgpoold's default user_keys, user.%u.* */

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("._:@+=,-", c));
}

static bool name_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       (!first && (c == '.' || c == '-'));
}

static void form_parse(const char *text, struct form *f)
{
	f->n = 0;
	for (const char *t = text; *t && f->n < SPANK_KEY_MAX; t++) {
		struct part *p = &f->p[f->n++];
		p->kind = PART_CHAR;
		p->c = *t;
		if (*t != '%' || !t[1])
			continue;
		t++;
		p->kind = *t == 'j' || *t == 'u' ? PART_NUM : *t == 'n' ? PART_NAME : *t == '*' ? PART_ANY : PART_CHAR;
		p->c = *t;
	}
}

/* the state after c from part i, sub; -1 none */
static int form_step(const struct form *f, size_t i, int sub, char c)
{
	const struct part *p = &f->p[i];
	bool digit = c >= '0' && c <= '9';

	if (i >= f->n)
		return -1;
	switch (p->kind) {
	case PART_CHAR: return sub == 0 && c == p->c ? (int)(i + 1) * FORM_SUBS : -1;
	case PART_NUM: return !digit || sub == 2 ? -1 : (int)i * FORM_SUBS + (sub == 0 && c == '0' ? 2 : 1);
	case PART_NAME: return name_char(c, sub == 0) ? (int)i * FORM_SUBS + 1 : -1;
	case PART_ANY: return key_char(c) ? (int)i * FORM_SUBS + 1 : -1;
	}
	return -1;
}

/* may the form leave part i from sub without another character? */
static bool form_can_end(const struct form *f, size_t i, int sub)
{
	if (i >= f->n)
		return false;
	return f->p[i].kind == PART_ANY || (f->p[i].kind != PART_CHAR && sub != 0);
}

struct search {
	const struct form *a, *b;
	size_t nb;        /* states of b */
	int *from;        /* each node's predecessor, -1 the start, -2 not reached */
	char *via;        /* the character that led to it, '\0' a move without one */
	int *queue;
};

/* reach node (a state * nb + b state) from prev */
static void search_visit(struct search *s, int node, int prev, char c, size_t *tail)
{
	if (node < 0 || s->from[node] != -2)
		return;
	s->from[node] = prev;
	s->via[node] = c;
	s->queue[(*tail)++] = node;
}

/* the key that led to node end, into out (the part of b each character is
 * in, into in_b); its length */
static size_t search_key(const struct search *s, int end, char *out, size_t *in_b, size_t len)
{
	size_t n = 0;

	for (int at = end; s->from[at] >= 0 && n + 1 < len; at = s->from[at])
		if (s->via[at]) {
			in_b[n] = (size_t)s->from[at] % s->nb / FORM_SUBS;
			out[n++] = s->via[at];
		}
	for (size_t i = 0; i < n / 2; i++) { /* found backwards */
		char c = out[i];
		size_t k = in_b[i];
		out[i] = out[n - 1 - i], out[n - 1 - i] = c;
		in_b[i] = in_b[n - 1 - i], in_b[n - 1 - i] = k;
	}
	out[n] = '\0';
	return n;
}

/* Is there a key both forms make? 1 with it in out (the part of b each
 * character is in, in in_b), 0 none, -ENOMEM. alphabet: every character
 * form a can make. */
static int forms_meet(const struct form *a, const struct form *b, const char *alphabet, char *out, size_t *in_b,
		      size_t len)
{
	size_t na = (a->n + 1) * FORM_SUBS, nb = (b->n + 1) * FORM_SUBS, head = 0, tail = 0;
	struct search s = { a, b, nb, calloc(na * nb, sizeof(int)), calloc(na * nb, 1), calloc(na * nb, sizeof(int)) };
	int end = (int)(a->n * FORM_SUBS * nb + b->n * FORM_SUBS), r = 0;

	if (!s.from || !s.via || !s.queue)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < na * nb; i++)
		s.from[i] = -2;
	if (r == 0)
		search_visit(&s, 0, -1, '\0', &tail);
	while (r == 0 && head < tail) {
		int node = s.queue[head++];
		size_t ia = (size_t)node / nb / FORM_SUBS, ib = (size_t)node % nb / FORM_SUBS;
		int sa = (int)((size_t)node / nb % FORM_SUBS), sb = (int)((size_t)node % nb % FORM_SUBS);
		if (node == end) {
			r = search_key(&s, end, out, in_b, len) > 0;
			break;
		}
		if (form_can_end(a, ia, sa))
			search_visit(&s, (int)((ia + 1) * FORM_SUBS * nb + (size_t)node % nb), node, '\0', &tail);
		if (form_can_end(b, ib, sb))
			search_visit(&s, (int)((size_t)node - (size_t)node % nb + (ib + 1) * FORM_SUBS), node, '\0', &tail);
		for (const char *c = alphabet; *c; c++) {
			int ta = form_step(a, ia, sa, *c), tb = form_step(b, ib, sb, *c);
			if (ta >= 0 && tb >= 0)
				search_visit(&s, ta * (int)nb + tb, node, *c, &tail);
		}
	}
	free(s.from);
	free(s.via);
	free(s.queue);
	return r;
}

/* what of key the form b put in its parts of kind k, in order, into out */
static void parts_of(const struct form *b, const char *key, const size_t *in_b, enum part_kind k, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; key[i] && o + 1 < len; i++)
		if (b->p[in_b[i]].kind == k)
			out[o++] = key[i];
	out[o] = '\0';
}

/* Two jobs' keys are one key when a %j or %u runs into a digit: each must
 * end the pattern or be followed by a character that is not a digit. */
static int pattern_injective(const struct form *f, const char *pattern, char *err, size_t errlen)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->p[i].kind == PART_NUM && i + 1 < f->n &&
		    (f->p[i + 1].kind != PART_CHAR || (f->p[i + 1].c >= '0' && f->p[i + 1].c <= '9')))
			return bad_arg(err, errlen, pattern,
				       "key pattern: a %j or %u followed by a digit or another %j or %u lets two jobs "
				       "have one key (with %j%u, job 1 of uid 23 and job 12 of uid 3 are both 123): "
				       "end the pattern with it or follow it by a separator, as in slurm.%j_%u");
	return 0;
}

/* No key of the pattern is a key some user may choose (a named key, or one
 * of cgpoold's default user_keys): that user could take the job's key
 * before the job starts, and the job would be refused. */
static int pattern_apart(const struct form *f, const char *pattern, char *err, size_t errlen)
{
	static const char *const others[] = { NAMED_FORM, USER_KEYS_FORM };
	char alphabet[SPANK_KEY_MAX + 16] = "1234567890", key[2 * SPANK_KEY_MAX], uid[2 * SPANK_KEY_MAX],
	     name[2 * SPANK_KEY_MAX], whose[6 * SPANK_KEY_MAX], why[12 * SPANK_KEY_MAX];
	size_t in_b[2 * SPANK_KEY_MAX], na = strlen(alphabet);
	struct form other;

	for (size_t i = 0; i < f->n; i++)
		if (f->p[i].kind == PART_CHAR && !strchr(alphabet, f->p[i].c))
			alphabet[na++] = f->p[i].c, alphabet[na] = '\0';
	for (size_t k = 0; k < sizeof(others) / sizeof(others[0]); k++) {
		int r;
		form_parse(others[k], &other);
		r = forms_meet(f, &other, alphabet, key, in_b, sizeof(key));
		if (r < 0)
			return bad_arg(err, errlen, pattern, "key pattern: out of memory checking it");
		if (r == 0)
			continue;
		parts_of(&other, key, in_b, PART_NUM, uid, sizeof(uid));
		parts_of(&other, key, in_b, k == 0 ? PART_NAME : PART_ANY, name, sizeof(name));
		if (k == 0)
			snprintf(whose, sizeof(whose), "which is also the key uid %s gets with --cgpool-key=%s", uid, name);
		else
			snprintf(whose, sizeof(whose), "which uid %s may also bind by itself under cgpoold's default "
				 "user_keys (user.%%u.*)", uid);
		snprintf(why, sizeof(why), "key pattern: a job's key can be %s, %s: that user could take it first and "
			 "the job would be refused; put %%j first after a fixed prefix and a separator after it, as in "
			 "slurm.%%j or slurm.%%j_%%u (doc/slurm.md)", key, whose);
		return bad_arg(err, errlen, pattern, why);
	}
	return 0;
}

/* the pattern names the job (%j), nothing a user's environment sets, and
 * no key another job or a user could have */
static int pattern_check(const char *pattern, char *err, size_t errlen)
{
	struct form f;
	bool job = false, other = false;

	for (const char *p = pattern; *p; p++) {
		if (*p != '%')
			continue;
		p++;
		if (*p == 'j')
			job = true;
		else if (*p && !strchr("u%AaJ", *p))
			other = true; /* refused by spank_key_build: not a form */
		else if (*p == 'A' || *p == 'a' || *p == 'J')
			return bad_arg(err, errlen, pattern,
				       "key pattern: %A, %a and %J are array ids, which srun steps take from the "
				       "user's environment; use %j (an array task has a job id of its own)");
		else if (*p == '\0')
			break;
	}
	if (!job)
		return bad_arg(err, errlen, pattern, "key pattern: %j is needed, else two jobs would share a key");
	if (other)
		return 0;
	form_parse(pattern, &f);
	if (pattern_injective(&f, pattern, err, errlen) < 0 || pattern_apart(&f, pattern, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

int spank_args_parse(int ac, char *const *av, struct spank_args *out, char *err, size_t errlen)
{
	struct spank_args a = { .release = true, .timeout_ms = SPANK_DEFAULT_TIMEOUT_MS, .swap_pct = -1 };
	struct spank_job probe = { 4294967294U, 4294967294U };
	char key[SPANK_KEY_MAX + 1];

	strcpy(a.pattern, SPANK_DEFAULT_PATTERN);
	for (int i = 0; i < ac; i++)
		if (one_arg(av[i], &a, err, errlen) < 0)
			return -EINVAL;
	if (pattern_check(a.pattern, err, errlen) < 0)
		return -EINVAL;
	if (spank_key_build(a.pattern, NULL, &probe, key, sizeof(key)) < 0)
		return bad_arg(err, errlen, a.pattern, "key pattern: use %j %u %% and key characters, at most 128 "
						       "characters expanded");
	*out = a;
	return 0;
}

int spank_job_name(const struct spank_job *job, char *out, size_t len)
{
	int w = snprintf(out, len, "slurm:%" PRIu32 ":%" PRIu32, job->job_id, job->uid);

	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

int spank_name_check(const char *name, const char **why)
{
	size_t len = strlen(name);

	if (len == 0 || len > SPANK_NAME_MAX) {
		*why = "a name is 1 to 64 characters";
		return -EINVAL;
	}
	if (name[0] == '.' || name[0] == '-') {
		*why = "a name may not start with '.' or '-'";
		return -EINVAL;
	}
	if (strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len) {
		*why = "a name holds only letters, digits, '.', '_' and '-'";
		return -EINVAL;
	}
	return 0;
}

/* one %x of a pattern into buf */
static int expand(char c, const struct spank_job *job, char *buf, size_t len)
{
	switch (c) {
	case 'j': return snprintf(buf, len, "%" PRIu32, job->job_id);
	case 'u': return snprintf(buf, len, "%" PRIu32, job->uid);
	case '%': return snprintf(buf, len, "%%");
	default: return -EINVAL;
	}
}

int spank_key_build(const char *pattern, const char *name, const struct spank_job *job, char *out, size_t len)
{
	char buf[32];
	size_t n = 0;

	if (name) {
		int w = snprintf(out, len, "slurm.%" PRIu32 ".%s", job->uid, name);
		return w < 0 || (size_t)w >= len || w > SPANK_KEY_MAX ? -ENAMETOOLONG : 0;
	}
	for (const char *p = pattern; *p; p++) {
		int w = 1;
		if (*p == '%') {
			w = expand(*++p, job, buf, sizeof(buf));
			if (w < 0)
				return -EINVAL;
		} else {
			buf[0] = *p;
			buf[1] = '\0';
		}
		if (n + (size_t)w >= len || n + (size_t)w > SPANK_KEY_MAX)
			return -ENAMETOOLONG;
		memcpy(out + n, buf, (size_t)w + 1);
		n += (size_t)w;
	}
	return n ? 0 : -EINVAL;
}

/* does the controller list "a,b,c" (len bytes) name memory? */
static bool lists_memory(const char *list, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t w = strcspn(list + i, ",:");
		if (w == 6 && strncmp(list + i, "memory", 6) == 0)
			return true;
		i += w + 1;
	}
	return false;
}

/* the memory cgroup in /proc/PID/cgroup text: the v1 memory line, else "0::" */
static int memory_cgroup(const char *cgroups, char *out, size_t len)
{
	const char *v1 = NULL, *v2 = NULL;

	for (const char *line = cgroups; line && *line;) {
		const char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *nl = strchr(line, '\n');
		if (c2 && (!nl || c2 < nl)) {
			if (strncmp(line, "0::", 3) == 0)
				v2 = c2 + 1;
			else if (lists_memory(c1 + 1, (size_t)(c2 - c1 - 1)))
				v1 = c2 + 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	if (!v1)
		v1 = v2;
	if (!v1)
		return -ENOENT;
	snprintf(out, len, "%.*s", (int)strcspn(v1, "\n"), v1);
	return 0;
}

bool spank_in_slot(const char *cgroups, const char *slot_path)
{
	char cg[4096];
	size_t n, p;

	if (memory_cgroup(cgroups, cg, sizeof(cg)) < 0)
		return false;
	n = strlen(cg);
	p = strlen(slot_path);
	/* slot_path is <mount><cg>: the cgroup is its tail, on a '/' */
	return n > 1 && p >= n && strcmp(slot_path + p - n, cg) == 0 && cg[0] == '/';
}

/* the value of the last "key=value" of a Slurm config text (keys in any
 * case, '#' to the end of a line a comment, several pairs to a line), "" if
 * it has none */
static void conf_get(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);

	out[0] = '\0';
	for (const char *p = text; p && *p;) {
		size_t w;

		p += strspn(p, " \t\r\n");
		if (*p == '#') {
			p = strchr(p, '\n');
			continue;
		}
		w = strcspn(p, " \t\r\n#");
		if (w > klen && p[klen] == '=' && strncasecmp(p, key, klen) == 0)
			snprintf(out, len, "%.*s", (int)(w - klen - 1), p + klen + 1);
		p += w;
	}
}

/* does the comma list name plugin type/name (or its bare name)? */
static bool lists_plugin(const char *list, const char *plugin)
{
	const char *bare = strchr(plugin, '/') + 1;

	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		if ((w == strlen(plugin) && strncasecmp(p, plugin, w) == 0) ||
		    (w == strlen(bare) && strncasecmp(p, bare, w) == 0))
			return true;
		p += w + (p[w] == ',');
	}
	return false;
}

int spank_conf_conflict(const char *slurm_conf, const char *cgroup_conf, char *why, size_t len)
{
	char v[256];

	conf_get(slurm_conf ? slurm_conf : "", "JobAcctGatherType", v, sizeof(v));
	if (strcasecmp(v, "jobacct_gather/cgroup") == 0) {
		snprintf(why, len, "JobAcctGatherType=jobacct_gather/cgroup puts every task in a memory cgroup of "
				   "Slurm's, which dies at the step's end: use jobacct_gather/linux (doc/slurm.md)");
		return 1;
	}
	conf_get(slurm_conf ? slurm_conf : "", "TaskPlugin", v, sizeof(v));
	if (!lists_plugin(v, "task/cgroup"))
		return 0;
	static const char *const memory_keys[] = { "ConstrainRAMSpace", "ConstrainSwapSpace" };
	for (size_t i = 0; i < 2; i++) {
		conf_get(cgroup_conf ? cgroup_conf : "", memory_keys[i], v, sizeof(v));
		if (strcasecmp(v, "yes") == 0) {
			snprintf(why, len, "task/cgroup with %s=yes puts every step in memory cgroups of Slurm's, "
					   "which die at its end: set ConstrainRAMSpace=no and ConstrainSwapSpace=no in "
					   "cgroup.conf (conf/slurm/beside, doc/slurm.md)", memory_keys[i]);
			return 1;
		}
	}
	return 0;
}

bool spank_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list ? list : ""; *p;) {
		size_t w = strcspn(p, ",");
		if (w == n && strncasecmp(p, name, n) == 0)
			return true;
		p += w + (p[w] == ',');
	}
	return false;
}

/* is index in Slurm's comma list of GRES indices? -1: not such a list */
static int index_listed(const char *allowed, int index)
{
	const char *p = allowed ? allowed : "";

	while (*p) {
		char *end;
		long v;
		if (*p < '0' || *p > '9')
			return -1;
		v = strtol(p, &end, 10);
		if (*end && *end != ',')
			return -1;
		if (v == index)
			return 1;
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int dev_cmp(const void *a, const void *b)
{
	const struct spank_dev *x = a, *y = b;

	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->major != y->major)
		return x->major < y->major ? -1 : 1;
	return x->minor < y->minor ? -1 : x->minor > y->minor;
}

int spank_devices_deny(const struct spank_dev *devs, size_t n, const char *allowed, char *out, size_t len)
{
	struct spank_dev *deny = calloc(n ? n : 1, sizeof(*deny));
	size_t nd = 0, o = 0;
	int r = 0;

	if (!deny)
		return -ENOMEM;
	if (index_listed(allowed, -2) < 0)
		r = -EINVAL;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (index_listed(allowed, devs[i].index) == 0)
			deny[nd++] = devs[i];
	qsort(deny, nd, sizeof(*deny), dev_cmp);
	out[0] = '\0';
	for (size_t i = 0; r == 0 && i < nd;) {
		size_t j = i;
		int w;
		/* a run of consecutive minors of one type and major */
		while (deny[i].minor != SPANK_DEV_ANY && j + 1 < nd && deny[j + 1].type == deny[i].type &&
		       deny[j + 1].major == deny[i].major && deny[j + 1].minor <= deny[j].minor + 1 &&
		       deny[j + 1].minor != SPANK_DEV_ANY)
			j++;
		if (deny[i].minor == SPANK_DEV_ANY)
			w = snprintf(out + o, len - o, "%s%c %u:*", o ? "," : "", deny[i].type, deny[i].major);
		else if (deny[j].minor == deny[i].minor)
			w = snprintf(out + o, len - o, "%s%c %u:%u", o ? "," : "", deny[i].type, deny[i].major,
				     deny[i].minor);
		else
			w = snprintf(out + o, len - o, "%s%c %u:%u-%u", o ? "," : "", deny[i].type, deny[i].major,
				     deny[i].minor, deny[j].minor);
		if (w < 0 || (size_t)w >= len - o)
			r = -ENOSPC;
		else
			o += (size_t)w;
		i = j + 1;
	}
	free(deny);
	if (r == 0 && o == 0 && n > 0 && snprintf(out, len, "none") >= (int)len)
		r = -ENOSPC;
	return r;
}
