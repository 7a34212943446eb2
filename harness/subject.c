/*
 * subject.c: refstack-subject, the reference stack as a wirecheck subject.
 *
 * It reads the script from the control pipe (docs/subject-protocol.md), opens
 * the connections, runs the tasks in order on the stack's loop, runs the
 * handlers on socket events, and reports every event on the event pipe as it
 * happens, with write(2) and no buffering, so that a crash loses none.
 */
#include "fi.h"
#include "protocol.h"
#include "rs.h"
#include "http_parse.h"
#include "ws_frame.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_LINE 1048576

extern char **environ;

enum op_kind {
	OP_WRITE, OP_END, OP_DESTROY, OP_DESTROY_SOON, OP_CORK, OP_UNCORK,
	OP_PAUSE, OP_RESUME, OP_SIGNAL, OP_DISARM, OP_CHECKPOINT, OP_IGNORE,
	OP_ABORT, OP_EXIT, OP_EXECVE, OP_AWAIT_DRAINED, OP_WRITE_OWNED,
	OP_OVERWRITE,
	/* HTTP responses (issue 10) */
	OP_RES_WRITE, OP_TRY_WRITE, OP_RES_END, OP_TRY_WRITE_REST,
	OP_WRITE_REST, OP_END_REST,
	/* WebSocket (issue 11) */
	OP_WS_SEND, OP_WS_CLOSE, OP_WS_PING, OP_WS_BUFFERED, OP_KIND_COUNT
};
static const char *op_names[OP_KIND_COUNT] = {
	"write", "end", "destroy", "destroy-soon", "cork", "uncork",
	"pause", "resume", "signal", "disarm", "checkpoint", "ignore",
	"abort", "exit", "execve", "await-drained", "write-owned", "overwrite",
	"res-write", "try-write", "res-end", "try-write-rest", "write-rest",
	"end-rest",
	"ws-send", "ws-close", "ws-ping", "ws-buffered",
};

struct op {
	enum op_kind kind;
	int conn;         /* -1: the block's connection */
	size_t len;
	unsigned char *data;
	int fill;
	int cb;
	int micro;
	int sig;
	int external;
	int final;
	int resume;
	int ws_kind, ws_binary, ws_fin;  /* ws-send */
};

enum ev_kind {
	EV_DATA, EV_EOF, EV_DRAIN, EV_FINISH, EV_CLOSE, EV_WRITE_CB, EV_END_CB,
	EV_REQUEST, EV_WRITABLE,
	EV_KIND_COUNT
};
static const char *ev_names[EV_KIND_COUNT] = {
	"data", "eof", "drain", "finish", "close", "write-cb", "end-cb",
	"request", "writable",
};

struct block {
	int conn;
	enum ev_kind event;
	struct op *ops;
	size_t nops;
	size_t cap;       /* ops allocated: doubled, so that a long script
			   * is not copied once per op */
};

struct conn {
	int index;
	rs_socket *sock;   /* NULL once closed */
	uint64_t seq;      /* bytes handed to write()/end() */
	uint64_t written;  /* the stack's bytes_written, kept after close */
	int writes;        /* numbers writes for the event log */
	int connected;
	rs_ws *ws;         /* a WebSocket connection: its socket, or NULL */
	int ws_sends;      /* numbers ws-sends for the event log */
	/* The buffer the last write or write-owned handed the stack, for
	 * overwrite; a write's is the connection's to free, a write-owned's
	 * is on S.owned until the end. */
	unsigned char *last;
	size_t last_len;
	int last_number;
	int last_owned;
	/* http yes: the response in progress, and the last try-write. */
	rs_http_res *res;
	uint64_t body_seq; /* body bytes handed to the response calls */
	int res_writes;    /* numbers res-write and try-write calls */
	unsigned char *try_data; /* the last try-write's bytes, or NULL */
	size_t try_len;
	uint64_t try_base; /* the response's offset when it was called */
	int try_number;
	int try_final;
	int try_resume;
};

/* A buffer handed to rs_socket_write_owned: freed after the loop, so that
 * an overwrite after its release writes to memory still allocated. */
struct owned_buf {
	struct owned_buf *next;
	unsigned char *bytes;
};

struct cb_ctx {
	int conn;
	int number;        /* write#number, or 0 for end */
	int http;          /* a response's res-write / res-end */
};

static struct {
	char transport[8];
	char address[256];
	int port;
	int server;
	int nconns;
	struct rs_socket_options opts;
	struct block *tasks;
	size_t ntasks;
	struct block *handlers;
	size_t nhandlers;
	int sync_start;
	int *sync_list;           /* task numbers named by "sync task N" */
	size_t nsync;
	unsigned char *sync_task; /* [ntasks + 1]: announce the end of task i */
	struct conn *conns;
	int connected;
	size_t next_task;         /* index of the script task to post next */
	uint64_t script_loop_task;
	size_t running_task;      /* 1-based script task running, or 0 */
	uint64_t last_loop_task;  /* for the visible task numbers */
	uint64_t visible_task;
	rs_loop *loop;
	rs_listener *listener;
	int checkpoints;          /* checkpoints passed so far */
	int http;                 /* serve HTTP on accepted connections */
	struct owned_buf *owned;  /* every write-owned buffer */
	int deferred;             /* the running script task awaits a drain */
} S;

/* ---- the event pipe ----------------------------------------------------- */

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(70); /* the harness is gone: nothing to report to */
		buf += n;
		len -= (size_t)n;
	}
}

static void line_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void line_out(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	write_all(WC_FD_EVENTS, buf, (size_t)n);
}

static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fatal(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	line_out("fatal %s", buf);
	exit(2);
}

