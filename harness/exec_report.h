/*
 * exec_report.h: the report of `wirecheck exec` (docs/cli.md, "exec"),
 * gathered from the state files the preload library keeps for each
 * process (faultinject/fi_state.h), which outlive the processes.
 */
#ifndef WIRECHECK_EXEC_REPORT_H
#define WIRECHECK_EXEC_REPORT_H

#include "exec.h"

#include <jansson.h>
#include <sys/types.h>

/*
 * Reads every state in dir into report: "counts", the program's (pid's,
 * or null when it left none), and "children", the other processes' in pid
 * order; a file that is not a state of this build is said on stderr and
 * skipped. Removes the files, fiu-ctrl's FIFOs of each process (fiu_ctrl,
 * their prefix, or NULL) and dir. Returns 0, or 3 after a message on
 * stderr when dir cannot be opened.
 */
int wc_exec_gather(const char *dir, pid_t pid, const char *fiu_ctrl,
		   json_t *report);

/*
 * Adds the report's "rules" (each of o's specs and how often it fired, in
 * every process, from "counts" and "children") and "warnings" (a rule
 * that never fired, also said on stderr).
 */
void wc_exec_rules_report(const struct exec_options *o, json_t *report);

#endif
