/* top.c - cgpoolctl top: the slots and the machine's dying memory cgroups,
 * redrawn every few seconds, like systemd-cgtop.
 *
 * Each refresh takes the census (cg_census.c: the kernel's files, so it works
 * without a daemon), the daemon's Status and its streamed List. List has no
 * runs, so the last run of each slot shown comes from Status KEY, asked for
 * the shown rows only. The terminal is driven with termios and ANSI sequences
 * alone: raw mode for the keys, the alternate screen, the frame cleared and
 * written whole; every line is cut to the terminal's width, the frame to its
 * height. Without a terminal on standard output one frame is printed as
 * plain text. */
#include "config.h"

#include "top.h"

#include "call.h"
#include "cg_census.h"
#include "cgpool.h"
#include "text.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define EX_FAIL 1
#define CALL_TIMEOUT_MS 5000 /* a daemon that hangs cannot freeze the view */
#define LINE_BYTES 1024	     /* one line, before it is cut to the width */
#define FALLBACK_COLS 80
#define FALLBACK_ROWS 24

/* the columns after KEY, and the least room left for the last one */
#define W_STATE 8
#define W_RUNS 5
#define W_MEM 8
#define W_LAST_MIN 12
#define W_KEY_MIN 3
#define W_KEY_UNCUT 40 /* where lines are not cut, a longer key shifts its own line */
#define W_FIXED (W_STATE + W_RUNS + W_MEM + W_LAST_MIN + 4 * 2)

#define ESC_ENTER "\033[?1049h\033[?25l" /* alternate screen, cursor hidden */
#define ESC_LEAVE "\033[?25h\033[?1049l"
#define ESC_CLEAR "\033[H\033[2J"
#define KEY_CTRL_C 3
static const char SORT_KEYS[] = "ksrm"; /* key, state, runs, memory */

struct top {
	struct top_opts o;
	bool live, keys; /* redrawn on a terminal; keys read from standard input */
	struct cgpool *c;  /* NULL while not connected */
	char why[320];	   /* what went wrong with the daemon ("" when nothing) */
	json_t *census;	   /* the last census, NULL without memory */
	json_t *daemon;	   /* Status: the daemon object, or NULL */
	json_t *slots;	   /* List: the slots, or NULL when not known */
	long long dying_first, dying_prev, dying_now;
	bool have_first, have_prev, have_now;
	char sort; /* one of SORT_KEYS */
	bool reverse;
	int rows, cols;
	long long last_ms; /* when the last refresh began */
	struct termios saved;
	bool raw, screen;
};

/* The lines of one frame: at most max_lines (0: any number), each cut to cols
 * bytes (0: not cut), every byte of them printable ASCII. */
struct frame {
	char *text;
	size_t len, cap;
	int lines, max_lines, cols;
	const char *eol; /* between lines */
	int err;
};

static volatile sig_atomic_t got_quit, got_winch;

