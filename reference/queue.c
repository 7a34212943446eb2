/*
 * queue.c: the pending-write queue (behaviour 1 of docs/queue-model.md).
 *
 * The unsent bytes of a socket are [head, tail) of one buffer buf[0, cap).
 * The fixed (cursor) strategy advances head on a partial send and moves
 * nothing; the legacy (memmove) strategy moves the unsent bytes to the front
 * after every partial send, which costs the square of the payload over a
 * whole drain. Both free the buffer once the queue is empty.
 *
 * Owned bytes (rs_queue_append_owned) are held by reference, not copied.
 * A queue that holds one owned run and nothing else (an owned write the
 * kernel did not take whole, the common case) keeps it in owned_at and
 * owned_len, without allocating. Once owned bytes share the queue with
 * others, a ring of segments says, in order, which runs of the stream are
 * the next bytes of buf and which are the caller's memory. Without owned
 * bytes (owned_len 0) there is no ring, and the queue is the one buffer
 * above, as before: that is what the write path's inline fast paths test.
 *
 * This file does no I/O: it is bytes in, bytes out, so the unit tests and
 * the bench drive it without a socket. Its only syscalls are the mmap,
 * madvise and munmap of large buffers (queue_map below).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rs_internal.h"

/* One run of the queued stream: the next len bytes of buf (owned NULL),
 * or len bytes of the caller's memory at owned. */
struct queue_seg {
	const char *owned;
	size_t len;
};

/*
 * The smallest buffer the queue allocates. Growth follows Rust's Vec<u8>
 * (new cap = max(needed, 2 * cap, 8)) on purpose: the allocation sizes then
 * compare byte for byte with the figures of the PR this queue reproduces.
 */
#define QUEUE_MIN_CAP 8

/*
 * The largest buffer the queue asks for. No object may be larger than
 * PTRDIFF_MAX (pointer differences inside it would overflow, and glibc
 * refuses such sizes), so a larger need is -ENOMEM without a call.
 */
#define QUEUE_MAX_CAP ((size_t)PTRDIFF_MAX)

void rs_queue_init(struct rs_queue *q, enum rs_queue_strategy strategy)
{
	q->buf = NULL;
	q->head = 0;
	q->tail = 0;
	q->cap = 0;
	q->strategy = strategy;
	q->bytes_moved = 0;
	q->allocations = 0;
	q->bytes_copied = 0;
	q->segs = NULL;
	q->owned_len = 0;
	q->owned_at = NULL;
}

static void queue_buf_free(char *buf, size_t cap);

/* Forgets the segments (and so every owned byte): the queue is one
 * buffer again. */
static void queue_segs_free(struct rs_queue *q)
{
	if (q->segs) {
		rs__ring_free(q->segs);
		free(q->segs);
	}
	q->segs = NULL;
	q->owned_len = 0;
	q->owned_at = NULL;
}

/* Whether the queue is one owned run without a ring (owned_at). */
static int queue_is_solo(const struct rs_queue *q)
{
	return q->owned_len > 0 && !q->segs;
}

/* Frees the buffer alone; the segments (if any) stay. Out of line, as
 * queue_compact: queue_buf_consume, on every send, then needs no frame. */
static RS__OUT_OF_LINE void queue_buf_release(struct rs_queue *q)
{
	queue_buf_free(q->buf, q->cap);
	q->buf = NULL;
	q->head = 0;
	q->tail = 0;
	q->cap = 0;
}

void rs_queue_free(struct rs_queue *q)
{
	queue_buf_release(q);
	queue_segs_free(q);
}

/* The copied bytes, in buf. */
static size_t queue_buf_len(const struct rs_queue *q)
{
	return q->tail - q->head;
}

size_t rs_queue_len(const struct rs_queue *q)
{
	return queue_buf_len(q) + q->owned_len;
}

/*
 * The cursor strategy drops the sent prefix only once it is at least as
 * large as the unsent bytes. Each byte is then moved at most once per time
 * the queue doubles its sent prefix, so the moves of a drain stay linear in
 * its size, where a move on every send is quadratic.
 */
static int queue_compaction_due(const struct rs_queue *q)
{
	return q->strategy == RS_QUEUE_CURSOR && q->head > 0 &&
	       q->head >= q->tail - q->head;
}

