/*
 * test_ws_frame.c: the WebSocket frame codec and handshake
 * (reference/ws_frame.c, reference/ws_handshake.c), with cmocka.
 *
 * Every parser vector runs whole, split in two at every point, and byte by
 * byte, and its input ends against a PROT_NONE page, so a read past the
 * input crashes the test (picohttpparser's guard page). Each vector names
 * its source line in a failure. The expected event logs of the RFC vectors
 * are written out; those of the generated ones (edge lengths) are built
 * from the payload the test generated, never from a run of the parser.
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
#include <valgrind/valgrind.h>

#include "ws_frame.h"
#include "ws_handshake.h"

/* ------------------------------------------------------------------------ */
/* Helpers.                                                                 */

/* Parses hex with spaces in between into out; returns the byte count. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*hex) {
		unsigned v;

		if (*hex == ' ') {
			hex++;
			continue;
		}
		assert_true(sscanf(hex, "%2x", &v) == 1);
		assert_true(n < cap);
		out[n++] = (uint8_t)v;
		hex += 2;
	}
	return n;
}

static void tohex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 3 * i, i + 1 < n ? "%02x " : "%02x", p[i]);
	if (n == 0)
		out[0] = 0;
}

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/*
 * The payload a generated vector expects: a long message that equals it is
 * logged as "payload", which costs a memcmp instead of a hash of 64 KiB at
 * each of 65,000 split points.
 */
static const uint8_t *expected_payload;
static size_t expected_len;

/* The log line of an event's data: hex up to 16 bytes, else a hash. */
static void data_text(const uint8_t *p, size_t n, char *out)
{
	if (n > 16 && expected_payload && n == expected_len &&
	    memcmp(p, expected_payload, n) == 0) {
		strcpy(out, "payload");
	} else if (n <= 16) {
		char hex[16 * 3 + 1];

		tohex(p, n, hex);
		sprintf(out, "[%s]", hex);
	} else {
		sprintf(out, "fnv=%08x", fnv1a(p, n));
	}
}

/* Appends one event to a log. */
static void log_event(char *log, size_t cap, const struct rs_ws_event *ev)
{
	char d[64], line[256];
	static const char *ops[] = { "cont", "text", "binary" };

	switch (ev->kind) {
	case RS_WS_EV_MESSAGE:
		data_text(ev->data, ev->len, d);
		snprintf(line, sizeof(line),
			 "off=%llu message %s%s frames=%u len=%zu %s\n",
			 (unsigned long long)ev->offset, ops[ev->opcode],
			 ev->compressed ? " compressed" : "", ev->frames,
			 ev->len, d);
		break;
	case RS_WS_EV_PING:
	case RS_WS_EV_PONG:
		data_text(ev->data, ev->len, d);
		snprintf(line, sizeof(line), "off=%llu %s len=%zu %s\n",
			 (unsigned long long)ev->offset,
			 ev->kind == RS_WS_EV_PING ? "ping" : "pong", ev->len,
			 d);
		break;
	case RS_WS_EV_CLOSE:
		data_text(ev->data, ev->len, d);
		snprintf(line, sizeof(line), "off=%llu close %d %s\n",
			 (unsigned long long)ev->offset, ev->code, d);
		break;
	case RS_WS_EV_ERROR:
		snprintf(line, sizeof(line), "off=%llu error %d (%s)\n",
			 (unsigned long long)ev->offset, ev->code, ev->problem);
		break;
	default:
		line[0] = 0;
	}
	assert_true(strlen(log) + strlen(line) < cap);
	strcat(log, line);
}

/* Feeds one piece; appends the events it completes. Returns 1 once the
 * parser reported an error (nothing more is fed then). */
static int feed_piece(struct rs_ws_parser *p, const uint8_t *in, size_t n,
		      char *log, size_t cap)
{
	struct rs_ws_event ev;

	for (;;) {
		size_t k = rs_ws_parser_feed(p, in, n, &ev);

		assert_true(k <= n);
		in += k;
		n -= k;
		if (ev.kind == RS_WS_EV_NONE)
			return 0;
		log_event(log, cap, &ev);
		if (ev.kind == RS_WS_EV_ERROR)
			return 1;
		if (n == 0)
			return 0;
	}
}

/*
 * A buffer whose last byte is the last byte before a PROT_NONE page: the
 * input of a run is copied there, so a read past it faults.
 */
struct guarded {
	uint8_t *map;
	size_t size;   /* mapped bytes, the guard page included */
	size_t room;   /* bytes before the guard */
};

static void guarded_init(struct guarded *g, size_t need)
{
	long page = sysconf(_SC_PAGESIZE);

	g->room = (need + (size_t)page - 1) / (size_t)page * (size_t)page;
	if (g->room == 0)
		g->room = (size_t)page;
	g->size = g->room + (size_t)page;
	g->map = mmap(NULL, g->size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g->map != MAP_FAILED);
	assert_int_equal(mprotect(g->map + g->room, (size_t)page, PROT_NONE), 0);
}

