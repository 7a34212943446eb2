/*
 * subject_report.c: what the three parts of refstack-subject share to
 * report their ops (subject.h): the event line, errno names, the bytes and
 * the callback context of a write op, and the write and end callbacks.
 */
#include "subject.h"

#include "fi.h"
#include "subject_pipe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
	rs_loop *loop;  /* whose task numbers the events */
	int nconns;
} report;

void subj_report_start(rs_loop *loop, int nconns)
{
	report.loop = loop;
	report.nconns = nconns;
}

int subj_nconns(void)
{
	return report.nconns;
}

void subj_event(int conn, const char *fmt, ...)
{
	char text[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	sp_event(rs_loop_task(report.loop), conn, "%s", text);
}

void subj_on_write_done(rs_socket *s, int status, void *arg)
{
	struct cb_ctx *ctx = arg;
	int conn = ctx->conn, number = ctx->number, ctx_http = ctx->http;

	(void)s;
	free(ctx);
	if (number)
		subj_event(conn, "%swrite#%d cb %s", ctx_http ? "res-" : "", number,
		      status == 0 ? "ok" : sr_errname(status));
	else
		subj_event(conn, "%send cb %s", ctx_http ? "res-" : "",
		      status == 0 ? "ok" : sr_errname(status));
	sr_run_handlers(number ? SR_EV_WRITE_CB : SR_EV_END_CB, conn);
}

unsigned char *subj_op_bytes_at(const struct sr_op *op, uint64_t at)
{
	if (op->data || op->len == 0)
		return op->data;
	return sb_op_bytes(op, at);
}

unsigned char *subj_op_bytes(const struct sr_op *op, struct conn *c)
{
	return subj_op_bytes_at(op, c->seq);
}

struct cb_ctx *subj_op_ctx(const struct sr_op *op, struct conn *c, int number)
{
	struct cb_ctx *ctx;

	if (!op->cb)
		return NULL;
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		sp_fatal("out of memory");
	ctx->conn = c->index;
	ctx->number = number;
	ctx->http = 0;
	return ctx;
}
