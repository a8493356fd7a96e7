/* varlink.h - Varlink server on a Unix stream socket, driven by libev.
 *
 * Messages are NUL-terminated JSON objects (https://varlink.org). A request is
 * {"method": "iface.Method", "parameters": {...}, "oneway": bool, "more": bool};
 * a reply is {"parameters": {...}} or {"error": "iface.Error", "parameters": {...}}.
 * One call per connection is in flight at a time: while a call waits for its
 * reply the connection is not read, so replies keep request order.
 *
 * A call with "more" may be answered by several replies: vl_call_continue()
 * for each but the last, which carries "continues": true, then vl_call_reply()
 * or vl_call_error() as for any call. A method that streams many replies
 * produces them in batches, paced by the client (back-pressure):
 *
 *	static void batch(struct vl_call *call, void *ud)
 *	{
 *		if (!vl_call_connected(call))        // the client went away
 *			return (void)vl_call_reply(call, NULL);  // dropped; frees the call
 *		while (more items && a batch is not done && vl_call_room(call))
 *			vl_call_continue(call, item);
 *		if (no more items)
 *			vl_call_reply(call, last);
 *		else if (vl_call_on_drained(call, batch, ud) < 0)
 *			vl_call_reply(call, NULL);
 *	}
 *
 * The hook is called from the loop (never from inside vl_call_on_drained())
 * once the connection's unsent output is at most VL_OUT_LOW bytes and its
 * socket is writable, at most once per loop wakeup of the connection. If the
 * connection goes away meanwhile (client gone, write error, vl_server_free())
 * the hook is called at once with vl_call_connected() false: it must then
 * finish the call (its reply is dropped), which frees it. A call is never
 * freed behind its handler's back: a handler owns the call until it finishes
 * it. */
#ifndef CGPOOL_VARLINK_H
#define CGPOOL_VARLINK_H

#include <ev.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#define VL_MAX_MESSAGE (64 * 1024) /* bytes in one message, NUL included */
#define VL_MAX_REPLY (1024 * 1024)  /* bytes in one reply, NUL included (libcgpool's limit) */
#define VL_MAX_CLIENTS 128
#define VL_OUT_LOW (16 * 1024)     /* drained hooks run once unsent output is at most this */
#define VL_OUT_HIGH (64 * 1024)    /* no continuing reply is queued above this */

struct vl_server;
struct vl_call;

/* A method handler. It must eventually call vl_call_reply() or vl_call_error()
 * exactly once, now or later from the loop; that frees the call. params is
 * borrowed (valid until then). If the client disconnects first the reply is
 * dropped silently. */
typedef void (*vl_method_fn)(struct vl_call *call, json_t *params, void *ud);
/* A drained hook: see above. */
typedef void (*vl_drained_fn)(struct vl_call *call, void *ud);

/* ---- decoding, separate from the transport so it can be unit tested */
struct vl_request {
	char method[256]; /* fully qualified: "io.cgpool.Manager.Attach" */
	json_t *params;   /* object, never NULL (empty object when absent); caller frees */
	bool oneway;
	bool more;
	bool upgrade; /* not supported: answered with InvalidParameter "upgrade" */
};
/* Decode one message (without its NUL). Returns 0, or -EINVAL with *why set to
 * a static description (not JSON, not an object, method missing or not a
 * string, parameters not an object, unknown top-level field type).
 * Strings in params may hold "\u0000": a handler that uses a string as a C
 * string must check json_string_length() against strlen(). */
int vl_request_decode(const char *msg, size_t len, struct vl_request *out, const char **why);
/* Encode a reply (params stolen; may be NULL) or an error reply into a newly
 * allocated NUL-terminated message. *len includes the NUL. */
char *vl_reply_encode(const char *error, json_t *params, size_t *len);

/* ---- the server */
struct vl_server_info {
	const char *vendor, *product, *version, *url;
};
/* listen_fd: a bound, listening AF_UNIX stream socket (set non-blocking here).
 * On success the server owns it (vl_server_free() closes it; the socket file
 * is the caller's to unlink); on failure it stays the caller's. */
int vl_server_new(struct ev_loop *loop, int listen_fd, const struct vl_server_info *info,
		  struct vl_server **out);
/* Stops listening, closes every connection, drops pending calls: a call a
 * handler still holds stays valid, vl_call_connected() is false for it and
 * its reply frees it. Calls waiting for a drained hook get it now, so free
 * the server before what those hooks use. NULL ok. */
