/*
 * script.c: a scenario as the subject protocol's script (script.h): which
 * line each part of the scenario becomes. The lines' format is the
 * protocol's own (protocol/script_write.h).
 */
#include "script.h"

#include "script_write.h"

#include <stdlib.h>
#include <string.h>

/* The protocol's op kind and event of the scenario's, by their names: the
 * two lists are written apart (scenario.h, script_read.h), and a name the
 * protocol lacks is a bug that test_script_write catches. -1: none. */
static int protocol_op_kind(enum sc_op_kind kind)
{
	const char *name = sc_op_name(kind);

	for (int k = 0; k < SR_OP_KIND_COUNT; k++)
		if (strcmp(sr_op_names[k], name) == 0)
			return k;
	return -1;
}

static int protocol_event(enum sc_event event)
{
	for (int k = 0; k < SR_EV_KIND_COUNT; k++)
		if (strcmp(sr_ev_names[k], sc_event_names[event]) == 0)
			return k;
	return -1;
}

static void script_op(struct sw_text *t, const struct sc_op *op)
{
	int kind = protocol_op_kind(op->kind);
	struct sr_op line = {
		.kind = (enum sr_op_kind)kind, .conn = op->conn, .len = op->len,
		.data = op->data, .fill = op->fill, .cb = op->cb, .micro = op->microtask,
		.sig = op->sig, .external = op->external, .final = op->final,
		.resume = op->resume, .ws_kind = op->ws_kind, .ws_binary = op->ws_binary,
		.ws_fin = op->ws_fin, .ws_no_compress = op->ws_no_compress,
	};

	if (kind < 0)
		t->failed = 1;
	else
		sw_op(t, &line);
}

/* A task's ops, then the signals the scenario raises at its end. */
static void script_task(struct sw_text *t, const struct scenario *sc, size_t i)
{
	sw_task(t, sc->tasks[i].conn);
	for (size_t k = 0; k < sc->tasks[i].nops; k++)
		script_op(t, &sc->tasks[i].ops[k]);
	for (size_t k = 0; k < sc->ntsignals; k++) {
		const struct sc_task_signal *ts = &sc->tsignals[k];
		struct sc_op op = { .kind = SC_OP_SIGNAL, .conn = -1, .fill = -1,
				    .sig = ts->sig, .external = ts->external };

		if ((size_t)ts->task == i + 1)
			script_op(t, &op);
	}
	sw_end_block(t);
}

char *wc_script_build(const struct scenario *sc, const char *address)
{
	struct sw_text t = { 0 };

	for (size_t i = 0; i < sc->nvariants; i++)
		sw_variant(&t, sc->variants[i].text);
	for (size_t i = 0; i < sc->nfaults; i++)
		sw_fault(&t, sc->faults[i].text);
	sw_setup(&t, sc->connections, sc->allow_half_open, sc->http);
	if (sc->websocket)
		sw_websocket(&t, sc->ws_seed, sc->ws_max_message, sc->ws_deflate);
	sw_address(&t, address);
	for (size_t i = 0; i < sc->npeer; i++) {
		if (sc->peer[i].at.kind == SC_AT_START)
			sw_sync_start(&t);
		else if (sc->peer[i].at.kind == SC_AT_TASK)
			sw_sync_task(&t, sc->peer[i].at.task);
	}
	for (size_t i = 0; i < sc->ntasks; i++)
		script_task(&t, sc, i);
	for (size_t i = 0; i < sc->nhandlers; i++) {
		int event = protocol_event(sc->handlers[i].event);

		if (event < 0)
			t.failed = 1;
		else
			sw_handler(&t, (enum sr_ev_kind)event, sc->handlers[i].conn);
		for (size_t k = 0; k < sc->handlers[i].nops; k++)
			script_op(&t, &sc->handlers[i].ops[k]);
		sw_end_block(&t);
	}
	return sw_run(&t);
}
