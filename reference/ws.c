/*
 * ws.c: the WebSocket socket (rs.h, "WebSocket sockets") on a stream
 * socket: the handshake, the typed send queue, and the receive side.
 *
 * The framing itself is ws_frame.c and ws_handshake.c, which do no I/O;
 * this file only writes through rs_socket_write, so io.c stays the only
 * file that reaches the fault gate.
 *
 * The queue (the oven-sh/bun pull request "ws: take the frame type of
 * send() from options.binary", and the queue of oven-sh/bun#44520, which it
 * is stacked on): a send that finds messages waiting, or the stream socket
 * holding bytes the kernel refused, waits at the end of the queue with its
 * frame type; one empty write with a callback marks the point where the
 * stream socket has sent what it holds, and the queue drains from there.
 * Arguments are checked at the call on the fixed strategy, so a bad call
 * never reaches the queue and never stalls it.
 */
#include "rs.h"
#include "rs_internal.h"
#include "ws_deflate.h"
#include "ws_frame.h"
#include "ws_handshake.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* npm ws's default maxPayload: 100 MiB. */
#define WS_DEFAULT_MAX_MESSAGE (100u * 1024 * 1024)
/* Frames up to this size are built on the stack. */
#define WS_STACK_FRAME 512
/* An Upgrade head larger than this is refused (ws_handshake.c's limit). */
#define WS_HEAD_MAX 8192

enum ws_state { WS_CONNECTING, WS_OPEN, WS_CLOSED };

/* permessage-deflate (ws_deflate.c): set up at attach when the options
 * enable it, in use once the handshake agreed on it (rs_ws.deflate). */
struct ws_pmd {
	struct rs_ws_deflate_options opt;
	struct rs_ws_deflate_params params;
	struct rs_ws_deflater out;
	struct rs_ws_inflater in;
	int compress;      /* the message being sent is compressed */
};

/* A message that waits, with everything its send() said. */
struct ws_msg {
	struct ws_msg *next;
	int number;       /* the send's number, counted from 1 */
	int kind;
	int binary;
	int fin;
	int no_compress;  /* npm ws's compress: false */
	int close;        /* a close frame (rs_ws_close behind messages) */
	int code;
	size_t len;
	uint8_t data[];
};

struct rs_ws {
	rs_socket *sock;
	struct rs_ws_events ev;
	void *arg;
	/* The flags rs_ws_send's small path tests, bits of one word: one
	 * load and one compare for all of them. */
	unsigned server : 1;
	unsigned by_kind : 1;        /* the legacy strategy */
	unsigned close_sent : 1;
	unsigned close_received : 1;
	unsigned waiting : 1;        /* an empty write with a callback is out */
	unsigned deflate : 1;        /* permessage-deflate agreed in the handshake */
	unsigned held : 1;           /* a group (ws_group.c) holds the stream
				      * socket corked: its bytes are held, not
				      * refused; the group watches after */
	enum ws_state state;
	int peer_code;
	int ending;        /* rs_socket_end was called */
	int close_queued;  /* our close frame waits in the queue */
	int close_written; /* our close frame went to the stream socket */
	int finished;      /* the stream's end went out: every byte before it
			    * (our close frame among them) is with the kernel */
	/* The handshake. */
	char *head;
	size_t head_len;
	char key[25];
	/* Framing. */
	struct rs_ws_parser parser;
	struct rs_ws_fragments frag;
	struct rs_ws_rng rng;
	/* The typed send queue. */
	struct ws_msg *qhead;
	struct ws_msg **qtail;
	size_t qcount;
	size_t qbytes;     /* payload bytes of the waiting messages */
	int sends;         /* rs_ws_send calls so far */
	/* permessage-deflate: NULL when the options leave it off. */
	struct ws_pmd *pmd;
};

/* ------------------------------------------------------------------------ */
/* Writing frames.                                                          */

static void ws_flushed(rs_socket *s, int status, void *arg);

/*
 * After a write: when the stream socket kept bytes (the kernel refused
 * them), one empty write with a callback marks where they end; the queue
 * drains when it runs.
 */
static void ws_watch(rs_ws *ws)
{
	if (ws->waiting || ws->held || rs_socket_writable_length(ws->sock) == 0)
		return;
	if (rs_socket_write(ws->sock, "", 0, ws_flushed, ws) >= 0)
		ws->waiting = 1;
}

