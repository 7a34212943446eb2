/*
 * http.c: HTTP/1.1 on a stream socket, with chunked responses (after the
 * uNetworking/uWebSockets pull request "Optimize chunked write path and
 * add tryWrite"). Requests are parsed by http_parse.c, bodies framed by
 * chunk.c; this file does no framing and no syscall of its own: bytes go
 * to the kernel through the socket (socket.c), which goes through io.c.
 *
 * One write core (res_emit) serves write(), try_write() and end(): it plans
 * the call's bytes with the chunk encoder (head, framing, body, terminator),
 * sends what the kernel takes with the strategy of rs_config.chunked, and
 * then either queues the rest (write, end) or leaves it to the caller
 * (try_write), except a terminator whose body is out, which it queues.
 */
#include "rs_internal.h"

#include "chunk.h"
#include "http_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rs_http_res {
	rs_http_conn *conn;
	char *head;            /* status line and fields, blank line included */
	size_t head_len;
	size_t head_off;       /* its bytes out (or queued) */
	int status;
	int keep_alive;
	int ended;             /* the body and the terminator are decided */
	struct rs_chunk chunk;
	rs_http_writable_cb on_writable;
	void *writable_arg;
};

struct rs_http_conn {
	rs_socket *sock;       /* NULL once closed */
	struct rs_socket_events ev;
	void *ev_arg;
	rs_http_request_cb cb;
	void *arg;
	size_t max_head;
	char *in;              /* bytes read, not yet a whole request */
	size_t in_len;
	size_t in_cap;
	rs_http_res *res;      /* the response in progress, or the last one */
	int failed;            /* read no more: a bad request was answered,
				* or a response that closes has ended */
	int in_callback;
	int next_queued;       /* a microtask will look for the next request */
	int closed;            /* freed by that microtask, not on close */
};

static void http_process(rs_http_conn *c);

/* ---- responses ----------------------------------------------------------- */

static int head_build(rs_http_res *r, int status, const char *fields)
{
	size_t flen = fields ? strlen(fields) : 0;
	size_t cap = flen + 128;
	char *h = malloc(cap);
	int n;

	if (!h)
		return -ENOMEM;
	n = snprintf(h, cap,
		     "HTTP/1.1 %d %s\r\nTransfer-Encoding: chunked\r\n%.*s%s\r\n",
		     status, rs_http_reason(status), (int)flen, fields ? fields : "",
		     r->keep_alive ? "" : "Connection: close\r\n");
	if (n < 0 || (size_t)n >= cap) {
		free(h);
		return -EINVAL;
	}
	free(r->head);
	r->head = h;
	r->head_len = (size_t)n;
	r->head_off = 0;
	r->status = status;
	return 0;
}

int rs_http_res_head(rs_http_res *r, int status, const char *fields)
{
	size_t flen = fields ? strlen(fields) : 0;

	if (r->head_off > 0 || r->chunk.offset > 0 || r->ended)
		return -EALREADY;
	if (status < 100 || status > 999)
		return -EINVAL;
	if (flen > 0 && (flen < 2 || fields[flen - 2] != '\r' ||
			 fields[flen - 1] != '\n'))
		return -EINVAL;
	return head_build(r, status, fields);
}

uint64_t rs_http_res_offset(const rs_http_res *r)
{
	return r->chunk.offset;
}

int rs_http_res_ended(const rs_http_res *r)
{
	return r->ended;
}

void rs_http_res_on_writable(rs_http_res *r, rs_http_writable_cb cb,
			     void *arg)
{
	r->on_writable = cb;
	r->writable_arg = arg;
}

static void next_task(rs_loop *loop, void *arg)
{
	rs_http_conn *c = arg;

	(void)loop;
	c->next_queued = 0;
	if (c->closed) {
		free(c->res ? c->res->head : NULL);
		free(c->res);
		free(c->in);
		free(c);
		return;
	}
	http_process(c);
}

static void queue_next(rs_http_conn *c)
{
	if (c->next_queued || !c->sock)
		return;
	if (rs_microtask(rs__socket_loop(c->sock), next_task, c) == 0)
		c->next_queued = 1;
}

/* The response is decided whole: end the connection after it unless it
 * is kept alive, and look for the next request. */
static void res_ended(rs_http_res *r)
{
	rs_http_conn *c = r->conn;

	r->ended = 1;
	if (!c->sock)
		return;
	if (!r->keep_alive) {
		c->failed = 1;  /* no request after this one is read */
		(void)rs_socket_end(c->sock, NULL, 0, NULL, NULL);
		return;
	}
	queue_next(c);
}

