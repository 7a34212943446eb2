/*
 * sender_cpu_json.c: sender_cpu's figures as one JSON object (the cells and
 * the run's options), which the report's bench_sender_cpu section renders:
 * `python3 -m wirecheck.report.render sender_cpu FILE`, or sender_subjects
 * for a --subjects run.
 */
#include <stdint.h>
#include <string.h>

#include "sender_cpu.h"

const char *const transport_names[NTRANSPORTS] = { "unix", "tcp" };
const char *const mode_names[NMODES] = { "unclamped", "clamp_4k" };
const char *const sender_names[NSENDERS] = { "cursor", "owned", "memmove",
					     "floor", "copy", "node", "libuv" };

/* The senders that are other processes, whose calls are not counted. */
static int is_child(int s)
{
	return s == S_NODE || s == S_LIBUV;
}

/* sender / floor at one cell (medians, or minimums when use_min), or a
 * negative value when there is none. */
static double ratio_to_floor(int t, int m, size_t i, int s, int use_min)
{
	const struct cell *c = &cells[t][m][i][s];
	const struct cell *f = &cells[t][m][i][S_FLOOR];
	double a, b;

	if (!cell_ran(c) || !cell_ran(f))
		return -1.0;
	a = use_min ? c->min_ms : c->cpu_ms;
	b = use_min ? f->min_ms : f->cpu_ms;
	return b > 0.0 ? a / b : -1.0;
}

/* median at size i / median at size i - 1 when size i doubles size i - 1,
 * else a negative value. */
static double doubling_factor(const struct options *o, int t, int m,
			      size_t i, int s)
{
	const struct cell *a, *c = &cells[t][m][i][s];

	if (i == 0)
		return -1.0;
	a = &cells[t][m][i - 1][s];
	if (o->sizes[i] != 2 * o->sizes[i - 1] || !cell_ran(a) ||
	    !cell_ran(c) || a->cpu_ms <= 0.0)
		return -1.0;
	return c->cpu_ms / a->cpu_ms;
}

/* Whether the machine was loaded during the run: a load average above its
 * CPU count at the start or the end (the senders then shared their CPU). */
static int under_load(const struct bc_machine *m)
{
	return m->load_start > (double)m->cpus || m->load_end > (double)m->cpus;
}

/* A ratio with 4 decimals, or null when there is none (negative). */
static json_t *ratio_or_null(double v)
{
	return v < 0.0 ? json_null() : bc_real(v, 4);
}

static json_t *string_or_null(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

/* The figures of a cell that ran: CPU time, and the calls and bytes moved
 * of the senders in this process. */
static void cell_figures(json_t *j, const struct cell *c, int s)
{
	json_t *runs = bc_pack("[]");

	bc_set(j, "median_cpu_ms", bc_real(c->cpu_ms, 3));
	bc_set(j, "min_cpu_ms", bc_real(c->min_ms, 3));
	for (size_t k = 0; k < c->n; k++)
		bc_append(runs, bc_real(c->samples[k].cpu_ms, 3));
	bc_set(j, "cpu_ms", runs);
	bc_set(j, "max_cpu_ms", bc_real(c->max_ms, 3));
	if (!is_child(s)) {
		bc_set(j, "median_send_calls", bc_real(c->sends, 1));
		bc_set(j, "median_epoll_wait_calls", bc_real(c->waits, 1));
	}
	if (s != S_FLOOR && !is_child(s))
		bc_set(j, "median_bytes_moved", bc_real(c->moved, 1));
}

static json_t *json_cell(const struct options *o, int t, int m, size_t i, int s)
{
	const struct cell *c = &cells[t][m][i][s];
	json_t *j = bc_pack("{s:s, s:s, s:I, s:s, s:b}",
			    "transport", transport_names[t], "mode", mode_names[m],
			    "payload", (json_int_t)o->sizes[i],
			    "sender", sender_names[s], "skipped", c->skipped);

	bc_set(j, "predicted_bytes_moved", c->predicted > 0 ?
	       json_integer((json_int_t)c->predicted) : json_null());
	if (cell_ran(c))
		cell_figures(j, c, s);
	if (s != S_FLOOR) {
		bc_set(j, "ratio_to_floor", ratio_or_null(ratio_to_floor(t, m, i, s, 0)));
		bc_set(j, "min_ratio_to_floor",
		       ratio_or_null(ratio_to_floor(t, m, i, s, 1)));
	}
	bc_set(j, "per_doubling", ratio_or_null(doubling_factor(o, t, m, i, s)));
	return j;
}

json_t *sender_cpu_report(const struct options *o, int argc, char **argv,
			  const struct bc_machine *mach)
{
	json_t *report = bc_report_new(argc, argv), *sizes = bc_pack("[]"), *jcells;

	bc_set(report, "rounds", json_integer(o->rounds));
	for (size_t i = 0; i < o->nsizes; i++)
		bc_append(sizes, json_integer((json_int_t)o->sizes[i]));
	bc_set(report, "sizes", sizes);
	bc_set(report, "clamp", json_integer((json_int_t)CLAMP));
	bc_set(report, "clamp_rule", json_string(CLAMP_RULE));
	bc_set(report, "skip_threshold_bytes", json_integer((json_int_t)SKIP_BYTES));
	bc_set(report, "cpu_clock", json_string("CLOCK_THREAD_CPUTIME_ID (user+system)"));
	bc_set(report, "heap", json_string(o->heap));
	bc_set(report, "sender_cpu", json_integer(o->sender_cpu));
	bc_set(report, "reader_cpu", json_integer(o->reader_cpu));
	bc_set(report, "node_version", string_or_null(o->node_version));
	bc_set(report, "libuv_version", string_or_null(o->libuv_version));
	bc_set(report, "subjects", json_boolean(o->subjects));
	bc_set(report, "children_clamped_by_preload",
	       bc_pack("{s:b, s:b}", "node", o->child_clamped[S_NODE],
		       "libuv", o->child_clamped[S_LIBUV]));
	bc_set(report, "under_load", json_boolean(under_load(mach)));
	bc_report_machine(report, mach);
	bc_set(report, "cells", jcells = bc_pack("[]"));
	for (int t = 0; t < NTRANSPORTS; t++)
	for (int m = 0; m < NMODES; m++)
	for (size_t i = 0; i < o->nsizes; i++)
	for (int s = 0; s < NSENDERS; s++) {
		/* A sender that does not run in a mode has no cell there. */
		if (!cells[t][m][i][s].na)
			bc_append(jcells, json_cell(o, t, m, i, s));
	}
	/* No targets: they are judged on instructions (sender_instr). */
	bc_report_targets(report, bc_pack("[]"));
	return report;
}
