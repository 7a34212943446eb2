/*
 * fuzz_chunk.c: libFuzzer target for the chunked framing encoder
 * (reference/chunk.c), judged by a strict decoder written here from RFC
 * 9112 section 7.1 (chunk-size in lower-case hex without leading zeros, no
 * extensions, no trailer fields: the only form the encoder may write).
 *
 * The first byte picks the mode.
 *
 * Writes (most inputs): the rest of the input is a list of calls, each a
 * byte (size class, final or not, try_write or write) and its size and
 * kernel budgets, as the HTTP layer makes them (reference/http.c): a plan,
 * then the kernel takes `budget` bytes of it (0 = EAGAIN, part, or all),
 * then the advance; a try_write leaves what the kernel did not take to the
 * next call, which offers the rest of the body from the offset on (with
 * more bytes, or fewer, or none); a write sends all. After a final call
 * whose body got out, the terminator's rest goes out in pieces. Body byte
 * i is input byte i mod size. Checked on every call: the plan is refused
 * exactly when the framing forbids it (the terminator decided; a final call
 * shorter than the open chunk's rest); its iovecs add up (total, body,
 * framing; an empty non-final call plans nothing); advance returns the body
 * bytes among those sent, and offset counts body bytes only; the
 * terminator is decided exactly when a final call's body got out whole.
 * After every send the wire so far is a valid prefix of a chunked body
 * whose data are the body bytes sent, and the chunk the decoder is inside
 * has as many bytes left as the encoder says (open_left). At the end, a
 * decided and sent terminator ends the wire exactly there.
 *
 * Decode (first byte's low 2 bits 3): the rest is decoded as a chunked
 * body; the decoder must not crash, and a body it accepts whole must be
 * what the encoder writes for the same chunks (one write per chunk, then
 * the final call): the strict form is the encoder's form, byte for byte.
 */
#include "chunk.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_chunk: %s\n", what);
		abort();
	}
}

/* ------------------------------------------------------------------------ */
/* The strict decoder: one byte at a time (data bytes in runs), any prefix. */

enum dstate {
	D_SIZE_FIRST,  /* a chunk-size's first digit */
	D_SIZE,        /* more digits, or CR */
	D_SIZE_LF,
	D_DATA,
	D_DATA_CR,     /* the CRLF after a chunk's data */
	D_DATA_LF,
	D_LAST_CR,     /* "0" read: its CR */
	D_LAST_LF,
	D_END_CR,      /* the empty trailer section's CRLF */
	D_END_LF,
	D_DONE,
	D_ERROR,
};

struct decoder {
	enum dstate st;
	uint64_t size;       /* the chunk being read */
	uint64_t left;       /* its data bytes not yet read */
	int digits;
	uint8_t *out;        /* the data, when out_cap > 0 */
	size_t out_len, out_cap;
	uint64_t *sizes;     /* every chunk's size, when sizes_cap > 0 */
	size_t nsizes, sizes_cap;
	size_t used;         /* input bytes read */
};