/* ------------------------------------------------------------- helpers */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long int_field(json_t *o, const char *name, long long dflt)
{
	json_t *v = json_object_get(o, name);

	return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

static int write_all(const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int top_parse_delay(const char *s, unsigned *ms)
{
	unsigned long long v = 0;
	int frac = -1; /* digits after the point; -1: no point yet */

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (!isdigit((unsigned char)*p) || frac >= 3 || v > TOP_DELAY_MAX_MS)
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
		if (frac >= 0)
			frac++;
	}
	if (frac == 0)
		return -EINVAL; /* "2." */
	for (int i = frac < 0 ? 0 : frac; i < 3; i++)
		v *= 10;
	if (v < TOP_DELAY_MIN_MS || v > TOP_DELAY_MAX_MS)
		return -EINVAL;
	*ms = (unsigned)v;
	return 0;
}

/* + and -: a tenth of a second below 1 s, whole seconds above */
static unsigned delay_step(unsigned ms, int dir)
{
	if (dir > 0)
		ms = ms < 1000 ? ms + 100 : ms + 1000;
	else
		ms = ms > 1000 ? (ms - 1000 < 1000 ? 1000 : ms - 1000) : ms - 100;
	return ms < TOP_DELAY_MIN_MS ? TOP_DELAY_MIN_MS : ms > TOP_DELAY_MAX_MS ? TOP_DELAY_MAX_MS : ms;
}

/* -------------------------------------------------------------- frame */

static void frame_raw(struct frame *f, const char *s, size_t n)
{
	size_t need = f->len + n + 1;
	char *p;

	if (f->err)
		return;
	if (need > f->cap) {
		need = need < 2 * f->cap ? 2 * f->cap : need + 4096;
		if (!(p = realloc(f->text, need))) {
			f->err = -ENOMEM;
			return;
		}
		f->text = p;
		f->cap = need;
	}
	memcpy(f->text + f->len, s, n);
	f->len += n;
	f->text[f->len] = '\0';
}

static int frame_room(const struct frame *f)
{
	return f->max_lines ? f->max_lines - f->lines : INT_MAX;
}

/* one line, cut to the width; none beyond the height */
__attribute__((format(printf, 2, 3))) static void frame_add(struct frame *f, const char *fmt, ...)
{
	char line[LINE_BYTES];
	size_t n;
	va_list ap;

	if (frame_room(f) <= 0)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (f->cols > 0 && n > (size_t)f->cols)
		n = (size_t)f->cols;
	for (size_t i = 0; i < n; i++) /* nothing from the daemon or the kernel steers the terminal */
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			line[i] = '?';
	if (f->lines)
		frame_raw(f, f->eol, strlen(f->eol));
	frame_raw(f, line, n);
	f->lines++;
}

/* ----------------------------------------------------------- gathering */

static void take_census(struct top *t)
{
	json_decref(t->census);
	cg_census(CG_CENSUS_TOP_DEFAULT, &t->census);
	t->have_prev = t->have_now;
	t->dying_prev = t->dying_now;
	t->have_now = json_is_integer(json_object_get(t->census, "total"));
	t->dying_now = int_field(t->census, "total", 0);
	if (t->have_now && !t->have_first) {
		t->have_first = true;
		t->dying_first = t->dying_now;
	}
}

/* A failed call: a refusal is said in t->why; a transport error closes the
 * connection too (the next refresh connects again). */
static void call_failed(struct top *t, const char *method, int r)
{
	const char *msg = NULL;

	if (r == -EREMOTEIO && (!cgpool_last_error(t->c, NULL, &msg) || !msg))
		msg = "refused";
	snprintf(t->why, sizeof(t->why), "cgpoold at %s: %s: %s", t->o.socket, method, msg ? msg : strerror(-r));
	if (r != -EREMOTEIO) {
		cgpool_close(t->c);
		t->c = NULL;
	}
}

/* one reply of the streamed List: its slots appended to the array ud */
static int list_reply(const char *text, void *ud)
{
	json_t *all = ud, *reply = json_loads(text, 0, NULL), *slots = json_object_get(reply, "slots"), *s;
	size_t i;
	int r = json_is_array(slots) ? 0 : -EBADMSG;

	json_array_foreach(slots, i, s)
		if (json_is_object(s) && json_array_append(all, s) < 0)
			r = -ENOMEM;
	json_decref(reply);
	return r;
}

static void ask_daemon(struct top *t)
{
	json_t *reply = NULL, *slots = json_array();
	int r = call_json(t->c, "Status", "{}", &reply);

	if (r < 0) {
		call_failed(t, "Status", r);
	} else {
		t->daemon = json_incref(json_object_get(reply, "daemon"));
		json_decref(reply);
	}
	if (t->c && slots) {
		r = cgpool_call_more(t->c, CGPOOL_INTERFACE ".List", "{}", list_reply, slots);
		if (r < 0)
			call_failed(t, "List", r);
		else
			t->slots = json_incref(slots);
	}
	json_decref(slots);
}

static void refresh(struct top *t)
{
	int r;

	t->last_ms = now_ms();
	take_census(t);
	json_decref(t->daemon);
	json_decref(t->slots);
	t->daemon = t->slots = NULL;
	t->why[0] = '\0';
	if (!t->c && (r = cgpool_connect_timeout(t->o.socket, CALL_TIMEOUT_MS, &t->c)) < 0) {
		t->c = NULL;
		snprintf(t->why, sizeof(t->why), "daemon not reachable at %s: %s", t->o.socket, strerror(-r));
		return;
	}
	ask_daemon(t);
}

/* Status KEY: *out its most recent run that has ended (the first may go on
 * still), or null when none has */
static int last_run_of(struct top *t, const char *key, json_t **out)
{
	json_t *params = json_pack("{s:s}", "key", key), *reply = NULL, *run, *last = NULL;
	char *text = params ? json_dumps(params, JSON_COMPACT) : NULL;
	int r = text ? call_json(t->c, "Status", text, &reply) : -ENOMEM;
	size_t i;

	json_decref(params);
	free(text);
	if (r < 0)
		return r;
	json_array_foreach(json_object_get(reply, "recent_runs"), i, run)
		if (!last && json_is_integer(json_object_get(run, "ended")))
			last = run;
	*out = last ? json_incref(last) : json_null();
	json_decref(reply);
	return 0;
}

/* "last_run" of the first n slots, where not asked yet (List has no runs):
 * null without a key or a run, or when the key has gone since List */
static void fill_last_runs(struct top *t, size_t n)
{
	for (size_t i = 0; i < n && t->c; i++) {
		json_t *s = json_array_get(t->slots, i), *run = NULL;
		const char *key = text_str_field(s, "key", NULL);
		int r = 0;

		if (json_object_get(s, "last_run"))
			continue;
		if (key && int_field(s, "runs", 0) > 0)
			r = last_run_of(t, key, &run);
		if (r < 0 && r != -EREMOTEIO) {
			call_failed(t, "Status", r);
			break;
		}
		json_object_set_new(s, "last_run", run ? run : json_null());
	}
}

/* ------------------------------------------------------------- sorting */

static char sort_by; /* for the comparator: qsort passes no context */
static bool sort_reverse;

/* NULL after any string */
static int cmp_str(const char *a, const char *b)
{
	if (!a || !b)
		return !a - !b;
	return strcmp(a, b);
}

static const char *state_of(json_t *s)
{
	return text_str_field(s, "state", text_str_field(s, "job_state", NULL));
}

static int slot_cmp(const void *pa, const void *pb)
{
	json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
	const char *num = sort_by == 'm' ? "memory_current" : "runs";
	long long x = int_field(a, num, -1), y = int_field(b, num, -1);
	int c = (x < y) - (x > y); /* largest first */

	if (sort_by == 's')
		c = cmp_str(state_of(a), state_of(b));
	else if (sort_by == 'k')
		c = cmp_str(text_str_field(a, "key", NULL), text_str_field(b, "key", NULL));
	if (sort_reverse)
		c = -c;
	if (!c)
		c = cmp_str(text_str_field(a, "key", NULL), text_str_field(b, "key", NULL));
	return c ? c : cmp_str(text_str_field(a, "name", NULL), text_str_field(b, "name", NULL));
}

/* in place: each slot taken out and put back at its rank */
static void sort_slots(struct top *t)
{
	size_t n = json_array_size(t->slots);
	json_t **v = n > 1 ? malloc(n * sizeof(*v)) : NULL;

	if (!v)
		return; /* the order stays as it is */
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(t->slots, i));
	sort_by = t->sort;
	sort_reverse = t->reverse;
	qsort(v, n, sizeof(*v), slot_cmp);
	for (size_t i = 0; i < n; i++)
		json_array_set_new(t->slots, i, v[i]);
	free(v);
}

