/*
 * test_chunk.c: unit tests of the chunked framing (reference/chunk.c).
 *
 * Each vector is a list of calls and the exact bytes they must put on the
 * wire. Every vector runs whole (a kernel that takes everything), under
 * every constant clamp from 1 byte to the whole stream, and with one cut at
 * every split point (the first send takes exactly s bytes, the rest go
 * whole), in the manner of picohttpparser's tests: the wire bytes must be
 * the same every time, with one header per chunk and body-only offsets.
 * The caller's data sits against a guard page, so a read past it faults.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "chunk.h"
#include "chunk_driver.h"

/* ------------------------------------------------------------------------ */
/* A guard page: bytes placed so that the byte after them is unmapped.      */

struct guard {
	unsigned char *map;
	size_t maplen;
};

static unsigned char *guarded(struct guard *g, const void *src, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t pages = (len + (size_t)page - 1) / (size_t)page + 1;
	unsigned char *p;

	g->maplen = (pages + 1) * (size_t)page;
	g->map = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g->map != MAP_FAILED);
	assert_int_equal(mprotect(g->map + pages * (size_t)page, (size_t)page,
				  PROT_NONE), 0);
	p = g->map + pages * (size_t)page - len;
	if (len)
		memcpy(p, src, len);
	return p;
}

static void unguard(struct guard *g)
{
	assert_int_equal(munmap(g->map, g->maplen), 0);
}

/* ------------------------------------------------------------------------ */
/* Vectors.                                                                 */

struct vector {
	const char *name;
	struct cd_call calls[6];
	size_t ncalls;
	const char *wire;   /* framing with BODY(n) spelled as '#' x n: see expand */
};

/*
 * The expected wire, written with "<n>" standing for the next n body bytes
 * (cd_body_byte), so the vectors stay readable.
 */
static size_t expand(const char *spec, unsigned char *out, size_t cap)
{
	size_t len = 0;
	uint64_t body = 0;

	while (*spec) {
		if (*spec == '<') {
			char *end;
			unsigned long n = strtoul(spec + 1, &end, 10);

			assert_true(*end == '>');
			for (unsigned long i = 0; i < n; i++) {
				assert_true(len < cap);
				out[len++] = cd_body_byte(body++);
			}
			spec = end + 1;
			continue;
		}
		assert_true(len < cap);
		out[len++] = (unsigned char)*spec++;
	}
	return len;
}

static const struct vector vectors[] = {
	{ "one write then end", { { 3, 0 }, { 0, 1 } }, 2,
	  "3\r\n<3>\r\n0\r\n\r\n" },
	{ "two writes then end", { { 3, 0 }, { 2, 0 }, { 0, 1 } }, 3,
	  "3\r\n<3>\r\n2\r\n<2>\r\n0\r\n\r\n" },
	{ "final chunk with data", { { 5, 1 } }, 1,
	  "5\r\n<5>\r\n0\r\n\r\n" },
	{ "write then final chunk", { { 17, 0 }, { 4, 1 } }, 2,
	  "11\r\n<17>\r\n4\r\n<4>\r\n0\r\n\r\n" },
	{ "empty final chunk, no body", { { 0, 1 } }, 1,
	  "0\r\n\r\n" },
	{ "empty writes start no chunk", { { 0, 0 }, { 2, 0 }, { 0, 0 }, { 0, 1 } }, 4,
	  "2\r\n<2>\r\n0\r\n\r\n" },
	{ "hex digits", { { 255, 0 }, { 4096, 0 }, { 10, 1 } }, 3,
	  "ff\r\n<255>\r\n1000\r\n<4096>\r\na\r\n<10>\r\n0\r\n\r\n" },
};

static void check_vector(const struct vector *v, size_t clamp, size_t cut)
{
	unsigned char want[8192];
	size_t wlen = expand(v->wire, want, sizeof(want));
	struct cd_out o = { 0 };
	int rc = cd_run(v->calls, v->ncalls, clamp, cut, &o);

	if (rc != 0 || o.len != wlen || memcmp(o.buf, want, wlen) != 0)
		fail_msg("%s: clamp %zu cut %zu: %zu bytes, want %zu (rc %d)",
			 v->name, clamp, cut, o.len, wlen, rc);
	free(o.buf);
}

static void test_vectors_whole(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		check_vector(&vectors[i], SIZE_MAX, SIZE_MAX);
}

