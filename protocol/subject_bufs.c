/*
 * subject_bufs.c: the buffers of a subject's writes (subject_bufs.h).
 */
#include "subject_bufs.h"

#include "protocol.h"
#include "subject_pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sb_owned {
	struct sb_owned *next;
	unsigned char *bytes;
};

static void *alloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		sp_fatal("out of memory for %zu bytes", n);
	return p;
}

unsigned char *sb_op_bytes(const struct sr_op *op, uint64_t at)
{
	unsigned char *buf = alloc(op->len);

	if (op->data && op->len > 0)
		memcpy(buf, op->data, op->len);
	else if (!op->data)
		for (size_t i = 0; i < op->len; i++)
			buf[i] = op->fill >= 0 ? (unsigned char)op->fill : wc_pattern(at + i);
	return buf;
}

void sb_keep(struct sb_last *last, unsigned char *bytes, size_t len, int number)
{
	sb_last_free(last);
	*last = (struct sb_last){ .bytes = bytes, .len = len, .number = number };
}

unsigned char *sb_keep_owned(struct sb_last *last, struct sb_owned **owned,
			     const struct sr_op *op, uint64_t at, int number)
{
	struct sb_owned *ob = alloc(sizeof(*ob));

	ob->bytes = sb_op_bytes(op, at);
	ob->next = *owned;
	*owned = ob;
	sb_last_free(last);
	*last = (struct sb_last){ .bytes = ob->bytes, .len = op->len, .number = number,
				  .owned = 1 };
	return ob->bytes;
}

void sb_overwrite(struct sb_last *last, int fill, char *event, size_t len)
{
	if (!last->bytes) {
		snprintf(event, len, "overwrite (no write)");
		return;
	}
	memset(last->bytes, fill, last->len);
	snprintf(event, len, "overwrite write#%d %zu", last->number, last->len);
}

void sb_last_free(struct sb_last *last)
{
	if (!last->owned)
		free(last->bytes);
	*last = (struct sb_last){ 0 };
}

void sb_owned_free(struct sb_owned **owned)
{
	while (*owned) {
		struct sb_owned *ob = *owned;

		*owned = ob->next;
		free(ob->bytes);
		free(ob);
	}
}
