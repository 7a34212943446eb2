/*
 * utf8.c: the UTF-8 validator (incremental) and the legacy U+FFFD decoder.
 * The byte ranges are those of Unicode 15, Table 3-7 "Well-Formed UTF-8
 * Byte Sequences".
 */
#include "utf8.h"

#include <assert.h>
#include <string.h>

/*
 * What a lead byte opens: how many continuation bytes follow and the range
 * of the first of them. need 0xff marks a byte that cannot begin a sequence
 * (80..C1, F5..FF). ASCII never reaches this function.
 */
static void lead_of(uint8_t b, uint8_t *need, uint8_t *lo, uint8_t *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (b >= 0xc2 && b <= 0xdf) {
		*need = 1;
	} else if (b >= 0xe0 && b <= 0xef) {
		*need = 2;
		if (b == 0xe0)
			*lo = 0xa0;  /* no overlong 3-byte forms */
		else if (b == 0xed)
			*hi = 0x9f;  /* no surrogates */
	} else if (b >= 0xf0 && b <= 0xf4) {
		*need = 3;
		if (b == 0xf0)
			*lo = 0x90;  /* no overlong 4-byte forms */
		else if (b == 0xf4)
			*hi = 0x8f;  /* nothing above U+10FFFF */
	} else {
		*need = 0xff;
	}
}

/* True when the 8 bytes at p are all ASCII. */
static int ascii8(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return (w & UINT64_C(0x8080808080808080)) == 0;
}

/*
 * From a character boundary at i: skips ASCII and whole well-formed
 * sequences while 4 bytes are left (and an ASCII tail of the buffer), in
 * locals, without the state of the byte-by-byte path. Returns where it
 * stopped: the end, fewer than 4 bytes left, or
 * a byte that does not begin a well-formed sequence there (the byte-by-byte
 * path then finds what it is). The ranges are Table 3-7's, as lead_of's:
 * C2..DF 80..BF; E0 A0..BF, E1..EC 80..BF, ED 80..9F, EE..EF 80..BF, then
 * 80..BF; F0 90..BF, F1..F3 80..BF, F4 80..8F, then 80..BF twice.
 */
static size_t whole_run(const uint8_t *p, size_t i, size_t n)
{
	while (i + 4 <= n) {
		uint8_t b = p[i], c1 = p[i + 1];

		if (b < 0x80) {
			i++;
			while (i + 8 <= n && ascii8(p + i))
				i += 8;
			/* Fewer than 8 bytes left: when the buffer's last 8
			 * are ASCII, so are they (the bytes before i that
			 * this word reads again were checked already). */
			if (i + 8 > n && n >= 8 && ascii8(p + n - 8))
				return n;
		} else if (b >= 0xc2 && b <= 0xdf) {
			if ((c1 & 0xc0) != 0x80)
				break;
			i += 2;
		} else if (b >= 0xe0 && b <= 0xef) {
			if ((c1 & 0xc0) != 0x80 || (p[i + 2] & 0xc0) != 0x80 ||
			    (b == 0xe0 && c1 < 0xa0) || (b == 0xed && c1 > 0x9f))
				break;
			i += 3;
		} else if (b >= 0xf0 && b <= 0xf4) {
			if ((c1 & 0xc0) != 0x80 || (p[i + 2] & 0xc0) != 0x80 ||
			    (p[i + 3] & 0xc0) != 0x80 || (b == 0xf0 && c1 < 0x90) ||
			    (b == 0xf4 && c1 > 0x8f))
				break;
			i += 4;
		} else {
			break;
		}
	}
	return i;
}

int rs_utf8_feed(struct rs_utf8 *v, const uint8_t *p, size_t n)
{
	size_t i = 0;

	if (v->bad)
		return -1;
	while (i < n) {
		uint8_t b;

		/* At a character boundary: whole sequences at once. */
		if (v->need == 0) {
			i = whole_run(p, i, n);
			if (i >= n)
				break;
		}
		b = p[i];

		if (v->need > 0) {
			if (b < v->lo || b > v->hi) {
				v->bad = 1;
				return -1;
			}
			v->need--;
			v->lo = 0x80;
			v->hi = 0xbf;
			i++;
			continue;
		}
		if (b < 0x80) {
			/* The common case: skip whole words of ASCII. */
			i++;
			while (i + 8 <= n && ascii8(p + i))
				i += 8;
			continue;
		}
		lead_of(b, &v->need, &v->lo, &v->hi);
		if (v->need == 0xff) {
			v->need = 0;
			v->bad = 1;
			return -1;
		}
		i++;
	}
	assert(v->need <= 3);
	return 0;
}

int rs_utf8_complete(const struct rs_utf8 *v)
{
	return !v->bad && v->need == 0;
}

int rs_utf8_valid(const uint8_t *p, size_t n)
{
	struct rs_utf8 v = RS_UTF8_INIT;

	return rs_utf8_feed(&v, p, n) == 0 && rs_utf8_complete(&v);
}

static size_t put_fffd(uint8_t *out)
{
	out[0] = 0xef;
	out[1] = 0xbf;
	out[2] = 0xbd;
	return 3;
}

size_t rs_utf8_replace(const uint8_t *p, size_t n, uint8_t *out)
{
	size_t i = 0, o = 0;

	while (i < n) {
		uint8_t need, lo, hi;
		size_t start = i, k;

		if (p[i] < 0x80) {
			out[o++] = p[i++];
			continue;
		}
		lead_of(p[i], &need, &lo, &hi);
		if (need == 0xff) {
			o += put_fffd(out + o);
			i++;
			continue;
		}
		/*
		 * Take continuation bytes while they fit. A byte that does not
		 * fit ends the maximal subpart: one U+FFFD for it, and the
		 * byte is looked at again as the start of what follows.
		 */
		i++;
		for (k = 0; k < need; k++) {
			if (i >= n || p[i] < lo || p[i] > hi)
				break;
			lo = 0x80;
			hi = 0xbf;
			i++;
		}
		if (k == need) {
			memcpy(out + o, p + start, i - start);
			o += i - start;
		} else {
			o += put_fffd(out + o);
		}
	}
	return o;
}