/* Every clamp from one byte per send to the whole stream. */
static void test_vectors_every_clamp(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		unsigned char want[8192];
		size_t wlen = expand(vectors[i].wire, want, sizeof(want));

		for (size_t k = 1; k <= wlen; k++)
			check_vector(&vectors[i], k, SIZE_MAX);
	}
}

/* One cut at every split point: the first send takes exactly s bytes. */
static void test_vectors_every_split(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		unsigned char want[8192];
		size_t wlen = expand(vectors[i].wire, want, sizeof(want));

		for (size_t s = 0; s <= wlen; s++)
			check_vector(&vectors[i], SIZE_MAX, s);
	}
}

/* ------------------------------------------------------------------------ */
/* The rules, one by one.                                                   */

/* A partial body resumes from the body suffix without a second header, and
 * the offset counts body bytes only (the seed's try_write -> false ->
 * writable -> try_write(rest)). */
static void test_partial_body_resumes_without_header(void **state)
{
	struct rs_chunk c;
	struct rs_chunk_plan p;
	struct guard g;
	unsigned char src[10];
	unsigned char *data;

	(void)state;
	memset(src, 'x', sizeof(src));
	data = guarded(&g, src, sizeof(src));
	rs_chunk_init(&c);
	assert_int_equal(rs_chunk_plan(&c, data, 10, 0, &p), 0);
	assert_int_equal(p.n, 2);               /* "a\r\n", body */
	assert_int_equal(p.framing, 3);
	assert_int_equal(rs_chunk_advance(&c, &p, 7), 4);
	assert_int_equal(c.offset, 4);
	assert_int_equal(c.open_left, 6);
	/* The rest: body only, no header. */
	assert_int_equal(rs_chunk_plan(&c, data + 4, 6, 0, &p), 0);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.part[0], RS_CHUNK_CONT);
	assert_ptr_equal(p.iov[0].iov_base, data + 4);
	assert_int_equal(p.iov[0].iov_len, 6);
	assert_int_equal(rs_chunk_advance(&c, &p, 6), 6);
	assert_int_equal(c.offset, 10);
	assert_int_equal(c.open_left, 0);
	unguard(&g);
}

/* A header that got out in part: the offset does not move, and the next
 * call sends the rest of that header, not a new one. */
static void test_partial_header(void **state)
{
	struct rs_chunk c;
	struct rs_chunk_plan p;
	char data[300];

	(void)state;
	memset(data, 'y', sizeof(data));
	rs_chunk_init(&c);
	assert_int_equal(rs_chunk_plan(&c, data, 300, 0, &p), 0);
	assert_int_equal(p.framing, 5);        /* "12c\r\n" */
	assert_int_equal(rs_chunk_advance(&c, &p, 2), 0);
	assert_int_equal(c.offset, 0);
	assert_int_equal(rs_chunk_plan(&c, data, 300, 0, &p), 0);
	assert_int_equal(p.part[0], RS_CHUNK_PRE);
	assert_int_equal(p.iov[0].iov_len, 3);
	assert_memory_equal(p.iov[0].iov_base, "c\r\n", 3);
	assert_int_equal(p.total, 303);
}

/* try_write(data, final) whose body gets out whole but only part of the
 * terminator: the offset stays body-only, and the rest of the terminator
 * is owed internally, not as a continuation. */
static void test_partial_terminator_is_internal(void **state)
{
	struct rs_chunk c;
	struct rs_chunk_plan p;
	struct iovec t;

	(void)state;
	rs_chunk_init(&c);
	assert_int_equal(rs_chunk_plan(&c, "abcd", 4, 1, &p), 0);
	/* "4\r\n" abcd "\r\n0\r\n\r\n" */
	assert_int_equal(p.total, 3 + 4 + 7);
	assert_int_equal(rs_chunk_advance(&c, &p, 3 + 4 + 2), 4);
	assert_int_equal(c.offset, 4);
	assert_true(c.ended);
	assert_false(rs_chunk_done(&c));
	assert_int_equal(rs_chunk_trailer(&c, &t), 1);
	assert_int_equal(t.iov_len, 5);
	assert_memory_equal(t.iov_base, "0\r\n\r\n", 5);
	/* No further call is taken: the terminator is decided. */
	assert_int_equal(rs_chunk_plan(&c, "", 0, 1, &p), -EINVAL);
	assert_int_equal(rs_chunk_plan(&c, "z", 1, 0, &p), -EINVAL);
	rs_chunk_trailer_sent(&c, 5);
	assert_true(rs_chunk_done(&c));
	assert_int_equal(rs_chunk_trailer(&c, &t), 0);
	assert_int_equal(c.offset, 4);
}

