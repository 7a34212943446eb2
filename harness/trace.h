/*
 * trace.h: the trace of one run, as JSON (docs/cli.md, "The trace").
 */
#ifndef WIRECHECK_TRACE_H
#define WIRECHECK_TRACE_H

#include "fi.h"
#include "scenario.h"

#include <jansson.h>

/* How the subject ended. */
struct wc_outcome {
	int exited;           /* the subject was reaped: status holds */
	int status;           /* its wait status */
	int timed_out;        /* the harness killed it at the deadline */
	int valgrind;         /* it ran under valgrind memcheck */
	const char *error;    /* the subject's "fatal" message, or NULL */
};

/*
 * Builds the trace of a run of sc: its configuration and faults, how the
 * subject ended, the peer's section (peer: a reference the trace takes),
 * the subject's events and queue statistics (borrowed: the trace adds its
 * own references; queue may be NULL) and its gate counters. Returns a new
 * reference, or NULL when out of memory.
 */
json_t *wc_trace_build(const struct scenario *sc, const struct wc_outcome *o,
		       json_t *peer, json_t *events, json_t *queue,
		       const struct fi_counters *counters);

/*
 * Compares two traces on their deterministic fields (everything but
 * syscalls_timing). Returns 1 when equal; else 0 and names the first field
 * that differs in what (a static string).
 */
int wc_trace_same(json_t *a, json_t *b, const char **what);

#endif