/*
 * Tasks are numbered by the subject, not by the loop: the n-th task that
 * reported an event is task n. A loop task that only flushed bytes (one
 * more writable event when the peer read late) has no event and takes no
 * number, so the numbers do not depend on timing.
 */
static void event(int conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void event(int conn, const char *fmt, ...)
{
	char text[768];
	uint64_t t = rs_loop_task(S.loop);
	va_list ap;

	if (t != S.last_loop_task || t == 0) {
		S.visible_task++;
		S.last_loop_task = t;
	}
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	line_out("ev %llu %d %s", (unsigned long long)S.visible_task, conn, text);
}

static void wait_go(void)
{
	char buf[8];
	size_t got = 0;

	while (got < 3) {
		ssize_t n = read(WC_FD_CTL, buf + got, 3 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(70);
		got += (size_t)n;
	}
	if (memcmp(buf, "go\n", 3) != 0)
		_exit(71);
}

static void sync_point(const char *point)
{
	/* 21 digits and a space per connection, for the most connections a
	 * scenario can have (1024), and the point. */
	static char buf[1024 * 22 + 64];
	size_t off;

	off = (size_t)snprintf(buf, sizeof(buf), "sync %s", point);
	for (int i = 0; i < S.nconns && off < sizeof(buf) - 32; i++) {
		struct conn *c = &S.conns[i];

		if (c->sock)
			c->written = rs_socket_bytes_written(c->sock);
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, " %llu",
					(unsigned long long)c->written);
	}
	buf[off++] = '\n';
	write_all(WC_FD_EVENTS, buf, off);
	wait_go();
}

/* ---- operations --------------------------------------------------------- */

static const char *errname(int e)
{
	const char *n = fi_errno_name(e < 0 ? -e : e);
	static char buf[16];

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e < 0 ? -e : e);
	return buf;
}

static void run_handlers(enum ev_kind ev, int conn);
static void op_http(const struct op *op, struct conn *c);

static void on_write_done(rs_socket *s, int status, void *arg)
{
	struct cb_ctx *ctx = arg;
	int conn = ctx->conn, number = ctx->number, ctx_http = ctx->http;

	(void)s;
	free(ctx);
	if (number)
		event(conn, "%swrite#%d cb %s", ctx_http ? "res-" : "", number,
		      status == 0 ? "ok" : errname(status));
	else
		event(conn, "%send cb %s", ctx_http ? "res-" : "",
		      status == 0 ? "ok" : errname(status));
	run_handlers(number ? EV_WRITE_CB : EV_END_CB, conn);
}

static unsigned char *op_bytes(const struct op *op, struct conn *c)
{
	unsigned char *buf;

	if (op->data || op->len == 0)
		return op->data;
	buf = malloc(op->len);
	if (!buf)
		fatal("out of memory for a write of %zu bytes", op->len);
	for (size_t i = 0; i < op->len; i++)
		buf[i] = op->fill >= 0 ? (unsigned char)op->fill : wc_pattern(c->seq + i);
	return buf;
}

static struct cb_ctx *op_ctx(const struct op *op, struct conn *c, int number)
{
	struct cb_ctx *ctx;

	if (!op->cb)
		return NULL;
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		fatal("out of memory");
	ctx->conn = c->index;
	ctx->number = number;
	ctx->http = 0;
	return ctx;
}

/* The bytes of a write as a buffer of the subject's own (a copy of a
 * literal), kept as the connection's last for overwrite. */
static unsigned char *op_own_bytes(const struct op *op, struct conn *c)
{
	unsigned char *buf;

	if (!op->data && op->len > 0)
		return op_bytes(op, c);
	buf = malloc(op->len ? op->len : 1);
	if (!buf)
		fatal("out of memory for a write of %zu bytes", op->len);
	if (op->len > 0)
		memcpy(buf, op->data, op->len);
	return buf;
}

static void keep_last(struct conn *c, unsigned char *bytes, size_t len,
		      int number, int owned)
{
	if (c->last && !c->last_owned)
		free(c->last);
	c->last = bytes;
	c->last_len = len;
	c->last_number = number;
	c->last_owned = owned;
}

static void op_write(const struct op *op, struct conn *c)
{
	int number = ++c->writes;
	unsigned char *bytes;
	struct cb_ctx *ctx;
	int rc;

	if (!c->sock) {
		event(c->index, "write#%d %zu -> EBADF (closed)", number, op->len);
		return;
	}
	bytes = op_own_bytes(op, c);
	ctx = op_ctx(op, c, number);
	c->seq += op->len;
	rc = rs_socket_write(c->sock, bytes, op->len, ctx ? on_write_done : NULL, ctx);
	keep_last(c, bytes, op->len, number, 0);
	if (rc < 0)
		event(c->index, "write#%d %zu -> %s", number, op->len, errname(rc));
	else
		event(c->index, "write#%d %zu -> %s", number, op->len, rc ? "true" : "false");
}

/* The release of a write-owned: the write's callback, reported as one. */
static void on_release(rs_socket *s, int status, void *arg)
{
	struct cb_ctx *ctx = arg;
	int conn = ctx->conn, number = ctx->number;

	(void)s;
	free(ctx);
	event(conn, "write#%d released %s", number, status == 0 ? "ok" : errname(status));
	run_handlers(EV_WRITE_CB, conn);
}

/* write-owned: rs_socket_write_owned of a buffer that stays the
 * subject's, so that overwrite can change it while the stack holds it. */
