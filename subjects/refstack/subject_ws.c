/*
 * subject_ws.c: refstack-subject's WebSocket connections (the script's
 * `websocket SEED MAX` line, docs/subject-protocol.md): each connection
 * becomes an rs_ws over its stream socket once it is up, its messages,
 * pings, closes and errors are reported as ws-* events, and the ws-* ops
 * call the WebSocket socket.
 */
#include "subject.h"
#include "subject_pipe.h"
#include "ws_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The script's "websocket SEED MAX" line. */
static struct {
	int on;
	unsigned long long seed;
	size_t max_message;
	int open;          /* handshakes settled: done, or closed first */
	int started;       /* every connection is up: tasks may start */
	struct rs_ws_deflate_options deflate;  /* the ws-deflate line */
} W;

/* A payload in an event: hex up to 32 bytes, else its length and FNV-1a. */
static void ws_data_text(const uint8_t *p, size_t n, char *out, size_t cap)
{
	if (n <= 32) {
		size_t o = 0;

		out[0] = '\0';
		for (size_t i = 0; i < n && o + 3 < cap; i++)
			o += (size_t)snprintf(out + o, cap - o, "%02x", p[i]);
		if (n == 0)
			snprintf(out, cap, "-");
	} else {
		uint32_t h = 2166136261u;

		for (size_t i = 0; i < n; i++)
			h = (h ^ p[i]) * 16777619u;
		snprintf(out, cap, "fnv=%08x", h);
	}
}

/* A connection's handshake is settled: done, or the connection closed
 * before it was (a failed write or an early end of stream: its ws-closed
 * 1006). The tasks start when every one is, not only when every handshake
 * is done: a connection that can never open would hold them for ever, and
 * the others with them. */
static void ws_settled(void)
{
	if (++W.open == subj_nconns() && W.started)
		sr_run_next_task();
}

static void ws_ev_open(rs_ws *ws, void *arg)
{
	struct conn *c = arg;

	(void)ws;
	subj_event(c->index, "ws-open");
	c->ws_opened = 1;
	ws_settled();
}

static void ws_ev_message(rs_ws *ws, const struct rs_ws_message *m, void *arg)
{
	struct conn *c = arg;
	char d[80];
	static const char *types[] = { "?", "text", "binary" };
	const char *what = m->opcode == 9 ? "ping-received"
			   : m->opcode == 10 ? "pong-received" : "message";

	(void)ws;
	ws_data_text(m->data, m->len, d, sizeof(d));
	if (m->opcode <= 2)
		subj_event(c->index, "ws-message off=%llu %s len=%zu frames=%u %s",
		      (unsigned long long)m->offset, types[m->opcode], m->len,
		      m->frames, d);
	else
		subj_event(c->index, "ws-%s off=%llu len=%zu %s", what,
		      (unsigned long long)m->offset, m->len, d);
}

static void ws_ev_peer_close(rs_ws *ws, int code, const uint8_t *reason,
			     size_t len, void *arg)
{
	struct conn *c = arg;
	char d[80];

	(void)ws;
	ws_data_text(reason, len, d, sizeof(d));
	subj_event(c->index, "ws-peer-close %d reason=%s", code, d);
}

static void ws_ev_error(rs_ws *ws, int code, const char *problem, void *arg)
{
	struct conn *c = arg;

	(void)ws;
	subj_event(c->index, "ws-error %d (%s)", code, problem);
}

static void ws_ev_send_error(rs_ws *ws, int number, int err, void *arg)
{
	struct conn *c = arg;

	(void)ws;
	subj_event(c->index, "ws-send#%d %s at the head of the queue", number,
	      sr_errname(err));
}

static void ws_ev_close(rs_ws *ws, int code, size_t dropped, void *arg)
{
	struct conn *c = arg;

	c->written = rs_socket_bytes_written(rs_ws_socket(ws));
	/* " unclean" where the code alone does not say it: the peer's close
	 * came (its code) but our answer did not go out (1006 never is). */
	subj_event(c->index, "ws-closed code=%d%s dropped=%zu bytes_written=%llu",
		   code,
		   code != RS_WS_CLOSE_ABNORMAL && !rs_ws_was_clean(ws) ? " unclean" : "",
		   dropped, (unsigned long long)c->written);
	c->ws = NULL;
	c->sock = NULL;
	if (!c->ws_opened)
		ws_settled();
}

