/*
 * script_run.c: the script's interpreter (script_run.h).
 */
#include "script_run.h"

#include "subject_pipe.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* A sync line carries at most this many connections' counts. */
#define SYNC_MAX_CONNS 1024

static struct {
	const struct sr_script *sc;
	size_t next_task;   /* index of the script task to post next */
	int checkpoints;    /* checkpoints passed so far */
} R;

/* Something to run later: a script task, one op (a microtask), or the
 * rest of a block after await-drained. */
struct job {
	const struct sr_block *block;
	size_t next;        /* the op to start at */
	int conn;
	int one_op;         /* run only ops[next] */
	int task_start;     /* a script task begins or goes on here */
};

void sr_run_init(const struct sr_script *sc)
{
	R.sc = sc;
	R.next_task = 0;
	R.checkpoints = 0;
}

static size_t task_number(const struct sr_block *b)
{
	if (b >= R.sc->tasks && b < R.sc->tasks + R.sc->ntasks)
		return (size_t)(b - R.sc->tasks) + 1;
	return 0;
}

static struct job *job_new(const struct sr_block *b, size_t next, int conn)
{
	struct job *j = malloc(sizeof(*j));

	if (!j)
		sp_fatal("out of memory");
	*j = (struct job){ .block = b, .next = next, .conn = conn };
	return j;
}

void sr_run_sync(const char *point)
{
	static uint64_t written[SYNC_MAX_CONNS];
	int n = R.sc->nconns < SYNC_MAX_CONNS ? R.sc->nconns : SYNC_MAX_CONNS;

	for (int i = 0; i < n; i++)
		written[i] = sr_host_written(i);
	sp_sync(point, written, n);
}

static void checkpoint(int conn)
{
	char point[32], text[32];

	snprintf(point, sizeof(point), "checkpoint:%d", ++R.checkpoints);
	snprintf(text, sizeof(text), "checkpoint %d", R.checkpoints);
	sr_host_event(conn, text);
	sr_run_sync(point);
}

/* ---- the ops on the process ------------------------------------------- */

const char *sr_errname(int e)
{
	static char buf[16];
	const char *n = fi_errno_name(e < 0 ? -e : e);

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "E%d", e < 0 ? -e : e);
	return buf;
}

static void event(int conn, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void event(int conn, const char *fmt, ...)
{
	char text[256];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	sr_host_event(conn, text);
}

/* "SIGTERM", or the number for a signal the gate does not name. */
static const char *sig_text(int sig, char *buf, size_t len)
{
	const char *name = fi_signal_name(sig);

	if (name)
		return name;
	snprintf(buf, len, "%d", sig);
	return buf;
}

static void op_signal(const struct sr_op *op, int conn)
{
	char buf[16];
	const char *name = sig_text(op->sig, buf, sizeof(buf));
	int rc;

	if (op->external) {
		event(conn, "signal %s external", name);
		/* With the process's pid: under strace the harness's child is
		 * strace, and the signal is for the subject. */
		sp_line("kill %d %d", op->sig, (int)getpid());
		sp_wait_go();
		return;
	}
	event(conn, "signal %s", name);
	rc = sr_host_raise(op->sig);
	if (rc < 0)
		event(conn, "signal %d refused", op->sig);
}

static void op_ignore(const struct sr_op *op, int conn)
{
	const char *name = fi_signal_name(op->sig);
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(op->sig, &sa, NULL) < 0)
		event(conn, "ignore %d -> %s", op->sig, sr_errname(errno));
	else
		event(conn, "ignore %s", name ? name : "?");
}

static void op_execve(int conn)
{
	char *argv[] = { "true", NULL };
	int rc;

	event(conn, "execve /bin/true");
	rc = sr_host_execve("/bin/true", argv, environ);
	event(conn, "execve -> %s", sr_errname(rc));
}