static void op_write_owned(const struct op *op, struct conn *c)
{
	int number = ++c->writes;
	struct owned_buf *ob;
	struct cb_ctx *ctx;
	int rc;

	if (!c->sock) {
		event(c->index, "write#%d %zu owned -> EBADF (closed)", number, op->len);
		return;
	}
	ob = malloc(sizeof(*ob));
	ctx = malloc(sizeof(*ctx));
	if (!ob || !ctx)
		fatal("out of memory");
	ob->bytes = op_own_bytes(op, c);
	ob->next = S.owned;
	S.owned = ob;
	*ctx = (struct cb_ctx){ .conn = c->index, .number = number };
	c->seq += op->len;
	keep_last(c, ob->bytes, op->len, number, 1);
	rc = rs_socket_write_owned(c->sock, ob->bytes, op->len, on_release, ctx);
	if (rc < 0)
		event(c->index, "write#%d %zu owned -> %s", number, op->len, errname(rc));
	else
		event(c->index, "write#%d %zu owned -> %s", number, op->len, rc ? "true" : "false");
}

/* overwrite fill=C: every byte of the last write's buffer becomes C. */
static void op_overwrite(const struct op *op, struct conn *c)
{
	if (!c->last) {
		event(c->index, "overwrite (no write)");
		return;
	}
	memset(c->last, op->fill, c->last_len);
	event(c->index, "overwrite write#%d %zu", c->last_number, c->last_len);
}

static void op_end(const struct op *op, struct conn *c)
{
	unsigned char *bytes;
	struct cb_ctx *ctx;
	int rc;

	if (!c->sock) {
		event(c->index, "end %zu -> EBADF (closed)", op->len);
		return;
	}
	bytes = op_bytes(op, c);
	ctx = op_ctx(op, c, 0);
	c->seq += op->len;
	rc = rs_socket_end(c->sock, bytes, op->len, ctx ? on_write_done : NULL, ctx);
	if (bytes != op->data)
		free(bytes);
	event(c->index, "end %zu -> %s", op->len, rc < 0 ? errname(rc) : "ok");
}

static void op_signal(const struct op *op, int conn)
{
	const char *name = fi_signal_name(op->sig);

	if (op->external) {
		if (name)
			event(conn, "signal %s external", name);
		else
			event(conn, "signal %d external", op->sig);
		/* With our pid: under strace the harness's child is strace,
		 * and the signal is for the subject. */
		line_out("kill %d %d", op->sig, (int)getpid());
		wait_go();
		return;
	}
	if (name)
		event(conn, "signal %s", name);
	else
		event(conn, "signal %d", op->sig);
	if (rs_raise(op->sig) < 0)
		event(conn, "signal %d refused", op->sig);
}

static void op_ignore(const struct op *op, int conn)
{
	const char *name = fi_signal_name(op->sig);
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(op->sig, &sa, NULL) < 0)
		event(conn, "ignore %d -> %s", op->sig, errname(errno));
	else
		event(conn, "ignore %s", name ? name : "?");
}

/* execve() of /bin/true through the stack: the batches go out first. */
static void op_execve(int conn)
{
	char *argv[] = { "true", NULL };
	int rc;

	event(conn, "execve /bin/true");
	rc = rs_execve("/bin/true", argv, environ);
	event(conn, "execve -> %s", errname(rc));
}

/* ---- WebSocket connections ----------------------------------------------- */

/* The script's "websocket SEED MAX" line. */
static struct {
	int on;
	unsigned long long seed;
	size_t max_message;
	int open;          /* handshakes done */
	int started;       /* every connection is up: tasks may start */
} W;

static void post_next_task(void);

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

static void ws_ev_open(rs_ws *ws, void *arg)
{
	struct conn *c = arg;

	(void)ws;
	event(c->index, "ws-open");
	if (++W.open == S.nconns && W.started)
		post_next_task();
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
		event(c->index, "ws-message off=%llu %s len=%zu frames=%u %s",
		      (unsigned long long)m->offset, types[m->opcode], m->len,
		      m->frames, d);
	else
		event(c->index, "ws-%s off=%llu len=%zu %s", what,
		      (unsigned long long)m->offset, m->len, d);
}

static void ws_ev_peer_close(rs_ws *ws, int code, const uint8_t *reason,
			     size_t len, void *arg)
{
	struct conn *c = arg;
	char d[80];

	(void)ws;
	ws_data_text(reason, len, d, sizeof(d));
	event(c->index, "ws-peer-close %d reason=%s", code, d);
}

static void ws_ev_error(rs_ws *ws, int code, const char *problem, void *arg)
{
	struct conn *c = arg;

	(void)ws;
	event(c->index, "ws-error %d (%s)", code, problem);
}

static void ws_ev_send_error(rs_ws *ws, int number, int err, void *arg)
{
	struct conn *c = arg;

	(void)ws;
	event(c->index, "ws-send#%d %s at the head of the queue", number,
	      errname(err));
}

