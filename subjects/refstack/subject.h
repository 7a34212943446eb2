/*
 * subject.h: what the parts of refstack-subject share. subject.c reads the
 * script, runs the tasks and handlers and reports the stream socket's
 * events; subject_http.c serves HTTP responses (`http yes`); subject_ws.c
 * runs WebSocket connections (`websocket SEED MAX`); subject_report.c is
 * what the three report their ops with. Internal to the subject: nothing
 * here is a library interface.
 */
#ifndef WIRECHECK_SUBJECT_H
#define WIRECHECK_SUBJECT_H

#include "rs.h"
#include "script_read.h"
#include "script_run.h"
#include "subject_bufs.h"

#include <stddef.h>
#include <stdint.h>

struct conn {
	int index;
	rs_socket *sock;   /* NULL once closed */
	uint64_t seq;      /* bytes handed to write()/end() */
	uint64_t written;  /* the stack's bytes_written, kept after close */
	int writes;        /* numbers writes for the event log */
	int connected;
	rs_ws *ws;         /* a WebSocket connection: its socket, or NULL */
	int ws_sends;      /* numbers ws-sends for the event log */
	int ws_opened;     /* its handshake was done (ws-open) */
	/* The buffer the last write or write-owned handed the stack, for
	 * overwrite; a write-owned's stays on S.owned until the end. */
	struct sb_last last;
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

struct cb_ctx {
	int conn;
	int number;        /* write#number, or 0 for end */
	int http;          /* a response's res-write / res-end */
};

/* ---- subject_report.c ---------------------------------------------------- */

/* Starts the reports: events are numbered by LOOP's tasks, and the script
 * opens NCONNS connections. Called once the loop exists, before any event. */
void subj_report_start(rs_loop *loop, int nconns);


/* Reports an event of connection `conn` on the event pipe, numbered by the
 * task that reported it (docs/subject-protocol.md). Never fails: a harness
 * that is gone ends the subject. */
void subj_event(int conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The bytes of a write op: op->data when the op has literal bytes (or none),
 * else a malloc'd buffer of op->len pattern or fill bytes, which the caller
 * frees. Exits through sp_fatal (subject_pipe.h) when out of memory. */
unsigned char *subj_op_bytes(const struct sr_op *op, struct conn *c);

/* The same, with the pattern taken from stream offset `at` (an HTTP body
 * counts its own bytes, not the connection's). */
unsigned char *subj_op_bytes_at(const struct sr_op *op, uint64_t at);

/* The callback context of an op with `cb` set, else NULL; the callback
 * (subj_on_write_done) frees it, and a caller whose call failed frees it. */
struct cb_ctx *subj_op_ctx(const struct sr_op *op, struct conn *c, int number);

/* A write or end callback: reports "[res-]write#N cb STATUS" or
 * "[res-]end cb STATUS", frees the context, runs the matching handlers. */
void subj_on_write_done(rs_socket *s, int status, void *arg);

/* How many connections the script opens. */
int subj_nconns(void);

/* ---- subject_ws.c --------------------------------------------------------- */

/* The script's `websocket SEED MAX` line: every connection becomes a
 * WebSocket one, masked from SEED + its index, refusing messages over MAX. */
void subj_ws_configure(unsigned long long seed, size_t max_message);

/* The websocket line's `deflate` values (six, script_read.h; all 0: none):
 * permessage-deflate on every WebSocket connection. */
void subj_ws_deflate(const long v[6]);

/* 1 when the script has a `websocket` line. */
int subj_ws_enabled(void);

/* Called once every connection is up: 1 when the tasks may start now, 0 when
 * they start from the last handshake's open event instead. */
int subj_ws_may_start(void);

/* Makes connection c a WebSocket one over s (server side when `server`);
 * its events are reported as ws-* events. */
void subj_ws_start(struct conn *c, rs_socket *s, int server);

/* Runs a ws-send, ws-close, ws-ping or ws-buffered op on connection c. */
void subj_ws_op(const struct sr_op *op, struct conn *c);

/* ---- subject_http.c ------------------------------------------------------- */

/* Serves HTTP on an accepted socket: its socket events go to `events` with
 * c as their argument, and each request is reported and runs the script's
 * `on request` handlers. 0, or -ENOMEM. */
int subj_http_attach(struct conn *c, rs_socket *s, const struct rs_socket_events *events);

/* Runs a res-write, try-write, res-end or *-rest op on connection c. */
void subj_http_op(const struct sr_op *op, struct conn *c);

/* Forgets connection c's response and pending try-write (its socket closed). */
void subj_http_forget(struct conn *c);

#endif