/* ---------------------------------------------------------- rendering */

static void daemon_line(struct top *t, struct frame *f)
{
	json_t *d = t->daemon, *n = json_object_get(d, "slots");

	if (t->why[0])
		frame_add(f, "%s", t->why);
	else if (!json_is_object(d))
		frame_add(f, "cgpoold at %s: no status", t->o.socket);
	else
		frame_add(f, "cgpoold %s: %lld of %lld slots: %lld running, %lld idle, %lld warm, %lld retiring",
			  text_str_field(d, "version", "?"), int_field(n, "total", 0), int_field(d, "max_slots", 0),
			  int_field(n, "running", 0), int_field(n, "idle", 0), int_field(n, "warm", 0),
			  int_field(n, "retiring", 0));
}

static void census_lines(struct top *t, struct frame *f)
{
	json_t *c = t->census, *top = json_array_get(json_object_get(c, "subtrees"), 0);
	char ids[48] = "";

	if (json_is_integer(json_object_get(c, "memcg_ids_left")))
		snprintf(ids, sizeof(ids), ", memcg IDs left: %lld", int_field(c, "memcg_ids_left", 0));
	if (t->have_now && t->live)
		frame_add(f, "dying memcgs: %lld (%+lld since last, %+lld since start)%s", t->dying_now,
			  t->have_prev ? t->dying_now - t->dying_prev : 0, t->dying_now - t->dying_first, ids);
	else if (t->have_now)
		frame_add(f, "dying memcgs: %lld%s", t->dying_now, ids);
	else /* cgpoolctl dying says why */
		frame_add(f, "dying memcgs: unknown%s", ids);
	if (top)
		frame_add(f, "most removed below: %lld in %s", int_field(top, "dying", 0), text_str_field(top, "path", "?"));
}