/* The iovecs of a call: the head's rest, then the encoder's plan. */
struct emit {
	struct rs_chunk_plan plan;
	struct iovec iov[RS_CHUNK_MAX_IOV + 1];
	int body_seg[RS_CHUNK_MAX_IOV + 1];
	int n;
	size_t total;
	size_t head;           /* head bytes in the call */
};

static void emit_build(rs_http_res *r, struct emit *e)
{
	e->n = 0;
	e->total = 0;
	e->head = r->head_len - r->head_off;
	if (e->head > 0) {
		e->iov[0].iov_base = r->head + r->head_off;
		e->iov[0].iov_len = e->head;
		e->body_seg[0] = 0;
		e->n = 1;
	}
	for (int i = 0; i < e->plan.n; i++) {
		e->iov[e->n] = e->plan.iov[i];
		e->body_seg[e->n] = e->plan.part[i] == RS_CHUNK_CONT ||
				    e->plan.part[i] == RS_CHUNK_NEW;
		e->n++;
	}
	e->total = e->head + e->plan.total;
}

/* The iovecs from byte `from` of e to its end, in out; returns their
 * count. */
static int emit_rest(const struct emit *e, size_t from, struct iovec *out)
{
	int k = 0;

	for (int i = 0; i < e->n; i++) {
		size_t len = e->iov[i].iov_len;

		if (from >= len) {
			from -= len;
			continue;
		}
		out[k].iov_base = (char *)e->iov[i].iov_base + from;
		out[k].iov_len = len - from;
		from = 0;
		k++;
	}
	return k;
}

/* Copies the iovecs into one buffer (at most cap bytes fit). */
static size_t gather(const struct iovec *iov, int n, char *buf, size_t cap)
{
	size_t off = 0;

	for (int i = 0; i < n && off < cap; i++) {
		size_t len = iov[i].iov_len < cap - off ? iov[i].iov_len : cap - off;

		memcpy(buf + off, iov[i].iov_base, len);
		off += len;
	}
	return off;
}

static char copy_buffer[RS_HTTP_COPY_MAX];

/* One send of one run of iovecs: copied into one buffer when they are
 * framing (at most a head and a chunk header), else as they are. */
static ssize_t send_run(rs_socket *s, const struct iovec *iov, int n,
			int more, int mark)
{
	if (n > 1) {
		size_t len = 0;

		for (int i = 0; i < n; i++)
			len += iov[i].iov_len;
		if (len <= sizeof(copy_buffer)) {
			struct iovec one = { copy_buffer,
					     gather(iov, n, copy_buffer, len) };

			return rs__socket_try_sendv(s, &one, 1, more, mark);
		}
	}
	return rs__socket_try_sendv(s, iov, n, more, mark);
}

/*
 * Sends e's bytes with the configured strategy until the kernel takes
 * less than asked. Returns the bytes taken, or -errno (socket failed).
 *
 * fixed: at most RS_HTTP_COPY_MAX bytes in all: one send of one copied
 * buffer. Larger: the framing before the first body byte (head, chunk
 * header) in one send with MSG_MORE, then the rest (body, terminator) in
 * one sendmsg; a sendmsg the kernel took in part marks the socket as
 * wanting writable.
 * separate (legacy): the framing, each body part and the terminator, each
 * in a send of its own.
 */
static ssize_t emit_send(rs_socket *s, const struct emit *e, int mark)
{
	struct iovec rest[RS_CHUNK_MAX_IOV + 1];
	size_t sent = 0;

	while (sent < e->total) {
		int n = emit_rest(e, sent, rest), run = 1, more = 0;
		size_t want = 0;
		ssize_t got;

		if (rs_config.chunked == RS_CHUNKED_FIXED) {
			size_t framing = 0;

			for (int i = 0; i < e->n; i++) {
				if (e->body_seg[i])
					break;
				framing += e->iov[i].iov_len;
			}
			if (e->total <= RS_HTTP_COPY_MAX || sent >= framing) {
				run = n;
			} else {
				/* The framing's rest, held for the body. */
				size_t acc = 0;

				run = 0;
				while (run < n && acc < framing - sent)
					acc += rest[run++].iov_len;
				more = 1;
			}
		} else {
			/* Consecutive framing parts are one send; each body
			 * part is one. */
			int body = -1;
			size_t at = sent;

			for (int i = 0; i < e->n; i++) {
				if (at < e->iov[i].iov_len) {
					body = e->body_seg[i];
					for (int k = i + 1; k < e->n && !body &&
					     !e->body_seg[k]; k++)
						run++;
					break;
				}
				at -= e->iov[i].iov_len;
			}
		}
		for (int i = 0; i < run; i++)
			want += rest[i].iov_len;
		got = send_run(s, rest, run, more, mark);
		if (got < 0)
			return got;
		sent += (size_t)got;
		if ((size_t)got < want)
			break;
	}
	return (ssize_t)sent;
}