/* Encodes one frame and hands it to the stream socket. */
static int ws_write_frame(rs_ws *ws, int kind, int binary, int fin,
			  const void *data, size_t len)
{
	uint8_t stack[WS_STACK_FRAME], *buf = stack, key[4];
	size_t need = rs_ws_send_size(ws->by_kind, kind, len, !ws->server);
	long n;
	int r;

	if (need > sizeof(stack) && !(buf = malloc(need)))
		return -ENOMEM;
	if (!ws->server)
		rs_ws_rng_bytes(&ws->rng, key, 4);
	n = rs_ws_encode_send(&ws->frag, ws->by_kind, kind, binary, fin, 0,
			      ws->server ? NULL : key, data, len, buf, need);
	if (n < 0) {
		if (buf != stack)
			free(buf);
		return (int)n;
	}
	r = rs_socket_write(ws->sock, buf, (size_t)n, NULL, NULL);
	if (buf != stack)
		free(buf);
	if (r < 0)
		return r;
	ws_watch(ws);
	return 1;
}

/*
 * A frame with permessage-deflate agreed: npm ws's decision on a message's
 * first frame (ws_deflate.h, rs_ws_deflate_wanted, with the send's
 * no_compress), which its later frames follow whatever their own option
 * says (npm ws's sender keeps the first fragment's decision); a compressed
 * frame carries the payload deflated (the legacy's text after its U+FFFD
 * decode), RSV1 on the first frame only.
 */
static int ws_write_deflated(rs_ws *ws, int kind, int binary, int fin,
			     int no_compress, const void *data, size_t len)
{
	struct ws_pmd *d = ws->pmd;
	int type = rs_ws_message_type(ws->by_kind, kind, binary);
	uint8_t *text = NULL, *buf, key[4];
	const uint8_t *z;
	const void *payload = data;
	size_t plen = len;
	long n, zn;
	int r;

	if (type < 0 || (fin != 0 && fin != 1) ||
	    (no_compress != 0 && no_compress != 1) || (!data && len > 0))
		return -EINVAL;
	if (!ws->frag.open)
		d->compress = rs_ws_deflate_wanted(&d->params, ws->server,
						   d->opt.threshold,
						   no_compress, len);
	if (!d->compress)
		return ws_write_frame(ws, kind, binary, fin, data, len);
	if (ws->by_kind && kind == RS_WS_KIND_TEXT && !rs_utf8_valid(data, len)) {
		if (!(text = malloc(3 * len)))
			return -ENOMEM;
		plen = rs_utf8_replace(data, len, text);
		payload = text;
	}
	zn = rs_ws_deflate(&d->out, payload, plen, fin, &z);
	free(text);
	if (zn < 0)
		return (int)zn;
	if (!(buf = malloc(RS_WS_MAX_HEADER + (size_t)zn)))
		return -ENOMEM;
	if (!ws->server)
		rs_ws_rng_bytes(&ws->rng, key, 4);
	/* The type is decided: the frame is bytes of that opcode. */
	n = rs_ws_encode_send(&ws->frag, 0,
			      type == RS_WS_OP_TEXT ? RS_WS_KIND_TEXT
						    : RS_WS_KIND_BYTES,
			      RS_WS_BINARY_ABSENT, fin, 1,
			      ws->server ? NULL : key, z, (size_t)zn, buf,
			      RS_WS_MAX_HEADER + (size_t)zn);
	r = n < 0 ? (int)n : rs_socket_write(ws->sock, buf, (size_t)n, NULL, NULL);
	free(buf);
	if (r < 0)
		return r;
	ws_watch(ws);
	return 1;
}

/* A data frame, compressed or not. */
static int ws_write_message(rs_ws *ws, int kind, int binary, int fin,
			    int no_compress, const void *data, size_t len)
{
	if (ws->deflate)
		return ws_write_deflated(ws, kind, binary, fin, no_compress,
					 data, len);
	return ws_write_frame(ws, kind, binary, fin, data, len);
}

