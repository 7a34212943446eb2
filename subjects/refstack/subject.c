/*
 * subject.c: refstack-subject, the reference stack as a wirecheck subject.
 *
 * It reads the script from the control pipe (docs/subject-protocol.md), opens
 * the connections, runs the tasks in order on the stack's loop and the
 * handlers on socket events (protocol/script_run.c, the interpreter; the
 * ops on the stack are here), and reports every event on the event pipe as
 * it happens, with write(2) and no buffering, so that a crash loses none.
 * HTTP responses are in subject_http.c, WebSocket connections in
 * subject_ws.c; subject.h is what the three share.
 */
#include "fi.h"
#include "protocol.h"
#include "script_run.h"
#include "subject.h"
#include "subject_bufs.h"
#include "subject_pipe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

static struct {
	char transport[8];
	char address[256];
	int port;
	int server;
	int nconns;
	struct rs_socket_options opts;
	struct sr_script script;  /* owns tasks, handlers and sync_task */
	struct conn *conns;
	int connected;
	uint64_t script_loop_task;
	size_t running_task;      /* 1-based script task running, or 0 */
	rs_loop *loop;
	rs_listener *listener;
	int http;                 /* serve HTTP on accepted connections */
	struct sb_owned *owned;   /* every write-owned buffer */
	int deferred;             /* the running script task awaits a drain */
} S;

/* The bytes the kernel took on conn, kept once its socket is gone. */
uint64_t sr_host_written(int conn)
{
	struct conn *c = &S.conns[conn];

	if (c->sock)
		c->written = rs_socket_bytes_written(c->sock);
	return c->written;
}

/* ---- operations --------------------------------------------------------- */

/* The release of a write-owned: the write's callback, reported as one. */
static void on_release(rs_socket *s, int status, void *arg)
{
	struct cb_ctx *ctx = arg;
	int conn = ctx->conn, number = ctx->number;

	(void)s;
	free(ctx);
	subj_event(conn, "write#%d released %s", number, status == 0 ? "ok" : sr_errname(status));
	sr_run_handlers(SR_EV_WRITE_CB, conn);
}

/*
 * write: rs_socket_write of the subject's own buffer (a literal copied),
 * kept for overwrite. write-owned (owned): rs_socket_write_owned of a
 * buffer that stays the subject's, so that overwrite can change it while
 * the stack holds it.
 */
static void write_op(const struct sr_op *op, int ci, int owned)
{
	struct conn *c = &S.conns[ci];
	const char *how = owned ? " owned" : "";
	int number = ++c->writes;
	unsigned char *bytes;
	struct cb_ctx *ctx;
	int rc;

	if (!c->sock) {
		subj_event(ci, "write#%d %zu%s -> EBADF (closed)", number, op->len, how);
		return;
	}
	if (owned) {
		ctx = malloc(sizeof(*ctx));
		if (!ctx)
			sp_fatal("out of memory");
		*ctx = (struct cb_ctx){ .conn = ci, .number = number };
		bytes = sb_keep_owned(&c->last, &S.owned, op, c->seq, number);
		c->seq += op->len;
		rc = rs_socket_write_owned(c->sock, bytes, op->len, on_release, ctx);
	} else {
		bytes = sb_op_bytes(op, c->seq);
		ctx = subj_op_ctx(op, c, number);
		c->seq += op->len;
		rc = rs_socket_write(c->sock, bytes, op->len,
				     ctx ? subj_on_write_done : NULL, ctx);
		sb_keep(&c->last, bytes, op->len, number);
	}
	subj_event(ci, "write#%d %zu%s -> %s", number, op->len, how,
		   rc < 0 ? sr_errname(rc) : rc ? "true" : "false");
}

void sr_host_write(const struct sr_op *op, int ci)
{
	write_op(op, ci, 0);
}

void sr_host_write_owned(const struct sr_op *op, int ci)
{
	write_op(op, ci, 1);
}

/* overwrite fill=C: every byte of the last write's buffer becomes C. */
void sr_host_overwrite(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];
	char text[64];

	sb_overwrite(&c->last, op->fill, text, sizeof(text));
	subj_event(c->index, "%s", text);
}

void sr_host_end(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];
	unsigned char *bytes;
	struct cb_ctx *ctx;
	int rc;

	if (!c->sock) {
		subj_event(c->index, "end %zu -> EBADF (closed)", op->len);
		return;
	}
	bytes = subj_op_bytes(op, c);
	ctx = subj_op_ctx(op, c, 0);
	c->seq += op->len;
	rc = rs_socket_end(c->sock, bytes, op->len, ctx ? subj_on_write_done : NULL, ctx);
	if (bytes != op->data)
		free(bytes);
	subj_event(c->index, "end %zu -> %s", op->len, rc < 0 ? sr_errname(rc) : "ok");
}