/* Accounts n bytes of e as out: the head first, then the plan. */
static size_t emit_advance(rs_http_res *r, struct emit *e, size_t n)
{
	size_t h = n < e->head ? n : e->head;

	r->head_off += h;
	return rs_chunk_advance(&r->chunk, &e->plan, n - h);
}

/* Queues the framing a final call's send left behind once its body is
 * out: it is completed internally, never a continuation of the body. That
 * is the terminator's rest and, for a call with no body bytes (the head
 * and the terminator alone), the head's rest too: a body of 0 bytes is
 * "out" before the head is. */
static void complete_framing(rs_http_res *r)
{
	struct iovec t[2];
	int n = 0;

	if (r->head_off < r->head_len) {
		t[n].iov_base = r->head + r->head_off;
		t[n].iov_len = r->head_len - r->head_off;
		n++;
	}
	n += rs_chunk_trailer(&r->chunk, &t[n]);
	if (n == 0)
		return;
	if (r->conn->sock)
		(void)rs__socket_queue_iov(r->conn->sock, t, n,
					   t[0].iov_len + (n > 1 ? t[1].iov_len : 0),
					   NULL, NULL);
	r->head_off = r->head_len;
	rs_chunk_trailer_sent(&r->chunk, SIZE_MAX);
}

/* A call that fails here returns before any byte or callback is taken:
 * on a negative return the caller's cb never runs (rs.h). A socket that
 * failed (a refused send destroys it) is refused here too, for
 * rs__socket_queue_iov would fail its callback in a microtask. */
static int res_check(rs_http_res *r)
{
	if (!r->conn->sock || rs__socket_destroyed(r->conn->sock))
		return -EBADF;
	if (r->ended)
		return -EPIPE;
	return 0;
}

/*
 * The write core. optional: try_write (never queues body bytes; returns 1
 * when the call's body is out, else 0); else write/end (queues the rest;
 * returns node's 1/0).
 */
static int res_emit(rs_http_res *r, const void *data, size_t len, int final,
		    int optional, rs_write_cb cb, void *arg)
{
	rs_socket *s = r->conn->sock;
	struct emit e;
	uint64_t body_before = r->chunk.offset;
	ssize_t got = 0;
	int rc = res_check(r);

	if (rc < 0)
		return rc;
	if (rs_chunk_plan(&r->chunk, data, len, final, &e.plan) < 0)
		return -EINVAL;
	emit_build(r, &e);
	if (optional) {
		if (e.total == 0)
			return 1;
		if (!rs__socket_can_try(s)) {
			/* Bytes wait before this call's: backpressure, seen
			 * here; on writable the caller tries again. */
			rs__socket_want_writable(s);
			return 0;
		}
		got = emit_send(s, &e, 1);
		if (got < 0)
			return (int)got;
		(void)emit_advance(r, &e, (size_t)got);
		if (r->chunk.offset - body_before < len)
			return 0;
		if (final && r->chunk.ended) {
			complete_framing(r);
			res_ended(r);
		}
		return 1;
	}
	if (rs__socket_can_try(s) && e.total > 0) {
		got = emit_send(s, &e, 0);
		if (got < 0)
			return (int)got;
	}
	{
		struct iovec rest[RS_CHUNK_MAX_IOV + 1];
		int n = emit_rest(&e, (size_t)got, rest);

		rc = rs__socket_queue_iov(s, rest, n, e.total, cb, arg);
	}
	(void)emit_advance(r, &e, e.total);
	if (final)
		res_ended(r);
	return rc;
}

int rs_http_res_write(rs_http_res *r, const void *data, size_t len,
		      rs_write_cb cb, void *arg)
{
	return res_emit(r, data, len, 0, 0, cb, arg);
}

int rs_http_res_try_write(rs_http_res *r, const void *data, size_t len,
			  int final_chunk)
{
	return res_emit(r, data, len, final_chunk, 1, NULL, NULL);
}

int rs_http_res_end(rs_http_res *r, const void *data, size_t len,
		    rs_write_cb cb, void *arg)
{
	int rc = res_emit(r, data, len, 1, 0, cb, arg);

	return rc < 0 ? rc : 0;
}

/* ---- requests ------------------------------------------------------------ */

/* A bad request: its status, "Connection: close", and our FIN. */
static void http_refuse(rs_http_conn *c, int status)
{
	char buf[160];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n"
			 "Connection: close\r\n\r\n",
			 status, rs_http_reason(status));

	c->failed = 1;
	c->in_len = 0;
	if (n > 0 && (size_t)n < sizeof(buf))
		(void)rs_socket_end(c->sock, buf, (size_t)n, NULL, NULL);
}