/* Moves the unsent bytes to the front of the buffer and counts them. */
static RS__OUT_OF_LINE void queue_compact(struct rs_queue *q)
{
	size_t len = queue_buf_len(q);

	if (len > 0)
		memmove(q->buf, q->buf + q->head, len);
	q->bytes_moved += len;
	q->head = 0;
	q->tail = len;
}

/*
 * The capacity that holds needed bytes (at most QUEUE_MAX_CAP); see
 * QUEUE_MIN_CAP for the rule.
 */
static size_t queue_grown_cap(size_t cap, size_t needed)
{
	size_t grown = cap <= QUEUE_MAX_CAP / 2 ? 2 * cap : QUEUE_MAX_CAP;

	if (grown < needed)
		grown = needed;
	if (grown < QUEUE_MIN_CAP)
		grown = QUEUE_MIN_CAP;
	return grown;
}

/*
 * Large buffers: QUEUE_HUGE_MIN bytes or more are their own anonymous
 * mapping, 2 MiB-aligned, advised MADV_HUGEPAGE and written in advance with
 * MADV_POPULATE_WRITE over the part the append is about to fill. A malloc'd
 * buffer of 64 MiB is 16,384 small pages, each faulted in by the memcpy
 * that fills it and each a TLB entry for every send that reads it; on the
 * machine this was measured on (a paravirtualised guest) the copy of 64 MiB
 * into such a buffer cost 224 ms of CPU, into an aligned, populated,
 * huge-page mapping 8.4 ms (docs/queue-model.md, "Large buffers"). Both
 * strategies allocate alike, so their comparison is unchanged.
 *
 * The advice is only advice: a kernel without THP or without
 * MADV_POPULATE_WRITE (before 5.14) refuses it, and the copy then faults
 * the pages in as before. A failed mmap is -ENOMEM, as a failed malloc is.
 * Whether a buffer is mapped follows from its cap alone, so the queue needs
 * no flag for it.
 */
#define QUEUE_HUGE_MIN ((size_t)4 << 20)
#define QUEUE_HUGE_PAGE ((size_t)2 << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif

/* The page size; 4 KiB if sysconf cannot say (it can on Linux). */
static size_t queue_page_size(void)
{
	static size_t page;

	if (page == 0) {
		long v = sysconf(_SC_PAGESIZE);

		page = v > 0 ? (size_t)v : 4096;
	}
	return page;
}

static int queue_is_mapped(size_t cap)
{
	return cap >= QUEUE_HUGE_MIN;
}

/*
 * A mapping of cap bytes whose start is 2 MiB-aligned, or NULL. It maps
 * cap plus one huge page, then unmaps the slack before and after the
 * aligned part, so that every whole 2 MiB of the buffer can be one page.
 * The first populate bytes (rounded up to a huge page) are written in
 * advance.
 */
