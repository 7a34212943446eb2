/*
 * subject.c: libuv-subject, libuv's streams as a wirecheck subject
 * (docs/subjects.md).
 *
 * It speaks the subject protocol (docs/subject-protocol.md) as
 * refstack-subject does, and performs each operation with libuv:
 * write is uv_try_write (a write without a callback, while libuv holds
 * nothing unsent) then uv_write of what is left; a write with a callback is
 * uv_write; end is uv_write and uv_shutdown; destroy is uv_close; pause and
 * resume are uv_read_stop and uv_read_start. libuv holds the caller's buffer
 * until the write callback, so each uv_write gets a copy that the callback
 * frees.
 *
 * It is not linked against the gate: libuv calls libc itself, so the
 * subject runs with the gate preloaded (`wirecheck run --subject libuv` sets
 * LD_PRELOAD and WIRECHECK_SHM_FD=5), as node does; the script's faults and
 * the disarm operation reach the gate as commands written to fd 5.
 *
 * What libuv has no notion of, the subject defines, the way node:net does:
 * - write#K returns false when, after the write, libuv holds 16 KiB or
 *   more unsent (uv_stream_get_write_queue_size(), node's high-water mark),
 *   true otherwise; `drain` is reported in the write callback that empties
 *   the queue after a false, unless end() was called;
 * - after end(), the shutdown callback reports end()'s callback, then
 *   `finish`; the socket closes once it finished and the peer ended, or at
 *   destroy; without allow-half-open, the peer's end ends ours before the
 *   `eof` handlers run, so that a write there fails with EPIPE
 *   (docs/scenario-language.md, "allow-half-open");
 * - a loop task is one callback of libuv into the subject (a read, a write
 *   or shutdown completion, a connection, a posted task), with the
 *   microtasks it queued, which run when it returns.
 * cork and uncork have no libuv equivalent: the subject answers
 * "fatal unsupported cork: REASON" before connecting.
 */
#include "protocol.h"
#include "script_read.h"
#include "script_run.h"
#include "subject.h"
#include "subject_bufs.h"
#include "subject_pipe.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#define HIGH_WATER 16384 /* write() returns false from here (node's mark) */

struct conn {
	int index;
	union {
		uv_tcp_t tcp;
		uv_pipe_t pipe;
		uv_stream_t stream;
		uv_handle_t handle;
	} h;
	uv_connect_t connect_req;
	uv_shutdown_t shutdown_req;
	int open;          /* the handle is initialised and not closing */
	int closed;        /* its close callback ran */
	int ended;         /* end() was called */
	int finished;      /* the shutdown completed */
	int peer_ended;    /* EOF read */
	int destroy_soon;  /* destroy once finished */
	int end_cb;        /* end() asked for a callback */
	int need_drain;    /* a write returned false */
	int had_error;
	int failed;        /* a write failed: bytes_written is frozen */
	uint64_t seq;      /* bytes handed to write()/end(), for the pattern */
	uint64_t accepted; /* bytes libuv accepted */
	uint64_t written;  /* the kernel took (sampled) */
	int writes;
	/* The subject's buffer of the last write or write-owned, for
	 * overwrite; a write-owned's stays on S.owned until the end (libuv
	 * may still hold it). */
	struct sb_last last;
};

struct wreq {
	uv_write_t req;
	struct conn *c;
	int number;        /* write#number, 0 for end()'s bytes */
	int cb;
	int owned;         /* write-owned: the callback is its release */
	unsigned char *buf; /* freed by the callback; NULL when owned */
};

/* A posted task or a microtask. */
struct job {
	void (*fn)(void *);
	void *arg;
	struct job *next;
};

static struct {
	struct sr_script sc;      /* the script (protocol/script_read.h) */
	struct conn *conns;
	int connected;
	size_t task_done;        /* a script task ended: take its end */
	uint64_t loop_task;
	int depth;
	uv_loop_t *loop;
	union {
		uv_tcp_t tcp;
		uv_pipe_t pipe;
		uv_stream_t stream;
		uv_handle_t handle;
	} listener;
	int listening;
	uv_check_t check;
	uv_idle_t idle;
	struct job *posted, **posted_tail;
	struct job *micro, **micro_tail;
	struct sb_owned *owned;   /* every write-owned buffer */
} S;

