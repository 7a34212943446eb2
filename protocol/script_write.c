/*
 * script_write.c: the script's lines as the harness writes them
 * (script_write.h); script_read.c parses them.
 */
#include "script_write.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(struct sw_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct sw_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || t->failed)
		return;
	if (t->len + (size_t)n + 1 > t->cap) {
		size_t cap = (t->cap + (size_t)n + 1) * 2;
		char *s = realloc(t->s, cap);

		if (!s) {
			t->failed = 1;
			return;
		}
		t->s = s;
		t->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void sw_variant(struct sw_text *t, const char *assignment)
{
	const char *eq = strchr(assignment, '=');

	if (!eq) {
		t->failed = 1;
		return;
	}
	put(t, "variant %.*s %s\n", (int)(eq - assignment), assignment, eq + 1);
}

void sw_fault(struct sw_text *t, const char *spec)
{
	put(t, "fault %s\n", spec);
}

void sw_setup(struct sw_text *t, int connections, int half_open, int http)
{
	put(t, "connections %d\nhalf-open %d\n", connections, half_open);
	if (http)
		put(t, "http 1\n");
}

void sw_websocket(struct sw_text *t, unsigned long long seed, size_t max_message,
		  const long deflate[6])
{
	put(t, "websocket %llu %zu", seed, max_message);
	if (deflate[0])
		put(t, " deflate %ld %ld %ld %ld %ld", deflate[1], deflate[2], deflate[3],
		    deflate[4], deflate[5]);
	put(t, "\n");
}

void sw_address(struct sw_text *t, const char *address)
{
	put(t, "%s\n", address);
}

void sw_sync_start(struct sw_text *t)
{
	put(t, "sync start\n");
}

void sw_sync_task(struct sw_text *t, int task)
{
	put(t, "sync task %d\n", task);
}

void sw_task(struct sw_text *t, int conn)
{
	put(t, "task %d\n", conn);
}

void sw_handler(struct sw_text *t, enum sr_ev_kind event, int conn)
{
	put(t, "handler %s %d\n", sr_ev_names[event], conn);
}

void sw_op(struct sw_text *t, const struct sr_op *op)
{
	put(t, "op %s conn=%d len=%zu fill=%d cb=%d micro=%d sig=%d ext=%d",
	    sr_op_names[op->kind], op->conn, op->len, op->fill, op->cb, op->micro,
	    op->sig, op->external);
	/* Left out at their default (0), so that most op lines stay short. */
	if (op->final || op->resume)
		put(t, " final=%d resume=%d", op->final, op->resume);
	if (op->kind == SR_OP_WS_SEND)
		put(t, " ws=%d,%d,%d,%d", op->ws_kind, op->ws_binary, op->ws_fin,
		    op->ws_no_compress);
	if (op->data) {
		put(t, " hex=");
		for (size_t i = 0; i < op->len; i++)
			put(t, "%02x", op->data[i]);
	}
	put(t, "\n");
}

void sw_end_block(struct sw_text *t)
{
	put(t, "endblock\n");
}

char *sw_run(struct sw_text *t)
{
	char *s;

	put(t, "run\n");
	if (t->failed) {
		free(t->s);
		*t = (struct sw_text){ 0 };
		return NULL;
	}
	s = t->s;
	*t = (struct sw_text){ 0 };
	return s;
}