static char *queue_map(size_t cap, size_t populate)
{
	size_t span, lead, trail, used;
	char *raw, *buf;

	if (cap > QUEUE_MAX_CAP - 2 * QUEUE_HUGE_PAGE)
		return NULL;
	/* Whole pages: the kernel maps whole pages, and munmap wants a
	 * page-aligned start. 2 MiB is a multiple of every x86-64 and arm64
	 * page size, so rounding to the page that sysconf reports keeps the
	 * huge-page alignment of buf. */
	used = (cap + queue_page_size() - 1) & ~(queue_page_size() - 1);
	span = used + QUEUE_HUGE_PAGE;
	raw = mmap(NULL, span, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	lead = (QUEUE_HUGE_PAGE - (uintptr_t)raw % QUEUE_HUGE_PAGE) %
	       QUEUE_HUGE_PAGE;
	buf = raw + lead;
	trail = span - lead - used;
	/* Unmapping whole pages of our own mapping cannot fail; a failure
	 * would leave address space reserved, never memory in use, so it gets
	 * no error path. tests/unit/test_queue.c checks that nothing stays. */
	if (lead > 0)
		(void)munmap(raw, lead);
	if (trail > 0)
		(void)munmap(buf + used, trail);
	(void)madvise(buf, cap, MADV_HUGEPAGE);
	populate = (populate + QUEUE_HUGE_PAGE - 1) & ~(QUEUE_HUGE_PAGE - 1);
	(void)madvise(buf, populate < cap ? populate : cap, MADV_POPULATE_WRITE);
	return buf;
}

static void queue_buf_free(char *buf, size_t cap)
{
	if (buf == NULL)
		return;
	if (queue_is_mapped(cap))
		(void)munmap(buf, cap); /* ours, from buf: cannot fail; the
					 * kernel rounds cap up to the page */
	else
		free(buf);
}

/*
 * A buffer of cap bytes that holds the first keep bytes of old (old_cap
 * bytes, then freed), the first needed bytes of it about to be written;
 * NULL, with old untouched, when there is no memory. Small buffers are
 * malloc and realloc, as before.
 */
static char *queue_buf_grow(char *old, size_t old_cap, size_t keep,
			    size_t cap, size_t needed)
{
	char *buf;

	if (!queue_is_mapped(cap))
		return old ? realloc(old, cap) : malloc(cap);
	buf = queue_map(cap, keep > needed ? keep : needed);
	if (buf == NULL)
		return NULL;
	if (keep > 0)
		memcpy(buf, old, keep);
	queue_buf_free(old, old_cap);
	return buf;
}

/*
 * Makes cap at least needed. The counters change only when the allocator
 * succeeds, so that a queue that returns -ENOMEM is left exactly as it was.
 */
static int queue_reserve(struct rs_queue *q, size_t needed)
{
	size_t cap;
	char *buf;

	if (needed <= q->cap)
		return 0;
	cap = queue_grown_cap(q->cap, needed);
	buf = queue_buf_grow(q->buf, q->cap, q->tail, cap, needed);
	if (buf == NULL)
		return -ENOMEM;
	q->allocations++;
	q->buf = buf;
	q->cap = cap;
	return 0;
}

static void queue_seg_add(struct rs_queue *q, const char *owned, size_t len);
static int queue_segs_start(struct rs_queue *q);

/*
 * The buffer grows before the prefix is dropped, not after: a failed
 * allocation must leave the queue unchanged, and the size it asks for is
 * already the size after the drop, so the order changes no figure.
 */
char *rs__queue_room_slow(struct rs_queue *q, size_t len)
{
	int compact = queue_compaction_due(q);
	size_t base = compact ? queue_buf_len(q) : q->tail;
	char *p;

	if (base > QUEUE_MAX_CAP || len > QUEUE_MAX_CAP - base)
		return NULL;
	/* Room for the segment first: after the copy nothing may fail. A
	 * copied run behind the one owned run needs the ring (the owned run
	 * becomes its first segment; the bytes stay as they were if the
	 * reserve below fails). */
	if (queue_is_solo(q) && queue_segs_start(q) < 0)
		return NULL;
	if (q->segs && rs__ring_reserve(q->segs) < 0)
		return NULL;
	if (queue_reserve(q, base + len) < 0)
		return NULL;
	if (compact)
		queue_compact(q);
	p = q->buf + q->tail;
	q->tail += len;
	q->bytes_copied += len;
	if (q->segs)
		queue_seg_add(q, NULL, len);
	return p;
}

int rs_queue_append(struct rs_queue *q, const void *data, size_t len)
{
	char *p;

	if (len == 0)
		return 0;
	p = rs__queue_room(q, len);
	if (!p)
		return -ENOMEM;
	memcpy(p, data, len);
	return 0;
}

/* ---- owned bytes -------------------------------------------------------- */

/* Adds a run at the end (room for one more segment is reserved): a copied
 * run behind a copied run lengthens it, as buf holds both in order. */
static void queue_seg_add(struct rs_queue *q, const char *owned, size_t len)
{
	struct queue_seg seg = { owned, len };

	if (!owned && q->segs->len > 0) {
		struct queue_seg *last = rs__ring_at(q->segs, q->segs->len - 1);

		if (!last->owned) {
			last->len += len;
			return;
		}
	}
	(void)rs__ring_push(q->segs, &seg); /* reserved: cannot fail */
}

/* Starts the segments of a queue that holds only buf (one copied run for
 * what buf holds) or only its one owned run (that run). */
static int queue_segs_start(struct rs_queue *q)
{
	struct rs__ring *segs = malloc(sizeof(*segs));

	if (!segs)
		return -ENOMEM;
	rs__ring_init(segs, sizeof(struct queue_seg), 8);
	if (rs__ring_reserve(segs) < 0) {
		free(segs);
		return -ENOMEM;
	}
	q->segs = segs;
	if (q->owned_len > 0)
		queue_seg_add(q, q->owned_at, q->owned_len);
	else if (queue_buf_len(q) > 0)
		queue_seg_add(q, NULL, queue_buf_len(q));
	q->owned_at = NULL;
	return 0;
}

int rs_queue_append_owned(struct rs_queue *q, const void *data, size_t len)
{
	int err;

	if (len == 0)
		return 0;
	if (len > SIZE_MAX - rs_queue_len(q))
		return -ENOMEM;
	/* Into an empty queue: the one run, no ring, nothing allocated. */
	if (rs_queue_len(q) == 0) {
		q->owned_at = data;
		q->owned_len = len;
		return 0;
	}
	if (!q->segs && (err = queue_segs_start(q)) < 0)
		return err;
	err = rs__ring_reserve(q->segs);
	if (err < 0) {
		if (q->owned_len == 0)
			queue_segs_free(q); /* as it was: no ring */
		return err;
	}
	queue_seg_add(q, data, len);
	q->owned_len += len;
	return 0;
}

/* Segment i (i < segs->len), inline: every send reads the segments. */
static struct queue_seg *queue_seg(const struct rs_queue *q, size_t i)
{
	return rs__ring_item(q->segs, i);
}

/* The runs of a queue that holds owned bytes, in order (max > 0): one
 * iovec per segment, the first max of them. */
static RS__OUT_OF_LINE int queue_segs_peekv(const struct rs_queue *q,
					    struct iovec *iov, int max)
{
	size_t n = q->segs->len < (size_t)max ? q->segs->len : (size_t)max;
	size_t off = q->head;

	for (size_t i = 0; i < n; i++) {
		const struct queue_seg *seg = queue_seg(q, i);

		if (seg->owned) {
			iov[i].iov_base = (void *)seg->owned;
		} else {
			iov[i].iov_base = q->buf + off;
			off += seg->len;
		}
		iov[i].iov_len = seg->len;
	}
	return (int)n;
}

int rs_queue_peekv(const struct rs_queue *q, struct iovec *iov, int max)
{
	if (max <= 0)
		return 0;
	/* The common case first, and on its own: without owned bytes the
	 * queue is one run of buf, so a send of copied bytes pays two loads
	 * here, not the walk over segments (which kept that walk's set-up in
	 * every peek: about 30 instructions per send, docs/queue-model.md
	 * "Sender cost"). */
	if (q->owned_len == 0) {
		if (q->head == q->tail)
			return 0;
		iov[0].iov_base = q->buf + q->head;
		iov[0].iov_len = q->tail - q->head;
		return 1;
	}
	if (!q->segs) {
		iov[0].iov_base = (void *)q->owned_at;
		iov[0].iov_len = q->owned_len;
		return 1;
	}
	return queue_segs_peekv(q, iov, max);
}

int rs_queue_peek(const struct rs_queue *q, struct iovec *iov)
{
	return rs_queue_peekv(q, iov, 1);
}

/* Drops the first n copied bytes, from buf alone. An emptied buffer is
 * freed under both strategies, as the legacy code did: an idle socket then
 * holds no memory for a write long gone. */
static void queue_buf_consume(struct rs_queue *q, size_t n)
{
	if (n == 0)
		return;
	if (n >= queue_buf_len(q)) {
		queue_buf_release(q);
		return;
	}
	q->head += n;
	if (q->strategy == RS_QUEUE_MEMMOVE)
		queue_compact(q);
}

/* Drops the first n bytes of the segments (n at most the length); returns
 * how many of them were copied bytes, which buf drops next. */
static size_t queue_segs_consume(struct rs_queue *q, size_t n)
{
	size_t copied = 0;

	while (n > 0) {
		struct queue_seg *seg = queue_seg(q, 0);
		size_t k = n < seg->len ? n : seg->len;

		if (seg->owned) {
			seg->owned += k;
			q->owned_len -= k;
		} else {
			copied += k;
		}
		seg->len -= k;
		n -= k;
		if (seg->len == 0) {
			struct queue_seg gone;

			rs__ring_pop(q->segs, &gone);
		}
	}
	return copied;
}

/* rs_queue_consume of a queue that holds owned bytes, in general. */
static RS__OUT_OF_LINE void queue_segs_consume_all(struct rs_queue *q,
						   size_t n)
{
	if (n > rs_queue_len(q))
		n = rs_queue_len(q);
	queue_buf_consume(q, queue_segs_consume(q, n));
	/* No owned byte left: what remains is buf alone, in order. */
	if (q->owned_len == 0)
		queue_segs_free(q);
}

/*
 * rs_queue_consume of a queue that holds owned bytes. A send that ends
 * inside the front run (every send of a large owned write but its last)
 * shortens that run and nothing else: no segment leaves and owned bytes
 * stay (the front run, if owned, keeps some), so it skips the general
 * walk, whose frame and loop cost more than the send's own work.
 */
static void queue_segs_drop(struct rs_queue *q, size_t n)
{
	struct queue_seg *front = queue_seg(q, 0);

	if (n >= front->len) {
		queue_segs_consume_all(q, n);
	} else if (front->owned) {
		front->len -= n;
		front->owned += n;
		q->owned_len -= n;
	} else {
		front->len -= n;
		queue_buf_consume(q, n);
	}
}

/* rs_queue_consume of the one owned run (n past its end empties it). */
static void queue_solo_consume(struct rs_queue *q, size_t n)
{
	if (n >= q->owned_len) {
		q->owned_at = NULL;
		q->owned_len = 0;
	} else {
		q->owned_at += n;
		q->owned_len -= n;
	}
}

void rs_queue_consume(struct rs_queue *q, size_t n)
{
	/* The common case first, as in rs_queue_peekv: without owned bytes,
	 * buf alone, and queue_buf_consume clamps n itself (n past the end
	 * empties the queue). */
	if (q->owned_len == 0)
		queue_buf_consume(q, n);
	else if (!q->segs)
		queue_solo_consume(q, n);
	else
		queue_segs_drop(q, n);
}

int rs_queue_append_queue(struct rs_queue *dst, const struct rs_queue *src,
			  size_t skip)
{
	size_t off = src->head;

	if (queue_is_solo(src)) {
		if (skip >= src->owned_len)
			return 0;
		return rs_queue_append_owned(dst, src->owned_at + skip,
					     src->owned_len - skip);
	}
	if (!src->segs) {
		if (skip >= queue_buf_len(src))
			return 0;
		return rs_queue_append(dst, src->buf + src->head + skip,
				       queue_buf_len(src) - skip);
	}
	for (size_t i = 0; i < src->segs->len; i++) {
		const struct queue_seg *seg = rs__ring_at(src->segs, i);
		const char *p = seg->owned ? seg->owned : src->buf + off;
		size_t len = seg->len;
		int err;

		if (!seg->owned)
			off += seg->len;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		p += skip;
		len -= skip;
		skip = 0;
		err = seg->owned ? rs_queue_append_owned(dst, p, len)
				 : rs_queue_append(dst, p, len);
		if (err < 0)
			return err;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The replay probe.                                                        */

/*
 * One replay in progress. Stream offsets count every byte ever appended:
 * byte k of the stream carries replay_pattern(k), so a byte that leaves out
 * of order, or twice, or a byte that was overwritten, shows as a mismatch.
 */
struct replay {
	struct rs_queue q;
	struct rs_queue_probe probe;
	unsigned char *scratch;
	uint64_t appended; /* stream offset one past the newest byte */
	uint64_t sent;     /* stream offset of the oldest unsent byte */
};

/*
 * Where the unsent bytes were at one moment. The address is kept as an
 * integer, since the buffer it points into may be freed by the next step and
 * the value of a pointer to freed memory may not even be read.
 */
struct replay_mark {
	uintptr_t addr;
	uint64_t sent;
	size_t len;
};

/*
 * A multiplicative hash of the offset rather than offset % 256: a byte
 * displaced by any distance (a multiple of 256 included) then almost never
 * carries the value expected at its new place.
 */
static unsigned char replay_pattern(uint64_t offset)
{
	return (unsigned char)((offset * UINT64_C(0x9E3779B97F4A7C15)) >> 56);
}

static void replay_fill(unsigned char *dst, uint64_t offset, size_t len)
{
	for (size_t i = 0; i < len; i++)
		dst[i] = replay_pattern(offset + i);
}

/* Returns 1 when len bytes at src are the stream's bytes from offset. */
static int replay_check(const unsigned char *src, uint64_t offset, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (src[i] != replay_pattern(offset + i))
			return 0;
	}
	return 1;
}

static struct replay_mark replay_mark_take(const struct replay *r)
{
	struct replay_mark m = { 0, r->sent, 0 };
	struct iovec iov;

	if (rs_queue_peek(&r->q, &iov) == 1) {
		m.addr = (uintptr_t)iov.iov_base;
		m.len = iov.iov_len;
	}
	return m;
}

/*
 * Counts the bytes unsent both before and after a step whose address
 * changed. They are contiguous and share one displacement, so comparing the
 * address of the oldest of them decides for all.
 */
static void replay_count_moved(struct replay *r, const struct replay_mark *b)
{
	struct replay_mark a = replay_mark_take(r);
	uint64_t kept;

	if (a.len == 0 || b->len == 0 || a.sent >= b->sent + b->len)
		return;
	kept = b->sent + b->len - a.sent;
	if (b->addr + (uintptr_t)(a.sent - b->sent) != a.addr)
		r->probe.unsent_moved += kept;
}

static int replay_append(struct replay *r, size_t len)
{
	int err;

	replay_fill(r->scratch, r->appended, len);
	err = rs_queue_append(&r->q, r->scratch, len);
	if (err < 0)
		return err;
	r->appended += len;
	if (r->q.cap > r->probe.max_cap)
		r->probe.max_cap = r->q.cap;
	return 0;
}

/* Checks the bytes about to leave before they leave, then consumes. */
static void replay_consume(struct replay *r, size_t n)
{
	size_t len = rs_queue_len(&r->q);
	size_t out = n < len ? n : len;
	struct iovec iov;

	if (out > 0 && rs_queue_peek(&r->q, &iov) == 1 &&
	    !replay_check(iov.iov_base, r->sent, out))
		r->probe.intact = 0;
	r->sent += out;
	rs_queue_consume(&r->q, n);
}

static int replay_step(struct replay *r, const struct rs_queue_step *step)
{
	struct replay_mark before = replay_mark_take(r);
	int err = replay_append(r, step->append);

	if (err < 0)
		return err;
	replay_consume(r, step->consume);
	replay_count_moved(r, &before);
	return 0;
}

/* The bytes still queued at the end must be the stream's next bytes too. */
static void replay_finish(struct replay *r)
{
	struct iovec iov;

	if (rs_queue_peek(&r->q, &iov) == 1 &&
	    !replay_check(iov.iov_base, r->sent, iov.iov_len))
		r->probe.intact = 0;
	r->probe.bytes_moved = r->q.bytes_moved;
	r->probe.allocations = r->q.allocations;
	r->probe.final_len = rs_queue_len(&r->q);
}

/* One scratch buffer as large as the largest append, so each is one call. */
static int replay_scratch_alloc(struct replay *r,
				const struct rs_queue_step *steps,
				size_t nsteps)
{
	size_t largest = 1;

	for (size_t i = 0; i < nsteps; i++) {
		if (steps[i].append > largest)
			largest = steps[i].append;
	}
	r->scratch = malloc(largest);
	return r->scratch ? 0 : -ENOMEM;
}

int rs_queue_replay(enum rs_queue_strategy strategy,
		    const struct rs_queue_step *steps, size_t nsteps,
		    struct rs_queue_probe *out)
{
	struct replay r = { .probe = { .intact = 1 } };
	int err;

	rs_queue_init(&r.q, strategy);
	err = replay_scratch_alloc(&r, steps, nsteps);
	for (size_t i = 0; err == 0 && i < nsteps; i++)
		err = replay_step(&r, &steps[i]);
	if (err == 0) {
		replay_finish(&r);
		*out = r.probe;
	}
	rs_queue_free(&r.q);
	free(r.scratch);
	return err;
}
