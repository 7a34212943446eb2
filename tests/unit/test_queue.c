/*
 * test_queue.c: unit tests of the pending-write queue (reference/queue.c).
 *
 * Two kinds of test. The tests of the fixed behaviour run against the
 * "subject" strategy: the cursor, unless WIRECHECK_TEST_QUEUE=memmove names
 * the legacy one, and then the tests that tell the two apart fail (which is
 * the point: the suite proves it can see the legacy behaviour). The tests of
 * the legacy model and the tests that must hold for both name their
 * strategies themselves, so they pass under either subject.
 *
 * Every expected figure comes from the model of docs/queue-model.md (a
 * closed form, or the growth rule max(needed, 2 * cap, 8)), never from a
 * run; where the upstream pull request the behaviour comes from (oven-sh/bun,
 * "socket: drain node:net's pending-write queue with a cursor"; "the pull
 * request" below) gives a figure, the test also checks the model against it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rs.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

/* The strategy whose fixed behaviour the suite checks; see the top. */
static enum rs_queue_strategy subject = RS_QUEUE_CURSOR;

static const enum rs_queue_strategy both[] = { RS_QUEUE_CURSOR,
					       RS_QUEUE_MEMMOVE };

#if defined(__SANITIZE_ADDRESS__)
/*
 * ASan aborts on an allocation larger than it supports instead of returning
 * NULL; the out-of-memory tests need the NULL that malloc(3) promises.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}
#endif

/* ------------------------------------------------------------------------ */
/* Helpers.                                                                 */

/* Byte k of a test stream; a multiplicative hash so no shift goes unseen. */
static unsigned char stream_byte(uint64_t k)
{
	return (unsigned char)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 56);
}

/* Appends the next len bytes of the stream; *appended counts them. */
static void append_stream(struct rs_queue *q, uint64_t *appended, size_t len)
{
	unsigned char *data = malloc(len > 0 ? len : 1);

	assert_non_null(data);
	for (size_t i = 0; i < len; i++)
		data[i] = stream_byte(*appended + i);
	assert_int_equal(rs_queue_append(q, data, len), 0);
	*appended += len;
	free(data);
}

/* Asserts that the queue holds exactly the stream bytes [sent, appended). */
static void assert_unsent_is_stream(const struct rs_queue *q, uint64_t sent,
				    uint64_t appended)
{
	struct iovec iov;
	int n = rs_queue_peek(q, &iov);

	assert_int_equal(rs_queue_len(q), appended - sent);
	if (appended == sent) {
		assert_int_equal(n, 0);
		return;
	}
	assert_int_equal(n, 1);
	assert_int_equal(iov.iov_len, appended - sent);
	for (size_t i = 0; i < iov.iov_len; i++)
		assert_int_equal(((unsigned char *)iov.iov_base)[i],
				 stream_byte(sent + i));
}

static uintptr_t unsent_addr(const struct rs_queue *q)
{
	struct iovec iov;

	assert_int_equal(rs_queue_peek(q, &iov), 1);
	return (uintptr_t)iov.iov_base;
}

/* An append of len bytes whose content the test does not look at. */
static void append_n(struct rs_queue *q, size_t len)
{
	uint64_t ignored = 0;

	append_stream(q, &ignored, len);
}

/* The growth rule of queue.c, restated as the model the tests expect. */
static size_t model_grown_cap(size_t cap, size_t needed)
{
	size_t grown = 2 * cap > needed ? 2 * cap : needed;

	return grown > 8 ? grown : 8;
}

static struct rs_queue_probe replay(enum rs_queue_strategy s,
				    const struct rs_queue_step *steps,
				    size_t nsteps)
{
	struct rs_queue_probe p;

	assert_int_equal(rs_queue_replay(s, steps, nsteps, &p), 0);
	return p;
}

/* ------------------------------------------------------------------------ */
/* Basics, for both strategies.                                             */

static void test_init_allocates_nothing(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct rs_queue q;
		struct iovec iov;

		rs_queue_init(&q, both[i]);
		assert_null(q.buf);
		assert_int_equal(q.cap, 0);
		assert_int_equal(rs_queue_len(&q), 0);
		assert_int_equal(rs_queue_peek(&q, &iov), 0);
		rs_queue_consume(&q, 10);
		assert_int_equal(q.allocations, 0);
		rs_queue_free(&q);
	}
}

static void test_append_zero_is_noop(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct rs_queue q;

		rs_queue_init(&q, both[i]);
		assert_int_equal(rs_queue_append(&q, NULL, 0), 0);
		assert_null(q.buf);
		assert_int_equal(q.allocations, 0);
		append_n(&q, 10);
		rs_queue_consume(&q, 4);
		assert_int_equal(rs_queue_append(&q, "x", 0), 0);
		assert_int_equal(rs_queue_len(&q), 6);
		assert_int_equal(q.allocations, 1);
		rs_queue_free(&q);
	}
}

/*
 * Schedules of appends and sends, each with the queue length expected after
 * each step (a step appends, then consumes).
 */
struct schedule {
	const char *name;
	size_t nsteps;
	struct rs_queue_step steps[6];
	size_t lens[6];
};

static const struct schedule schedules[] = {
	{ "one write, sent whole", 1, { { 100, 100 } }, { 0 } },
	{ "partial sends drain a write", 4,
	  { { 100, 30 }, { 0, 30 }, { 0, 30 }, { 0, 30 } },
	  { 70, 40, 10, 0 } },
	{ "appends behind a partly sent tail", 4,
	  { { 100, 10 }, { 50, 20 }, { 25, 0 }, { 0, 200 } },
	  { 90, 120, 145, 0 } },
	{ "a send larger than the queue", 2, { { 10, 1000 }, { 5, 0 } },
	  { 0, 5 } },
	{ "a drop of the prefix, then growth", 4,
	  { { 64, 40 }, { 8, 0 }, { 100, 50 }, { 0, 82 } },
	  { 24, 32, 82, 0 } },
	{ "empty steps", 3, { { 0, 0 }, { 0, 5 }, { 7, 3 } }, { 0, 0, 4 } },
};

