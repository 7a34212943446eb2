/*
 * chunked_server: the reference stack's HTTP server with chunked responses
 * standalone, for real clients (tests/e2e/test_chunked_clients.py:
 * curl, http.client, h11) and load generators (bench/chunked.py: wrk).
 *
 *   chunked_server [--port N] [--variant NAME=VALUE]... [--requests N]
 *
 * It listens on 127.0.0.1 (port 0 picks one), prints "listening PORT" on
 * stdout, and answers each request by its target:
 *
 *   /tryfinal/N   try_write(N bytes, final); on writable, the rest, again
 *   /try/N        try_write(N bytes); on writable, the rest; then end()
 *   /tryend/N     try_write(N bytes); end(the rest) at once
 *   /write/N      write(half), write(the other half), end()
 *   /trywrite/N   try_write(half); write(the rest of it); end(other half)
 *   /stats        the gate's send, sendmsg and writev counts so far (text)
 *
 * Body byte i is wc_pattern(i) (harness/protocol.h's stream pattern), so a
 * client knows what it must decode. Fault rules come from WIRECHECK_FAULTS
 * (the gate's environment variable). With --requests N it exits after the
 * N-th response has ended and every connection closed; else it runs until
 * killed. Exit status 2 on a bad argument.
 */
#include "fi.h"
#include "http_parse.h"
#include "rs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline unsigned char pattern(uint64_t x)
{
	return (unsigned char)(0x21 + (((uint32_t)x * 2654435761u) >> 16) % 94);
}

/* Every body is a prefix of this one pattern buffer, made once and grown
 * as needed, so that a request costs no fill (wrk measures the stack). */
static unsigned char *bodies;
static size_t bodies_len;

static const unsigned char *body_of(size_t len)
{
	if (len > bodies_len) {
		unsigned char *b = realloc(bodies, len);

		if (!b)
			return NULL;
		for (size_t i = bodies_len; i < len; i++)
			b[i] = pattern(i);
		bodies = b;
		bodies_len = len;
	}
	return bodies;
}

struct pending {
	const unsigned char *data;  /* the body of the response */
	size_t len;
	size_t tried;         /* bytes of data the try_write covers */
	uint64_t base;        /* the offset when it started */
	int final;
	int end_after;        /* end() once the try_write is out */
};

static long requests_left = -1;
static rs_listener *listener;

static void done_one(void)
{
	if (requests_left > 0 && --requests_left == 0 && listener) {
		rs_listener_close(listener);
		listener = NULL;
	}
}

static void pending_free(struct pending *p)
{
	free(p);
}

/* On writable: the rest of the try_write, again. */
static void resume(rs_http_res *res, uint64_t offset, void *arg)
{
	struct pending *p = arg;
	size_t out = (size_t)(offset - p->base);
	int rc = rs_http_res_try_write(res, p->data + out, p->tried - out,
				       p->final);

	if (rc == 0)
		return;
	rs_http_res_on_writable(res, NULL, NULL);
	if (rc > 0 && p->end_after)
		(void)rs_http_res_end(res, p->data + p->tried,
				      p->len - p->tried, NULL, NULL);
	done_one();
	pending_free(p);
}

static void stats(rs_http_res *res)
{
	char buf[160];
	int n = snprintf(buf, sizeof(buf), "send=%llu sendmsg=%llu writev=%llu\n",
			 (unsigned long long)fi_calls(fi_counters(), FI_SEND),
			 (unsigned long long)fi_calls(fi_counters(), FI_SENDMSG),
			 (unsigned long long)fi_calls(fi_counters(), FI_WRITEV));

	(void)rs_http_res_end(res, buf, (size_t)n, NULL, NULL);
	done_one();
}