static void status_line(struct top *t, struct frame *f)
{
	static const char *const names[] = { "key", "state", "runs", "memory" }; /* by SORT_KEYS */
	const char *k = strchr(SORT_KEYS, t->sort), *name = k && *k ? names[k - SORT_KEYS] : "?";
	char clock[16] = "", delay[16];
	time_t now = time(NULL);
	struct tm tm;

	if (localtime_r(&now, &tm))
		strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	snprintf(delay, sizeof(delay), "%gs", t->o.delay_ms / 1000.0);
	if (t->live)
		frame_add(f, "%s every %s, sort: %s%s%s", clock, delay, name, t->reverse ? " reversed" : "",
			  t->keys ? "; keys: q quit, k s r m sort, + - delay" : "");
	else
		frame_add(f, "%s sort: %s%s", clock, name, t->reverse ? " reversed" : "");
}

/* the last run's outcome: exit N, SIGNAME, ended (its status is not known:
 * not a supervised job), exit ? (it ended while no daemon watched), with
 * its OOM kills; "-" no run has ended, "?" not known */
static void outcome_text(json_t *s, char *buf, size_t len)
{
	json_t *run = json_object_get(s, "last_run");
	long long oom = int_field(run, "oom_kills", 0);
	int n;

	if (!json_is_object(run)) {
		snprintf(buf, len, "%s", run ? "-" : "?");
		return;
	}
	if (json_is_string(json_object_get(run, "signal")))
		n = snprintf(buf, len, "SIG%s", text_str_field(run, "signal", "?"));
	else if (json_is_integer(json_object_get(run, "exit_status")))
		n = snprintf(buf, len, "exit %lld", int_field(run, "exit_status", 0));
	else if (json_is_string(json_object_get(run, "reason")))
		n = snprintf(buf, len, "exit ?");
	else
		n = snprintf(buf, len, "ended");
	if (oom > 0 && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", %lld oom", oom);
}

/* memory.current, else the last run's peak marked with "*" */
static void memory_text(json_t *s, char *buf, size_t len)
{
	json_t *peak = json_object_get(json_object_get(s, "last_run"), "memory_peak");

	if (json_is_integer(json_object_get(s, "memory_current"))) {
		text_size(int_field(s, "memory_current", 0), buf, len);
	} else if (json_is_integer(peak)) {
		text_size((long long)json_integer_value(peak), buf, len - 1);
		strcat(buf, "*");
	} else {
		snprintf(buf, len, "-");
	}
}

#define ROW_FORMAT "%-*s  %-*s  %*s  %*s  %s"

static void slot_row(struct frame *f, json_t *s, int wkey)
{
	const char *key = text_str_field(s, "key", "-"), *state = state_of(s);
	char cell[LINE_BYTES], runs[24], mem[32], last[64];

	if (f->cols > 0 && (int)strlen(key) > wkey) /* cut: "~" marks it (no key has one) */
		snprintf(cell, sizeof(cell), "%.*s~", wkey - 1, key);
	else
		snprintf(cell, sizeof(cell), "%s", key);
	snprintf(runs, sizeof(runs), "%lld", int_field(s, "runs", 0));
	memory_text(s, mem, sizeof(mem));
	outcome_text(s, last, sizeof(last));
	frame_add(f, ROW_FORMAT, wkey, cell, W_STATE, state ? state : "?", W_RUNS, runs, W_MEM, mem, last);
}

