/*
 * chunk_driver.h: drives the chunk encoder (reference/chunk.h) through a
 * list of calls against a model kernel that takes at most `clamp` bytes per
 * send (and, when cut is set, exactly `cut` bytes of the first send), as the
 * HTTP layer does: a call resumes from the body offset until its body is
 * out, then the terminator is completed. Shared by the unit tests and the
 * chunk_dump tool that Python decoders check. Test code only.
 */
#ifndef WIRECHECK_CHUNK_DRIVER_H
#define WIRECHECK_CHUNK_DRIVER_H

#include "chunk.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cd_call {
	size_t len;
	int final;
};

struct cd_out {
	unsigned char *buf;
	size_t len;
	size_t cap;
	int sends;
};

/* Byte i of the body (counted over the whole body). */
static inline unsigned char cd_body_byte(uint64_t i)
{
	return (unsigned char)((i * 131u + 7u) >> 1);
}

static inline int cd_put(struct cd_out *o, const void *p, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		unsigned char *b;

		while (cap < o->len + n)
			cap *= 2;
		b = realloc(o->buf, cap);
		if (!b)
			return -1;
		o->buf = b;
		o->cap = cap;
	}
	if (n)
		memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

/* One model send of the iovecs: takes at most *budget (the first send's
 * cut, then clamp), appends what it took to o. Returns bytes taken. */
static inline size_t cd_send(struct cd_out *o, const struct iovec *iov,
			     int n, size_t clamp, size_t *cut)
{
	size_t room = clamp, took = 0;

	if (*cut != SIZE_MAX) {
		room = *cut;
		*cut = SIZE_MAX;
	}
	o->sends++;
	for (int i = 0; i < n && room > 0; i++) {
		size_t t = iov[i].iov_len < room ? iov[i].iov_len : room;

		if (cd_put(o, iov[i].iov_base, t) < 0)
			return 0;
		room -= t;
		took += t;
	}
	return took;
}

/*
 * Runs the calls; body bytes come from cd_body_byte. Returns 0, or -1 when
 * the encoder refused a call, made no progress 1000 times in a row or
 * more rounds than a call has bytes to send, or an
 * allocation failed. cut = SIZE_MAX for none.
 */
static inline int cd_run(const struct cd_call *calls, size_t ncalls,
			 size_t clamp, size_t cut, struct cd_out *o)
{
	struct rs_chunk c;
	uint64_t body_at = 0;
	int stuck = 0;

	rs_chunk_init(&c);
	for (size_t k = 0; k < ncalls; k++) {
		unsigned char *data = malloc(calls[k].len ? calls[k].len : 1);
		size_t done = 0, rounds = 0;

		if (!data)
			return -1;
		for (size_t i = 0; i < calls[k].len; i++)
			data[i] = cd_body_byte(body_at + i);
		for (;;) {
			struct rs_chunk_plan p;
			size_t took;

			if (rs_chunk_plan(&c, data + done, calls[k].len - done,
					  calls[k].final, &p) < 0) {
				free(data);
				return -1;
			}
			if (p.total == 0)
				break;
			took = cd_send(o, p.iov, p.n, clamp, &cut);
			done += rs_chunk_advance(&c, &p, took);
			if (done == calls[k].len &&
			    (!calls[k].final || c.ended))
				break;
			/* A broken encoder could loop for ever: each round
			 * takes at least one byte of at most len + 40. */
			if ((took == 0 && ++stuck > 1000) ||
			    ++rounds > calls[k].len + 64) {
				free(data);
				return -1;
			}
		}
		free(data);
		body_at += calls[k].len;
		for (;;) {
			struct iovec t;

			if (rs_chunk_trailer(&c, &t) == 0)
				break;
			rs_chunk_trailer_sent(&c, cd_send(o, &t, 1, clamp, &cut));
		}
	}
	return 0;
}

#endif
