/* varlink_internal.h - private to the Varlink server (varlink.c, the wire
 * format in varlink_codec.c, accepting and judging peers in
 * varlink_accept.c). */
#ifndef CGPOOL_VARLINK_INTERNAL_H
#define CGPOOL_VARLINK_INTERNAL_H

#include "varlink.h"

#include <stdbool.h>
#include <sys/socket.h>

#define VL_MAX_INTERFACES 16
#define VL_MAX_METHODS 128
#define VL_ACCEPT_BATCH 16      /* accepts per wakeup */
#define VL_ACCEPT_PAUSE 1.0     /* seconds to stop accepting after EMFILE and co */
#define VL_CALLS_PER_PASS 4     /* requests dispatched per connection per loop pass */
#define VL_GROUPS_MAX 65536     /* supplementary groups of a peer, at most (NGROUPS_MAX) */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif
#define VL_SERVICE "org.varlink.service"

struct vl_method {
	char *name;
	vl_method_fn fn;
	void *ud;
};

struct vl_iface {
	char *name;
	char *description;
};

struct vl_conn {
	struct vl_server *srv;
	struct vl_conn *prev, *next;
	int fd;
	ev_io rw, ww;
	ev_timer idle_w;
	struct ucred cred;
	bool privileged; /* judged once, at accept */
	int pidfd;       /* the peer process as it was at connect; -1: none */
	ev_tstamp active; /* last request read, reply queued or bytes sent */
	unsigned pass_calls; /* requests dispatched in loop pass pass_iter */
	unsigned pass_iter;
	bool deferred;       /* complete requests wait for the next pass */
	char *out; /* encoded replies, out[out_off..out_len) not sent yet */
	size_t out_len, out_off, out_cap;
	struct vl_call *pending;
	bool busy, eof, closing, dead;
	size_t in_len;
	char in[]; /* VL_MAX_MESSAGE bytes */
};

struct vl_call {
	struct vl_conn *conn; /* NULL once the connection is gone */
	char method[256];
	json_t *params;
	struct ucred cred;
	bool privileged;
	bool oneway, more;
	vl_drained_fn drained; /* one-shot resume hook */
	void *drained_ud;
};

struct vl_server {
	struct ev_loop *loop;
	int listen_fd;
	ev_io accept_w;
	ev_timer pause_w;
	char *info[4]; /* vendor, product, version, url */
	struct vl_iface ifaces[VL_MAX_INTERFACES];
	size_t n_ifaces;
	struct vl_method methods[VL_MAX_METHODS];
	size_t n_methods;
	struct vl_conn *conns;
	size_t n_conns;
	struct vl_limits limits;
	bool full_logged;
};

/* varlink_codec.c: one encoded reply, NUL-terminated, malloc'd */
/* "interface.Method": reverse-domain words, then a word; [A-Za-z0-9_-.] */
bool vl_method_name_ok(const char *m);
/* a JSON string without NUL bytes, else NULL */
const char *vl_c_string(json_t *v);
char *vl_encode(const char *error, json_t *params, bool continues, size_t *len);

/* varlink.c: a connection for an accepted fd, judged first (vl_conn_judge);
 * -EUSERS over a connection limit, -ESRCH the peer is gone */
int vl_conn_new(struct vl_server *s, int fd);

/* varlink_accept.c */
int vl_conn_judge(struct vl_server *s, struct vl_conn *c);
void vl_accept_cb(struct ev_loop *loop, ev_io *w, int revents);
void vl_pause_cb(struct ev_loop *loop, ev_timer *w, int revents);

#endif
