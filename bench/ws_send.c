/*
 * ws_send.c: user-space instructions of the WebSocket socket's hot paths,
 * for callgrind (deterministic, unlike time on 2 shared cores).
 *
 * usage: ws_send send|echo|recv [N]
 *   send  a server socket (reference/ws.c) sends N 16-byte text messages,
 *         64 per task, through measured_send() (after 4,096 warm-up sends
 *         through warm_send()), to a peer that reads all the time;
 *   echo  the peer sends 4,096 + N masked 16-byte text messages and the
 *         server echoes each one from its on_message, through echo();
 *   recv  the same messages, and the server's on_message only counts
 *         them: the receive path alone (read, frame decode, unmask, UTF-8
 *         check, dispatch to the handler).
 * The peer is `cat` (exec'd, so callgrind does not follow it) on the other
 * end of a unix socket; the Upgrade request is written before it starts.
 * bench/ws_instructions.sh runs it under callgrind with --toggle-collect
 * and divides the count by N. Exits 0, or 1 when a send fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"
#include "rs.h"
#include "ws_frame.h"

#define WARM 4096
#define PER_TASK 64

static const char upgrade[] =
	"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
	"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	"Sec-WebSocket-Version: 13\r\n\r\n";
static const char payload[16] = "0123456789abcdef";

static struct {
	rs_loop *loop;
	rs_listener *listener;
	rs_ws *ws;
	int echo;  /* echo or recv: the peer sends the messages */
	int recv;  /* recv: the handler does not answer */
	long n;
	long sent;
	long received;
	int failed;
	char path[108];
	char frames[64];
} B;

/*
 * Two copies of one send, so that callgrind can count only the second.
 * Each adds to a counter of its own after the call: that keeps the call a
 * call (a tail jump would leave the function before callgrind counts its
 * callee) and keeps the compiler from folding the two into one.
 */
static long warm_calls, measured_calls;

__attribute__((noinline)) static int warm_send(rs_ws *ws)
{
	int r = rs_ws_send(ws, payload, sizeof(payload), RS_WS_KIND_TEXT, NULL);

	warm_calls++;
	return r;
}

__attribute__((noinline)) static int measured_send(rs_ws *ws)
{
	int r = rs_ws_send(ws, payload, sizeof(payload), RS_WS_KIND_TEXT, NULL);

	measured_calls++;
	return r;
}

static void send_task(rs_loop *loop, void *arg)
{
	(void)arg;
	for (int i = 0; i < PER_TASK && B.sent < WARM + B.n; i++, B.sent++)
		if ((B.sent < WARM ? warm_send(B.ws) : measured_send(B.ws)) < 0)
			B.failed = 1;
	if (B.sent < WARM + B.n && !B.failed) {
		if (rs_loop_post(loop, send_task, NULL) < 0)
			bc_die("rs_loop_post failed");
		return;
	}
	rs_socket_destroy(rs_ws_socket(B.ws), 0);
}

__attribute__((noinline)) static void echo(rs_ws *ws,
					   const struct rs_ws_message *m)
{
	struct rs_ws_send_options o = { .binary = RS_WS_BINARY_ABSENT,
					.fin = 1 };

	if (rs_ws_send(ws, m->data, m->len, m->opcode == RS_WS_OP_TEXT
					     ? RS_WS_KIND_TEXT : RS_WS_KIND_BYTES,
		       &o) < 0)
		B.failed = 1;
}

static void on_message(rs_ws *ws, const struct rs_ws_message *m, void *arg)
{
	(void)arg;
	echo(ws, m);
	if (++B.received == WARM + B.n)
		rs_socket_destroy(rs_ws_socket(ws), 0);
}

/* recv's handler: counts the message, answers nothing. */
static void on_message_recv(rs_ws *ws, const struct rs_ws_message *m,
			    void *arg)
{
	(void)m;
	(void)arg;
	if (++B.received == WARM + B.n)
		rs_socket_destroy(rs_ws_socket(ws), 0);
}

static void on_open(rs_ws *ws, void *arg)
{
	(void)arg;
	B.ws = ws;
	if (!B.echo && rs_loop_post(B.loop, send_task, NULL) < 0)
		bc_die("rs_loop_post failed");
}

static const struct rs_ws_events events = { .on_open = on_open,
					    .on_message = on_message };
static const struct rs_ws_events recv_events = {
	.on_open = on_open, .on_message = on_message_recv };

static void on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	struct rs_ws_options o = { .server = 1 };
	rs_ws *ws;

	(void)arg;
	rs_listener_close(l);
	if (rs_ws_attach(s, &o, B.recv ? &recv_events : &events, NULL, &ws) < 0)
		bc_die("rs_ws_attach failed");
}

/* The frames the echo's peer sends: the request, then every message. */
static void write_peer_input(const char *file)
{
	FILE *f = fopen(file, "w");
	uint8_t frame[32];
	static const uint8_t key[4] = { 1, 2, 3, 4 };
	size_t h = rs_ws_header(frame, 1, 0, RS_WS_OP_TEXT, 16, key);

	if (!f)
		bc_die("cannot write %s", file);
	rs_ws_mask(frame + h, (const uint8_t *)payload, 16, key, 0);
	fputs(upgrade, f);
	for (long i = 0; i < WARM + B.n; i++)
		fwrite(frame, 1, h + 16, f);
	if (fclose(f) != 0)
		bc_die("cannot write %s", file);
}

/* The peer: cat on the client end (echo: cat of the frames first). */
static pid_t start_peer(int fd, const char *file)
{
	pid_t pid = bc_fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || null < 0)
			_exit(127);
		if (file)
			execl("/bin/sh", "sh", "-c",
			      "cat \"$0\" & exec cat >/dev/null", file, (char *)NULL);
		else
			execl("/bin/sh", "sh", "-c", "exec cat >/dev/null",
			      (char *)NULL);
		_exit(127);
	}
	return pid;
}

int main(int argc, char **argv)
{
	const char *dir;
	char file[160];
	pid_t peer;
	int fd;

	bc_set_prog("ws_send");
	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "echo") &&
			 strcmp(argv[1], "recv"))) {
		fprintf(stderr, "usage: ws_send send|echo|recv [N]\n");
		return 2;
	}
	B.recv = strcmp(argv[1], "recv") == 0;
	B.echo = B.recv || strcmp(argv[1], "echo") == 0;
	B.n = argc > 2 ? atol(argv[2]) : 20000;
	dir = bc_socket_dir("/tmp/ws_send.XXXXXX");
	snprintf(B.path, sizeof(B.path), "%s", dir);
	snprintf(file, sizeof(file), "/tmp/ws_send_frames.XXXXXX");
	if (B.echo) {
		int tmp = mkstemp(file);

		if (tmp < 0)
			bc_die("mkstemp: %s", strerror(errno));
		close(tmp);
	}
	B.loop = bc_loop_new();
	if (rs_listen_unix(B.loop, B.path, NULL, on_connection, NULL, &B.listener) < 0)
		bc_die("rs_listen_unix failed");
	fd = bc_connect(B.path, 0);
	if (B.echo) {
		write_peer_input(file);
	} else if (bc_write_full(fd, upgrade, sizeof(upgrade) - 1) < 0) {
		bc_die("cannot write the request");
	}
	peer = start_peer(fd, B.echo ? file : NULL);
	close(fd);
	bc_loop_run_free(B.loop);
	bc_wait_child(peer, "the peer");
	if (B.echo)
		unlink(file);
	printf("ws_send %s: %ld messages%s\n", argv[1], B.echo ? B.received : measured_calls,
	       B.failed ? ", a send failed" : "");
	return B.failed;
}
