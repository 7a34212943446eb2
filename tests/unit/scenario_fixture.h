/*
 * scenario_fixture.h: what the two halves of the scenario parser's unit
 * tests share (test_scenario.c: valid scenarios; test_scenario_errors.c:
 * one mistake at a time): a temporary folder, parse_ok, and expect_error,
 * which checks that a message starts with "WHERE:LINE: ", names the problem
 * and that the failed parse left nothing behind.
 */
#ifndef WIRECHECK_TEST_SCENARIO_FIXTURE_H
#define WIRECHECK_TEST_SCENARIO_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rs.h"
#include "scenario.h"

#define WHERE "t.wcs"
#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

static char tmpdir[64] __attribute__((unused));

static __attribute__((unused)) int group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/test_scenario.XXXXXX",
		 base && strlen(base) < 32 ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static __attribute__((unused)) int group_teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

/* Variants must not change the process-wide configuration; should a
 * regression change it, the next test still starts from the defaults. */
static __attribute__((unused)) int reset_config(void **state)
{
	(void)state;
	rs_config = (struct rs_config)RS_CONFIG_DEFAULTS;
	return 0;
}

static __attribute__((unused)) void parse_ok(const char *text, struct scenario *sc)
{
	char err[1024] = "";
	int rc = sc_parse(WHERE, text, sc, err, sizeof(err));

	if (rc != 0)
		fail_msg("unexpected parse error: %s", err);
}

static __attribute__((unused)) int is_zeroed(const struct scenario *sc)
{
	static const struct scenario zero;

	return memcmp(sc, &zero, sizeof(zero)) == 0;
}

/*
 * Checks an error message: it starts with "where:line: " (or "where: " when
 * line is 0), names the location once, and holds every word of words.
 */
static __attribute__((unused)) void check_message(const char *err, const char *where, int line,
			  const char *const *words)
{
	char prefix[256];
	size_t n;

	if (line > 0)
		snprintf(prefix, sizeof(prefix), "%s:%d: ", where, line);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", where);
	n = strlen(prefix);
	if (strncmp(err, prefix, n) != 0)
		fail_msg("message '%s' does not start with '%s'", err, prefix);
	if (strstr(err + n, prefix))
		fail_msg("message '%s' names its location twice", err);
	for (; *words; words++)
		if (!strstr(err + n, *words))
			fail_msg("message '%s' lacks '%s'", err, *words);
}

/* Parses text that must fail at line with a message holding every word. */
static __attribute__((unused)) void expect_error_(const char *text, int line, const char *const *words)
{
	struct scenario sc;
	char err[1024] = "";
	int rc;

	memset(&sc, 0xa5, sizeof(sc)); /* sc_parse must not rely on it */
	rc = sc_parse(WHERE, text, &sc, err, sizeof(err));
	if (rc == 0) {
		sc_free(&sc);
		fail_msg("parsed without error:\n%s", text);
	}
	assert_int_equal(rc, -1);
	check_message(err, WHERE, line, words);
	/* A failed parse leaves nothing to free. */
	assert_true(is_zeroed(&sc));
}

#define expect_error(text, line, ...) \
	expect_error_((text), (line), (const char *const[]){ __VA_ARGS__, NULL })

static __attribute__((unused)) void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static __attribute__((unused)) void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* Checks an op's fields one by one, so that a failure names the field. */
static __attribute__((unused)) void check_op(const struct sc_op *op, enum sc_op_kind kind, int line,
		     int conn, size_t len, int fill, int cb, int microtask)
{
	assert_int_equal(op->kind, kind);
	assert_int_equal(op->line, line);
	assert_int_equal(op->conn, conn);
	assert_int_equal(op->len, len);
	assert_int_equal(op->fill, fill);
	assert_int_equal(op->cb, cb);
	assert_int_equal(op->microtask, microtask);
}

static __attribute__((unused)) void check_data(const struct sc_op *op, const void *bytes, size_t len)
{
	assert_non_null(op->data);
	assert_int_equal(op->len, len);
	assert_memory_equal(op->data, bytes, len);
}

#endif
