/*
 * fuzz_http_parse.c: libFuzzer target for the request-head parser
 * (reference/http_parse.c).
 *
 * The first byte picks the bound on the head (0: RS_HTTP_MAX_HEAD, else
 * 4 to 1020 bytes, so that -431 is reached), the second seeds the prefix
 * lengths tried; the rest is the request, in a buffer of exactly its size
 * (ASan sees a read past it).
 *
 * Checked:
 * - the result is one of 0, a length, -400, -431, -501;
 * - every prefix (all of them up to 256 bytes, else 64 chosen ones and the
 *   ones around the head's end): a prefix of a complete head says 0 until
 *   the head is in, then the same length and the same head; a prefix of a
 *   refused one says 0 or the same error; of an incomplete one, 0;
 * - an accepted head: every pointer is inside the head; the request line
 *   is METHOD SP TARGET SP "HTTP/1.x" CRLF from byte 0, the fields follow
 *   in order, each NAME ":" OWS VALUE OWS CRLF with its value trimmed, and
 *   the head ends with CRLF CRLF; content_length and keep_alive are what
 *   the fields say, recomputed here;
 * - against a reference written here from the grammar in http_parse.h
 *   (split the bytes at CRLF, judge each line alone): when the first CRLF
 *   CRLF is within the bound, the parser's answer is the reference's,
 *   including which error; when there is none, no head is accepted.
 */
#include "http_parse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_http_parse: %s\n", what);
		abort();
	}
}

/* ------------------------------------------------------------------------ */
/* The reference: the grammar of http_parse.h, one line at a time.          */

static int tchar(uint8_t ch)
{
	static const char extra[] = "!#$%&'*+-.^_`|~";

	if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')
		return 1;
	if (ch >= '0' && ch <= '9')
		return 1;
	for (size_t i = 0; i < sizeof(extra) - 1; i++)
		if (ch == (uint8_t)extra[i])
			return 1;
	return 0;
}

static int vchar(uint8_t ch)
{
	return ch >= 0x21 && ch <= 0x7e;
}

static int value_char(uint8_t ch)
{
	return ch == ' ' || ch == '\t' || vchar(ch) || ch >= 0x80;
}

static int ows(uint8_t ch)
{
	return ch == ' ' || ch == '\t';
}

/* METHOD SP TARGET SP "HTTP/1." ("0" / "1"): the line without its CRLF. */
static int ref_request_line(const uint8_t *l, size_t n)
{
	size_t i = 0, m, t;

	while (i < n && tchar(l[i]))
		i++;
	m = i;
	if (m == 0 || i == n || l[i] != ' ')
		return 0;
	i++;
	t = i;
	while (i < n && vchar(l[i]))
		i++;
	if (i == t || i == n || l[i] != ' ')
		return 0;
	i++;
	return n - i == 8 && memcmp(l + i, "HTTP/1.", 7) == 0 &&
	       (l[i + 7] == '0' || l[i + 7] == '1');
}

/* NAME ":" OWS VALUE OWS; fills the name and the trimmed value. */
static int ref_field(const uint8_t *l, size_t n, size_t *name_len,
		     size_t *vstart, size_t *vend)
{
	size_t i = 0;

	while (i < n && tchar(l[i]))
		i++;
	if (i == 0 || i == n || l[i] != ':')
		return 0;
	*name_len = i;
	for (size_t k = i + 1; k < n; k++)
		if (!value_char(l[k]))
			return 0;
	*vstart = i + 1;
	*vend = n;
	while (*vstart < *vend && ows(l[*vstart]))
		(*vstart)++;
	while (*vend > *vstart && ows(l[*vend - 1]))
		(*vend)--;
	return 1;
}

static int name_is(const uint8_t *a, size_t n, const char *lit)
{
	if (n != strlen(lit))
		return 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = a[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (uint8_t)(ch + 32);
		if (ch != (uint8_t)lit[i])
			return 0;
	}
	return 1;
}

/* Whether the comma-separated list v holds tok, in any case. */
static int has_token(const uint8_t *v, size_t n, const char *tok)
{
	size_t s = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && v[i] != ',')
			continue;
		{
			size_t a = s, b = i;

			while (a < b && ows(v[a]))
				a++;
			while (b > a && ows(v[b - 1]))
				b--;
			if (name_is(v + a, b - a, tok))
				return 1;
		}
		s = i + 1;
	}
	return 0;
}

struct ref {
	long result;          /* what the parser must say */
	uint64_t length;      /* when it accepts: */
	int keep_alive;
};

