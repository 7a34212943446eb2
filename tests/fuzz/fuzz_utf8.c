/*
 * fuzz_utf8.c: libFuzzer target for the UTF-8 validator (reference/utf8.c)
 * against a reference written here from RFC 3629's definition, independent
 * of the validator's range table: decode each sequence to its code point
 * and refuse overlong forms, surrogates and anything above U+10FFFF; an
 * unfinished last sequence is a good prefix when some continuation bytes
 * would finish it well (tried with the ends of every continuation range).
 *
 * Checked: rs_utf8_valid equals the reference; fed in two pieces split
 * where the input's first byte says, and fed one byte at a time, the
 * streaming validator refuses exactly when the bytes so far are no good
 * prefix and is complete exactly when they are valid; rs_utf8_replace
 * leaves valid text as it is.
 */
#include "utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_utf8: %s\n", what);
		abort();
	}
}

/* The length a lead byte announces (1..4), or 0 for a byte no sequence
 * starts with. */
static int seq_len(uint8_t b)
{
	if (b < 0x80) return 1;
	if (b >= 0xC0 && b < 0xE0) return 2;
	if (b >= 0xE0 && b < 0xF0) return 3;
	if (b >= 0xF0 && b < 0xF8) return 4;
	return 0;
}

/* Decodes one whole sequence of len bytes; 1 when it is well formed. */
static int seq_ok(const uint8_t *p, int len)
{
	static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t cp;

	if (len == 1)
		return 1;
	cp = p[0] & (0xFF >> (len + 1));
	for (int i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	return cp >= min[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

/* 1 when some continuation of have bytes of a len-byte sequence is good. */
static int partial_ok(const uint8_t *p, int have, int len)
{
	static const uint8_t cand[] = { 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF };
	uint8_t buf[4];
	int missing = len - have, combos = 1;

	for (int i = 0; i < missing; i++)
		combos *= 6;
	memcpy(buf, p, (size_t)have);
	for (int c = 0; c < combos; c++) {
		int x = c;

		for (int i = have; i < len; i++, x /= 6)
			buf[i] = cand[x % 6];
		if (seq_ok(buf, len))
			return 1;
	}
	return 0;
}

/* 0: valid; 1: a good prefix with its last sequence unfinished; -1: not a
 * prefix of any valid text. */
static int ref_check(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		int len = seq_len(p[i]);

		if (len == 0)
			return -1;
		if (i + (size_t)len > n)
			return partial_ok(p + i, (int)(n - i), len) ? 1 : -1;
		if (!seq_ok(p + i, len))
			return -1;
		i += (size_t)len;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_utf8 v = RS_UTF8_INIT, w = RS_UTF8_INIT;
	size_t split = size ? data[0] % (size + 1) : 0;
	int ref = ref_check(data, size), bad = 0;
	uint8_t *out;

	check(rs_utf8_valid(data, size) == (ref == 0), "rs_utf8_valid differs from RFC 3629");
	if (rs_utf8_feed(&v, data, split) == 0)
		(void)rs_utf8_feed(&v, data + split, size - split);
	check(rs_utf8_complete(&v) == (ref == 0), "two pieces: complete differs");
	for (size_t i = 0; i < size; i++) {
		int r = rs_utf8_feed(&w, data + i, 1);
		int pref = ref_check(data, i + 1);

		check((r < 0) == (pref < 0 || bad), "byte by byte: refusal differs from the prefix rule");
		bad |= pref < 0;
	}
	check(rs_utf8_complete(&w) == (ref == 0), "byte by byte: complete differs");
	out = malloc(3 * size + 1);
	if (out) {
		size_t n = rs_utf8_replace(data, size, out);

		if (ref == 0)
			check(n == size && memcmp(out, data, size) == 0,
			      "rs_utf8_replace changed valid text");
		free(out);
	}
	return 0;
}
