/*
 * batching.c: what write batching (oven-sh/bun#45246) changes for a task
 * that makes N writes on one socket: the PR's "Numbers" table, rows for
 * rows, on the reference stack.
 *
 * A round: one posted task on the stack's loop makes the row's N writes on
 * one connected socket (TCP over 127.0.0.1, or a unix socket with --unix).
 * The peer is a forked process that reads as fast as it can (blocking recv
 * of 256 KiB) and, once it has read every byte of the round, writes 1 byte
 * back; the sender's on_data for that byte ends the round and posts the
 * task of the next one. So a round's time, CLOCK_MONOTONIC from the start
 * of the writing task to that on_data, ends when the peer has read every
 * byte, as in the PR ("a round ends when the client has read every byte").
 *
 * Sends per round: send + sendto + sendmsg + write + writev of the gate's
 * counters (fi_counters), from the start of the writing task to the reply's
 * on_data, so the sends of later writable events are in them too. The task
 * hook splits them into the sends made inside the write calls and those of
 * the end of the task (the batch).
 *
 * Three configurations, batch=off, batch=off again (the same code, to show
 * the noise) and batch=on, switched with rs_variant_set("batch", ...)
 * between blocks of rounds. A block runs every row in every configuration:
 * WARMUP_ROUNDS unmeasured rounds then the measured ones; the order of the
 * configurations rotates by block and by row, so that none always runs
 * first or last. A time is the median over all the measured rounds of a
 * row and configuration (blocks x rounds of them). The noise band of a row
 * is the largest |off / off again - 1| among its per-block medians.
 *
 * TCP: TCP_NODELAY on both ends (the stack has no option for it, so the
 * bench sets it on the socket's fd once connected), as a server that writes
 * frames sets it; with Nagle on, the kernel would hold a small send behind
 * an unacknowledged one and coalesce the unbatched sends by itself.
 *
 * usage: batching [--unix] [--quick] [--blocks N] [--rounds N] [--json]
 * It prints one JSON object (--json changes nothing); the report's
 * bench_batching section renders it.
 * Exits 0 when the benchmark ran (the targets are in the JSON, PASS or FAIL),
 * 1 when something failed (a byte count, a reply, a callback), 2 on a usage
 * error.
 */
#ifndef _GNU_SOURCE
/* clock_gettime and the other POSIX interfaces used here are hidden by a
 * strict -std=c11 build without a feature macro. */
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "fi.h"
#include "rs.h"

#define KIB ((size_t)1024)
#define READ_CHUNK (256 * KIB)
#define MAX_WRITE (256 * KIB)

/* --blocks and --rounds when not given, without and with --quick. */
static const struct bc_block_defaults block_defaults = {
	.blocks = 7, .rounds = 200, .quick_blocks = 3, .quick_rounds = 40
};

#define WARMUP_ROUNDS 10

/* The targets. */
#define TARGET_RATIO 25.0
#define TARGET_SENDS 2

/* The peer's reply, one per round. */
#define ACK 'A'

struct row {
	const char *label;
	int writes;
	size_t size;
	int callback;
};

static const struct row rows[] = {
	{ "2 x write(262144 B)", 2, 262144, 0 },
	{ "16 x write(49152 B)", 16, 49152, 0 },
	{ "16 x write(32768 B)", 16, 32768, 0 },
	{ "16 x write(16384 B)", 16, 16384, 0 },
	{ "16 x write(1024 B)", 16, 1024, 0 },
	{ "1 x write(128 B)", 1, 128, 0 },
	{ "2 x write(128 B)", 2, 128, 0 },
	{ "16 x write(128 B)", 16, 128, 0 },
	{ "64 x write(128 B)", 64, 128, 0 },
	{ "256 x write(128 B)", 256, 128, 0 },
	{ "64 x write(128 B, callback)", 64, 128, 1 },
};

#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))
/* The rows the targets name. */
#define ROW_ONE 5
#define ROW_256 9
#define ROW_CB 10

enum config { C_OFF, C_OFF2, C_ON, NCONFIGS };

static const char *const config_keys[NCONFIGS] = { "off", "off2", "on" };
static const char *const config_values[NCONFIGS] = { "off", "off", "on" };

/* One measured round. */
struct sample {
	double us;
	uint32_t sends;    /* every writing call until the reply */
	uint32_t in_call;  /* of which inside the write calls */
	uint32_t at_end;   /* of which at the end of the writing task */
};

struct stat3 {
	double mean;
	uint32_t min;
	uint32_t max;
};