static void ws_ev_close(rs_ws *ws, int code, size_t dropped, void *arg)
{
	struct conn *c = arg;

	c->written = rs_socket_bytes_written(rs_ws_socket(ws));
	event(c->index, "ws-closed code=%d dropped=%zu bytes_written=%llu", code,
	      dropped, (unsigned long long)c->written);
	c->ws = NULL;
	c->sock = NULL;
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
static void ws_start(struct conn *c, rs_socket *s, int server)
{
	struct rs_ws_options o = {
		.server = server,
		.seed = W.seed + (unsigned long long)c->index,
		.max_message = W.max_message,
		.host = "127.0.0.1",
		.path = "/",
	};
	int rc = rs_ws_attach(s, &o, &ws_events, c, &c->ws);

	if (rc < 0)
		fatal("rs_ws_attach: %s", strerror(-rc));
}

static const char *ws_kind_text(int kind)
{
	return kind == RS_WS_KIND_TEXT ? "text" : kind == RS_WS_KIND_BYTES ? "bytes"
									    : "kind=bad";
}

static void ws_op(const struct op *op, struct conn *c)
{
	const char *name = op_names[op->kind];
	unsigned char *bytes;
	int rc = 0;

	if (!c->ws) {
		event(c->index, "%s (closed)", name);
		return;
	}
	if (op->kind == OP_WS_BUFFERED) {
		event(c->index, "ws-buffered %zu waiting=%zu",
		      rs_ws_buffered_amount(c->ws), rs_ws_waiting(c->ws));
		return;
	}
	bytes = op_bytes(op, c);
	c->seq += op->len;
	if (op->kind == OP_WS_SEND) {
		struct rs_ws_send_options so = { op->ws_binary, op->ws_fin };
		int number = ++c->ws_sends;
		char opts[64] = "";

		if (op->ws_binary != RS_WS_BINARY_ABSENT)
			snprintf(opts, sizeof(opts), " binary=%s",
				 op->ws_binary == 1 ? "true" : op->ws_binary == 0 ? "false" : "bad");
		if (op->ws_fin != 1)
			snprintf(opts + strlen(opts), sizeof(opts) - strlen(opts),
				 " fin=%s", op->ws_fin == 0 ? "0" : "bad");
		rc = rs_ws_send(c->ws, bytes, op->len, op->ws_kind, &so);
		event(c->index, "ws-send#%d %zu %s%s -> %s", number, op->len,
		      ws_kind_text(op->ws_kind), opts,
		      rc < 0 ? errname(rc) : rc ? "sent" : "queued");
	} else if (op->kind == OP_WS_CLOSE) {
		rc = rs_ws_close(c->ws, op->sig, bytes, op->len);
		event(c->index, "ws-close %d -> %s", op->sig,
		      rc < 0 ? errname(rc) : "ok");
	} else {
		rc = rs_ws_ping(c->ws, bytes, op->len);
		event(c->index, "ws-ping %zu -> %s", op->len,
		      rc < 0 ? errname(rc) : "ok");
	}
	if (bytes != op->data)
		free(bytes);
}

static void run_op(const struct op *op, int conn_index)
{
	int ci = op->conn >= 0 ? op->conn : conn_index;
	struct conn *c = &S.conns[ci];

	switch (op->kind) {
	case OP_WRITE: op_write(op, c); return;
	case OP_WRITE_OWNED: op_write_owned(op, c); return;
	case OP_OVERWRITE: op_overwrite(op, c); return;
	case OP_END: op_end(op, c); return;
	case OP_SIGNAL: op_signal(op, ci); return;
	case OP_DISARM:
		fi_disarm_all();
		event(ci, "disarm");
		return;
	case OP_CHECKPOINT: {
		char point[32];

		snprintf(point, sizeof(point), "checkpoint:%d", ++S.checkpoints);
		event(ci, "checkpoint %d", S.checkpoints);
		sync_point(point);
		return;
	}
	case OP_IGNORE:
		op_ignore(op, ci);
		return;
	case OP_ABORT:
		event(ci, "abort");
		rs_abort();
	case OP_EXIT:
		event(ci, "exit %d", op->sig);
		rs_exit(op->sig);
	case OP_EXECVE:
		op_execve(ci);
		return;
	case OP_RES_WRITE: case OP_TRY_WRITE: case OP_RES_END:
	case OP_TRY_WRITE_REST: case OP_WRITE_REST: case OP_END_REST:
		op_http(op, c);
		return;
	case OP_WS_SEND:
	case OP_WS_CLOSE:
	case OP_WS_PING:
	case OP_WS_BUFFERED:
		ws_op(op, c);
		return;
	default:
		break;
	}
	event(ci, "%s%s", op_names[op->kind], c->sock ? "" : " (closed)");
	if (!c->sock)
		return;
	switch (op->kind) {
	case OP_DESTROY: rs_socket_destroy(c->sock, 0); break;
	case OP_DESTROY_SOON: rs_socket_destroy_soon(c->sock); break;
	case OP_CORK: rs_socket_cork(c->sock); break;
	case OP_UNCORK: rs_socket_uncork(c->sock); break;
	case OP_PAUSE: rs_socket_pause(c->sock); break;
	case OP_RESUME: rs_socket_resume(c->sock); break;
	default: break;
	}
}

struct micro_ctx {
	const struct op *op;
	int conn;
};

static void micro_run(rs_loop *loop, void *arg)
{
	struct micro_ctx *m = arg;

	(void)loop;
	run_op(m->op, m->conn);
	free(m);
}

struct resume {
	const struct block *block;
	size_t next;
	int conn;
};

static void run_block_from(const struct block *b, int conn, size_t from);

static void resume_task(rs_loop *loop, void *arg)
{
	struct resume r = *(struct resume *)arg;

	free(arg);
	/* A script task that waited ends with its last part: this task's END
	 * is the one that syncs and posts the next script task. */
	if (r.block >= S.tasks && r.block < S.tasks + S.ntasks) {
		S.script_loop_task = rs_loop_task(loop);
		S.running_task = (size_t)(r.block - S.tasks) + 1;
	}
	run_block_from(r.block, r.conn, r.next);
}

/* await-drained: while the connection still has bytes the kernel has not
 * taken, the rest of the block goes to a later task (posted, so I/O runs in
 * between). Tasks that only wait report nothing, so they take no number. */
static int await_drained(const struct block *b, size_t i, int conn)
{
	struct conn *c = &S.conns[b->ops[i].conn >= 0 ? b->ops[i].conn : conn];
	struct resume *r;

	if (!c->sock || rs_socket_writable_length(c->sock) == 0) {
		event(c->index, "drained");
		return 0;
	}
	r = malloc(sizeof(*r));
	if (!r || rs_loop_post(S.loop, resume_task, r) < 0)
		fatal("out of memory");
	*r = (struct resume){ b, i, conn };
	if (b >= S.tasks && b < S.tasks + S.ntasks)
		S.deferred = 1;
	return 1;
}

static void run_block_from(const struct block *b, int conn, size_t from)
{
	for (size_t i = from; i < b->nops; i++) {
		const struct op *op = &b->ops[i];

		if (op->kind == OP_AWAIT_DRAINED) {
			if (await_drained(b, i, conn))
				return;
			continue;
		}
		if (op->micro) {
			struct micro_ctx *m = malloc(sizeof(*m));

			if (!m || rs_microtask(S.loop, micro_run, m) < 0)
				fatal("out of memory");
			m->op = op;
			m->conn = conn;
			continue;
		}
		run_op(op, conn);
	}
}

static void run_block(const struct block *b, int conn)
{
	run_block_from(b, conn, 0);
}

static void run_handlers(enum ev_kind ev, int conn)
{
	for (size_t i = 0; i < S.nhandlers; i++) {
		const struct block *h = &S.handlers[i];

		if (h->event == ev && (h->conn < 0 || h->conn == conn))
			run_block(h, conn);
	}
}

/* ---- the script's tasks --------------------------------------------------- */

static void post_next_task(void);

static void script_task(rs_loop *loop, void *arg)
{
	const struct block *b = arg;

	S.script_loop_task = rs_loop_task(loop);
	S.running_task = (size_t)(b - S.tasks) + 1;
	run_block(b, b->conn);
}

static void task_hook(rs_loop *loop, uint64_t task, enum rs_task_phase phase,
		      void *arg)
{
	char point[32];
	size_t n = S.running_task;

	(void)loop;
	(void)arg;
	if (phase != RS_TASK_END || n == 0 || task != S.script_loop_task)
		return;
	if (S.deferred) {
		S.deferred = 0;
		return;
	}
	S.running_task = 0;
	if (S.sync_task[n]) {
		snprintf(point, sizeof(point), "task:%zu", n);
		sync_point(point);
	}
	post_next_task();
}

static void post_next_task(void)
{
	if (S.next_task == S.ntasks) {
		S.next_task++;
		sync_point("done");
		return;
	}
	if (S.next_task > S.ntasks)
		return;
	if (rs_loop_post(S.loop, script_task, &S.tasks[S.next_task++]) < 0)
		fatal("out of memory");
}

static void all_connected(void)
{
	if (S.sync_start)
		sync_point("start");
	/* WebSocket connections: the tasks start once every handshake is
	 * done (the peer may send the Upgrade, or the 101, at start). */
	if (W.on) {
		W.started = 1;
		if (W.open < S.nconns)
			return;
	}
	post_next_task();
}

/* ---- socket events ------------------------------------------------------ */

static struct conn *conn_of(void *arg)
{
	return arg;
}

static void on_connect(rs_socket *s, void *arg)
{
	struct conn *c = conn_of(arg);

	c->connected = 1;
	event(c->index, "connect");
	if (W.on)
		ws_start(c, s, 0);
	if (++S.connected == S.nconns)
		all_connected();
}

static void on_data(rs_socket *s, const char *data, size_t len, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	(void)data;
	event(c->index, "data %zu", len);
	run_handlers(EV_DATA, c->index);
}

static void on_end(rs_socket *s, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	/* "eof", not "end": end names the end() call in the trace. */
	event(c->index, "eof");
	run_handlers(EV_EOF, c->index);
}

static void on_drain(rs_socket *s, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	event(c->index, "drain");
	run_handlers(EV_DRAIN, c->index);
}

static void on_finish(rs_socket *s, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	event(c->index, "finish");
	run_handlers(EV_FINISH, c->index);
}

static void on_error(rs_socket *s, int code, const char *syscall, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	event(c->index, "error %s %s", errname(code), syscall);
}

static void on_close(rs_socket *s, int had_error, void *arg)
{
	struct conn *c = conn_of(arg);

	c->written = rs_socket_bytes_written(s);
	event(c->index, "close had_error=%d bytes_written=%llu", had_error,
	      (unsigned long long)c->written);
	c->sock = NULL;
	c->res = NULL;
	free(c->try_data);
	c->try_data = NULL;
	run_handlers(EV_CLOSE, c->index);
}

static const struct rs_socket_events socket_events = {
	.on_connect = on_connect, .on_data = on_data, .on_end = on_end,
	.on_drain = on_drain, .on_finish = on_finish, .on_error = on_error,
	.on_close = on_close,
};

/* ---- HTTP responses (http yes, issue 10) ---------------------------------- */

/* The body: the stream pattern over the response bytes of the connection
 * (framing not counted), or the op's literal bytes. */
static unsigned char *http_bytes(const struct op *op, struct conn *c)
{
	unsigned char *buf;

	if (op->data || op->len == 0)
		return op->data;
	buf = malloc(op->len);
	if (!buf)
		fatal("out of memory for %zu bytes", op->len);
	for (size_t i = 0; i < op->len; i++)
		buf[i] = op->fill >= 0 ? (unsigned char)op->fill : wc_pattern(c->body_seq + i);
	return buf;
}

static const char *http_rc(int rc)
{
	return rc < 0 ? errname(rc) : rc ? "true" : "false";
}

static void try_clear(struct conn *c)
{
	free(c->try_data);
	c->try_data = NULL;
	c->try_len = 0;
	c->try_resume = 0;
}

/* The rest of the last try-write: the bytes past the response's offset. */
static size_t try_rest(const struct conn *c, const unsigned char **rest)
{
	uint64_t out = rs_http_res_offset(c->res) - c->try_base;

	if (!c->try_data || out >= c->try_len) {
		*rest = c->try_data;
		return 0;
	}
	*rest = c->try_data + out;
	return c->try_len - (size_t)out;
}

static struct cb_ctx *http_ctx(const struct op *op, struct conn *c, int number)
{
	struct cb_ctx *ctx = op_ctx(op, c, number);

	if (ctx)
		ctx->http = 1;
	return ctx;
}

static void op_http(const struct op *op, struct conn *c)
{
	const char *name = op_names[op->kind];
	const unsigned char *rest;
	unsigned char *bytes;
	struct cb_ctx *ctx;
	size_t len;
	int rc, number;

	if (!c->res || !c->sock) {
		event(c->index, "%s -> EBADF (no response)", name);
		return;
	}
	switch (op->kind) {
	case OP_RES_WRITE:
	case OP_RES_END:
		number = op->kind == OP_RES_WRITE ? ++c->res_writes : 0;
		bytes = http_bytes(op, c);
		c->body_seq += op->len;
		ctx = http_ctx(op, c, number);
		if (op->kind == OP_RES_WRITE) {
			rc = rs_http_res_write(c->res, bytes, op->len,
					       ctx ? on_write_done : NULL, ctx);
			event(c->index, "res-write#%d %zu -> %s", number, op->len, http_rc(rc));
		} else {
			rc = rs_http_res_end(c->res, bytes, op->len,
					     ctx ? on_write_done : NULL, ctx);
			event(c->index, "res-end %zu -> %s", op->len, rc < 0 ? errname(rc) : "ok");
		}
		if (rc < 0)
			free(ctx);
		if (bytes != op->data)
			free(bytes);
		return;
	case OP_TRY_WRITE:
		try_clear(c);
		c->try_number = ++c->res_writes;
		c->try_len = op->len;
		c->try_data = malloc(op->len ? op->len : 1);
		if (!c->try_data)
			fatal("out of memory");
		bytes = http_bytes(op, c);
		if (op->len)
			memcpy(c->try_data, bytes, op->len);
		if (bytes != op->data)
			free(bytes);
		c->body_seq += op->len;
		c->try_base = rs_http_res_offset(c->res);
		c->try_final = op->final;
		rc = rs_http_res_try_write(c->res, c->try_data, op->len, op->final);
		event(c->index, "try-write#%d %zu%s -> %s offset=%llu", c->try_number,
		      op->len, op->final ? " final" : "", http_rc(rc),
		      (unsigned long long)rs_http_res_offset(c->res));
		c->try_resume = rc == 0 && op->resume;
		return;
	default:
		break;
	}
	len = try_rest(c, &rest);
	ctx = http_ctx(op, c, op->kind == OP_WRITE_REST ? ++c->res_writes : 0);
	if (op->kind == OP_TRY_WRITE_REST) {
		rc = rs_http_res_try_write(c->res, rest, len, op->final);
		event(c->index, "try-write-rest %zu%s -> %s offset=%llu", len,
		      op->final ? " final" : "", http_rc(rc),
		      (unsigned long long)rs_http_res_offset(c->res));
	} else if (op->kind == OP_WRITE_REST) {
		rc = rs_http_res_write(c->res, rest, len,
				       ctx ? on_write_done : NULL, ctx);
		event(c->index, "write-rest %zu -> %s", len, http_rc(rc));
	} else {
		rc = rs_http_res_end(c->res, rest, len,
				     ctx ? on_write_done : NULL, ctx);
		event(c->index, "end-rest %zu -> %s", len, rc < 0 ? errname(rc) : "ok");
	}
	if (rc < 0)
		free(ctx);
	/* The rest went to write or end: no try-write is pending any more. */
	if (op->kind != OP_TRY_WRITE_REST || rc == 1)
		try_clear(c);
}

/* On writable after a try-write returned false: a try-write with resume
 * tries its rest again and reports only once it is out (how many writable
 * events that takes depends on how fast the peer reads); otherwise the
 * event and the `on writable` handlers. */
static void on_res_writable(rs_http_res *res, uint64_t offset, void *arg)
{
	struct conn *c = arg;
	const unsigned char *rest;
	size_t len;
	int rc;

	(void)res;
	if (c->try_resume) {
		len = try_rest(c, &rest);
		rc = rs_http_res_try_write(c->res, rest, len, c->try_final);
		if (rc == 0)
			return;
		event(c->index, "try-write#%d done -> %s offset=%llu", c->try_number,
		      rc < 0 ? errname(rc) : "true",
		      (unsigned long long)rs_http_res_offset(c->res));
		try_clear(c);
		return;
	}
	event(c->index, "writable offset=%llu", (unsigned long long)offset);
	run_handlers(EV_WRITABLE, c->index);
}

static void on_request(rs_http_conn *hc, rs_http_res *res,
		       const struct rs_http_request *req, const char *body,
		       size_t body_len, void *arg)
{
	struct conn *c = arg;

	(void)hc;
	(void)body;
	try_clear(c);
	c->res = res;
	rs_http_res_on_writable(res, on_res_writable, c);
	event(c->index, "request %.*s %.*s body=%zu", (int)req->method_len,
	      req->method, (int)req->target_len, req->target, body_len);
	run_handlers(EV_REQUEST, c->index);
}

static void on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	struct conn *c;

	(void)arg;
	if (S.connected >= S.nconns) {
		rs_socket_destroy(s, 0);
		return;
	}
	c = &S.conns[S.connected];
	c->sock = s;
	c->connected = 1;
	if (S.http) {
		rs_http_conn *hc;

		if (rs_http_attach(s, 0, &socket_events, c, on_request, c, &hc) < 0)
			fatal("out of memory");
	} else {
		rs_socket_set_events(s, &socket_events, c);
	}
	event(c->index, "accept");
	if (W.on)
		ws_start(c, s, 1);
	if (++S.connected == S.nconns) {
		rs_listener_close(l);
		S.listener = NULL;
		all_connected();
	}
}

