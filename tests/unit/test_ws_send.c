/*
 * test_ws_send.c: the frame of one send(data, kind, options)
 * (rs_ws_encode_send, reference/ws_frame.c): npm ws's frame-type rule, the
 * payload as given, fragments, and the legacy by-kind strategy.
 *
 * The rule's tests run against the "subject" strategy: by-option unless
 * WIRECHECK_TEST_WS=by-kind names the legacy one; CTest runs the suite
 * both ways and the by-kind run must fail (WILL_FAIL), which proves the
 * tests see the difference. The legacy's own tests name their strategy.
 * The expected frames are npm ws 8.18.3's (websocket.js send() and
 * sender.js frame()); tests/e2e/test_ws_wire.py records npm ws's output in
 * the same run and compares every cell.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ws_frame.h"

static int subject_by_kind;

#define ABSENT RS_WS_BINARY_ABSENT
#define TEXT RS_WS_KIND_TEXT
#define BYTES RS_WS_KIND_BYTES

static void hex_of(const uint8_t *p, size_t n, char *out)
{
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		sprintf(out + strlen(out), i ? " %02x" : "%02x", p[i]);
}

/* Encodes one send with a fresh fragment state; returns the hex. */
static void frame_hex(int by_kind, int kind, int binary, int fin,
		      const char *data, size_t len, const uint8_t *key,
		      char *hex)
{
	struct rs_ws_fragments f = { 0 };
	uint8_t out[256];
	long n = rs_ws_encode_send(&f, by_kind, kind, binary, fin, 0, key,
				   data, len, out, sizeof(out));

	assert_true(n > 0);
	hex_of(out, (size_t)n, hex);
}

struct cell {
	int line;
	int kind;
	int binary;
	const char *data;
	size_t len;
	const char *want;   /* the frame npm ws sends on a server socket */
};

/* The cells of the seed's wire table that one frame shows: data kind x
 * binary option, on a server socket (no mask). */
static const struct cell cells[] = {
	{ __LINE__, TEXT, ABSENT, "hi", 2, "81 02 68 69" },
	{ __LINE__, TEXT, 0, "hi", 2, "81 02 68 69" },
	{ __LINE__, TEXT, 1, "hi", 2, "82 02 68 69" },
	{ __LINE__, BYTES, ABSENT, "hi", 2, "82 02 68 69" },
	{ __LINE__, BYTES, 0, "hi", 2, "81 02 68 69" },
	{ __LINE__, BYTES, 1, "hi", 2, "82 02 68 69" },
	{ __LINE__, TEXT, ABSENT, "", 0, "81 00" },
	{ __LINE__, BYTES, 0, "", 0, "81 00" },
	{ __LINE__, BYTES, ABSENT, "", 0, "82 00" },
	/* The seed's example: bytes that are not UTF-8 sent as text go out
	 * as given. */
	{ __LINE__, BYTES, 0, "\xff\x68", 2, "81 02 ff 68" },
	{ __LINE__, TEXT, ABSENT, "\xff\x68", 2, "81 02 ff 68" },
	{ __LINE__, TEXT, 1, "\xff\x68", 2, "82 02 ff 68" },
	{ __LINE__, BYTES, ABSENT, "\xff\x68", 2, "82 02 ff 68" },
};

static void test_frame_type_rule(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		const struct cell *c = &cells[i];
		char got[128];

		frame_hex(subject_by_kind, c->kind, c->binary, 1, c->data,
			  c->len, NULL, got);
		if (strcmp(got, c->want) != 0) {
			print_error("cell of line %d: %s, npm ws sends %s\n",
				    c->line, got, c->want);
			fail();
		}
	}
}

/* A client masks; the same rule decides the type (RFC 6455 5.7's key). */
static void test_client_frame_is_masked(void **state)
{
	static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
	char got[128];

	(void)state;
	frame_hex(subject_by_kind, BYTES, 0, 1, "Hello", 5, key, got);
	assert_string_equal(got, "81 85 37 fa 21 3d 7f 9f 4d 51 58");
}

/*
 * fin=false as npm ws: the first frame has the type, the later ones
 * opcode 0, the last FIN; a later send's own type does not count inside
 * the message, and a send after the last one starts a new message.
 */
static void test_fragments(void **state)
{
	static const struct {
		int kind, binary, fin;
		const char *data;
		const char *want;
	} steps[] = {
		{ BYTES, 0, 0, "ab", "01 02 61 62" },
		{ TEXT, 1, 0, "cd", "00 02 63 64" },
		{ BYTES, ABSENT, 1, "e", "80 01 65" },
		{ BYTES, ABSENT, 1, "f", "82 01 66" },
		{ TEXT, 1, 0, "g", "02 01 67" },
		{ TEXT, ABSENT, 1, "", "80 00" },
	};
	struct rs_ws_fragments f = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		uint8_t out[64];
		char got[128];
		long n = rs_ws_encode_send(&f, subject_by_kind, steps[i].kind,
					   steps[i].binary, steps[i].fin, 0, NULL,
					   steps[i].data, strlen(steps[i].data),
					   out, sizeof(out));

		assert_true(n > 0);
		hex_of(out, (size_t)n, got);
		if (strcmp(got, steps[i].want) != 0) {
			print_error("fragment step %zu: %s, want %s\n", i, got,
				    steps[i].want);
			fail();
		}
	}
	assert_int_equal(f.open, 0);
}