/* Copies n bytes to end at the guard; returns where they start. */
static uint8_t *guarded_put(struct guarded *g, const uint8_t *in, size_t n)
{
	uint8_t *at = g->map + g->room - n;

	memcpy(at, in, n);
	return at;
}

static void guarded_free(struct guarded *g)
{
	munmap(g->map, g->size);
}

#define LOG_CAP 4096

/*
 * Runs input through a fresh parser in pieces split at `cut` (cut == n:
 * whole; cut == 0 and bytewise: one byte at a time), each piece placed
 * against the guard page.
 */
static void run_split(const struct rs_ws_parser_options *opt,
		      const uint8_t *in, size_t n, size_t cut, int bytewise,
		      struct guarded *g, char *log)
{
	struct rs_ws_parser p;

	log[0] = 0;
	rs_ws_parser_init(&p, opt);
	if (bytewise) {
		for (size_t i = 0; i < n; i++)
			if (feed_piece(&p, guarded_put(g, in + i, 1), 1, log,
				       LOG_CAP))
				break;
	} else {
		/* The whole input ends at the guard; the second piece is its
		 * tail, so a read past the input faults. */
		const uint8_t *at = g->map + g->room - n;

		if (!feed_piece(&p, at, cut, log, LOG_CAP))
			feed_piece(&p, at + cut, n - cut, log, LOG_CAP);
	}
	rs_ws_parser_free(&p);
}

/* Checks that whole, every split and byte by byte give `want`. */
static void check_every_split(int line, const struct rs_ws_parser_options *opt,
			      const uint8_t *in, size_t n, const char *want)
{
	struct guarded g;
	char *log = malloc(LOG_CAP);

	assert_non_null(log);
	guarded_init(&g, n);
	guarded_put(&g, in, n);
	for (size_t cut = 0; cut <= n; cut++) {
		/*
		 * Under memcheck (the valgrind preset) the 64 KiB vectors at
		 * every one of 65,000 points take minutes: there every point
		 * of the first and last 256 bytes, and every 257th between.
		 * Native and ASan builds take every point.
		 */
		if (RUNNING_ON_VALGRIND && n > 4096 && cut > 256 &&
		    cut < n - 256 && cut % 257 != 0)
			continue;
		run_split(opt, in, n, cut, 0, &g, log);
		if (strcmp(log, want) != 0) {
			print_error("vector of line %d, split at %zu:\n"
				    "got:\n%swant:\n%s", line, cut, log, want);
			fail();
		}
	}
	run_split(opt, in, n, 0, 1, &g, log);
	if (strcmp(log, want) != 0) {
		print_error("vector of line %d, byte by byte:\ngot:\n%swant:\n%s",
			    line, log, want);
		fail();
	}
	guarded_free(&g);
	free(log);
}

/* ------------------------------------------------------------------------ */
/* Parser vectors (RFC 6455 5.7 and more).                                  */

struct vector {
	int line;
	int server;        /* the parser is a server's: frames masked */
	const char *hex;
	const char *log;   /* the events, one per line */
};

static const struct vector vectors[] = {
	/* RFC 6455 5.7: a single-frame unmasked text message. */
	{ __LINE__, 0, "81 05 48 65 6c 6c 6f",
	  "off=0 message text frames=1 len=5 [48 65 6c 6c 6f]\n" },
	/* RFC 6455 5.7: a single-frame masked text message. */
	{ __LINE__, 1, "81 85 37 fa 21 3d 7f 9f 4d 51 58",
	  "off=0 message text frames=1 len=5 [48 65 6c 6c 6f]\n" },
	/* RFC 6455 5.7: a fragmented unmasked text message. */
	{ __LINE__, 0, "01 03 48 65 6c 80 02 6c 6f",
	  "off=5 message text frames=2 len=5 [48 65 6c 6c 6f]\n" },
	/* RFC 6455 5.7: an unmasked ping, then a masked pong. */
	{ __LINE__, 0, "89 05 48 65 6c 6c 6f",
	  "off=0 ping len=5 [48 65 6c 6c 6f]\n" },
	{ __LINE__, 1, "8a 85 37 fa 21 3d 7f 9f 4d 51 58",
	  "off=0 pong len=5 [48 65 6c 6c 6f]\n" },
	/* A ping between two fragments (RFC 6455 5.4: control frames may
	 * be injected in the middle of a fragmented message). */
	{ __LINE__, 0, "01 03 48 65 6c 89 00 80 02 6c 6f",
	  "off=5 ping len=0 []\n"
	  "off=7 message text frames=2 len=5 [48 65 6c 6c 6f]\n" },
	/* An empty text message, an empty binary one, three empty frames. */
	{ __LINE__, 0, "81 00 82 00 02 00 00 00 80 00",
	  "off=0 message text frames=1 len=0 []\n"
	  "off=2 message binary frames=1 len=0 []\n"
	  "off=8 message binary frames=3 len=0 []\n" },
	/* Invalid UTF-8 in a binary message is just bytes. */
	{ __LINE__, 0, "82 02 ff 68",
	  "off=0 message binary frames=1 len=2 [ff 68]\n" },
	/* A 4-byte character split across three fragments. */
	{ __LINE__, 0, "01 01 f0 00 02 9f 98 80 01 80",
	  "off=7 message text frames=3 len=4 [f0 9f 98 80]\n" },
	/* Close with a code and a reason; nothing after it is read. */
	{ __LINE__, 0, "88 04 03 e8 6f 6b 81 01 78",
	  "off=0 close 1000 [6f 6b]\n" },
	/* Close with no code: 1005. */
	{ __LINE__, 1, "88 80 01 02 03 04",
	  "off=0 close 1005 []\n" },
	/* Close 4999 with a UTF-8 reason, masked. */
	{ __LINE__, 1, "88 84 00 00 00 00 13 87 c3 a9",
	  "off=0 close 4999 [c3 a9]\n" },
};

