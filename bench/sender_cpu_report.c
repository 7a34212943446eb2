/*
 * sender_cpu_report.c: the Markdown and JSON of bench/sender_cpu. The CPU
 * times are the secondary figure; the sender's targets are judged on
 * callgrind instructions by bench/sender_instr, so this report prints
 * ratios and bounds, not PASS or FAIL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sender_cpu.h"

const char *const transport_names[NTRANSPORTS] = { "unix", "tcp" };
const char *const transport_labels[NTRANSPORTS] = { "unix socket",
						    "TCP loopback" };
const char *const mode_names[NMODES] = { "unclamped", "clamp_4k" };
const char *const mode_titles[NMODES] = { "Unclamped",
					  "Every send clamped to 4 KiB" };
const char *const sender_names[NSENDERS] = { "cursor", "owned", "memmove",
					     "floor", "copy", "node", "libuv" };
const char *const sender_labels[NSENDERS] = {
	"refstack queue=cursor", "refstack owned write",
	"refstack queue=memmove", "floor (send + epoll)",
	"copy alone (no socket)", "node socket.end(buf)",
	"libuv uv_write + uv_shutdown" };

/* Whether a row of the tables is printed: --subjects leaves senders and
 * transports out. */
static int row_wanted(const struct options *o, int t, int s)
{
	return o->want_sender[s] && o->want_transport[t];
}

/* The senders that are other processes, whose calls are not counted. */
static int is_child(int s)
{
	return s == S_NODE || s == S_LIBUV;
}

/* Writes ms with one decimal and thousands separators ("1,107.1"). */
static const char *fmt_ms(char *buf, size_t len, double ms)
{
	uint64_t tenths = (uint64_t)(ms * 10.0 + 0.5);
	char whole[BC_COMMAS_LEN];
	int n;

	n = snprintf(buf, len, "%s.%" PRIu64,
		     bc_commas(whole, sizeof(whole), tenths / 10), tenths % 10);
	if (n < 0 || (size_t)n >= len)
		abort();
	return buf;
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
	const struct cell *a = &cells[t][m][i - 1][s];
	const struct cell *c = &cells[t][m][i][s];

	if (o->sizes[i] != 2 * o->sizes[i - 1] || !cell_ran(a) ||
	    !cell_ran(c) || a->cpu_ms <= 0.0)
		return -1.0;
	return c->cpu_ms / a->cpu_ms;
}

/* ------------------------------------------------------------------------ */
/* Markdown.                                                                */

static void md_size_header(const struct options *o, const char *lead)
{
	printf("| %s", lead);
	for (size_t i = 0; i < o->nsizes; i++)
		printf(" | %zu MiB", o->sizes[i] / MIB);
}

/* Prints " | median (min-max)" or why the cell has none. */
static void md_cpu_cell(const struct cell *c)
{
	char a[64], b[64], x[64], p[BC_COMMAS_LEN];

	if (c->skipped)
		printf(" | skipped (predicted %s bytes moved)",
		       bc_commas(p, sizeof(p), c->predicted));
	else if (c->na)
		printf(" | -");
	else
		printf(" | %s (%s-%s)", fmt_ms(a, sizeof(a), c->cpu_ms),
		       fmt_ms(b, sizeof(b), c->min_ms),
		       fmt_ms(x, sizeof(x), c->max_ms));
}

static void md_cpu_table(const struct options *o, int m)
{
	printf("### %s: median (min-max) ms\n\n", mode_titles[m]);
	md_size_header(o, "Transport | Sender");
	printf(" | Per doubling (medians) |\n|---|---");
	for (size_t i = 0; i < o->nsizes; i++)
		printf("|---:");
	printf("|---|\n");
	for (int t = 0; t < NTRANSPORTS; t++)
	for (int s = 0; s < NSENDERS; s++) {
		int any = 0;

		if (!row_wanted(o, t, s))
			continue;
		if (s == S_OWNED && !OWNED_BUILT) {
			printf("| %s | %s | not built yet", transport_labels[t],
			       sender_labels[s]);
			for (size_t i = 1; i < o->nsizes; i++)
				printf(" | -");
			printf(" | - |\n");
			continue;
		}
		printf("| %s | %s", transport_labels[t], sender_labels[s]);
		for (size_t i = 0; i < o->nsizes; i++)
			md_cpu_cell(&cells[t][m][i][s]);
		printf(" | ");
		for (size_t i = 1; i < o->nsizes; i++) {
			double f = doubling_factor(o, t, m, i, s);

			if (f < 0.0)
				continue;
			printf("%sx%.1f", any ? ", " : "", f);
			any = 1;
		}
		printf("%s |\n", any ? "" : "-");
	}
	printf("\n");
}

