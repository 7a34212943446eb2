/*
 * test_event_line.c: the grammar of the lines a subject writes on its event
 * pipe (protocol/event_line.c, docs/subject-protocol.md "Lines from the
 * subject"): each kind read whole, and each mistake named as the trace's
 * exit.error names it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "event_line.h"

static uint64_t written[2];
static const struct el_context two = { .nconns = 2, .written = written };
static const struct el_context over_unix = { .nconns = 1, .unix_transport = 1,
					     .written = written };

static int parse(const struct el_context *cx, const char *line,
		 struct el_line *l, char *problem)
{
	return el_parse(line, strlen(line), cx, l, problem, 256);
}

static void test_kinds(void **state)
{
	struct el_line l;
	char problem[256];

	(void)state;
	assert_int_equal(parse(&two, "ev 3 1 data 5", &l, problem), 0);
	assert_int_equal(l.kind, EL_EV);
	assert_int_equal(l.task, 3);
	assert_int_equal(l.conn, 1);
	assert_string_equal(l.text, "data 5");
	assert_int_equal(parse(&two, "sync task:2 7 0", &l, problem), 0);
	assert_int_equal(l.kind, EL_SYNC);
	assert_string_equal(l.point, "task:2");
	assert_int_equal(written[0], 7);
	assert_int_equal(written[1], 0);
	assert_int_equal(parse(&two, "kill 15", &l, problem), 0);
	assert_int_equal(l.sig, 15);
	assert_int_equal(l.pid, 0);
	assert_int_equal(parse(&two, "kill 9 1234", &l, problem), 0);
	assert_int_equal(l.pid, 1234);
	assert_int_equal(parse(&two, "listening 8080", &l, problem), 0);
	assert_int_equal(l.port, 8080);
	assert_int_equal(parse(&over_unix, "listening 0", &l, problem), 0);
	assert_int_equal(parse(&two, "stats bytes_moved=1 allocations=2 "
			       "bytes_copied=3", &l, problem), 0);
	assert_int_equal(l.stats[2], 3);
	assert_int_equal(parse(&two, "fatal it broke", &l, problem), 0);
	assert_string_equal(l.text, "it broke");
	assert_int_equal(parse(&two, "note", &l, problem), 0);
	assert_int_equal(l.kind, EL_NOTE);
}

static void test_mistakes(void **state)
{
	static const struct {
		const char *line;
		enum el_kind kind;
		const char *problem;
	} bad[] = {
		{ "ev x 0 data", EL_EV, "TASK is not a number (ev TASK CONN TEXT)" },
		{ "ev 1 2 data", EL_EV, "CONN is not a connection of the scenario "
					"(0 to 1; ev TASK CONN TEXT)" },
		{ "ev 1 0 ", EL_EV, "an event without a TEXT (ev TASK CONN TEXT)" },
		{ "sync later 0 0", EL_SYNC, "POINT is not start, done, task:N or "
					     "checkpoint:N (sync POINT W0 W1 ...)" },
		{ "sync start 0", EL_SYNC, "too few byte counts: the scenario has 2 "
					   "connections (sync POINT W0 W1 ...)" },
		{ "sync start 0 1 2", EL_SYNC, "too many byte counts: the scenario has "
					       "2 connections (sync POINT W0 W1 ...)" },
		{ "sync done 0 x", EL_SYNC, "W1 is not a byte count" },
		{ "kill 9 0", EL_KILL, "expected kill SIG [PID], numbers" },
		{ "listening 0", EL_LISTENING, "PORT is not a TCP port, 1 to 65535 "
					       "(listening PORT)" },
		{ "listening 70000", EL_LISTENING, "PORT is not a TCP port, 1 to "
						   "65535 (listening PORT)" },
		{ "stats bytes_moved=1", EL_STATS, "expected stats bytes_moved=N "
						   "allocations=M bytes_copied=C" },
		{ "stats bytes_moved=1 allocations=2 bytes_copied=3 x", EL_STATS,
		  "expected stats bytes_moved=N allocations=M bytes_copied=C, "
		  "and nothing after" },
		{ "hello", EL_BROKEN, "not a line of the protocol (ev, sync, kill, "
				      "listening, stats, fatal or note)" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct el_line l;
		char problem[256];

		assert_int_equal(parse(&two, bad[i].line, &l, problem), -1);
		assert_int_equal(l.kind, bad[i].kind);
		assert_string_equal(problem, bad[i].problem);
	}
}

/* A NUL inside the line is its error, whatever its keyword. */
static void test_nul(void **state)
{
	struct el_line l;
	char problem[256];

	(void)state;
	assert_int_equal(el_parse("listening \0", 11, &two, &l, problem,
				  sizeof(problem)), -1);
	assert_int_equal(l.kind, EL_BROKEN);
	assert_string_equal(problem, "a NUL byte (byte 11 of the line)");
	assert_int_equal(parse(&over_unix, "listening 80", &l, problem), -1);
	assert_string_equal(problem, "PORT is not 0 (the transport is unix) "
			    "(listening PORT)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_mistakes),
		cmocka_unit_test(test_nul),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
