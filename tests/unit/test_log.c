/* unit tests: log lines as journal entries (fields per event, the journal
 * replaced by a capture), the stderr form with levels, the JOURNAL_STREAM
 * rule, the STATUS= text of sd_notify.c */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture.h"
#include "log.h"
#include "sd_notify.h"

/* the last entry sent, its fields joined with '\n' */
static char entry[4096];
static int nentries;

static int fake_journal(const struct iovec *iov, int n)
{
	size_t used = 0;

	for (int i = 0; i < n; i++) {
		assert_true(used + iov[i].iov_len + 2 < sizeof(entry));
		memcpy(entry + used, iov[i].iov_base, iov[i].iov_len);
		used += iov[i].iov_len;
		entry[used++] = '\n';
	}
	entry[used] = '\0';
	nentries++;
	return 0;
}

static int setup(void **state)
{
	log_init("test_log");
	log_set_level(LOG_INFO);
	log_set_journal(fake_journal);
	entry[0] = '\0';
	nentries = 0;
	return 0;
}

static int teardown(void **state)
{
	log_set_journal(NULL);
	log_set_level(LOG_INFO);
	return 0;
}

static void test_event_fields(void **state)
{
	log_event(LOG_INFO,
		  &(struct log_fields){ .key = "web", .slot = "slot-3", .event = LOG_EV_OUTCOME, .outcome = "pinned",
					.lru_bytes = 4096, .has_lru_bytes = true },
		  "retire %s (%s): %s", "slot-3", "web", "pinned");
	assert_string_equal(entry, "MESSAGE=retire slot-3 (web): pinned\nPRIORITY=6\nSYSLOG_IDENTIFIER=test_log\n"
				   "CGPOOL_EVENT=outcome\nCGPOOL_KEY=web\nCGPOOL_SLOT=slot-3\nCGPOOL_OUTCOME=pinned\n"
				   "CGPOOL_LRU_BYTES=4096\n");
	/* zero bytes is a value; an empty key (a warm slot) and run 0 are not */
	log_event(LOG_NOTICE,
		  &(struct log_fields){ .key = "", .slot = "slot-4", .event = LOG_EV_OUTCOME, .outcome = "released",
					.has_lru_bytes = true },
		  "x");
	assert_string_equal(entry, "MESSAGE=x\nPRIORITY=5\nSYSLOG_IDENTIFIER=test_log\nCGPOOL_EVENT=outcome\n"
				   "CGPOOL_SLOT=slot-4\nCGPOOL_OUTCOME=released\nCGPOOL_LRU_BYTES=0\n");
	log_event(LOG_INFO, &(struct log_fields){ .key = "web", .slot = "slot-3", .event = LOG_EV_RUN_START, .run = 7 },
		  "run");
	assert_string_equal(entry, "MESSAGE=run\nPRIORITY=6\nSYSLOG_IDENTIFIER=test_log\nCGPOOL_EVENT=run-start\n"
				   "CGPOOL_KEY=web\nCGPOOL_SLOT=slot-3\nCGPOOL_RUN=7\n");
	log_event(LOG_INFO, &(struct log_fields){ .key = "web", .event = LOG_EV_JOB_START }, "job");
	assert_string_equal(entry, "MESSAGE=job\nPRIORITY=6\nSYSLOG_IDENTIFIER=test_log\nCGPOOL_EVENT=job-start\n"
				   "CGPOOL_KEY=web\n");
	log_err("plain %d", 1);
	assert_string_equal(entry, "MESSAGE=plain 1\nPRIORITY=3\nSYSLOG_IDENTIFIER=test_log\n");
	assert_int_equal(nentries, 5);
	/* below the level: nothing */
	log_event(LOG_DEBUG, &(struct log_fields){ .key = "web" }, "quiet");
	log_debug("quiet");
	assert_int_equal(nentries, 5);
}

static void test_event_names(void **state)
{
	static const char *const want[] = { "", "bind", "run-start", "run-end", "retire", "outcome", "job-start",
					    "job-exit" };

	for (int i = 0; i < LOG_EV_N; i++)
		assert_string_equal(log_ev_name(i), want[i]);
	assert_string_equal(log_ev_name(LOG_EV_N), "");
}

