/*
 * bytes_moved.c: how many bytes the pending-write queue moves to drain
 * end(P) at clamp C, under the cursor and the legacy memmove strategy,
 * against the closed forms of docs/queue-model.md.
 *
 * The model of end(P) at clamp C: the call sends C bytes, the other P - C
 * are queued by one append, then each writable event sends C more. With
 * n = P / C that is n - 1 flushes; the legacy queue moves what is left
 * after each but the last, C * (n - 1) * (n - 2) / 2 bytes in all.
 *
 * The seed's table (DESIGN.md) fits the same sum with two sends in the
 * call, C * (n - 2) * (n - 3) / 2; the program gives both so the
 * difference of C * (n - 2) bytes per row is visible.
 *
 * It prints one JSON object; `python3 -m wirecheck.report.render
 * bytes_moved FILE` shows it as the report's table.
 *
 * usage: bytes_moved [--json] [--time] [--max-mib N]
 * Exits 0 when every check holds, 1 when one fails, 2 on a usage error.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"
#include "rs.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
/* The largest --max-mib: far above the largest payload, 32 MiB. */
#define MAX_MIB (1 << 20)

static const size_t payloads[] = { 4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB };
static const size_t clamps[] = { 4 * KIB, 16 * KIB };

#define NPAYLOADS (sizeof(payloads) / sizeof(payloads[0]))
#define NCLAMPS (sizeof(clamps) / sizeof(clamps[0]))
#define NROWS (NPAYLOADS * NCLAMPS)

/*
 * The seed's measured figures (main's column of the "Bytes moved" table in
 * oven-sh/bun "socket: drain node:net's pending-write queue with a
 * cursor"), for the rows it gives; 0 where it gives none.
 */
struct seed_figure {
	size_t payload;
	size_t clamp;
	uint64_t bytes_moved;
};

static const struct seed_figure seed_table[] = {
	{ 4 * MIB, 16 * KIB, UINT64_C(526434304) },
	{ 4 * MIB, 4 * KIB, UINT64_C(2137010176) },
	{ 32 * MIB, 4 * KIB, UINT64_C(137355079680) },
};

struct options {
	int time;
	size_t max_payload;
};

struct row {
	size_t payload;
	size_t clamp;
	uint64_t flushes;
	uint64_t memmove_moved;
	uint64_t closed_form;
	uint64_t cursor_moved;
	double per_doubling; /* 0 when no row has half the payload */
	uint64_t seed_flushes;
	uint64_t seed_closed_form;
	uint64_t seed_table; /* 0 when the seed gives no figure */
	int intact;
	double memmove_ms;
	double cursor_ms;
};

static uint64_t seed_table_lookup(size_t payload, size_t clamp)
{
	for (size_t i = 0; i < sizeof(seed_table) / sizeof(seed_table[0]); i++) {
		if (seed_table[i].payload == payload &&
		    seed_table[i].clamp == clamp)
			return seed_table[i].bytes_moved;
	}
	return 0;
}

/* C * m * (m - 1) / 2 for m flushes: each but the last moves what is left. */
static uint64_t closed_form(size_t clamp, uint64_t flushes)
{
	return (uint64_t)clamp * flushes * (flushes - 1) / 2;
}

static double cpu_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0.0;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Replays end(P) at clamp C: step 0 queues P - C bytes (the call has sent
 * C), then one step per writable event sends C.
 */
static int run_end(enum rs_queue_strategy s, size_t payload, size_t clamp,
		   struct rs_queue_probe *out, double *ms)
{
	size_t flushes = payload / clamp - 1;
	struct rs_queue_step *steps = calloc(flushes + 1, sizeof(*steps));
	double start;
	int err;

	if (steps == NULL)
		return -ENOMEM;
	steps[0].append = payload - clamp;
	for (size_t i = 1; i <= flushes; i++)
		steps[i].consume = clamp;
	start = cpu_ms();
	err = rs_queue_replay(s, steps, flushes + 1, out);
	*ms = cpu_ms() - start;
	free(steps);
	return err;
}

