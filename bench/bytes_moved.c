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
 * The seed's table (the PR and DESIGN.md) fits the same sum with two sends
 * in the call, C * (n - 2) * (n - 3) / 2; the program prints both so the
 * difference of C * (n - 2) bytes per row is visible.
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

static const size_t payloads[] = { 4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB };
static const size_t clamps[] = { 4 * KIB, 16 * KIB };

#define NPAYLOADS (sizeof(payloads) / sizeof(payloads[0]))
#define NCLAMPS (sizeof(clamps) / sizeof(clamps[0]))
#define NROWS (NPAYLOADS * NCLAMPS)

/*
 * The seed's measured figures (PR "Bytes moved", main's column), for the
 * rows it gives; 0 where it gives none.
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
	int json;
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
/* Output.                                                                  */

static const char *size_name(char *buf, size_t len, size_t bytes)
{
	if (bytes % MIB == 0)
		snprintf(buf, len, "%zu MiB", bytes / MIB);
	else
		snprintf(buf, len, "%zu KiB", bytes / KIB);
	return buf;
}

static void text_header(const struct options *o)
{
	printf("| payload | clamp | flushes | memmove: bytes moved "
	       "| closed form C(n-1)(n-2)/2 | cursor: bytes moved "
	       "| memmove per doubling | seed: flushes "
	       "| seed closed form C(n-2)(n-3)/2 | seed's table |%s\n",
	       o->time ? " memmove CPU ms | cursor CPU ms |" : "");
	printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|%s\n",
	       o->time ? "---:|---:|" : "");
}

static void text_row(const struct row *r, const struct options *o)
{
	char p[32], c[32], a[32], b[32], d[32], e[32], f[32], g[32], h[32];
	char factor[16] = "-";

	if (r->per_doubling > 0.0)
		snprintf(factor, sizeof(factor), "x%.2f", r->per_doubling);
	printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |",
	       size_name(p, sizeof(p), r->payload),
	       size_name(c, sizeof(c), r->clamp),
	       bc_commas(a, sizeof(a), r->flushes),
	       bc_commas(b, sizeof(b), r->memmove_moved),
	       bc_commas(d, sizeof(d), r->closed_form),
	       bc_commas(e, sizeof(e), r->cursor_moved), factor,
	       bc_commas(f, sizeof(f), r->seed_flushes),
	       bc_commas(g, sizeof(g), r->seed_closed_form),
	       r->seed_table ? bc_commas(h, sizeof(h), r->seed_table) : "-");
	if (o->time)
		printf(" %.1f | %.1f |", r->memmove_ms, r->cursor_ms);
	printf("\n");
}

static const char *yes(int ok)
{
	return ok ? "yes" : "NO";
}

/* Explains the gap between the two closed forms on one row. */
static void text_seed_note(const struct row *rows, size_t nrows)
{
	char a[32], b[32], d[32];

	for (size_t i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];

		if (r->payload != 4 * MIB || r->clamp != 4 * KIB)
			continue;
		printf("Why the seed's figures are lower: its end() sends "
		       "twice in the call before it queues (n - 2 flushes), "
		       "this model once (n - 1 flushes). At 4 MiB / 4 KiB: "
		       "%s here, %s in the seed's table, a gap of "
		       "C * (n - 2) = %s bytes: here the first writable "
		       "event moves the (n - 2) * C bytes it leaves, where "
		       "the seed had sent those C bytes before it queued.\n",
		       bc_commas(a, sizeof(a), r->memmove_moved),
		       bc_commas(b, sizeof(b), r->seed_table),
		       bc_commas(d, sizeof(d),
				 r->memmove_moved - r->seed_table));
	}
}

static void print_text(const struct row *rows, size_t nrows,
		       const struct checks *c, const struct options *o)
{
	printf("end(P) at clamp C: the call sends C, P - C is queued once, "
	       "each writable event sends C; n = P / C.\n\n");
	text_header(o);
	for (size_t i = 0; i < nrows; i++)
		text_row(&rows[i], o);
	printf("\nmemmove figures equal the closed form C(n-1)(n-2)/2: "
	       "%s (%zu of %zu rows)\n",
	       yes(c->closed_ok == c->rows), c->closed_ok, c->rows);
	printf("cursor moves no byte: %s (%zu of %zu rows)\n",
	       yes(c->cursor_ok == c->rows), c->cursor_ok, c->rows);
	printf("bytes left in order under both: %s (%zu of %zu rows)\n",
	       yes(c->intact_ok == c->rows), c->intact_ok, c->rows);
	printf("seed closed form C(n-2)(n-3)/2 equals the seed's table: "
	       "%s (%zu of %zu rows it gives)\n",
	       yes(c->seed_ok == c->seed_rows), c->seed_ok, c->seed_rows);
	text_seed_note(rows, nrows);
}

