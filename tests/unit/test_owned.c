/*
 * test_owned.c: owned writes (rs_socket_write_owned) on a real
 * connected pair (stack_pair.h): no copy, release exactly once (on
 * success, on error, on destroy), the order of bytes among copying writes,
 * cork and batch, and the write-then-change difference that is the
 * contract's reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "stack_pair.h"

#define KIB ((size_t)1024)

static unsigned char stream_byte(uint64_t k)
{
	return (unsigned char)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 56);
}

/* One owned buffer: the stream's bytes [offset, offset + len). */
struct owned {
	unsigned char *data;
	size_t len;
	uint64_t end;        /* the stack's seq at its last byte */
	int releases;
	int status;
	uint64_t written_at_release;
	int freed;
};

struct ctx {
	struct owned owned[8];
	int nowned;
	uint64_t appended;   /* stream bytes written so far */
	int order[16];       /* what completed, in order: owned index or -1-k */
	int norder;
};


static void release_cb(rs_socket *s, int status, void *arg)
{
	struct owned *o = arg;

	o->releases++;
	o->status = status;
	o->written_at_release = rs_socket_bytes_written(s);
	/* The buffer is the caller's again: freed here, so that ASan and
	 * valgrind see any later read of it by the stack. */
	free(o->data);
	o->data = NULL;
	o->freed = 1;
}

/* A release that must succeed, counted in the int at arg. */
static void count_release(rs_socket *s, int status, void *arg)
{
	int *released = arg;

	(void)s;
	assert_int_equal(status, 0);
	(*released)++;
}

static unsigned char *stream_bytes(struct ctx *c, size_t len)
{
	unsigned char *d = malloc(len ? len : 1);

	assert_non_null(d);
	for (size_t i = 0; i < len; i++)
		d[i] = stream_byte(c->appended + i);
	c->appended += len;
	return d;
}

/* An owned write of the stream's next len bytes. Returns its index. */
static int write_owned(struct ctx *c, rs_socket *s, size_t len)
{
	struct owned *o = &c->owned[c->nowned];
	int rc;

	o->data = stream_bytes(c, len);
	o->len = len;
	o->end = c->appended;
	rc = rs_socket_write_owned(s, o->data, len, release_cb, o);
	assert_true(rc >= 0);
	/* Never inside the call. */
	assert_int_equal(o->releases, 0);
	return c->nowned++;
}

static void write_copy(struct ctx *c, rs_socket *s, size_t len)
{
	unsigned char *d = stream_bytes(c, len);

	assert_true(rs_socket_write(s, d, len, NULL, NULL) >= 0);
	free(d);
}

static void assert_received_stream(const struct sp_pair *p, uint64_t len)
{
	assert_int_equal(p->recv_len, len);
	for (uint64_t k = 0; k < len; k++) {
		if (p->recv[k] != stream_byte(k))
			fail_msg("byte %llu differs", (unsigned long long)k);
	}
}

/* ---- no copy; release once on success ---------------------------------- */

static void script_one_large(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	(void)write_owned(c, s, 256 * KIB);
	assert_int_equal(rs_socket_bytes_copied(s), 0);
	/* Queued by reference: counts in writable_length. */
	assert_true(rs_socket_writable_length(s) > 0);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* Under a 4 KiB clamp the kernel takes 4 KiB in the call; a copying write
 * copies the other 252 KiB, an owned write nothing. */
static void test_owned_write_copies_nothing_under_clamp(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	sp_arm("write:short=4096,repeat=forever");
	sp_run(&p, script_one_large, &c);
	assert_int_equal(p.client_copied, 0);
	assert_int_equal(p.client_error, 0);
	assert_int_equal(c.owned[0].releases, 1);
	assert_int_equal(c.owned[0].status, 0);
	/* Released once the kernel had every byte, not before. */
	assert_true(c.owned[0].written_at_release >= c.owned[0].end);
	assert_received_stream(&p, c.appended);
	sp_free(&p);
}

static void script_small(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	(void)write_owned(c, s, 100);
	/* The kernel took every byte in the call: nothing held. */
	assert_int_equal(rs_socket_writable_length(s), 0);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* Taken whole in the call: released in the task's microtasks, once. */
static void test_owned_write_taken_in_call_releases_once(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	sp_run(&p, script_small, &c);
	assert_int_equal(c.owned[0].releases, 1);
	assert_int_equal(c.owned[0].status, 0);
	assert_int_equal(p.client_copied, 0);
	assert_received_stream(&p, c.appended);
	sp_free(&p);
}

/* ---- release on error and on destroy ----------------------------------- */

static void script_fails(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	(void)write_owned(c, s, 64 * KIB);
	/* Its sendmsg (queued tail and these bytes) is the failing call. */
	(void)write_owned(c, s, 1000);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), -EBADF);
}

