/*
 * ws_echo_client.c: ws_echo's WebSocket client: plain C, a blocking unix
 * socket, frames masked with the zero key (masking is then a no-op for the
 * client; the servers still unmask), every frame it reads unfragmented and
 * unmasked, as the servers send them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench_common.h"
#include "rs.h"
#include "ws_echo.h"
#include "ws_frame.h"

static void conn_fill(struct conn *c)
{
	ssize_t n;

	if (c->head > 0 && c->head == c->tail)
		c->head = c->tail = 0;
	if (c->tail == RBUF) {
		memmove(c->buf, c->buf + c->head, c->tail - c->head);
		c->tail -= c->head;
		c->head = 0;
	}
	n = read(c->fd, c->buf + c->tail, RBUF - c->tail);
	if (n <= 0)
		bc_die("%s: read: %s", c->path,
		       n == 0 ? "the server closed the connection" : strerror(errno));
	c->tail += (size_t)n;
}

struct conn conn_open(const char *path)
{
	static const char req[] =
		"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		"Sec-WebSocket-Version: 13\r\n\r\n";
	struct conn c = { -1, malloc(RBUF), 0, 0, path };
	char *end = NULL;

	if (!c.buf)
		bc_die("out of memory");
	for (int i = 0; i < 200 && c.fd < 0; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			c.fd = fd;
			break;
		}
		if (fd >= 0)
			close(fd);
		usleep(10000); /* the server is starting: a retry, not a sync */
	}
	if (c.fd < 0)
		bc_die("cannot connect to %s", path);
	if (bc_write_full(c.fd, req, sizeof(req) - 1) < 0)
		bc_die("%s: cannot send the Upgrade request", path);
	while (!end) {
		conn_fill(&c);
		c.buf[c.tail < RBUF ? c.tail : RBUF - 1] = '\0';
		end = strstr(c.buf, "\r\n\r\n");
	}
	if (strncmp(c.buf, "HTTP/1.1 101", 12))
		bc_die("%s: no 101 answer", path);
	c.head = (size_t)(end + 4 - c.buf);
	return c;
}

/* One message from the server (unfragmented, unmasked): its opcode, and
 * its payload, valid until the next call. */
const uint8_t *conn_frame(struct conn *c, int *op, size_t *len)
{
	for (;;) {
		const uint8_t *p = (const uint8_t *)c->buf + c->head;
		size_t have = c->tail - c->head, h = 2, n;

		if (have >= 2) {
			n = p[1] & 0x7f;
			if (n == 126)
				h = 4;
			else if (n == 127)
				h = 10;
			if (have >= h) {
				if (n == 126)
					n = (size_t)p[2] << 8 | p[3];
				else if (n == 127)
					n = (size_t)p[6] << 24 | (size_t)p[7] << 16 |
					    (size_t)p[8] << 8 | p[9];
				if (h + n > RBUF)
					bc_die("%s: a frame over the buffer", c->path);
				if (have >= h + n) {
					if ((p[0] & 0x80) == 0 || (p[1] & 0x80))
						bc_die("%s: a fragmented or masked frame",
						       c->path);
					*op = p[0] & 0x0f;
					/* The servers send no control frame
					 * unasked: a ping is an idle timer,
					 * a close the end of the connection. */
					if (*op >= 8)
						bc_die("%s: the server sent a %s frame",
						       c->path, *op == 9 ? "ping" :
						       *op == 8 ? "close" : "control");
					*len = n;
					c->head += h + n;
					return p + h;
				}
			}
		}
		conn_fill(c);
	}
}

/* A masked frame with the zero key (masking is then the identity). */
void conn_send(struct conn *c, int op, const void *data, size_t len)
{
	static uint8_t frame[14 + 65536];
	static const uint8_t zero[4];
	size_t h = rs_ws_header(frame, 1, 0, op, len, zero);

	if (len > 65536)
		bc_die("a message over 64 KiB");
	memcpy(frame + h, data, len);
	if (bc_write_full(c->fd, frame, h + len) < 0)
		bc_die("%s: write: %s", c->path,
		       errno == EPIPE ? "the server closed the connection" :
					 strerror(errno));
}

/* The server's CPU so far, in microseconds. */
double conn_cpu(struct conn *c)
{
	long long u, s;
	char text[64];
	int op;
	size_t len;
	const uint8_t *p;

	conn_send(c, RS_WS_OP_TEXT, "!cpu", 4);
	p = conn_frame(c, &op, &len);
	if (op != RS_WS_OP_TEXT || len >= sizeof(text))
		bc_die("%s: no cpu answer", c->path);
	memcpy(text, p, len);
	text[len] = '\0';
	if (sscanf(text, "cpu %lld %lld", &u, &s) != 2)
		bc_die("%s: a bad cpu answer: %s", c->path, text);
	return (double)(u + s);
}