/* The head of a table with three label columns (lead names them) and one
 * right-aligned column per size. */
static void md_label_table_head(const struct options *o, const char *lead)
{
	md_size_header(o, lead);
	printf(" |\n|---|---|---");
	for (size_t i = 0; i < o->nsizes; i++)
		printf("|---:");
	printf("|\n");
}

static void md_ratio_table(const struct options *o)
{
	printf("### Ratios to the floor: median / median (min / min)\n\n");
	md_label_table_head(o, "Mode | Transport | Ratio");
	for (int m = 0; m < NMODES; m++)
	for (int t = 0; t < NTRANSPORTS; t++)
	for (int s = 0; s < NSENDERS; s++) {
		if (s == S_FLOOR || !row_wanted(o, t, s))
			continue;
		printf("| %s | %s | %s/floor", mode_names[m],
		       transport_labels[t], sender_names[s]);
		for (size_t i = 0; i < o->nsizes; i++) {
			double r = ratio_to_floor(t, m, i, s, 0);
			double q = ratio_to_floor(t, m, i, s, 1);

			if (cells[t][m][i][s].skipped)
				printf(" | skipped");
			else if (r < 0.0 || q < 0.0)
				printf(" | -");
			else
				printf(" | %.2fx (%.2fx)", r, q);
		}
		printf(" |\n");
	}
	printf("\n");
}

/* The counts that explain the CPU: calls into the kernel, bytes moved. */
static void md_calls_table(const struct options *o)
{
	char a[BC_COMMAS_LEN], b[BC_COMMAS_LEN], c[BC_COMMAS_LEN];

	printf("### Per run (medians): send calls / epoll_wait calls / bytes "
	       "the queue moved\n\n");
	md_label_table_head(o, "Mode | Transport | Sender");
	for (int m = 0; m < NMODES; m++)
	for (int t = 0; t < NTRANSPORTS; t++)
	for (int s = 0; s < NSENDERS; s++) {
		if (is_child(s) || !row_wanted(o, t, s))
			continue; /* node's and libuv's calls are not counted */
		printf("| %s | %s | %s", mode_names[m], transport_labels[t],
		       sender_names[s]);
		for (size_t i = 0; i < o->nsizes; i++) {
			const struct cell *x = &cells[t][m][i][s];

			if (!cell_ran(x)) {
				printf(" | %s", x->skipped ? "skipped" : "-");
				continue;
			}
			if (s == S_COPY) {
				printf(" | - / - / %s",
				       bc_commas(c, sizeof(c),
						 (uint64_t)x->moved));
				continue;
			}
			printf(" | %s / %s / %s",
			       bc_commas(a, sizeof(a), (uint64_t)x->sends),
			       bc_commas(b, sizeof(b), (uint64_t)x->waits),
			       s == S_FLOOR ? "-"
					    : bc_commas(c, sizeof(c),
							(uint64_t)x->moved));
		}
		printf(" |\n");
	}
	printf("\n");
}

/* cursor/floor beside its bound for a queue that copies, 1 + copy/floor,
 * and node/floor: medians (minimums). */
static void md_bounds(const struct options *o)
{
	printf("### cursor against its bound, owned and node (median "
	       "(min))\n\n"
	       "A queue that copies cannot cost less than floor + copy, so "
	       "1 + copy/floor bounds cursor/floor from below. Issue 9's "
	       "targets are judged on callgrind instructions "
	       "(bench/sender_instr), which do not move between runs; these "
	       "times are the secondary figure.\n\n"
	       "| Mode | Transport | Size | cursor/floor | 1 + copy/floor "
	       "| owned/floor | node/floor | libuv/floor |\n"
	       "|---|---|---:|---:|---:|---:|---:|---:|\n");
	for (int m = 0; m < NMODES; m++)
	for (int t = 0; t < NTRANSPORTS; t++)
	for (size_t i = 0; i < o->nsizes; i++) {
		if (!o->want_transport[t])
			continue;
		printf("| %s | %s | %zu MiB", mode_names[m],
		       transport_labels[t], o->sizes[i] / MIB);
		static const int cols[] = { S_CURSOR, S_COPY, S_OWNED,
					    S_NODE, S_LIBUV };

		for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
			int s = cols[k];
			double r = ratio_to_floor(t, m, i, s, 0);
			double q = ratio_to_floor(t, m, i, s, 1);
			double add = s == S_COPY ? 1.0 : 0.0;

			if (r < 0.0 || q < 0.0)
				printf(" | -");
			else
				printf(" | %.2fx (%.2fx)", add + r, add + q);
		}
		printf(" |\n");
	}
	printf("\n");
}