/* A control frame (close, ping, pong): ahead of the waiting messages. */
static int ws_write_control(rs_ws *ws, int opcode, const void *data,
			    size_t len)
{
	uint8_t buf[RS_WS_MAX_HEADER + RS_WS_MAX_CONTROL], key[4];
	size_t h;
	int r;

	if (!ws->server)
		rs_ws_rng_bytes(&ws->rng, key, 4);
	h = rs_ws_header(buf, 1, 0, opcode, len, ws->server ? NULL : key);
	/* len 0 may come with data NULL: no memcpy then (its arguments may
	 * not be NULL, even for 0 bytes). */
	if (len == 0)
		;
	else if (ws->server)
		memcpy(buf + h, data, len);
	else
		rs_ws_mask(buf + h, data, len, key, 0);
	r = rs_socket_write(ws->sock, buf, h + len, NULL, NULL);
	if (r >= 0)
		ws_watch(ws);
	return r < 0 ? r : 1;
}

static int ws_write_close(rs_ws *ws, int code, const void *reason,
			  size_t len)
{
	uint8_t p[RS_WS_MAX_CONTROL];
	int r;

	ws->close_sent = 1;
	if (code == 0) {
		r = ws_write_control(ws, RS_WS_OP_CLOSE, NULL, 0);
	} else {
		p[0] = (uint8_t)(code >> 8);
		p[1] = (uint8_t)code;
		if (len)
			memcpy(p + 2, reason, len);
		r = ws_write_control(ws, RS_WS_OP_CLOSE, p, len + 2);
	}
	if (r >= 0)
		ws->close_written = 1;
	return r;
}

/* Ends the stream once (the close handshake is over, or failed). */
static void ws_end(rs_ws *ws)
{
	if (ws->ending)
		return;
	ws->ending = 1;
	rs_socket_end(ws->sock, NULL, 0, NULL, NULL);
}

/* ------------------------------------------------------------------------ */
/* The queue.                                                               */

static int ws_enqueue(rs_ws *ws, int number, const void *data, size_t len,
		      int kind, int binary, int fin, int no_compress,
		      int close, int code)
{
	struct ws_msg *m = malloc(sizeof(*m) + len);

	if (!m)
		return -ENOMEM;
	m->next = NULL;
	m->number = number;
	m->kind = kind;
	m->binary = binary;
	m->fin = fin;
	m->no_compress = no_compress;
	m->close = close;
	m->code = code;
	m->len = len;
	if (len)
		memcpy(m->data, data, len);
	*ws->qtail = m;
	ws->qtail = &m->next;
	ws->qcount++;
	ws->qbytes += len;
	return 0;
}

static void ws_dequeue(rs_ws *ws)
{
	struct ws_msg *m = ws->qhead;

	ws->qhead = m->next;
	if (!ws->qhead)
		ws->qtail = &ws->qhead;
	ws->qcount--;
	ws->qbytes -= m->len;
	free(m);
}

/*
 * Sends what waits, in order, until the stream socket holds bytes again
 * (then the next ws_flushed goes on). A message the legacy queued without
 * a check that fails now stays at the head: the queue stalls, as the
 * seed's base did.
 */
static void ws_drain(rs_ws *ws)
{
	while (ws->qhead && !ws->waiting && ws->state == WS_OPEN) {
		struct ws_msg *m = ws->qhead;
		int r;

		if (m->close) {
			r = ws_write_close(ws, m->code, m->data, m->len);
			ws_dequeue(ws);
			ws->close_queued = 0;
			if (r >= 0 && ws->close_received)
				ws_end(ws);
			continue;
		}
		r = ws_write_message(ws, m->kind, m->binary, m->fin,
				     m->no_compress, m->data, m->len);
		if (r == -EINVAL) {
			if (ws->ev.on_send_error)
				ws->ev.on_send_error(ws, m->number, r, ws->arg);
			return;
		}
		ws_dequeue(ws);
		if (r < 0)
			return;
	}
}

static void ws_flushed(rs_socket *s, int status, void *arg)
{
	rs_ws *ws = arg;

	(void)s;
	ws->waiting = 0;
	if (status == 0)
		ws_drain(ws);
}

/* ------------------------------------------------------------------------ */
/* The public calls.                                                        */

/*
 * The common case without the general encoder: a server's message of at
 * most 125 bytes, fixed strategy, nothing waiting. The same bytes as
 * rs_ws_encode_send (test_ws_wire.py and the scenarios hold both against
 * npm ws): type is the frame type by npm ws's rule, already checked.
 */
