/*
 * utf8.c: the UTF-8 validator (incremental) and the legacy U+FFFD decoder.
 * The byte ranges are those of Unicode 15, Table 3-7 "Well-Formed UTF-8
 * Byte Sequences".
 */
#include "utf8.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define UTF8_HAVE_SSSE3 1
#endif

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

/*
 * The validator is a DFA over Table 3-7, its transitions packed as shifts
 * (the "shift-based DFA"): a state is a multiple of 6, and row[b] holds,
 * at bits [s, s + 6) for each state s, the state that byte b leads to from
 * s. One byte is then a load that does not wait for the state and one
 * shift that does: next = row[b] >> s, of which the low 6 bits count. The
 * states: at a character boundary (0, so that a zeroed rs_utf8 is at
 * one), ill-formed (absorbing), 1, 2 or 3 continuation bytes still
 * needed in 80..BF, and the four leads whose next byte has a narrower
 * range (E0: A0..BF, ED: 80..9F, F0: 90..BF, F4: 80..8F).
 */
enum {
	U_ACC = 0, U_ERR = 6, U_T1 = 12, U_T2 = 18, U_T3 = 24,
	U_E0 = 30, U_ED = 36, U_F0 = 42, U_F4 = 48
};

/* A row: the next state from each state; from U_ERR always U_ERR. */
#define U_ROW(acc, t1, t2, t3, e0, ed, f0, f4)                               \
	((uint64_t)(acc) << U_ACC | (uint64_t)U_ERR << U_ERR |                  \
	 (uint64_t)(t1) << U_T1 | (uint64_t)(t2) << U_T2 |                      \
	 (uint64_t)(t3) << U_T3 | (uint64_t)(e0) << U_E0 |                      \
	 (uint64_t)(ed) << U_ED | (uint64_t)(f0) << U_F0 |                      \
	 (uint64_t)(f4) << U_F4)

/* From a boundary only: an ASCII byte, or a lead opening state to. */
#define U_AT_BOUNDARY(to) \
	U_ROW(to, U_ERR, U_ERR, U_ERR, U_ERR, U_ERR, U_ERR, U_ERR)
#define U_ASCII U_AT_BOUNDARY(U_ACC)
#define U_BAD U_AT_BOUNDARY(U_ERR)
/* Continuation bytes, by the three ranges the narrowed leads cut. */
#define U_80_8F U_ROW(U_ERR, U_ACC, U_T1, U_T2, U_ERR, U_T1, U_ERR, U_T2)
#define U_90_9F U_ROW(U_ERR, U_ACC, U_T1, U_T2, U_ERR, U_T1, U_T2, U_ERR)
#define U_A0_BF U_ROW(U_ERR, U_ACC, U_T1, U_T2, U_T1, U_ERR, U_T2, U_ERR)

#define U_X4(r) r, r, r, r
#define U_X16(r) U_X4(r), U_X4(r), U_X4(r), U_X4(r)

static const uint64_t utf8_row[] = {
	/* 00..7F */
	U_X16(U_ASCII), U_X16(U_ASCII), U_X16(U_ASCII), U_X16(U_ASCII),
	U_X16(U_ASCII), U_X16(U_ASCII), U_X16(U_ASCII), U_X16(U_ASCII),
	/* 80..BF */
	U_X16(U_80_8F), U_X16(U_90_9F), U_X16(U_A0_BF), U_X16(U_A0_BF),
	/* C0..C1, never; C2..DF, one more byte */
	U_BAD, U_BAD, U_AT_BOUNDARY(U_T1), U_AT_BOUNDARY(U_T1),
	U_X4(U_AT_BOUNDARY(U_T1)), U_X4(U_AT_BOUNDARY(U_T1)),
	U_X4(U_AT_BOUNDARY(U_T1)), U_X16(U_AT_BOUNDARY(U_T1)),
	/* E0, E1..EC, ED, EE..EF */
	U_AT_BOUNDARY(U_E0), U_AT_BOUNDARY(U_T2), U_AT_BOUNDARY(U_T2),
	U_AT_BOUNDARY(U_T2), U_X4(U_AT_BOUNDARY(U_T2)),
	U_X4(U_AT_BOUNDARY(U_T2)), U_AT_BOUNDARY(U_T2),
	U_AT_BOUNDARY(U_ED), U_AT_BOUNDARY(U_T2), U_AT_BOUNDARY(U_T2),
	/* F0, F1..F3, F4, F5..FF never */
	U_AT_BOUNDARY(U_F0), U_AT_BOUNDARY(U_T3), U_AT_BOUNDARY(U_T3),
	U_AT_BOUNDARY(U_T3), U_AT_BOUNDARY(U_F4), U_BAD, U_BAD, U_BAD,
	U_X4(U_BAD), U_X4(U_BAD)
};
_Static_assert(sizeof(utf8_row) / sizeof(utf8_row[0]) == 256,
	       "a row for every byte");