static void test_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vector *v = &vectors[i];
		struct rs_ws_parser_options opt = { v->server, 0, 0 };
		uint8_t in[512];
		size_t n = unhex(v->hex, in, sizeof(in));

		check_every_split(v->line, &opt, in, n, v->log);
	}
}

/* ------------------------------------------------------------------------ */
/* Malformed frames: the close code each one gets.                          */

struct malformed {
	int line;
	int server;
	int rsv1_ok;
	uint64_t max;
	const char *hex;
	int code;
	uint64_t offset;   /* of the frame at fault */
};

static const struct malformed malformed[] = {
	{ __LINE__, 1, 0, 0, "c1 80 00 00 00 00", 1002, 0 },  /* RSV1, no ext */
	{ __LINE__, 1, 0, 0, "a1 80 00 00 00 00", 1002, 0 },  /* RSV2 */
	{ __LINE__, 1, 0, 0, "91 80 00 00 00 00", 1002, 0 },  /* RSV3 */
	{ __LINE__, 1, 1, 0, "41 80 00 00 00 00 c0 80 00 00 00 00", 1002, 6 },
							      /* RSV1 on cont */
	{ __LINE__, 1, 1, 0, "c9 80 00 00 00 00", 1002, 0 },  /* RSV1 on ping */
	{ __LINE__, 1, 0, 0, "83 80 00 00 00 00", 1002, 0 },  /* opcode 3 */
	{ __LINE__, 1, 0, 0, "87 80 00 00 00 00", 1002, 0 },  /* opcode 7 */
	{ __LINE__, 1, 0, 0, "8b 80 00 00 00 00", 1002, 0 },  /* opcode B */
	{ __LINE__, 1, 0, 0, "8f 80 00 00 00 00", 1002, 0 },  /* opcode F */
	{ __LINE__, 1, 0, 0, "81 05 48 65 6c 6c 6f", 1002, 0 },  /* unmasked */
	{ __LINE__, 0, 0, 0, "81 80 00 00 00 00", 1002, 0 },  /* masked at client */
	{ __LINE__, 1, 0, 0, "09 80 00 00 00 00", 1002, 0 },  /* fragmented ping */
	{ __LINE__, 1, 0, 0, "08 80 00 00 00 00", 1002, 0 },  /* fragmented close */
	{ __LINE__, 1, 0, 0, "89 fe 00 7e", 1002, 0 },       /* ping of 126 */
	{ __LINE__, 0, 0, 0, "8a 7f 00 00 00 00 00 01 00 00", 1002, 0 },
							      /* pong of 64 KiB */
	{ __LINE__, 1, 0, 0, "80 80 00 00 00 00", 1002, 0 },  /* lone continuation */
	{ __LINE__, 1, 0, 0, "01 80 00 00 00 00 01 80 00 00 00 00", 1002, 6 },
							      /* text in text */
	{ __LINE__, 1, 0, 0, "02 80 00 00 00 00 82 80 00 00 00 00", 1002, 6 },
							      /* binary in binary */
	{ __LINE__, 0, 0, 0, "82 7e 00 7d", 1002, 0 },      /* 16 bits for 125 */
	{ __LINE__, 0, 0, 0, "82 7e 00 00", 1002, 0 },      /* 16 bits for 0 */
	{ __LINE__, 0, 0, 0, "82 7f 00 00 00 00 00 00 ff ff", 1002, 0 },
							      /* 64 bits for 65535 */
	{ __LINE__, 0, 0, 0, "82 7f 80 00 00 00 00 00 00 00", 1002, 0 },
							      /* top bit set */
	{ __LINE__, 1, 0, 0, "81 82 00 00 00 00 ff 68", 1007, 0 },  /* ff 68 */
	{ __LINE__, 1, 0, 0, "81 83 00 00 00 00 ed a0 80", 1007, 0 },
							      /* a surrogate */
	{ __LINE__, 1, 0, 0, "81 82 00 00 00 00 c0 80", 1007, 0 },  /* overlong */
	{ __LINE__, 1, 0, 0, "81 84 00 00 00 00 f4 90 80 80", 1007, 0 },
							      /* > U+10FFFF */
	{ __LINE__, 1, 0, 0, "81 81 00 00 00 00 e2", 1007, 0 },  /* cut short */
	{ __LINE__, 1, 0, 0, "01 81 00 00 00 00 e2 80 81 00 00 00 00 28", 1007, 7 },
							      /* bad across frames */
	{ __LINE__, 0, 0, 0, "01 02 e2 82 80 00", 1007, 4 },  /* cut at the end */
	{ __LINE__, 1, 0, 0, "88 81 00 00 00 00 03", 1002, 0 },  /* close of 1 byte */
	{ __LINE__, 1, 0, 0, "88 82 00 00 00 00 03 e7", 1002, 0 },  /* code 999 */
	{ __LINE__, 1, 0, 0, "88 82 00 00 00 00 03 ed", 1002, 0 },  /* code 1005 */
	{ __LINE__, 1, 0, 0, "88 82 00 00 00 00 03 ee", 1002, 0 },  /* code 1006 */
	{ __LINE__, 1, 0, 0, "88 82 00 00 00 00 03 f7", 1002, 0 },  /* code 1015 */
	{ __LINE__, 1, 0, 0, "88 82 00 00 00 00 0b b7", 1002, 0 },  /* code 2999 */
	{ __LINE__, 1, 0, 0, "88 82 00 00 00 00 13 88", 1002, 0 },  /* code 5000 */
	{ __LINE__, 1, 0, 0, "88 84 00 00 00 00 03 e8 ff 68", 1007, 0 },
							      /* reason not UTF-8 */
	{ __LINE__, 1, 0, 10, "82 8b 00 00 00 00", 1009, 0 },  /* 11 > 10 */
	{ __LINE__, 1, 0, 10, "02 86 00 00 00 00 01 02 03 04 05 06 80 85 00 00 00 00", 1009, 12 },
							      /* 6 + 5 > 10 */
};

