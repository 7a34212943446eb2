/*
 * run.h: one run of a scenario: spawn the subject, play the peer, and build
 * the trace (docs/ARCHITECTURE.md, "A run").
 */
#ifndef WIRECHECK_RUN_H
#define WIRECHECK_RUN_H

#include "scenario.h"

#include <jansson.h>
#include <stddef.h>

struct run_options {
	const char *subject;   /* the subject program */
	int valgrind;          /* wrap the subject in valgrind memcheck */
	const char *strace;    /* or in `strace -f -c -o FILE`: an independent
				* count of the subject's syscalls */
};

/*
 * Runs the scenario once. Returns 0 and a new trace in *trace (the caller
 * decrefs it), also when the subject crashed or hung (the trace says so);
 * returns -1 with a message in err when the harness itself could not run.
 */
int wc_run(const struct scenario *sc, const struct run_options *opts,
	   json_t **trace, char *err, size_t errlen);

/*
 * Compares two traces on their deterministic fields (everything but
 * syscalls_timing). Returns 1 when equal; else 0 and names the first field
 * that differs in what (a static string).
 */
int wc_trace_same(json_t *a, json_t *b, const char **what);

#endif
