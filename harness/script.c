/*
 * script.c: the script of a scenario, in the subject protocol (script.h).
 */
#include "script.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sbuf {
	char *s;
	size_t len, cap;
	int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || b->oom)
		return;
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *s = realloc(b->s, cap);

		if (!s) {
			b->oom = 1;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void script_op(struct sbuf *b, const struct sc_op *op)
{
	sb_printf(b, "op %s conn=%d len=%zu fill=%d cb=%d micro=%d sig=%d ext=%d",
		  sc_op_name(op->kind), op->conn, op->len, op->fill, op->cb,
		  op->microtask, op->sig, op->external);
	if (op->final || op->resume)
		sb_printf(b, " final=%d resume=%d", op->final, op->resume);
	if (op->kind == SC_OP_WS_SEND)
		sb_printf(b, " ws=%d,%d,%d,%d", op->ws_kind, op->ws_binary, op->ws_fin,
			  op->ws_no_compress);
	if (op->data) {
		sb_printf(b, " hex=");
		for (size_t i = 0; i < op->len; i++)
			sb_printf(b, "%02x", op->data[i]);
	}
	sb_printf(b, "\n");
}

static void script_task(struct sbuf *b, const struct scenario *sc, size_t i)
{
	sb_printf(b, "task %d\n", sc->tasks[i].conn);
	for (size_t k = 0; k < sc->tasks[i].nops; k++)
		script_op(b, &sc->tasks[i].ops[k]);
	for (size_t k = 0; k < sc->ntsignals; k++) {
		const struct sc_task_signal *ts = &sc->tsignals[k];
		struct sc_op op = { .kind = SC_OP_SIGNAL, .conn = -1, .fill = -1,
				    .sig = ts->sig, .external = ts->external };

		if ((size_t)ts->task == i + 1)
			script_op(b, &op);
	}
	sb_printf(b, "endblock\n");
}

char *wc_script_build(const struct scenario *sc, const char *address)
{
	struct sbuf b = { 0 };

	for (size_t i = 0; i < sc->nvariants; i++) {
		const char *eq = strchr(sc->variants[i].text, '=');

		sb_printf(&b, "variant %.*s %s\n", (int)(eq - sc->variants[i].text),
			  sc->variants[i].text, eq + 1);
	}
	for (size_t i = 0; i < sc->nfaults; i++)
		sb_printf(&b, "fault %s\n", sc->faults[i].text);
	sb_printf(&b, "connections %d\nhalf-open %d\n", sc->connections, sc->allow_half_open);
	if (sc->http)
		sb_printf(&b, "http 1\n");
	if (sc->websocket)
		sb_printf(&b, "websocket %llu %zu", sc->ws_seed, sc->ws_max_message);
	/* ws-deflate on the websocket line, so that a subject without
	 * WebSocket reports that layer as unsupported, not a line unknown. */
	if (sc->websocket && sc->ws_deflate[0])
		sb_printf(&b, " deflate %ld %ld %ld %ld %ld", sc->ws_deflate[1],
			  sc->ws_deflate[2], sc->ws_deflate[3], sc->ws_deflate[4],
			  sc->ws_deflate[5]);
	if (sc->websocket)
		sb_printf(&b, "\n");
	sb_printf(&b, "%s\n", address);
	for (size_t i = 0; i < sc->npeer; i++) {
		if (sc->peer[i].at.kind == SC_AT_START)
			sb_printf(&b, "sync start\n");
		else if (sc->peer[i].at.kind == SC_AT_TASK)
			sb_printf(&b, "sync task %d\n", sc->peer[i].at.task);
	}
	for (size_t i = 0; i < sc->ntasks; i++)
		script_task(&b, sc, i);
	for (size_t i = 0; i < sc->nhandlers; i++) {
		sb_printf(&b, "handler %s %d\n", sc_event_names[sc->handlers[i].event], sc->handlers[i].conn);
		for (size_t k = 0; k < sc->handlers[i].nops; k++)
			script_op(&b, &sc->handlers[i].ops[k]);
		sb_printf(&b, "endblock\n");
	}
	sb_printf(&b, "run\n");
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
