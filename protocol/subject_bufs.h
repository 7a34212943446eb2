/*
 * subject_bufs.h: the buffers of a subject's writes (docs/subject-protocol.md,
 * "Operations"): the bytes a write op names, each connection's last write
 * buffer for `overwrite`, and the write-owned buffers. Shared by the
 * subjects written in C, so that the same op fills and overwrites the same
 * bytes, and reports the same event, on every stack.
 *
 * A write-owned buffer stays allocated until the subject ends (sb_owned_free),
 * so that an overwrite after the stack released it still writes to memory
 * the subject owns. Out of memory ends the subject (sp_fatal).
 */
#ifndef WIRECHECK_SUBJECT_BUFS_H
#define WIRECHECK_SUBJECT_BUFS_H

#include "script_read.h"

#include <stddef.h>
#include <stdint.h>

/* A connection's last write or write-owned buffer: the subject's to free
 * unless owned (then it is on the owned list). Start it zeroed. */
struct sb_last {
	unsigned char *bytes;
	size_t len;
	int number;   /* its write#number */
	int owned;
};

/* Every write-owned buffer of the subject. Start it as NULL. */
struct sb_owned;

/* The bytes of a write op in a new buffer of op->len bytes (1 when op->len
 * is 0), the caller's to free: op->data, else op->fill, else the stream
 * pattern (protocol.h, wc_pattern) from stream offset AT. */
unsigned char *sb_op_bytes(const struct sr_op *op, uint64_t at);

/* Makes BYTES (LEN of them, a write's, the subject's to free) the
 * connection's last buffer; frees the previous one unless it was owned. */
void sb_keep(struct sb_last *last, unsigned char *bytes, size_t len, int number);

/* A write-owned's buffer: sb_op_bytes(op, at), put on *owned and made the
 * connection's last (as sb_keep). Returns it; it is the subject's until
 * sb_owned_free. */
unsigned char *sb_keep_owned(struct sb_last *last, struct sb_owned **owned,
			     const struct sr_op *op, uint64_t at, int number);

/* overwrite fill=FILL: every byte of the last buffer becomes FILL. Writes
 * the op's event text ("overwrite write#N LEN", or "overwrite (no write)")
 * into event (at most len bytes). */
void sb_overwrite(struct sb_last *last, int fill, char *event, size_t len);

/* Frees the last buffer unless it is owned; *last is then empty. */
void sb_last_free(struct sb_last *last);

/* Frees every write-owned buffer; *owned is then NULL. */
void sb_owned_free(struct sb_owned **owned);

#endif
