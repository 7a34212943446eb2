/*
 * sender_instr_figures.c: bench/sender_instr's figures from the cells its
 * runs filled: each cell's spread between passes, the targets and the JSON
 * report (which the report's bench_sender_cpu section renders).
 *
 * Not compiled on its own: sender_instr.c includes it where it stood, so
 * that the program is one translation unit as before. The child (the
 * counted senders) is inlined into main, and the floor's counted loop
 * takes its registers from all of main's code: compiled apart, these
 * figures would leave main and the floor's count would move (measured:
 * unclamped 1 MiB 760 -> 754 instructions, 4 KiB clamp 6,318 -> 6,060).
 */
/* ---- figures ------------------------------------------------------------ */

static const struct run *first(int m, size_t i, int s)
{
	return &cells[m][i][s].runs[0];
}

/* (max - min) / min of the instructions over the passes, 0 when equal. */
static double ir_spread(const struct options *o, int m, size_t i, int s)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (int k = 0; k < o->repeat; k++) {
		uint64_t v = cells[m][i][s].runs[k].ir;

		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	return lo == 0 ? 0.0 : (double)(hi - lo) / (double)lo;
}

/* Whether every count but the instructions is the same in every pass. */
static int counts_equal(const struct options *o, int m, size_t i, int s)
{
	for (int k = 1; k < o->repeat; k++)
		if (memcmp(&cells[m][i][s].runs[k].c, &cells[m][i][s].runs[0].c,
			   sizeof(struct counts)) != 0)
			return 0;
	return 1;
}

/* One sender's cost split between two payloads (targets_make). */
struct split {
	double per_send;     /* instructions per send */
	double fixed;        /* what is left at the first payload */
};

struct target {
	const char *what;
	int m;
	size_t i;
	size_t i0;      /* split targets: the first payload (i the second) */
	int split;      /* a count beyond the floor, not a ratio */
	double figure;  /* ratio, or instructions (split) */
	double bound;   /* limit */
	double spread;  /* largest spread of the figures it uses */
	struct split owned, floor; /* split targets */
	int built;
	int pass;
};

#define MAX_TARGETS (5 * NMODES * MAX_SIZES)

/* Sender s's cost per send and fixed cost between payloads i0 and i. */
static struct split split_of(int m, size_t i0, size_t i, int s)
{
	const struct run *a = first(m, i0, s), *b = first(m, i, s);
	struct split x;

	x.per_send = ((double)b->ir - (double)a->ir) /
		     ((double)b->c.calls.sends - (double)a->c.calls.sends);
	x.fixed = (double)a->ir - x.per_send * (double)a->c.calls.sends;
	return x;
}

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

/* Whether every run of the cell gave the same instructions and counts. */
static int cell_still(const struct options *o, int m, size_t i, int s)
{
	return ir_spread(o, m, i, s) == 0.0 && counts_equal(o, m, i, s);
}

/*
 * The owned write beyond the floor between payloads i0 < i: per send and
 * fixed. Judged only when the four cells held still (every run equal) and
 * each sender made more sends at i than at i0: a difference of two
 * figures that move has no margin to speak of.
 */
static int targets_split(const struct options *o, int m, size_t i0, size_t i,
			 struct target *t)
{
	struct target base = { .m = m, .i = i, .i0 = i0, .split = 1,
			       .built = OWNED_BUILT };
	int still = 1;

