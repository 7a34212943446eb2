/*
 * script_run.h: a subject's interpreter of the script (docs/subject-protocol.md,
 * "The script"), shared by every subject written in C: the tasks posted one
 * after another, the blocks run op by op (an op in a microtask, the rest of
 * a block after await-drained in a later task), the handlers, checkpoints
 * and the sync points with each connection's bytes written. What an op does
 * to a socket, and what a task and a microtask are, is the subject's own
 * stack: the subject program defines the sr_host_* functions below.
 *
 * One interpreter per process, as one subject per process (subject_pipe.h):
 * the host is bound when the subject is linked (as libuv binds each
 * platform's uv__platform_* functions), not through a table.
 */
#ifndef WIRECHECK_SCRIPT_RUN_H
#define WIRECHECK_SCRIPT_RUN_H

#include "script_read.h"

#include <stddef.h>
#include <stdint.h>

/* ---- what the subject defines: its stack, for the interpreter ---------- */

/* The ops that write, which every subject has: write, write-owned,
 * overwrite and end, on connection conn (op->conn when it names one, >= 0,
 * else the block's). */
void sr_host_write(const struct sr_op *op, int conn);
void sr_host_write_owned(const struct sr_op *op, int conn);
void sr_host_overwrite(const struct sr_op *op, int conn);
void sr_host_end(const struct sr_op *op, int conn);
/* Runs any other op on the stack (destroy, cork, pause, the HTTP and
 * WebSocket ops, ...): every op that is not the interpreter's own
 * (await-drained, checkpoint, disarm, and the ops on the process: signal,
 * ignore, abort, exit, execve), on connection conn as above. */
void sr_host_run_op(const struct sr_op *op, int conn);
/* 1 while connection conn holds bytes the kernel has not taken. */
int sr_host_pending(int conn);
/* The bytes the kernel took on conn so far, for a sync line. */
uint64_t sr_host_written(int conn);
/* Reports an event of conn (sp_event with the stack's task). */
void sr_host_event(int conn, const char *text);
/* Calls sr_run_job(job) in a later task of the loop, or as a microtask of
 * this one; a subject that cannot ends through sp_fatal. */
void sr_host_post(void *job);
void sr_host_microtask(void *job);
/* A script task (1-based n) starts or goes on after a wait; waits (its
 * rest is posted); or has run its last op. A subject that needs none of
 * these leaves its body empty. */
void sr_host_task_runs(size_t n);
void sr_host_task_waits(size_t n);
void sr_host_task_ran(size_t n);
/* The ops on the process (signal, abort, exit, execve), which the
 * interpreter runs itself, call these: the reference stack sends its
 * batches before the process signals itself, aborts, exits or becomes
 * another program; a stack with nothing to do first calls libc's (kill of
 * the process's own pid, abort, exit, execve). raise and execve return 0
 * or -errno. */
int sr_host_raise(int sig);
void sr_host_abort(void) __attribute__((noreturn));
void sr_host_exit(int status) __attribute__((noreturn));
int sr_host_execve(const char *path, char *const argv[], char *const envp[]);
/* Disarms every rule of the fault gate (the op disarm). */
void sr_host_disarm(void);

/* ---- what the interpreter gives the subject ----------------------------- */

/* The name of errno value e (either sign) for an event: "EPIPE", or
 * "E<n>" for one the gate does not name. The text is valid until the
 * next call. */
const char *sr_errname(int e);

/* Starts the interpreter on sc (read by sp_read_script, kept by the
 * caller), which must outlive it. */
void sr_run_init(const struct sr_script *sc);

/* Runs a job the host was handed (post, microtask), and frees it. */
void sr_run_job(void *job);

/* The connections are ready: "sync start" when the script asks for it.
 * The first task is then sr_run_next_task's to post. */
void sr_run_start(void);

/* Posts the next script task; after the last one, syncs "done" (once). */
void sr_run_next_task(void);

/* Script task n (1-based) has ended, with its microtasks: its sync point
 * when the script asks for one, then the next task is posted. */
void sr_run_task_end(size_t n);

/* Runs the handlers of event ev on conn, in script order. */
void sr_run_handlers(enum sr_ev_kind ev, int conn);

/* Reports a sync POINT with each connection's bytes written (host
 * written), then waits for the harness's "go". */
void sr_run_sync(const char *point);

/* Says on the event pipe ("note ...") when the loop ended before the
 * script's last task was posted. */
void sr_run_note_unfinished(void);

#endif
