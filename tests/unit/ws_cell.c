/*
 * ws_cell: the reference stack's WebSocket socket as a plain program, so
 * that tests/e2e/test_ws_wire.py can put it in front of real peers (npm
 * ws, python3-websockets, wsproto) without the harness.
 *
 *     ws_cell server [by-kind] [deflate] [no-compress] [echo]  listens on
 *                                                     127.0.0.1:0, prints
 *                                                     "port N"
 *     ws_cell client PORT [by-kind] [deflate] [echo]  connects to
 *                                                     127.0.0.1:PORT
 *
 * deflate enables permessage-deflate with npm ws's default options (the
 * client offers it, the server accepts an offer). no-compress (with
 * deflate) sends each cell's message with npm ws's `compress: false`
 * (rs_ws_send_options.no_compress); the empty send that ends a fragmented
 * cell keeps the default, as npm ws's `send('', { fin: true })`, so the
 * first fragment's choice must hold for the whole message.
 * pmd=S,C,SM,CM enables permessage-deflate with those options
 * (rs_ws_deflate_options' server_no_context_takeover,
 * client_no_context_takeover, server_max_window_bits,
 * client_max_window_bits: 0 not given, 1 true, -1 false, or a window);
 * rs_ws_attach refusing them exits 2.
 *
 * With echo, a connection sends nothing of its own: each message it
 * receives goes back with the same type (text as text, binary as binary),
 * and the peer ends the connection; "cell I close CODE" as above.
 *
 * stdin holds one cell per line, "KIND BINARY FIN HEX" (KIND 1 text, 2
 * bytes; BINARY -1 absent, 0, 1; FIN 0 or 1; HEX the payload, "-" for
 * none). Each cell is one connection, in order: once open, the cell's
 * send, then (FIN 0) an empty text send with FIN 1 that ends the message,
 * then a close 1000. For each connection it prints "cell I close CODE"
 * with the peer's close code (1006 when none came).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rs.h"
#include "ws_frame.h"

struct cell {
	int kind, binary, fin;
	unsigned char *data;
	size_t len;
};

static struct {
	rs_loop *loop;
	rs_listener *listener;
	struct cell *cells;
	size_t ncells;
	size_t next;        /* the next cell to open a connection for */
	int server;
	int port;
	int deflate;
	struct rs_ws_deflate_options pmd;
	int no_compress;
	int echo;
	struct rs_config cfg;
} C;

static void next_connection(void);

static void on_message(rs_ws *ws, const struct rs_ws_message *m, void *arg)
{
	int r = rs_ws_send(ws, m->data, m->len,
			   m->opcode == RS_WS_OP_TEXT ? RS_WS_KIND_TEXT
						  : RS_WS_KIND_BYTES, NULL);

	(void)arg;
	if (r < 0)
		fprintf(stderr, "ws_cell: echo: %d\n", r);
}

static void on_open(rs_ws *ws, void *arg)
{
	struct cell *c = arg;
	struct rs_ws_send_options o = { .binary = c->binary, .fin = c->fin,
					.no_compress = C.no_compress };
	int r = rs_ws_send(ws, c->data, c->len, c->kind, &o);

	if (r >= 0 && !c->fin) {
		struct rs_ws_send_options last = {
			.binary = RS_WS_BINARY_ABSENT, .fin = 1 };

		r = rs_ws_send(ws, "", 0, RS_WS_KIND_TEXT, &last);
	}
	if (r < 0)
		fprintf(stderr, "ws_cell: send: %d\n", r);
	rs_ws_close(ws, 1000, NULL, 0);
}

static void on_close(rs_ws *ws, int code, size_t dropped, void *arg)
{
	struct cell *c = arg;

	(void)ws;
	(void)dropped;
	printf("cell %zu close %d\n", (size_t)(c - C.cells), code);
	fflush(stdout);
	next_connection();
}

static const struct rs_ws_events events = { .on_open = on_open,
					    .on_close = on_close };
static const struct rs_ws_events echo_events = { .on_message = on_message,
						 .on_close = on_close };