/* True when the 8 bytes at p are all ASCII. */
static int ascii8(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return (w & UINT64_C(0x8080808080808080)) == 0;
}

/* One byte: the state after b from s. The low 6 bits of the result are
 * the state; the rest is the row's other fields, which the next shift
 * ignores (its count is taken mod 64, as & 63 says). */
static inline uint64_t utf8_step(uint64_t s, uint8_t b)
{
	return utf8_row[b] >> (s & 63);
}

#ifdef UTF8_HAVE_SSSE3
/*
 * Whole blocks of 16 bytes with SSSE3, from a character boundary: the
 * "lookup" algorithm of Keiser and Lemire ("Validating UTF-8 In Less Than
 * One Instruction Per Byte", 2021). Each byte with the one before it is
 * classified by three table lookups (the high and low nibble of the byte
 * before, the high nibble of this one) into the errors the pair can show,
 * whose AND is what the pair does show; a continuation byte two or three
 * after a lead of 3 or 4 bytes is expected, and one anywhere else is an
 * error. The bits: */
enum {
	V_TOO_SHORT = 1 << 0,   /* a lead, then no continuation */
	V_TOO_LONG = 1 << 1,    /* ASCII, then a continuation */
	V_OVERLONG_3 = 1 << 2,  /* E0 80..9F */
	V_TOO_LARGE = 1 << 3,   /* F4 90..BF, F5.. */
	V_SURROGATE = 1 << 4,   /* ED A0..BF */
	V_OVERLONG_2 = 1 << 5,  /* C0, C1 */
	V_TOO_LARGE_1000 = 1 << 6, /* F5..FF 80..8F */
	V_OVERLONG_4 = 1 << 6,  /* F0 80..8F */
	V_TWO_CONTS = 1 << 7,   /* a continuation, then another */
	V_CARRY = V_TOO_SHORT | V_TOO_LONG | V_TWO_CONTS
};

#define V_LARGE (V_CARRY | V_TOO_LARGE | V_TOO_LARGE_1000)

/* The errors a pair can show, by the byte before's high nibble, its low
 * nibble, and this byte's high nibble. */
static const uint8_t utf8_high1[16] = {
	V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG,
	V_TOO_LONG, V_TOO_LONG, V_TOO_LONG, V_TOO_LONG,
	V_TWO_CONTS, V_TWO_CONTS, V_TWO_CONTS, V_TWO_CONTS,
	V_TOO_SHORT | V_OVERLONG_2,
	V_TOO_SHORT,
	V_TOO_SHORT | V_OVERLONG_3 | V_SURROGATE,
	V_TOO_SHORT | V_TOO_LARGE | V_TOO_LARGE_1000 | V_OVERLONG_4
};
static const uint8_t utf8_low1[16] = {
	V_CARRY | V_OVERLONG_3 | V_OVERLONG_2 | V_OVERLONG_4,
	V_CARRY | V_OVERLONG_2,
	V_CARRY, V_CARRY,
	V_CARRY | V_TOO_LARGE,
	V_LARGE, V_LARGE, V_LARGE, V_LARGE, V_LARGE, V_LARGE, V_LARGE, V_LARGE,
	V_LARGE | V_SURROGATE,
	V_LARGE, V_LARGE
};
static const uint8_t utf8_high2[16] = {
	V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT,
	V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT,
	V_TOO_LONG | V_OVERLONG_2 | V_TWO_CONTS | V_OVERLONG_3 |
		V_TOO_LARGE_1000 | V_OVERLONG_4,
	V_TOO_LONG | V_OVERLONG_2 | V_TWO_CONTS | V_OVERLONG_3 | V_TOO_LARGE,
	V_TOO_LONG | V_OVERLONG_2 | V_TWO_CONTS | V_SURROGATE | V_TOO_LARGE,
	V_TOO_LONG | V_OVERLONG_2 | V_TWO_CONTS | V_SURROGATE | V_TOO_LARGE,
	V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT, V_TOO_SHORT
};
/* Above these, the last three bytes of a block leave a sequence open. */
static const uint8_t utf8_open_max[16] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xf0 - 1, 0xe0 - 1, 0xc0 - 1
};

__attribute__((target("ssse3"))) static inline __m128i
utf8_table(const uint8_t t[16])
{
	return _mm_loadu_si128((const __m128i *)(const void *)t);
}