static void http_process(rs_http_conn *c)
{
	while (c->sock && !c->failed && !c->in_callback &&
	       (!c->res || c->res->ended) && c->in_len > 0) {
		struct rs_http_request req;
		ssize_t head = rs_http_parse_request(c->in, c->in_len,
						     c->max_head, &req);
		size_t whole;
		rs_http_res *r;

		if (head == 0)
			return;
		if (head < 0) {
			http_refuse(c, (int)-head);
			return;
		}
		if (req.content_length > RS_HTTP_MAX_BODY) {
			http_refuse(c, 413);
			return;
		}
		whole = (size_t)head + (size_t)req.content_length;
		if (c->in_len < whole)
			return;
		r = calloc(1, sizeof(*r));
		if (!r) {
			http_refuse(c, 500);
			return;
		}
		r->conn = c;
		r->keep_alive = req.keep_alive;
		rs_chunk_init(&r->chunk);
		if (head_build(r, 200, NULL) < 0) {
			free(r);
			http_refuse(c, 500);
			return;
		}
		if (c->res) {
			free(c->res->head);
			free(c->res);
		}
		c->res = r;
		c->in_callback = 1;
		c->cb(c, r, &req, c->in + head, (size_t)req.content_length,
		      c->arg);
		c->in_callback = 0;
		/* The callback's bytes are done with: drop the request. */
		memmove(c->in, c->in + whole, c->in_len - whole);
		c->in_len -= whole;
	}
}

static void on_data(rs_socket *s, const char *data, size_t len, void *arg)
{
	rs_http_conn *c = arg;

	if (c->ev.on_data)
		c->ev.on_data(s, data, len, c->ev_arg);
	if (c->failed || !c->sock)
		return;
	if (c->in_len + len > c->in_cap) {
		size_t cap = c->in_cap ? c->in_cap : 4096;
		char *in;

		while (cap < c->in_len + len)
			cap *= 2;
		in = realloc(c->in, cap);
		if (!in) {
			http_refuse(c, 500);
			return;
		}
		c->in = in;
		c->in_cap = cap;
	}
	memcpy(c->in + c->in_len, data, len);
	c->in_len += len;
	http_process(c);
}

static void on_writable(rs_socket *s, void *arg)
{
	rs_http_conn *c = arg;
	rs_http_res *r = c->res;

	(void)s;
	if (r && !r->ended && r->on_writable)
		r->on_writable(r, r->chunk.offset, r->writable_arg);
}

#define FORWARD(name, ...)                                              \
	do {                                                            \
		if (c->ev.name)                                         \
			c->ev.name(__VA_ARGS__);                        \
	} while (0)

static void on_connect(rs_socket *s, void *arg)
{
	rs_http_conn *c = arg;

	FORWARD(on_connect, s, c->ev_arg);
}

static void on_end(rs_socket *s, void *arg)
{
	rs_http_conn *c = arg;

	FORWARD(on_end, s, c->ev_arg);
}

static void on_drain(rs_socket *s, void *arg)
{
	rs_http_conn *c = arg;

	FORWARD(on_drain, s, c->ev_arg);
}

static void on_finish(rs_socket *s, void *arg)
{
	rs_http_conn *c = arg;

	FORWARD(on_finish, s, c->ev_arg);
}

static void on_error(rs_socket *s, int code, const char *syscall, void *arg)
{
	rs_http_conn *c = arg;

	FORWARD(on_error, s, code, syscall, c->ev_arg);
}

static void on_close(rs_socket *s, int had_error, void *arg)
{
	rs_http_conn *c = arg;

	FORWARD(on_close, s, had_error, c->ev_arg);
	c->sock = NULL;
	if (c->next_queued) {
		c->closed = 1;  /* next_task frees it */
		return;
	}
	if (c->res) {
		free(c->res->head);
		free(c->res);
	}
	free(c->in);
	free(c);
}

int rs_http_attach(rs_socket *s, size_t max_head,
		   const struct rs_socket_events *ev, void *ev_arg,
		   rs_http_request_cb cb, void *arg, rs_http_conn **out)
{
	static const struct rs_socket_events http_events = {
		.on_connect = on_connect, .on_data = on_data, .on_end = on_end,
		.on_drain = on_drain, .on_finish = on_finish,
		.on_error = on_error, .on_close = on_close,
	};
	rs_http_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->sock = s;
	if (ev)
		c->ev = *ev;
	c->ev_arg = ev_arg;
	c->cb = cb;
	c->arg = arg;
	c->max_head = max_head ? max_head : RS_HTTP_MAX_HEAD;
	rs_socket_set_events(s, &http_events, c);
	rs__socket_on_writable(s, on_writable, c);
	*out = c;
	return 0;
}

rs_socket *rs_http_socket(const rs_http_conn *c)
{
	return c->sock;
}