/*
 * The head is buf[0, end), end just past its first CRLF CRLF. Judges the
 * lines in order as http_parse.h says: the first bad line is -400, a 65th
 * field -431; then the fields' meaning: a Content-Length that is not 1 to
 * 18 digits, two that differ, or one with a Transfer-Encoding, -400; a
 * Transfer-Encoding, -501.
 */
static struct ref reference(const uint8_t *b, size_t end)
{
	struct ref r = { 0, 0, 0 };
	size_t at = 0, nfields = 0;
	int minor = 0, have_len = 0, have_te = 0, bad_len = 0, close = 0, keep = 0;

	for (int line = 0;; line++) {
		size_t e = at;

		while (!(b[e] == '\r' && b[e + 1] == '\n'))
			e++;
		if (line == 0) {
			if (!ref_request_line(b, e)) {
				r.result = -400;
				return r;
			}
			minor = b[e - 1] - '0';
		} else if (e == at) {
			break;  /* the blank line */
		} else {
			size_t nl, vs, ve;

			/* A 65th line that starts as a field does (not CR)
			 * is one field too many, whatever follows. */
			if (nfields == RS_HTTP_MAX_HEADERS && b[at] != '\r') {
				r.result = -431;
				return r;
			}
			if (!ref_field(b + at, e - at, &nl, &vs, &ve)) {
				r.result = -400;
				return r;
			}
			nfields++;
			if (name_is(b + at, nl, "content-length")) {
				uint64_t v = 0;
				size_t dl = ve - vs;

				if (dl == 0 || dl > 18)
					bad_len = 1;
				for (size_t k = vs; k < ve && !bad_len; k++) {
					if (b[at + k] < '0' || b[at + k] > '9')
						bad_len = 1;
					else
						v = v * 10 + (uint64_t)(b[at + k] - '0');
				}
				if (!bad_len && have_len && v != r.length)
					bad_len = 1;
				r.length = v;
				have_len = 1;
			} else if (name_is(b + at, nl, "transfer-encoding")) {
				have_te = 1;
			} else if (name_is(b + at, nl, "connection")) {
				close |= has_token(b + at + vs, ve - vs, "close");
				keep |= has_token(b + at + vs, ve - vs, "keep-alive");
			}
		}
		at = e + 2;
	}
	check(at + 2 == end, "reference: lost its place");
	if (bad_len || (have_te && have_len))
		r.result = -400;
	else if (have_te)
		r.result = -501;
	else
		r.result = (long)end;
	if (!have_len || bad_len)
		r.length = 0;
	r.keep_alive = minor >= 1 ? !close : keep && !close;
	return r;
}

/* ------------------------------------------------------------------------ */
/* The checks.                                                              */