static int hex_value(uint8_t ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Reads in[0, n); stops at an error or the end of the body. */
static void decode(struct decoder *d, const uint8_t *in, size_t n)
{
	size_t i = 0;

	while (i < n && d->st != D_ERROR && d->st != D_DONE) {
		uint8_t ch = in[i];
		int h;

		switch (d->st) {
		case D_SIZE_FIRST:
			h = hex_value(ch);
			if (h < 0) {
				d->st = D_ERROR;
				break;
			}
			d->size = (uint64_t)h;
			d->digits = 1;
			d->st = h == 0 ? D_LAST_CR : D_SIZE;
			i++;
			break;
		case D_SIZE:
			if (ch == '\r') {
				d->st = D_SIZE_LF;
				i++;
				break;
			}
			h = hex_value(ch);
			if (h < 0 || d->digits == 16) {
				d->st = D_ERROR;
				break;
			}
			d->size = d->size * 16 + (uint64_t)h;
			d->digits++;
			i++;
			break;
		case D_SIZE_LF:
			if (ch != '\n') {
				d->st = D_ERROR;
				break;
			}
			if (d->nsizes < d->sizes_cap)
				d->sizes[d->nsizes] = d->size;
			d->nsizes++;
			d->left = d->size;
			d->st = D_DATA;
			i++;
			break;
		case D_DATA: {
			size_t run = n - i < d->left ? n - i : (size_t)d->left;

			if (d->out_cap > 0) {
				check(d->out_len + run <= d->out_cap, "decoder: out of room");
				memcpy(d->out + d->out_len, in + i, run);
			}
			d->out_len += run;
			d->left -= run;
			i += run;
			if (d->left == 0)
				d->st = D_DATA_CR;
			break;
		}
		case D_DATA_CR:
		case D_LAST_CR:
		case D_END_CR:
			if (ch != '\r') {
				d->st = D_ERROR;
				break;
			}
			d->st = d->st + 1;  /* its LF */
			i++;
			break;
		case D_DATA_LF:
		case D_LAST_LF:
		case D_END_LF:
			if (ch != '\n') {
				d->st = D_ERROR;
				break;
			}
			d->st = d->st == D_DATA_LF ? D_SIZE_FIRST :
				d->st == D_LAST_LF ? D_END_CR : D_DONE;
			i++;
			break;
		case D_DONE:
		case D_ERROR:
			break;
		}
	}
	d->used += i;
}

/* ------------------------------------------------------------------------ */
/* Decode mode.                                                             */

static void decode_mode(const uint8_t *in, size_t n)
{
	uint64_t sizes[256];
	struct decoder d = { .sizes = sizes, .sizes_cap = 256 };
	struct rs_chunk c;
	uint8_t *wire;
	size_t wlen = 0;

	decode(&d, in, n);
	check(d.used <= n, "decoder read past its input");
	if (d.st != D_DONE || d.used != n || d.nsizes > d.sizes_cap)
		return;
	/* Accepted whole: the encoder writes the same bytes for the same
	 * chunks. The data are the input's own bytes, in place. */
	wire = malloc(n);
	check(wire != NULL, "out of memory");
	rs_chunk_init(&c);
	{
		size_t at = 0;  /* where the next chunk's data start in in */

		for (size_t k = 0; k <= d.nsizes; k++) {
			int final = k == d.nsizes;
			size_t len = final ? 0 : (size_t)sizes[k];
			struct rs_chunk_plan p;

			if (!final) {
				/* Past the header ("\r\n" first after a chunk). */
				at += (k > 0 ? 2 : 0);
				while (in[at] != '\r')
					at++;
				at += 2;
			}
			check(rs_chunk_plan(&c, in + at, len, final, &p) == 0,
			      "decode: the encoder refused a chunk");
			for (int i = 0; i < p.n; i++) {
				check(wlen + p.iov[i].iov_len <= n,
				      "decode: the encoder wrote more than the input");
				memcpy(wire + wlen, p.iov[i].iov_base, p.iov[i].iov_len);
				wlen += p.iov[i].iov_len;
			}
			check(rs_chunk_advance(&c, &p, p.total) == len,
			      "decode: advance counted other body bytes");
			at += len;
		}
	}
	check(rs_chunk_done(&c), "decode: not done after the final call");
	check(wlen == n && memcmp(wire, in, n) == 0,
	      "decode: the encoder wrote other bytes than the accepted body");
	free(wire);
}

/* ------------------------------------------------------------------------ */
/* Writes mode.                                                             */

#define MAX_BODY (72u * 1024u)
#define MAX_CALLS 96

struct reader {
	const uint8_t *p;
	size_t n, at;
};

static int more(const struct reader *r)
{
	return r->at < r->n;
}

static uint8_t next(struct reader *r)
{
	return r->at < r->n ? r->p[r->at++] : 0xff;
}

/* What the kernel takes of a send: 0xff (or no input left) all, 0 none
 * (EAGAIN), below 0x80 that many bytes, else up to 65024. */
static size_t budget(struct reader *r, size_t total)
{
	uint8_t b = next(r);
	size_t n;

	if (b == 0xff)
		return total;
	n = b < 0x80 ? b : (size_t)(b & 0x7f) << 9;
	return n < total ? n : total;
}

struct run {
	const uint8_t *src;  /* body byte i is src[i % srclen] */
	size_t srclen;
	struct decoder d;    /* the wire so far, decoded as it goes out */
	size_t wlen;
	uint64_t body_out;   /* body bytes the kernel took */
};

static uint8_t decoded[MAX_BODY];

/* Whether p[0, n) are the body bytes from i on. In runs, with memcmp: a
 * loop of byte compares would be traced one by one by libFuzzer's
 * comparison hooks and cost 20 times more. */
static int body_is(const struct run *r, uint64_t i, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t off = (size_t)(i % r->srclen);
		size_t run = r->srclen - off < n ? r->srclen - off : n;

		if (memcmp(p, r->src + off, run) != 0)
			return 0;
		p += run;
		i += run;
		n -= run;
	}
	return 1;
}