/* ---- the event pipe (protocol/subject_pipe.c) --------------------------- */

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		sp_fatal("out of memory");
	return p;
}

static uint64_t taken(struct conn *c)
{
	if (c->open && !c->failed) {
		size_t q = uv_stream_get_write_queue_size(&c->h.stream);

		c->written = c->accepted >= q ? c->accepted - q : 0;
	}
	return c->written;
}

/* Tasks are numbered by sp_event, as refstack-subject's are. */
static void event(int conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void event(int conn, const char *fmt, ...)
{
	char text[768];
	va_list ap;

	if (conn >= 0 && conn < S.sc.nconns)
		(void)taken(&S.conns[conn]);
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	sp_event(S.loop_task, conn, "%s", text);
}


/* ---- tasks ------------------------------------------------------------------ */

static void push(struct job ***tail, void (*fn)(void *), void *arg)
{
	struct job *j = xmalloc(sizeof(*j));

	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	**tail = j;
	*tail = &j->next;
}

/* A callback of libuv into the subject begins a loop task; when it returns,
 * the microtasks it queued run (and those they queue), then the end of a
 * script task is taken: its sync point, and the next task posted. */
static void enter(void)
{
	if (S.depth++ == 0)
		S.loop_task++;
}

static void leave(void)
{
	if (S.depth > 1) {
		S.depth--;
		return;
	}
	while (S.micro) {
		struct job *j = S.micro;

		S.micro = j->next;
		if (!S.micro)
			S.micro_tail = &S.micro;
		j->fn(j->arg);
		free(j);
	}
	S.depth--;
	if (S.task_done) {
		size_t n = S.task_done;

		S.task_done = 0;
		sr_run_task_end(n);
	}
}

static void on_idle(uv_idle_t *h)
{
	(void)h; /* only keeps the poll from blocking while tasks wait */
}

/* Posted tasks run after the poll phase of a later loop iteration, each a
 * loop task of its own; those posted meanwhile wait for the next one. */
static void on_check(uv_check_t *h)
{
	struct job *list = S.posted;

	(void)h;
	S.posted = NULL;
	S.posted_tail = &S.posted;
	while (list) {
		struct job *j = list;

		list = j->next;
		enter();
		j->fn(j->arg);
		leave();
		free(j);
	}
	if (!S.posted)
		(void)uv_idle_stop(&S.idle);
}

static void post(void (*fn)(void *), void *arg)
{
	push(&S.posted_tail, fn, arg);
	if (uv_idle_start(&S.idle, on_idle) < 0)
		sp_fatal("uv_idle_start");
}

/* ---- operations ------------------------------------------------------------- */

static void maybe_close(struct conn *c);

static void close_conn(struct conn *c, int had_error);

static void on_write(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct conn *c = w->c;

	enter();
	if (status < 0)
		c->failed = 1;
	if (w->owned)
		event(c->index, "write#%d released %s", w->number,
		      status == 0 ? "ok" : uv_err_name(status));
	else if (w->cb && w->number)
		event(c->index, "write#%d cb %s", w->number, status == 0 ? "ok" : uv_err_name(status));
	if ((w->cb || w->owned) && w->number)
		sr_run_handlers(SR_EV_WRITE_CB, c->index);
	if (status < 0 && status != UV_ECANCELED && c->open) {
		event(c->index, "error %s write", uv_err_name(status));
		close_conn(c, 1);
	} else if (status == 0 && c->need_drain && !c->ended && c->open &&
		   uv_stream_get_write_queue_size(&c->h.stream) == 0) {
		c->need_drain = 0;
		event(c->index, "drain");
		sr_run_handlers(SR_EV_DRAIN, c->index);
	}
	free(w->buf);
	free(w);
	leave();
}

/* Hands bytes to libuv; with_try: uv_try_write first. Returns 0 or a libuv
 * error; on 0, *queued says whether libuv holds bytes unsent. */
static int send_bytes(struct conn *c, unsigned char *bytes, size_t len, int number,
		      int cb, int with_try, int owned)
{
	size_t off = 0;
	struct wreq *w;
	uv_buf_t b;
	int rc;

	if (with_try && len > 0 && uv_stream_get_write_queue_size(&c->h.stream) == 0) {
		b = uv_buf_init((char *)bytes, (unsigned)len);
		rc = uv_try_write(&c->h.stream, &b, 1);
		if (rc >= 0) {
			off = (size_t)rc;
			c->accepted += (size_t)rc;
		} else if (rc != UV_EAGAIN) {
			free(bytes);
			return rc;
		}
		if (off == len) {
			free(bytes);
			return 0;
		}
	}
	w = xmalloc(sizeof(*w));
	w->c = c;
	w->number = number;
	w->cb = cb;
	w->owned = owned;
	w->buf = owned ? NULL : bytes;
	b = uv_buf_init((char *)bytes + off, (unsigned)(len - off));
	rc = uv_write(&w->req, &c->h.stream, &b, 1, on_write);
	if (rc < 0) {
		free(w->buf);
		free(w);
		return rc;
	}
	c->accepted += len - off;
	return 0;
}

static unsigned char *copy_of(const unsigned char *bytes, size_t len)
{
	unsigned char *copy = xmalloc(len);

	if (len > 0)
		memcpy(copy, bytes, len);
	return copy;
}

/* A write that failed in its call (libuv's UV_EPIPE after uv_shutdown, or
 * the kernel's error to uv_try_write) fails the stream as a write callback's
 * error does: reported, then closed with an error, as node destroys a
 * stream on a write after end. Left open, a write still queued behind it
 * would be retried on every writable event for as long as the peer does not
 * read. */
static void write_failed(struct conn *c, int rc)
{
	if (!c->open)
		return;
	c->failed = 1;
	event(c->index, "error %s write", uv_err_name(rc));
	close_conn(c, 1);
}

void sr_host_write(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];
	int number = ++c->writes;
	unsigned char *user;
	int rc;

	if (c->closed || !c->open) {
		event(c->index, "write#%d %zu -> EBADF (closed)", number, op->len);
		return;
	}
	/* The subject's buffer stays its own (overwrite changes it): libuv,
	 * which holds what it is given until the callback, gets a copy. */
	user = sb_op_bytes(op, c->seq);
	rc = c->ended ? UV_EPIPE
		      : send_bytes(c, copy_of(user, op->len), op->len, number, op->cb,
				   !op->cb, 0);
	sb_keep(&c->last, user, op->len, number);
	c->seq += op->len;
	if (rc < 0) {
		event(c->index, "write#%d %zu -> %s", number, op->len, uv_err_name(rc));
		write_failed(c, rc);
		return;
	}
	if (uv_stream_get_write_queue_size(&c->h.stream) >= HIGH_WATER)
		c->need_drain = 1;
	event(c->index, "write#%d %zu -> %s", number, op->len,
	      uv_stream_get_write_queue_size(&c->h.stream) >= HIGH_WATER ? "false" : "true");
}