/* KEY as wide as the longest of the first n keys, within what the width leaves */
static int key_width(const struct frame *f, json_t *slots, size_t n)
{
	size_t w = W_KEY_MIN;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(text_str_field(json_array_get(slots, i), "key", "-"));

		w = len > w ? len : w;
	}
	if (f->cols == 0)
		return w < W_KEY_UNCUT ? (int)w : W_KEY_UNCUT;
	if ((int)w > f->cols - W_FIXED)
		w = f->cols - W_FIXED > W_KEY_MIN ? (size_t)(f->cols - W_FIXED) : W_KEY_MIN;
	return (int)w;
}

/* the slots that fit, the last line saying how many do not */
static void slot_table(struct top *t, struct frame *f)
{
	size_t n = json_array_size(t->slots), shown = n;
	int room, wkey;

	frame_add(f, "%s", "");
	room = frame_room(f) - 1; /* below the column names */
	if (room < 0)
		return;
	if ((size_t)room < n)
		shown = room > 0 ? (size_t)room - 1 : 0;
	fill_last_runs(t, shown);
	wkey = key_width(f, t->slots, shown);
	frame_add(f, ROW_FORMAT, wkey, "KEY", W_STATE, "STATE", W_RUNS, "RUNS", W_MEM, "MEMORY", "LAST");
	for (size_t i = 0; i < shown; i++)
		slot_row(f, json_array_get(t->slots, i), wkey);
	if (shown < n)
		frame_add(f, "... %zu more", n - shown);
	else if (n == 0)
		frame_add(f, "(no slots)");
}

static void render(struct top *t, struct frame *f)
{
	daemon_line(t, f);
	census_lines(t, f);
	status_line(t, f);
	if (!t->slots)
		return; /* the first line says why */
	sort_slots(t);
	slot_table(t, f);
}

/* ----------------------------------------------------------- one frame */

static int print_text(struct top *t)
{
	struct frame f = { .eol = "\n", .cols = isatty(STDOUT_FILENO) ? t->cols : 0 };

	render(t, &f);
	if (!f.err)
		printf("%s\n", f.text ? f.text : "");
	free(f.text);
	return f.err;
}

/* {"census": {...}, "daemon": {...}, "slots": [...], "error": "..."} */
static int print_json_frame(struct top *t)
{
	size_t flags = isatty(STDOUT_FILENO) ? JSON_INDENT(2) : JSON_COMPACT;
	json_t *out;

	sort_slots(t);
	fill_last_runs(t, json_array_size(t->slots));
	out = json_pack("{s:O?, s:O?, s:O?, s:s?}", "census", t->census, "daemon", t->daemon, "slots", t->slots,
			"error", t->why[0] ? t->why : NULL);
	if (!out)
		return -ENOMEM;
	json_dumpf(out, stdout, flags);
	putchar('\n');
	json_decref(out);
	return 0;
}

/* ------------------------------------------------------------ terminal */

static void term_size(struct top *t)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
		t->cols = ws.ws_col;
		t->rows = ws.ws_row;
	} else {
		t->cols = FALLBACK_COLS;
		t->rows = FALLBACK_ROWS;
	}
}

/* keys one at a time, unechoed; Ctrl-C is read as a key (ISIG off) */
static int term_enter(struct top *t)
{
	struct termios raw;

	if (t->keys && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
		raw = t->saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ISIG | IEXTEN);
		raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	t->keys = t->raw;
	t->screen = true;
	return write_all(ESC_ENTER, strlen(ESC_ENTER));
}

static void term_leave(struct top *t)
{
	if (t->screen)
		write_all(ESC_LEAVE, strlen(ESC_LEAVE));
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &t->saved);
	t->screen = t->raw = false;
}

static int draw(struct top *t)
{
	struct frame f = { .eol = "\r\n", .cols = t->cols, .max_lines = t->rows };
	int r;

	frame_raw(&f, ESC_CLEAR, strlen(ESC_CLEAR));
	render(t, &f);
	r = f.err ? f.err : write_all(f.text, f.len);
	free(f.text);
	return r;
}

/* ---------------------------------------------------------------- loop */

