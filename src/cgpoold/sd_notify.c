/* sd_notify.c - telling the service manager how the daemon is (sd_notify(3)) */
#include "config.h"

#include "sd_notify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "pool.h"
#include "util.h"

struct status {
	unsigned counts[SLOT_NSTATES];
	enum lru_reparenting lru;
	bool probing;
};

struct notify {
	struct ev_loop *loop;
	struct pool *pool;
	struct retire *retire;
	ev_timer watchdog;
	ev_prepare prepare; /* the loop is about to wait: has the status changed? */
	ev_timer status_later; /* wakes the loop when a changed status had to wait */
	struct status sent;
	bool have_sent;
	ev_tstamp sent_at;
};

int notify_status_text(const unsigned counts[SLOT_NSTATES], enum lru_reparenting lru, bool probing, char *buf,
		       size_t len)
{
	unsigned total = 0;
	int n;

	for (int i = 0; i < SLOT_NSTATES; i++)
		total += counts[i];
	n = snprintf(buf, len, "%u slots: %u warm, %u running, %u idle, %u retiring; lru_reparenting %s", total,
		     counts[SLOT_WARM], counts[SLOT_RUNNING], counts[SLOT_IDLE], counts[SLOT_RETIRING],
		     lru == LRU_UNKNOWN && probing ? "probing" : lru_reparenting_name(lru));
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return n;
}

static void status_now(const struct notify *n, struct status *st)
{
	memset(st, 0, sizeof(*st));
	pool_counts(n->pool, st->counts);
	st->lru = n->retire ? retire_lru_reparenting(n->retire, NULL) : LRU_UNKNOWN;
	st->probing = n->retire && retire_probing(n->retire);
}

/* prefix (may be "") and the STATUS= line, in one datagram */
static void send_status(struct notify *n, const char *prefix)
{
	struct status st;
	char text[256];
	int r;

	status_now(n, &st);
	if (notify_status_text(st.counts, st.lru, st.probing, text, sizeof(text)) < 0)
		return;
	r = sd_notifyf(0, "%sSTATUS=%s", prefix, text);
	if (r < 0)
		log_debug("sd_notify: %s", strerror(-r));
	n->sent = st;
	n->have_sent = true;
	n->sent_at = ev_now(n->loop);
	ev_timer_stop(n->loop, &n->status_later);
}

static void on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct notify *n = w->data;
	struct status st;
	ev_tstamp wait;

	if (ev_is_active(&n->status_later))
		return;
	status_now(n, &st);
	if (n->have_sent && memcmp(&st, &n->sent, sizeof(st)) == 0)
		return;
	wait = n->sent_at + NOTIFY_STATUS_INTERVAL - ev_now(loop);
	if (!n->have_sent || wait <= 0) {
		send_status(n, "");
		return;
	}
	ev_timer_set(&n->status_later, wait, 0.);
	ev_timer_start(loop, &n->status_later);
}

/* nothing to do: the prepare watcher sends it before the loop waits again */
static void on_status_later(struct ev_loop *loop, ev_timer *w, int revents)
{
}

static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
	sd_notify(0, "WATCHDOG=1");
}

int notify_new(struct ev_loop *loop, struct pool *pool, struct retire *retire, struct notify **out)
{
	const char *sock = getenv("NOTIFY_SOCKET");
	struct notify *n = calloc(1, sizeof(*n));
	uint64_t usec;

	if (!n)
		return -ENOMEM;
	n->loop = loop;
	n->pool = pool;
	n->retire = retire;
	ev_prepare_init(&n->prepare, on_prepare);
	n->prepare.data = n;
	ev_timer_init(&n->status_later, on_status_later, 0., 0.);
	ev_timer_init(&n->watchdog, on_watchdog, 0., 0.);
	if (sock && *sock) {
		/* WATCHDOG_USEC, honoured only when WATCHDOG_PID is unset or ours */
		if (sd_watchdog_enabled(0, &usec) > 0 && usec >= 2) {
			ev_timer_set(&n->watchdog, usec / 2e6, usec / 2e6);
			ev_timer_start(loop, &n->watchdog);
			log_info("watchdog: WATCHDOG=1 every %.3f s", usec / 2e6);
		}
	}
	*out = n;
	return 0;
}

void notify_free(struct notify *n)
{
	if (!n)
		return;
	ev_timer_stop(n->loop, &n->watchdog);
	ev_timer_stop(n->loop, &n->status_later);
	ev_prepare_stop(n->loop, &n->prepare);
	free(n);
}

void notify_ready(struct notify *n)
{
	const char *sock = getenv("NOTIFY_SOCKET");

	if (!n || !sock || !*sock)
		return;
	send_status(n, "READY=1\n");
	if (!ev_is_active(&n->prepare))
		ev_prepare_start(n->loop, &n->prepare);
}

void notify_reloading(struct notify *n)
{
	int r;

	if (!n)
		return;
	r = sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%lld", (long long)now_mono_us());
	if (r < 0)
		log_debug("sd_notify: %s", strerror(-r));
}

void notify_stopping(struct notify *n)
{
	if (n)
		sd_notify(0, "STOPPING=1");
}