static void test_malformed(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		const struct malformed *m = &malformed[i];
		struct rs_ws_parser_options opt = { m->server, m->rsv1_ok,
						    m->max };
		struct rs_ws_parser p;
		struct rs_ws_event ev;
		uint8_t in[64];
		size_t n = unhex(m->hex, in, sizeof(in)), used = 0;
		char want[LOG_CAP], *log;

		/* The error event, whole: its code, its offset, and the same
		 * error again from every later call. */
		rs_ws_parser_init(&p, &opt);
		do {
			used += rs_ws_parser_feed(&p, in + used, n - used, &ev);
		} while (ev.kind != RS_WS_EV_ERROR && ev.kind != RS_WS_EV_NONE);
		if (ev.kind != RS_WS_EV_ERROR || ev.code != m->code ||
		    ev.offset != m->offset) {
			print_error("malformed frame of line %d: kind %d code %d "
				    "offset %llu, want error %d at %llu\n",
				    m->line, ev.kind, ev.code,
				    (unsigned long long)ev.offset, m->code,
				    (unsigned long long)m->offset);
			fail();
		}
		assert_int_equal(rs_ws_parser_feed(&p, in, n, &ev), 0);
		assert_int_equal(ev.kind, RS_WS_EV_ERROR);
		assert_int_equal(ev.code, m->code);
		rs_ws_parser_free(&p);
		/* The same at every split. */
		log = want;
		want[0] = 0;
		snprintf(want, sizeof(want), "off=%llu error %d (%s)\n",
			 (unsigned long long)m->offset, m->code, ev.problem);
		(void)log;
		check_every_split(m->line, &opt, in, n, want);
	}
}

/* ------------------------------------------------------------------------ */
/* The encoder.                                                             */

struct header_vector {
	int line;
	int fin, rsv1, opcode;
	uint64_t len;
	const char *key;   /* hex or NULL */
	const char *hex;
};

static const struct header_vector headers[] = {
	{ __LINE__, 1, 0, 1, 0, NULL, "81 00" },
	{ __LINE__, 1, 0, 1, 125, NULL, "81 7d" },
	{ __LINE__, 1, 0, 2, 126, NULL, "82 7e 00 7e" },
	{ __LINE__, 1, 0, 2, 65535, NULL, "82 7e ff ff" },
	{ __LINE__, 1, 0, 2, 65536, NULL, "82 7f 00 00 00 00 00 01 00 00" },
	{ __LINE__, 0, 0, 1, 3, NULL, "01 03" },
	{ __LINE__, 0, 0, 0, 3, NULL, "00 03" },
	{ __LINE__, 1, 1, 1, 7, NULL, "c1 07" },
	{ __LINE__, 1, 0, 1, 5, "37 fa 21 3d", "81 85 37 fa 21 3d" },
	{ __LINE__, 1, 0, 2, 65536, "01 02 03 04",
	  "82 ff 00 00 00 00 00 01 00 00 01 02 03 04" },
	{ __LINE__, 1, 0, 8, 2, NULL, "88 02" },
};

static void test_headers(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		const struct header_vector *h = &headers[i];
		uint8_t key[4], out[RS_WS_MAX_HEADER], want[RS_WS_MAX_HEADER];
		size_t kn = h->key ? unhex(h->key, key, 4) : 0;
		size_t wn = unhex(h->hex, want, sizeof(want));
		size_t n = rs_ws_header(out, h->fin, h->rsv1, h->opcode, h->len,
					kn ? key : NULL);

		if (n != wn || memcmp(out, want, n) != 0) {
			char got[64];

			tohex(out, n, got);
			print_error("header of line %d: %s, want %s\n", h->line,
				    got, h->hex);
			fail();
		}
	}
}