void vl_server_free(struct vl_server *s);
/* Register an interface: its name and its Varlink IDL text (returned by
 * org.varlink.service.GetInterfaceDescription and listed by GetInfo). */
int vl_server_add_interface(struct vl_server *s, const char *name, const char *description);
/* Register a method by fully qualified name. */
int vl_server_add_method(struct vl_server *s, const char *method, vl_method_fn fn, void *ud);

/* Who may connect, and for how long (struct conf's [daemon] keys). The
 * defaults: root only privileged, VL_MAX_CLIENTS in all and per user, no idle
 * timeout. Applies to connections accepted from now on; the idle timeout to
 * the open ones as their timers come round. */
struct vl_limits {
	gid_t privileged_gid; /* socket_group: its members are privileged like root; (gid_t)-1: none */
	unsigned max_conns;   /* in all; some of them (auth_conns_reserved()) only for privileged peers */
	unsigned max_per_user; /* per unprivileged uid */
	double idle_timeout;  /* s without a call in flight or a reply queued; 0: never */
};
void vl_server_set_limits(struct vl_server *s, const struct vl_limits *l);

/* Bind a listening socket at path (removing a stale socket file first, creating
 * the directory), chmod it to mode and chown it to root:gid (gid -1: leave).
 * -EEXIST if path exists and is not a socket, -EADDRINUSE if a server is
 * listening on it. The fd is non-blocking and close-on-exec. */
int vl_listen(const char *path, mode_t mode, gid_t gid, int *out_fd);

/* ---- answering a call (both free the call, even when they fail: -EMSGSIZE
 * for a reply over VL_MAX_REPLY, -EINVAL for params that are not an object;
 * the connection is closed then) */
int vl_call_reply(struct vl_call *call, json_t *params /* stolen, NULL = {} */);
int vl_call_error(struct vl_call *call, const char *error, json_t *params /* stolen, NULL = {} */);
/* The caller asked for several replies ("more") and wants replies at all
 * (not "oneway": oneway wins, nothing is sent). */
bool vl_call_more(const struct vl_call *call);
/* Queue one reply with "continues": true; params stolen (NULL = {}). The call
 * stays pending. Errors (the call stays pending, its handler must still
 * finish it): -EINVAL vl_call_more() is false, nothing queued; -ENOTCONN the
 * client is gone; -ENOBUFS the output queue is full (vl_call_room() was
 * false), nothing queued; -EMSGSIZE over VL_MAX_REPLY or -EINVAL params not an
 * object: the connection is closed once the queued replies are out. */
int vl_call_continue(struct vl_call *call, json_t *params);
/* The output queue takes another continuing reply: connected and less than
 * VL_OUT_HIGH bytes unsent. */
bool vl_call_room(const struct vl_call *call);
/* Bytes queued on the call's connection and not written yet (0 when gone). */
size_t vl_call_queued(const struct vl_call *call);
/* Have fn(call, ud) called once from the loop when the output has drained (see
 * the top of this file); replaces an earlier hook. -ENOTCONN when the
 * connection is already gone: nothing is registered, finish the call. */
int vl_call_on_drained(struct vl_call *call, vl_drained_fn fn, void *ud);
/* Credentials of the peer (SO_PEERCRED, taken at accept). */
const struct ucred *vl_call_peer(const struct vl_call *call);
/* The peer is root or in the privileged group (judged at accept, from
 * SO_PEERCRED and SO_PEERGROUPS). */
bool vl_call_privileged(const struct vl_call *call);
/* The process that connected still lives (its pidfd, taken at accept; where
 * the kernel has no pidfds, its pid). false once the connection is gone. */
bool vl_call_peer_alive(const struct vl_call *call);
/* What the kernel offers to know a peer by: SO_PEERPIDFD (6.5+), and
 * pidfd_open() (5.3+); found by trying once. */
void vl_kernel_peer(bool *so_peerpidfd, bool *pidfd_open);
/* 0 when the process of pidfd (whose pid is pid) has uid as its real uid and
 * still runs; -EPERM for another uid, -ESRCH when it is gone. */
int vl_pid_of_uid(int pidfd, pid_t pid, uid_t uid);
const char *vl_call_method(const struct vl_call *call);
/* false once the client has gone away or the connection is being closed
 * (the reply will be dropped) */
bool vl_call_connected(const struct vl_call *call);

/* standard errors */
#define VL_ERR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define VL_ERR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define VL_ERR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define VL_ERR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define VL_ERR_EXPECTED_MORE "org.varlink.service.ExpectedMore"

#endif
