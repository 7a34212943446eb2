/*
 * fuzz_ws_frame.c: libFuzzer target for the WebSocket frame parser
 * (reference/ws_frame.c): every split of the input gives the same events.
 *
 * The first byte chooses the options (server or client side, RSV1 allowed,
 * a small maximum message or none) and the second seeds the split sizes.
 * The rest is parsed twice: given whole, and in pieces of 1 to 16 bytes;
 * every event (kind, opcode, compressed, frames, payload, code, offset) is
 * logged, and the two logs must be the same, byte for byte.
 */
#include "ws_frame.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct log {
	uint8_t *b;
	size_t len, cap;
};

static void put(struct log *l, const void *p, size_t n)
{
	if (l->len + n > l->cap) {
		size_t cap = (l->cap + n) * 2;
		uint8_t *b = realloc(l->b, cap);

		if (!b)
			abort();
		l->b = b;
		l->cap = cap;
	}
	memcpy(l->b + l->len, p, n);
	l->len += n;
}

static void record(struct log *l, const struct rs_ws_event *ev)
{
	int64_t f[7] = { ev->kind, ev->opcode, ev->compressed, ev->frames,
			 (int64_t)ev->len, ev->code, (int64_t)ev->offset };

	put(l, f, sizeof(f));
	if (ev->len)
		put(l, ev->data, ev->len);
}

/* Parses in[0, n) in pieces (sizes from seed, 0: whole); returns 1 when
 * the parser stopped for good (an ERROR or a CLOSE). */
static void parse(const struct rs_ws_parser_options *opt, const uint8_t *in,
		  size_t n, unsigned seed, struct log *l)
{
	struct rs_ws_parser p;
	size_t at = 0;
	int done = 0;

	rs_ws_parser_init(&p, opt);
	while (at < n && !done) {
		size_t piece = seed ? 1 + (seed = seed * 1103515245u + 12345u) % 16 : n - at;
		size_t end = at + (piece < n - at ? piece : n - at);

		while (at < end) {
			struct rs_ws_event ev;
			size_t used = rs_ws_parser_feed(&p, in + at, end - at, &ev);

			if (used > end - at) {
				fprintf(stderr, "fuzz_ws_frame: used more than given\n");
				abort();
			}
			at += used;
			if (ev.kind != RS_WS_EV_NONE)
				record(l, &ev);
			if (ev.kind == RS_WS_EV_ERROR || ev.kind == RS_WS_EV_CLOSE ||
			    (used == 0 && ev.kind == RS_WS_EV_NONE)) {
				done = 1;
				break;
			}
		}
	}
	rs_ws_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_ws_parser_options opt = { 0, 0, 0 };
	struct log whole = { 0 }, split = { 0 };
	unsigned seed;

	if (size < 2)
		return 0;
	opt.server = data[0] & 1;
	opt.rsv1_ok = (data[0] >> 1) & 1;
	opt.max_message = (data[0] & 4) ? (uint64_t)(data[0] >> 3) * 8 : 0;
	seed = data[1] | 1u;
	parse(&opt, data + 2, size - 2, 0, &whole);
	parse(&opt, data + 2, size - 2, seed, &split);
	if (whole.len != split.len ||
	    (whole.len && memcmp(whole.b, split.b, whole.len) != 0)) {
		fprintf(stderr, "fuzz_ws_frame: the split input gave other events\n");
		abort();
	}
	free(whole.b);
	free(split.b);
	return 0;
}