/* One row in one configuration, over the blocks. */
struct cell {
	struct sample *samples; /* [block * rounds + round] */
	double median_us;
	double *block_median_us;
	struct stat3 sends;
	struct stat3 in_call;
	struct stat3 at_end;
};

/* Sent to the peer before each (row, configuration) unit of a block. A
 * message with rounds 0 tells it to exit. */
struct ctl_msg {
	uint64_t round_bytes;
	uint64_t rounds;
};

struct peer {
	pid_t pid;
	int ctl;          /* write end of the control pipe */
	const char *path; /* the unix socket's, or NULL over TCP */
	int port;
};

struct bench {
	const struct bc_block_options *o;
	struct peer *peer;
	rs_loop *loop;
	rs_socket *s;
	char *payload;
	int nunits;
	int unit;
	int block;
	int row;
	int config;
	int round;        /* within the unit, warm-up rounds included */
	int total_rounds;
	double t0;
	uint64_t sends0;
	uint64_t sends_body;
	uint32_t in_call;
	uint32_t at_end;
	int in_round;     /* the running task is a round's writing task */
	int callbacks;
	int finished;
};

static struct cell cells[NROWS][NCONFIGS];
static struct peer the_peer = { .pid = -1, .ctl = -1 };

/* ------------------------------------------------------------------------ */
/* Small helpers.                                                           */

static double abs_double(double d)
{
	return d < 0.0 ? -d : d;
}

/* ------------------------------------------------------------------------ */
/* The peer process.                                                        */

/* Reads one round: exactly round_bytes (the sender writes the next round
 * only after the reply, so more is an error), then replies 1 byte. */
static int peer_round(int fd, char *buf, uint64_t round_bytes)
{
	uint64_t got = 0;
	ssize_t n;

	while (got < round_bytes) {
		n = recv(fd, buf, READ_CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "batching peer: recv: %s\n",
				strerror(errno));
			return -1;
		}
		if (n == 0) {
			fprintf(stderr, "batching peer: EOF after %" PRIu64
				" of %" PRIu64 " bytes\n", got, round_bytes);
			return -1;
		}
		got += (uint64_t)n;
	}
	if (got != round_bytes) {
		fprintf(stderr, "batching peer: read %" PRIu64 " bytes, the "
			"round has %" PRIu64 "\n", got, round_bytes);
		return -1;
	}
	for (;;) {
		n = send(fd, &(char){ ACK }, 1, MSG_NOSIGNAL);
		if (n == 1)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		fprintf(stderr, "batching peer: send: %s\n",
			n < 0 ? strerror(errno) : "sent nothing");
		return -1;
	}
}

/* The peer: one connection, then rounds as the control pipe announces them
 * until a message with 0 rounds (or EOF, which is an error: the sender
 * died). Returns the exit status. */
static int peer_main(int lfd, int ctl, int tcp)
{
	char *buf = malloc(READ_CHUNK);
	struct ctl_msg m;
	int fd, status = 0;

	if (buf == NULL)
		return 1;
	do
		fd = accept(lfd, NULL, NULL);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		fprintf(stderr, "batching peer: accept: %s\n", strerror(errno));
		free(buf);
		return 1;
	}
	if (close(lfd) != 0 || (tcp && bc_set_nodelay(fd) != 0)) {
		fprintf(stderr, "batching peer: setup: %s\n", strerror(errno));
		status = 1;
	}
	while (status == 0) {
		if (bc_read_full(ctl, &m, sizeof(m)) != 0) {
			fprintf(stderr, "batching peer: the sender is gone\n");
			status = 1;
			break;
		}
		if (m.rounds == 0)
			break;
		for (uint64_t i = 0; i < m.rounds && status == 0; i++) {
			if (peer_round(fd, buf, m.round_bytes) != 0)
				status = 1;
		}
	}
	if (close(fd) != 0)
		status = 1;
	free(buf);
	return status;
}

/* Makes the listener and forks the peer, before anything is allocated. */
static void peer_start(struct peer *p, int unix_socket)
{
	int ctl[2], lfd;

	if (unix_socket) {
		p->path = bc_socket_dir("/tmp/wirecheck-batching.XXXXXX");
		lfd = bc_listen_unix(p->path, 1);
	} else {
		lfd = bc_listen_tcp(1, &p->port);
	}
	bc_pipe(ctl);
	p->pid = bc_fork();
	if (p->pid == 0) {
		if (close(ctl[1]) != 0)
			_exit(1);
		_exit(peer_main(lfd, ctl[0], !unix_socket));
	}
	if (close(ctl[0]) != 0 || close(lfd) != 0)
		bc_die("close: %s", strerror(errno));
	p->ctl = ctl[1];
}