/* Runs op when it is the process's; returns 0 when it is the stack's. */
static int process_op(const struct sr_op *op, int conn)
{
	switch (op->kind) {
	case SR_OP_SIGNAL:
		op_signal(op, conn);
		return 1;
	case SR_OP_IGNORE:
		op_ignore(op, conn);
		return 1;
	case SR_OP_DISARM:
		sr_host_disarm();
		event(conn, "disarm");
		return 1;
	case SR_OP_ABORT:
		event(conn, "abort");
		sr_host_abort();
	case SR_OP_EXIT:
		event(conn, "exit %d", op->sig);
		sr_host_exit(op->sig);
	case SR_OP_EXECVE:
		op_execve(conn);
		return 1;
	default:
		return 0;
	}
}

/* An op acts on its block's connection, unless it names another (conn=). */
static void run_op(const struct sr_op *op, int conn)
{
	int target = op->conn >= 0 ? op->conn : conn;

	switch (op->kind) {
	case SR_OP_CHECKPOINT: checkpoint(target); return;
	case SR_OP_WRITE: sr_host_write(op, target); return;
	case SR_OP_WRITE_OWNED: sr_host_write_owned(op, target); return;
	case SR_OP_OVERWRITE: sr_host_overwrite(op, target); return;
	case SR_OP_END: sr_host_end(op, target); return;
	default:
		if (!process_op(op, target))
			sr_host_run_op(op, target);
	}
}

/* await-drained: while the connection still has bytes the kernel has not
 * taken, the rest of the block goes to a later task (posted, so that I/O
 * runs in between). Tasks that only wait report nothing, so they take no
 * number. Returns 1 when the block waits. */
static int await_drained(const struct sr_block *b, size_t i, int conn)
{
	int c = b->ops[i].conn >= 0 ? b->ops[i].conn : conn;
	struct job *j;
	size_t n = task_number(b);

	if (!sr_host_pending(c)) {
		sr_host_event(c, "drained");
		return 0;
	}
	j = job_new(b, i, conn);
	j->task_start = n > 0;
	sr_host_post(j);
	if (n > 0)
		sr_host_task_waits(n);
	return 1;
}

static void run_block_from(const struct sr_block *b, int conn, size_t from)
{
	size_t n = task_number(b);

	for (size_t i = from; i < b->nops; i++) {
		const struct sr_op *op = &b->ops[i];

		if (op->kind == SR_OP_AWAIT_DRAINED) {
			if (await_drained(b, i, conn))
				return;
			continue;
		}
		if (op->micro) {
			struct job *j = job_new(b, i, conn);

			j->one_op = 1;
			sr_host_microtask(j);
			continue;
		}
		run_op(op, conn);
	}
	if (n > 0)
		sr_host_task_ran(n);
}

void sr_run_job(void *arg)
{
	struct job j = *(struct job *)arg;

	free(arg);
	if (j.one_op) {
		run_op(&j.block->ops[j.next], j.conn);
		return;
	}
	if (j.task_start)
		sr_host_task_runs(task_number(j.block));
	run_block_from(j.block, j.conn, j.next);
}

void sr_run_start(void)
{
	if (R.sc->sync_start)
		sr_run_sync("start");
}

void sr_run_next_task(void)
{
	struct job *j;

	if (R.next_task == R.sc->ntasks) {
		R.next_task++;
		sr_run_sync("done");
		return;
	}
	if (R.next_task > R.sc->ntasks)
		return;
	j = job_new(&R.sc->tasks[R.next_task], 0, R.sc->tasks[R.next_task].conn);
	j->task_start = 1;
	R.next_task++;
	sr_host_post(j);
}

void sr_run_task_end(size_t n)
{
	char point[32];

	if (R.sc->sync_task[n]) {
		snprintf(point, sizeof(point), "task:%zu", n);
		sr_run_sync(point);
	}
	sr_run_next_task();
}

void sr_run_handlers(enum sr_ev_kind ev, int conn)
{
	for (size_t i = 0; i < R.sc->nhandlers; i++) {
		const struct sr_block *h = &R.sc->handlers[i];

		if (h->event == ev && (h->conn < 0 || h->conn == conn))
			run_block_from(h, conn, 0);
	}
}

void sr_run_note_unfinished(void)
{
	if (R.sc && R.next_task <= R.sc->ntasks)
		sp_line("note the loop ended before task %zu", R.next_task + 1);
}