/* write-owned: uv_write of the subject's own buffer, by reference, as
 * libuv takes every buffer: an overwrite before the release changes what
 * the kernel gets after it. The release is the write callback. */
void sr_host_write_owned(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];
	int number = ++c->writes;
	unsigned char *bytes;
	int rc;

	if (c->closed || !c->open) {
		event(c->index, "write#%d %zu owned -> EBADF (closed)", number, op->len);
		return;
	}
	bytes = sb_keep_owned(&c->last, &S.owned, op, c->seq, number);
	c->seq += op->len;
	rc = c->ended ? UV_EPIPE : send_bytes(c, bytes, op->len, number, 1, 0, 1);
	if (rc < 0) {
		event(c->index, "write#%d %zu owned -> %s", number, op->len, uv_err_name(rc));
		write_failed(c, rc);
		return;
	}
	if (uv_stream_get_write_queue_size(&c->h.stream) >= HIGH_WATER)
		c->need_drain = 1;
	event(c->index, "write#%d %zu owned -> %s", number, op->len,
	      uv_stream_get_write_queue_size(&c->h.stream) >= HIGH_WATER ? "false" : "true");
}

void sr_host_overwrite(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];
	char text[64];

	sb_overwrite(&c->last, op->fill, text, sizeof(text));
	event(c->index, "%s", text);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = req->data;

	enter();
	if (c->end_cb) {
		event(c->index, "end cb %s", status == 0 ? "ok" : uv_err_name(status));
		sr_run_handlers(SR_EV_END_CB, c->index);
	}
	if (status == 0 && c->open) {
		c->finished = 1;
		event(c->index, "finish");
		sr_run_handlers(SR_EV_FINISH, c->index);
		if (c->destroy_soon && c->open)
			close_conn(c, 0);
		else
			maybe_close(c);
	} else if (status < 0 && status != UV_ECANCELED && c->open) {
		c->failed = 1;
		event(c->index, "error %s shutdown", uv_err_name(status));
		close_conn(c, 1);
	}
	leave();
}