#define NSCHEDULES (sizeof(schedules) / sizeof(schedules[0]))

static void run_schedule(const struct schedule *s, enum rs_queue_strategy st)
{
	struct rs_queue q;
	uint64_t appended = 0, sent = 0;

	rs_queue_init(&q, st);
	for (size_t i = 0; i < s->nsteps; i++) {
		size_t out;

		append_stream(&q, &appended, s->steps[i].append);
		out = s->steps[i].consume;
		if (out > rs_queue_len(&q))
			out = rs_queue_len(&q);
		rs_queue_consume(&q, s->steps[i].consume);
		sent += out;
		assert_int_equal(rs_queue_len(&q), s->lens[i]);
		assert_unsent_is_stream(&q, sent, appended);
	}
	rs_queue_free(&q);
}

static void test_schedules_keep_lengths_and_order(void **state)
{
	(void)state;
	for (size_t i = 0; i < NSCHEDULES; i++) {
		print_message("schedule: %s\n", schedules[i].name);
		run_schedule(&schedules[i], RS_QUEUE_CURSOR);
		run_schedule(&schedules[i], RS_QUEUE_MEMMOVE);
	}
}

static void test_replay_of_schedules_is_intact(void **state)
{
	(void)state;
	for (size_t i = 0; i < NSCHEDULES; i++) {
		const struct schedule *s = &schedules[i];

		for (size_t k = 0; k < 2; k++) {
			struct rs_queue_probe p =
				replay(both[k], s->steps, s->nsteps);

			assert_int_equal(p.intact, 1);
			assert_int_equal(p.final_len, s->lens[s->nsteps - 1]);
		}
	}
}

static void test_replay_of_nothing(void **state)
{
	struct rs_queue_probe p;

	(void)state;
	assert_int_equal(rs_queue_replay(subject, NULL, 0, &p), 0);
	assert_int_equal(p.intact, 1);
	assert_int_equal(p.final_len, 0);
	assert_int_equal(p.allocations, 0);
	assert_int_equal(p.bytes_moved, 0);
	assert_int_equal(p.unsent_moved, 0);
	assert_int_equal(p.max_cap, 0);
}

/* An emptied queue frees its buffer under both strategies, as before. */
static void test_emptied_queue_frees(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct rs_queue q;

		rs_queue_init(&q, both[i]);
		append_n(&q, 4 * KIB);
		rs_queue_consume(&q, KIB);
		rs_queue_consume(&q, 3 * KIB);
		assert_null(q.buf);
		assert_int_equal(q.cap, 0);
		assert_int_equal(q.head, 0);
		assert_int_equal(q.tail, 0);
		assert_int_equal(q.allocations, 1);
		append_n(&q, 100);
		assert_int_equal(q.allocations, 2);
		assert_int_equal(q.cap, 100);
		rs_queue_consume(&q, SIZE_MAX);
		assert_null(q.buf);
		rs_queue_free(&q);
		assert_int_equal(q.allocations, 2);
	}
}

/* ------------------------------------------------------------------------ */
/* Out of memory, for both strategies: -ENOMEM and the queue unchanged.     */

static void assert_queue_same(const struct rs_queue *a,
			      const struct rs_queue *b)
{
	assert_ptr_equal(a->buf, b->buf);
	assert_int_equal(a->head, b->head);
	assert_int_equal(a->tail, b->tail);
	assert_int_equal(a->cap, b->cap);
	assert_int_equal(a->bytes_moved, b->bytes_moved);
	assert_int_equal(a->allocations, b->allocations);
}

/*
 * SIZE_MAX / 4 bytes is more than any address space here, so malloc and
 * realloc fail for real; a size past PTRDIFF_MAX (SIZE_MAX, or one that
 * overflows with the bytes queued) is refused before any call.
 */
static void assert_append_fails(struct rs_queue *q, size_t len)
{
	struct rs_queue before = *q;
	static const char byte = 'x';

	assert_int_equal(rs_queue_append(q, &byte, len), -ENOMEM);
	assert_queue_same(q, &before);
}

static void test_enomem_leaves_queue_unchanged(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct rs_queue q;
		uint64_t appended = 0;

		rs_queue_init(&q, both[i]);
		assert_append_fails(&q, SIZE_MAX / 4);
		assert_append_fails(&q, SIZE_MAX);
		append_stream(&q, &appended, 100);
		assert_append_fails(&q, SIZE_MAX / 4);
		assert_append_fails(&q, SIZE_MAX - 50);
		assert_append_fails(&q, (size_t)PTRDIFF_MAX - 50);
		/* A due drop of the prefix must not happen either. */
		rs_queue_consume(&q, 60);
		assert_append_fails(&q, SIZE_MAX / 4);
		assert_unsent_is_stream(&q, 60, appended);
		rs_queue_free(&q);
	}
}

/* ------------------------------------------------------------------------ */
/* The compaction rule at its boundary (subject: fails on memmove).         */

/* head == unsent: the append drops the prefix, moving the unsent bytes. */
static void test_drops_prefix_when_it_equals_unsent(void **state)
{
	struct rs_queue q;
	uint64_t appended = 0;
	uintptr_t base;

	(void)state;
	rs_queue_init(&q, subject);
	append_stream(&q, &appended, 100);
	base = (uintptr_t)q.buf;
	rs_queue_consume(&q, 50);
	assert_int_equal(q.head, 50);
	assert_int_equal(q.bytes_moved, 0);
	append_stream(&q, &appended, 1);
	assert_int_equal(q.bytes_moved, 50);
	assert_int_equal(q.head, 0);
	assert_int_equal(q.tail, 51);
	/* 51 bytes fit in the 100 the first append took: no allocation. */
	assert_int_equal(q.allocations, 1);
	assert_int_equal((uintptr_t)q.buf, base);
	assert_unsent_is_stream(&q, 50, appended);
	rs_queue_free(&q);
}