static const char *heap_description(const char *heap)
{
	if (strcmp(heap, "fresh") == 0)
		return "fresh (each run's queue is a new mapping, whose page "
		       "faults the stack pays)";
	if (strcmp(heap, "warm") == 0)
		return "warm (--warm-heap: the queue reuses memory that is "
		       "already faulted in)";
	return "the allocator's default (mallopt was refused, so whether "
	       "a queue is faulted in depends on the runs before it)";
}

/* Whether the machine was loaded during the run: a load average above its
 * CPU count at the start or the end (the senders then shared their CPU). */
static int under_load(const struct bc_machine *m)
{
	return m->load_start > (double)m->cpus || m->load_end > (double)m->cpus;
}

static void md_load(const struct bc_machine *m)
{
	printf("Load average %.2f at the start and %.2f at the end, on %ld "
	       "CPUs: %s\n\n",
	       m->load_start, m->load_end, m->cpus,
	       under_load(m) ? "the run was under load (more runnable threads "
			       "than CPUs): the senders shared their CPU, and the "
			       "spreads show it; the ratios, measured in the same "
			       "rounds, are the figure to read"
			     : "the machine was not loaded");
}

/* --subjects: the table across subjects, one row per sender, both modes. */
static void md_subjects(const struct options *o, int argc, char **argv,
			const struct bc_machine *mach)
{
	static const int rows[] = { S_CURSOR, S_NODE, S_LIBUV, S_FLOOR };

	for (size_t i = 0; i < o->nsizes; i++) {
		printf("## Sender CPU across subjects: end(%zu MiB) over a unix "
		       "socket, ms\n\n", o->sizes[i] / MIB);
		bc_md_command(argc, argv);
		printf("CPU time of the sender (user + system) from end() (libuv: "
		       "uv_write, then uv_shutdown) to its callback; the floor "
		       "from its first send to its shutdown. Median (min-max) of "
		       "%d interleaved rounds, the order rotating each round. "
		       "Clamped: the gate rule %s (the stack's linked gate; node's "
		       "and libuv's senders run a second process with the gate "
		       "preloaded); the floor clamps its own sends. node %s, %s. ",
		       o->rounds, CLAMP_RULE,
		       o->node_version ? o->node_version : "did not run",
		       o->libuv_version ? o->libuv_version : "libuv did not run");
		md_load(mach);
		printf("| Sender | %s | / floor | %s | / floor |\n"
		       "|---|---:|---:|---:|---:|\n",
		       mode_titles[M_UNCLAMPED], mode_titles[M_CLAMPED]);
		for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
			int s = rows[k];

			printf("| %s", sender_labels[s]);
			for (int m = 0; m < NMODES; m++) {
				double r = ratio_to_floor(T_UNIX, m, i, s, 0);

				md_cpu_cell(&cells[T_UNIX][m][i][s]);
				if (s == S_FLOOR)
					printf(" | 1.00x");
				else if (r < 0.0)
					printf(" | -");
				else
					printf(" | %.2fx", r);
			}
			printf(" |\n");
		}
		printf("\n");
	}
}

void sender_cpu_markdown(const struct options *o, int argc, char **argv,
			 const struct bc_machine *mach)
{
	if (o->subjects) {
		md_subjects(o, argc, argv, mach);
		return;
	}
	printf("## Sender CPU: end(payload) to its callback, ms\n\n");
	bc_md_command(argc, argv);
	printf("CPU time of the sending thread (user + system, "
	       "clock_gettime(CLOCK_THREAD_CPUTIME_ID)) from end() to its "
	       "completion callback (the floor: from its first send to its "
	       "shutdown; node: process.cpuUsage() of the node process from "
	       "the connection to end()'s callback). Median and minimum of "
	       "%d interleaved rounds, the order of the senders rotating each "
	       "round, after one unmeasured warm-up run of each sender. ",
	       o->rounds);
	if (o->sender_cpu >= 0)
		printf("The senders (node included) are pinned to CPU %d and "
		       "the reader to CPU %d (sched_setaffinity). ",
		       o->sender_cpu, o->reader_cpu);
	else
		printf("Not pinned: fewer than 2 CPUs are allowed. ");
	printf("The reader is a forked process (recv of 256 KiB until EOF); "
	       "every run's byte count matched the payload. Clamped mode: the "
	       "gate rule %s for the stack, a 4096-byte send length for the "
	       "floor, and the same rule in the gate preloaded into a second "
	       "node and libuv sender process. ",
	       CLAMP_RULE);
	if (o->libuv_version != NULL)
		printf("%s runs bench/sender_libuv. ", o->libuv_version);
	if (o->node_version != NULL)
		printf("node %s runs bench/sender_node.js. ", o->node_version);
	else
		printf("node did not run (%s). ",
		       o->no_node ? "--no-node" : "not found");
	printf("memmove cells predicted to move more than 20 GB "
	       "(C(n-1)(n-2)/2) are skipped. Heap: %s. ",
	       heap_description(o->heap));
	bc_md_machine(mach);
	for (int m = 0; m < NMODES; m++)
		md_cpu_table(o, m);
	md_ratio_table(o);
	md_calls_table(o);
	md_bounds(o);
}