/* A small frame: a 2-byte header and the payload in one write, built in
 * the stream socket's batch when the batch takes it
 * (rs__socket_write_pair); nothing is queued then, so nothing for
 * ws_watch to see. */
static int ws_send_small(rs_ws *ws, const void *data, size_t len, int type,
			 int fin)
{
	uint32_t head = (uint32_t)((fin ? 0x80 : 0) |
				   (ws->frag.open ? RS_WS_OP_CONT : type)) |
			(uint32_t)len << 8;
	int r;

	ws->frag.open = !fin;
	r = rs__socket_write_pair(ws->sock, head, 2, data, len);
	if (r == RS__WRITE_BATCHED)
		return 1;
	if (r < 0)
		return r;
	ws_watch(ws);
	return 1;
}

static int ws_send_any(rs_ws *ws, const void *data, size_t len, int kind,
		       int binary, int fin, int no_compress);

/* A group's frame (ws_group.c), encoded once for every member: a whole
 * unfragmented message, unmasked, the fixed strategy's bytes. It goes to
 * the stream socket as it is when this ws would write its own frame at
 * once, the same bytes (a server on the fixed strategy without
 * permessage-deflate, open, nothing waiting, no fragment open); any
 * other state sends it as rs_ws_send(data, len, kind) does. The group
 * holds the stream socket corked (rs__ws_hold: ws_watch leaves held
 * bytes alone, which the kernel did not refuse) and watches it after the
 * uncork, so a plain write does not watch. */
int rs__ws_send_frame(rs_ws *ws, const void *frame, size_t n,
		      const void *data, size_t len, int kind)
{
	int r;

	if (!ws->server || ws->by_kind || ws->deflate || ws->close_sent ||
	    ws->close_received || ws->waiting || ws->state != WS_OPEN ||
	    ws->qhead || ws->frag.open)
		return rs_ws_send(ws, data, len, kind, NULL);
	ws->sends++;
	r = rs_socket_write(ws->sock, frame, n, NULL, NULL);
	return r < 0 ? r : 1;
}

void rs__ws_hold(rs_ws *ws, int on)
{
	ws->held = on != 0;
	if (!on && ws->state != WS_CLOSED)
		ws_watch(ws);
}

/* Whether a send can take the small path, but for its options: a server
 * on the fixed strategy without permessage-deflate, open, nothing waiting,
 * at most 125 bytes, kind 1 or 2 (the opcodes of text and binary), data
 * given. */
static inline int ws_small_ok(const rs_ws *ws, const void *data, size_t len,
			      int kind)
{
	return ws->server && !ws->by_kind && !ws->deflate && !ws->close_sent &&
	       !ws->close_received && !ws->waiting && ws->state == WS_OPEN &&
	       !ws->qhead && len <= RS_WS_MAX_CONTROL &&
	       (unsigned)(kind - 1) <= 1 && (data || len == 0);
}

int rs_ws_send(rs_ws *ws, const void *data, size_t len, int kind,
	       const struct rs_ws_send_options *o)
{
	int binary, fin;

	/* Without options: binary absent (the type is the kind), fin. */
	if (!o) {
		if (ws_small_ok(ws, data, len, kind)) {
			ws->sends++;
			return ws_send_small(ws, data, len, kind, 1);
		}
		return ws_send_any(ws, data, len, kind, RS_WS_BINARY_ABSENT, 1,
				   0);
	}
	binary = o->binary;
	fin = o->fin;
	/* The small path takes valid calls alone (binary -1, 0 or 1, fin 0
	 * or 1, as rs_ws_message_type checks, no_compress 0 or 1: without
	 * permessage-deflate it changes nothing); ws_send_any refuses the
	 * others, with the same -EINVAL. */
	if (ws_small_ok(ws, data, len, kind) && (unsigned)(binary + 1) <= 2 &&
	    (unsigned)fin <= 1 && (unsigned)o->no_compress <= 1) {
		ws->sends++;
		return ws_send_small(ws, data, len,
				     binary < 0 ? kind : binary ? RS_WS_OP_BINARY
								: RS_WS_OP_TEXT,
				     fin);
	}
	return ws_send_any(ws, data, len, kind, binary, fin, o->no_compress);
}