/* head == unsent - 1: the prefix stays, and the buffer grows instead. */
static void test_keeps_prefix_one_below_unsent(void **state)
{
	struct rs_queue q;
	uint64_t appended = 0;

	(void)state;
	rs_queue_init(&q, subject);
	append_stream(&q, &appended, 101);
	rs_queue_consume(&q, 50);
	append_stream(&q, &appended, 1);
	assert_int_equal(q.bytes_moved, 0);
	assert_int_equal(q.head, 50);
	assert_int_equal(q.tail, 102);
	assert_int_equal(q.cap, model_grown_cap(101, 102));
	assert_int_equal(q.allocations, 2);
	assert_unsent_is_stream(&q, 50, appended);
	rs_queue_free(&q);
}

/* ------------------------------------------------------------------------ */
/* Address stability.                                                       */

/* A send never changes the address of the bytes still unsent. */
static void test_consume_keeps_unsent_addresses(void **state)
{
	struct rs_queue q;
	uint64_t appended = 0, sent = 0;

	(void)state;
	rs_queue_init(&q, subject);
	append_stream(&q, &appended, 64 * KIB);
	while (rs_queue_len(&q) > KIB) {
		uintptr_t before = unsent_addr(&q);

		rs_queue_consume(&q, KIB);
		sent += KIB;
		assert_int_equal(unsent_addr(&q), before + KIB);
	}
	assert_int_equal(q.bytes_moved, 0);
	assert_unsent_is_stream(&q, sent, appended);
	rs_queue_free(&q);
}

/*
 * One write of 256 KiB queued, then 64 sends of 4 KiB until it is gone: the
 * replay probe's count of unsent bytes that changed address on a send.
 */
static uint64_t unsent_moved_by_sends(enum rs_queue_strategy s)
{
	enum { STEPS = 65 };
	struct rs_queue_step steps[STEPS];
	struct rs_queue_probe p;

	steps[0] = (struct rs_queue_step){ 256 * KIB, 0 };
	for (size_t i = 1; i < STEPS; i++)
		steps[i] = (struct rs_queue_step){ 0, 4 * KIB };
	p = replay(s, steps, STEPS);
	assert_int_equal(p.intact, 1);
	assert_int_equal(p.final_len, 0);
	return p.unsent_moved;
}

static void test_sends_move_no_unsent_byte(void **state)
{
	(void)state;
	assert_int_equal(unsent_moved_by_sends(subject), 0);
}

/*
 * The same probe on the legacy strategy: each send that leaves k pages of
 * 4 KiB moves them, so 4 KiB * (63 + 62 + ... + 1) unsent bytes changed
 * address. This is what test_sends_move_no_unsent_byte rejects.
 */
static void test_legacy_sends_move_unsent_bytes(void **state)
{
	uint64_t expected = 4 * KIB * (63 * 64 / 2);

	(void)state;
	assert_true(unsent_moved_by_sends(RS_QUEUE_MEMMOVE) > 0);
	assert_int_equal(unsent_moved_by_sends(RS_QUEUE_MEMMOVE), expected);
}

/* ------------------------------------------------------------------------ */
/* end(P) at clamp C.                                                       */

/*
 * end(P) at clamp C: the call sends C bytes `sends_in_call` times, the rest
 * is appended once, then each writable event sends C. With n = P / C the
 * queue sees n - sends_in_call flushes; under the legacy strategy each but
 * the last moves what is left: C * (m - 1) * m / 2 with m the flushes.
 * The seed's table fits sends_in_call = 2, this project's model 1.
 */
static uint64_t end_closed_form(size_t payload, size_t clamp,
				unsigned sends_in_call)
{
	uint64_t m = payload / clamp - sends_in_call;

	return (uint64_t)clamp * m * (m - 1) / 2;
}

/*
 * Step 0 only queues, so that every send is a step of its own and the
 * probe's unsent_moved counts the moves of every send.
 */
static struct rs_queue_probe run_end_model(enum rs_queue_strategy s,
					   size_t payload, size_t clamp,
					   unsigned sends_in_call)
{
	size_t flushes = payload / clamp - sends_in_call;
	struct rs_queue_step *steps = calloc(flushes + 1, sizeof(*steps));
	struct rs_queue_probe p;

	assert_non_null(steps);
	steps[0].append = payload - sends_in_call * clamp;
	for (size_t i = 1; i <= flushes; i++)
		steps[i].consume = clamp;
	p = replay(s, steps, flushes + 1);
	free(steps);
	assert_int_equal(p.intact, 1);
	assert_int_equal(p.final_len, 0);
	return p;
}

static const size_t end_cases[][2] = {
	{ 64 * KIB, 4 * KIB },
	{ 128 * KIB, 4 * KIB },
	{ 1 * MIB, 4 * KIB },
	{ 1 * MIB, 16 * KIB },
};

#define NEND (sizeof(end_cases) / sizeof(end_cases[0]))

static void test_end_model_moves_nothing(void **state)
{
	(void)state;
	for (size_t i = 0; i < NEND; i++) {
		size_t payload = end_cases[i][0], clamp = end_cases[i][1];
		struct rs_queue_probe p =
			run_end_model(subject, payload, clamp, 1);

		assert_int_equal(p.bytes_moved, 0);
		assert_int_equal(p.unsent_moved, 0);
		assert_int_equal(p.allocations, 1);
		assert_int_equal(p.max_cap, payload - clamp);
	}
}

