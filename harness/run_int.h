/*
 * run_int.h: what the files of a run share (run.c: the poll loop, the
 * trace, set-up and tear-down; run_events.c: the subject's event pipe;
 * run_spawn.c: starting and reaping the subject, writing its script), and
 * nothing else includes.
 */
#ifndef WIRECHECK_RUN_INT_H
#define WIRECHECK_RUN_INT_H

#include "peer.h"
#include "run.h"

#include "fi_shm.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One run: the subject, its pipes, the peer, and what the trace collects. */
struct run {
	const struct scenario *sc;
	const struct run_options *opts;
	char *err;
	size_t errlen;
	char tmpdir[64];
	struct wc_peer peer;
	int ctl_fd;
	int ev_fd;
	int pid_fd;
	pid_t pid;
	struct fi_shm *shm;
	int exited;
	int status;
	int timed_out;
	int64_t deadline_ms;
	char evbuf[65536];
	size_t evlen;
	int ev_eof;
	json_t *events;
	json_t *queue;
	char *subject_error;
	char *protocol_error; /* "protocol: ...": the first line that broke it */
	int listened;         /* a listening line came */
	char *script;         /* the script, written from the poll loop */
	size_t script_len, script_off;
	uint64_t lines;       /* lines the subject wrote on its event pipe */
	uint64_t *written;    /* a sync line's byte counts, one per connection */
};

/* Formats a message into r->err; returns -1, for `return run__fail(...)`. */
static inline int run__fail(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int run__fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* Reaps the subject if it exited (flags: waitpid's, WNOHANG or 0); the
 * peer then takes what is left without waiting for read points. */
void run__reap(struct run *r, int flags);

/* Reads what the event pipe holds and handles each whole line. Returns 1
 * when it read bytes, 0 at end of file or when nothing was there, -1 when
 * the harness failed (r->err). A line that breaks the protocol sets
 * r->protocol_error. */
int run__read_events(struct run *r);

/* After the subject exited: reads the event pipe to its end (what the
 * subject wrote before it died). Returns 0, or -1 (r->err). */
int run__drain_events(struct run *r);

/* At the end of a run that did not time out: bytes left on the event pipe
 * without their newline break the protocol (r->protocol_error). Returns
 * 0, or -1 (r->err). */
int run__events_end(struct run *r);

/* Starts the subject (under valgrind or strace when asked) with the
 * protocol's fds, and builds the script for run__write_script. Returns 0,
 * -1 (r->err) when the harness failed, -2 (r->err) when the subject
 * cannot be executed. */
int run__spawn(struct run *r);

/* Writes what the control pipe takes of the rest of the script; frees it
 * once it is all written, or when the subject reads no more. */
void run__write_script(struct run *r);

#endif
