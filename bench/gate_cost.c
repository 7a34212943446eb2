/*
 * gate_cost.c: what the fault gate costs a send(), disarmed and armed.
 *
 * Three variants send 1 byte on a non-blocking AF_UNIX socketpair:
 *   direct    send() itself, the baseline;
 *   disarmed  fi_send() with no rule: the counters and one branch;
 *   armed     fi_send() with one rule on send that never matches (it names
 *             another fd): the slow path, one fiu_fail() and the callback.
 * The kernel's share of a send (about a microsecond and a half) is far
 * larger and noisier than the gate's, so the timed mode interleaves the
 * variants batch by batch (in a rotating order, so that none always runs
 * first after a drain) and reports the medians over rounds, and the median
 * of each round's difference to direct. The reader drains outside the
 * timed batches, and the armed variant arms its rule outside them too.
 *
 * usage: gate_cost [all|direct|disarmed|armed] [CALLS]
 *   all (default)   timed rounds of every variant; prints ns per call as
 *                   JSON ({"setup", "rows": [{"variant", "median_ns",
 *                   "median_diff_ns"}]}), which the report renders.
 *   VARIANT         only that variant, CALLS sends, untimed: for
 *                   valgrind --tool=callgrind --toggle-collect=run_calls,
 *                   whose Ir divided by CALLS is instructions per call
 *                   (prints {"sends", "variant"}).
 * Exits 0, 1 when a send fails, 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "fi.h"

enum variant { DIRECT, DISARMED, ARMED, VARIANT_COUNT };

static const char *const variant_names[VARIANT_COUNT] = {
	"direct", "disarmed", "armed"};

/* 64 one-byte sends fit easily in a unix socket's send buffer (each takes
 * an skb of about 1 KiB of its 208 KiB default), so a batch never sees
 * EAGAIN; the reader drains after each batch. */
#define BATCH 64
#define ROUNDS 2001
#define BATCHES_PER_ROUND 16

struct bench {
	int fd[2];
	unsigned long failures;
};

static int bench_open(struct bench *b)
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b->fd) != 0) {
		perror("socketpair");
		return -1;
	}
	b->failures = 0;
	return 0;
}

static void bench_close(struct bench *b)
{
	if (close(b->fd[0]) != 0 || close(b->fd[1]) != 0)
		perror("close");
}

/* Empties the reader's side so that the next batch finds room. */
static void bench_drain(struct bench *b)
{
	char buf[4096];

	while (recv(b->fd[1], buf, sizeof(buf), 0) > 0)
		continue;
}

/* Arms the one rule of the armed variant: on send, but for the reader's
 * fd, so the slow path runs and nothing fires. */
static int bench_arm(struct bench *b)
{
	char spec[64], err[256];
	struct fi_rule rule;

	snprintf(spec, sizeof(spec), "send:errno=EPIPE,fd=%d", b->fd[1]);
	if (fi_rule_parse(spec, &rule, err, sizeof(err)) != 0) {
		fprintf(stderr, "gate_cost: %s\n", err);
		return -1;
	}
	if (fi_arm(&rule) < 0) {
		fprintf(stderr, "gate_cost: cannot arm %s\n", spec);
		return -1;
	}
	return 0;
}

/* The measured loop, one function so that callgrind can count it alone.
 * noinline keeps it a function of its own at -O2. */
__attribute__((noinline)) static void run_calls(struct bench *b,
						enum variant v, long n)
{
	int fd = b->fd[0];

	for (long i = 0; i < n; i++) {
		ssize_t r = v == DIRECT ? send(fd, "x", 1, MSG_NOSIGNAL)
					: fi_send(fd, "x", 1, MSG_NOSIGNAL);
		if (r != 1)
			b->failures++;
	}
}

/* Times one batch of a variant, arming its rule around it, then drains.
 * Returns the batch's ns. */