static int do_end(struct conn *c)
{
	c->ended = 1;
	c->shutdown_req.data = c;
	return uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown);
}

void sr_host_end(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];
	int rc = 0;

	if (c->closed || !c->open) {
		event(c->index, "end %zu -> EBADF (closed)", op->len);
		return;
	}
	if (c->ended && op->len > 0) {
		/* Bytes after end() are a write after end: refused in the call
		 * (UV_EPIPE, as uv_write after uv_shutdown), and the stream fails
		 * as for sr_host_write's. Reported "ok", they were dropped unsent. */
		c->seq += op->len;
		event(c->index, "end %zu -> %s", op->len, uv_err_name(UV_EPIPE));
		write_failed(c, UV_EPIPE);
		return;
	}
	if (c->ended) {
		event(c->index, "end %zu -> ok", op->len);
		return;
	}
	if (op->len > 0)
		rc = send_bytes(c, sb_op_bytes(op, c->seq), op->len, 0, 0, 1, 0);
	c->seq += op->len;
	c->end_cb = op->cb;
	if (rc == 0)
		rc = do_end(c);
	event(c->index, "end %zu -> %s", op->len, rc < 0 ? uv_err_name(rc) : "ok");
	/* end()'s bytes refused in the call (uv_try_write's EPIPE) fail the
	 * stream as a write's do: left open, nothing would ever end it. */
	if (rc < 0)
		write_failed(c, rc);
}

static void on_close(uv_handle_t *h)
{
	struct conn *c = h->data;

	enter();
	c->closed = 1;
	event(c->index, "close had_error=%d bytes_written=%llu", c->had_error,
	      (unsigned long long)c->written);
	sr_run_handlers(SR_EV_CLOSE, c->index);
	leave();
}

static void close_conn(struct conn *c, int had_error)
{
	if (!c->open)
		return;
	(void)taken(c);
	c->open = 0;
	c->had_error |= had_error;
	uv_close(&c->h.handle, on_close);
}

/* Both directions over: the stream closes (node's rule). */
static void maybe_close(struct conn *c)
{
	if (c->open && c->finished && c->peer_ended)
		close_conn(c, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	buf->base = malloc(suggested);
	buf->len = buf->base ? suggested : 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = s->data;

	enter();
	free(buf->base);
	if (nread > 0) {
		event(c->index, "data %zd", nread);
		sr_run_handlers(SR_EV_DATA, c->index);
	} else if (nread == UV_EOF) {
		c->peer_ended = 1;
		(void)uv_read_stop(s);
		if (c->open && !S.sc.half_open && !c->ended && do_end(c) < 0)
			close_conn(c, 0);
		event(c->index, "eof"); /* the peer's FIN; "end" names end() */
		sr_run_handlers(SR_EV_EOF, c->index);
		maybe_close(c);
	} else if (nread < 0) {
		event(c->index, "error %s read", uv_err_name((int)nread));
		close_conn(c, 1);
	}
	leave();
}

void sr_host_run_op(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];

	event(ci, "%s%s", sr_op_names[op->kind], c->open ? "" : " (closed)");
	if (!c->open)
		return;
	switch (op->kind) {
	case SR_OP_DESTROY:
		close_conn(c, 0);
		break;
	case SR_OP_DESTROY_SOON:
		c->destroy_soon = 1;
		if (c->finished)
			close_conn(c, 0);
		else if (!c->ended && do_end(c) < 0)
			close_conn(c, 0);
		break;
	case SR_OP_PAUSE:
		(void)uv_read_stop(&c->h.stream);
		break;
	case SR_OP_RESUME:
		if (!c->peer_ended && uv_read_start(&c->h.stream, on_alloc, on_read) < 0)
			event(ci, "error EINVAL read_start");
		break;
	default:
		break;
	}
}