static void test_legacy_end_model_is_closed_form(void **state)
{
	(void)state;
	for (size_t i = 0; i < NEND; i++) {
		size_t payload = end_cases[i][0], clamp = end_cases[i][1];
		uint64_t closed = end_closed_form(payload, clamp, 1);
		struct rs_queue_probe p =
			run_end_model(RS_QUEUE_MEMMOVE, payload, clamp, 1);

		assert_int_equal(p.bytes_moved, closed);
		/* Every byte the legacy queue moves is an unsent byte. */
		assert_int_equal(p.unsent_moved, closed);
		assert_int_equal(p.allocations, 1);
	}
}

/*
 * The seed's table (the pull request's "Bytes moved", and DESIGN.md
 * behaviour 1) is the closed form with two sends in the call. One row is
 * replayed for real.
 */
static void test_legacy_seed_table_is_two_sends_in_call(void **state)
{
	(void)state;
	assert_int_equal(end_closed_form(4 * MIB, 16 * KIB, 2),
			 UINT64_C(526434304));
	assert_int_equal(end_closed_form(4 * MIB, 4 * KIB, 2),
			 UINT64_C(2137010176));
	assert_int_equal(end_closed_form(32 * MIB, 4 * KIB, 2),
			 UINT64_C(137355079680));
	assert_int_equal(
		run_end_model(RS_QUEUE_MEMMOVE, 4 * MIB, 16 * KIB, 2)
			.bytes_moved,
		UINT64_C(526434304));
}

/* ------------------------------------------------------------------------ */
/* Allocation sizes: analogues of the pull request's node:net tests.       */

/*
 * Analogue of "writev clamp below the tail": 16 KiB are queued, a write of
 * 63 KiB arrives, the writev of both is clamped to 1 KiB, so 1 KiB of the
 * tail leaves and the whole write joins the queue.
 */
static void writev_clamp_below_tail(struct rs_queue *q)
{
	append_n(q, 16 * KIB);
	rs_queue_consume(q, KIB);
	append_n(q, 63 * KIB);
}

static void test_writev_clamp_below_tail(void **state)
{
	struct rs_queue q;
	/* The 1 KiB prefix stays: 1 + 15 + 63 KiB, past 2 * 16 KiB. */
	size_t expected = model_grown_cap(16 * KIB, 79 * KIB);

	(void)state;
	assert_int_equal(expected, 80896); /* the pull request's figure */
	rs_queue_init(&q, subject);
	writev_clamp_below_tail(&q);
	assert_int_equal(q.cap, expected);
	assert_int_equal(q.tail, expected);
	assert_int_equal(q.bytes_moved, 0);
	assert_int_equal(q.allocations, 2);
	rs_queue_free(&q);
}

static void test_legacy_writev_clamp_below_tail(void **state)
{
	struct rs_queue q;
	/* The send moved the 15 KiB left to the front: 15 + 63 KiB. */
	size_t expected = model_grown_cap(16 * KIB, 78 * KIB);

	(void)state;
	assert_int_equal(expected, 79872); /* main's figure in the pull request */
	rs_queue_init(&q, RS_QUEUE_MEMMOVE);
	writev_clamp_below_tail(&q);
	assert_int_equal(q.cap, expected);
	assert_int_equal(q.bytes_moved, 15 * KIB);
	assert_int_equal(q.allocations, 2);
	rs_queue_free(&q);
}

/*
 * Analogue of "a write behind a tail that writable events partly sent":
 * 512 KiB are queued, two writable events send 1 KiB each, then a write of
 * 767 KiB arrives (more than the buffer, so it grows to the size needed).
 */
static void write_behind_partly_sent_tail(struct rs_queue *q)
{
	append_n(q, 512 * KIB);
	rs_queue_consume(q, KIB);
	rs_queue_consume(q, KIB);
	append_n(q, 767 * KIB);
}

static void test_write_behind_partly_sent_tail(void **state)
{
	struct rs_queue q;
	size_t expected = model_grown_cap(512 * KIB, (512 + 767) * KIB);

	(void)state;
	assert_int_equal(expected, 1309696); /* the pull request's figure */
	rs_queue_init(&q, subject);
	write_behind_partly_sent_tail(&q);
	assert_int_equal(q.cap, expected);
	assert_int_equal(q.head, 2 * KIB);
	assert_int_equal(q.bytes_moved, 0);
	assert_int_equal(q.allocations, 2);
	rs_queue_free(&q);
}

static void test_legacy_write_behind_partly_sent_tail(void **state)
{
	struct rs_queue q;
	size_t expected = model_grown_cap(512 * KIB, (510 + 767) * KIB);

	(void)state;
	assert_int_equal(expected, 1307648); /* main's figure in the pull request */
	rs_queue_init(&q, RS_QUEUE_MEMMOVE);
	write_behind_partly_sent_tail(&q);
	assert_int_equal(q.cap, expected);
	assert_int_equal(q.bytes_moved, (511 + 510) * KIB);
	assert_int_equal(q.allocations, 2);
	rs_queue_free(&q);
}

/*
 * The pull request's downside: 1,044,480 bytes queued (a 1 MiB write less
 * the 4 KiB the call sent), writable events send 508 KiB, so the sent prefix is
 * under half; a 1 KiB write then doubles the buffer although only 525,312
 * bytes are unsent, where the legacy queue fits them in what it has.
 */
static void write_behind_under_half_sent_tail(struct rs_queue *q)
{
	append_n(q, 1020 * KIB);
	rs_queue_consume(q, 508 * KIB);
	append_n(q, KIB);
}