static double batch_run(struct bench *b, enum variant v)
{
	double t0, t;

	if (v == ARMED && bench_arm(b) != 0)
		exit(1);
	t0 = bc_clock_us(CLOCK_MONOTONIC);
	run_calls(b, v, BATCH);
	t = (bc_clock_us(CLOCK_MONOTONIC) - t0) * 1e3;
	if (v == ARMED)
		fi_disarm_all();
	bench_drain(b);
	return t;
}

/* Runs one round: BATCHES_PER_ROUND batches of every variant, interleaved
 * batch by batch in an order that rotates, so that the variants share
 * whatever the machine does meanwhile. Fills out[] with ns per call. */
static void round_run(struct bench *b, int round, double *out)
{
	double total[VARIANT_COUNT] = {0};

	for (int k = 0; k < BATCHES_PER_ROUND; k++) {
		for (int i = 0; i < VARIANT_COUNT; i++) {
			int v = (round + k + i) % VARIANT_COUNT;

			total[v] += batch_run(b, (enum variant)v);
		}
	}
	for (int v = 0; v < VARIANT_COUNT; v++)
		out[v] = total[v] / (BATCH * BATCHES_PER_ROUND);
}

/* ROUNDS is odd, so a median is one round's figure, not a mean of two. */
static double ns[VARIANT_COUNT][ROUNDS];
static double diff[VARIANT_COUNT][ROUNDS];

static int run_timed(struct bench *b)
{
	double per_call[VARIANT_COUNT];
	char setup[96];
	json_t *report;

	/* Warm the caches, the branch predictors and libfiu's tables. */
	round_run(b, 0, per_call);
	for (int r = 0; r < ROUNDS; r++) {
		round_run(b, r, per_call);
		for (int v = 0; v < VARIANT_COUNT; v++) {
			ns[v][r] = per_call[v];
			diff[v][r] = per_call[v] - per_call[DIRECT];
		}
	}
	snprintf(setup, sizeof(setup),
		 "gate_cost: %d rounds x %d sends of 1 byte per variant", ROUNDS,
		 BATCH * BATCHES_PER_ROUND);
	report = bc_pack("{s:s, s:[]}", "setup", setup, "rows");
	for (int v = 0; v < VARIANT_COUNT; v++)
		bc_append(json_object_get(report, "rows"),
			  bc_pack("{s:s, s:o, s:o}", "variant", variant_names[v],
				  "median_ns", bc_real(bc_median(ns[v], ROUNDS), 1),
				  "median_diff_ns",
				  bc_real(bc_median(diff[v], ROUNDS), 1)));
	bc_report_print(report);
	return 0;
}

static int run_one(struct bench *b, enum variant v, long calls)
{
	long done = 0;

	if (v == ARMED && bench_arm(b) != 0)
		return 1;
	while (done < calls) {
		long n = calls - done < BATCH ? calls - done : BATCH;

		run_calls(b, v, n);
		bench_drain(b);
		done += n;
	}
	bc_report_print(bc_pack("{s:I, s:s}", "sends", (json_int_t)calls,
				"variant", variant_names[v]));
	return 0;
}

static int parse_variant(const char *s)
{
	for (int v = 0; v < VARIANT_COUNT; v++) {
		if (strcmp(s, variant_names[v]) == 0)
			return v;
	}
	return -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: gate_cost [all|direct|disarmed|armed] "
		"[CALLS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct bench b;
	long calls = 100000;
	int v = -1, r;
	char *end;

	bc_set_prog("gate_cost");
	if (argc > 3)
		return usage();
	if (argc >= 2 && strcmp(argv[1], "all") != 0) {
		v = parse_variant(argv[1]);
		if (v < 0)
			return usage();
	}
	if (argc == 3) {
		errno = 0;
		calls = strtol(argv[2], &end, 10);
		if (errno != 0 || *end != '\0' || calls <= 0)
			return usage();
	}
	if (fi_init() != 0 || bench_open(&b) != 0)
		return 1;
	r = v < 0 ? run_timed(&b) : run_one(&b, (enum variant)v, calls);
	if (b.failures != 0) {
		fprintf(stderr, "gate_cost: %lu sends did not send 1 byte\n",
			b.failures);
		r = 1;
	}
	bench_close(&b);
	return r;
}
