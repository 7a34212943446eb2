/*
 * sender_libuv.c: libuv's end(P) as a sender of bench/sender_cpu, beside the
 * reference stack, node and the plain send loop.
 *
 * It speaks bench/sender_node.js's protocol, one line each way per run:
 * bench/sender_cpu writes "unix <path> <bytes>" or "tcp <port> <bytes>"; the
 * program connects, starts the clock once connected, hands the whole
 * payload to libuv in one uv_write (libuv holds the caller's buffer until
 * the write callback: no copy), then calls uv_shutdown, and in the shutdown
 * callback (libuv runs it once its write queue is empty and shutdown(2) has
 * sent the FIN) answers "ok <cpu µs>", then closes the handle. "ready
 * <libuv version>" is the first line; a failure answers "error <name>".
 *
 * The clock is CLOCK_THREAD_CPUTIME_ID of the loop's thread, the clock of
 * the reference stack's sender: libuv does a stream's writes on the loop
 * thread (its thread pool is for files and DNS). The payload is
 * malloc(bytes) filled with 0x61 ('a', node's Buffer.alloc(bytes, 0x61)),
 * made once per size before any run of that size.
 *
 * bench/sender_cpu runs it twice: as it is (unclamped), and with the gate
 * preloaded (LD_PRELOAD=libwirecheck-preload.so) and
 * WIRECHECK_FAULTS=write:short=4096,repeat=forever, so that every write(2)
 * libuv makes on the socket sends at most 4 KiB.
 *
 * Exits 0 at the end of its input, 1 when the loop cannot start.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#define MAX_PAYLOADS 16

struct payload {
	size_t len;
	char *bytes;
};

/* One run: the connection and what its callbacks report. */
struct run {
	union {
		uv_pipe_t pipe;
		uv_tcp_t tcp;
		uv_stream_t stream;
		uv_handle_t handle;
	} h;
	uv_connect_t connect;
	uv_write_t write;
	uv_shutdown_t shutdown;
	const struct payload *p;
	double t0;
	int answered;
};

static struct payload payloads[MAX_PAYLOADS];
static size_t npayloads;

static double thread_cpu_us(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return -1.0;
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The payload of len bytes, made on first use; NULL when out of memory or
 * when too many sizes were asked for. */
static const struct payload *payload(size_t len)
{
	for (size_t i = 0; i < npayloads; i++)
		if (payloads[i].len == len)
			return &payloads[i];
	if (npayloads == MAX_PAYLOADS)
		return NULL;
	payloads[npayloads].bytes = malloc(len);
	if (payloads[npayloads].bytes == NULL)
		return NULL;
	memset(payloads[npayloads].bytes, 0x61, len);
	payloads[npayloads].len = len;
	return &payloads[npayloads++];
}

/* The run's one answer line; later ones (an error after the answer) are
 * dropped, as sender_node.js does. */
static void answer(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void answer(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->answered)
		return;
	r->answered = 1;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct run *r = req->data;
	double t1 = thread_cpu_us();

	if (status < 0)
		answer(r, "error %s", uv_err_name(status));
	else
		answer(r, "ok %.1f", t1 - r->t0);
	uv_close(&r->h.handle, NULL);
}

static void on_write(uv_write_t *req, int status)
{
	struct run *r = req->data;

	/* The shutdown request, queued behind the write, then fails with
	 * ECANCELED or runs: it answers. A failed write answers first. */
	if (status < 0)
		answer(r, "error %s", uv_err_name(status));
}

static void on_connect(uv_connect_t *req, int status)
{
	struct run *r = req->data;
	uv_buf_t b;
	int rc;

	if (status < 0) {
		answer(r, "error %s", uv_err_name(status));
		uv_close(&r->h.handle, NULL);
		return;
	}
	r->t0 = thread_cpu_us();
	b = uv_buf_init(r->p->bytes, (unsigned)r->p->len);
	r->write.data = r;
	r->shutdown.data = r;
	rc = uv_write(&r->write, &r->h.stream, &b, 1, on_write);
	if (rc == 0)
		rc = uv_shutdown(&r->shutdown, &r->h.stream, on_shutdown);
	if (rc < 0) {
		answer(r, "error %s", uv_err_name(rc));
		uv_close(&r->h.handle, NULL);
	}
}

/* One command line: runs the loop until the connection is closed. */
static void run_line(uv_loop_t *loop, char *line)
{
	char kind[8], where[256];
	unsigned long long bytes;
	struct run r = { 0 };
	int rc;

	if (sscanf(line, "%7s %255s %llu", kind, where, &bytes) != 3 || bytes == 0 ||
	    bytes > UINT32_MAX || (strcmp(kind, "unix") != 0 && strcmp(kind, "tcp") != 0)) {
		line[strcspn(line, "\n")] = '\0';
		printf("error bad command: %s\n", line);
		fflush(stdout);
		return;
	}
	r.p = payload((size_t)bytes);
	if (r.p == NULL) {
		printf("error ENOMEM\n");
		fflush(stdout);
		return;
	}
	r.connect.data = &r;
	if (strcmp(kind, "unix") == 0) {
		rc = uv_pipe_init(loop, &r.h.pipe, 0);
		if (rc == 0)
			uv_pipe_connect(&r.connect, &r.h.pipe, where, on_connect);
	} else {
		struct sockaddr_in sa;
		char *end;
		long port = strtol(where, &end, 10);

		rc = *end != '\0' || port <= 0 || port > 65535 ? UV_EINVAL : 0;
		if (rc == 0)
			rc = uv_ip4_addr("127.0.0.1", (int)port, &sa);
		if (rc == 0)
			rc = uv_tcp_init(loop, &r.h.tcp);
		if (rc == 0) {
			rc = uv_tcp_connect(&r.connect, &r.h.tcp,
					    (const struct sockaddr *)&sa, on_connect);
			if (rc < 0)
				uv_close(&r.h.handle, NULL);
		}
	}
	if (rc < 0)
		answer(&r, "error %s", uv_err_name(rc));
	/* Returns once the handle is closed: nothing else is active. */
	(void)uv_run(loop, UV_RUN_DEFAULT);
	if (!r.answered)
		answer(&r, "error the loop ended without an answer");
}

int main(void)
{
	static char line[512];
	uv_loop_t loop;

	if (uv_loop_init(&loop) != 0) {
		fprintf(stderr, "sender_libuv: uv_loop_init failed\n");
		return 1;
	}
	printf("ready libuv-%s\n", uv_version_string());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL)
		run_line(&loop, line);
	for (size_t i = 0; i < npayloads; i++)
		free(payloads[i].bytes);
	return uv_loop_close(&loop) == 0 ? 0 : 1;
}