static const struct rs_ws_events ws_events = {
	.on_open = ws_ev_open,
	.on_message = ws_ev_message,
	.on_ping = ws_ev_message,
	.on_pong = ws_ev_message,
	.on_peer_close = ws_ev_peer_close,
	.on_error = ws_ev_error,
	.on_send_error = ws_ev_send_error,
	.on_close = ws_ev_close,
};

/* Makes a connection a WebSocket one; each connection has its own seed. */
void subj_ws_start(struct conn *c, rs_socket *s, int server)
{
	struct rs_ws_options o = {
		.server = server,
		.seed = W.seed + (unsigned long long)c->index,
		.max_message = W.max_message,
		.host = "127.0.0.1",
		.path = "/",
		.deflate = W.deflate,
	};
	int rc = rs_ws_attach(s, &o, &ws_events, c, &c->ws);

	if (rc < 0)
		sp_fatal("rs_ws_attach: %s", strerror(-rc));
}

static const char *ws_kind_text(int kind)
{
	return kind == RS_WS_KIND_TEXT ? "text" : kind == RS_WS_KIND_BYTES ? "bytes"
									    : "kind=bad";
}

void subj_ws_op(const struct sr_op *op, struct conn *c)
{
	const char *name = sr_op_names[op->kind];
	unsigned char *bytes;
	int rc = 0;

	if (!c->ws) {
		subj_event(c->index, "%s (closed)", name);
		return;
	}
	if (op->kind == SR_OP_WS_BUFFERED) {
		subj_event(c->index, "ws-buffered %zu waiting=%zu",
		      rs_ws_buffered_amount(c->ws), rs_ws_waiting(c->ws));
		return;
	}
	bytes = subj_op_bytes(op, c);
	c->seq += op->len;
	if (op->kind == SR_OP_WS_SEND) {
		struct rs_ws_send_options so = { .binary = op->ws_binary,
						 .fin = op->ws_fin,
						 .no_compress = op->ws_no_compress };
		int number = ++c->ws_sends;
		char opts[64] = "";

		if (op->ws_binary != RS_WS_BINARY_ABSENT)
			snprintf(opts, sizeof(opts), " binary=%s",
				 op->ws_binary == 1 ? "true" : op->ws_binary == 0 ? "false" : "bad");
		if (op->ws_fin != 1)
			snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
				 " fin=%s", op->ws_fin == 0 ? "0" : "bad");
		if (op->ws_no_compress != 0)
			snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
				 " compress=%s", op->ws_no_compress == 1 ? "false" : "bad");
		rc = rs_ws_send(c->ws, bytes, op->len, op->ws_kind, &so);
		subj_event(c->index, "ws-send#%d %zu %s%s -> %s", number, op->len,
		      ws_kind_text(op->ws_kind), opts,
		      rc < 0 ? sr_errname(rc) : rc ? "sent" : "queued");
	} else if (op->kind == SR_OP_WS_CLOSE) {
		rc = rs_ws_close(c->ws, op->sig, bytes, op->len);
		subj_event(c->index, "ws-close %d -> %s", op->sig,
		      rc < 0 ? sr_errname(rc) : "ok");
	} else {
		rc = rs_ws_ping(c->ws, bytes, op->len);
		subj_event(c->index, "ws-ping %zu -> %s", op->len,
		      rc < 0 ? sr_errname(rc) : "ok");
	}
	if (bytes != op->data)
		free(bytes);
}

void subj_ws_configure(unsigned long long seed, size_t max_message)
{
	W.seed = seed;
	W.max_message = max_message;
	W.on = 1;
}

void subj_ws_deflate(const long v[6])
{
	W.deflate.enabled = v[0] != 0;
	/* npm ws's values as rs_ws_deflate_options holds them (-1 false,
	 * 1 true); rs_ws_attach refuses others. */
	W.deflate.server_no_context_takeover = (int)v[1];
	W.deflate.client_no_context_takeover = (int)v[2];
	W.deflate.server_max_window_bits = (int)v[3];
	W.deflate.client_max_window_bits = (int)v[4];
	W.deflate.threshold = (size_t)v[5];
}

int subj_ws_enabled(void)
{
	return W.on;
}

int subj_ws_may_start(void)
{
	W.started = 1;
	return W.open >= subj_nconns();
}
