/* cgpool.h - client library for cgpoold, the cgroup pool daemon.
 *
 * Talks Varlink (io.cgpool.Manager) over the daemon's Unix socket. Every
 * function returns 0 or a negative errno; on a Varlink error reply it returns
 * -EREMOTEIO and cgpool_last_error() gives the error name and its parameters. */
#ifndef CGPOOL_H
#define CGPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CGPOOL_DEFAULT_SOCKET "/run/cgpool/cgpool.sock"
#define CGPOOL_INTERFACE "io.cgpool.Manager"
/* Processes one Attach may move, at most: the daemon refuses more
 * (InvalidParameter "pids"), and the Slurm plug-in fails a step with more
 * local tasks on a node before any of them runs. 4096 pids of up to 7 digits
 * (pid_max is at most 2^22) fill about half of a request (64 KiB). */
#define CGPOOL_MAX_PIDS 4096

struct cgpool;

/* path NULL: $CGPOOL_SOCKET, else CGPOOL_DEFAULT_SOCKET.
 * -ENOENT/-ECONNREFUSED/-EACCES when the daemon is not reachable. */
int cgpool_connect(const char *path, struct cgpool **out);
void cgpool_close(struct cgpool *c);
/* cgpool_connect that waits at most timeout_ms for the daemon to accept, and
 * gives every call on the connection the same bound (cgpool_set_timeout). */
int cgpool_connect_timeout(const char *path, unsigned timeout_ms, struct cgpool **out);
/* A call that waits longer than timeout_ms for sending or for a reply fails
 * with -ETIMEDOUT and closes the connection; 0: wait for ever (the default). */
int cgpool_set_timeout(struct cgpool *c, unsigned timeout_ms);
/* the socket path this connection uses */
const char *cgpool_socket_path(const struct cgpool *c);

/* Generic call: method is fully qualified ("io.cgpool.Manager.List"),
 * params_json a JSON object text or NULL. On success *reply_json is the
 * reply's "parameters" object as JSON text (free() it; reply_json may be NULL).
 * Requests over 64 KiB are refused here (-EMSGSIZE), replies over 1 MiB too;
 * after a transport error (-EPIPE, -ECONNRESET, -EMSGSIZE on a reply, ...) the
 * connection is closed and further calls return -ENOTCONN. */
int cgpool_call(struct cgpool *c, const char *method, const char *params_json, char **reply_json);

/* Streaming call: the request goes out with "more": true and fn is called with
 * each reply's "parameters" object as JSON text (valid during the call only),
 * as it arrives, the last one included; returns 0 after the last reply (the
 * one without "continues"). A server that does not stream answers once: fn is
 * called once. An error reply ends the call: -EREMOTEIO, as for cgpool_call(),
 * possibly after fn has seen earlier replies. A non-zero return of fn stops
 * the call and is returned (use a negative errno); when more replies were due
 * the connection is closed, as after a transport error. Each reply has the
 * limits of cgpool_call()'s. */
int cgpool_call_more(struct cgpool *c, const char *method, const char *params_json,
		     int (*fn)(const char *reply_json, void *ud), void *ud);

/* After -EREMOTEIO: the Varlink error name ("io.cgpool.Manager.NoSuchKey")
 * and its parameters as JSON text; a one-line human message in *message.
 * Pointers stay valid until the next call on c. */
const char *cgpool_last_error(const struct cgpool *c, const char **params_json, const char **message);

/* Bind key to a slot and move the given processes into it (1 to
 * CGPOOL_MAX_PIDS of them: -E2BIG beyond, nothing sent). class may be NULL.
 * *slot_json (may be NULL) receives the Slot object. */
int cgpool_attach(struct cgpool *c, const char *key, const pid_t *pids, size_t npids, const char *class_name,
		  char **slot_json);
/* One resource setting for a run: name a resource key ("memory.max",
 * "memory.swap.max", "pids.max", ...), value as in cgpool.conf ("64M", "max"). */
struct cgpool_limit {
	const char *name;
	const char *value;
};
/* cgpool_attach with limits for this run (root and socket_group only):
 * written after the class's and the key's own settings, before the processes
 * move; the key's next run starts without them. */
int cgpool_attach_limits(struct cgpool *c, const char *key, const pid_t *pids, size_t npids, const char *class_name,
			 const struct cgpool_limit *limits, size_t nlimits, char **slot_json);
/* Whose job a run is (root and socket_group only). id: the key is this
 * job's alone while the run lives or a holder is alive (another job's Attach
 * is refused: io.cgpool.Manager.KeyBusy). hold > 0: a process that holds the
 * job on this node; once every holder has exited, the daemon kills what is
 * left in the slot and, with release, releases the key. */
struct cgpool_job {
	const char *id;
	pid_t hold;
	bool release;
};
/* cgpool_attach_limits for a job (job may be NULL: none). */
int cgpool_attach_job(struct cgpool *c, const char *key, const pid_t *pids, size_t npids, const char *class_name,
		      const struct cgpool_limit *limits, size_t nlimits, const struct cgpool_job *job,
		      char **slot_json);
/* Attach the calling process to key's slot, close the connection, execvp(argv[0], argv).
 * Returns only on failure (the connection is closed then too; c itself stays
 * valid for cgpool_last_error() and must still be freed with cgpool_close()).
 * -EREMOTEIO: the daemon refused the attach; other errors may come from the
 * call or from execvp, so a caller that must tell them apart (cgpoolctl does)
 * calls cgpool_attach(), cgpool_close() and execvp() itself. */
int cgpool_exec(struct cgpool *c, const char *key, const char *class_name, char *const argv[]);
int cgpool_release(struct cgpool *c, const char *key, char **slot_json);
/* Freeze (or thaw) every process in the slots whose run belongs to job
 * ("slurm:4711" names the runs of "slurm:4711:<uid>"); *nslots (may be
 * NULL): how many slots, 0 when the job has none here. */
int cgpool_freeze_job(struct cgpool *c, const char *job, bool frozen, size_t *nslots);
/* Set one limit (a resource key and its value, as Attach's limits) on the
 * runs of the slots whose run belongs to job, named as for
 * cgpool_freeze_job; *nslots (may be NULL) as there. */
int cgpool_limit_job(struct cgpool *c, const char *job, const char *name, const char *value, size_t *nslots);

#ifdef __cplusplus
}
#endif
#endif