static void peer_send(const struct peer *p, uint64_t round_bytes,
		      uint64_t rounds)
{
	struct ctl_msg m = { round_bytes, rounds };

	if (bc_write_full(p->ctl, &m, sizeof(m)) != 0)
		bc_die("cannot reach the peer: %s", strerror(errno));
}

static void peer_stop(struct peer *p)
{
	if (close(p->ctl) != 0)
		bc_die("close: %s", strerror(errno));
	p->ctl = -1;
	bc_wait_child(p->pid, "peer");
	p->pid = -1;
}

/* ------------------------------------------------------------------------ */
/* The sender, on the reference stack.                                      */

static void unit_start(struct bench *b);
static void round_task(rs_loop *loop, void *arg);

static void post_round(struct bench *b)
{
	int rc = rs_loop_post(b->loop, round_task, b);

	if (rc < 0)
		bc_die("rs_loop_post: %s", strerror(-rc));
}

/* The end of a task: what was sent since the body's write calls is the
 * end-of-task work, the batch. */
static void task_hook(rs_loop *loop, uint64_t task, void *arg)
{
	struct bench *b = arg;

	(void)loop;
	(void)task;
	if (b->in_round) {
		b->at_end = (uint32_t)(bc_gate_writes() - b->sends_body);
		b->in_round = 0;
	}
}

static void write_done(rs_socket *s, int status, void *arg)
{
	struct bench *b = arg;

	(void)s;
	if (status != 0)
		bc_die("a write's callback failed: %s", strerror(-status));
	b->callbacks++;
}

/* One round's task: the row's writes, nothing else. */
static void round_task(rs_loop *loop, void *arg)
{
	struct bench *b = arg;
	const struct row *r = &rows[b->row];
	rs_write_cb cb = r->callback ? write_done : NULL;

	(void)loop;
	b->callbacks = 0;
	b->in_round = 1;
	b->at_end = 0;
	b->t0 = bc_clock_us(CLOCK_MONOTONIC);
	b->sends0 = bc_gate_writes();
	for (int i = 0; i < r->writes; i++) {
		/* 0 asks to wait for drain; the PR's rounds write regardless,
		 * and so does this one: the stack queues what the kernel
		 * refuses. */
		int rc = rs_socket_write(b->s, b->payload, r->size, cb, b);

		if (rc < 0)
			bc_die("rs_socket_write: %s", strerror(-rc));
	}
	b->sends_body = bc_gate_writes();
	b->in_call = (uint32_t)(b->sends_body - b->sends0);
}

static void bench_finish(struct bench *b)
{
	peer_send(b->peer, 0, 0);
	b->finished = 1;
	rs_socket_destroy(b->s, 0);
}

/* The peer's reply: the round is over. */
static void on_data(rs_socket *s, const char *data, size_t len, void *arg)
{
	struct bench *b = arg;
	double t1 = bc_clock_us(CLOCK_MONOTONIC);
	uint64_t sends = bc_gate_writes() - b->sends0;
	const struct row *r = &rows[b->row];

	(void)s;
	if (len != 1 || data[0] != ACK)
		bc_die("the peer replied %zu bytes, expected 1", len);
	if (b->in_round)
		bc_die("the reply came before the end of the writing task");
	if (r->callback && b->callbacks != r->writes)
		bc_die("%d of %d callbacks ran before the peer had every byte",
		       b->callbacks, r->writes);
	if (b->round >= WARMUP_ROUNDS) {
		struct cell *c = &cells[b->row][b->config];
		size_t i = (size_t)b->block * (size_t)b->o->rounds +
			   (size_t)(b->round - WARMUP_ROUNDS);

		c->samples[i] = (struct sample){ t1 - b->t0, (uint32_t)sends,
						 b->in_call, b->at_end };
	}
	b->round++;
	if (b->round < b->total_rounds) {
		post_round(b);
		return;
	}
	b->unit++;
	if (b->unit < b->nunits)
		unit_start(b);
	else
		bench_finish(b);
}

/* A unit: one row in one configuration within a block. Switched between
 * rounds, when no batch holds anything. */