	for (size_t k = 0; k < 2; k++) {
		size_t at = k ? i : i0;

		still = still && cell_still(o, m, at, S_OWNED) &&
			cell_still(o, m, at, S_FLOOR);
		base.spread = dmax(base.spread,
				   dmax(ir_spread(o, m, at, S_OWNED),
					ir_spread(o, m, at, S_FLOOR)));
	}
	if (OWNED_BUILT) {
		still = still &&
			first(m, i, S_OWNED)->c.calls.sends >
				first(m, i0, S_OWNED)->c.calls.sends &&
			first(m, i, S_FLOOR)->c.calls.sends >
				first(m, i0, S_FLOOR)->c.calls.sends;
		base.owned = split_of(m, i0, i, S_OWNED);
		base.floor = split_of(m, i0, i, S_FLOOR);
	}
	t[0] = base;
	t[0].what = "owned: instructions per send beyond the floor's";
	t[0].bound = OWNED_PER_SEND_LIMIT;
	t[0].figure = base.owned.per_send - base.floor.per_send;
	t[1] = base;
	t[1].what = "owned: fixed instructions per end(P) beyond the floor's";
	t[1].bound = OWNED_FIXED_LIMIT;
	t[1].figure = base.owned.fixed - base.floor.fixed;
	for (int k = 0; k < 2; k++)
		t[k].pass = OWNED_BUILT && still && t[k].figure <= t[k].bound;
	return 2;
}

static int targets_make(const struct options *o, struct target *t)
{
	int n = 0;

	for (int m = 0; m < NMODES; m++)
	for (size_t i = 0; i < o->nfull; i++) {
		const struct run *fl = first(m, i, S_FLOOR);
		const struct run *cp = first(m, i, S_COPY);
		const struct run *cq = first(m, i, S_COPYING);
		const struct run *ow = first(m, i, S_OWNED);
		double sp_c = ir_spread(o, m, i, S_COPYING);
		double sp_f = ir_spread(o, m, i, S_FLOOR);
		double sp_k = ir_spread(o, m, i, S_COPY);
		double sp = sp_c > sp_f ? sp_c : sp_f;
		struct target *x;

		sp = sp > sp_k ? sp : sp_k;
		x = &t[n++];
		*x = (struct target){ .what = "copying: instructions <= "
					      "(floor + copy) x limit",
				      .m = m, .i = i, .bound = limits[m],
				      .spread = sp, .built = 1 };
		x->figure = (double)cq->ir / (double)(fl->ir + cp->ir);
		x->pass = x->figure <= x->bound &&
			  sp < x->bound - 1.0 && counts_equal(o, m, i, S_COPYING);

		x = &t[n++];
		*x = (struct target){ .what = "copying: each byte copied at "
					      "most once (copied = P - taken "
					      "in the call)",
				      .m = m, .i = i, .bound = 1.0,
				      .built = 1 };
		x->figure = (double)(cq->c.copied + cq->c.moved) /
			    (double)(o->sizes[i] - cq->c.in_call);
		x->spread = counts_equal(o, m, i, S_COPYING) ? 0.0 : 1.0;
		x->pass = cq->c.moved == 0 &&
			  cq->c.copied == o->sizes[i] - cq->c.in_call &&
			  x->spread == 0.0;

		/* The owned write's point: it copies no byte. The figure is
		 * the bytes copied as a share of P. */
		x = &t[n++];
		*x = (struct target){ .what = "owned: copies no byte (bytes "
					      "copied = 0)",
				      .m = m, .i = i, .bound = 0.0,
				      .built = OWNED_BUILT };
		if (OWNED_BUILT) {
			x->figure = (double)ow->c.copied / (double)o->sizes[i];
			x->spread = counts_equal(o, m, i, S_OWNED) ? 0.0 : 1.0;
			x->pass = ow->c.copied == 0 && ow->c.moved == 0 &&
				  x->spread == 0.0;
		}
	}
	/* The split, between each payload and the next. */
	for (int m = 0; m < NMODES; m++)
		for (size_t i = 1; i < o->nsizes; i++)
			n += targets_split(o, m, i - 1, i, &t[n]);
	return n;
}

/* ---- JSON --------------------------------------------------------------- */