static void test_write_behind_under_half_sent_tail(void **state)
{
	struct rs_queue q;
	size_t expected = model_grown_cap(1020 * KIB, 1021 * KIB);

	(void)state;
	assert_int_equal(expected, 2088960); /* the pull request's figure */
	rs_queue_init(&q, subject);
	write_behind_under_half_sent_tail(&q);
	assert_int_equal(rs_queue_len(&q), 525312);
	assert_int_equal(q.cap, expected);
	assert_int_equal(q.bytes_moved, 0);
	rs_queue_free(&q);
}

static void test_legacy_write_behind_under_half_sent_tail(void **state)
{
	struct rs_queue q;

	(void)state;
	rs_queue_init(&q, RS_QUEUE_MEMMOVE);
	write_behind_under_half_sent_tail(&q);
	assert_int_equal(rs_queue_len(&q), 525312);
	assert_int_equal(q.cap, 1044480); /* main's figure in the pull request */
	assert_int_equal(q.bytes_moved, 512 * KIB);
	assert_int_equal(q.allocations, 1);
	rs_queue_free(&q);
}

/*
 * A writev that takes the whole tail and part of the next write: the queue
 * empties (and frees), then the rest of the write is a fresh allocation of
 * exactly its size. Both strategies.
 */
static void test_writev_past_tail_frees_then_allocates(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct rs_queue q;

		rs_queue_init(&q, both[i]);
		append_n(&q, 16 * KIB);
		rs_queue_consume(&q, 16 * KIB);
		assert_null(q.buf);
		append_n(&q, 63 * KIB);
		assert_int_equal(q.cap, 63 * KIB);
		assert_int_equal(q.allocations, 2);
		assert_int_equal(q.bytes_moved, 0);
		rs_queue_free(&q);
	}
}

/* ------------------------------------------------------------------------ */
/* The prefix rule against "drop the prefix whenever an append misfits".    */

/*
 * The pull request's comparison: a 1 MiB write, 4 KiB sent in the call, so
 * 1,044,480 bytes queued; then rounds of "send 4 KiB, append 4 KiB". At each append
 * u = 1,040,384 bytes are unsent.
 *
 * The misfit rule: the first append takes exactly 1,044,480 bytes, so every
 * later append misfits and moves u: rounds * u.
 *
 * This queue's rule: the prefix grows by 4 KiB a round and is dropped once
 * it reaches u, every ceil(u / 4 KiB) rounds, moving u each time.
 */
static uint64_t model_misfit_rule(uint64_t unsent, uint64_t rounds)
{
	return rounds * unsent;
}

static uint64_t model_prefix_rule(uint64_t unsent, uint64_t round,
				  uint64_t rounds)
{
	uint64_t period = (unsent + round - 1) / round;

	return rounds / period * unsent;
}

enum { ROUNDS = 2000 };

static struct rs_queue_probe run_rounds(enum rs_queue_strategy s)
{
	struct rs_queue_step *steps = calloc(ROUNDS + 1, sizeof(*steps));
	struct rs_queue_probe p;

	assert_non_null(steps);
	/* Step i appends, then sends the first 4 KiB of round i + 1. */
	steps[0] = (struct rs_queue_step){ MIB - 4 * KIB, 4 * KIB };
	for (size_t i = 1; i < ROUNDS; i++)
		steps[i] = (struct rs_queue_step){ 4 * KIB, 4 * KIB };
	steps[ROUNDS] = (struct rs_queue_step){ 4 * KIB, 0 };
	p = replay(s, steps, ROUNDS + 1);
	free(steps);
	assert_int_equal(p.intact, 1);
	assert_int_equal(p.final_len, MIB - 4 * KIB);
	return p;
}

static void test_prefix_rule_rounds_behind_1mib_tail(void **state)
{
	uint64_t unsent = MIB - 8 * KIB;
	uint64_t ours = model_prefix_rule(unsent, 4 * KIB, ROUNDS);
	struct rs_queue_probe p;

	(void)state;
	/* The model reproduces the pull request's figure for the misfit rule. */
	assert_int_equal(model_misfit_rule(unsent, ROUNDS),
			 UINT64_C(2080768000));
	p = run_rounds(subject);
	print_message("prefix rule: %llu bytes moved (misfit rule %llu)\n",
		      (unsigned long long)p.bytes_moved,
		      (unsigned long long)model_misfit_rule(unsent, ROUNDS));
	assert_int_equal(p.bytes_moved, ours);
	/* The first round's append misfits with a small prefix: it grows. */
	assert_int_equal(p.max_cap, model_grown_cap(MIB - 4 * KIB, MIB));
	assert_int_equal(p.allocations, 2);
}

/* The legacy queue moves u on every send: as much as the misfit rule. */
static void test_legacy_rounds_behind_1mib_tail(void **state)
{
	uint64_t unsent = MIB - 8 * KIB;
	struct rs_queue_probe p;

	(void)state;
	p = run_rounds(RS_QUEUE_MEMMOVE);
	assert_int_equal(p.bytes_moved, model_misfit_rule(unsent, ROUNDS));
}

/* ------------------------------------------------------------------------ */

static int subject_from_env(void)
{
	const char *v = getenv("WIRECHECK_TEST_QUEUE");

	if (v == NULL || strcmp(v, "cursor") == 0)
		subject = RS_QUEUE_CURSOR;
	else if (strcmp(v, "memmove") == 0)
		subject = RS_QUEUE_MEMMOVE;
	else
		return -EINVAL;
	return 0;
}

/*
 * Large buffers (4 MiB and up) are 2 MiB-aligned mappings so that the kernel
 * can back them with huge pages (queue.c, docs/queue-model.md). A queue that
 * grows from a small malloc'd buffer into a mapping, then into a larger
 * mapping, keeps every unsent byte in order and frees on empty. The
 * alignment check fails on the queue before this rule, whose large buffers
 * came from malloc (glibc puts a 16-byte header before a mapped chunk).
 */
