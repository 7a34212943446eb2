/*
 * test_write_pair.c: rs__socket_write_pair (with which a small WebSocket
 * send builds its frame in the batch) against rs_socket_write of the same bytes
 * in one buffer, on a real connected pair (stack_pair.h): the same stream,
 * the same send calls of each kind, the same bytes copied, and
 * RS__WRITE_BATCHED exactly when the plain write would have been held in
 * the batch. Both are run by one script, once with each call, under the
 * batch on and off, with a cork in the middle and under a 7-byte clamp.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rs_internal.h"
#include "stack_pair.h"

/* (header length, payload length) of each write, in one task: the fast
 * case (2, 0..16) among the others (a 4-byte header, larger payloads). */
static const size_t shapes[][2] = {
	{ 2, 16 }, { 2, 16 }, { 2, 0 }, { 2, 3 }, { 2, 4 }, { 2, 7 }, { 2, 8 },
	{ 2, 15 }, { 2, 17 }, { 4, 16 }, { 2, 125 }, { 0, 5 }, { 2, 16 },
	{ 2, 16 }, { 2, 1 },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))
/* The cork is on around these writes. */
#define CORK_FROM 12
#define CORK_TO 14

struct run {
	int pair;                  /* 1: rs__socket_write_pair */
	int batched[NSHAPES];      /* the pair's RS__WRITE_BATCHED, or the
				    * plain write held in the batch */
	uint64_t sends[3];         /* send, sendmsg, write calls of the run */
	size_t len;                /* stream bytes written */
};


static unsigned char stream_byte(size_t k)
{
	return (unsigned char)(k * 131 + 7);
}

static void script(struct sp_pair *p, rs_socket *c)
{
	struct run *r = p->arg;
	unsigned char buf[RS__PAIR_MAX];

	for (size_t i = 0; i < NSHAPES; i++) {
		size_t hlen = shapes[i][0], len = shapes[i][1];
		uint32_t head = 0;
		int ret;

		for (size_t k = 0; k < hlen + len; k++)
			buf[k] = stream_byte(r->len + k);
		for (size_t k = 0; k < hlen; k++)
			head |= (uint32_t)buf[k] << (8 * k);
		if (i == CORK_FROM)
			rs_socket_cork(c);
		if (r->pair) {
			ret = rs__socket_write_pair(c, head, hlen, buf + hlen, len);
			r->batched[i] = ret == RS__WRITE_BATCHED;
			assert_true(ret == RS__WRITE_BATCHED || ret == 1 || ret == 0);
		} else {
			size_t held = rs_socket_writable_length(c);
			uint64_t copied = rs_socket_bytes_copied(c);

			ret = rs_socket_write(c, buf, hlen + len, NULL, NULL);
			assert_true(ret >= 0);
			/* Held in the batch: copied, queued nowhere. */
			r->batched[i] = rs_socket_writable_length(c) == held &&
					rs_socket_bytes_copied(c) - copied == hlen + len &&
					!(i >= CORK_FROM && i < CORK_TO);
		}
		if (i + 1 == CORK_TO)
			rs_socket_uncork(c);
		r->len += hlen + len;
	}
	assert_int_equal(rs_socket_end(c, NULL, 0, NULL, NULL), 0);
}

static void run_once(struct run *r, struct sp_pair *p, const char *clamp)
{
	const struct fi_counters *fc;

	fi_disarm_all();
	fi_counters_reset();
	if (clamp)
		sp_arm(clamp);
	sp_run(p, script, r);
	fc = fi_counters();
	r->sends[0] = fi_calls(fc, FI_SEND);
	r->sends[1] = fi_calls(fc, FI_SENDMSG);
	r->sends[2] = fi_calls(fc, FI_WRITE);
	assert_int_equal(p->client_error, 0);
	assert_int_equal(p->recv_len, r->len);
	for (size_t k = 0; k < r->len; k++)
		if (p->recv[k] != stream_byte(k))
			fail_msg("byte %zu differs (%s)", k, r->pair ? "pair" : "write");
}

static void compare(int batch, const char *clamp)
{
	struct run plain = { 0 }, pair = { .pair = 1 };
	struct sp_pair a, b;

	rs_config.batch = batch;
	run_once(&plain, &a, clamp);
	run_once(&pair, &b, clamp);
	assert_int_equal(pair.len, plain.len);
	assert_memory_equal(pair.sends, plain.sends, sizeof(plain.sends));
	assert_int_equal(b.client_copied, a.client_copied);
	for (size_t i = 0; i < NSHAPES; i++)
		if (pair.batched[i] != plain.batched[i])
			fail_msg("write %zu: batched %d by the pair, %d by the plain write",
				 i, pair.batched[i], plain.batched[i]);
	if (batch && !clamp) {
		/* Not vacuous: the fast case ran, and so did the others. */
		assert_true(pair.batched[1] && !pair.batched[0]);
		assert_false(pair.batched[CORK_FROM]);
	}
	sp_free(&a);
	sp_free(&b);
}

static void test_same_as_write_batch_on(void **state)
{
	(void)state;
	compare(1, NULL);
}

static void test_same_as_write_batch_off(void **state)
{
	(void)state;
	compare(0, NULL);
}

static void test_same_as_write_clamped(void **state)
{
	(void)state;
	compare(1, "write:short=7,repeat=forever");
}

static void script_limits(struct sp_pair *p, rs_socket *c)
{
	static const char data[RS__PAIR_MAX];

	(void)p;
	assert_int_equal(rs__socket_write_pair(c, 0, 5, data, 1), -EINVAL);
	assert_int_equal(rs__socket_write_pair(c, 0, 2, data, RS__PAIR_MAX - 1),
			 -EINVAL);
	assert_int_equal(rs__socket_write_pair(c, 0, 2, data, RS__PAIR_MAX - 2), 1);
	assert_int_equal(rs_socket_end(c, NULL, 0, NULL, NULL), 0);
}

static void test_limits_are_refused(void **state)
{
	struct sp_pair p;

	(void)state;
	sp_run(&p, script_limits, NULL);
	assert_int_equal(p.recv_len, RS__PAIR_MAX);
	sp_free(&p);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, sp_setup, sp_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_same_as_write_batch_on),
		T(test_same_as_write_batch_off),
		T(test_same_as_write_clamped),
		T(test_limits_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