static json_t *json_counts(const struct counts *c)
{
	return bc_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		       "sends", (json_int_t)c->calls.sends,
		       "eagain", (json_int_t)c->calls.eagain,
		       "epoll_wait", (json_int_t)c->calls.waits,
		       "syscalls", (json_int_t)c->syscalls,
		       "bytes_in_call", (json_int_t)c->in_call,
		       "bytes_copied", (json_int_t)c->copied,
		       "bytes_moved", (json_int_t)c->moved,
		       "syncs", (json_int_t)c->syncs);
}

static json_t *json_cell(const struct options *o, int m, size_t i, int s)
{
	const struct cell *x = &cells[m][i][s];
	json_t *j = bc_pack("{s:s, s:I, s:s, s:b, s:b}", "mode", mode_names[m],
			    "payload", (json_int_t)o->sizes[i],
			    "sender", sender_names[s], "built", !x->skip,
			    "run", !x->skip && !x->not_run);
	json_t *ir;

	if (x->skip || x->not_run)
		return j;
	ir = bc_pack("[]");
	for (int k = 0; k < o->repeat; k++)
		bc_append(ir, json_integer((json_int_t)x->runs[k].ir));
	bc_set(j, "instructions", ir);
	bc_set(j, "spread", bc_real(ir_spread(o, m, i, s), 6));
	bc_set(j, "counts_equal", json_boolean(counts_equal(o, m, i, s)));
	bc_set(j, "counts", json_counts(&x->runs[0].c));
	return j;
}

/* A target; "pass" only when it was judged (its code is built). */
static json_t *json_target(const struct options *o, const struct target *x)
{
	json_t *j = bc_pack("{s:s, s:s, s:I, s:o, s:b, s:s}", "target", x->what,
			    "mode", mode_names[x->m],
			    "payload", (json_int_t)o->sizes[x->i],
			    "limit", bc_real(x->bound, 2), "built", x->built,
			    "kind", x->split ? "instructions" : "ratio");

	if (x->split)
		bc_set(j, "payload_from", json_integer((json_int_t)o->sizes[x->i0]));
	if (x->built) {
		bc_set(j, "figure", bc_real(x->figure, 6));
		bc_set(j, "spread", bc_real(x->spread, 6));
		bc_set(j, "pass", json_boolean(x->pass));
	}
	if (x->built && x->split) {
		bc_set(j, "owned_per_send", bc_real(x->owned.per_send, 6));
		bc_set(j, "floor_per_send", bc_real(x->floor.per_send, 6));
		bc_set(j, "owned_fixed", bc_real(x->owned.fixed, 6));
		bc_set(j, "floor_fixed", bc_real(x->floor.fixed, 6));
	}
	return j;
}

/* The figures as JSON, which the report's bench_sender_cpu section renders.
 * Returns the targets met; *total gets the targets judged. */
static int print_json(const struct options *o, int argc, char **argv,
		      const struct target *t, int n, int *total)
{
	json_t *report = bc_report_new(argc, argv), *jcells, *targets;
	int met;

	bc_set(report, "transport", json_string("unix"));
	bc_set(report, "clamp", json_integer((json_int_t)CLAMP));
	bc_set(report, "clamp_rule", json_string(CLAMP_RULE));
	bc_set(report, "repeat", json_integer(o->repeat));
	bc_set(report, "owned_built", json_boolean(OWNED_BUILT));
	bc_set(report, "bytes_copied_source", json_string(COPIED_SOURCE));
	bc_set(report, "cells", jcells = bc_pack("[]"));
	for (int m = 0; m < NMODES; m++)
		for (size_t i = 0; i < o->nsizes; i++)
			for (int s = 0; s < NSENDERS; s++)
				bc_append(jcells, json_cell(o, m, i, s));
	targets = bc_pack("[]");
	for (int k = 0; k < n; k++)
		bc_append(targets, json_target(o, &t[k]));
	met = bc_report_targets(report, targets);
	*total = (int)json_integer_value(json_object_get(report, "targets_total"));
	bc_report_print(report);
	return met;
}