void sr_host_run_op(const struct sr_op *op, int ci)
{
	struct conn *c = &S.conns[ci];

	switch (op->kind) {
	case SR_OP_RES_WRITE: case SR_OP_TRY_WRITE: case SR_OP_RES_END:
	case SR_OP_TRY_WRITE_REST: case SR_OP_WRITE_REST: case SR_OP_END_REST:
		subj_http_op(op, c);
		return;
	case SR_OP_WS_SEND:
	case SR_OP_WS_CLOSE:
	case SR_OP_WS_PING:
	case SR_OP_WS_BUFFERED:
		subj_ws_op(op, c);
		return;
	default:
		break;
	}
	subj_event(ci, "%s%s", sr_op_names[op->kind], c->sock ? "" : " (closed)");
	if (!c->sock)
		return;
	switch (op->kind) {
	case SR_OP_DESTROY: rs_socket_destroy(c->sock, 0); break;
	case SR_OP_DESTROY_SOON: rs_socket_destroy_soon(c->sock); break;
	case SR_OP_CORK: rs_socket_cork(c->sock); break;
	case SR_OP_UNCORK: rs_socket_uncork(c->sock); break;
	case SR_OP_PAUSE: rs_socket_pause(c->sock); break;
	case SR_OP_RESUME: rs_socket_resume(c->sock); break;
	default: break;
	}
}

/* ---- the script's tasks --------------------------------------------------- */

/* A script task's END, after its microtasks and batches: its sync point
 * and the next task, unless it waits in await-drained (then the END of
 * the task that runs its last op is). */
static void task_hook(rs_loop *loop, uint64_t task, void *arg)
{
	size_t n = S.running_task;

	(void)loop;
	(void)arg;
	if (n == 0 || task != S.script_loop_task)
		return;
	if (S.deferred) {
		S.deferred = 0;
		return;
	}
	S.running_task = 0;
	sr_run_task_end(n);
}

/* ---- the interpreter's host (script_run.h) -------------------------------- */

int sr_host_pending(int conn)
{
	struct conn *c = &S.conns[conn];

	return c->sock && rs_socket_writable_length(c->sock) > 0;
}

void sr_host_event(int conn, const char *text)
{
	subj_event(conn, "%s", text);
}

static void run_job(rs_loop *loop, void *job)
{
	(void)loop;
	sr_run_job(job);
}

void sr_host_post(void *job)
{
	if (rs_loop_post(S.loop, run_job, job) < 0)
		sp_fatal("out of memory");
}

void sr_host_microtask(void *job)
{
	if (rs_microtask(S.loop, run_job, job) < 0)
		sp_fatal("out of memory");
}

void sr_host_task_runs(size_t n)
{
	S.script_loop_task = rs_loop_task(S.loop);
	S.running_task = n;
}

void sr_host_task_waits(size_t n)
{
	(void)n;
	S.deferred = 1;
}

/* A script task's end is the loop's task hook's (task_hook above). */
void sr_host_task_ran(size_t n)
{
	(void)n;
}

/* The ops on the process: the stack's own, which send its batches
 * first. */
int sr_host_raise(int sig)
{
	return rs_raise(sig);
}

void sr_host_abort(void)
{
	rs_abort();
}

void sr_host_exit(int status)
{
	rs_exit(status);
}

int sr_host_execve(const char *path, char *const argv[], char *const envp[])
{
	return rs_execve(path, argv, envp);
}

void sr_host_disarm(void)
{
	fi_disarm_all();
}

static void all_connected(void)
{
	sr_run_start();
	/* WebSocket connections: the tasks start once every handshake is
	 * done (the peer may send the Upgrade, or the 101, at start). */
	if (subj_ws_enabled() && !subj_ws_may_start())
		return;
	sr_run_next_task();
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
	subj_event(c->index, "connect");
	if (subj_ws_enabled())
		subj_ws_start(c, s, 0);
	if (++S.connected == S.nconns)
		all_connected();
}

static void on_data(rs_socket *s, const char *data, size_t len, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	(void)data;
	subj_event(c->index, "data %zu", len);
	sr_run_handlers(SR_EV_DATA, c->index);
}

static void on_end(rs_socket *s, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	/* "eof", not "end": end names the end() call in the trace. */
	subj_event(c->index, "eof");
	sr_run_handlers(SR_EV_EOF, c->index);
}

static void on_drain(rs_socket *s, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	subj_event(c->index, "drain");
	sr_run_handlers(SR_EV_DRAIN, c->index);
}

static void on_finish(rs_socket *s, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	subj_event(c->index, "finish");
	sr_run_handlers(SR_EV_FINISH, c->index);
}

static void on_error(rs_socket *s, int code, const char *syscall, void *arg)
{
	struct conn *c = conn_of(arg);

	(void)s;
	subj_event(c->index, "error %s %s", sr_errname(code), syscall);
}