static void unit_start(struct bench *b)
{
	int u = b->unit, i = u % NCONFIGS, rc;
	const struct row *r;

	b->block = u / (NROWS * NCONFIGS);
	b->row = (u / NCONFIGS) % NROWS;
	b->config = (b->block + b->row + i) % NCONFIGS;
	r = &rows[b->row];
	rc = rs_variant_set("batch", config_values[b->config]);
	if (rc < 0)
		bc_die("rs_variant_set: %s", strerror(-rc));
	b->round = 0;
	b->total_rounds = WARMUP_ROUNDS + b->o->rounds;
	peer_send(b->peer, (uint64_t)r->writes * r->size,
		  (uint64_t)b->total_rounds);
	post_round(b);
}

static void on_connect(rs_socket *s, void *arg)
{
	struct bench *b = arg;

	if (!b->o->unix_socket && bc_set_nodelay(rs_socket_fd(s)) != 0)
		bc_die("setsockopt(TCP_NODELAY): %s", strerror(errno));
	unit_start(b);
}

static void on_end(rs_socket *s, void *arg)
{
	(void)s;
	(void)arg;
	bc_die("the peer closed the connection in the middle of the rounds");
}

static void on_error(rs_socket *s, int code, const char *syscall, void *arg)
{
	(void)s;
	(void)arg;
	bc_die("the socket failed: %s: %s", syscall, strerror(code));
}

static void on_close(rs_socket *s, int had_error, void *arg)
{
	struct bench *b = arg;

	(void)s;
	if (!b->finished || had_error)
		bc_die("the socket closed before the last round");
}

static void bench_run(struct bench *b)
{
	static const struct rs_socket_events events = {
		.on_connect = on_connect,
		.on_data = on_data,
		.on_end = on_end,
		.on_error = on_error,
		.on_close = on_close,
	};
	int rc;

	b->nunits = b->o->blocks * NROWS * NCONFIGS;
	b->loop = bc_loop_new();
	rs_loop_set_hook(b->loop, task_hook, b);
	rc = b->o->unix_socket
		     ? rs_connect_unix(b->loop, b->peer->path, NULL, &events, b,
				       &b->s)
		     : rs_connect_tcp(b->loop, "127.0.0.1", b->peer->port, NULL,
				      &events, b, &b->s);
	if (rc < 0)
		bc_die("connect: %s", strerror(-rc));
	bc_loop_run_free(b->loop);
	b->loop = NULL;
	if (!b->finished)
		bc_die("the loop ended before the last round");
}

/* ------------------------------------------------------------------------ */
/* Reduction.                                                               */

static void stat_add(struct stat3 *st, uint32_t v, size_t i)
{
	st->mean += v;
	if (i == 0 || v < st->min)
		st->min = v;
	if (i == 0 || v > st->max)
		st->max = v;
}

static void cells_alloc(const struct bc_block_options *o)
{
	size_t n = (size_t)o->blocks * (size_t)o->rounds;

	for (int r = 0; r < NROWS; r++)
	for (int c = 0; c < NCONFIGS; c++) {
		cells[r][c].samples = calloc(n, sizeof(struct sample));
		cells[r][c].block_median_us =
			calloc((size_t)o->blocks, sizeof(double));
		if (cells[r][c].samples == NULL ||
		    cells[r][c].block_median_us == NULL)
			bc_die("out of memory");
	}
}

static void cells_free(void)
{
	for (int r = 0; r < NROWS; r++)
	for (int c = 0; c < NCONFIGS; c++) {
		free(cells[r][c].samples);
		free(cells[r][c].block_median_us);
	}
}

static void cells_reduce(const struct bc_block_options *o)
{
	size_t n = (size_t)o->blocks * (size_t)o->rounds;
	double *v = malloc(n * sizeof(double));

	if (v == NULL)
		bc_die("out of memory");
	for (int r = 0; r < NROWS; r++)
	for (int c = 0; c < NCONFIGS; c++) {
		struct cell *x = &cells[r][c];

		for (int k = 0; k < o->blocks; k++) {
			size_t base = (size_t)k * (size_t)o->rounds;

			for (int i = 0; i < o->rounds; i++)
				v[i] = x->samples[base + (size_t)i].us;
			x->block_median_us[k] =
				bc_median(v, (size_t)o->rounds);
		}
		for (size_t i = 0; i < n; i++) {
			v[i] = x->samples[i].us;
			stat_add(&x->sends, x->samples[i].sends, i);
			stat_add(&x->in_call, x->samples[i].in_call, i);
			stat_add(&x->at_end, x->samples[i].at_end, i);
		}
		x->median_us = bc_median(v, n);
		x->sends.mean /= (double)n;
		x->in_call.mean /= (double)n;
		x->at_end.mean /= (double)n;
	}
	free(v);
}