/* Every other send, out of line: the small one above then saves no
 * registers for it. */
static RS__OUT_OF_LINE int ws_send_any(rs_ws *ws, const void *data,
				       size_t len, int kind, int binary,
				       int fin, int no_compress)
{
	int number, queued;

	number = ++ws->sends;
	queued = ws->qhead || ws->waiting || ws->state == WS_CONNECTING;

	if (ws->close_sent || ws->close_received || ws->state == WS_CLOSED)
		return -EPIPE;
	/* The check at the call: the fixed strategy always; the legacy only
	 * when the message goes out now, as the base's send() behind its
	 * queue did not look at the value. */
	if (!ws->by_kind || !queued) {
		if (rs_ws_message_type(ws->by_kind, kind, binary) < 0 ||
		    (fin != 0 && fin != 1) ||
		    (no_compress != 0 && no_compress != 1) ||
		    (!data && len > 0))
			return -EINVAL;
	}
	if (queued) {
		int r = ws_enqueue(ws, number, data, len, kind, binary, fin,
				   no_compress, 0, 0);

		return r < 0 ? r : 0;
	}
	return ws_write_message(ws, kind, binary, fin, no_compress, data, len);
}

int rs_ws_ping(rs_ws *ws, const void *data, size_t len)
{
	if (len > RS_WS_MAX_CONTROL || (!data && len > 0))
		return -EINVAL;
	if (ws->close_sent || ws->state != WS_OPEN)
		return -EPIPE;
	return ws_write_control(ws, RS_WS_OP_PING, data, len);
}

/*
 * Our close frame, behind the messages that wait (npm ws writes it to the
 * socket behind every frame it wrote before). The stream ends once both
 * close frames are through: here when the peer's came first, else when it
 * comes (ws_peer_close).
 */
static int ws_close_behind(rs_ws *ws, int code, const void *reason,
			   size_t len)
{
	if (ws->qhead || ws->waiting || ws->state == WS_CONNECTING) {
		int r = ws_enqueue(ws, 0, reason, len, 0, 0, 1, 0, 1, code);

		if (r == 0) {
			ws->close_sent = 1;  /* later sends fail from now */
			ws->close_queued = 1;
		}
		return r;
	}
	if (ws_write_close(ws, code, reason, len) >= 0 && ws->close_received)
		ws_end(ws);
	return 0;
}

int rs_ws_close(rs_ws *ws, int code, const void *reason, size_t len)
{
	if ((code != 0 && !rs_ws_close_code_valid(code)) ||
	    len > RS_WS_MAX_CONTROL - 2 || (code == 0 && len > 0) ||
	    (len > 0 && (!reason || !rs_utf8_valid(reason, len))))
		return -EINVAL;
	if (ws->close_sent || ws->state == WS_CLOSED)
		return -EPIPE;
	return ws_close_behind(ws, code, reason, len);
}

size_t rs_ws_buffered_amount(const rs_ws *ws)
{
	size_t held = ws->sock ? rs_socket_writable_length(ws->sock) : 0;

	return held + ws->qbytes;
}

int rs_ws_was_clean(const rs_ws *ws)
{
	return ws->close_received && ws->close_written && ws->finished;
}

size_t rs_ws_waiting(const rs_ws *ws)
{
	return ws->qcount;
}

rs_socket *rs_ws_socket(const rs_ws *ws)
{
	return ws->sock;
}

/* ------------------------------------------------------------------------ */
/* Receiving.                                                               */

/* The peer broke the protocol: close with code, drop what waits, end. */
static void ws_fail(rs_ws *ws, int code, const char *problem)
{
	if (ws->ev.on_error)
		ws->ev.on_error(ws, code, problem, ws->arg);
	if (!ws->close_sent && ws->state == WS_OPEN)
		ws_write_close(ws, code, NULL, 0);
	ws_end(ws);
}