/* RFC 6455 5.7's masked "Hello", written with every buffer size. */
static void test_encoder_every_size(void **state)
{
	static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
	uint8_t want[16], out[16];
	size_t wn = unhex("81 85 37 fa 21 3d 7f 9f 4d 51 58", want, sizeof(want));

	(void)state;
	for (size_t cap = 1; cap <= wn + 1; cap++) {
		struct rs_ws_encoder e;
		size_t n = 0, k;

		rs_ws_encoder_begin(&e, 1, 0, RS_WS_OP_TEXT, "Hello", 5, key);
		while ((k = rs_ws_encoder_write(&e, out + n, cap)) > 0) {
			n += k;
			assert_true(k == cap || rs_ws_encoder_done(&e));
		}
		assert_true(rs_ws_encoder_done(&e));
		assert_int_equal(n, wn);
		assert_memory_equal(out, want, wn);
	}
}

/*
 * Edge lengths, each a vector of its own (0, 125, 126, 65535, 65536), on
 * both sockets: the encoder's frame parsed back at every split point. The
 * payload is generated; the expected log is made from it.
 */
static void edge_length(size_t len)
{
	uint8_t *payload = malloc(len + 1), *frame = malloc(len + 14);
	struct rs_ws_rng rng;

	assert_non_null(payload);
	assert_non_null(frame);
	rs_ws_rng_seed(&rng, 42);
	rs_ws_rng_bytes(&rng, payload, len);
	for (int server = 0; server <= 1; server++) {
		struct rs_ws_encoder e;
		struct rs_ws_parser_options opt = { server, 0, 0 };
		uint8_t key[4];
		char want[256], d[64];
		size_t n;

		rs_ws_rng_bytes(&rng, key, 4);
		/* A client's frame is masked: a server parses it. */
		rs_ws_encoder_begin(&e, 1, 0, RS_WS_OP_BINARY, payload, len,
				    server ? key : NULL);
		n = rs_ws_encoder_write(&e, frame, len + 14);
		assert_true(rs_ws_encoder_done(&e));
		assert_int_equal(n, len + (len <= 125 ? 2 : len <= 65535 ? 4 : 10) +
					 (server ? 4 : 0));
		expected_payload = payload;
		expected_len = len;
		data_text(payload, len, d);
		snprintf(want, sizeof(want),
			 "off=0 message binary frames=1 len=%zu %s\n", len, d);
		check_every_split((int)len, &opt, frame, n, want);
		expected_payload = NULL;
	}
	free(payload);
	free(frame);
}

static void test_length_0(void **state) { (void)state; edge_length(0); }
static void test_length_125(void **state) { (void)state; edge_length(125); }
static void test_length_126(void **state) { (void)state; edge_length(126); }
static void test_length_65535(void **state) { (void)state; edge_length(65535); }
static void test_length_65536(void **state) { (void)state; edge_length(65536); }

/* A message just at the maximum passes; one byte more closes 1009. */
static void test_max_message_edge(void **state)
{
	struct rs_ws_parser_options opt = { 0, 0, 126 };
	uint8_t frame[200];
	char want[128], d[64];
	size_t n;

	(void)state;
	memset(frame, 'a', sizeof(frame));
	n = rs_ws_header(frame, 1, 0, RS_WS_OP_TEXT, 126, NULL);
	memset(frame + n, 'a', 126);
	data_text(frame + n, 126, d);
	snprintf(want, sizeof(want), "off=0 message text frames=1 len=126 %s\n", d);
	check_every_split(__LINE__, &opt, frame, n + 126, want);
	n = rs_ws_header(frame, 1, 0, RS_WS_OP_TEXT, 127, NULL);
	check_every_split(__LINE__, &opt, frame, n,
			  "off=0 error 1009 (a message over the maximum size)\n");
}

/* ------------------------------------------------------------------------ */
/* Whole small frames (ws_frame.c's whole_frame) against the byte-by-byte  */
/* path: every vector runs whole (the frames then go the whole-frame way),  */
/* at every split and byte by byte (the byte-by-byte way).                  */

/*
 * Appends one frame to out at *n: the header, then the payload masked
 * here byte by byte (RFC 6455 5.3), not by rs_ws_mask, when masked; the
 * key differs from frame to frame.
 */
static void put_frame(uint8_t *out, size_t *n, int fin, int opcode,
		      const uint8_t *payload, size_t len, int masked)
{
	uint8_t key[4] = { (uint8_t)(0x11 * (*n % 15 + 1)), 0x80, 0x35,
			   (uint8_t)(*n | 0x81) };
	size_t h = rs_ws_header(out + *n, fin, 0, opcode, len,
				masked ? key : NULL);

	for (size_t i = 0; i < len; i++)
		out[*n + h + i] = payload[i] ^ (masked ? key[i % 4] : 0);
	*n += h + len;
}

