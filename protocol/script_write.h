/*
 * script_write.h: the harness's side of the script (docs/subject-protocol.md,
 * "The script"): each kind of line formatted onto a growing text, no I/O.
 * script_read.h reads the same lines back; tests/unit/test_script_write.c
 * holds the two to each other.
 *
 * The lines go in the order the reader expects: variants, faults, the
 * setup, the websocket line, the address, the sync points, the tasks, the
 * handlers, then sw_run. After a line that cannot be written (out of
 * memory, or a variant without '=') the writer keeps going without
 * writing, and sw_run reports it once.
 */
#ifndef WIRECHECK_SCRIPT_WRITE_H
#define WIRECHECK_SCRIPT_WRITE_H

#include "script_read.h"

#include <stddef.h>

/* The script so far. Start it zeroed: struct sw_text t = { 0 }. */
struct sw_text {
	char *s;
	size_t len, cap;
	int failed;
};

/* "variant NAME VALUE" from ASSIGNMENT, "NAME=VALUE" (it must hold a '='). */
void sw_variant(struct sw_text *t, const char *assignment);

/* "fault SPEC": a gate rule as fi_rule_parse reads it. */
void sw_fault(struct sw_text *t, const char *spec);

/* "connections N", "half-open 0|1", and "http 1" when HTTP is non-zero. */
void sw_setup(struct sw_text *t, int connections, int half_open, int http);

/* "websocket SEED MAX", with " deflate A B C D E" when deflate[0] is set
 * (deflate[1..5]: rs_ws_deflate_options' fields, in script_read.h's order).
 * The deflate options ride on the websocket line, so that a subject
 * without WebSocket reports that layer as unsupported, not a line unknown. */
void sw_websocket(struct sw_text *t, unsigned long long seed, size_t max_message,
		  const long deflate[6]);

/* ADDRESS, a "connect ..." or "listen ..." line without its newline. */
void sw_address(struct sw_text *t, const char *address);

/* "sync start", and "sync task N" (N from 1). */
void sw_sync_start(struct sw_text *t);
void sw_sync_task(struct sw_text *t, int task);

/* Opens a task on connection CONN, or a handler of EVENT on CONN (-1: every
 * connection); its ops follow, then sw_end_block. */
void sw_task(struct sw_text *t, int conn);
void sw_handler(struct sw_text *t, enum sr_ev_kind event, int conn);

/* One "op ..." line: every field the reader reads, hex= when op->data. */
void sw_op(struct sw_text *t, const struct sr_op *op);

/* "endblock". */
void sw_end_block(struct sw_text *t);

/* Ends the script with "run" and returns its text (the caller frees it),
 * or NULL when a line could not be written (the text is freed then). */
char *sw_run(struct sw_text *t);

#endif