static void ws_peer_close(rs_ws *ws, const struct rs_ws_event *e)
{
	ws->close_received = 1;
	ws->peer_code = e->code;
	if (ws->ev.on_peer_close)
		ws->ev.on_peer_close(ws, e->code, e->data, e->len, ws->arg);
	/* RFC 6455 5.5.1: answer with a close frame, echoing the code as npm
	 * ws does, behind the messages that wait (5.5.1 lets an endpoint
	 * finish what it is sending first). The stream ends behind it. */
	if (!ws->close_sent)
		ws_close_behind(ws, e->code == RS_WS_CLOSE_NO_STATUS ? 0 : e->code,
				NULL, 0);
	else if (!ws->close_queued)
		ws_end(ws);
}

/*
 * A compressed message (RSV1 on its first frame): inflated whole, as npm
 * ws inflates it, with the same maximum as the frames (1009 past it),
 * 1007 for data that does not inflate (npm ws's inflateOnError), and the
 * text checked as UTF-8 once inflated. Returns 0, or -1 after a failure.
 */
static int ws_inflate_message(rs_ws *ws, struct rs_ws_message *m)
{
	int r = rs_ws_inflate(&ws->pmd->in, m->data, m->len);

	if (r == 0)
		r = rs_ws_inflate_end(&ws->pmd->in, &m->data, &m->len);
	if (r == 0 && m->opcode == RS_WS_OP_TEXT && !rs_utf8_valid(m->data, m->len))
		r = -EILSEQ;
	if (r == 0)
		return 0;
	ws_fail(ws, r == -EMSGSIZE ? RS_WS_CLOSE_TOO_BIG
		: r == -EBADMSG || r == -EILSEQ ? RS_WS_CLOSE_INVALID_DATA
						: RS_WS_CLOSE_INTERNAL,
		r == -EMSGSIZE	? "a message over the maximum size once inflated"
		: r == -EBADMSG ? "compressed data that does not inflate"
		: r == -EILSEQ	? "text that is not UTF-8"
				: "out of memory");
	return -1;
}

static void ws_frames(rs_ws *ws, const uint8_t *data, size_t len)
{
	while (len > 0) {
		struct rs_ws_event e;
		struct rs_ws_message m;
		size_t k = rs_ws_parser_feed(&ws->parser, data, len, &e);

		data += k;
		len -= k;
		m.opcode = e.kind == RS_WS_EV_MESSAGE ? e.opcode
			   : e.kind == RS_WS_EV_PING  ? RS_WS_OP_PING
						      : RS_WS_OP_PONG;
		m.data = e.data;
		m.len = e.len;
		m.frames = e.frames;
		m.offset = e.offset;
		switch (e.kind) {
		case RS_WS_EV_NONE:
			return;
		case RS_WS_EV_MESSAGE:
			if (e.compressed && ws_inflate_message(ws, &m) < 0)
				return;
			if (ws->ev.on_message)
				ws->ev.on_message(ws, &m, ws->arg);
			break;
		case RS_WS_EV_PING:
			if (!ws->close_sent)
				ws_write_control(ws, RS_WS_OP_PONG, e.data, e.len);
			if (ws->ev.on_ping)
				ws->ev.on_ping(ws, &m, ws->arg);
			break;
		case RS_WS_EV_PONG:
			if (ws->ev.on_pong)
				ws->ev.on_pong(ws, &m, ws->arg);
			break;
		case RS_WS_EV_CLOSE:
			ws_peer_close(ws, &e);
			return;
		case RS_WS_EV_ERROR:
			ws_fail(ws, e.code, e.problem);
			return;
		}
	}
}

/* permessage-deflate was agreed on p: each side compresses with its own
 * window and takeover rule, and inflates with the peer's. */
static void ws_agreed(rs_ws *ws, const struct rs_ws_deflate_params *p)
{
	struct ws_pmd *d = ws->pmd;

	d->params = *p;
	rs_ws_deflater_init(&d->out, ws->server ? p->server_max_window_bits
						: p->client_max_window_bits,
			    ws->server ? p->server_no_context_takeover
				       : p->client_no_context_takeover);
	rs_ws_inflater_init(&d->in, ws->server ? p->client_max_window_bits
					       : p->server_max_window_bits,
			    ws->server ? p->client_no_context_takeover
				       : p->server_no_context_takeover,
			    ws->parser.opt.max_message);
	ws->parser.opt.rsv1_ok = 1;
	ws->deflate = 1;
}

static void ws_opened(rs_ws *ws)
{
	ws->state = WS_OPEN;
	free(ws->head);
	ws->head = NULL;
	if (ws->ev.on_open)
		ws->ev.on_open(ws, ws->arg);
	ws_drain(ws);
}