/* The body bytes from i on into p[0, n), in runs. */
static void body_fill(const struct run *r, uint64_t i, uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t off = (size_t)(i % r->srclen);
		size_t run = r->srclen - off < n ? r->srclen - off : n;

		memcpy(p, r->src + off, run);
		p += run;
		i += run;
		n -= run;
	}
}

/* Bytes to the wire: decoded at once. The wire so far must be a valid
 * chunked prefix whose data are the body bytes sent. */
static void wire_put(struct run *r, const void *p, size_t n)
{
	size_t had = r->d.out_len;

	decode(&r->d, p, n);
	r->wlen += n;
	check(r->d.st != D_ERROR, "the wire is no chunked body");
	check(r->d.used == r->wlen, "bytes after the end of the chunked body");
	check(body_is(r, had, decoded + had, r->d.out_len - had),
	      "the wire holds other body bytes");
}

/* After a send: the decoder has every body byte sent; the chunk it is
 * inside has open_left bytes to come; it is at the end of the body exactly
 * when the encoder is done. */
static void check_wire(const struct run *r, const struct rs_chunk *c)
{
	int complete = rs_chunk_done(c);

	check(r->d.out_len == r->body_out, "the wire holds other body bytes than sent");
	if (r->d.st == D_DATA)
		check(c->open_left == r->d.left, "open_left is not the open chunk's rest");
	if (r->d.st == D_DATA_CR || (r->d.st == D_SIZE_FIRST && r->wlen == 0))
		check(c->open_left == 0, "open_left set between chunks");
	check((r->d.st == D_DONE) == complete, complete ?
	      "the terminator went out but the wire does not end there" :
	      "the wire ends the body but the encoder is not done");
}

/* One plan sent in part: the plan's first n bytes to the wire, advanced. */
static void send_part(struct run *r, struct rs_chunk *c,
		      const struct rs_chunk_plan *p, size_t n)
{
	size_t left = n, body = 0;

	for (int i = 0; i < p->n && left > 0; i++) {
		size_t take = p->iov[i].iov_len < left ? p->iov[i].iov_len : left;

		wire_put(r, p->iov[i].iov_base, take);
		if (p->part[i] == RS_CHUNK_CONT || p->part[i] == RS_CHUNK_NEW)
			body += take;
		left -= take;
	}
	check(rs_chunk_advance(c, p, n) == body,
	      "advance returned other than the body bytes sent");
	r->body_out += body;
	check(c->offset == r->body_out, "offset is not the body bytes sent");
}