static void json_u64_or_null(const char *key, uint64_t v, int present)
{
	if (present)
		printf("\"%s\": %" PRIu64, key, v);
	else
		printf("\"%s\": null", key);
}

static void json_row(const struct row *r, const struct options *o)
{
	printf("    {\"payload\": %zu, \"clamp\": %zu, \"flushes\": %" PRIu64
	       ", \"memmove_bytes_moved\": %" PRIu64
	       ", \"closed_form\": %" PRIu64
	       ", \"cursor_bytes_moved\": %" PRIu64 ", ",
	       r->payload, r->clamp, r->flushes, r->memmove_moved,
	       r->closed_form, r->cursor_moved);
	if (r->per_doubling > 0.0)
		printf("\"memmove_per_doubling\": %.4f, ", r->per_doubling);
	else
		printf("\"memmove_per_doubling\": null, ");
	printf("\"seed_flushes\": %" PRIu64 ", \"seed_closed_form\": %" PRIu64
	       ", ",
	       r->seed_flushes, r->seed_closed_form);
	json_u64_or_null("seed_table", r->seed_table, r->seed_table != 0);
	printf(", \"intact\": %s", r->intact ? "true" : "false");
	if (o->time)
		printf(", \"memmove_cpu_ms\": %.3f, \"cursor_cpu_ms\": %.3f",
		       r->memmove_ms, r->cursor_ms);
	printf("}");
}

static void print_json(const struct row *rows, size_t nrows,
		       const struct checks *c, const struct options *o)
{
	printf("{\n  \"model\": \"end(P) at clamp C: the call sends C, "
	       "P - C is queued once, each writable event sends C\",\n");
	printf("  \"closed_form\": \"C*(n-1)*(n-2)/2\",\n");
	printf("  \"seed_closed_form\": \"C*(n-2)*(n-3)/2\",\n");
	printf("  \"seed_model\": \"the call sends C twice, P - 2C is "
	       "queued once\",\n");
	printf("  \"rows\": [\n");
	for (size_t i = 0; i < nrows; i++) {
		json_row(&rows[i], o);
		printf("%s\n", i + 1 < nrows ? "," : "");
	}
	printf("  ],\n");
	printf("  \"memmove_equals_closed_form\": %s,\n",
	       c->closed_ok == c->rows ? "true" : "false");
	printf("  \"cursor_moves_nothing\": %s,\n",
	       c->cursor_ok == c->rows ? "true" : "false");
	printf("  \"intact\": %s,\n",
	       c->intact_ok == c->rows ? "true" : "false");
	printf("  \"seed_closed_form_equals_seed_table\": %s\n}\n",
	       c->seed_ok == c->seed_rows ? "true" : "false");
}

/* ------------------------------------------------------------------------ */

static int usage(void)
{
	fprintf(stderr, "usage: bytes_moved [--json] [--time] [--max-mib N]\n"
			"  --json       print JSON instead of a table\n"
			"  --time       add the CPU time of each replay\n"
			"  --max-mib N  only payloads of at most N MiB\n");
	return 2;
}

static int parse_size_mib(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0 ||
	    v > SIZE_MAX / MIB)
		return -EINVAL;
	*out = (size_t)v * MIB;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	*o = (struct options){ .max_payload = SIZE_MAX };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			o->json = 1;
		} else if (strcmp(argv[i], "--time") == 0) {
			o->time = 1;
		} else if (strcmp(argv[i], "--max-mib") == 0 && i + 1 < argc) {
			if (parse_size_mib(argv[++i], &o->max_payload) < 0)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
	}
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
	if (o.json)
		print_json(rows, nrows, &c, &o);
	else
		print_text(rows, nrows, &c, &o);
	bc_finish_output();
	return checks_pass(&c) ? 0 : 1;
}