/* Refuses an Upgrade request with status (400, 426 or 431), ends, and
 * closes once the answer is out without waiting for the peer's FIN, as
 * npm ws's abortHandshake (`socket.once('finish', socket.destroy)`). */
static void ws_refuse(rs_ws *ws, int status, const char *problem)
{
	const char *answer = status == 426
		? "HTTP/1.1 426 Upgrade Required\r\n"
		  "Sec-WebSocket-Version: 13\r\nConnection: close\r\n\r\n"
		: status == 431
		? "HTTP/1.1 431 Request Header Fields Too Large\r\n"
		  "Connection: close\r\n\r\n"
		: "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";

	if (ws->ev.on_error)
		ws->ev.on_error(ws, status, problem, ws->arg);
	ws->ending = 1;
	if (rs_socket_end(ws->sock, answer, strlen(answer), NULL, NULL) < 0)
		rs_socket_destroy(ws->sock, 0);
	else
		rs_socket_destroy_soon(ws->sock);
}

/* A server's handshake: answers the Upgrade request. Returns the head's
 * length, 0 for more, or -1 after a failure. */
static int ws_server_head(rs_ws *ws)
{
	struct rs_ws_request r;
	struct rs_ws_deflate_params p;
	char resp[512], ext[256];
	int n = rs_ws_parse_request(ws->head, ws->head_len, &r), m, k = 0;

	if (n == 0)
		return 0;
	if (n < 0) {
		ws_refuse(ws, r.status, r.problem ? r.problem
						  : "the head is too large");
		return -1;
	}
	if (ws->pmd && r.extensions) {
		const char *problem;

		k = rs_ws_deflate_answer(&ws->pmd->opt, r.extensions,
					 r.extensions_len, &p, ext, sizeof(ext),
					 &problem);
		if (k < 0) {
			/* npm ws: "Invalid or unacceptable
			 * Sec-WebSocket-Extensions header", 400. */
			ws_refuse(ws, 400, problem ? problem
					   : "the extensions do not fit");
			return -1;
		}
	}
	m = rs_ws_server_response(resp, sizeof(resp), r.key, k == 1 ? ext : NULL);
	if (m < 0 || rs_socket_write(ws->sock, resp, (size_t)m, NULL, NULL) < 0) {
		ws_fail(ws, RS_WS_CLOSE_INTERNAL, "the 101 answer failed");
		return -1;
	}
	if (k == 1)
		ws_agreed(ws, &p);
	return n;
}

static int ws_client_head(rs_ws *ws)
{
	struct rs_ws_response r;
	int n = rs_ws_parse_response(ws->head, ws->head_len, ws->key, &r);

	if (n < 0) {
		ws_fail(ws, RS_WS_CLOSE_PROTOCOL,
			r.problem ? r.problem : "the answer is too large");
		return -1;
	}
	if (n > 0 && r.extensions) {
		/* npm ws fails the handshake on an extension it did not
		 * offer, or an answer its offer does not allow. */
		struct rs_ws_deflate_params p;
		const char *problem = "the server named an extension that was "
				      "not offered";

		if (!ws->pmd || rs_ws_deflate_accept(&ws->pmd->opt, r.extensions,
						     r.extensions_len, &p,
						     &problem) < 0) {
			ws_fail(ws, RS_WS_CLOSE_PROTOCOL, problem);
			return -1;
		}
		ws_agreed(ws, &p);
	}
	return n;
}

