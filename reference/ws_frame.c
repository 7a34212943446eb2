/*
 * ws_frame.c: the WebSocket frame codec (RFC 6455, 5): the mask generator,
 * the encoder and the incremental parser. No I/O; see ws_frame.h.
 */
#include "ws_frame.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Mask keys.                                                               */

void rs_ws_rng_seed(struct rs_ws_rng *r, uint64_t seed)
{
	/* xorshift never leaves 0: map it to a fixed odd constant. */
	r->state = seed ? seed : UINT64_C(0x9E3779B97F4A7C15);
}

/* xorshift64* (Vigna): good enough for keys that only need to differ. */
static uint64_t rng_next(struct rs_ws_rng *r)
{
	uint64_t x = r->state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->state = x;
	return x * UINT64_C(2685821657736338717);
}

void rs_ws_rng_bytes(struct rs_ws_rng *r, uint8_t *out, size_t n)
{
	while (n > 0) {
		uint64_t v = rng_next(r);
		size_t k = n < 8 ? n : 8;

		memcpy(out, &v, k);
		out += k;
		n -= k;
	}
}

/*
 * XORs n bytes of src with k (the key as it stands at src's first byte)
 * into dst, 8 bytes at a time, then 4, then one; returns the OR of every
 * byte written, whose top bits say whether any of them was not ASCII.
 * The words go through memcpy: no alignment asked of either pointer. A
 * word of the key is its 4 bytes twice, the same bytes in memory on
 * either byte order.
 */
static inline uint64_t mask_words(uint8_t *dst, const uint8_t *src, size_t n,
				  const uint8_t k[4])
{
	uint64_t acc = 0, w, kw;
	uint32_t k32, v;
	size_t i = 0;

	memcpy(&k32, k, 4);
	kw = (uint64_t)k32 << 32 | k32;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, src + i, 8);
		w ^= kw;
		memcpy(dst + i, &w, 8);
		acc |= w;
	}
	if (i + 4 <= n) {
		memcpy(&v, src + i, 4);
		v ^= k32;
		memcpy(dst + i, &v, 4);
		acc |= v;
		i += 4;
	}
	/* i is a multiple of 4 here: the key starts again at k[0]. */
	for (; i < n; i++) {
		dst[i] = src[i] ^ k[i & 3];
		acc |= dst[i];
	}
	return acc;
}

void rs_ws_mask(uint8_t *dst, const uint8_t *src, size_t n,
		const uint8_t key[4], uint64_t at)
{
	unsigned s = (unsigned)(at & 3);
	const uint8_t k[4] = { key[s], key[(s + 1) & 3], key[(s + 2) & 3],
			       key[(s + 3) & 3] };

#ifdef __SSE2__
	/* Whole blocks of 16 first (SSE2 is x86-64's baseline): the key word
	 * four times, the same bytes in memory as k repeated. */
	{
		uint32_t k32;
		size_t i = 0;

		memcpy(&k32, k, 4);
		if (n >= 16) {
			const __m128i kv = _mm_set1_epi32((int)k32);

			for (; i + 16 <= n; i += 16) {
				__m128i w = _mm_loadu_si128(
					(const __m128i *)(const void *)(src + i));

				_mm_storeu_si128((__m128i *)(void *)(dst + i),
						 _mm_xor_si128(w, kv));
			}
		}
		/* i is a multiple of 16: the key starts again at k[0]. */
		(void)mask_words(dst + i, src + i, n - i, k);
	}
#else
	(void)mask_words(dst, src, n, k);
#endif
}

/* ------------------------------------------------------------------------ */
/* The encoder.                                                             */