/* Appends the log line of a message that began at off. */
static void want_message(char *log, uint64_t off, int opcode, uint32_t frames,
			 const uint8_t *p, size_t len)
{
	char d[64];
	size_t at = strlen(log);

	data_text(p, len, d);
	snprintf(log + at, LOG_CAP - at,
		 "off=%llu message %s frames=%u len=%zu %s\n",
		 (unsigned long long)off, opcode == RS_WS_OP_TEXT ? "text" : "binary",
		 frames, len, d);
}

/*
 * Text, binary and non-ASCII text frames of every length from 0 to 33 and
 * at 124 to 127 (the 7-bit length's edge), on both sides: the payloads
 * start at every alignment, and the lengths give the unmask every tail
 * after its 8-byte words (0 to 7 bytes) and the ASCII check every place
 * for the non-ASCII byte. Binary bytes of 80..FF are never checked as
 * UTF-8.
 */
static void test_small_frames_every_length(void **state)
{
	static const size_t lens[] = { 124, 125, 126, 127 };
	uint8_t ascii[128], high[128], accent[128], in[3 * (128 + 14)];
	char *want = malloc(LOG_CAP);

	(void)state;
	assert_non_null(want);
	for (size_t i = 0; i < sizeof(ascii); i++) {
		ascii[i] = (uint8_t)(' ' + i % 95);
		high[i] = (uint8_t)(0x80 + i);
	}
	for (size_t k = 0; k < 34 + sizeof(lens) / sizeof(lens[0]); k++) {
		size_t len = k < 34 ? k : lens[k - 34];

		memcpy(accent, ascii, len);
		if (len >= 2) {  /* é at the end: in the tail, after the words */
			accent[len - 2] = 0xc3;
			accent[len - 1] = 0xa9;
		}
		for (int server = 0; server <= 1; server++) {
			struct rs_ws_parser_options opt = { server, 0, 0 };
			size_t n = 0, off[3];

			want[0] = 0;
			off[0] = n;
			put_frame(in, &n, 1, RS_WS_OP_TEXT, ascii, len, server);
			off[1] = n;
			put_frame(in, &n, 1, RS_WS_OP_BINARY, high, len, server);
			off[2] = n;
			put_frame(in, &n, 1, RS_WS_OP_TEXT, accent, len, server);
			want_message(want, off[0], RS_WS_OP_TEXT, 1, ascii, len);
			want_message(want, off[1], RS_WS_OP_BINARY, 1, high, len);
			want_message(want, off[2], RS_WS_OP_TEXT, 1, accent, len);
			check_every_split((int)len, &opt, in, n, want);
		}
	}
	free(want);
}

/*
 * A text message of 1 to 20 bytes with one byte at every position that
 * breaks UTF-8 (FF; or C3 as the last byte, a sequence cut by the end of
 * the message), behind a good message: 1007 at the second frame, however
 * the input is split. And the same message good (é at every position).
 */
static void test_utf8_every_position(void **state)
{
	uint8_t text[24], in[128];
	char want[LOG_CAP];

	(void)state;
	for (size_t len = 1; len <= 20; len++) {
		for (size_t pos = 0; pos < len; pos++) {
			struct rs_ws_parser_options opt = { 1, 0, 0 };
			size_t n = 0, second;

			memset(text, 'x', len);
			text[pos] = pos + 1 == len ? 0xc3 : 0xff;
			put_frame(in, &n, 1, RS_WS_OP_TEXT, (const uint8_t *)"ok", 2, 1);
			second = n;
			put_frame(in, &n, 1, RS_WS_OP_TEXT, text, len, 1);
			want[0] = 0;
			want_message(want, 0, RS_WS_OP_TEXT, 1, (const uint8_t *)"ok", 2);
			snprintf(want + strlen(want), LOG_CAP - strlen(want),
				 "off=%zu error 1007 (%s)\n", second,
				 pos + 1 == len ? "text that ends inside a UTF-8 sequence"
						: "text that is not UTF-8");
			check_every_split((int)(len * 100 + pos), &opt, in, n, want);
			if (pos + 1 == len)
				continue;
			text[pos] = 0xc3;
			text[pos + 1] = 0xa9;
			n = 0;
			put_frame(in, &n, 1, RS_WS_OP_TEXT, text, len, 1);
			want[0] = 0;
			want_message(want, 0, RS_WS_OP_TEXT, 1, text, len);
			check_every_split((int)(len * 100 + pos), &opt, in, n, want);
		}
	}
}

/*
 * A text message of 3 to 12 bytes with € (E2 82 AC) at every position,
 * in two fragments cut at every byte and a ping between them: the
 * character split across fragments, a control frame between them, and
 * the whole-frame way taking neither fragment (no FIN on the first, a
 * continuation the second). Then a small message, whole again.
 */
