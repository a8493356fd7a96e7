/* unit tests: the rules for callers that are neither root nor in socket_group */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "varlink_auth.h"
#include "conf.h"

static void test_namespace(void **state)
{
	assert_true(auth_key_in_namespace("user.%u.*", 65534, "nobody", "user.65534.job"));
	assert_false(auth_key_in_namespace("user.%u.*", 65534, "nobody", "user.6553.job"));
	assert_false(auth_key_in_namespace("user.%u.*", 65534, "nobody", "user.655341.job"));
	assert_false(auth_key_in_namespace("user.%u.*", 65534, "nobody", "web"));
	assert_false(auth_key_in_namespace("user.%u.*", 1000, "alice", "user.0.job"));
	/* %n: the user name; a uid without a name has no namespace by name */
	assert_true(auth_key_in_namespace("u-%n.*", 1000, "alice", "u-alice.x"));
	assert_false(auth_key_in_namespace("u-%n.*", 1000, NULL, "u-.x"));
	assert_false(auth_key_in_namespace("u-%n.*", 1000, "", "u-.x"));
	/* a name is literal, never a glob of its own */
	assert_false(auth_key_in_namespace("u-%n", 1000, "a*", "u-abc"));
	assert_true(auth_key_in_namespace("u-%n", 1000, "a*", "u-a*"));
	assert_true(auth_key_in_namespace("%u%%", 7, NULL, "7%"));
	/* empty: no keys at all */
	assert_false(auth_key_in_namespace("", 1000, "alice", "x"));
	assert_false(auth_key_in_namespace(NULL, 1000, "alice", "x"));
}

static void test_slot_quota(void **state)
{
	const char *why = "unset";

	/* defaults: max_slots/32, max_slots/8 reserved, each at least 1 */
	assert_int_equal(auth_slots_per_user(1024, CONF_AUTO), 32);
	assert_int_equal(auth_slots_per_user(10, CONF_AUTO), 1);
	assert_int_equal(auth_slots_per_user(1024, 5), 5);
	assert_int_equal(auth_slots_per_user(1024, 0), 0);
	assert_int_equal(auth_slots_reserved(1024), 128);
	assert_int_equal(auth_slots_reserved(4), 1);

	assert_int_equal(auth_bind_check(1024, CONF_AUTO, 31, 0, &why), 0);
	assert_string_equal(why, "unset"); /* written only on refusal */
	assert_int_equal(auth_bind_check(1024, CONF_AUTO, 32, 0, &why), -ENOSPC);
	assert_string_equal(why, "max_slots_per_user");
	/* the last max_slots/8 stay for root, whoever took the others */
	assert_int_equal(auth_bind_check(1024, CONF_AUTO, 0, 895, &why), 0);
	assert_int_equal(auth_bind_check(1024, CONF_AUTO, 0, 896, &why), -ENOSPC);
	assert_string_equal(why, "reserved");
	/* one slot: root's */
	assert_int_equal(auth_bind_check(1, CONF_AUTO, 0, 0, &why), -ENOSPC);
	assert_int_equal(auth_bind_check(1024, 0, 0, 0, &why), -ENOSPC);
	assert_string_equal(why, "max_slots_per_user");
}

static void test_connections(void **state)
{
	assert_int_equal(auth_conns_reserved(128), 8);
	assert_int_equal(auth_conns_reserved(4), 1);
	/* per uid */
	assert_true(auth_conn_allowed(false, 20, 15, 128, 16));
	assert_false(auth_conn_allowed(false, 20, 16, 128, 16));
	/* the reserved places */
	assert_true(auth_conn_allowed(false, 119, 0, 128, 16));
	assert_false(auth_conn_allowed(false, 120, 0, 128, 16));
	assert_true(auth_conn_allowed(true, 127, 127, 128, 16));
	assert_false(auth_conn_allowed(true, 128, 0, 128, 16));
	assert_false(auth_conn_allowed(false, 0, 0, 1, 16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_slot_quota),
		cmocka_unit_test(test_connections),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