/* The 2nd send fails with ECONNRESET: the first owned write gets the
 * error, the second -ECANCELED, each once. */
static void test_owned_write_released_once_on_error(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	sp_arm("write:short=4096,repeat=forever");
	sp_arm("write:errno=ECONNRESET,after=1");
	sp_run(&p, script_fails, &c);
	assert_int_equal(p.client_error, ECONNRESET);
	assert_int_equal(c.owned[0].releases, 1);
	assert_int_equal(c.owned[0].status, -ECONNRESET);
	assert_int_equal(c.owned[1].releases, 1);
	assert_int_equal(c.owned[1].status, -ECANCELED);
	assert_int_equal(p.client_copied, 0);
	sp_free(&p);
}

static void script_after_end(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;
	struct owned *o = &c->owned[0];

	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
	o->data = stream_bytes(c, 10);
	o->len = 10;
	assert_int_equal(rs_socket_write_owned(s, o->data, 10, release_cb, o),
			 -EPIPE);
	assert_int_equal(o->releases, 0);
	c->nowned = 1;
}

/* A write after end() is refused: release runs once, with -EPIPE, after
 * the call. */
static void test_owned_write_refused_releases_once(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	sp_run(&p, script_after_end, &c);
	assert_int_equal(c.owned[0].releases, 1);
	assert_int_equal(c.owned[0].status, -EPIPE);
	sp_free(&p);
}

static void script_destroy(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	(void)write_owned(c, s, 64 * KIB);
	(void)write_owned(c, s, 100);
	rs_socket_destroy(s, 0);
	assert_int_equal(c->owned[0].releases, 0);
}

/* Destroyed with owned bytes queued: each released once, -ECANCELED. */
static void test_owned_write_released_once_on_destroy(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	sp_arm("write:short=4096,repeat=forever");
	sp_run(&p, script_destroy, &c);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(c.owned[i].releases, 1);
		assert_int_equal(c.owned[i].status, -ECANCELED);
	}
	/* The peer got a prefix of the stream. */
	assert_true(p.recv_len < c.appended);
	for (size_t k = 0; k < p.recv_len; k++)
		assert_int_equal(p.recv[k], stream_byte(k));
	sp_free(&p);
}

static void test_owned_write_without_release_is_einval(void **state)
{
	(void)state;
	/* Checked before the socket is looked at. */
	assert_int_equal(rs_socket_write_owned(NULL, "x", 1, NULL, NULL),
			 -EINVAL);
}

/* ---- order among copying writes, cork and batch ------------------------ */