/* Whether any bit of x is set (SSE2; SSE4.1's ptest is not assumed). */
__attribute__((target("ssse3"))) static inline int utf8_any(__m128i x)
{
	return _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_setzero_si128())) !=
	       0xffff;
}

__attribute__((target("ssse3"))) static size_t
utf8_blocks(const uint8_t *p, size_t n, int *bad)
{
	const __m128i high1 = utf8_table(utf8_high1);
	const __m128i low1 = utf8_table(utf8_low1);
	const __m128i high2 = utf8_table(utf8_high2);
	const __m128i open_max = utf8_table(utf8_open_max);
	const __m128i nib = _mm_set1_epi8(0x0f);
	__m128i prev = _mm_setzero_si128(), err = _mm_setzero_si128();
	__m128i open = _mm_setzero_si128();
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m128i in = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		__m128i prev1, prev2, prev3, sc, must23;

		if (_mm_movemask_epi8(in) == 0) {
			/* ASCII: only a sequence the block before left open. */
			err = _mm_or_si128(err, open);
			prev = in;
			open = _mm_setzero_si128();
			continue;
		}
		prev1 = _mm_alignr_epi8(in, prev, 15);
		prev2 = _mm_alignr_epi8(in, prev, 14);
		prev3 = _mm_alignr_epi8(in, prev, 13);
		sc = _mm_and_si128(
			_mm_and_si128(
				_mm_shuffle_epi8(high1, _mm_and_si128(
					_mm_srli_epi16(prev1, 4), nib)),
				_mm_shuffle_epi8(low1, _mm_and_si128(prev1, nib))),
			_mm_shuffle_epi8(high2, _mm_and_si128(
				_mm_srli_epi16(in, 4), nib)));
		must23 = _mm_or_si128(
			_mm_subs_epu8(prev2, _mm_set1_epi8((char)(0xe0 - 0x80))),
			_mm_subs_epu8(prev3, _mm_set1_epi8((char)(0xf0 - 0x80))));
		must23 = _mm_and_si128(must23, _mm_set1_epi8((char)0x80));
		err = _mm_or_si128(err, _mm_xor_si128(must23, sc));
		open = _mm_subs_epu8(in, open_max);
		prev = in;
		if ((i & 1023) == 1008 && utf8_any(err))
			break;
	}
	*bad = utf8_any(err);
	return i;
}
#endif

int rs_utf8_feed(struct rs_utf8 *v, const uint8_t *p, size_t n)
{
	uint64_t s = v->state;
	size_t i = 0;

	if (s == U_ERR)
		return -1;
#ifdef UTF8_HAVE_SSSE3
	/* From a boundary, whole blocks of 16 with vectors; then the DFA
	 * from the start of a sequence the blocks' end leaves open (the
	 * blocks check every byte against the ones before it, not what a
	 * lead at their end needs after it). */
	if (s == U_ACC && n >= 32 && __builtin_cpu_supports("ssse3")) {
		int bad;

		i = utf8_blocks(p, n, &bad);
		if (bad) {
			v->state = U_ERR;
			return -1;
		}
		for (size_t k = 1; k <= 3 && k <= i; k++) {
			uint8_t b = p[i - k];

			if (b < 0x80)
				break;
			if (b >= 0xc0) {
				/* A lead: open at i when its length passes i. */
				if (k < (b >= 0xf0 ? 4u : b >= 0xe0 ? 3u : 2u))
					i -= k;
				break;
			}
		}
	}
#endif
	while (i + 8 <= n) {
		/* At a boundary, whole words of ASCII at once. */
		if ((s & 63) == U_ACC && ascii8(p + i)) {
			i += 8;
			continue;
		}
		/* Unrolled: the steps are a chain through s, the loads not. */
		s = utf8_step(s, p[i]);
		s = utf8_step(s, p[i + 1]);
		s = utf8_step(s, p[i + 2]);
		s = utf8_step(s, p[i + 3]);
		s = utf8_step(s, p[i + 4]);
		s = utf8_step(s, p[i + 5]);
		s = utf8_step(s, p[i + 6]);
		s = utf8_step(s, p[i + 7]);
		i += 8;
		if ((s & 63) == U_ERR)
			break;
	}
	while (i < n && (s & 63) != U_ERR)
		s = utf8_step(s, p[i++]);
	v->state = (uint8_t)(s & 63);
	return v->state == U_ERR ? -1 : 0;
}

int rs_utf8_complete(const struct rs_utf8 *v)
{
	return v->state == U_ACC;
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