static void on_request(rs_http_conn *c, rs_http_res *res,
		       const struct rs_http_request *req, const char *body,
		       size_t body_len, void *arg)
{
	char mode[16] = "";
	unsigned long long n = 0;
	struct pending *p;
	size_t half;
	int rc;

	(void)c;
	(void)body;
	(void)body_len;
	(void)arg;
	if (req->target_len == 6 && memcmp(req->target, "/stats", 6) == 0) {
		stats(res);
		return;
	}
	{
		char target[64];
		size_t tl = req->target_len < sizeof(target) - 1 ? req->target_len
								 : sizeof(target) - 1;

		memcpy(target, req->target, tl);
		target[tl] = '\0';
		if (sscanf(target, "/%15[a-z]/%llu", mode, &n) != 2 ||
		    n > 64ull * 1024 * 1024) {
			(void)rs_http_res_head(res, 404, NULL);
			(void)rs_http_res_end(res, NULL, 0, NULL, NULL);
			done_one();
			return;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->data = body_of(n ? (size_t)n : 1))) {
		free(p);
		(void)rs_http_res_head(res, 500, NULL);
		(void)rs_http_res_end(res, NULL, 0, NULL, NULL);
		done_one();
		return;
	}
	p->len = (size_t)n;
	half = p->len / 2;
	p->base = rs_http_res_offset(res);
	if (strcmp(mode, "write") == 0 || strcmp(mode, "trywrite") == 0) {
		if (mode[0] == 'w') {
			(void)rs_http_res_write(res, p->data, half, NULL, NULL);
		} else {
			rc = rs_http_res_try_write(res, p->data, half, 0);
			if (rc == 0) {
				size_t out = (size_t)rs_http_res_offset(res);

				(void)rs_http_res_write(res, p->data + out,
							half - out, NULL, NULL);
			}
		}
		(void)rs_http_res_write(res, p->data + half, p->len - half,
					NULL, NULL);
		(void)rs_http_res_end(res, NULL, 0, NULL, NULL);
		done_one();
		pending_free(p);
		return;
	}
	p->tried = p->len;
	p->final = strcmp(mode, "tryfinal") == 0;
	p->end_after = !p->final;
	rc = rs_http_res_try_write(res, p->data, p->len, p->final);
	if (rc == 0 && strcmp(mode, "tryend") == 0) {
		size_t out = (size_t)rs_http_res_offset(res);

		(void)rs_http_res_end(res, p->data + out, p->len - out, NULL, NULL);
		rc = 1;
		p->end_after = 0;
	}
	if (rc == 0) {
		rs_http_res_on_writable(res, resume, p);
		return;
	}
	if (rc > 0 && p->end_after)
		(void)rs_http_res_end(res, NULL, 0, NULL, NULL);
	done_one();
	pending_free(p);
}

static void on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	rs_http_conn *c;

	(void)l;
	(void)arg;
	if (rs_http_attach(s, 0, NULL, NULL, on_request, NULL, &c) < 0)
		rs_socket_destroy(s, 0);
}

int main(int argc, char **argv)
{
	/* TCP_NODELAY, as node's http server: the legacy strategy's small
	 * terminator send must not wait for Nagle and a delayed ACK. */
	struct rs_socket_options opts = { .nodelay = 1 };
	rs_loop *loop;
	int port = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
			port = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
			requests_left = atol(argv[++i]);
		} else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc) {
			char *eq = strchr(argv[++i], '=');

			if (!eq) {
				fprintf(stderr, "chunked_server: --variant %s: expected NAME=VALUE\n", argv[i]);
				return 2;
			}
			*eq = '\0';
			if (rs_variant_set(argv[i], eq + 1) < 0) {
				fprintf(stderr, "chunked_server: --variant %s=%s: unknown\n", argv[i], eq + 1);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: chunked_server [--port N] [--variant NAME=VALUE]... [--requests N]\n");
			return 2;
		}
	}
	if (fi_init() < 0)
		return 2;
	if ((rc = rs_loop_new(&loop)) < 0 ||
	    (rc = rs_listen_tcp(loop, "127.0.0.1", port, &opts, on_connection,
				NULL, &listener)) < 0) {
		fprintf(stderr, "chunked_server: %s\n", strerror(-rc));
		return 1;
	}
	printf("listening %d\n", rs_listener_port(listener));
	fflush(stdout);
	rc = rs_loop_run(loop);
	if (rc < 0) {
		fprintf(stderr, "chunked_server: loop: %s\n", strerror(-rc));
		return 1;
	}
	free(bodies);
	return rs_loop_free(loop) < 0 ? 1 : 0;
}
