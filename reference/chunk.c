/*
 * chunk.c: the chunked framing state machine (chunk.h). No I/O.
 */
#include "chunk.h"

#include <errno.h>
#include <string.h>

static const char TERM_AFTER_CHUNK[] = "\r\n0\r\n\r\n";
static const char TERM_ALONE[] = "0\r\n\r\n";

void rs_chunk_init(struct rs_chunk *c)
{
	memset(c, 0, sizeof(*c));
}

size_t rs_chunk_header(char out[RS_CHUNK_HEADER_MAX], uint64_t len,
		       int after_chunk)
{
	static const char hex[] = "0123456789abcdef";
	char digits[16];
	size_t nd = 0, k = 0;

	do {
		digits[nd++] = hex[len & 15];
		len >>= 4;
	} while (len > 0);
	if (after_chunk) {
		out[k++] = '\r';
		out[k++] = '\n';
	}
	while (nd > 0)
		out[k++] = digits[--nd];
	out[k++] = '\r';
	out[k++] = '\n';
	return k;
}

static void plan_add(struct rs_chunk_plan *p, enum rs_chunk_part part,
		     const void *base, size_t len)
{
	if (len == 0)
		return;
	p->iov[p->n].iov_base = (void *)base;
	p->iov[p->n].iov_len = len;
	p->part[p->n] = part;
	p->n++;
	p->total += len;
	if (part == RS_CHUNK_CONT || part == RS_CHUNK_NEW)
		p->body += len;
	else if (p->body == 0)
		p->framing += len;
}

int rs_chunk_plan(const struct rs_chunk *c, const void *data, size_t len,
		  int final, struct rs_chunk_plan *p)
{
	const char *bytes = data;
	size_t cont, fresh;
	int chunk_before;

	memset(p, 0, sizeof(*p));
	if (c->ended)
		return -EINVAL;
	if (final && len < c->open_left)
		return -EINVAL;
	p->final = final;
	cont = len < c->open_left ? len : (size_t)c->open_left;
	fresh = len - cont;
	if (cont > 0 || (final && c->pre_off < c->pre_len)) {
		/* The open chunk: the rest of its header, then its body. */
		plan_add(p, RS_CHUNK_PRE, c->pre + c->pre_off,
			 (size_t)(c->pre_len - c->pre_off));
		plan_add(p, RS_CHUNK_CONT, bytes, cont);
	}
	chunk_before = c->started;
	if (fresh > 0) {
		size_t hl = rs_chunk_header(p->hdr, fresh, chunk_before);

		plan_add(p, RS_CHUNK_HDR, p->hdr, hl);
		plan_add(p, RS_CHUNK_NEW, bytes + cont, fresh);
		chunk_before = 1;
	}
	if (final) {
		const char *t = chunk_before ? TERM_AFTER_CHUNK : TERM_ALONE;
		size_t tl = strlen(t);

		memcpy(p->post, t, tl);
		plan_add(p, RS_CHUNK_POST, p->post, tl);
	}
	return 0;
}

size_t rs_chunk_advance(struct rs_chunk *c, const struct rs_chunk_plan *p,
			size_t n)
{
	size_t body = 0;
	int body_whole = 1;

	if (n > p->total)
		n = p->total;
	for (int i = 0; i < p->n; i++) {
		size_t seg = p->iov[i].iov_len;
		size_t take = n < seg ? n : seg;

		n -= take;
		switch (p->part[i]) {
		case RS_CHUNK_PRE:
			c->pre_off = (uint8_t)(c->pre_off + take);
			break;
		case RS_CHUNK_CONT:
			c->open_left -= take;
			body += take;
			break;
		case RS_CHUNK_HDR:
			if (take == 0)
				break;
			/* The new chunk opens once its header starts out. */
			memcpy(c->pre, p->hdr, seg);
			c->pre_len = (uint8_t)seg;
			c->pre_off = (uint8_t)take;
			c->open_left = p->iov[i + 1].iov_len;
			c->started = 1;
			break;
		case RS_CHUNK_NEW:
			c->open_left -= take;
			body += take;
			break;
		case RS_CHUNK_POST:
			if (!body_whole)
				break;
			memcpy(c->post, p->post, seg);
			c->post_len = (uint8_t)seg;
			c->post_off = (uint8_t)take;
			c->ended = 1;
			break;
		}
		if (take < seg && p->part[i] != RS_CHUNK_POST)
			body_whole = 0;
	}
	/* A final plan with no terminator segment cannot exist (it always
	 * has one), so ended is decided above or not at all. */
	c->offset += body;
	return body;
}

int rs_chunk_trailer(const struct rs_chunk *c, struct iovec *iov)
{
	if (!c->ended || c->post_off >= c->post_len)
		return 0;
	iov->iov_base = (void *)(c->post + c->post_off);
	iov->iov_len = (size_t)(c->post_len - c->post_off);
	return 1;
}

void rs_chunk_trailer_sent(struct rs_chunk *c, size_t n)
{
	size_t left = (size_t)(c->post_len - c->post_off);

	c->post_off = (uint8_t)(c->post_off + (n < left ? n : left));
}

int rs_chunk_done(const struct rs_chunk *c)
{
	return c->ended && c->post_off == c->post_len;
}