static void script_mixed(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	write_copy(c, s, 10 * KIB);
	(void)write_owned(c, s, 20 * KIB);
	write_copy(c, s, 3);
	(void)write_owned(c, s, 5);
	write_copy(c, s, 40 * KIB);
	(void)write_owned(c, s, 7 * KIB);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* Copying and owned writes alternate under a 7-byte clamp: the stream
 * arrives in the order of the calls, and only the copying writes copied
 * (each at most once). */
static void test_order_mixed_with_copying_writes(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	rs_config.batch = 0;
	sp_arm("write:short=7,repeat=forever");
	sp_run(&p, script_mixed, &c);
	assert_received_stream(&p, c.appended);
	for (int i = 0; i < c.nowned; i++) {
		assert_int_equal(c.owned[i].releases, 1);
		assert_int_equal(c.owned[i].status, 0);
	}
	/* The copying writes' bytes, less the 7 the first one's call took. */
	assert_int_equal(p.client_copied, 10 * KIB - 7 + 3 + 40 * KIB);
	sp_free(&p);
}

static void script_corked(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	rs_socket_cork(s);
	write_copy(c, s, 100);
	(void)write_owned(c, s, 200);
	write_copy(c, s, 300);
	(void)write_owned(c, s, 400);
	/* The owned bytes wait in the cork buffer by reference. */
	assert_int_equal(rs_socket_bytes_copied(s), 400);
	assert_int_equal(rs_socket_writable_length(s), 1000);
	rs_socket_uncork(s);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* Corked: the owned bytes are not copied into the cork buffer; the uncork
 * sends everything in order in one call. */
static void test_order_under_cork(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	sp_run(&p, script_corked, &c);
	assert_received_stream(&p, c.appended);
	assert_int_equal(p.client_copied, 400);
	assert_int_equal(c.owned[0].releases, 1);
	assert_int_equal(c.owned[1].releases, 1);
	sp_free(&p);
}

static void script_corked_clamped(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	rs_socket_cork(s);
	write_copy(c, s, 1000);
	(void)write_owned(c, s, 3000);
	write_copy(c, s, 500);
	rs_socket_uncork(s);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* Corked under a 7-byte clamp: the uncork's call takes 7 bytes; the rest
 * of the cork buffer moves to the queue, its copied runs copied again and
 * its owned run by reference. */
static void test_cork_leftover_keeps_owned_by_reference(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	sp_arm("write:short=7,repeat=forever");
	sp_run(&p, script_corked_clamped, &c);
	assert_received_stream(&p, c.appended);
	assert_int_equal(p.client_copied, (1000 + 500) + (1000 - 7 + 500));
	assert_int_equal(c.owned[0].releases, 1);
	assert_int_equal(c.owned[0].status, 0);
	sp_free(&p);
}

static void script_batch(struct sp_pair *p, rs_socket *s)
{
	struct ctx *c = p->arg;

	write_copy(c, s, 100);            /* the task's first: sent */
	write_copy(c, s, 100);            /* batched: copied */
	assert_int_equal(rs_socket_bytes_copied(s), 100);
	(void)write_owned(c, s, 100);     /* not batched: the batch goes
					   * first, then these bytes */
	write_copy(c, s, 100);            /* behind it */
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* With batching on, an owned write is never copied into the batch. */
static void test_owned_write_not_batched(void **state)
{
	struct ctx c = { 0 };
	struct sp_pair p;

	(void)state;
	rs_config.batch = 1;
	sp_run(&p, script_batch, &c);
	assert_received_stream(&p, c.appended);
	assert_int_equal(c.owned[0].releases, 1);
	/* The two batched copies only (the 2nd and the 4th write); held in
	 * the batch, the owned 100 bytes would make it 300. */
	assert_int_equal(p.client_copied, 200);
	sp_free(&p);
}

/* ---- more runs than one send takes -------------------------------------- */

#define MANY_RUNS 150
#define MANY_RUN_LEN 100

struct many {
	unsigned char data[MANY_RUNS * MANY_RUN_LEN];
	int released;
	uint64_t sends_at_start;
};

static uint64_t gate_sends(void)
{
	const struct fi_counters *fc = fi_counters();

	return fi_calls(fc, FI_SEND) + fi_calls(fc, FI_SENDMSG);
}

static void script_many(struct sp_pair *p, rs_socket *s)
{
	struct many *m = p->arg;

	for (size_t k = 0; k < sizeof(m->data); k++)
		m->data[k] = stream_byte(k);
	m->sends_at_start = gate_sends();
	/* Corked, the 150 runs wait in the cork buffer; the uncork sends
	 * the first 64 of them in one sendmsg. */
	rs_socket_cork(s);
	for (int i = 0; i < MANY_RUNS; i++)
		assert_true(rs_socket_write_owned(s,
						  m->data + i * MANY_RUN_LEN,
						  MANY_RUN_LEN, count_release,
						  &m->released) >= 0);
	rs_socket_uncork(s);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/*
 * 150 owned runs of 100 bytes under a 4 KiB clamp: every sendmsg offers 64
 * runs (6,400 bytes or so) and the kernel takes 4,096, so the 15,000 bytes
 * leave in 4 calls (4,096, 4,096, 4,096, 2,712). A writable event that
 * advanced its iovecs past the runs each send took, without peeking the
 * queue again, would offer the 23 runs left of the first 64 (2,208 bytes)
 * and make more calls; the bytes must arrive in order either way.
 */
static void test_flush_with_more_runs_than_one_call(void **state)
{
	static struct many m;
	struct sp_pair p;

	(void)state;
	m = (struct many){ .released = 0 };
	sp_arm("write:short=4096,repeat=forever");
	sp_run(&p, script_many, &m);
	assert_int_equal(p.client_error, 0);
	assert_int_equal(m.released, MANY_RUNS);
	assert_int_equal(p.client_copied, 0);
	assert_int_equal(p.recv_len, sizeof(m.data));
	assert_memory_equal(p.recv, m.data, sizeof(m.data));
	assert_int_equal(gate_sends() - m.sends_at_start, 4);
	sp_free(&p);
}

/* ---- write-then-change ------------------------------------------------- */

struct change {
	unsigned char buf[64];
	int owned;
	int released;
};


static void script_change(struct sp_pair *p, rs_socket *s)
{
	struct change *ch = p->arg;

	memset(ch->buf, 'a', sizeof(ch->buf));
	if (ch->owned)
		assert_true(rs_socket_write_owned(s, ch->buf, sizeof(ch->buf),
						  count_release, &ch->released) >= 0);
	else
		assert_true(rs_socket_write(s, ch->buf, sizeof(ch->buf), NULL,
					    NULL) >= 0);
	/* Against the owned write's contract, on purpose: the bytes change
	 * after the call. */
	memset(ch->buf, 'b', sizeof(ch->buf));
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* The reason the seed copies: under a 7-byte clamp the copying write
 * delivers the bytes as they were at the call, the owned one the bytes as
 * they are when each send happens (7 'a', then 57 'b'). */
static void test_write_then_change(void **state)
{
	struct change ch = { .owned = 0 };
	struct sp_pair p;

	(void)state;
	sp_arm("write:short=7,repeat=forever");
	sp_run(&p, script_change, &ch);
	assert_int_equal(p.recv_len, 64);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(p.recv[i], 'a');
	sp_free(&p);

	ch = (struct change){ .owned = 1 };
	sp_run(&p, script_change, &ch);
	assert_int_equal(ch.released, 1);
	assert_int_equal(p.recv_len, 64);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(p.recv[i], i < 7 ? 'a' : 'b');
	sp_free(&p);
}

/* ---- a completed write while a later one is still queued ---------------- */

struct two_writes {
	rs_loop *loop;
	uint64_t write_task;   /* the task of the two writes */
	uint64_t task[2];      /* the task of each release */
	uint64_t written[2];   /* bytes_written at each release */
	int releases[2];
	unsigned char small[100];
	unsigned char large[256 * KIB];
};

static void two_released(struct two_writes *t, int i, rs_socket *s,
			 int status)
{
	assert_int_equal(status, 0);
	t->task[i] = rs_loop_task(t->loop);
	t->written[i] = rs_socket_bytes_written(s);
	t->releases[i]++;
}

static void small_released(rs_socket *s, int status, void *arg)
{
	two_released(arg, 0, s, status);
}

static void large_released(rs_socket *s, int status, void *arg)
{
	two_released(arg, 1, s, status);
}

static void script_two_writes(struct sp_pair *p, rs_socket *s)
{
	struct two_writes *t = p->arg;

	t->loop = p->loop;
	t->write_task = rs_loop_task(p->loop);
	assert_true(rs_socket_write_owned(s, t->small, sizeof(t->small),
					  small_released, t) >= 0);
	assert_true(rs_socket_write_owned(s, t->large, sizeof(t->large),
					  large_released, t) >= 0);
	assert_true(rs_socket_writable_length(s) > 0);
	assert_int_equal(rs_socket_end(s, NULL, 0, NULL, NULL), 0);
}

/* Under a 4 KiB clamp the kernel takes the small write whole in its call
 * and 4 KiB of the large one: the settle of that task, with bytes still
 * queued, still releases the small write in the same task; the large one
 * is released in a later task, once the kernel has every byte. */
static void test_completed_write_released_while_later_queued(void **state)
{
	static struct two_writes t;
	struct sp_pair p;

	(void)state;
	memset(&t, 0, sizeof(t));
	memset(t.small, 's', sizeof(t.small));
	memset(t.large, 'l', sizeof(t.large));
	sp_arm("write:short=4096,repeat=forever");
	sp_run(&p, script_two_writes, &t);
	assert_int_equal(p.client_error, 0);
	assert_int_not_equal(t.write_task, 0);
	assert_int_equal(t.releases[0], 1);
	assert_int_equal(t.releases[1], 1);
	assert_int_equal(t.task[0], t.write_task);
	assert_true(t.task[1] > t.write_task);
	/* Released while part of the large write was still queued. */
	assert_true(t.written[0] >= sizeof(t.small));
	assert_true(t.written[0] < sizeof(t.small) + sizeof(t.large));
	assert_int_equal(t.written[1], sizeof(t.small) + sizeof(t.large));
	assert_int_equal(p.recv_len, sizeof(t.small) + sizeof(t.large));
	for (size_t i = 0; i < p.recv_len; i++)
		assert_int_equal(p.recv[i], i < sizeof(t.small) ? 's' : 'l');
	sp_free(&p);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, sp_setup, sp_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_owned_write_copies_nothing_under_clamp),
		T(test_owned_write_taken_in_call_releases_once),
		T(test_owned_write_released_once_on_error),
		T(test_owned_write_refused_releases_once),
		T(test_owned_write_released_once_on_destroy),
		T(test_owned_write_without_release_is_einval),
		T(test_order_mixed_with_copying_writes),
		T(test_order_under_cork),
		T(test_cork_leftover_keeps_owned_by_reference),
		T(test_owned_write_not_batched),
		T(test_flush_with_more_runs_than_one_call),
		T(test_write_then_change),
		T(test_completed_write_released_while_later_queued),
	};

	if (fi_init() < 0)
		return 2;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