/* RSV1 (a compressed message) only on the first frame (RFC 7692 6.1). */
static void test_rsv1_first_frame_only(void **state)
{
	struct rs_ws_fragments f = { 0 };
	uint8_t out[32];

	(void)state;
	assert_int_equal(rs_ws_encode_send(&f, 0, TEXT, ABSENT, 0, 1, NULL, "a",
					   1, out, sizeof(out)), 3);
	assert_int_equal(out[0], 0x41);
	assert_int_equal(rs_ws_encode_send(&f, 0, TEXT, ABSENT, 1, 1, NULL, "b",
					   1, out, sizeof(out)), 3);
	assert_int_equal(out[0], 0x80);
}

/* Bad arguments are refused on both strategies and change nothing. */
static void test_bad_arguments(void **state)
{
	struct rs_ws_fragments f = { 1 };
	uint8_t out[32];

	(void)state;
	for (int by_kind = 0; by_kind <= 1; by_kind++) {
		assert_int_equal(rs_ws_encode_send(&f, by_kind, 0, ABSENT, 1, 0,
						   NULL, "a", 1, out, 32), -EINVAL);
		assert_int_equal(rs_ws_encode_send(&f, by_kind, 3, ABSENT, 1, 0,
						   NULL, "a", 1, out, 32), -EINVAL);
		assert_int_equal(rs_ws_encode_send(&f, by_kind, TEXT, 2, 1, 0,
						   NULL, "a", 1, out, 32), -EINVAL);
		assert_int_equal(rs_ws_encode_send(&f, by_kind, TEXT, -2, 1, 0,
						   NULL, "a", 1, out, 32), -EINVAL);
		assert_int_equal(rs_ws_encode_send(&f, by_kind, TEXT, ABSENT, 2,
						   0, NULL, "a", 1, out, 32),
				 -EINVAL);
		assert_int_equal(rs_ws_encode_send(&f, by_kind, TEXT, ABSENT, 1,
						   0, NULL, "a", 1, out, 2),
				 -ENOSPC);
		assert_int_equal(f.open, 1);
	}
}

/* The edge lengths' headers through the send path. */
static void test_send_edge_lengths(void **state)
{
	static const size_t lens[] = { 0, 125, 126, 65535, 65536 };
	static const char *heads[] = { "82 00", "82 7d", "82 7e 00 7e",
				       "82 7e ff ff",
				       "82 7f 00 00 00 00 00 01 00 00" };
	uint8_t *data = calloc(1, 65536), *out = malloc(65536 + 14);

	(void)state;
	assert_non_null(data);
	assert_non_null(out);
	for (size_t i = 0; i < 5; i++) {
		struct rs_ws_fragments f = { 0 };
		long n = rs_ws_encode_send(&f, subject_by_kind, BYTES, ABSENT, 1,
					   0, NULL, data, lens[i], out,
					   65536 + 14);
		char got[64];
		size_t h = i == 0 || i == 1 ? 2 : i < 4 ? 4 : 10;

		assert_int_equal(n, (long)(h + lens[i]));
		hex_of(out, h, got);
		assert_string_equal(got, heads[i]);
	}
	free(data);
	free(out);
}

/* ------------------------------------------------------------------------ */
/* The legacy (by-kind): what the seed's base did.                          */

static void test_legacy_type_by_kind(void **state)
{
	char got[128];

	(void)state;
	frame_hex(1, BYTES, 0, 1, "hi", 2, NULL, got);
	assert_string_equal(got, "82 02 68 69");
	frame_hex(1, TEXT, 1, 1, "hi", 2, NULL, got);
	assert_string_equal(got, "81 02 68 69");
}

/* The seed's base: ff 68 as text is ef bf bd 68; masked too. */
static void test_legacy_replaces_invalid_text(void **state)
{
	static const uint8_t key[4] = { 1, 2, 3, 4 };
	char got[128];

	(void)state;
	frame_hex(1, TEXT, ABSENT, 1, "\xff\x68", 2, NULL, got);
	assert_string_equal(got, "81 04 ef bf bd 68");
	frame_hex(1, TEXT, ABSENT, 1, "\xff\x68", 2, key, got);
	assert_string_equal(got, "81 84 01 02 03 04 ee bd be 6c");
	/* Bytes keep their bytes on the legacy too: it is text that is
	 * decoded. */
	frame_hex(1, BYTES, ABSENT, 1, "\xff\x68", 2, NULL, got);
	assert_string_equal(got, "82 02 ff 68");
}

int main(void)
{
	const char *s = getenv("WIRECHECK_TEST_WS");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_type_rule),
		cmocka_unit_test(test_client_frame_is_masked),
		cmocka_unit_test(test_fragments),
		cmocka_unit_test(test_rsv1_first_frame_only),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_send_edge_lengths),
		cmocka_unit_test(test_legacy_type_by_kind),
		cmocka_unit_test(test_legacy_replaces_invalid_text),
	};

	subject_by_kind = s && strcmp(s, "by-kind") == 0;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