size_t rs_ws_header(uint8_t out[RS_WS_MAX_HEADER], int fin, int rsv1,
		    int opcode, uint64_t len, const uint8_t *key)
{
	size_t h = 2;

	out[0] = (uint8_t)((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) |
			   (opcode & 0x0f));
	out[1] = key ? 0x80 : 0;
	if (len <= 125) {
		out[1] |= (uint8_t)len;
	} else if (len <= 0xffff) {
		out[1] |= 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		h = 4;
	} else {
		out[1] |= 127;
		for (int i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
		h = 10;
	}
	if (key) {
		memcpy(out + h, key, 4);
		h += 4;
	}
	return h;
}

void rs_ws_encoder_begin(struct rs_ws_encoder *e, int fin, int rsv1,
			 int opcode, const void *payload, size_t len,
			 const uint8_t *key)
{
	e->hlimit = (uint8_t)rs_ws_header(e->head, fin, rsv1, opcode, len, key);
	e->hmark = 0;
	e->masked = key != NULL;
	if (key)
		memcpy(e->key, key, 4);
	e->payload = payload;
	e->pmark = 0;
	e->plen = len;
}

size_t rs_ws_encoder_write(struct rs_ws_encoder *e, uint8_t *out, size_t cap)
{
	size_t w = 0;

	if (e->hmark < e->hlimit) {
		size_t k = (size_t)(e->hlimit - e->hmark);

		if (k > cap)
			k = cap;
		memcpy(out, e->head + e->hmark, k);
		e->hmark = (uint8_t)(e->hmark + k);
		w = k;
	}
	if (e->hmark == e->hlimit && e->pmark < e->plen && w < cap) {
		uint64_t left = e->plen - e->pmark;
		size_t k = cap - w;

		if (left < k)
			k = (size_t)left;
		if (e->masked)
			rs_ws_mask(out + w, e->payload + e->pmark, k, e->key,
				   e->pmark);
		else
			memcpy(out + w, e->payload + e->pmark, k);
		e->pmark += k;
		w += k;
	}
	assert(e->hmark <= e->hlimit && e->pmark <= e->plen);
	return w;
}

int rs_ws_encoder_done(const struct rs_ws_encoder *e)
{
	return e->hmark == e->hlimit && e->pmark == e->plen;
}

/* ------------------------------------------------------------------------ */
/* The frame of one send.                                                   */

int rs_ws_message_type(int by_kind, int kind, int binary)
{
	if (kind != RS_WS_KIND_TEXT && kind != RS_WS_KIND_BYTES)
		return -EINVAL;
	if (binary != RS_WS_BINARY_ABSENT && binary != 0 && binary != 1)
		return -EINVAL;
	if (!by_kind && binary != RS_WS_BINARY_ABSENT)
		return binary ? RS_WS_OP_BINARY : RS_WS_OP_TEXT;
	return kind == RS_WS_KIND_TEXT ? RS_WS_OP_TEXT : RS_WS_OP_BINARY;
}

size_t rs_ws_send_size(int by_kind, int kind, size_t len, int masked)
{
	size_t payload = by_kind && kind == RS_WS_KIND_TEXT ? 3 * len : len;

	return (masked ? RS_WS_MAX_HEADER : RS_WS_MAX_HEADER - 4) + payload;
}

long rs_ws_encode_send(struct rs_ws_fragments *f, int by_kind, int kind,
		       int binary, int fin, int rsv1, const uint8_t *key,
		       const void *data, size_t len, uint8_t *out, size_t cap)
{
	int type = rs_ws_message_type(by_kind, kind, binary);
	const uint8_t *payload = data;
	int opcode;
	size_t h;

	if (type < 0 || (fin != 0 && fin != 1))
		return -EINVAL;
	if (cap < rs_ws_send_size(by_kind, kind, len, key != NULL))
		return -ENOSPC;
	if (by_kind && kind == RS_WS_KIND_TEXT && !rs_utf8_valid(data, len)) {
		/* The legacy path: text made of the bytes and encoded again.
		 * Decoded past the largest header, then moved behind the
		 * header once its length is known. */
		len = rs_utf8_replace(data, len, out + RS_WS_MAX_HEADER);
		payload = out + RS_WS_MAX_HEADER;
	}
	/* npm ws's Sender: a continuation has opcode 0 and no RSV1 (RFC 7692
	 * 6.1: RSV1 only on a message's first frame). */
	opcode = f->open ? RS_WS_OP_CONT : type;
	if (f->open)
		rsv1 = 0;
	f->open = !fin;
	h = rs_ws_header(out, fin, rsv1, opcode, len, key);
	if (len == 0)
		;  /* data may be NULL then: no memmove of it */
	else if (key)
		rs_ws_mask(out + h, payload, len, key, 0);
	else
		memmove(out + h, payload, len);
	return (long)(h + len);
}

/* ------------------------------------------------------------------------ */
/* The parser.                                                              */

enum { ST_HEAD, ST_PAYLOAD, ST_ERROR, ST_CLOSED };

static int is_control(int opcode)
{
	return opcode >= 0x8;
}

int rs_ws_close_code_valid(int code)
{
	if (code >= 1000 && code <= 1003)
		return 1;
	if (code >= 1007 && code <= 1014)
		return 1;
	return code >= 3000 && code <= 4999;
}

void rs_ws_parser_init(struct rs_ws_parser *p,
		       const struct rs_ws_parser_options *opt)
{
	memset(p, 0, sizeof(*p));
	p->opt = *opt;
	p->state = ST_HEAD;
	p->hlimit = 2;
}

void rs_ws_parser_free(struct rs_ws_parser *p)
{
	free(p->msg);
	p->msg = NULL;
	p->msg_len = 0;
	p->msg_cap = 0;
}

/* Puts the parser in its error state and fills the ERROR event. */
static void fail(struct rs_ws_parser *p, struct rs_ws_event *ev, int code,
		 const char *problem)
{
	p->state = ST_ERROR;
	p->error_code = code;
	p->problem = problem;
	memset(ev, 0, sizeof(*ev));
	ev->kind = RS_WS_EV_ERROR;
	ev->code = code;
	ev->problem = problem;
	ev->offset = p->frame_start;
}

/*
 * The rules that the first two bytes decide (RFC 6455 5.2, 5.4, 5.5):
 * returns NULL when they hold, else the problem, with *code set.
 */
static const char *check_first_bytes(const struct rs_ws_parser *p, int *code)
{
	uint8_t b0 = p->head[0], b1 = p->head[1];
	int opcode = b0 & 0x0f, fin = b0 >> 7, rsv1 = (b0 >> 6) & 1;
	uint64_t len7 = b1 & 0x7f;

	*code = RS_WS_CLOSE_PROTOCOL;
	if (b0 & 0x30)
		return "RSV2 or RSV3 set";
	if (rsv1) {
		if (!p->opt.rsv1_ok)
			return "RSV1 set without an extension";
		if (opcode == RS_WS_OP_CONT || is_control(opcode))
			return "RSV1 set on a continuation or control frame";
	}
	if ((opcode > 0x2 && opcode < 0x8) || opcode > 0xa)
		return "a reserved opcode";
	if (is_control(opcode)) {
		if (!fin)
			return "a fragmented control frame";
		if (len7 > RS_WS_MAX_CONTROL)
			return "a control frame over 125 bytes";
	} else if (opcode == RS_WS_OP_CONT) {
		if (p->msg_opcode == 0)
			return "a continuation frame with no message to continue";
	} else if (p->msg_opcode != 0) {
		return "a new message inside a fragmented one";
	}
	if (p->opt.server && !(b1 & 0x80))
		return "an unmasked frame at a server";
	if (!p->opt.server && (b1 & 0x80))
		return "a masked frame at a client";
	return NULL;
}

/* Decodes the length and the key once the whole header is in. */
static const char *take_header(struct rs_ws_parser *p, int *code)
{
	uint64_t len = p->head[1] & 0x7f;
	size_t h = 2;

	*code = RS_WS_CLOSE_PROTOCOL;
	if (len == 126) {
		len = (uint64_t)p->head[2] << 8 | p->head[3];
		h = 4;
		if (len < 126)
			return "a 16-bit length under 126";
	} else if (len == 127) {
		len = 0;
		for (int i = 0; i < 8; i++)
			len = len << 8 | p->head[2 + i];
		h = 10;
		if (len >> 63)
			return "a 64-bit length with its top bit set";
		if (len <= 0xffff)
			return "a 64-bit length under 65536";
	}
	if (p->masked)
		memcpy(p->key, p->head + h, 4);
	p->plen = len;
	p->pmark = 0;
	/* A continuation adds to the message so far; a first frame starts
	 * one. Checked before the payload, as npm ws does, so an oversize
	 * message is refused before it is read. */
	if (!is_control(p->opcode) && p->opt.max_message &&
	    (len > p->opt.max_message ||
	     (p->opcode == RS_WS_OP_CONT ? p->msg_len : 0) + len >
		     p->opt.max_message)) {
		*code = RS_WS_CLOSE_TOO_BIG;
		return "a message over the maximum size";
	}
	return NULL;
}

/* Bytes of header needed once the first two are in. */
static uint8_t header_size(const uint8_t *head)
{
	uint8_t len7 = head[1] & 0x7f;
	uint8_t h = 2;

	if (len7 == 126)
		h += 2;
	else if (len7 == 127)
		h += 8;
	if (head[1] & 0x80)
		h += 4;
	return h;
}

static int msg_reserve(struct rs_ws_parser *p, size_t more)
{
	size_t need = p->msg_len + more, cap = p->msg_cap ? p->msg_cap : 256;
	uint8_t *m;

	if (need <= p->msg_cap)
		return 0;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	m = realloc(p->msg, cap);
	if (!m)
		return -ENOMEM;
	p->msg = m;
	p->msg_cap = cap;
	return 0;
}

/* Reads the header bytes; returns bytes used. ev is set on an error. */
static size_t read_header(struct rs_ws_parser *p, const uint8_t *in, size_t n,
			  struct rs_ws_event *ev)
{
	size_t used = 0;
	const char *problem;
	int code;

	while (used < n && p->hmark < p->hlimit) {
		p->head[p->hmark++] = in[used++];
		if (p->hmark == 2) {
			problem = check_first_bytes(p, &code);
			if (problem) {
				fail(p, ev, code, problem);
				return used;
			}
			p->fin = p->head[0] >> 7;
			p->rsv1 = (p->head[0] >> 6) & 1;
			p->opcode = p->head[0] & 0x0f;
			p->masked = p->head[1] >> 7;
			p->hlimit = header_size(p->head);
		}
	}
	if (p->hmark == p->hlimit) {
		problem = take_header(p, &code);
		if (problem) {
			fail(p, ev, code, problem);
			return used;
		}
		if (p->opcode != RS_WS_OP_CONT && !is_control(p->opcode)) {
			p->msg_opcode = p->opcode;
			p->msg_compressed = p->rsv1;
			p->msg_frames = 0;
			p->msg_len = 0;
			p->utf8 = (struct rs_utf8)RS_UTF8_INIT;
		}
		p->state = ST_PAYLOAD;
	}
	return used;
}

/* Reads payload bytes (unmasked into the message or the control buffer). */
static size_t read_payload(struct rs_ws_parser *p, const uint8_t *in,
			   size_t n, struct rs_ws_event *ev)
{
	uint64_t left = p->plen - p->pmark;
	size_t k = n < left ? n : (size_t)left;
	uint8_t *dst;

	if (k == 0)
		return 0;
	if (is_control(p->opcode)) {
		dst = p->ctl + p->pmark;
	} else {
		if (msg_reserve(p, k) < 0) {
			fail(p, ev, RS_WS_CLOSE_INTERNAL, "out of memory");
			return 0;
		}
		dst = p->msg + p->msg_len;
	}
	if (p->masked)
		rs_ws_mask(dst, in, k, p->key, p->pmark);
	else
		memcpy(dst, in, k);
	p->pmark += k;
	if (!is_control(p->opcode)) {
		/* Text is checked as it arrives, so a bad byte closes the
		 * connection before the rest of the message is read. */
		if (p->msg_opcode == RS_WS_OP_TEXT && !p->msg_compressed &&
		    rs_utf8_feed(&p->utf8, dst, k) < 0) {
			fail(p, ev, RS_WS_CLOSE_INVALID_DATA,
			     "text that is not UTF-8");
			return k;
		}
		p->msg_len += k;
	}
	return k;
}

/* A close frame's payload: empty, or a valid code and a UTF-8 reason. */
static void end_close(struct rs_ws_parser *p, struct rs_ws_event *ev)
{
	if (p->plen == 1) {
		fail(p, ev, RS_WS_CLOSE_PROTOCOL, "a close frame of 1 byte");
		return;
	}
	ev->kind = RS_WS_EV_CLOSE;
	ev->code = RS_WS_CLOSE_NO_STATUS;
	if (p->plen >= 2) {
		int code = p->ctl[0] << 8 | p->ctl[1];

		if (!rs_ws_close_code_valid(code)) {
			fail(p, ev, RS_WS_CLOSE_PROTOCOL,
			     "a close code that may not be sent");
			return;
		}
		if (!rs_utf8_valid(p->ctl + 2, (size_t)p->plen - 2)) {
			fail(p, ev, RS_WS_CLOSE_INVALID_DATA,
			     "a close reason that is not UTF-8");
			return;
		}
		ev->code = code;
		ev->data = p->ctl + 2;
		ev->len = (size_t)p->plen - 2;
	}
	p->state = ST_CLOSED;
}

/* The frame's last byte is in: a control event, or the message's end. */
static void end_frame(struct rs_ws_parser *p, struct rs_ws_event *ev)
{
	ev->offset = p->frame_start;
	p->state = ST_HEAD;
	p->hmark = 0;
	p->hlimit = 2;
	switch (p->opcode) {
	case RS_WS_OP_PING:
	case RS_WS_OP_PONG:
		ev->kind = p->opcode == RS_WS_OP_PING ? RS_WS_EV_PING
						      : RS_WS_EV_PONG;
		ev->data = p->ctl;
		ev->len = (size_t)p->plen;
		return;
	case RS_WS_OP_CLOSE:
		end_close(p, ev);
		return;
	default:
		break;
	}
	p->msg_frames++;
	if (!p->fin)
		return;
	if (p->msg_opcode == RS_WS_OP_TEXT && !p->msg_compressed &&
	    !rs_utf8_complete(&p->utf8)) {
		fail(p, ev, RS_WS_CLOSE_INVALID_DATA,
		     "text that ends inside a UTF-8 sequence");
		return;
	}
	ev->kind = RS_WS_EV_MESSAGE;
	ev->opcode = p->msg_opcode;
	ev->compressed = p->msg_compressed;
	ev->frames = p->msg_frames;
	ev->data = p->msg;
	ev->len = p->msg_len;
	/* The buffer stays the event's until the next feed; the next data
	 * frame starts the next message at 0. */
	p->msg_opcode = 0;
}

/*
 * The common frame taken whole: a message of one frame (FIN, text or
 * binary, no RSV bit, no message open) of at most 125 bytes, masked as
 * this side requires, all of it in[0, n), within the maximum, and, text,
 * well-formed UTF-8. It is unmasked straight into the message buffer and
 * its text checked in the same pass (non-ASCII text then by
 * rs_utf8_valid), with no per-byte state machine. The event, the offsets
 * and the state after it are those of the byte-by-byte path (the fields
 * that path would leave and that a later frame reads before it sets them
 * again). Returns the bytes used, or 0 for any other frame, a short input
 * or a failure: the byte-by-byte path then reads the frame from its
 * first byte and reports what is wrong with it.
 */
static size_t whole_frame(struct rs_ws_parser *p, const uint8_t *in, size_t n,
			  struct rs_ws_event *ev)
{
	static const uint8_t no_key[4];
	uint8_t b0, b1;
	size_t len, h;
	uint64_t acc;

	if (n < 2)
		return 0;
	b0 = in[0];
	b1 = in[1];
	len = b1 & 0x7f;
	h = b1 & 0x80 ? 6 : 2;
	/* b0 81 or 82: FIN, no RSV bit, text or binary. b1 with the mask
	 * bit this side wants cleared: the 7-bit length, at most 125. */
	if ((unsigned)(b0 - 0x81) > 1 ||
	    (unsigned)(b1 ^ (p->opt.server ? 0x80 : 0)) > RS_WS_MAX_CONTROL ||
	    p->msg_opcode != 0 || n < h + len ||
	    (p->opt.max_message && len > p->opt.max_message))
		return 0;
	if (len > p->msg_cap) {
		p->msg_len = 0;  /* no message is open: nothing to keep */
		if (msg_reserve(p, len) < 0)
			return 0;
	}
	acc = mask_words(p->msg, in + h, len, h == 6 ? in + 2 : no_key);
	if ((b0 & 0x0f) == RS_WS_OP_TEXT &&
	    (acc & UINT64_C(0x8080808080808080)) != 0 &&
	    !rs_utf8_valid(p->msg, len))
		return 0;
	p->opcode = b0 & 0x0f;
	p->fin = 1;
	p->rsv1 = 0;
	p->masked = (uint8_t)(b1 >> 7);
	p->plen = len;
	p->pmark = len;
	p->msg_len = len;
	p->msg_frames = 1;
	p->msg_compressed = 0;
	p->utf8 = (struct rs_utf8)RS_UTF8_INIT;
	p->frame_start = p->offset;
	p->offset += h + len;
	ev->kind = RS_WS_EV_MESSAGE;
	ev->opcode = p->opcode;
	ev->frames = 1;
	ev->data = p->msg;
	ev->len = len;
	ev->offset = p->frame_start;
	return h + len;
}

/*
 * The byte-by-byte path: the header a byte at a time, the payload in the
 * pieces the input holds. Out of line, so that a whole frame taken by
 * whole_frame saves no registers for it.
 */
__attribute__((noinline)) static size_t feed_bytes(struct rs_ws_parser *p,
						   const uint8_t *in, size_t n,
						   struct rs_ws_event *ev)
{
	size_t used = 0;

	while (used < n) {
		size_t k;

		if (p->state == ST_HEAD) {
			if (p->hmark == 0)
				p->frame_start = p->offset;
			k = read_header(p, in + used, n - used, ev);
		} else {
			k = read_payload(p, in + used, n - used, ev);
		}
		used += k;
		p->offset += k;
		if (p->state == ST_ERROR)
			return used;
		if (p->state == ST_PAYLOAD && p->pmark == p->plen) {
			end_frame(p, ev);
			if (ev->kind != RS_WS_EV_NONE)
				return used;
		}
	}
	return used;
}

size_t rs_ws_parser_feed(struct rs_ws_parser *p, const uint8_t *in, size_t n,
			 struct rs_ws_event *ev)
{
	size_t used;

	memset(ev, 0, sizeof(*ev));
	if (p->state == ST_ERROR) {
		ev->kind = RS_WS_EV_ERROR;
		ev->code = p->error_code;
		ev->problem = p->problem;
		ev->offset = p->frame_start;
		return 0;
	}
	if (p->state == ST_CLOSED)
		return 0;
	if (p->state == ST_HEAD && p->hmark == 0 &&
	    (used = whole_frame(p, in, n, ev)) > 0)
		return used;
	return feed_bytes(p, in, n, ev);
}