/* A final call whose body did not get out whole decides nothing. */
static void test_final_partial_body_not_ended(void **state)
{
	struct rs_chunk c;
	struct rs_chunk_plan p;

	(void)state;
	rs_chunk_init(&c);
	assert_int_equal(rs_chunk_plan(&c, "abcdef", 6, 1, &p), 0);
	assert_int_equal(rs_chunk_advance(&c, &p, 3 + 2), 2);
	assert_false(c.ended);
	/* end(rest): the rest continues the chunk, then the terminator. */
	assert_int_equal(rs_chunk_plan(&c, "cdef", 4, 1, &p), 0);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.part[0], RS_CHUNK_CONT);
	assert_int_equal(p.part[1], RS_CHUNK_POST);
	assert_memory_equal(p.iov[1].iov_base, "\r\n0\r\n\r\n", 7);
	/* Ending inside the open chunk breaks the framing. */
	assert_int_equal(rs_chunk_plan(&c, "cd", 2, 1, &p), -EINVAL);
}

/* More bytes than the open chunk holds: the rest opens one new chunk. */
static void test_continue_then_new_chunk(void **state)
{
	struct rs_chunk c;
	struct rs_chunk_plan p;

	(void)state;
	rs_chunk_init(&c);
	assert_int_equal(rs_chunk_plan(&c, "abc", 3, 0, &p), 0);
	assert_int_equal(rs_chunk_advance(&c, &p, 3 + 1), 1);
	assert_int_equal(rs_chunk_plan(&c, "bcXY", 4, 0, &p), 0);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.part[0], RS_CHUNK_CONT);
	assert_int_equal(p.part[1], RS_CHUNK_HDR);
	assert_memory_equal(p.iov[1].iov_base, "\r\n2\r\n", 5);
	assert_int_equal(p.part[2], RS_CHUNK_NEW);
}

static void test_header_format(void **state)
{
	char h[RS_CHUNK_HEADER_MAX];

	(void)state;
	assert_int_equal(rs_chunk_header(h, 1, 0), 3);
	assert_memory_equal(h, "1\r\n", 3);
	assert_int_equal(rs_chunk_header(h, 0xabc, 1), 7);
	assert_memory_equal(h, "\r\nabc\r\n", 7);
	assert_int_equal(rs_chunk_header(h, UINT64_MAX, 1), 20);
	assert_memory_equal(h, "\r\nffffffffffffffff\r\n", 20);
}

/* Random call lists under random clamps: the stream is the same as with
 * no clamp. (A seeded generator: the same cases every run.) */
static void test_random_sequences_same_stream(void **state)
{
	uint64_t x = 0x243f6a8885a308d3u;

	(void)state;
	for (int round = 0; round < 300; round++) {
		struct cd_call calls[8];
		size_t n = 1 + (x >> 60) % 8;
		struct cd_out whole = { 0 }, clamped = { 0 };
		size_t clamp;

		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005u + 1442695040888963407u;
			calls[i].len = (x >> 33) % 700;
			calls[i].final = i == n - 1;
		}
		x = x * 6364136223846793005u + 1442695040888963407u;
		clamp = 1 + (x >> 33) % 97;
		assert_int_equal(cd_run(calls, n, SIZE_MAX, SIZE_MAX, &whole), 0);
		assert_int_equal(cd_run(calls, n, clamp, SIZE_MAX, &clamped), 0);
		assert_int_equal(whole.len, clamped.len);
		assert_memory_equal(whole.buf, clamped.buf, whole.len);
		free(whole.buf);
		free(clamped.buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_whole),
		cmocka_unit_test(test_vectors_every_clamp),
		cmocka_unit_test(test_vectors_every_split),
		cmocka_unit_test(test_partial_body_resumes_without_header),
		cmocka_unit_test(test_partial_header),
		cmocka_unit_test(test_partial_terminator_is_internal),
		cmocka_unit_test(test_final_partial_body_not_ended),
		cmocka_unit_test(test_continue_then_new_chunk),
		cmocka_unit_test(test_header_format),
		cmocka_unit_test(test_random_sequences_same_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