/* ---- the interpreter's host (script_run.h) -------------------------------- */

int sr_host_pending(int conn)
{
	struct conn *c = &S.conns[conn];

	return c->open && uv_stream_get_write_queue_size(&c->h.stream) > 0;
}

uint64_t sr_host_written(int conn)
{
	return taken(&S.conns[conn]);
}

void sr_host_event(int conn, const char *text)
{
	event(conn, "%s", text);
}

void sr_host_post(void *job)
{
	post(sr_run_job, job);
}

void sr_host_microtask(void *job)
{
	push(&S.micro_tail, sr_run_job, job);
}

/* The end is taken in leave(), once the task's microtasks have run. */
void sr_host_task_ran(size_t n)
{
	S.task_done = n;
}

/* The gate is the preload library's, reached by its control command. */
void sr_host_disarm(void)
{
	(void)uvs_gate_command("disarm");
}

/* A script task starts, goes on or waits: nothing for libuv (its end is
 * taken in leave()). */
void sr_host_task_runs(size_t n)
{
	(void)n;
}

void sr_host_task_waits(size_t n)
{
	(void)n;
}

/* The ops on the process: libuv holds nothing back, so libc's. */
int sr_host_raise(int sig)
{
	return kill(getpid(), sig) < 0 ? -errno : 0;
}

void sr_host_abort(void)
{
	abort();
}

void sr_host_exit(int status)
{
	exit(status);
}

int sr_host_execve(const char *path, char *const argv[], char *const envp[])
{
	return execve(path, argv, envp) < 0 ? -errno : 0;
}


static void all_connected(void)
{
	sr_run_start();
	sr_run_next_task();
}

/* ---- connections ------------------------------------------------------------ */

static void start_reading(struct conn *c)
{
	int rc = uv_read_start(&c->h.stream, on_alloc, on_read);

	if (rc < 0)
		sp_fatal("uv_read_start: %s", uv_strerror(rc));
}

static void on_connect(uv_connect_t *req, int status)
{
	struct conn *c = req->data;

	enter();
	if (status < 0)
		sp_fatal("connect: %s", uv_strerror(status));
	start_reading(c);
	event(c->index, "connect");
	if (++S.connected == S.sc.nconns)
		all_connected();
	leave();
}

static void on_listener_close(uv_handle_t *h)
{
	(void)h;
}

static int init_stream(struct conn *c)
{
	int rc = strcmp(S.sc.transport, "unix") == 0 ? uv_pipe_init(S.loop, &c->h.pipe, 0)
						   : uv_tcp_init(S.loop, &c->h.tcp);

	c->h.handle.data = c;
	c->open = rc == 0;
	return rc;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct conn *c;

	enter();
	if (status < 0)
		sp_fatal("accept: %s", uv_strerror(status));
	if (S.connected >= S.sc.nconns)
		sp_fatal("more connections than the script's %d", S.sc.nconns);
	c = &S.conns[S.connected];
	if (init_stream(c) < 0 || uv_accept(server, &c->h.stream) < 0)
		sp_fatal("uv_accept failed");
	start_reading(c);
	event(c->index, "accept");
	if (++S.connected == S.sc.nconns) {
		uv_close(&S.listener.handle, on_listener_close);
		all_connected();
	}
	leave();
}