static void attach(rs_socket *s, int server)
{
	struct rs_ws_options o = { .server = server, .seed = 7 + C.next,
				   .config = &C.cfg, .host = "127.0.0.1",
				   .deflate = C.pmd };
	rs_ws *ws;

	if (rs_ws_attach(s, &o, C.echo ? &echo_events : &events,
			 &C.cells[C.next - 1], &ws) < 0) {
		fprintf(stderr, "ws_cell: attach failed\n");
		exit(2);
	}
}

static void on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	(void)l;
	(void)arg;
	if (C.next >= C.ncells) {
		rs_socket_destroy(s, 0);
		return;
	}
	C.next++;
	attach(s, 1);
}

static void next_connection(void)
{
	rs_socket *s;

	if (C.server) {
		if (C.next >= C.ncells && C.listener) {
			rs_listener_close(C.listener);
			C.listener = NULL;
		}
		return;
	}
	if (C.next >= C.ncells)
		return;
	if (rs_connect_tcp(C.loop, "127.0.0.1", C.port, NULL, NULL, NULL, &s) < 0) {
		fprintf(stderr, "ws_cell: connect failed\n");
		exit(2);
	}
	C.next++;
	attach(s, 0);
}

static void read_cells(void)
{
	char line[1 << 16];

	while (fgets(line, sizeof(line), stdin)) {
		struct cell c = { 0 };
		char hex[sizeof(line)];

		if (sscanf(line, "%d %d %d %s", &c.kind, &c.binary, &c.fin, hex) != 4)
			continue;
		c.data = malloc(strlen(hex) / 2 + 1);
		if (!c.data)
			exit(2);
		for (size_t i = 0; hex[0] != '-' && hex[2 * i]; i++) {
			unsigned v;

			if (sscanf(hex + 2 * i, "%2x", &v) != 1)
				exit(2);
			c.data[c.len++] = (unsigned char)v;
		}
		C.cells = realloc(C.cells, (C.ncells + 1) * sizeof(c));
		if (!C.cells)
			exit(2);
		C.cells[C.ncells++] = c;
	}
}

int main(int argc, char **argv)
{
	int by_kind = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: ws_cell server|client [PORT] [by-kind] [deflate] [pmd=S,C,SM,CM] [no-compress] [echo]\n");
		return 2;
	}
	C.server = strcmp(argv[1], "server") == 0;
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "by-kind") == 0)
			by_kind = 1;
		else if (strcmp(argv[i], "deflate") == 0)
			C.deflate = 1;
		else if (strcmp(argv[i], "no-compress") == 0)
			C.no_compress = 1;
		else if (strncmp(argv[i], "pmd=", 4) == 0) {
			if (sscanf(argv[i] + 4, "%d,%d,%d,%d",
				   &C.pmd.server_no_context_takeover,
				   &C.pmd.client_no_context_takeover,
				   &C.pmd.server_max_window_bits,
				   &C.pmd.client_max_window_bits) != 4) {
				fprintf(stderr, "ws_cell: bad %s\n", argv[i]);
				return 2;
			}
			C.deflate = 1;
		}
		else if (strcmp(argv[i], "echo") == 0)
			C.echo = 1;
		else
			C.port = atoi(argv[i]);
	C.pmd.enabled = C.deflate;
	C.cfg = (struct rs_config)RS_CONFIG_DEFAULTS;
	C.cfg.ws = by_kind ? RS_WS_BY_KIND : RS_WS_BY_OPTION;
	read_cells();
	if (rs_loop_new(&C.loop) < 0)
		return 2;
	if (C.server) {
		if (rs_listen_tcp(C.loop, "127.0.0.1", 0, NULL, on_connection, NULL,
				  &C.listener) < 0)
			return 2;
		printf("port %d\n", rs_listener_port(C.listener));
		fflush(stdout);
	} else {
		next_connection();
	}
	if (rs_loop_run(C.loop) < 0)
		return 2;
	for (size_t i = 0; i < C.ncells; i++)
		free(C.cells[i].data);
	free(C.cells);
	return rs_loop_free(C.loop) < 0 ? 2 : 0;
}