static int row_measure(struct row *r)
{
	struct rs_queue_probe mm, cur;
	int err;

	err = run_end(RS_QUEUE_MEMMOVE, r->payload, r->clamp, &mm,
		      &r->memmove_ms);
	if (err == 0)
		err = run_end(RS_QUEUE_CURSOR, r->payload, r->clamp, &cur,
			      &r->cursor_ms);
	if (err < 0)
		return err;
	r->memmove_moved = mm.bytes_moved;
	r->cursor_moved = cur.bytes_moved;
	r->intact = mm.intact && cur.intact && mm.final_len == 0 &&
		    cur.final_len == 0;
	return 0;
}

static void row_model(struct row *r, size_t payload, size_t clamp)
{
	uint64_t n = payload / clamp;

	r->payload = payload;
	r->clamp = clamp;
	r->flushes = n - 1;
	r->closed_form = closed_form(clamp, n - 1);
	r->seed_flushes = n - 2;
	r->seed_closed_form = closed_form(clamp, n - 2);
	r->seed_table = seed_table_lookup(payload, clamp);
}

/* The factor of the legacy moves against the row with half the payload. */
static void rows_per_doubling(struct row *rows, size_t nrows)
{
	for (size_t i = 0; i < nrows; i++) {
		rows[i].per_doubling = 0.0;
		for (size_t j = 0; j < nrows; j++) {
			if (rows[j].clamp == rows[i].clamp &&
			    2 * rows[j].payload == rows[i].payload &&
			    rows[j].memmove_moved > 0)
				rows[i].per_doubling =
					(double)rows[i].memmove_moved /
					(double)rows[j].memmove_moved;
		}
	}
}

/* ------------------------------------------------------------------------ */
/* Checks.                                                                  */

struct checks {
	size_t rows;
	size_t closed_ok;  /* memmove == C(n-1)(n-2)/2 */
	size_t cursor_ok;  /* cursor moved nothing */
	size_t intact_ok;  /* bytes left in order under both */
	size_t seed_rows;  /* rows the seed's table gives */
	size_t seed_ok;    /* seed closed form == seed's table */
};

static struct checks rows_check(const struct row *rows, size_t nrows)
{
	struct checks c = { .rows = nrows };

	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];

		c.closed_ok += r->memmove_moved == r->closed_form;
		c.cursor_ok += r->cursor_moved == 0;
		c.intact_ok += r->intact != 0;
		if (r->seed_table != 0) {
			c.seed_rows++;
			c.seed_ok += r->seed_closed_form == r->seed_table;
		}
	}
	return c;
}

static int checks_pass(const struct checks *c)
{
	return c->closed_ok == c->rows && c->cursor_ok == c->rows &&
	       c->intact_ok == c->rows && c->seed_ok == c->seed_rows;
}

/* ------------------------------------------------------------------------ */
/* Output: JSON, rendered by the report's bench_bytes_moved section.        */

static json_t *json_row(const struct row *r, const struct options *o)
{
	json_t *j = bc_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
			    "payload", (json_int_t)r->payload,
			    "clamp", (json_int_t)r->clamp,
			    "flushes", (json_int_t)r->flushes,
			    "memmove_bytes_moved", (json_int_t)r->memmove_moved,
			    "closed_form", (json_int_t)r->closed_form,
			    "cursor_bytes_moved", (json_int_t)r->cursor_moved);

	bc_set(j, "memmove_per_doubling",
	       r->per_doubling > 0.0 ? bc_real(r->per_doubling, 4) : json_null());
	bc_set(j, "seed_flushes", json_integer((json_int_t)r->seed_flushes));
	bc_set(j, "seed_closed_form",
	       json_integer((json_int_t)r->seed_closed_form));
	bc_set(j, "seed_table", r->seed_table != 0 ?
	       json_integer((json_int_t)r->seed_table) : json_null());
	bc_set(j, "intact", json_boolean(r->intact));
	if (o->time) {
		bc_set(j, "memmove_cpu_ms", bc_real(r->memmove_ms, 3));
		bc_set(j, "cursor_cpu_ms", bc_real(r->cursor_ms, 3));
	}
	return j;
}

