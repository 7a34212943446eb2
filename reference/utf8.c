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

int rs_utf8_feed(struct rs_utf8 *v, const uint8_t *p, size_t n)
{
	size_t i = 0;

	if (v->bad)
		return -1;
	while (i < n) {
		uint8_t b = p[i];

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