static void test_large_buffers_are_huge_aligned(void **state)
{
	const size_t chunk = 3 * MIB;
	char *data = malloc(4 * chunk);
	uint64_t expect = 0;

	(void)state;
	assert_non_null(data);
	for (size_t i = 0; i < 4 * chunk; i++)
		data[i] = (char)(i * 7 + i / 4099);
	for (size_t k = 0; k < sizeof(both) / sizeof(both[0]); k++) {
		struct rs_queue q;
		struct iovec iov;
		size_t sent = 0;

		rs_queue_init(&q, both[k]);
		assert_int_equal(rs_queue_append(&q, data, chunk), 0);
		assert_true(q.cap < 4 * MIB); /* malloc'd */
		rs_queue_consume(&q, 1000);
		sent += 1000;
		/* 3 MiB - 1000 unsent + 3 MiB: a 6 MiB mapping. */
		assert_int_equal(rs_queue_append(&q, data + chunk, chunk), 0);
		assert_true(q.cap >= 4 * MIB);
		assert_int_equal((uintptr_t)q.buf % (2 * MIB), 0);
		rs_queue_consume(&q, MIB);
		sent += MIB;
		/* Past 6 MiB: a larger mapping, still aligned. */
		assert_int_equal(rs_queue_append(&q, data + 2 * chunk,
						 2 * chunk), 0);
		assert_true(q.cap >= 8 * MIB);
		assert_int_equal((uintptr_t)q.buf % (2 * MIB), 0);
		assert_int_equal(rs_queue_peek(&q, &iov), 1);
		assert_int_equal(iov.iov_len, 4 * chunk - sent);
		assert_memory_equal(iov.iov_base, data + sent, iov.iov_len);
		expect = q.allocations;
		rs_queue_consume(&q, iov.iov_len);
		assert_null(q.buf);
		assert_int_equal(q.cap, 0);
		assert_int_equal(q.allocations, expect);
	}
	free(data);
}

/* The process's mapped address space in bytes (/proc/self/statm's first
 * field, in pages). */
static uint64_t mapped_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long pages = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%llu", &pages), 1);
	assert_int_equal(fclose(f), 0);
	return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * A large buffer whose size is not a whole number of pages leaves nothing
 * mapped once freed. The first version unmapped the slack after such a
 * buffer from an address inside a page, which munmap refuses: each round
 * below then kept about 2 MiB of address space (400 MB over 200 rounds);
 * now the growth stays under one round's mapping.
 */
static void test_large_buffers_leave_nothing_mapped(void **state)
{
	const size_t len = 5000001; /* not a multiple of any page size */
	char *data = calloc(1, len);
	uint64_t before;

	(void)state;
	assert_non_null(data);
	before = mapped_bytes();
	for (int round = 0; round < 200; round++) {
		struct rs_queue q;

		rs_queue_init(&q, RS_QUEUE_CURSOR);
		assert_int_equal(rs_queue_append(&q, data, len), 0);
		assert_int_equal(q.cap, len);
		rs_queue_consume(&q, len);
		assert_null(q.buf);
	}
	assert_true(mapped_bytes() < before + 8 * MIB);
	free(data);
}

/* ------------------------------------------------------------------------ */
/* Owned bytes (rs_queue_append_owned), for both strategies.                */

/* Gathers the unsent bytes through rs_queue_peekv into out (cap bytes);
 * returns how many runs peekv gave. */
