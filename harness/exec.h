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
	/* The graceful end: stop_signal to the program after stop_after_ms
	 * (-1: never), or when the shell command `until` ends (NULL: none). */
	int stop_signal;
	int stop_after_ms;
	const char *until;
	const char *fiu_ctrl;   /* fiu-ctrl's FIFO prefix, or NULL */
	int exit_zero;          /* exit 0 when the report is written */
};

/*
 * Runs the program with the preload library and the faults (and `until`
 * beside it, without them, in a process group of its own, which is the
 * terminal's foreground group while `until` runs when wirecheck is in the
 * foreground of a terminal on stdin; the terminal is wirecheck's group's
 * again once `until` has ended, and when this returns), waits for them
 * and every process they leave (SIGKILL to all after timeout_ms, or on
 * SIGTERM, SIGHUP or SIGINT to wirecheck; SIGTERM, then SIGKILL, to
 * `until`'s group once the program and what it left have ended), and
 * writes the JSON report whatever happened: from the states the library
 * keeps in files, which outlive the processes. Returns the program's
 * status (docs/cli.md, "Exit status": its code, 128+N for signal N, 124
 * at the timeout; `until`'s when the stop signal ended the program; 0
 * with exit_zero); 3 when the harness failed (after a message on stderr).
 * After a signal to wirecheck, writes the report, then dies of that
 * signal.
 */
int wc_exec(const struct exec_options *o);

#endif
