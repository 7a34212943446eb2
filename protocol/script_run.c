/*
 * script_run.c: the script's interpreter (script_run.h).
 */
#include "script_run.h"

#include "subject_pipe.h"

#include <stdio.h>
#include <stdlib.h>

/* A sync line carries at most this many connections' counts. */
#define SYNC_MAX_CONNS 1024

static struct {
	const struct sr_script *sc;
	const struct sr_host *host;
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

void sr_run_init(const struct sr_script *sc, const struct sr_host *host)
{
	R.sc = sc;
	R.host = host;
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
		written[i] = R.host->written(i);
	sp_sync(point, written, n);
}

static void checkpoint(int conn)
{
	char point[32], text[32];

	snprintf(point, sizeof(point), "checkpoint:%d", ++R.checkpoints);
	snprintf(text, sizeof(text), "checkpoint %d", R.checkpoints);
	R.host->event(conn, text);
	sr_run_sync(point);
}

/* An op acts on its block's connection, unless it names another (conn=). */
static void run_op(const struct sr_op *op, int conn)
{
	int target = op->conn >= 0 ? op->conn : conn;

	if (op->kind == SR_OP_CHECKPOINT)
		checkpoint(target);
	else
		R.host->run_op(op, target);
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

	if (!R.host->pending(c)) {
		R.host->event(c, "drained");
		return 0;
	}
	j = job_new(b, i, conn);
	j->task_start = n > 0;
	R.host->post(j);
	if (n > 0 && R.host->task_waits)
		R.host->task_waits(n);
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
			R.host->microtask(j);
			continue;
		}
		run_op(op, conn);
	}
	if (n > 0 && R.host->task_ran)
		R.host->task_ran(n);
}

void sr_run_job(void *arg)
{
	struct job j = *(struct job *)arg;

	free(arg);
	if (j.one_op) {
		run_op(&j.block->ops[j.next], j.conn);
		return;
	}
	if (j.task_start && R.host->task_runs)
		R.host->task_runs(task_number(j.block));
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
	R.host->post(j);
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
