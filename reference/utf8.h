/*
 * utf8.h: a UTF-8 validator that works across buffer boundaries, and the
 * legacy decoder that replaces each ill-formed sequence with U+FFFD.
 *
 * Pure code: no I/O, no allocation, no process-wide state. Well-formed means
 * Unicode's Table 3-7 (RFC 3629): no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF.
 */
#ifndef WIRECHECK_UTF8_H
#define WIRECHECK_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * The validator's state between two buffers: at a character boundary,
 * inside a sequence (how many continuation bytes it still needs and the
 * range the next one must fall in, narrower than 80..BF only right after
 * E0, ED, F0 and F4), or ill-formed (for good). Zero-initialised
 * (RS_UTF8_INIT) it is at a character boundary.
 */
struct rs_utf8 {
	uint8_t state;  /* a state of utf8.c's DFA */
};
#define RS_UTF8_INIT { 0 }

/*
 * Feeds n bytes. Returns 0 while every byte so far can begin or continue a
 * well-formed sequence, -1 as soon as one cannot (and for every later call).
 * A sequence may be split across calls at any byte.
 */
int rs_utf8_feed(struct rs_utf8 *v, const uint8_t *p, size_t n);
/* 1 when every byte fed so far is well-formed and no sequence is open
 * (the text may end here), else 0. */
int rs_utf8_complete(const struct rs_utf8 *v);
/* One-shot: 1 when p[0, n) is well-formed UTF-8, else 0. */
int rs_utf8_valid(const uint8_t *p, size_t n);

/*
 * The legacy decode-and-encode of the by-kind strategy: writes p[0, n) to
 * out with each maximal subpart of an ill-formed sequence replaced by
 * U+FFFD (EF BF BD), the rule of the WHATWG Encoding Standard's decoder,
 * which node's Buffer#toString and Python's errors="replace" follow: `ff 68`
 * becomes `ef bf bd 68`, `e2 82 28` becomes `ef bf bd 28`. out must hold
 * 3 * n bytes (every input byte gives at most one U+FFFD). Returns the
 * number of bytes written.
 */
size_t rs_utf8_replace(const uint8_t *p, size_t n, uint8_t *out);

#endif
