/*
 * run.h: one run of a scenario: spawn the subject, let the peer (peer.h)
 * play its part, and build the trace (trace.h) (docs/ARCHITECTURE.md, "A run").
 */
#ifndef WIRECHECK_RUN_H
#define WIRECHECK_RUN_H

#include "peer.h"  /* WC_HANDOFF_* */
#include "scenario.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct run_options {
	const char *subject;   /* the subject program */
	int valgrind;          /* wrap the subject in valgrind memcheck */
	const char *strace;    /* or in `strace -f -c -o FILE`: an independent
				* count of the subject's syscalls */
	int64_t started_ms;    /* wc_now_ms() when the run's deadline starts
				* (before the file was read), or 0: now */
	int handoff;           /* WC_HANDOFF_* (peer.h): how the subject gets
				* its connections */
};

/*
 * Runs the scenario once. Returns 0 and a new trace in *trace (the caller
 * decrefs it), also when the subject crashed or hung (the trace says so),
 * broke the subject protocol (exit.error "protocol: ...", the run ended at
 * that line) or never attached the gate (no syscalls, syscalls_timing or
 * fired; exit.error "gate: ..." when the scenario has fault rules);
 * returns -1 with a message in err when the harness itself could not run,
 * and -2 with a message in err when the subject could not be executed
 * (exec failed: the subject's path, errno's text, for a script whose #!
 * line names a missing interpreter that interpreter); no trace then.
 */
int wc_run(const struct scenario *sc, const struct run_options *opts,
	   json_t **trace, char *err, size_t errlen);

#endif