static int inside(const char *p, size_t n, const char *buf, size_t len)
{
	return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

/* An accepted head's own shape. */
static void check_head(const char *buf, ssize_t rc, const struct rs_http_request *q)
{
	size_t len = (size_t)rc, at;

	check(q->head_len == len, "head_len is not the result");
	check(len >= 4 && memcmp(buf + len - 4, "\r\n\r\n", 4) == 0,
	      "the head does not end with CRLF CRLF");
	check(q->method == buf && q->method_len > 0 &&
	      inside(q->method, q->method_len, buf, len), "method not at byte 0");
	check(q->target == q->method + q->method_len + 1 &&
	      inside(q->target, q->target_len, buf, len) && q->target_len > 0,
	      "target not after the method and a space");
	check(buf[q->method_len] == ' ' &&
	      q->target[q->target_len] == ' ', "request line: its spaces");
	at = q->method_len + 1 + q->target_len + 1;
	check(at + 10 <= len && memcmp(buf + at, "HTTP/1.", 7) == 0 &&
	      buf[at + 7] - '0' == q->minor && (q->minor == 0 || q->minor == 1) &&
	      buf[at + 8] == '\r' && buf[at + 9] == '\n', "request line: version");
	at += 10;
	check(q->nfields <= RS_HTTP_MAX_HEADERS, "too many fields");
	for (size_t k = 0; k < q->nfields; k++) {
		const struct rs_http_field *f = &q->fields[k];
		const char *end;

		check(f->name == buf + at && f->name_len > 0 &&
		      inside(f->name, f->name_len, buf, len), "field name not where the line starts");
		check(f->name[f->name_len] == ':', "field name not before a colon");
		check(inside(f->value, f->value_len, buf, len) &&
		      f->value >= f->name + f->name_len + 1, "field value out of its line");
		for (const char *p = f->name + f->name_len + 1; p < f->value; p++)
			check(ows((uint8_t)*p), "field value: not trimmed at its start");
		if (f->value_len > 0)
			check(!ows((uint8_t)f->value[0]) &&
			      !ows((uint8_t)f->value[f->value_len - 1]), "field value: not trimmed");
		end = f->value + f->value_len;
		while (ows((uint8_t)*end))
			end++;
		check(end[0] == '\r' && end[1] == '\n', "field line: no CRLF after the value");
		at = (size_t)(end + 2 - buf);
	}
	check(at + 2 == len, "the head is more than its lines");
}

/* The same head, each pointer at the same offset in its own buffer. */
static int same_head(const struct rs_http_request *a, const char *abuf,
		     const struct rs_http_request *b, const char *bbuf)
{
	if (a->method - abuf != b->method - bbuf || a->method_len != b->method_len ||
	    a->target - abuf != b->target - bbuf || a->target_len != b->target_len ||
	    a->minor != b->minor || a->nfields != b->nfields ||
	    a->content_length != b->content_length ||
	    a->keep_alive != b->keep_alive || a->head_len != b->head_len)
		return 0;
	for (size_t k = 0; k < a->nfields; k++)
		if (a->fields[k].name - abuf != b->fields[k].name - bbuf ||
		    a->fields[k].name_len != b->fields[k].name_len ||
		    a->fields[k].value - abuf != b->fields[k].value - bbuf ||
		    a->fields[k].value_len != b->fields[k].value_len)
			return 0;
	return 1;
}

/* The first k bytes, in a buffer of exactly k bytes, against the whole's
 * result (whole, its head wq in wbuf). */
static void check_prefix(const char *wbuf, size_t k, size_t max, ssize_t whole,
			 const struct rs_http_request *wq)
{
	struct rs_http_request q;
	char *pre = malloc(k ? k : 1);
	ssize_t rc;

	check(pre != NULL, "out of memory");
	if (k)
		memcpy(pre, wbuf, k);
	rc = rs_http_parse_request(pre, k, max, &q);
	if (whole > 0 && k >= (size_t)whole)
		check(rc == whole && same_head(&q, pre, wq, wbuf),
		      "a prefix holding the whole head gave another result or head");
	else if (whole >= 0)
		check(rc == 0, "a prefix of a good (or unfinished) head was refused");
	else
		check(rc == 0 || rc == whole, "a prefix of a refused head gave another error");
	free(pre);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_http_request q;
	size_t max, n, limit, end = 0;
	unsigned seed;
	char *buf;
	ssize_t rc;

	if (size < 2)
		return 0;
	max = data[0] == 0 ? RS_HTTP_MAX_HEAD : (size_t)data[0] * 4;
	seed = data[1] * 2654435761u + 1;
	n = size - 2;
	buf = malloc(n ? n : 1);
	check(buf != NULL, "out of memory");
	if (n)
		memcpy(buf, data + 2, n);
	memset(&q, 0, sizeof(q));
	rc = rs_http_parse_request(buf, n, max, &q);
	check(rc == 0 || rc == -400 || rc == -431 || rc == -501 ||
	      (rc > 0 && (size_t)rc <= n && (size_t)rc <= max),
	      "a result the contract does not have");
	if (rc > 0)
		check_head(buf, rc, &q);

	/* The reference, on the bytes the bound lets the parser see. */
	limit = n < max ? n : max;
	for (size_t i = 0; i + 4 <= limit; i++)
		if (memcmp(buf + i, "\r\n\r\n", 4) == 0) {
			end = i + 4;
			break;
		}
	if (end > 0) {
		struct ref r = reference((const uint8_t *)buf, end);

		if (r.result != rc)
			fprintf(stderr, "fuzz_http_parse: parser %zd, reference %ld\n",
				rc, r.result);
		check(r.result == rc, "the parser and the reference disagree");
		if (rc > 0)
			check(q.content_length == r.length && q.keep_alive == r.keep_alive,
			      "content_length or keep_alive is not what the fields say");
	} else {
		check(rc <= 0, "a head accepted without CRLF CRLF within the bound");
	}

	/* Prefixes: every one of a short input, else 64 chosen by the seed;
	 * and the two around a head's end. */
	{
		size_t tries = n <= 256 ? n : 64;

		for (size_t t = 0; t < tries; t++) {
			seed = seed * 1103515245u + 12345u;
			check_prefix(buf, n <= 256 ? t : seed % n, max, rc, &q);
		}
		if (rc > 0) {
			check_prefix(buf, (size_t)rc - 1, max, rc, &q);
			check_prefix(buf, (size_t)rc, max, rc, &q);
		}
	}
	free(buf);
	return 0;
}