static const int handled_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH };

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		got_winch = 1;
	else
		got_quit = sig;
}

/* The signals are blocked but while waiting (ppoll with *wait_mask), so none
 * is lost between a check and the wait, and no call is interrupted. */
static int signals_setup(sigset_t *wait_mask)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block;

	sigemptyset(&block);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(handled_signals) / sizeof(handled_signals[0]); i++)
		sigaddset(&block, handled_signals[i]);
	if (sigprocmask(SIG_BLOCK, &block, wait_mask) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(handled_signals) / sizeof(handled_signals[0]); i++) {
		sigdelset(wait_mask, handled_signals[i]);
		if (sigaction(handled_signals[i], &sa, NULL) < 0)
			return -errno;
	}
	return 0;
}

enum action { ACT_NONE, ACT_DRAW, ACT_REFRESH, ACT_QUIT }; /* the larger wins */

static enum action on_key(struct top *t, unsigned char ch)
{
	if (ch == 'q' || ch == 'Q' || ch == KEY_CTRL_C)
		return ACT_QUIT;
	if (ch && strchr(SORT_KEYS, ch)) { /* the same key again: the other way round */
		t->reverse = t->sort == (char)ch ? !t->reverse : false;
		t->sort = (char)ch;
		return ACT_DRAW;
	}
	if (ch == '+' || ch == '-') {
		t->o.delay_ms = delay_step(t->o.delay_ms, ch == '+' ? 1 : -1);
		return ACT_DRAW;
	}
	return ch == ' ' ? ACT_REFRESH : ACT_NONE;
}

static enum action read_keys(struct top *t)
{
	unsigned char buf[64];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	enum action a = ACT_NONE, k;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return ACT_NONE;
	if (n <= 0)
		return ACT_QUIT; /* the terminal is gone */
	for (ssize_t i = 0; i < n; i++)
		if ((k = on_key(t, buf[i])) > a)
			a = k;
	return a;
}

/* until q or a signal; 0, or -errno when the terminal cannot be written */
static int top_loop(struct top *t, const sigset_t *wait_mask)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	enum action a = ACT_REFRESH;
	long long left;
	struct timespec ts;
	int n, r;

	while (!got_quit && a != ACT_QUIT) {
		if (a == ACT_REFRESH || now_ms() - t->last_ms >= t->o.delay_ms) {
			refresh(t);
			a = ACT_DRAW;
		}
		if (got_winch) {
			got_winch = 0;
			term_size(t);
			a = ACT_DRAW;
		}
		if (a == ACT_DRAW && (r = draw(t)) < 0)
			return r;
		left = t->last_ms + t->o.delay_ms - now_ms();
		ts.tv_sec = left > 0 ? left / 1000 : 0;
		ts.tv_nsec = left > 0 ? left % 1000 * 1000000 : 0;
		n = ppoll(&pfd, t->keys ? 1 : 0, &ts, wait_mask);
		if (n < 0 && errno != EINTR)
			return -errno;
		a = n > 0 && pfd.revents ? read_keys(t) : ACT_NONE;
	}
	return 0;
}

int top_run(const struct top_opts *o)
{
	struct top t = { .o = *o, .sort = 'm' };
	sigset_t wait_mask;
	int r;

	if (!t.o.delay_ms)
		t.o.delay_ms = TOP_DELAY_DEFAULT_MS;
	t.live = !o->once && !o->json && isatty(STDOUT_FILENO);
	t.keys = t.live && isatty(STDIN_FILENO);
	term_size(&t);
	if (!t.live) {
		refresh(&t);
		r = o->json ? print_json_frame(&t) : print_text(&t);
	} else if ((r = signals_setup(&wait_mask)) == 0 && (r = term_enter(&t)) == 0) {
		r = top_loop(&t, &wait_mask);
	}
	term_leave(&t);
	cgpool_close(t.c);
	json_decref(t.census);
	json_decref(t.daemon);
	json_decref(t.slots);
	if (r < 0) {
		fprintf(stderr, "cgpoolctl: top: %s\n", strerror(-r));
		return EX_FAIL;
	}
	/* q and Ctrl-C end it well; SIGTERM and SIGHUP as a shell reports them */
	return got_quit && got_quit != SIGINT ? 128 + got_quit : 0;
}
