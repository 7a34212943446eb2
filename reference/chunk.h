/*
 * chunk.h: the HTTP/1.1 chunked framing of one response body, as a state
 * machine with cursors (DESIGN.md item 4; uNetworking/uWebSockets pull
 * request "Optimize chunked write path and add tryWrite"). It does no I/O:
 * a call plans the bytes to send as iovecs (framing from the encoder's own
 * buffers, body bytes straight from the caller's), the caller sends what it
 * can, and tells the encoder how many bytes went out.
 *
 * The wire form, after a head that ends with its blank line:
 *   first chunk        HEX "\r\n" BODY
 *   every later chunk  "\r\n" HEX "\r\n" BODY     (the CRLF closes the last)
 *   terminator         "\r\n0\r\n\r\n" after a chunk, "0\r\n\r\n" with none
 * HEX is the chunk's length in lower-case hex. A chunk has at least 1 byte:
 * an empty write starts none.
 *
 * The rules:
 * - A chunk header goes out once per chunk. A call that finds a chunk open
 *   (its header out, or partly out, and not all its body) continues it: its
 *   first bytes are the open chunk's remaining body, with no second header;
 *   bytes beyond those start one new chunk.
 * - offset counts body bytes only, never framing.
 * - The terminator is decided by a final call whose body got out whole; what
 *   of it did not get out is not a continuation of the body: the caller
 *   completes it (rs_chunk_trailer), and the body offset does not move.
 */
#ifndef WIRECHECK_CHUNK_H
#define WIRECHECK_CHUNK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* The most iovecs a plan holds: the open chunk's header remainder, its
 * body, a new chunk's header, its body, the terminator. */
#define RS_CHUNK_MAX_IOV 5
/* "\r\n" + 16 hex digits + "\r\n" */
#define RS_CHUNK_HEADER_MAX 20

struct rs_chunk {
	uint64_t offset;     /* body bytes out, over every chunk */
	uint64_t open_left;  /* body bytes of the open chunk not yet out */
	char pre[RS_CHUNK_HEADER_MAX]; /* the open chunk's header */
	uint8_t pre_len;
	uint8_t pre_off;     /* its bytes out */
	char post[8];        /* the terminator, once decided */
	uint8_t post_len;
	uint8_t post_off;    /* its bytes out */
	unsigned started : 1; /* a chunk header started going out */
	unsigned ended : 1;   /* the terminator is decided */
};

/* What one call would send, in wire order. The iovecs point into the
 * encoder, the plan and the caller's data: valid while none changes. */
enum rs_chunk_part {
	RS_CHUNK_PRE,   /* the open chunk's header, the part not yet out */
	RS_CHUNK_CONT,  /* body continuing the open chunk */
	RS_CHUNK_HDR,   /* a new chunk's header */
	RS_CHUNK_NEW,   /* the new chunk's body */
	RS_CHUNK_POST,  /* the terminator */
};
struct rs_chunk_plan {
	struct iovec iov[RS_CHUNK_MAX_IOV];
	enum rs_chunk_part part[RS_CHUNK_MAX_IOV];
	int n;               /* iovecs used */
	size_t total;        /* bytes in the plan */
	size_t body;         /* body bytes in the plan */
	size_t framing;      /* bytes before the first body byte */
	char hdr[RS_CHUNK_HEADER_MAX];
	char post[8];
	int final;
};

/* An encoder before the first chunk. */
void rs_chunk_init(struct rs_chunk *c);

/*
 * Plans a call of len body bytes (data; may be NULL when len is 0), the
 * last of the body when final. Returns 0 and fills *p, or -EINVAL when the
 * call breaks the framing: the terminator is already decided, or a final
 * call would end the body inside the open chunk (len < open_left).
 * Changes nothing in c.
 */
int rs_chunk_plan(const struct rs_chunk *c, const void *data, size_t len,
		  int final, struct rs_chunk_plan *p);

/*
 * Accounts the first n bytes of plan p as sent (n at most p->total; more is
 * clamped). Returns the body bytes among them, which offset gains. A final
 * plan whose body got out whole decides the terminator even when none of
 * it got out (then rs_chunk_trailer has it all).
 */
size_t rs_chunk_advance(struct rs_chunk *c, const struct rs_chunk_plan *p,
			size_t n);

/* The terminator's bytes not yet out: fills *iov, returns 1, or 0 when
 * none is owed (not decided, or all out). */
int rs_chunk_trailer(const struct rs_chunk *c, struct iovec *iov);
/* Accounts n more terminator bytes as sent. */
void rs_chunk_trailer_sent(struct rs_chunk *c, size_t n);

/* Whether the whole body and the terminator are out. */
int rs_chunk_done(const struct rs_chunk *c);

/*
 * Writes a chunk header for len (> 0) body bytes: "\r\n" first when
 * after_chunk. Returns its length.
 */
size_t rs_chunk_header(char out[RS_CHUNK_HEADER_MAX], uint64_t len,
		       int after_chunk);

#endif