static void open_connections(void)
{
	int unix_socket = strcmp(S.sc.transport, "unix") == 0;
	int rc;

	S.conns = calloc((size_t)S.sc.nconns, sizeof(*S.conns));
	if (!S.conns)
		sp_fatal("out of memory");
	for (int i = 0; i < S.sc.nconns; i++)
		S.conns[i].index = i;
	if (S.sc.server) {
		struct sockaddr_in sa;
		struct sockaddr_storage bound;
		int len = sizeof(bound);

		if (unix_socket) {
			rc = uv_pipe_init(S.loop, &S.listener.pipe, 0);
			if (rc == 0)
				rc = uv_pipe_bind(&S.listener.pipe, S.sc.address);
		} else {
			rc = uv_tcp_init(S.loop, &S.listener.tcp);
			if (rc == 0)
				rc = uv_ip4_addr(S.sc.address, S.sc.port, &sa);
			if (rc == 0)
				rc = uv_tcp_bind(&S.listener.tcp, (const struct sockaddr *)&sa, 0);
		}
		if (rc == 0)
			rc = uv_listen(&S.listener.stream, 128, on_connection);
		if (rc < 0)
			sp_fatal("listen: %s", uv_strerror(rc));
		if (unix_socket) {
			sp_line("listening 0");
			return;
		}
		rc = uv_tcp_getsockname(&S.listener.tcp, (struct sockaddr *)&bound, &len);
		if (rc < 0)
			sp_fatal("getsockname: %s", uv_strerror(rc));
		sp_line("listening %d", ntohs(((struct sockaddr_in *)&bound)->sin_port));
		return;
	}
	for (int i = 0; i < S.sc.nconns; i++) {
		struct conn *c = &S.conns[i];

		rc = init_stream(c);
		if (rc < 0)
			sp_fatal("init: %s", uv_strerror(rc));
		c->connect_req.data = c;
		if (unix_socket) {
			uv_pipe_connect(&c->connect_req, &c->h.pipe, S.sc.address, on_connect);
		} else {
			struct sockaddr_in sa;

			rc = uv_ip4_addr(S.sc.address, S.sc.port, &sa);
			if (rc == 0)
				rc = uv_tcp_connect(&c->connect_req, &c->h.tcp,
						    (const struct sockaddr *)&sa, on_connect);
			if (rc < 0)
				sp_fatal("connect: %s", uv_strerror(rc));
		}
	}
}

/* ---- reading the script ---------------------------------------------------- */

/* Reads the script up to "run" with the protocol's reader
 * (protocol/script_read.c) for the interpreter (script_run.c), then notes
 * each variant: they select strategies of the reference stack, which libuv
 * does not have. */
static void read_script(void)
{
	sp_read_script(&S.sc);
	sr_run_init(&S.sc);
	for (size_t i = 0; i < S.sc.nvariants; i++)
		sp_line("note variant %s=%s is the reference stack's; libuv ignores it",
			 S.sc.variants[i].name, S.sc.variants[i].value);
}

static void free_script(void)
{
	for (int i = 0; S.conns && i < S.sc.nconns; i++)
		sb_last_free(&S.conns[i].last);
	sb_owned_free(&S.owned);
	free(S.conns);
	sr_free(&S.sc);
}

int main(void)
{
	int rc;

	/* libuv writes sockets with write(2), which raises SIGPIPE on a socket
	 * whose peer is gone; a libuv program ignores it (node does so at
	 * startup) to get EPIPE from the write instead of dying. */
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	if (sigemptyset(&ign.sa_mask) < 0 || sigaction(SIGPIPE, &ign, NULL) < 0)
		sp_fatal("sigaction SIGPIPE: %s", strerror(errno));
	read_script();
	uvs_refuse_unsupported(&S.sc);
	uvs_refuse_unreached_faults(&S.sc);
	uvs_arm_faults(&S.sc);
	S.posted_tail = &S.posted;
	S.micro_tail = &S.micro;
	S.loop = uv_default_loop();
	if (!S.loop || uv_check_init(S.loop, &S.check) < 0 ||
	    uv_check_start(&S.check, on_check) < 0 || uv_idle_init(S.loop, &S.idle) < 0)
		sp_fatal("the libuv loop did not start");
	uv_unref((uv_handle_t *)&S.check);
	open_connections();
	rc = uv_run(S.loop, UV_RUN_DEFAULT);
	if (rc < 0)
		sp_fatal("uv_run: %s", uv_strerror(rc));
	sr_run_note_unfinished();
	uv_close((uv_handle_t *)&S.check, NULL);
	uv_close((uv_handle_t *)&S.idle, NULL);
	(void)uv_run(S.loop, UV_RUN_DEFAULT);
	if (uv_loop_close(S.loop) < 0)
		sp_fatal("loop still busy at exit");
	free_script();
	return 0;
}