/* ------------------------------------------------------------------------ */
/* JSON.                                                                    */

static void json_number_or_null(double v)
{
	if (v < 0.0)
		printf("null");
	else
		printf("%.4f", v);
}

static void json_cell(const struct options *o, int t, int m, size_t i, int s)
{
	const struct cell *c = &cells[t][m][i][s];

	printf("    {\"transport\": \"%s\", \"mode\": \"%s\", \"payload\": %zu"
	       ", \"sender\": \"%s\", \"skipped\": %s",
	       transport_names[t], mode_names[m], o->sizes[i], sender_names[s],
	       c->skipped ? "true" : "false");
	if (c->predicted > 0)
		printf(", \"predicted_bytes_moved\": %" PRIu64, c->predicted);
	else
		printf(", \"predicted_bytes_moved\": null");
	if (cell_ran(c)) {
		printf(", \"median_cpu_ms\": %.3f, \"min_cpu_ms\": %.3f, "
		       "\"cpu_ms\": [",
		       c->cpu_ms, c->min_ms);
		for (size_t k = 0; k < c->n; k++)
			printf("%s%.3f", k ? ", " : "", c->samples[k].cpu_ms);
		printf("]");
		printf(", \"max_cpu_ms\": %.3f", c->max_ms);
		if (!is_child(s))
			printf(", \"median_send_calls\": %.1f, "
			       "\"median_epoll_wait_calls\": %.1f",
			       c->sends, c->waits);
		if (s != S_FLOOR && !is_child(s))
			printf(", \"median_bytes_moved\": %.1f", c->moved);
	}
	if (s != S_FLOOR) {
		printf(", \"ratio_to_floor\": ");
		json_number_or_null(ratio_to_floor(t, m, i, s, 0));
		printf(", \"min_ratio_to_floor\": ");
		json_number_or_null(ratio_to_floor(t, m, i, s, 1));
	}
	printf(", \"per_doubling\": ");
	json_number_or_null(i > 0 ? doubling_factor(o, t, m, i, s) : -1.0);
	printf("}");
}

void sender_cpu_json(const struct options *o, int argc, char **argv,
		     const struct bc_machine *mach)
{
	int first = 1;

	bc_json_begin(argc, argv);
	printf(",\n  \"rounds\": %d,\n  \"sizes\": [", o->rounds);
	for (size_t i = 0; i < o->nsizes; i++)
		printf("%s%zu", i ? ", " : "", o->sizes[i]);
	printf("],\n  \"clamp\": %zu,\n  \"clamp_rule\": \"%s\",\n"
	       "  \"skip_threshold_bytes\": %" PRIu64 ",\n"
	       "  \"cpu_clock\": \"CLOCK_THREAD_CPUTIME_ID (user+system)\",\n"
	       "  \"heap\": \"%s\",\n  \"sender_cpu\": %d,\n"
	       "  \"reader_cpu\": %d,\n  \"node_version\": ",
	       CLAMP, CLAMP_RULE, SKIP_BYTES, o->heap, o->sender_cpu,
	       o->reader_cpu);
	if (o->node_version != NULL)
		bc_json_string(o->node_version);
	else
		printf("null");
	printf(",\n  \"libuv_version\": ");
	if (o->libuv_version != NULL)
		bc_json_string(o->libuv_version);
	else
		printf("null");
	printf(",\n  \"subjects\": %s,\n  \"children_clamped_by_preload\": "
	       "{\"node\": %s, \"libuv\": %s},\n  \"under_load\": %s,\n",
	       o->subjects ? "true" : "false",
	       o->child_clamped[S_NODE] ? "true" : "false",
	       o->child_clamped[S_LIBUV] ? "true" : "false",
	       under_load(mach) ? "true" : "false");
	bc_json_machine(mach);
	printf("  \"cells\": [\n");
	for (int t = 0; t < NTRANSPORTS; t++)
	for (int m = 0; m < NMODES; m++)
	for (size_t i = 0; i < o->nsizes; i++)
	for (int s = 0; s < NSENDERS; s++) {
		/* A sender that does not run in a mode has no cell there. */
		if (cells[t][m][i][s].na)
			continue;
		printf("%s", first ? "" : ",\n");
		first = 0;
		json_cell(o, t, m, i, s);
	}
	/* No targets: they are judged on instructions (sender_instr). */
	printf("\n  ],\n  \"targets\": [],\n");
	bc_json_end_targets(0, 0);
}
