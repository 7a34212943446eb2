/*
 * test_ws_deflate.c: permessage-deflate (reference/ws_deflate.c), with
 * cmocka: the negotiation's offer, answer and acceptance (npm ws 8.18.3's
 * rules, lib/permessage-deflate.js; tests/e2e/test_ws_deflate.py holds
 * the same table against npm ws itself), the RFC 7692 7.2.3 examples, and
 * compressed messages inflated whole and split at every point.
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
#include <valgrind/valgrind.h>

#include "ws_deflate.h"

/* ------------------------------------------------------------------------ */
/* Helpers.                                                                 */

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*hex) {
		unsigned v;

		if (*hex == ' ') {
			hex++;
			continue;
		}
		assert_true(sscanf(hex, "%2x", &v) == 1);
		assert_true(n < cap);
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return n;
}

static void tohex(const uint8_t *p, size_t n, char *out)
{
	out[0] = 0;
	for (size_t i = 0; i < n; i++)
		sprintf(out + 3 * i, i + 1 < n ? "%02x " : "%02x", p[i]);
}

/* Deterministic text-like bytes that compress (words from a small set,
 * mixed with counter bytes), n of them. */
static uint8_t *sample(size_t n, uint32_t seed)
{
	static const char *words[] = { "frame ", "mask ", "deflate ",
				       "window ", "queue ", "\xc3\xa9t\xc3\xa9 " };
	uint8_t *p = malloc(n ? n : 1);
	size_t i = 0;

	assert_non_null(p);
	while (i < n) {
		const char *w;

		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 7 == 0) {
			p[i++] = (uint8_t)(seed >> 24);
			continue;
		}
		w = words[(seed >> 16) % 6];
		for (size_t k = 0; w[k] && i < n; k++)
			p[i++] = (uint8_t)w[k];
	}
	return p;
}

/* ------------------------------------------------------------------------ */
/* Negotiation.                                                             */

static const struct rs_ws_deflate_options defaults = { .enabled = 1 };

static void test_offer(void **state)
{
	struct rs_ws_deflate_options o = defaults;
	char out[256];

	(void)state;
	/* npm ws's WebSocket with perMessageDeflate: true. */
	assert_int_equal(rs_ws_deflate_offer(&o, out, sizeof(out)),
			 (int)strlen("permessage-deflate; client_max_window_bits"));
	assert_string_equal(out, "permessage-deflate; client_max_window_bits");
	o.server_no_context_takeover = 1;
	o.client_no_context_takeover = 1;
	o.server_max_window_bits = 10;
	o.client_max_window_bits = 12;
	assert_true(rs_ws_deflate_offer(&o, out, sizeof(out)) > 0);
	assert_string_equal(out, "permessage-deflate; server_no_context_takeover; "
				 "client_no_context_takeover; "
				 "server_max_window_bits=10; "
				 "client_max_window_bits=12");
	assert_int_equal(rs_ws_deflate_offer(&o, out, 20), -ENOSPC);
	o.server_max_window_bits = 16;
	assert_int_equal(rs_ws_deflate_offer(&o, out, sizeof(out)), -EINVAL);
	/* npm ws's false: nothing offered (client_max_window_bits, which is
	 * offered bare when not given, is left out); true offers the
	 * parameter, without a value for a window. */
	o = defaults;
	o.server_no_context_takeover = RS_WS_DEFLATE_FALSE;
	o.client_no_context_takeover = RS_WS_DEFLATE_FALSE;
	o.server_max_window_bits = RS_WS_DEFLATE_FALSE;
	o.client_max_window_bits = RS_WS_DEFLATE_FALSE;
	assert_true(rs_ws_deflate_offer(&o, out, sizeof(out)) > 0);
	assert_string_equal(out, "permessage-deflate");
	o.server_max_window_bits = RS_WS_DEFLATE_TRUE;
	o.client_max_window_bits = RS_WS_DEFLATE_TRUE;
	assert_true(rs_ws_deflate_offer(&o, out, sizeof(out)) > 0);
	assert_string_equal(out, "permessage-deflate; server_max_window_bits; "
				 "client_max_window_bits");
	o.client_no_context_takeover = 2;
	assert_int_equal(rs_ws_deflate_offer(&o, out, sizeof(out)), -EINVAL);
	o.client_no_context_takeover = 0;
	o.client_max_window_bits = -2;
	assert_int_equal(rs_ws_deflate_offer(&o, out, sizeof(out)), -EINVAL);
	o.client_max_window_bits = 7;
	assert_int_equal(rs_ws_deflate_offer(&o, out, sizeof(out)), -EINVAL);
}