static void test_job_line(void **state)
{
	log_job_line("web", 3, "stderr", "hello\0cut", 9);
	assert_string_equal(entry, "MESSAGE=hello\nPRIORITY=6\nSYSLOG_IDENTIFIER=web\nCGPOOL_KEY=web\nCGPOOL_RUN=3\n"
				   "CGPOOL_STREAM=stderr\n");
}

static void test_stderr_levels(void **state)
{
	const struct log_fields f = { .key = "web", .slot = "slot-1", .event = LOG_EV_BIND };
	struct capture cap;

	log_set_journal(NULL);
	capture_begin(&cap);
	log_warn("disk %s", "full");
	log_event(LOG_INFO, &f, "slot %s: bound to key %s", "slot-1", "web");
	log_set_level(LOG_DEBUG);
	log_event(LOG_INFO, &f, "slot %s: bound to key %s", "slot-1", "web");
	log_event(LOG_DEBUG, &(struct log_fields){ .slot = "slot-2", .event = LOG_EV_OUTCOME, .outcome = "drained",
						   .lru_bytes = 12, .has_lru_bytes = true },
		  "d");
	log_event(LOG_DEBUG, &(struct log_fields){ 0 }, "no fields");
	capture_end(&cap);
	assert_string_equal(cap.text, "test_log: warning: disk full\n"
				      "test_log: info: slot slot-1: bound to key web\n"
				      "test_log: info: slot slot-1: bound to key web [event=bind key=web slot=slot-1]\n"
				      "test_log: debug: d [event=outcome slot=slot-2 outcome=drained lru_bytes=12]\n"
				      "test_log: debug: no fields\n");
	assert_int_equal(nentries, 0);
}

/* JOURNAL_STREAM counts only when it names stderr itself */
static void test_journal_stream(void **state)
{
	struct capture cap;
	struct stat st;
	char v[64];

	capture_begin(&cap);
	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
	log_init("test_log");
	log_info("to the journal");
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", v, 1);
	log_init("test_log");
	log_info("to stderr: another stream");
	setenv("JOURNAL_STREAM", "junk", 1);
	log_init("test_log");
	log_info("to stderr: junk");
	unsetenv("JOURNAL_STREAM");
	log_init("test_log");
	log_info("to stderr: unset");
	capture_end(&cap);
	assert_int_equal(nentries, 1);
	assert_string_equal(entry, "MESSAGE=to the journal\nPRIORITY=6\nSYSLOG_IDENTIFIER=test_log\n");
	assert_string_equal(cap.text, "test_log: info: to stderr: another stream\ntest_log: info: to stderr: junk\n"
				      "test_log: info: to stderr: unset\n");
}

static void test_status_text(void **state)
{
	unsigned c[SLOT_NSTATES] = { [SLOT_WARM] = 1, [SLOT_RUNNING] = 2, [SLOT_IDLE] = 3, [SLOT_RETIRING] = 4 };
	char buf[128];
	int n = notify_status_text(c, LRU_YES, false, buf, sizeof(buf));

	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, "10 slots: 1 warm, 2 running, 3 idle, 4 retiring; lru_reparenting yes");
	notify_status_text(c, LRU_UNKNOWN, true, buf, sizeof(buf));
	assert_string_equal(buf, "10 slots: 1 warm, 2 running, 3 idle, 4 retiring; lru_reparenting probing");
	notify_status_text(c, LRU_NO, true, buf, sizeof(buf)); /* a verdict stands while it is checked again */
	assert_string_equal(buf, "10 slots: 1 warm, 2 running, 3 idle, 4 retiring; lru_reparenting no");
	notify_status_text(c, LRU_UNKNOWN, false, buf, sizeof(buf));
	assert_string_equal(buf, "10 slots: 1 warm, 2 running, 3 idle, 4 retiring; lru_reparenting unknown");
	assert_int_equal(notify_status_text(c, LRU_YES, false, buf, 20), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_event_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_job_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stderr_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_stream, setup, teardown),
		cmocka_unit_test(test_status_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
