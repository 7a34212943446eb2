/*
 * cli.h: the command line (docs/cli.md). wirecheck.c dispatches to one
 * entry per subcommand, each in its own file with its usage text and its
 * flags (cli_NAME.c); cli.c holds what they share.
 *
 * Every entry takes the arguments after the subcommand's name and returns
 * the process's exit status: 0 done; 1 --repeat found two traces that
 * differ, or a per-connection run did not end cleanly; 2 bad usage or a bad
 * scenario (after a message that names file:line or the flag); 3 the
 * harness itself failed; 4 the trace was written but the subject stopped
 * with a fatal error of its own. exec exits with its program's status.
 */
#ifndef WIRECHECK_CLI_H
#define WIRECHECK_CLI_H

#include "run.h"
#include "scenario.h"

/* The subcommands. */
int wc_cmd_run(int argc, char **argv);
int wc_cmd_per_connection(int argc, char **argv);
int wc_cmd_check(int argc, char **argv);
int wc_cmd_exec(int argc, char **argv);
/* A subcommand written in Python: execs `python3 -m MODULE --wirecheck-bin
 * SELF ARGS`; returns 3 only when that could not be done. */
int wc_cmd_python(const char *command, const char *module, int argc, char **argv);

/* Names the command whose --help a usage error points to ("run" until
 * set). COMMAND must outlive the process's use of it (a literal). */
void wc_cli_set_help(const char *command);

/* Prints "wirecheck: " FMT (with A and B, two strings; pass "" for those
 * FMT does not use) and the pointer to --help, on stderr. Returns 2. */
int wc_cli_usage_error(const char *fmt, const char *a, const char *b);

/* With --help or -h among the arguments, prints TEXT on stdout and returns
 * 1; else 0. */
int wc_cli_wants_help(int argc, char **argv, const char *text);

/* A file the command line names for wirecheck (or strace) to write, checked
 * before anything runs (outpath.h), so that a run is not spent on a report
 * it cannot write. Returns 0 (also for a NULL PATH), or 2 after a usage
 * error that names FLAG, PATH and the reason. */
int wc_cli_check_output(const char *flag, const char *path);

/* The scenario setting a flag --NAME applies (scenario.h's table), or
 * NULL when FLAG is not one. */
sc_setting_fn wc_cli_flag_setting(const char *flag);

/* Applies one setting flag with its value to the scenario. Returns 0, or
 * 2 after a usage error. */
int wc_cli_apply_flag(struct scenario *sc, const char *flag, const char *val);

/* The flags of run, which per-connection takes too. */
struct wc_cli {
	const char *file;
	const char *trace_path;
	const char *subject;
	const char *strace;
	int repeat;
	int valgrind;
	int subject_preload; /* --subject-preload, or a named foreign subject */
	const char *handoff; /* --subject-handoff, or a NAME-upgrade subject */
	int from, to;       /* per-connection: the two connection counts */
};

/* Parses run's command line and the scenario, applies the flags, finds the
 * subject (*subject: to free, or NULL). Returns 0 with *sc to sc_free, or
 * an exit status after a message (nothing to free then). The run's
 * deadline (ro->started_ms) counts from the call, reading the file
 * included. */
int wc_cli_prepare(int argc, char **argv, struct wc_cli *cli, struct scenario *sc,
		   struct run_options *ro, char **subject);

/* A wc_run that returned RC < 0 with ERR: says so, and returns the exit
 * status, 2 when the subject cannot be executed (-2), else 3. */
int wc_cli_run_failed(const struct scenario *sc, int rc, const char *err);

/* The subject by name (docs/subjects.md): sets *subject (to free) and
 * *preload for a known name; leaves both alone for a PATH. Returns 0, or 3
 * without memory. */
int wc_cli_named_subject(const char *given, char **subject, int *preload);

/* The default subject, refstack-subject, in this program's layout; NULL
 * without memory. */
char *wc_cli_default_subject(void);

/* Checks that *path is an executable file (a bare name is ./NAME, never
 * found through PATH; *owned then holds the new string). Returns 0, 2
 * after a message, or 3 without memory. */
int wc_cli_check_subject(char **owned, const char **path);

/* Sets LD_PRELOAD and WIRECHECK_SHM_FD in this process's environment so
 * that the subject it starts runs with the gate preloaded. Returns 0, or
 * 2 after a message. */
int wc_cli_preload_subject(void);

#endif
