/* varlink_auth.c - the rules for callers that are neither root nor in socket_group */
#include "config.h"

#include "varlink_auth.h"

#include <errno.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"

/* append s to buf at *off, with glob characters escaped; false when full */
static bool put(char *buf, size_t *off, const char *s, bool escape)
{
	for (; *s; s++) {
		if (escape && strchr("*?[]\\", *s)) {
			if (*off + 1 >= AUTH_KEY_PATTERN_MAX)
				return false;
			buf[(*off)++] = '\\';
		}
		if (*off + 1 >= AUTH_KEY_PATTERN_MAX)
			return false;
		buf[(*off)++] = *s;
	}
	buf[*off] = '\0';
	return true;
}

bool auth_key_in_namespace(const char *pattern, uid_t uid, const char *name, const char *key)
{
	char glob[AUTH_KEY_PATTERN_MAX], num[16], ch[2] = "";
	size_t off = 0;
	bool ok = true;

	if (!pattern || !*pattern || !key)
		return false;
	glob[0] = '\0';
	snprintf(num, sizeof(num), "%u", (unsigned)uid);
	for (const char *p = pattern; *p && ok; p++) {
		if (*p != '%') {
			ch[0] = *p;
			ok = put(glob, &off, ch, false);
		} else if (p[1] == 'u') {
			ok = put(glob, &off, num, false), p++;
		} else if (p[1] == 'n') {
			ok = name && *name && put(glob, &off, name, true), p++;
		} else if (p[1] == '%') {
			ok = put(glob, &off, "%", false), p++;
		} else {
			ok = false; /* the parser refuses these */
		}
	}
	return ok && fnmatch(glob, key, 0) == 0;
}

bool auth_key_of_uid(const char *pattern, uid_t uid, const char *key)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (pattern && strstr(pattern, "%n") && getpwuid_r(uid, &pw, buf, sizeof(buf), &res) != 0)
		res = NULL;
	return auth_key_in_namespace(pattern, uid, res ? res->pw_name : NULL, key);
}

unsigned auth_slots_per_user(unsigned max_slots, unsigned configured)
{
	if (configured != CONF_AUTO)
		return configured;
	return max_slots / 32 ? max_slots / 32 : 1;
}

unsigned auth_slots_reserved(unsigned max_slots)
{
	return max_slots / 8 ? max_slots / 8 : 1;
}

int auth_bind_check(unsigned max_slots, unsigned per_user_conf, unsigned user_bound, unsigned in_use,
		    const char **reason)
{
	unsigned reserved = auth_slots_reserved(max_slots);

	if (user_bound >= auth_slots_per_user(max_slots, per_user_conf)) {
		*reason = "max_slots_per_user";
		return -ENOSPC;
	}
	if (reserved >= max_slots || in_use >= max_slots - reserved) {
		*reason = "reserved";
		return -ENOSPC;
	}
	return 0;
}

unsigned auth_conns_reserved(unsigned max_connections)
{
	return max_connections / 16 ? max_connections / 16 : 1;
}

bool auth_conn_allowed(bool privileged, unsigned total, unsigned of_uid, unsigned max, unsigned per_user)
{
	unsigned reserved = auth_conns_reserved(max);

	if (privileged)
		return total < max;
	return of_uid < per_user && reserved < max && total < max - reserved;
}