/* ---- reading the script -------------------------------------------------- */

/* The script is read in blocks, not a byte at a time: a script of 500,000
 * operations is some 35 MB. Nothing follows "run" until the subject asks
 * (a sync or kill line), so no "go" is ever read ahead here. */
static struct {
	char buf[65536];
	size_t start, end;
} in;

static char *read_line(void)
{
	static char line[MAX_LINE];
	size_t len = 0;

	for (;;) {
		char *nl;
		size_t take;

		if (in.start == in.end) {
			ssize_t n = read(WC_FD_CTL, in.buf, sizeof(in.buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return NULL;
			in.start = 0;
			in.end = (size_t)n;
		}
		nl = memchr(in.buf + in.start, '\n', in.end - in.start);
		take = (nl ? (size_t)(nl - in.buf) : in.end) - in.start;
		if (len + take + 1 > sizeof(line))
			fatal("a script line longer than %d bytes", MAX_LINE);
		memcpy(line + len, in.buf + in.start, take);
		len += take;
		in.start += take + (nl != NULL);
		if (nl)
			break;
	}
	line[len] = '\0';
	return line;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void parse_op_line(char *line, struct block *b)
{
	struct op op = { .conn = -1, .fill = -1 };
	char *save = NULL, *tok = strtok_r(line, " ", &save);
	struct op *slot;
	int k;

	tok = strtok_r(NULL, " ", &save);
	for (k = 0; k < OP_KIND_COUNT; k++)
		if (tok && strcmp(tok, op_names[k]) == 0)
			break;
	if (k == OP_KIND_COUNT)
		fatal("unknown op '%s'", tok ? tok : "");
	op.kind = (enum op_kind)k;
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');
		long v;

		if (!eq)
			fatal("bad op field '%s'", tok);
		*eq++ = '\0';
		if (strcmp(tok, "hex") == 0) {
			size_t n = strlen(eq) / 2;

			op.data = malloc(n ? n : 1);
			if (!op.data)
				fatal("out of memory");
			for (size_t i = 0; i < n; i++) {
				int hi = hexval(eq[2 * i]), lo = hexval(eq[2 * i + 1]);

				if (hi < 0 || lo < 0)
					fatal("bad hex in op");
				op.data[i] = (unsigned char)(hi * 16 + lo);
			}
			op.len = n;
			continue;
		}
		v = strtol(eq, NULL, 10);
		if (strcmp(tok, "conn") == 0) op.conn = (int)v;
		else if (strcmp(tok, "len") == 0) op.len = (size_t)strtoull(eq, NULL, 10);
		else if (strcmp(tok, "fill") == 0) op.fill = (int)v;
		else if (strcmp(tok, "cb") == 0) op.cb = (int)v;
		else if (strcmp(tok, "micro") == 0) op.micro = (int)v;
		else if (strcmp(tok, "sig") == 0) op.sig = (int)v;
		else if (strcmp(tok, "ext") == 0) op.external = (int)v;
		else if (strcmp(tok, "final") == 0) op.final = (int)v;
		else if (strcmp(tok, "resume") == 0) op.resume = (int)v;
		else if (strcmp(tok, "ws") == 0 &&
			 sscanf(eq, "%d,%d,%d", &op.ws_kind, &op.ws_binary, &op.ws_fin) == 3)
			;
		else fatal("unknown op field '%s'", tok);
	}
	if (op.conn >= S.nconns)
		fatal("op on connection %d of %d", op.conn, S.nconns);
	if (b->nops == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;

		slot = realloc(b->ops, cap * sizeof(*b->ops));
		if (!slot)
			fatal("out of memory");
		b->ops = slot;
		b->cap = cap;
	}
	b->ops[b->nops++] = op;
}

static struct block *new_block(struct block **arr, size_t *n)
{
	struct block *bigger = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!bigger)
		fatal("out of memory");
	*arr = bigger;
	memset(&bigger[*n], 0, sizeof(**arr));
	return &bigger[(*n)++];
}

static void parse_header_line(char *line)
{
	char a[64], b[256];
	int n;

	if (sscanf(line, "variant %63s %255s", a, b) == 2) {
		int rc = rs_variant_set(a, b);

		if (rc < 0)
			fatal("variant %s=%s: %s", a, b, strerror(-rc));
	} else if (strncmp(line, "fault ", 6) == 0) {
		struct fi_rule rule;
		char err[256];

		if (fi_rule_parse(line + 6, &rule, err, sizeof(err)) < 0)
			fatal("%s", err);
		if (fi_arm(&rule) < 0)
			fatal("cannot arm '%s'", line + 6);
	} else if (sscanf(line, "connections %d", &n) == 1 && n > 0) {
		/* Before "connect": sscanf's "connect %7s" matches this line
		 * too ("connect" + "ions"). */
		S.nconns = n;
	} else if (strncmp(line, "connect ", 8) == 0 &&
		   sscanf(line, "connect %7s %255s %d", S.transport, S.address, &S.port) >= 2) {
		S.server = 0;
	} else if (sscanf(line, "listen %7s %255s %d", S.transport, S.address, &S.port) >= 2) {
		S.server = 1;
	} else if (sscanf(line, "http %d", &n) == 1) {
		S.http = n;
	} else if (sscanf(line, "half-open %d", &n) == 1) {
		S.opts.allow_half_open = n;
	} else if (strncmp(line, "websocket ", 10) == 0) {
		if (sscanf(line, "websocket %llu %zu", &W.seed, &W.max_message) != 2)
			fatal("bad websocket line '%s'", line);
		W.on = 1;
	} else if (strcmp(line, "sync start") == 0) {
		S.sync_start = 1;
	} else if (sscanf(line, "sync task %d", &n) == 1 && n > 0) {
		int *bigger = realloc(S.sync_list, (S.nsync + 1) * sizeof(int));

		if (!bigger)
			fatal("out of memory");
		S.sync_list = bigger;
		S.sync_list[S.nsync++] = n;
	} else {
		fatal("unknown script line '%s'", line);
	}
}

static void read_script(void)
{
	struct block *open = NULL;
	char *line;

	S.nconns = 1;
	while ((line = read_line()) && strcmp(line, "run") != 0) {
		int n;

		if (strncmp(line, "op ", 3) == 0) {
			if (!open)
				fatal("an op outside a block");
			parse_op_line(line, open);
		} else if (sscanf(line, "task %d", &n) == 1) {
			open = new_block(&S.tasks, &S.ntasks);
			open->conn = n;
		} else if (strncmp(line, "handler ", 8) == 0) {
			char ev[16];
			int k;

			if (sscanf(line, "handler %15s %d", ev, &n) != 2)
				fatal("bad handler line '%s'", line);
			for (k = 0; k < EV_KIND_COUNT; k++)
				if (strcmp(ev, ev_names[k]) == 0)
					break;
			if (k == EV_KIND_COUNT)
				fatal("unknown handler event '%s'", ev);
			open = new_block(&S.handlers, &S.nhandlers);
			open->event = (enum ev_kind)k;
			open->conn = n;
		} else if (strcmp(line, "endblock") == 0) {
			open = NULL;
		} else {
			parse_header_line(line);
		}
	}
	if (!line)
		fatal("the script ended before 'run'");
	if (in.start != in.end)
		fatal("bytes after 'run' in the script");
	S.sync_task = calloc(S.ntasks + 1, 1);
	if (!S.sync_task)
		fatal("out of memory");
	for (size_t i = 0; i < S.nsync; i++) {
		if ((size_t)S.sync_list[i] > S.ntasks)
			fatal("sync at task %d, but the script has %zu tasks",
			      S.sync_list[i], S.ntasks);
		S.sync_task[S.sync_list[i]] = 1;
	}
	free(S.sync_list);
	S.sync_list = NULL;
}

/* ---- main ---------------------------------------------------------------- */

static void attach_counters(void)
{
	struct wc_shm *shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
				  MAP_SHARED, WC_FD_SHM, 0);

	if (shm == MAP_FAILED)
		return; /* run by hand: counters stay private */
	shm->magic = WC_SHM_MAGIC;
	shm->version = 1;
	fi_counters_attach(&shm->counters);
}