static int gather_unsent(const struct rs_queue *q, unsigned char *out,
			 size_t cap)
{
	struct iovec iov[16];
	int n = rs_queue_peekv(q, iov, 16);
	size_t at = 0;

	for (int i = 0; i < n; i++) {
		assert_true(at + iov[i].iov_len <= cap);
		memcpy(out + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	assert_int_equal(at, rs_queue_len(q));
	return n;
}

/* An owned append copies nothing and allocates no buffer: the queue points
 * at the caller's bytes. */
static void test_owned_append_copies_nothing(void **state)
{
	(void)state;
	for (size_t k = 0; k < 2; k++) {
		static char data[1000];
		struct rs_queue q;
		struct iovec iov;

		rs_queue_init(&q, both[k]);
		assert_int_equal(rs_queue_append_owned(&q, data, sizeof(data)), 0);
		assert_int_equal(rs_queue_len(&q), sizeof(data));
		assert_int_equal(q.bytes_copied, 0);
		assert_int_equal(q.allocations, 0);
		assert_null(q.buf);
		assert_int_equal(rs_queue_peek(&q, &iov), 1);
		assert_ptr_equal(iov.iov_base, data);
		assert_int_equal(iov.iov_len, sizeof(data));
		rs_queue_consume(&q, 10);
		assert_int_equal(rs_queue_peek(&q, &iov), 1);
		assert_ptr_equal(iov.iov_base, data + 10);
		rs_queue_free(&q);
	}
}

/* An owned append into an empty queue is its one run: no ring of
 * segments and no allocation; the run shortens in place, and the queue is
 * empty once it is consumed (a consume past the end too). */
static void test_owned_one_run_has_no_ring(void **state)
{
	(void)state;
	for (size_t k = 0; k < 2; k++) {
		static char data[100];
		struct rs_queue q;
		struct iovec iov[4];

		rs_queue_init(&q, both[k]);
		assert_int_equal(rs_queue_append_owned(&q, data, 100), 0);
		assert_null(q.segs);
		assert_ptr_equal(q.owned_at, data);
		assert_int_equal(rs_queue_peekv(&q, iov, 4), 1);
		assert_ptr_equal(iov[0].iov_base, data);
		assert_int_equal(iov[0].iov_len, 100);
		rs_queue_consume(&q, 30);
		assert_int_equal(rs_queue_len(&q), 70);
		assert_int_equal(rs_queue_peekv(&q, iov, 4), 1);
		assert_ptr_equal(iov[0].iov_base, data + 30);
		assert_int_equal(iov[0].iov_len, 70);
		rs_queue_consume(&q, 71);
		assert_int_equal(rs_queue_len(&q), 0);
		assert_int_equal(rs_queue_peekv(&q, iov, 4), 0);
		assert_null(q.owned_at);
		/* Empty again: a copied append is buf alone. */
		assert_int_equal(rs_queue_append(&q, "abc", 3), 0);
		assert_null(q.segs);
		assert_int_equal(rs_queue_peekv(&q, iov, 4), 1);
		assert_memory_equal(iov[0].iov_base, "abc", 3);
		rs_queue_free(&q);
	}
}

/* A second run behind the one owned run, copied or owned, starts the ring
 * with the owned run first (partly sent or not): the order holds. */
static void test_owned_one_run_then_more_keeps_order(void **state)
{
	(void)state;
	for (size_t k = 0; k < 2; k++) {
		static const char owned[8] = "01234567", more[4] = "MORE";
		unsigned char out[32];
		struct rs_queue q;
		struct iovec iov[4];

		rs_queue_init(&q, both[k]);
		assert_int_equal(rs_queue_append_owned(&q, owned, 8), 0);
		rs_queue_consume(&q, 2);
		assert_int_equal(rs_queue_append(&q, "ab", 2), 0);
		assert_non_null(q.segs);
		assert_int_equal(rs_queue_append_owned(&q, more, 4), 0);
		assert_int_equal(rs_queue_peekv(&q, iov, 4), 3);
		assert_ptr_equal(iov[0].iov_base, owned + 2);
		assert_ptr_equal(iov[2].iov_base, more);
		(void)gather_unsent(&q, out, sizeof(out));
		assert_memory_equal(out, "234567abMORE", 12);
		assert_int_equal(q.bytes_copied, 2);
		rs_queue_free(&q);

		rs_queue_init(&q, both[k]);
		assert_int_equal(rs_queue_append_owned(&q, owned, 8), 0);
		assert_int_equal(rs_queue_append_owned(&q, more, 4), 0);
		assert_int_equal(rs_queue_peekv(&q, iov, 4), 2);
		assert_ptr_equal(iov[0].iov_base, owned);
		assert_ptr_equal(iov[1].iov_base, more);
		rs_queue_consume(&q, 10);
		(void)gather_unsent(&q, out, sizeof(out));
		assert_memory_equal(out, "RE", 2);
		rs_queue_consume(&q, 2);
		assert_null(q.segs);
		assert_int_equal(q.owned_len, 0);
		rs_queue_free(&q);
	}
}

/* The one owned run moves into another queue by reference, past skip. */
static void test_append_queue_of_one_owned_run(void **state)
{
	(void)state;
	for (size_t k = 0; k < 2; k++) {
		static const char owned[8] = "01234567";
		struct rs_queue src, dst;
		struct iovec iov[2];

		rs_queue_init(&src, both[k]);
		rs_queue_init(&dst, both[k]);
		assert_int_equal(rs_queue_append_owned(&src, owned, 8), 0);
		assert_int_equal(rs_queue_append_queue(&dst, &src, 8), 0);
		assert_int_equal(rs_queue_len(&dst), 0);
		assert_int_equal(rs_queue_append_queue(&dst, &src, 3), 0);
		assert_int_equal(rs_queue_len(&dst), 5);
		assert_int_equal(dst.bytes_copied, 0);
		assert_int_equal(rs_queue_peekv(&dst, iov, 2), 1);
		assert_ptr_equal(iov[0].iov_base, owned + 3);
		assert_int_equal(rs_queue_len(&src), 8);
		rs_queue_free(&src);
		rs_queue_free(&dst);
	}
}

/* Copied and owned runs alternate: peekv gives them in append order, a
 * consume across runs keeps the order, and bytes_copied counts only the
 * copied ones. Stream bytes 0..99: copied 10, owned 20, copied 30, owned
 * 40. */
static void test_owned_runs_keep_order(void **state)
{
	(void)state;
	for (size_t k = 0; k < 2; k++) {
		unsigned char src[100], out[100];
		struct rs_queue q;
		uint64_t sent = 0;

		for (size_t i = 0; i < sizeof(src); i++)
			src[i] = stream_byte(i);
		rs_queue_init(&q, both[k]);
		assert_int_equal(rs_queue_append(&q, src, 10), 0);
		assert_int_equal(rs_queue_append_owned(&q, src + 10, 20), 0);
		assert_int_equal(rs_queue_append(&q, src + 30, 30), 0);
		assert_int_equal(rs_queue_append_owned(&q, src + 60, 40), 0);
		assert_int_equal(q.bytes_copied, 40);
		assert_int_equal(rs_queue_len(&q), 100);
		assert_int_equal(gather_unsent(&q, out, sizeof(out)), 4);
		assert_memory_equal(out, src, 100);
		/* Consumes that end inside each kind of run and across runs. */
		static const size_t steps[] = { 3, 17, 15, 1, 30, 14, 20 };
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			size_t len;

			rs_queue_consume(&q, steps[i]);
			sent += steps[i];
			len = rs_queue_len(&q);
			assert_int_equal(len, 100 - sent);
			if (len > 0) {
				(void)gather_unsent(&q, out, sizeof(out));
				assert_memory_equal(out, src + sent, len);
			}
		}
		assert_int_equal(rs_queue_len(&q), 0);
		assert_null(q.segs);
		rs_queue_free(&q);
	}
}

/* Once no owned byte is left, the queue is one buffer again: one run, and
 * an append behind it is contiguous. */
static void test_owned_consumed_leaves_one_buffer(void **state)
{
	(void)state;
	for (size_t k = 0; k < 2; k++) {
		static const char owned[5] = "OWNED";
		unsigned char out[32];
		struct rs_queue q;

		rs_queue_init(&q, both[k]);
		assert_int_equal(rs_queue_append_owned(&q, owned, 5), 0);
		assert_int_equal(rs_queue_append(&q, "abc", 3), 0);
		assert_non_null(q.segs);
		rs_queue_consume(&q, 5);
		assert_null(q.segs);
		assert_int_equal(q.owned_len, 0);
		assert_int_equal(rs_queue_append(&q, "def", 3), 0);
		assert_int_equal(gather_unsent(&q, out, sizeof(out)), 1);
		assert_memory_equal(out, "abcdef", 6);
		rs_queue_free(&q);
	}
}

/* Moving one queue's bytes into another (the cork buffer into the pending
 * queue): copied runs are copied, owned runs stay by reference. */
static void test_append_queue_keeps_owned_by_reference(void **state)
{
	(void)state;
	for (size_t k = 0; k < 2; k++) {
		static const char owned[8] = "01234567";
		struct rs_queue src, dst;
		struct iovec iov[8];
		unsigned char out[32];

		rs_queue_init(&src, both[k]);
		rs_queue_init(&dst, both[k]);
		assert_int_equal(rs_queue_append(&src, "abcd", 4), 0);
		assert_int_equal(rs_queue_append_owned(&src, owned, 8), 0);
		assert_int_equal(rs_queue_append(&src, "xy", 2), 0);
		/* The first 6 bytes were sent: 4 copied, 2 owned. */
		assert_int_equal(rs_queue_append_queue(&dst, &src, 6), 0);
		assert_int_equal(rs_queue_len(&dst), 8);
		assert_int_equal(dst.bytes_copied, 2);
		assert_int_equal(rs_queue_peekv(&dst, iov, 8), 2);
		assert_ptr_equal(iov[0].iov_base, owned + 2);
		assert_int_equal(iov[0].iov_len, 6);
		(void)gather_unsent(&dst, out, sizeof(out));
		assert_memory_equal(out, "234567xy", 8);
		/* src is unchanged. */
		assert_int_equal(rs_queue_len(&src), 14);
		rs_queue_free(&src);
		rs_queue_free(&dst);
	}
}

/* peekv stops at max runs, in order. */
static void test_peekv_stops_at_max(void **state)
{
	static const char owned[3] = "OOO";
	struct rs_queue q;
	struct iovec iov[2];

	(void)state;
	rs_queue_init(&q, subject);
	assert_int_equal(rs_queue_append(&q, "c", 1), 0);
	assert_int_equal(rs_queue_append_owned(&q, owned, 3), 0);
	assert_int_equal(rs_queue_append(&q, "c", 1), 0);
	assert_int_equal(rs_queue_peekv(&q, iov, 2), 2);
	assert_int_equal(iov[0].iov_len, 1);
	assert_ptr_equal(iov[1].iov_base, owned);
	assert_int_equal(rs_queue_peekv(&q, iov, 0), 0);
	rs_queue_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_allocates_nothing),
		cmocka_unit_test(test_append_zero_is_noop),
		cmocka_unit_test(test_schedules_keep_lengths_and_order),
		cmocka_unit_test(test_replay_of_schedules_is_intact),
		cmocka_unit_test(test_replay_of_nothing),
		cmocka_unit_test(test_emptied_queue_frees),
		cmocka_unit_test(test_enomem_leaves_queue_unchanged),
		cmocka_unit_test(test_drops_prefix_when_it_equals_unsent),
		cmocka_unit_test(test_keeps_prefix_one_below_unsent),
		cmocka_unit_test(test_consume_keeps_unsent_addresses),
		cmocka_unit_test(test_sends_move_no_unsent_byte),
		cmocka_unit_test(test_legacy_sends_move_unsent_bytes),
		cmocka_unit_test(test_end_model_moves_nothing),
		cmocka_unit_test(test_legacy_end_model_is_closed_form),
		cmocka_unit_test(test_legacy_seed_table_is_two_sends_in_call),
		cmocka_unit_test(test_writev_clamp_below_tail),
		cmocka_unit_test(test_legacy_writev_clamp_below_tail),
		cmocka_unit_test(test_write_behind_partly_sent_tail),
		cmocka_unit_test(test_legacy_write_behind_partly_sent_tail),
		cmocka_unit_test(test_write_behind_under_half_sent_tail),
		cmocka_unit_test(test_legacy_write_behind_under_half_sent_tail),
		cmocka_unit_test(test_writev_past_tail_frees_then_allocates),
		cmocka_unit_test(test_prefix_rule_rounds_behind_1mib_tail),
		cmocka_unit_test(test_legacy_rounds_behind_1mib_tail),
		cmocka_unit_test(test_large_buffers_are_huge_aligned),
		cmocka_unit_test(test_large_buffers_leave_nothing_mapped),
		cmocka_unit_test(test_owned_append_copies_nothing),
		cmocka_unit_test(test_owned_one_run_has_no_ring),
		cmocka_unit_test(test_owned_one_run_then_more_keeps_order),
		cmocka_unit_test(test_append_queue_of_one_owned_run),
		cmocka_unit_test(test_owned_runs_keep_order),
		cmocka_unit_test(test_owned_consumed_leaves_one_buffer),
		cmocka_unit_test(test_append_queue_keeps_owned_by_reference),
		cmocka_unit_test(test_peekv_stops_at_max),
	};

	if (subject_from_env() < 0) {
		fprintf(stderr, "test_queue: WIRECHECK_TEST_QUEUE must be "
				"cursor or memmove\n");
		return 2;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
