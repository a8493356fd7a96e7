/* conf_argv.c - a command line split into words the way a POSIX shell splits it,
 * without any expansion, and a program name looked up in PATH.
 *
 * Words are separated by blanks (space, tab, newline) outside quotes.
 * Outside quotes a backslash takes the next character as it is (a
 * backslash-newline joins lines). Inside '...' every character is taken as
 * it is. Inside "..." a backslash takes the next character as it is only
 * before $ ` " \ or newline, else it stays. Quoted and unquoted parts next
 * to each other make one word; '' or "" make an empty word. $, *, ~ and
 * the like are ordinary characters: nothing is expanded. */
#include "config.h"

#include "conf_argv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct split {
	char **words;
	size_t n, cap;
	char *word; /* the word being built, NULL between words */
	size_t len;
};

static int word_add_char(struct split *sp, size_t max, char c)
{
	if (!sp->word) {
		sp->word = malloc(max + 1);
		if (!sp->word)
			return -ENOMEM;
		sp->len = 0;
	}
	sp->word[sp->len++] = c;
	return 0;
}

/* an empty word from '' or "": the word exists even with no character */
static int word_begin(struct split *sp, size_t max)
{
	if (sp->word)
		return 0;
	sp->word = malloc(max + 1);
	if (!sp->word)
		return -ENOMEM;
	sp->len = 0;
	return 0;
}

static int word_end(struct split *sp)
{
	if (!sp->word)
		return 0;
	if (sp->n + 2 > sp->cap) {
		size_t cap = sp->cap ? sp->cap * 2 : 8;
		char **w = realloc(sp->words, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		sp->words = w;
		sp->cap = cap;
	}
	sp->word[sp->len] = '\0';
	sp->words[sp->n++] = sp->word;
	sp->words[sp->n] = NULL;
	sp->word = NULL;
	return 0;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* one quoted part starting at s[*i] (the quote itself); *i ends after the
 * closing quote */
static int quoted(struct split *sp, const char *s, size_t max, size_t *i, const char **why)
{
	char q = s[(*i)++];
	int r = word_begin(sp, max);

	for (; r == 0; (*i)++) {
		char c = s[*i];

		if (c == '\0') {
			*why = q == '\'' ? "unterminated single quote" : "unterminated double quote";
			return -EINVAL;
		}
		if (c == q) {
			(*i)++;
			return 0;
		}
		if (q == '"' && c == '\\' && s[*i + 1] && strchr("$`\"\\\n", s[*i + 1])) {
			c = s[++(*i)];
			if (c == '\n')
				continue;
		}
		r = word_add_char(sp, max, c);
	}
	return r;
}

static int split_all(struct split *sp, const char *s, const char **why)
{
	size_t max = strlen(s), i = 0;
	int r = 0;

	while (r == 0 && s[i]) {
		char c = s[i];

		if (blank(c)) {
			r = word_end(sp);
			i++;
		} else if (c == '\'' || c == '"') {
			r = quoted(sp, s, max, &i, why);
		} else if (c == '\\') {
			if (!s[i + 1]) {
				*why = "backslash at the end";
				return -EINVAL;
			}
			if (s[i + 1] != '\n')
				r = word_add_char(sp, max, s[i + 1]);
			i += 2;
		} else {
			r = word_add_char(sp, max, c);
			i++;
		}
	}
	if (r == 0)
		r = word_end(sp);
	return r;
}

int argv_split(const char *s, char ***out, const char **why)
{
	struct split sp = { 0 };
	const char *w = NULL;
	int r;

	if (!s || !out)
		return -EINVAL;
	r = split_all(&sp, s, &w);
	if (r == 0 && sp.n == 0) {
		w = "no command";
		r = -EINVAL;
	}
	if (r < 0) {
		free(sp.word);
		argv_free(sp.words);
		if (why)
			*why = w ? w : strerror(-r);
		return r;
	}
	*out = sp.words;
	return (int)sp.n;
}

void argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

static int executable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	return access(path, X_OK) < 0 ? -errno : 0;
}

int argv_find_program(const char *name, const char *path, char *buf, size_t len)
{
	int r = -ENOENT;

	if (!name || !*name || !buf)
		return -EINVAL;
	if (strchr(name, '/')) {
		if (name[0] != '/')
			return -EINVAL; /* relative to what: the daemon's directory means nothing to a job */
		if (strlen(name) >= len)
			return -ENAMETOOLONG;
		r = executable(name);
		if (r == 0)
			strcpy(buf, name);
		return r;
	}
	if (!path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path) {
		size_t dl = strcspn(path, ":");
		char full[4096];

		if (dl > 0 && path[0] == '/' && dl + 1 + strlen(name) < sizeof(full)) {
			memcpy(full, path, dl);
			full[dl] = '/';
			strcpy(full + dl + 1, name);
			int e = executable(full);
			if (e == 0) {
				if (strlen(full) >= len)
					return -ENAMETOOLONG;
				strcpy(buf, full);
				return 0;
			}
			if (e == -EACCES)
				r = e; /* found but not runnable: say so if nothing better comes */
		}
		path += dl;
		if (*path == ':')
			path++;
	}
	return r;
}
