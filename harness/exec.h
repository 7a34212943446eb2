/*
 * exec.h: `wirecheck exec`, a program not built against the gate, run with
 * the gate preloaded (faultinject/preload.c, docs/cli.md).
 */
#ifndef WIRECHECK_EXEC_H
#define WIRECHECK_EXEC_H

#include <stddef.h>

struct exec_options {
	char *const *argv;      /* the program and its arguments, NULL-ended */
	const char *const *faults; /* rule specs (WIRECHECK_FAULTS) */
	size_t nfaults;
	const char *preload;    /* path of libwirecheck-preload.so */
	const char *output;     /* the report's file, or NULL for stdout */
	int timeout_ms;
};

/*
 * Runs the program in its own process group with the preload library and
 * the faults, waits for it (killing the group after timeout_ms), and
 * writes the JSON report. Returns 0 when the report was written, whatever
 * the program did; 3 when the harness failed (after a message on stderr).
 */
int wc_exec(const struct exec_options *o);

#endif