static void test_utf8_across_fragments(void **state)
{
	uint8_t text[16], in[128];
	char want[LOG_CAP];

	(void)state;
	for (size_t len = 3; len <= 12; len++) {
		for (size_t pos = 0; pos + 3 <= len; pos++) {
			memset(text, 'y', len);
			memcpy(text + pos, "\xe2\x82\xac", 3);
			for (size_t cut = 0; cut <= len; cut++) {
				struct rs_ws_parser_options opt = { 1, 0, 0 };
				size_t n = 0, ping, second, last;

				put_frame(in, &n, 0, RS_WS_OP_TEXT, text, cut, 1);
				ping = n;
				put_frame(in, &n, 1, RS_WS_OP_PING, (const uint8_t *)"p", 1, 1);
				second = n;
				put_frame(in, &n, 1, RS_WS_OP_CONT, text + cut, len - cut, 1);
				last = n;
				put_frame(in, &n, 1, RS_WS_OP_TEXT, text, len, 1);
				snprintf(want, sizeof(want), "off=%zu ping len=1 [70]\n", ping);
				want_message(want, second, RS_WS_OP_TEXT, 2, text, len);
				want_message(want, last, RS_WS_OP_TEXT, 1, text, len);
				check_every_split((int)(len * 10000 + pos * 100 + cut),
						  &opt, in, n, want);
			}
		}
	}
}

static void test_mask_generator_is_seeded(void **state)
{
	struct rs_ws_rng a, b, c;
	uint8_t x[32], y[32], z[32];

	(void)state;
	rs_ws_rng_seed(&a, 7);
	rs_ws_rng_seed(&b, 7);
	rs_ws_rng_seed(&c, 8);
	rs_ws_rng_bytes(&a, x, sizeof(x));
	rs_ws_rng_bytes(&b, y, sizeof(y));
	rs_ws_rng_bytes(&c, z, sizeof(z));
	assert_memory_equal(x, y, sizeof(x));
	assert_memory_not_equal(x, z, sizeof(x));
}

/* rs_ws_mask at every offset and length against the byte-wise rule. */
static void test_mask_offsets(void **state)
{
	static const uint8_t key[4] = { 0x01, 0x20, 0x40, 0x80 };
	uint8_t src[40], dst[40];

	(void)state;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7);
	for (uint64_t at = 0; at < 8; at++)
		for (size_t n = 0; n <= sizeof(src); n++) {
			rs_ws_mask(dst, src, n, key, at);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(dst[i], src[i] ^ key[(at + i) % 4]);
		}
}

/* ------------------------------------------------------------------------ */
/* The handshake.                                                           */

/* RFC 6455 1.3's example key and answer. */
static void test_accept_key(void **state)
{
	char out[29];

	(void)state;
	assert_int_equal(rs_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", 24, out), 0);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static const char good_request[] =
	"GET /chat HTTP/1.1\r\n"
	"Host: server.example.com\r\n"
	"upgrade: WebSocket\r\n"
	"Connection: keep-alive, Upgrade\r\n"
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	"Sec-WebSocket-Version: 13\r\n"
	"Sec-WebSocket-Extensions:  permessage-deflate \r\n"
	"\r\n";

/* Every prefix is incomplete (0); the whole request parses. */
static void test_request_every_split(void **state)
{
	struct rs_ws_request r;
	size_t n = sizeof(good_request) - 1;

	(void)state;
	for (size_t k = 0; k < n; k++)
		assert_int_equal(rs_ws_parse_request(good_request, k, &r), 0);
	assert_int_equal(rs_ws_parse_request(good_request, n, &r), (int)n);
	assert_int_equal(r.path_len, 5);
	assert_memory_equal(r.path, "/chat", 5);
	assert_memory_equal(r.key, "dGhlIHNhbXBsZSBub25jZQ==", 24);
	assert_int_equal(r.extensions_len, 18);
	assert_memory_equal(r.extensions, "permessage-deflate", 18);
}

struct bad_request {
	int line;
	const char *head;
	int status;
};

static const struct bad_request bad_requests[] = {
	{ __LINE__, "POST / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.0\r\n\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.1\r\nConnection: Upgrade\r\n"
		    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		    "Sec-WebSocket-Version: 13\r\n\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
		    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		    "Sec-WebSocket-Version: 13\r\n\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
		    "Connection: Upgrade\r\n"
		    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		    "Sec-WebSocket-Version: 8\r\n\r\n", 426 },
	{ __LINE__, "GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
		    "Connection: Upgrade\r\n"
		    "Sec-WebSocket-Key: c2hvcnQ=\r\n"
		    "Sec-WebSocket-Version: 13\r\n\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
		    "Connection: Upgrade\r\n"
		    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		    "Sec-WebSocket-Version: 13\r\n\r\n", 400 },
	/* Heads that are not HTTP (http_parse.h), refused before their end. */
	{ __LINE__, "GET /\x80 HTTP/1.1\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.1\r\nUpgrade : websocket\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.1\r\nUpgrade: websocket\r\n folded\r\n", 400 },
	{ __LINE__, "GET / HTTP/1.1\nUpgrade: websocket\r\n\r\n", 400 },
};

static void test_bad_requests(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_requests) / sizeof(bad_requests[0]);
	     i++) {
		struct rs_ws_request r;
		const char *h = bad_requests[i].head;
		int n = rs_ws_parse_request(h, strlen(h), &r);

		if (n != -EPROTO || r.status != bad_requests[i].status) {
			print_error("request of line %d: %d, status %d\n",
				    bad_requests[i].line, n, r.status);
			fail();
		}
		assert_non_null(r.problem);
	}
}

