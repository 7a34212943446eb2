/*
 * subject_http.c: refstack-subject's HTTP responses (the script's `http yes`
 * line, docs/subject-protocol.md): an accepted connection serves HTTP/1.1,
 * each request is reported and runs the `on request` handlers, and the
 * res-write, try-write, res-end and *-rest ops call the response.
 */
#include "http_parse.h"
#include "subject.h"
#include "subject_pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The body: the stream pattern over the response bytes of the connection
 * (framing not counted), or the op's literal bytes. */
static unsigned char *http_bytes(const struct sr_op *op, struct conn *c)
{
	return subj_op_bytes_at(op, c->body_seq);
}

static const char *http_rc(int rc)
{
	return rc < 0 ? sr_errname(rc) : rc ? "true" : "false";
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

static struct cb_ctx *http_ctx(const struct sr_op *op, struct conn *c, int number)
{
	struct cb_ctx *ctx = subj_op_ctx(op, c, number);

	if (ctx)
		ctx->http = 1;
	return ctx;
}

void subj_http_op(const struct sr_op *op, struct conn *c)
{
	const char *name = sr_op_names[op->kind];
	const unsigned char *rest;
	unsigned char *bytes;
	struct cb_ctx *ctx;
	size_t len;
	int rc, number;

	if (!c->res || !c->sock) {
		subj_event(c->index, "%s -> EBADF (no response)", name);
		return;
	}
	switch (op->kind) {
	case SR_OP_RES_WRITE:
	case SR_OP_RES_END:
		number = op->kind == SR_OP_RES_WRITE ? ++c->res_writes : 0;
		bytes = http_bytes(op, c);
		c->body_seq += op->len;
		ctx = http_ctx(op, c, number);
		if (op->kind == SR_OP_RES_WRITE) {
			rc = rs_http_res_write(c->res, bytes, op->len,
					       ctx ? subj_on_write_done : NULL, ctx);
			subj_event(c->index, "res-write#%d %zu -> %s", number, op->len, http_rc(rc));
		} else {
			rc = rs_http_res_end(c->res, bytes, op->len,
					     ctx ? subj_on_write_done : NULL, ctx);
			subj_event(c->index, "res-end %zu -> %s", op->len, rc < 0 ? sr_errname(rc) : "ok");
		}
		if (rc < 0)
			free(ctx);
		if (bytes != op->data)
			free(bytes);
		return;
	case SR_OP_TRY_WRITE:
		try_clear(c);
		c->try_number = ++c->res_writes;
		c->try_len = op->len;
		c->try_data = malloc(op->len ? op->len : 1);
		if (!c->try_data)
			sp_fatal("out of memory");
		bytes = http_bytes(op, c);
		if (op->len)
			memcpy(c->try_data, bytes, op->len);
		if (bytes != op->data)
			free(bytes);
		c->body_seq += op->len;
		c->try_base = rs_http_res_offset(c->res);
		c->try_final = op->final;
		rc = rs_http_res_try_write(c->res, c->try_data, op->len, op->final);
		subj_event(c->index, "try-write#%d %zu%s -> %s offset=%llu", c->try_number,
		      op->len, op->final ? " final" : "", http_rc(rc),
		      (unsigned long long)rs_http_res_offset(c->res));
		c->try_resume = rc == 0 && op->resume;
		return;
	default:
		break;
	}
	len = try_rest(c, &rest);
	ctx = http_ctx(op, c, op->kind == SR_OP_WRITE_REST ? ++c->res_writes : 0);
	if (op->kind == SR_OP_TRY_WRITE_REST) {
		rc = rs_http_res_try_write(c->res, rest, len, op->final);
		subj_event(c->index, "try-write-rest %zu%s -> %s offset=%llu", len,
		      op->final ? " final" : "", http_rc(rc),
		      (unsigned long long)rs_http_res_offset(c->res));
	} else if (op->kind == SR_OP_WRITE_REST) {
		rc = rs_http_res_write(c->res, rest, len,
				       ctx ? subj_on_write_done : NULL, ctx);
		subj_event(c->index, "write-rest %zu -> %s", len, http_rc(rc));
	} else {
		rc = rs_http_res_end(c->res, rest, len,
				     ctx ? subj_on_write_done : NULL, ctx);
		subj_event(c->index, "end-rest %zu -> %s", len, rc < 0 ? sr_errname(rc) : "ok");
	}
	if (rc < 0)
		free(ctx);
	/* The rest went to write or end: no try-write is pending any more. */
	if (op->kind != SR_OP_TRY_WRITE_REST || rc == 1)
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
		subj_event(c->index, "try-write#%d done -> %s offset=%llu", c->try_number,
		      rc < 0 ? sr_errname(rc) : "true",
		      (unsigned long long)rs_http_res_offset(c->res));
		try_clear(c);
		return;
	}
	subj_event(c->index, "writable offset=%llu", (unsigned long long)offset);
	sr_run_handlers(SR_EV_WRITABLE, c->index);
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
	subj_event(c->index, "request %.*s %.*s body=%zu", (int)req->method_len,
	      req->method, (int)req->target_len, req->target, body_len);
	sr_run_handlers(SR_EV_REQUEST, c->index);
}

int subj_http_attach(struct conn *c, rs_socket *s, const struct rs_socket_events *events)
{
	rs_http_conn *hc;

	return rs_http_attach(s, 0, events, c, on_request, c, &hc);
}

void subj_http_forget(struct conn *c)
{
	c->res = NULL;
	free(c->try_data);
	c->try_data = NULL;
}
