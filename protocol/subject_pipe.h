/*
 * subject_pipe.h: a subject's side of the two pipes (docs/subject-protocol.md),
 * shared by refstack-subject (subjects/refstack/subject.c) and libuv-subject
 * (subjects/libuv/subject.c): the script read from the control pipe, event
 * lines, syncs and "fatal" written to the event pipe.
 *
 * Every line goes out with write(2) as it is made, with no buffering, so a
 * subject that crashes loses none. A harness that is gone (a write or read on
 * a pipe fails or meets its end) ends the subject with _exit(70): there is
 * nothing left to report to. The state here is the process's own: one subject
 * per process.
 */
#ifndef WIRECHECK_SUBJECT_PIPE_H
#define WIRECHECK_SUBJECT_PIPE_H

#include "script_read.h"

#include <stddef.h>
#include <stdint.h>

/* Writes one line, fmt and a newline, on the event pipe; a line longer than
 * 1,022 bytes is cut there. */
void sp_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports "fatal TEXT" on the event pipe and exits 2. */
void sp_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Reports "ev TASK CONN TEXT". `loop_task` is the subject's loop task
 * running now (0 outside one); tasks are numbered by the subject, not by its
 * loop: the n-th loop task that reports an event is task n, so that a task
 * that only flushed bytes takes no number and the numbers do not depend on
 * timing. */
void sp_event(uint64_t loop_task, int conn, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Reports "sync POINT W0 W1 ..." with each connection's bytes written (at
 * most 1,024 of them), then waits for the harness's "go". */
void sp_sync(const char *point, const uint64_t *written, int n);

/* Waits for the harness's "go" line on the control pipe; anything else ends
 * the subject with _exit(71). */
void sp_wait_go(void);

/* Reads the script from the control pipe up to its "run" line into `sc`
 * (sr_init'ed here; the caller sr_free's it) and checks it with sr_finish.
 * A script the reader refuses, one that ends before "run", or bytes after
 * "run" end the subject through sp_fatal. */
void sp_read_script(struct sr_script *sc);

#endif