/* A plan's own sums, and that it holds the offered bytes in order. */
static void check_plan(const struct rs_chunk_plan *p, const uint8_t *data,
		       size_t len, int final)
{
	size_t total = 0, body = 0, framing = 0, at = 0;

	check(p->n >= 0 && p->n <= RS_CHUNK_MAX_IOV, "plan: iovec count");
	for (int i = 0; i < p->n; i++) {
		int is_body = p->part[i] == RS_CHUNK_CONT || p->part[i] == RS_CHUNK_NEW;

		check(p->iov[i].iov_len > 0, "plan: an empty iovec");
		if (is_body) {
			check((const uint8_t *)p->iov[i].iov_base == data + at,
			      "plan: body not from the caller's bytes in order");
			at += p->iov[i].iov_len;
			body += p->iov[i].iov_len;
		} else if (body == 0) {
			framing += p->iov[i].iov_len;
		}
		total += p->iov[i].iov_len;
	}
	check(total == p->total && body == p->body && framing == p->framing,
	      "plan: total, body or framing do not add up");
	check(body == len, "plan: not all the offered bytes");
	check(p->final == final, "plan: final");
	if (len == 0 && !final)
		check(p->total == 0, "plan: an empty write plans bytes");
}

static void writes_mode(const uint8_t *data, size_t size)
{
	struct reader rd = { data, size, 1 };
	struct run r = { .src = data, .srclen = size };
	struct rs_chunk c;
	int calls = 0;

	r.d.out = decoded;
	r.d.out_cap = sizeof(decoded);
	rs_chunk_init(&c);
	while (more(&rd) && calls++ < MAX_CALLS) {
		uint8_t op = next(&rd);
		int try = op & 1;
		int final = ((op >> 1) & 7) == 0;
		unsigned cls = op >> 5;
		size_t len, sent_before;
		uint8_t *buf;
		int ended_before = c.ended, want_rc, rounds = 0;

		switch (cls) {
		case 0: len = 0; break;
		case 1: case 2: case 3: len = next(&rd); break;
		case 4: case 5: len = (size_t)next(&rd) << 8 | next(&rd); break;
		case 6: len = (size_t)c.open_left; break;  /* the open chunk's rest */
		default: len = (size_t)c.open_left + (next(&rd) & 15); break;
		}
		if (r.body_out + len > MAX_BODY)
			len = 0;
		/* The caller's bytes: the body from the offset on, in a buffer
		 * of exactly len bytes (ASan sees a read past it). */
		buf = malloc(len ? len : 1);
		check(buf != NULL, "out of memory");
		body_fill(&r, r.body_out, buf, len);
		sent_before = 0;
		want_rc = ended_before || (final && len < c.open_left) ? -EINVAL : 0;
		for (;;) {
			struct rs_chunk_plan p;
			int rc = rs_chunk_plan(&c, buf + sent_before, len - sent_before,
					       final, &p);
			uint64_t body_before = r.body_out;

			check(rc == want_rc, rc ? "plan refused a call the framing allows" :
			      "plan took a call the framing forbids");
			if (rc < 0)
				break;
			check_plan(&p, buf + sent_before, len - sent_before, final);
			send_part(&r, &c, &p, try ? budget(&rd, p.total) : p.total);
			sent_before += (size_t)(r.body_out - body_before);
			if (final)
				check(c.ended == (sent_before == len),
				      "the terminator decided when the body was not out whole, or not when it was");
			else
				check(!c.ended, "the terminator decided by a non-final call");
			check_wire(&r, &c);
			/* A try_write returns to the caller when the kernel
			 * took less; the next call offers the rest. */
			if (try || sent_before == len)
				break;
			check(++rounds < 4, "a write that sends all did not finish");
		}
		free(buf);
		/* The terminator's rest, completed by the caller in pieces. */
		if (c.ended) {
			struct iovec t;
			int zero = 0;

			while (rs_chunk_trailer(&c, &t)) {
				size_t n = budget(&rd, t.iov_len);

				if (n == 0 && ++zero > 4)
					n = t.iov_len;
				wire_put(&r, t.iov_base, n);
				rs_chunk_trailer_sent(&c, n);
				check_wire(&r, &c);
			}
			check(rs_chunk_done(&c), "trailer sent but not done");
		}
	}
	check_wire(&r, &c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if ((data[0] & 3) == 3)
		decode_mode(data + 1, size - 1);
	else
		writes_mode(data, size);
	return 0;
}