/* A server's answer: options, the request's header, what must come out
 * ("-" for no permessage-deflate, "!" for a refused handshake), and the
 * agreed parameters (snct, cnct, smwb, cmwb). */
struct answer_case {
	int line;
	struct rs_ws_deflate_options o;
	const char *header;
	const char *answer;
	struct rs_ws_deflate_params p;
};

#define OPT(...) { .enabled = 1, __VA_ARGS__ }

static const struct answer_case answers[] = {
	{ __LINE__, OPT(), "permessage-deflate; client_max_window_bits",
	  "permessage-deflate", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate", "permessage-deflate",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "x-webkit-deflate-frame", "-", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "foo, permessage-deflate; client_max_window_bits=10",
	  "permessage-deflate; client_max_window_bits=10", { 0, 0, 0, 10 } },
	/* The offer's order stays; a granted parameter goes behind. */
	{ __LINE__, OPT(.server_no_context_takeover = 1),
	  "permessage-deflate; client_max_window_bits=9; "
	  "client_no_context_takeover",
	  "permessage-deflate; client_max_window_bits=9; "
	  "client_no_context_takeover; server_no_context_takeover",
	  { 1, 1, 0, 9 } },
	{ __LINE__, OPT(), "permessage-deflate; server_no_context_takeover",
	  "permessage-deflate; server_no_context_takeover", { 1, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits=10",
	  "permessage-deflate; server_max_window_bits=10", { 0, 0, 10, 0 } },
	/* A quoted value and spaces around the separators. */
	{ __LINE__, OPT(), "permessage-deflate ;  server_max_window_bits=\"11\" ",
	  "permessage-deflate; server_max_window_bits=11", { 0, 0, 11, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits=\"1\\1\"",
	  "permessage-deflate; server_max_window_bits=11", { 0, 0, 11, 0 } },
	/* The options set the windows. */
	{ __LINE__, OPT(.server_max_window_bits = 10,
			.client_max_window_bits = 11),
	  "permessage-deflate; client_max_window_bits",
	  "permessage-deflate; client_max_window_bits=11; "
	  "server_max_window_bits=10", { 0, 0, 10, 11 } },
	/* The first offer asks for a smaller server window than allowed: the
	 * second is taken. */
	{ __LINE__, OPT(.server_max_window_bits = 12),
	  "permessage-deflate; server_max_window_bits=10, "
	  "permessage-deflate; client_max_window_bits",
	  "permessage-deflate; server_max_window_bits=12", { 0, 0, 12, 0 } },
	/* The options set the client's window, the offer does not allow it. */
	{ __LINE__, OPT(.client_max_window_bits = 10), "permessage-deflate",
	  "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; foo", "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits=7", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; client_max_window_bits=16", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_no_context_takeover=1",
	  "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_no_context_takeover; "
			   "server_no_context_takeover", "!", { 0, 0, 0, 0 } },
	/* A bad later offer refuses the handshake, as npm ws checks every
	 * offer before it takes one. */
	{ __LINE__, OPT(), "permessage-deflate, permessage-deflate; x=1", "!",
	  { 0, 0, 0, 0 } },
	/* Syntax. */
	{ __LINE__, OPT(), "permessage-deflate;", "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate,", "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), ", permessage-deflate", "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits =10", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits= 10", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits=\"\"", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits=\"10", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "perm essage-deflate", "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "foo; a=\"b c\"", "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "foo; a=\"b\", bar; c", "-", { 0, 0, 0, 0 } },
	/* npm ws's false: the offers that ask for what it refuses are
	 * skipped; client_max_window_bits false leaves the client's size out
	 * of the answer. */
	{ __LINE__, OPT(.server_no_context_takeover = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; server_no_context_takeover", "!",
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(.server_no_context_takeover = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; server_no_context_takeover, permessage-deflate",
	  "permessage-deflate", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(.server_max_window_bits = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; server_max_window_bits=15", "!", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(.server_max_window_bits = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; client_max_window_bits",
	  "permessage-deflate", { 0, 0, 0, 0 } },
	{ __LINE__, OPT(.client_max_window_bits = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; client_max_window_bits=10",
	  "permessage-deflate", { 0, 0, 0, 0 } },
	/* true is as not given at a server. */
	{ __LINE__, OPT(.server_max_window_bits = RS_WS_DEFLATE_TRUE,
			.client_max_window_bits = RS_WS_DEFLATE_TRUE),
	  "permessage-deflate; client_max_window_bits=10",
	  "permessage-deflate; client_max_window_bits=10", { 0, 0, 0, 10 } },
	{ __LINE__, OPT(.client_no_context_takeover = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; client_no_context_takeover",
	  "permessage-deflate; client_no_context_takeover", { 0, 1, 0, 0 } },
};

static void test_answer_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		const struct answer_case *c = &answers[i];
		struct rs_ws_deflate_params p = { 9, 9, 9, 9 };
		const char *problem;
		char out[256];
		int r = rs_ws_deflate_answer(&c->o, c->header, strlen(c->header),
					     &p, out, sizeof(out), &problem);
		const char *got = r == 1 ? out : r == 0 ? "-" : "!";

		if (strcmp(got, c->answer) != 0) {
			print_error("line %d: %s: answer \"%s\" (%d), want \"%s\"\n",
				    c->line, c->header, got, r, c->answer);
			fail();
		}
		if (r == -EPROTO)
			assert_non_null(problem);
		if (r == 1 && memcmp(&p, &c->p, sizeof(p)) != 0) {
			print_error("line %d: params %d %d %d %d\n", c->line,
				    p.server_no_context_takeover,
				    p.client_no_context_takeover,
				    p.server_max_window_bits,
				    p.client_max_window_bits);
			fail();
		}
	}
}

static void test_answer_too_small(void **state)
{
	struct rs_ws_deflate_params p;
	const char *problem;
	char out[24];
	const char *h = "permessage-deflate; client_max_window_bits=10";

	(void)state;
	assert_int_equal(rs_ws_deflate_answer(&defaults, h, strlen(h), &p, out,
					      sizeof(out), &problem), -ENOSPC);
}

struct accept_case {
	int line;
	struct rs_ws_deflate_options o;
	const char *header;
	int ok;
	struct rs_ws_deflate_params p;
};

static const struct accept_case accepts[] = {
	{ __LINE__, OPT(), "permessage-deflate", 1, { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; client_max_window_bits=10", 1,
	  { 0, 0, 0, 10 } },
	{ __LINE__, OPT(), "permessage-deflate; server_no_context_takeover; "
			   "client_no_context_takeover; server_max_window_bits=9",
	  1, { 1, 1, 9, 0 } },
	/* The client's size when the server's answer has none. */
	{ __LINE__, OPT(.client_max_window_bits = 11), "permessage-deflate", 1,
	  { 0, 0, 0, 11 } },
	{ __LINE__, OPT(.client_max_window_bits = 11),
	  "permessage-deflate; client_max_window_bits=12", 0, { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; client_max_window_bits", 0,
	  { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate, foo", 0, { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "foo", 0, { 0, 0, 0, 0 } },
	{ __LINE__, OPT(), "permessage-deflate; bar", 0, { 0, 0, 0, 0 } },
	/* Only the first element counts, once all are valid. */
	{ __LINE__, OPT(), "permessage-deflate; server_max_window_bits=10, "
			   "permessage-deflate", 1, { 0, 0, 10, 0 } },
	/* npm ws's false: a parameter the client did not want is refused. */
	{ __LINE__, OPT(.client_max_window_bits = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; client_max_window_bits=15", 0, { 0, 0, 0, 0 } },
	{ __LINE__, OPT(.client_max_window_bits = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate", 1, { 0, 0, 0, 0 } },
	{ __LINE__, OPT(.client_no_context_takeover = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; client_no_context_takeover", 0, { 0, 0, 0, 0 } },
	/* A server's false values mean nothing at a client. */
	{ __LINE__, OPT(.server_no_context_takeover = RS_WS_DEFLATE_FALSE,
			.server_max_window_bits = RS_WS_DEFLATE_FALSE),
	  "permessage-deflate; server_no_context_takeover; "
	  "server_max_window_bits=10", 1, { 1, 0, 10, 0 } },
};

static void test_accept_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(accepts) / sizeof(accepts[0]); i++) {
		const struct accept_case *c = &accepts[i];
		struct rs_ws_deflate_params p = { 9, 9, 9, 9 };
		const char *problem;
		int r = rs_ws_deflate_accept(&c->o, c->header, strlen(c->header),
					     &p, &problem);

		if ((r == 0) != c->ok ||
		    (r == 0 && memcmp(&p, &c->p, sizeof(p)) != 0)) {
			print_error("line %d: %s: %d (%d %d %d %d)\n", c->line,
				    c->header, r, p.server_no_context_takeover,
				    p.client_no_context_takeover,
				    p.server_max_window_bits,
				    p.client_max_window_bits);
			fail();
		}
		if (r < 0)
			assert_non_null(problem);
	}
}

/* npm ws's sender.js: the threshold counts only without context takeover. */
static void test_wanted(void **state)
{
	struct rs_ws_deflate_params keep = { 0, 0, 0, 0 };
	struct rs_ws_deflate_params server_resets = { 1, 0, 0, 0 };

	(void)state;
	assert_int_equal(rs_ws_deflate_wanted(&keep, 1, 0, 0, 0), 1);
	assert_int_equal(rs_ws_deflate_wanted(&keep, 1, 0, 0, 5), 1);
	assert_int_equal(rs_ws_deflate_wanted(&keep, 1, 0, 1, 5000), 0);
	assert_int_equal(rs_ws_deflate_wanted(&server_resets, 1, 0, 0, 1023), 0);
	assert_int_equal(rs_ws_deflate_wanted(&server_resets, 1, 0, 0, 1024), 1);
	assert_int_equal(rs_ws_deflate_wanted(&server_resets, 1, 10, 0, 10), 1);
	assert_int_equal(rs_ws_deflate_wanted(&server_resets, 1, 10, 0, 9), 0);
	/* The client keeps its context: the server's reset is not its own. */
	assert_int_equal(rs_ws_deflate_wanted(&server_resets, 0, 0, 0, 5), 1);
}

/* ------------------------------------------------------------------------ */
/* Compression.                                                             */

/* Compresses one message (fin 1) and returns its hex. */
static void deflate_hex(struct rs_ws_deflater *d, const char *text,
			char *out)
{
	const uint8_t *p;
	long n = rs_ws_deflate(d, text, strlen(text), 1, &p);

	assert_true(n >= 0);
	tohex(p, (size_t)n, out);
}

/* RFC 7692 7.2.3.1 and 7.2.3.2: "Hello", then again with the context. */
static void test_rfc_hello(void **state)
{
	struct rs_ws_deflater d;
	char hex[64];

	(void)state;
	rs_ws_deflater_init(&d, 0, 0);
	deflate_hex(&d, "Hello", hex);
	assert_string_equal(hex, "f2 48 cd c9 c9 07 00");
	deflate_hex(&d, "Hello", hex);
	assert_string_equal(hex, "f2 00 11 00 00");
	rs_ws_deflater_free(&d);
	/* Without context takeover, each message is the first. */
	rs_ws_deflater_init(&d, 0, 1);
	deflate_hex(&d, "Hello", hex);
	assert_string_equal(hex, "f2 48 cd c9 c9 07 00");
	deflate_hex(&d, "Hello", hex);
	assert_string_equal(hex, "f2 48 cd c9 c9 07 00");
	rs_ws_deflater_free(&d);
}

/* An empty message is one byte (npm ws sends c1 01 00), every time. */
static void test_empty_message(void **state)
{
	struct rs_ws_deflater d;
	char hex[64];

	(void)state;
	rs_ws_deflater_init(&d, 0, 0);
	deflate_hex(&d, "", hex);
	assert_string_equal(hex, "00");
	deflate_hex(&d, "hello", hex);
	deflate_hex(&d, "", hex);
	assert_string_equal(hex, "00");
	rs_ws_deflater_free(&d);
}

/* A fragment keeps its 00 00 ff ff; the last one drops it. */
static void test_fragment_trailer(void **state)
{
	struct rs_ws_deflater d;
	const uint8_t *p;
	long n;

	(void)state;
	rs_ws_deflater_init(&d, 0, 0);
	n = rs_ws_deflate(&d, "Hello", 5, 0, &p);
	assert_true(n > 4);
	assert_memory_equal(p + n - 4, "\x00\x00\xff\xff", 4);
	/* npm ws's send('', {fin: true}) behind it: 00 (an empty stored
	 * block's first byte). */
	n = rs_ws_deflate(&d, NULL, 0, 1, &p);
	assert_int_equal(n, 1);
	assert_int_equal(p[0], 0);
	rs_ws_deflater_free(&d);
}

/*
 * Inflates the message [in, in+n) split at `split` (n: whole) and checks
 * it against want. Returns the inflate result.
 */
static int inflate_split(struct rs_ws_inflater *f, const uint8_t *in,
			 size_t n, size_t split, const uint8_t *want,
			 size_t wlen)
{
	const uint8_t *out;
	size_t len;
	int r = rs_ws_inflate(f, in, split);

	if (r == 0)
		r = rs_ws_inflate(f, in + split, n - split);
	if (r == 0)
		r = rs_ws_inflate_end(f, &out, &len);
	if (r == 0 && want) {
		if (len != wlen || memcmp(out, want, wlen) != 0) {
			print_error("split %zu: %zu bytes, want %zu\n", split,
				    len, wlen);
			fail();
		}
	}
	return r;
}

/* The RFC 7692 7.2.3 examples, each at every split point. */
static void test_rfc_inflate(void **state)
{
	static const struct {
		int line;
		const char *hex;
		int takeover;   /* after "Hello" (7.2.3.2) */
	} v[] = {
		{ __LINE__, "f2 48 cd c9 c9 07 00", 0 },
		{ __LINE__, "f2 00 11 00 00", 1 },
		/* 7.2.3.3: a stored block. */
		{ __LINE__, "00 05 00 fa ff 48 65 6c 6c 6f 00", 0 },
		/* 7.2.3.4: BFINAL set. */
		{ __LINE__, "f3 48 cd c9 c9 07 00 00", 0 },
		/* 7.2.3.5: two blocks. */
		{ __LINE__, "f2 48 05 00 00 00 ff ff ca c9 c9 07 00", 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t in[64], first[16];
		size_t n = unhex(v[i].hex, in, sizeof(in));
		size_t fn = unhex("f2 48 cd c9 c9 07 00", first, sizeof(first));

		for (size_t s = 0; s <= n; s++) {
			struct rs_ws_inflater f;

			rs_ws_inflater_init(&f, 0, 0, 0);
			if (v[i].takeover)
				assert_int_equal(inflate_split(&f, first, fn, fn,
							       (const uint8_t *)"Hello",
							       5), 0);
			if (inflate_split(&f, in, n, s, (const uint8_t *)"Hello",
					  5) != 0) {
				print_error("line %d split %zu failed\n",
					    v[i].line, s);
				fail();
			}
			/* After BFINAL the context starts again. */
			assert_int_equal(inflate_split(&f, first, fn, fn,
						       (const uint8_t *)"Hello", 5),
					 0);
			rs_ws_inflater_free(&f);
		}
	}
}

/*
 * Messages of many sizes, with and without context takeover and in
 * several windows, compressed as one frame and as fragments, and
 * inflated whole and at every split point (a stride for the large ones,
 * and under valgrind).
 */
static void test_round_trip_every_split(void **state)
{
	static const size_t sizes[] = { 0, 1, 100, 1023, 1024, 3000, 70000 };
	static const int windows[] = { 0, 8, 9, 12 };

	(void)state;
	for (size_t w = 0; w < sizeof(windows) / sizeof(windows[0]); w++) {
		for (int reset = 0; reset <= 1; reset++) {
			struct rs_ws_deflater d;
			struct rs_ws_inflater f;

			rs_ws_deflater_init(&d, windows[w], reset);
			rs_ws_inflater_init(&f, windows[w], reset, 0);
			for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
				size_t len = sizes[k];
				uint8_t *msg = sample(len, (uint32_t)(k + 7 * w));
				const uint8_t *p;
				long n = rs_ws_deflate(&d, msg, len, 1, &p);
				uint8_t *z;
				size_t step;

				assert_true(n > 0);
				z = malloc((size_t)n);
				assert_non_null(z);
				memcpy(z, p, (size_t)n);
				/* One inflater follows the deflater's context:
				 * whole, then each split on a fresh copy of
				 * the state would need the earlier messages,
				 * so the splits run on a fresh pair below. */
				assert_int_equal(inflate_split(&f, z, (size_t)n,
							       (size_t)n, msg, len), 0);
				step = RUNNING_ON_VALGRIND ? (size_t)n / 7 + 1
				       : (size_t)n > 4096  ? (size_t)n / 1031 + 1
							   : 1;
				if (reset || k == 0) {
					/* Each message stands alone. */
					for (size_t s = 0; s <= (size_t)n; s += step) {
						struct rs_ws_inflater g;

						rs_ws_inflater_init(&g, windows[w], 1, 0);
						assert_int_equal(inflate_split(&g, z,
									       (size_t)n, s,
									       msg, len),
								 0);
						rs_ws_inflater_free(&g);
					}
				}
				free(z);
				free(msg);
			}
			rs_ws_deflater_free(&d);
			rs_ws_inflater_free(&f);
		}
	}
}

/* A message in three fragments (fin 0, 0, 1) inflates to the whole, at
 * every split of the joined frames. */
static void test_fragments_every_split(void **state)
{
	uint8_t *msg = sample(5000, 3), z[8192];
	size_t zn = 0, cuts[] = { 0, 1200, 4000, 5000 };
	struct rs_ws_deflater d;
	size_t step = RUNNING_ON_VALGRIND ? 97 : 1;

	(void)state;
	rs_ws_deflater_init(&d, 0, 0);
	for (int i = 0; i < 3; i++) {
		const uint8_t *p;
		long n = rs_ws_deflate(&d, msg + cuts[i], cuts[i + 1] - cuts[i],
				       i == 2, &p);

		assert_true(n > 0 && zn + (size_t)n <= sizeof(z));
		memcpy(z + zn, p, (size_t)n);
		zn += (size_t)n;
	}
	for (size_t s = 0; s <= zn; s += step) {
		struct rs_ws_inflater f;

		rs_ws_inflater_init(&f, 0, 0, 0);
		assert_int_equal(inflate_split(&f, z, zn, s, msg, 5000), 0);
		rs_ws_inflater_free(&f);
	}
	rs_ws_deflater_free(&d);
	free(msg);
}

/* The maximum: exactly max inflates, max + 1 is -EMSGSIZE at every split;
 * a bomb (1 MiB of zeros) stops at max without growing past it. */
static void test_max_size(void **state)
{
	uint8_t *zeros = calloc(1, 1 << 20), *z;
	struct rs_ws_deflater d;
	const uint8_t *p;
	long n;

	(void)state;
	assert_non_null(zeros);
	rs_ws_deflater_init(&d, 0, 1);
	n = rs_ws_deflate(&d, zeros, 1000, 1, &p);
	assert_true(n > 0);
	z = malloc((size_t)n);
	assert_non_null(z);
	memcpy(z, p, (size_t)n);
	for (size_t s = 0; s <= (size_t)n; s++) {
		struct rs_ws_inflater f;

		rs_ws_inflater_init(&f, 0, 1, 1000);
		assert_int_equal(inflate_split(&f, z, (size_t)n, s, zeros, 1000), 0);
		rs_ws_inflater_free(&f);
		rs_ws_inflater_init(&f, 0, 1, 999);
		assert_int_equal(inflate_split(&f, z, (size_t)n, s, NULL, 0),
				 -EMSGSIZE);
		/* Every later call fails the same way. */
		assert_int_equal(rs_ws_inflate(&f, z, 1), -EMSGSIZE);
		rs_ws_inflater_free(&f);
	}
	free(z);
	n = rs_ws_deflate(&d, zeros, 1 << 20, 1, &p);
	assert_true(n > 0 && n < 4096);
	{
		struct rs_ws_inflater f;

		rs_ws_inflater_init(&f, 0, 1, 4096);
		assert_int_equal(inflate_split(&f, p, (size_t)n, (size_t)n, NULL, 0),
				 -EMSGSIZE);
		assert_true(f.cap <= 2 * 4097);
		rs_ws_inflater_free(&f);
	}
	rs_ws_deflater_free(&d);
	free(zeros);
}

/* Data that is not deflate: -EBADMSG (npm ws closes 1007), at every
 * split; the window a message needs is larger than the one agreed. */
static void test_malformed(void **state)
{
	static const char *bad[] = {
		"ff ff ff ff",              /* block type 3 (reserved) */
		/* "Hello", then a stored block whose lengths disagree. */
		"f2 48 cd c9 c9 07 00 00 00 00 00",
		"02 ff",                    /* an invalid distance code */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t in[32];
		size_t n = unhex(bad[i], in, sizeof(in));

		for (size_t s = 0; s <= n; s++) {
			struct rs_ws_inflater f;

			rs_ws_inflater_init(&f, 0, 0, 0);
			if (inflate_split(&f, in, n, s, NULL, 0) != -EBADMSG) {
				print_error("%s split %zu: not -EBADMSG\n", bad[i], s);
				fail();
			}
			rs_ws_inflater_free(&f);
		}
	}
}

/*
 * A match 2,000 bytes back, from a peer that agreed to 9-bit windows:
 * the inflater's window is 32 KiB whatever was agreed, so the message
 * inflates the same at every split (with a 512-byte window zlib would
 * refuse it only at the splits where the match reaches back past its
 * output buffer: what fuzz_ws_deflate found).
 */
static void test_window_larger_than_agreed(void **state)
{
	uint8_t *msg = sample(4000, 11);
	struct rs_ws_deflater d;
	const uint8_t *p;
	uint8_t *z;
	long n;

	(void)state;
	memcpy(msg + 3000, msg + 1000, 500);
	rs_ws_deflater_init(&d, 15, 0);
	n = rs_ws_deflate(&d, msg, 4000, 1, &p);
	assert_true(n > 0);
	z = malloc((size_t)n);
	assert_non_null(z);
	memcpy(z, p, (size_t)n);
	for (size_t s = 0; s <= (size_t)n; s++) {
		struct rs_ws_inflater f;

		rs_ws_inflater_init(&f, 9, 0, 0);
		assert_int_equal(inflate_split(&f, z, (size_t)n, s, msg, 4000), 0);
		rs_ws_inflater_free(&f);
	}
	free(z);
	rs_ws_deflater_free(&d);
	free(msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offer),
		cmocka_unit_test(test_answer_table),
		cmocka_unit_test(test_answer_too_small),
		cmocka_unit_test(test_accept_table),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_rfc_hello),
		cmocka_unit_test(test_empty_message),
		cmocka_unit_test(test_fragment_trailer),
		cmocka_unit_test(test_rfc_inflate),
		cmocka_unit_test(test_round_trip_every_split),
		cmocka_unit_test(test_fragments_every_split),
		cmocka_unit_test(test_max_size),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_window_larger_than_agreed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