static void on_close(rs_socket *s, int had_error, void *arg)
{
	struct conn *c = conn_of(arg);

	c->written = rs_socket_bytes_written(s);
	subj_event(c->index, "close had_error=%d bytes_written=%llu", had_error,
	      (unsigned long long)c->written);
	c->sock = NULL;
	subj_http_forget(c);
	sr_run_handlers(SR_EV_CLOSE, c->index);
}

static const struct rs_socket_events socket_events = {
	.on_connect = on_connect, .on_data = on_data, .on_end = on_end,
	.on_drain = on_drain, .on_finish = on_finish, .on_error = on_error,
	.on_close = on_close,
};

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
		if (subj_http_attach(c, s, &socket_events) < 0)
			sp_fatal("out of memory");
	} else {
		rs_socket_set_events(s, &socket_events, c);
	}
	subj_event(c->index, "accept");
	if (subj_ws_enabled())
		subj_ws_start(c, s, 1);
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
static void read_script(void)
{
	int rc;

	sp_read_script(&S.script);
	for (size_t i = 0; i < S.script.nvariants; i++) {
		const struct sr_variant *v = &S.script.variants[i];

		rc = rs_variant_set(v->name, v->value);
		if (rc < 0)
			sp_fatal("variant %s=%s: %s", v->name, v->value, strerror(-rc));
	}
	for (size_t i = 0; i < S.script.nfaults; i++) {
		char spec[128];

		if (fi_arm(&S.script.faults[i]) < 0) {
			fi_rule_format(&S.script.faults[i], spec, sizeof(spec));
			sp_fatal("cannot arm '%s'", spec);
		}
	}
	memcpy(S.transport, S.script.transport, sizeof(S.transport));
	memcpy(S.address, S.script.address, sizeof(S.address));
	S.port = S.script.port;
	S.server = S.script.server;
	S.nconns = S.script.nconns;
	S.http = S.script.http;
	S.opts.allow_half_open = S.script.half_open;
	if (S.script.websocket) {
		subj_ws_configure(S.script.ws_seed, S.script.ws_max_message);
		subj_ws_deflate(S.script.ws_deflate);
	}
	sr_run_init(&S.script);
}

/* ---- main ---------------------------------------------------------------- */

static void attach_counters(void)
{
	/* Run by hand, fd 5 is no memfd: the counters stay private. */
	(void)fi_shm_attach(WC_FD_SHM);
}

static void open_connections(void)
{
	S.conns = calloc((size_t)S.nconns, sizeof(*S.conns));
	if (!S.conns)
		sp_fatal("out of memory");
	for (int i = 0; i < S.nconns; i++)
		S.conns[i].index = i;
	if (S.server) {
		int rc = strcmp(S.transport, "unix") == 0
			? rs_listen_unix(S.loop, S.address, &S.opts, on_connection, NULL, &S.listener)
			: rs_listen_tcp(S.loop, S.address, S.port, &S.opts, on_connection, NULL, &S.listener);

		if (rc < 0)
			sp_fatal("listen: %s", strerror(-rc));
		sp_line("listening %d", strcmp(S.transport, "unix") == 0 ? 0 : rs_listener_port(S.listener));
		return;
	}
	for (int i = 0; i < S.nconns; i++) {
		struct conn *c = &S.conns[i];
		int rc = strcmp(S.transport, "unix") == 0
			? rs_connect_unix(S.loop, S.address, &S.opts, &socket_events, c, &c->sock)
			: rs_connect_tcp(S.loop, S.address, S.port, &S.opts, &socket_events, c, &c->sock);

		if (rc < 0)
			sp_fatal("connect: %s", strerror(-rc));
	}
}

static void free_script(void)
{
	sr_free(&S.script);
	for (int i = 0; S.conns && i < S.nconns; i++)
		sb_last_free(&S.conns[i].last);
	sb_owned_free(&S.owned);
	free(S.conns);
}

int main(void)
{
	int rc;

	attach_counters();
	if (fi_init() < 0)
		sp_fatal("the fault gate did not start (WIRECHECK_FAULTS)");
	read_script();
	rc = rs_loop_new(&S.loop);
	if (rc < 0)
		sp_fatal("loop: %s", strerror(-rc));
	rs_loop_set_hook(S.loop, task_hook, NULL);
	subj_report_start(S.loop, S.nconns);
	open_connections();
	rc = rs_loop_run(S.loop);
	if (rc < 0)
		sp_fatal("loop: %s", strerror(-rc));
	sr_run_note_unfinished();
	sp_line("stats bytes_moved=%llu allocations=%llu bytes_copied=%llu",
		 (unsigned long long)rs_stats.bytes_moved,
		 (unsigned long long)rs_stats.allocations,
		 (unsigned long long)rs_stats.bytes_copied);
	if (rs_loop_free(S.loop) < 0)
		sp_fatal("loop still busy at exit");
	fi_disarm_all();
	free_script();
	return 0;
}
