/*
 * test_copies.c: the bytes the stack copies, counted by
 * rs_socket_bytes_copied, on a real connected pair (stack_pair.h).
 *
 * The invariant of the copying write path: a plain write (not corked, not
 * batched) copies exactly the bytes the kernel did not take in its own
 * call, each once, and nothing when the kernel takes them all. The cork
 * buffer and the batch are copies of their own, each counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "stack_pair.h"

#define KIB ((size_t)1024)

/* Byte k of the stream a test writes. */
static unsigned char stream_byte(uint64_t k)
{
	return (unsigned char)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 56);
}

struct plan {
	const size_t *sizes;
	size_t n;
	int cork;           /* cork around the writes */
	uint64_t expected;  /* the bytes copied, as each call predicted */
	uint64_t appended;  /* stream bytes written */
	int mismatch;       /* a write whose copy differed from its call's */
};


/* One write of len stream bytes; checks that the copy of this call is the
 * part of the write the kernel did not take in it. */
static void write_checked(struct plan *pl, rs_socket *c, size_t len)
{
	unsigned char *data = malloc(len);
	uint64_t written0 = rs_socket_bytes_written(c);
	uint64_t copied0 = rs_socket_bytes_copied(c);
	size_t queued = rs_socket_writable_length(c);
	uint64_t took, took_new, copied;

	assert_non_null(data);
	for (size_t i = 0; i < len; i++)
		data[i] = stream_byte(pl->appended + i);
	pl->appended += len;
	assert_true(rs_socket_write(c, data, len, NULL, NULL) >= 0);
	free(data);
	took = rs_socket_bytes_written(c) - written0;
	/* The queued bytes leave first; the rest of what the kernel took in
	 * the call is this write's. */
	took_new = took > queued ? took - queued : 0;
	copied = rs_socket_bytes_copied(c) - copied0;
	if (copied != len - took_new)
		pl->mismatch++;
	pl->expected += len - took_new;
}

static void script_writes(struct sp_pair *p, rs_socket *c)
{
	struct plan *pl = p->arg;

	for (size_t i = 0; i < pl->n; i++)
		write_checked(pl, c, pl->sizes[i]);
	assert_int_equal(rs_socket_end(c, NULL, 0, NULL, NULL), 0);
}

static void assert_received_stream(const struct sp_pair *p, uint64_t len)
{
	assert_int_equal(p->recv_len, len);
	for (uint64_t k = 0; k < len; k++) {
		if (p->recv[k] != stream_byte(k))
			fail_msg("byte %llu differs", (unsigned long long)k);
	}
}

static const size_t mixed[] = { 1, 4095, 4096, 4097, 64 * KIB, 100000, 7,
				16 * KIB, 3 };

/* Under a 4 KiB clamp every write copies what its call left, once. */
static void test_plain_writes_copy_what_the_call_left(void **state)
{
	struct plan pl = { mixed, sizeof(mixed) / sizeof(mixed[0]), 0, 0, 0, 0 };
	struct sp_pair p;

	(void)state;
	rs_config.batch = 0;
	sp_arm("write:short=4096,repeat=forever");
	sp_run(&p, script_writes, &pl);
	assert_int_equal(pl.mismatch, 0);
	assert_int_equal(p.client_error, 0);
	assert_int_equal(p.client_copied, pl.expected);
	/* Each byte at most once: never more than was written. */
	assert_true(p.client_copied <= pl.appended);
	/* The clamp left bytes behind: the check above was not vacuous. */
	assert_true(pl.expected > 0);
	assert_received_stream(&p, pl.appended);
	sp_free(&p);
}

/* The kernel takes every byte of small writes on an empty socket: no copy. */
static void test_taken_writes_copy_nothing(void **state)
{
	static const size_t small[] = { 1, 100, 1000, 4000 };
	struct plan pl = { small, 4, 0, 0, 0, 0 };
	struct sp_pair p;

	(void)state;
	rs_config.batch = 0;
	sp_run(&p, script_writes, &pl);
	assert_int_equal(pl.mismatch, 0);
	assert_int_equal(p.client_copied, 0);
	assert_received_stream(&p, pl.appended);
	sp_free(&p);
}

static void script_corked(struct sp_pair *p, rs_socket *c)
{
	size_t *len = p->arg;
	unsigned char *data = malloc(*len);

	assert_non_null(data);
	for (size_t i = 0; i < *len; i++)
		data[i] = stream_byte(i);
	rs_socket_cork(c);
	assert_true(rs_socket_write(c, data, *len, NULL, NULL) >= 0);
	free(data);
	rs_socket_uncork(c);
	assert_int_equal(rs_socket_end(c, NULL, 0, NULL, NULL), 0);
}

/* A corked write is copied into the cork buffer; what the uncork's send
 * leaves is copied again into the queue: both counted. */
static void test_cork_copies_are_counted(void **state)
{
	size_t len = 10000;
	struct sp_pair p;

	(void)state;
	sp_arm("write:short=4096,repeat=forever");
	sp_run(&p, script_corked, &len);
	assert_int_equal(p.client_copied, len + (len - 4096));
	assert_received_stream(&p, len);
	sp_free(&p);
}

static void script_batched(struct sp_pair *p, rs_socket *c)
{
	unsigned char data[300];

	(void)p;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = stream_byte(i);
	/* The first write of the task goes to the kernel in the call; the
	 * two after it wait in the batch, copied. */
	assert_true(rs_socket_write(c, data, 100, NULL, NULL) >= 0);
	assert_true(rs_socket_write(c, data + 100, 100, NULL, NULL) >= 0);
	assert_true(rs_socket_write(c, data + 200, 100, NULL, NULL) >= 0);
	assert_int_equal(rs_socket_bytes_copied(c), 200);
	assert_int_equal(rs_socket_end(c, NULL, 0, NULL, NULL), 0);
}

static void test_batch_copies_are_counted(void **state)
{
	struct sp_pair p;

	(void)state;
	rs_config.batch = 1;
	sp_run(&p, script_batched, NULL);
	assert_int_equal(p.client_copied, 200);
	assert_received_stream(&p, 300);
	sp_free(&p);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, sp_setup, sp_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_plain_writes_copy_what_the_call_left),
		T(test_taken_writes_copy_nothing),
		T(test_cork_copies_are_counted),
		T(test_batch_copies_are_counted),
	};

	if (fi_init() < 0)
		return 2;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