static void open_connections(void)
{
	S.conns = calloc((size_t)S.nconns, sizeof(*S.conns));
	if (!S.conns)
		fatal("out of memory");
	for (int i = 0; i < S.nconns; i++)
		S.conns[i].index = i;
	if (S.server) {
		int rc = strcmp(S.transport, "unix") == 0
			? rs_listen_unix(S.loop, S.address, &S.opts, on_connection, NULL, &S.listener)
			: rs_listen_tcp(S.loop, S.address, S.port, &S.opts, on_connection, NULL, &S.listener);

		if (rc < 0)
			fatal("listen: %s", strerror(-rc));
		line_out("listening %d", strcmp(S.transport, "unix") == 0 ? 0 : rs_listener_port(S.listener));
		return;
	}
	for (int i = 0; i < S.nconns; i++) {
		struct conn *c = &S.conns[i];
		int rc = strcmp(S.transport, "unix") == 0
			? rs_connect_unix(S.loop, S.address, &S.opts, &socket_events, c, &c->sock)
			: rs_connect_tcp(S.loop, S.address, S.port, &S.opts, &socket_events, c, &c->sock);

		if (rc < 0)
			fatal("connect: %s", strerror(-rc));
	}
}

static void free_script(void)
{
	for (size_t i = 0; i < S.ntasks; i++) {
		for (size_t k = 0; k < S.tasks[i].nops; k++)
			free(S.tasks[i].ops[k].data);
		free(S.tasks[i].ops);
	}
	for (size_t i = 0; i < S.nhandlers; i++) {
		for (size_t k = 0; k < S.handlers[i].nops; k++)
			free(S.handlers[i].ops[k].data);
		free(S.handlers[i].ops);
	}
	free(S.tasks);
	free(S.handlers);
	free(S.sync_task);
	for (int i = 0; S.conns && i < S.nconns; i++)
		if (!S.conns[i].last_owned)
			free(S.conns[i].last);
	while (S.owned) {
		struct owned_buf *ob = S.owned;

		S.owned = ob->next;
		free(ob->bytes);
		free(ob);
	}
	free(S.conns);
}

int main(void)
{
	int rc;

	attach_counters();
	if (fi_init() < 0)
		fatal("the fault gate did not start (WIRECHECK_FAULTS)");
	read_script();
	rc = rs_loop_new(&S.loop);
	if (rc < 0)
		fatal("loop: %s", strerror(-rc));
	rs_loop_set_hook(S.loop, task_hook, NULL);
	open_connections();
	rc = rs_loop_run(S.loop);
	if (rc < 0)
		fatal("loop: %s", strerror(-rc));
	if (S.next_task <= S.ntasks)
		line_out("note the loop ended before task %zu", S.next_task + 1);
	line_out("stats bytes_moved=%llu allocations=%llu bytes_copied=%llu",
		 (unsigned long long)rs_stats.bytes_moved,
		 (unsigned long long)rs_stats.allocations,
		 (unsigned long long)rs_stats.bytes_copied);
	if (rs_loop_free(S.loop) < 0)
		fatal("loop still busy at exit");
	fi_disarm_all();
	free_script();
	return 0;
}
