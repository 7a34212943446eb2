/*
 * ring.c: a FIFO of fixed-size items in a growable circular array. The
 * loop's task queues and a socket's write requests are rings.
 *
 * No I/O and no process-wide state: items in, items out.
 */
#include "rs_internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The inline slots' capacity for item_size: the largest power of two of
 * items that fits in RS__RING_INLINE bytes. */
static size_t ring_inline_cap(size_t item_size)
{
	size_t cap = 1;

	while (2 * cap * item_size <= RS__RING_INLINE)
		cap *= 2;
	return cap;
}

void rs__ring_init(struct rs__ring *r, size_t item_size, size_t first_cap)
{
	assert(item_size > 0 && item_size <= RS__RING_INLINE);
	assert(first_cap > 0 && (first_cap & (first_cap - 1)) == 0);
	r->items = r->slots;
	r->item_size = item_size;
	r->first_cap = first_cap;
	r->head = 0;
	r->len = 0;
	r->cap = ring_inline_cap(item_size);
}

void rs__ring_free(struct rs__ring *r)
{
	if (r->items != r->slots)
		free(r->items);
	r->items = r->slots;
	r->head = 0;
	r->len = 0;
	r->cap = ring_inline_cap(r->item_size);
}

static unsigned char *ring_slot(const struct rs__ring *r, size_t i)
{
	return rs__ring_item(r, i);
}

/* Moves the items to a heap array of twice the capacity (at least
 * first_cap), in order from index 0. -ENOMEM leaves the ring as it was. */
static int ring_grow(struct rs__ring *r)
{
	size_t cap = r->cap * 2 > r->first_cap ? r->cap * 2 : r->first_cap;
	unsigned char *items;

	if (cap < r->cap || cap > SIZE_MAX / r->item_size)
		return -ENOMEM;
	items = malloc(cap * r->item_size);
	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < r->len; i++)
		memcpy(items + i * r->item_size, ring_slot(r, i), r->item_size);
	if (r->items != r->slots)
		free(r->items);
	r->items = items;
	r->head = 0;
	r->cap = cap;
	return 0;
}

int rs__ring_reserve(struct rs__ring *r)
{
	return r->len < r->cap ? 0 : ring_grow(r);
}

int rs__ring_push(struct rs__ring *r, const void *item)
{
	if (r->len == r->cap) {
		int err = ring_grow(r);

		if (err < 0)
			return err;
	}
	memcpy(ring_slot(r, r->len), item, r->item_size);
	r->len++;
	return 0;
}

int rs__ring_push_front(struct rs__ring *r, const void *item)
{
	if (r->len == r->cap) {
		int err = ring_grow(r);

		if (err < 0)
			return err;
	}
	r->head = (r->head + r->cap - 1) & (r->cap - 1);
	memcpy(ring_slot(r, 0), item, r->item_size);
	r->len++;
	return 0;
}

void *rs__ring_at(const struct rs__ring *r, size_t i)
{
	assert(i < r->len);
	return ring_slot(r, i);
}

void rs__ring_pop(struct rs__ring *r, void *out)
{
	assert(r->len > 0);
	memcpy(out, rs__ring_take(r), r->item_size);
}
