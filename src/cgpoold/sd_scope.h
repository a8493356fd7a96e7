/* sd_scope.h - under systemd on cgroup v2, the slots in a scope unit of
 * their own, so that the daemon's service can be restarted while jobs run.
 *
 * The no-internal-processes rule forbids processes in a cgroup whose
 * children have the memory controller: a service cgroup holding the slots
 * could not take the daemon's next main process (systemd 252 fails the start
 * with 219/CGROUP, EBUSY). The slots live instead in <service>-slots.scope,
 * beside the service in its slice, made through systemd's Manager API
 * (StartTransientUnit, Delegate=yes). A keeper process, asleep in the
 * scope's leaf "keeper", keeps the scope active while no job runs; the
 * service cgroup holds the daemon alone. */
#ifndef CGPOOL_SD_SCOPE_H
#define CGPOOL_SD_SCOPE_H

#include <stddef.h>

#define SD_SCOPE_MNT "/sys/fs/cgroup" /* the cgroup2 mount of a pure v2 system */

/* With root = auto: the pool root to use (a cgroup path such as
 * "/system.slice/cgpoold-slots.scope"), the scope made or found and its
 * keeper in place. -ENOENT when it does not apply (not under systemd, not
 * a .service, not pure cgroup v2): root auto then means the daemon's own
 * cgroup. Other errors with err set. cgroup_file and mnt: /proc/self/cgroup
 * and the cgroup2 mount (tests give others). */
int sd_scope_root(const char *cgroup_file, const char *mnt, char *root, size_t len, char *err, size_t errlen);

/* While the daemon runs (a timer): the keeper of the scope at root (what
 * sd_scope_root gave) is there, or a new one is put in its place. 0, 1 when
 * a new one was started, -ENOENT when the scope's cgroup is gone (systemd
 * stopped the scope: it was empty), else -errno; err says what failed. */
int sd_scope_check(const char *mnt, const char *root, char *err, size_t errlen);

/* A keeper killed while the daemon runs would let systemd stop the scope,
 * and take the slots' directories with it, once its jobs end: this timer
 * (every SD_SCOPE_KEEPER_CHECK_S) puts a new one in its place, and logs
 * once, until it is back, a scope systemd stopped. -ENOMEM; NULL ok to free. */
#define SD_SCOPE_KEEPER_CHECK_S 5.0
struct sd_scope_keeper;
struct ev_loop;
int sd_scope_keeper_start(struct ev_loop *loop, const char *mnt, const char *root, struct sd_scope_keeper **out);
void sd_scope_keeper_free(struct sd_scope_keeper *k);

/* The pieces, for tests: from "0::/system.slice/cgpoold.service\n", the
 * scope's cgroup path, unit name and slice unit name. -ENOENT when not a
 * .service under a slice of a pure v2 layout. */
int sd_scope_names(const char *cgroup_text, char *path, size_t plen, char *unit, size_t ulen, char *slice,
		   size_t slen);

#endif