static void ws_on_data(rs_socket *s, const char *data, size_t len, void *arg)
{
	rs_ws *ws = arg;
	size_t old, copy;
	int n;
	char *h;

	(void)s;
	/* After our close frame (and FIN) the peer's close frame is still
	 * read; a failed handshake reads nothing more. */
	if (ws->state == WS_OPEN) {
		if (!ws->close_received && ws->parser.error_code == 0)
			ws_frames(ws, (const uint8_t *)data, len);
		return;
	}
	if (ws->ending)
		return;
	/* The head, collected until its blank line (at most one byte past the
	 * limit, so that the parser sees a head that is too large); the
	 * frames behind it are read from data, not from the copy. */
	old = ws->head_len;
	copy = len < WS_HEAD_MAX + 1 - old ? len : WS_HEAD_MAX + 1 - old;
	h = realloc(ws->head, old + copy);
	if (!h) {
		ws_fail(ws, RS_WS_CLOSE_INTERNAL, "out of memory");
		return;
	}
	ws->head = h;
	memcpy(h + old, data, copy);
	ws->head_len = old + copy;
	n = ws->server ? ws_server_head(ws) : ws_client_head(ws);
	if (n <= 0)
		return;
	ws_opened(ws);
	/* Frames that came with the head. */
	if ((size_t)n - old < len)
		ws_frames(ws, (const uint8_t *)data + (n - old),
			  len - ((size_t)n - old));
}

/* Frees permessage-deflate's contexts (zlib's state and buffers). */
static void ws_pmd_free(rs_ws *ws)
{
	if (!ws->pmd)
		return;
	rs_ws_deflater_free(&ws->pmd->out);
	rs_ws_inflater_free(&ws->pmd->in);
	free(ws->pmd);
	ws->pmd = NULL;
}

/* The stream socket's end went out (never after a failed write: the
 * socket closes on the error instead). */
static void ws_on_finish(rs_socket *s, void *arg)
{
	rs_ws *ws = arg;

	(void)s;
	ws->finished = 1;
}

static void ws_on_close(rs_socket *s, int had_error, void *arg)
{
	rs_ws *ws = arg;
	size_t dropped = ws->qcount;

	(void)s;
	(void)had_error;
	ws->state = WS_CLOSED;
	while (ws->qhead)
		ws_dequeue(ws);
	if (ws->ev.on_close)
		ws->ev.on_close(ws, ws->close_received ? ws->peer_code
						       : RS_WS_CLOSE_ABNORMAL,
				dropped, ws->arg);
	rs_ws_parser_free(&ws->parser);
	ws_pmd_free(ws);
	free(ws->head);
	free(ws);
}

static const struct rs_socket_events ws_socket_events = {
	.on_data = ws_on_data,
	.on_finish = ws_on_finish,
	.on_close = ws_on_close,
};

int rs_ws_attach(rs_socket *s, const struct rs_ws_options *o,
		 const struct rs_ws_events *ev, void *arg, rs_ws **out)
{
	const struct rs_config *cfg = o->config ? o->config : &rs_config;
	struct rs_ws_parser_options po = { o->server, 0,
					   o->max_message ? o->max_message
							  : WS_DEFAULT_MAX_MESSAGE };
	rs_ws *ws;

	if (o->deflate.enabled && rs_ws_deflate_options_check(&o->deflate) < 0)
		return -EINVAL;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	ws->sock = s;
	if (ev)
		ws->ev = *ev;
	ws->arg = arg;
	ws->server = o->server != 0;
	ws->by_kind = cfg->ws == RS_WS_BY_KIND;
	ws->state = WS_CONNECTING;
	ws->qtail = &ws->qhead;
	rs_ws_rng_seed(&ws->rng, o->seed);
	rs_ws_parser_init(&ws->parser, &po);
	if (o->deflate.enabled) {
		/* Contexts zeroed: nothing to free until ws_agreed. */
		ws->pmd = calloc(1, sizeof(*ws->pmd));
		if (!ws->pmd) {
			free(ws);
			return -ENOMEM;
		}
		ws->pmd->opt = o->deflate;
	}
	if (!o->server) {
		char req[1024], offer[256];
		uint8_t nonce[16];
		int n = 0;

		rs_ws_rng_bytes(&ws->rng, nonce, sizeof(nonce));
		if (ws->pmd)
			n = rs_ws_deflate_offer(&o->deflate, offer, sizeof(offer));
		if (n >= 0)
			n = rs_ws_client_request(req, sizeof(req),
						 o->host ? o->host : "localhost",
						 o->path ? o->path : "/", nonce,
						 ws->pmd ? offer : NULL, ws->key);
		if (n < 0 || rs_socket_write(s, req, (size_t)n, NULL, NULL) < 0) {
			free(ws->pmd);
			free(ws);
			return n < 0 ? n : -EPIPE;
		}
	}
	rs_socket_set_events(s, &ws_socket_events, ws);
	*out = ws;
	return 0;
}
