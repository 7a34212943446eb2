/*
 * fuzz_ws_deflate.c: libFuzzer target for permessage-deflate
 * (reference/ws_deflate.c).
 *
 * The first byte chooses the window (8 to 15), the context rule and a small
 * maximum or none; the second seeds the split sizes. The rest is:
 * - a compressed message, inflated whole and in pieces of 1 to 16 bytes:
 *   the result (error or bytes) must be the same; when it inflates, the
 *   bytes deflated again (as one frame and as two fragments) must inflate
 *   back to themselves;
 * - a Sec-WebSocket-Extensions header for the server's answer and the
 *   client's acceptance: no crash, and an answer the server agreed on
 *   is itself a header the server agrees on with the same parameters.
 */
#include "ws_deflate.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inflates in[0, n) in pieces (sizes from seed, 0: whole). Returns the
 * result; on success *out is a copy of the message (malloc'd). */
static int inflate_pieces(int bits, int reset, uint64_t max, const uint8_t *in,
			  size_t n, unsigned seed, uint8_t **out, size_t *len)
{
	struct rs_ws_inflater f;
	const uint8_t *p;
	size_t at = 0;
	int r = 0;

	rs_ws_inflater_init(&f, bits, reset, max);
	while (at < n && r == 0) {
		size_t k = seed ? 1 + (seed = seed * 1103515245u + 12345u) % 16 : n;

		if (k > n - at)
			k = n - at;
		r = rs_ws_inflate(&f, in + at, k);
		at += k;
	}
	if (r == 0)
		r = rs_ws_inflate_end(&f, &p, len);
	*out = NULL;
	if (r == 0) {
		*out = malloc(*len ? *len : 1);
		if (!*out)
			abort();
		if (*len)
			memcpy(*out, p, *len);
	}
	rs_ws_inflater_free(&f);
	return r;
}

static void round_trip(int bits, int reset, const uint8_t *msg, size_t n)
{
	struct rs_ws_deflater d;
	uint8_t *z = NULL, *back;
	size_t zn = 0, blen;
	size_t cut = n / 2;

	rs_ws_deflater_init(&d, bits, reset);
	for (int part = 0; part < 2; part++) {
		const uint8_t *p;
		long k = rs_ws_deflate(&d, part ? msg + cut : msg,
				       part ? n - cut : cut, part, &p);
		uint8_t *bigger;

		if (k < 0)
			abort();
		bigger = realloc(z, zn + (size_t)k + 1);
		if (!bigger)
			abort();
		z = bigger;
		memcpy(z + zn, p, (size_t)k);
		zn += (size_t)k;
	}
	if (inflate_pieces(bits, reset, 0, z, zn, 7, &back, &blen) != 0 ||
	    blen != n || (n && memcmp(back, msg, n) != 0))
		abort();
	free(back);
	free(z);
	rs_ws_deflater_free(&d);
}

static void negotiate(const uint8_t *h, size_t n, int opts)
{
	/* The low bits set a parameter; the high ones make it npm ws's
	 * false instead. */
	struct rs_ws_deflate_options o = {
		.enabled = 1,
		.server_no_context_takeover = opts & 16 ? RS_WS_DEFLATE_FALSE
							: opts & 1,
		.client_no_context_takeover = opts & 32 ? RS_WS_DEFLATE_FALSE
							: (opts >> 1) & 1,
		.server_max_window_bits = opts & 64 ? RS_WS_DEFLATE_FALSE
				       : opts & 4 ? 10 : 0,
		.client_max_window_bits = opts & 128 ? RS_WS_DEFLATE_FALSE
				       : opts & 8 ? 11 : 0,
	};
	struct rs_ws_deflate_params p, q;
	const char *problem;
	char answer[512], again[512];
	int r = rs_ws_deflate_answer(&o, (const char *)h, n, &p, answer,
				     sizeof(answer), &problem);

	if (r == 1 && (rs_ws_deflate_answer(&o, answer, strlen(answer), &q, again,
					    sizeof(again), &problem) != 1 ||
		       memcmp(&p, &q, sizeof(p)) != 0))
		abort();
	(void)rs_ws_deflate_accept(&o, (const char *)h, n, &p, &problem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *whole, *split;
	size_t wlen = 0, slen = 0;
	int bits, reset, rw, rs;
	uint64_t max;

	if (size < 2)
		return 0;
	bits = 8 + (data[0] & 7);
	reset = (data[0] >> 3) & 1;
	max = data[0] & 0x10 ? 64 : 0;
	rw = inflate_pieces(bits, reset, max, data + 2, size - 2, 0, &whole, &wlen);
	rs = inflate_pieces(bits, reset, max, data + 2, size - 2, data[1] | 1u,
			    &split, &slen);
	if (rw != rs || (rw == 0 && (wlen != slen ||
				     (wlen && memcmp(whole, split, wlen) != 0))))
		abort();
	if (rw == 0)
		round_trip(bits, reset, whole, wlen);
	free(whole);
	free(split);
	negotiate(data + 2, size - 2, data[1]);
	return 0;
}