static void test_request_too_large(void **state)
{
	char *big = malloc(9000);
	struct rs_ws_request r;

	(void)state;
	assert_non_null(big);
	memset(big, 'a', 9000);
	assert_int_equal(rs_ws_parse_request(big, 9000, &r), -EMSGSIZE);
	assert_int_equal(r.status, 431);
	free(big);
}

/* The client's request from RFC 6455's nonce, answered by our server's
 * response; a wrong accept is refused. */
static void test_client_and_server_heads(void **state)
{
	static const uint8_t nonce[16] = "the sample nonce";
	char req[512], resp[512], key[25];
	struct rs_ws_request r;
	struct rs_ws_response a;
	int n, m;

	(void)state;
	n = rs_ws_client_request(req, sizeof(req), "h", "/", nonce, 0, key);
	assert_true(n > 0);
	assert_string_equal(key, "dGhlIHNhbXBsZSBub25jZQ==");
	assert_int_equal(rs_ws_parse_request(req, (size_t)n, &r), n);
	m = rs_ws_server_response(resp, sizeof(resp), r.key, NULL);
	assert_true(m > 0);
	assert_non_null(strstr(resp, "Sec-WebSocket-Accept: "
				     "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
	for (int k = 0; k < m; k++)
		assert_int_equal(rs_ws_parse_response(resp, (size_t)k, key, &a), 0);
	assert_int_equal(rs_ws_parse_response(resp, (size_t)m, key, &a), m);
	assert_null(a.extensions);
	resp[strstr(resp, "s3pP") - resp] = 'x';
	assert_int_equal(rs_ws_parse_response(resp, (size_t)m, key, &a), -EPROTO);
	assert_int_equal(rs_ws_parse_response("HTTP/1.1 101\r\n", 14, key, &a),
			 -EPROTO);
	assert_int_equal(rs_ws_parse_response("HTTP/1.1 200 OK\r\n\r\n", 19,
					      key, &a), -EPROTO);
	assert_string_equal(a.problem, "the status is not 101");
	assert_int_equal(rs_ws_server_response(resp, 20, r.key, NULL), -ENOSPC);
}

/* Sec-WebSocket-Extensions on both sides: one field is taken as it is,
 * two are refused (400 on the server's side). */
static void test_extensions_field(void **state)
{
	static const uint8_t nonce[16] = "the sample nonce";
	static const char ext[] = "permessage-deflate; client_max_window_bits";
	char req[512], twice[640], resp[512], rtwice[640], key[25];
	struct rs_ws_request r;
	struct rs_ws_response a;
	int n, m, k;

	(void)state;
	n = rs_ws_client_request(req, sizeof(req), "h", "/", nonce, ext, key);
	assert_true(n > 0);
	assert_int_equal(rs_ws_parse_request(req, (size_t)n, &r), n);
	assert_int_equal(r.extensions_len, strlen(ext));
	assert_memory_equal(r.extensions, ext, strlen(ext));
	/* The same head with the field twice: it ends "\r\n\r\n". */
	k = snprintf(twice, sizeof(twice), "%.*sSec-WebSocket-Extensions: x\r\n\r\n",
		     n - 2, req);
	assert_int_equal(rs_ws_parse_request(twice, (size_t)k, &r), -EPROTO);
	assert_int_equal(r.status, 400);
	assert_string_equal(r.problem, "Sec-WebSocket-Extensions twice");

	m = rs_ws_server_response(resp, sizeof(resp), key, "permessage-deflate");
	assert_true(m > 0);
	assert_int_equal(rs_ws_parse_response(resp, (size_t)m, key, &a), m);
	assert_int_equal(a.extensions_len, strlen("permessage-deflate"));
	assert_memory_equal(a.extensions, "permessage-deflate", a.extensions_len);
	k = snprintf(rtwice, sizeof(rtwice), "%.*sSec-WebSocket-Extensions: x\r\n\r\n",
		     m - 2, resp);
	assert_int_equal(rs_ws_parse_response(rtwice, (size_t)k, key, &a), -EPROTO);
	assert_string_equal(a.problem, "Sec-WebSocket-Extensions twice");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_extensions_field),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_encoder_every_size),
		cmocka_unit_test(test_length_0),
		cmocka_unit_test(test_length_125),
		cmocka_unit_test(test_length_126),
		cmocka_unit_test(test_length_65535),
		cmocka_unit_test(test_length_65536),
		cmocka_unit_test(test_max_message_edge),
		cmocka_unit_test(test_small_frames_every_length),
		cmocka_unit_test(test_utf8_every_position),
		cmocka_unit_test(test_utf8_across_fragments),
		cmocka_unit_test(test_mask_generator_is_seeded),
		cmocka_unit_test(test_mask_offsets),
		cmocka_unit_test(test_accept_key),
		cmocka_unit_test(test_request_every_split),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_request_too_large),
		cmocka_unit_test(test_client_and_server_heads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