static double ratio_off_on(int r)
{
	return cells[r][C_OFF].median_us / cells[r][C_ON].median_us;
}

static double ratio_off_off2(int r)
{
	return cells[r][C_OFF].median_us / cells[r][C_OFF2].median_us;
}

/* The noise band of a row: the largest |off / off again - 1| among the
 * blocks' medians, what two runs of the same code disagree by. */
static double noise_band(const struct bc_block_options *o, int r)
{
	double band = 0.0;

	for (int k = 0; k < o->blocks; k++) {
		double d = abs_double(cells[r][C_OFF].block_median_us[k] /
					      cells[r][C_OFF2].block_median_us[k] -
				      1.0);

		if (d > band)
			band = d;
	}
	return band;
}

/* ------------------------------------------------------------------------ */
/* Targets.                                                                 */

enum target { T_SENDS, T_RATIO, T_ONE, T_CB, NTARGETS };

struct verdict {
	int pass;
	char what[160];
	char measured[200];
};

static void verdict_set(struct verdict *v, int pass, const char *what,
			const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void verdict_set(struct verdict *v, int pass, const char *what,
			const char *fmt, ...)
{
	va_list ap;
	int n;

	v->pass = pass;
	n = snprintf(v->what, sizeof(v->what), "%s", what);
	if (n < 0 || (size_t)n >= sizeof(v->what))
		bc_die("target text too long");
	va_start(ap, fmt);
	n = vsnprintf(v->measured, sizeof(v->measured), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(v->measured))
		bc_die("target text too long");
}

/* A 1.00x row: off/on within the row's noise band, and the same sends. */
static void verdict_flat(const struct bc_block_options *o, struct verdict *v,
			 int r)
{
	double ratio = ratio_off_on(r), band = noise_band(o, r);
	const struct cell *off = &cells[r][C_OFF], *on = &cells[r][C_ON];
	int same = off->sends.min == on->sends.min &&
		   off->sends.max == on->sends.max;
	char what[160];

	int n = snprintf(what, sizeof(what),
			 "%s: off/on 1.00x within the noise band, same sends "
			 "per round",
			 rows[r].label);

	if (n < 0 || (size_t)n >= sizeof(what))
		bc_die("target text too long");
	verdict_set(v, abs_double(ratio - 1.0) <= band && same, what,
		    "%.3fx, band 1 +- %.3f (largest abs(off/off again - 1) of "
		    "the %d blocks); sends %.2f off, %.2f on",
		    ratio, band, o->blocks, off->sends.mean, on->sends.mean);
}

static void targets_eval(const struct bc_block_options *o, struct verdict *v)
{
	const struct cell *on = &cells[ROW_256][C_ON];
	double ratio = ratio_off_on(ROW_256);

	verdict_set(&v[T_SENDS],
		    on->sends.min == TARGET_SENDS &&
			    on->sends.max == TARGET_SENDS &&
			    on->in_call.min == 1 && on->in_call.max == 1 &&
			    on->at_end.min == 1 && on->at_end.max == 1,
		    "256 x write(128 B), batch=on: 2 sends in every round "
		    "(1 in the call + 1 batch at the end of the task)",
		    "sends %" PRIu32 "-%" PRIu32 " (in the calls %" PRIu32
		    "-%" PRIu32 ", at the end of the task %" PRIu32 "-%" PRIu32
		    ") over %d rounds",
		    on->sends.min, on->sends.max, on->in_call.min,
		    on->in_call.max, on->at_end.min, on->at_end.max,
		    o->blocks * o->rounds);
	verdict_set(&v[T_RATIO], ratio >= TARGET_RATIO,
		    "256 x write(128 B): off/on >= 25x", "%.2fx", ratio);
	verdict_flat(o, &v[T_ONE], ROW_ONE);
	verdict_flat(o, &v[T_CB], ROW_CB);
}

/* ------------------------------------------------------------------------ */
/* Output: JSON, rendered by the report's bench_batching section.           */

static json_t *json_stat(const struct stat3 *st)
{
	return bc_pack("{s:o, s:I, s:I}", "mean", bc_real(st->mean, 3),
		       "min", (json_int_t)st->min, "max", (json_int_t)st->max);
}

static json_t *json_cell(const struct bc_block_options *o,
			 const struct cell *x)
{
	json_t *blocks = bc_pack("[]");

	for (int k = 0; k < o->blocks; k++)
		bc_append(blocks, bc_real(x->block_median_us[k], 3));
	return bc_pack("{s:o, s:o, s:o, s:o, s:o}",
		       "median_us", bc_real(x->median_us, 3),
		       "block_median_us", blocks,
		       "sends", json_stat(&x->sends),
		       "sends_in_call", json_stat(&x->in_call),
		       "sends_at_end_of_task", json_stat(&x->at_end));
}

static json_t *json_row(const struct bc_block_options *o, int r)
{
	json_t *configs = bc_pack("{}");

	for (int c = 0; c < NCONFIGS; c++)
		bc_set(configs, config_keys[c], json_cell(o, &cells[r][c]));
	return bc_pack("{s:s, s:i, s:I, s:b, s:o, s:o, s:o, s:o}",
		       "label", rows[r].label, "writes", rows[r].writes,
		       "size", (json_int_t)rows[r].size,
		       "callback", rows[r].callback, "configs", configs,
		       "ratio_off_on", bc_real(ratio_off_on(r), 4),
		       "ratio_off_off2", bc_real(ratio_off_off2(r), 4),
		       "noise_band", bc_real(noise_band(o, r), 4));
}

static void print_json(const struct bc_block_options *o, int argc, char **argv,
		       const struct bc_machine *m)
{
	struct verdict v[NTARGETS];
	json_t *report = bc_report_new(argc, argv), *jrows, *targets;

	bc_set(report, "transport", json_string(o->unix_socket ? "unix" : "tcp"));
	bc_set(report, "blocks", json_integer(o->blocks));
	bc_set(report, "rounds_per_block", json_integer(o->rounds));
	bc_set(report, "warmup_rounds_per_block", json_integer(WARMUP_ROUNDS));
	bc_set(report, "time",
	       json_string("CLOCK_MONOTONIC, writing task start to the reply's "
			   "on_data, microseconds, median over rounds"));
	bc_report_machine(report, m);
	bc_set(report, "rows", jrows = bc_pack("[]"));
	for (int r = 0; r < NROWS; r++)
		bc_append(jrows, json_row(o, r));
	targets_eval(o, v);
	targets = bc_pack("[]");
	for (int t = 0; t < NTARGETS; t++)
		bc_append(targets, bc_target(v[t].what, v[t].measured, v[t].pass));
	bc_report_targets(report, targets);
	bc_report_print(report);
}

/* ------------------------------------------------------------------------ */
/* Options and main.                                                        */

static int usage(void)
{
	fprintf(stderr,
		"usage: batching [--unix] [--quick] [--blocks N] [--rounds N] "
		"[--json]\n"
		"  --unix      a unix socket instead of TCP over 127.0.0.1\n"
		"  --quick     %d blocks of %d rounds (default %d of %d)\n"
		"  --blocks N  blocks (every row in every configuration)\n"
		"  --rounds N  measured rounds per row and configuration in a "
		"block\n"
		"  --json      accepted; the output is JSON either way\n",
		block_defaults.quick_blocks, block_defaults.quick_rounds,
		block_defaults.blocks, block_defaults.rounds);
	return 2;
}

static int parse_options(int argc, char **argv, struct bc_block_options *o)
{
	/* batching has no flag of its own. */
	return bc_parse_block_options(argc, argv, &block_defaults, NULL, NULL,
				      o);
}

int main(int argc, char **argv)
{
	struct bc_block_options o;
	struct bench b;
	struct bc_machine m;

	bc_set_prog("batching");
	if (parse_options(argc, argv, &o) < 0)
		return usage();
	/* A peer that died makes the control pipe's write fail with EPIPE,
	 * which is reported, instead of killing this process silently. */
	bc_ignore_sigpipe();
	peer_start(&the_peer, o.unix_socket);
	if (fi_init() != 0)
		bc_die("fi_init failed");
	memset(&b, 0, sizeof(b));
	b.o = &o;
	b.peer = &the_peer;
	b.payload = malloc(MAX_WRITE);
	if (b.payload == NULL)
		bc_die("out of memory");
	for (size_t i = 0; i < MAX_WRITE; i++)
		b.payload[i] = (char)('a' + i % 26);
	cells_alloc(&o);
	m = bc_machine_start();
	bench_run(&b);
	bc_machine_end(&m);
	peer_stop(&the_peer);
	cells_reduce(&o);
	print_json(&o, argc, argv, &m);
	cells_free();
	free(b.payload);
	return 0;
}