static void print_json(const struct row *rows, size_t nrows,
		       const struct checks *c, const struct options *o)
{
	json_t *report = bc_pack(
		"{s:s, s:s, s:s, s:s, s:[]}",
		"model", "end(P) at clamp C: the call sends C, P - C is queued "
			 "once, each writable event sends C",
		"closed_form", "C*(n-1)*(n-2)/2",
		"seed_closed_form", "C*(n-2)*(n-3)/2",
		"seed_model", "the call sends C twice, P - 2C is queued once",
		"rows");
	json_t *jrows = json_object_get(report, "rows");

	for (size_t i = 0; i < nrows; i++)
		bc_append(jrows, json_row(&rows[i], o));
	bc_set(report, "memmove_equals_closed_form",
	       json_boolean(c->closed_ok == c->rows));
	bc_set(report, "cursor_moves_nothing",
	       json_boolean(c->cursor_ok == c->rows));
	bc_set(report, "intact", json_boolean(c->intact_ok == c->rows));
	bc_set(report, "seed_closed_form_equals_seed_table",
	       json_boolean(c->seed_ok == c->seed_rows));
	bc_report_print(report);
}

/* ------------------------------------------------------------------------ */

static int usage(void)
{
	fprintf(stderr, "usage: bytes_moved [--json] [--time] [--max-mib N]\n"
			"  --json       accepted; the output is JSON either way\n"
			"  --time       add the CPU time of each replay\n"
			"  --max-mib N  only payloads of at most N MiB\n");
	return 2;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	int mib = 0; /* not given */
	const struct bc_flag flags[] = {
		BC_ON("--json", NULL), /* JSON is the only output */
		BC_ON("--time", &o->time),
		BC_INT("--max-mib", &mib, 1, MAX_MIB),
	};

	*o = (struct options){ 0 };
	if (bc_parse_flags(argc, argv, flags, sizeof(flags) / sizeof(flags[0])) < 0)
		return -EINVAL;
	o->max_payload = mib > 0 ? (size_t)mib * MIB : SIZE_MAX;
	/* The smallest payload of the table is 4 MiB: fewer leaves no row. */
	return o->max_payload < payloads[0] ? -EINVAL : 0;
}

/* Rows grouped by clamp, payloads ascending, so doublings sit together. */
static int rows_run(struct row *rows, size_t *nrows, const struct options *o)
{
	size_t n = 0;

	for (size_t c = 0; c < NCLAMPS; c++) {
		for (size_t p = 0; p < NPAYLOADS; p++) {
			int err;

			if (payloads[p] > o->max_payload)
				continue;
			row_model(&rows[n], payloads[p], clamps[c]);
			err = row_measure(&rows[n]);
			if (err < 0)
				return err;
			n++;
		}
	}
	*nrows = n;
	rows_per_doubling(rows, n);
	return 0;
}

int main(int argc, char **argv)
{
	struct row rows[NROWS];
	struct options o;
	struct checks c;
	size_t nrows;
	int err;

	bc_set_prog("bytes_moved");
	if (parse_options(argc, argv, &o) < 0)
		return usage();
	err = rows_run(rows, &nrows, &o);
	if (err < 0) {
		fprintf(stderr, "bytes_moved: replay failed: %s\n",
			strerror(-err));
		return 1;
	}
	c = rows_check(rows, nrows);
	print_json(rows, nrows, &c, &o);
	return checks_pass(&c) ? 0 : 1;
}
