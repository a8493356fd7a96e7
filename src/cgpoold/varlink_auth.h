/* varlink_auth.h - the rules for callers that are neither root nor in socket_group:
 * which keys are theirs, how many slots and connections they may hold. Pure
 * functions of their arguments, so they can be tested alone; varlink.c judges
 * the credentials, manager.c and pool.c apply the rules. */
#ifndef CGPOOL_VARLINK_AUTH_H
#define CGPOOL_VARLINK_AUTH_H

#include <stdbool.h>
#include <sys/types.h>

#define AUTH_KEY_PATTERN_MAX 512 /* bytes of a user_keys pattern once %u and %n are filled in */

/* Whether key is in uid's namespace: pattern (user_keys) with %u replaced by
 * the uid in decimal, %n by name (NULL when the uid has no passwd entry: a
 * pattern with %n then matches nothing) and %% by %, matched with fnmatch(3).
 * An empty pattern matches nothing. */
bool auth_key_in_namespace(const char *pattern, uid_t uid, const char *name, const char *key);

/* auth_key_in_namespace() with uid's name from the passwd database, looked
 * up only when the pattern has %n */
bool auth_key_of_uid(const char *pattern, uid_t uid, const char *key);

/* max_slots_per_user in effect: configured, or with CONF_AUTO max_slots/32,
 * at least 1 */
unsigned auth_slots_per_user(unsigned max_slots, unsigned configured);
/* slots unprivileged binds never take: max_slots/8, at least 1 */
unsigned auth_slots_reserved(unsigned max_slots);
/* May an unprivileged uid bind one more key? user_bound: slots bound to keys
 * it owns; in_use: slots not warm (bound, or being retired). 0, or -ENOSPC
 * with *reason saying which limit ("max_slots_per_user" or "reserved"). */
int auth_bind_check(unsigned max_slots, unsigned per_user_conf, unsigned user_bound, unsigned in_use,
		    const char **reason);

/* connections kept for root and socket_group: max_connections/16, at least 1 */
unsigned auth_conns_reserved(unsigned max_connections);
/* May a new connection be accepted, with total connections open, of_uid of
 * them from the same (unprivileged) uid? Privileged callers may use every
 * place; the others neither the reserved ones nor more than per_user. */
bool auth_conn_allowed(bool privileged, unsigned total, unsigned of_uid, unsigned max, unsigned per_user);

#endif
