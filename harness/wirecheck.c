/*
 * wirecheck.c: the command line (docs/cli.md).
 *
 * Exit status: 0 a trace was written (whatever the subject did: its exit,
 * signal or timeout is in the trace); 1 --repeat found two traces that
 * differ; 2 bad usage or a bad scenario (the message names file:line);
 * 3 the harness itself failed; 4 the trace was written but the subject
 * stopped with a fatal error of its own (exit.error).
 */
#include "exec.h"
#include "fi.h"
#include "outpath.h"
#include "run.h"
#include "scenario.h"
#include "trace.h"
#include "wcutil.h"

#include <errno.h>
#include <signal.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WIRECHECK_VERSION "0.1.0"

static const char usage_main[] =
	"usage: wirecheck COMMAND [ARGS]\n"
	"\n"
	"Commands:\n"
	"  run FILE [FLAGS]   run a scenario against the subject, print its trace\n"
	"  per-connection FILE --from N1 --to N2 [FLAGS]\n"
	"                     syscalls per connection: (count at N2 - count at N1)\n"
	"                     / (N2 - N1), each count from a run with that many\n"
	"                     connections\n"
	"  exec [FLAGS] -- PROGRAM [ARGS]\n"
	"                     run a program not built against the gate with the\n"
	"                     gate preloaded: clamp and refuse its sends, count its\n"
	"                     socket calls\n"
	"  check [--json] FILE  parse a scenario and report its first error, if any;\n"
	"                     with --json, print its suite metadata (behaviour,\n"
	"                     matrix, legacy variant) for the pytest plugin\n"
	"  sweep FILE... [FLAGS]\n"
	"                     fail each writing call with each fault in turn, judge\n"
	"                     every run by invariants (docs/sweeps.md; Python:\n"
	"                     `wirecheck sweep --help`)\n"
	"  explore BEHAVIOUR... [FLAGS]\n"
	"                     generated operations under random faults, judged by\n"
	"                     a model and real peers, each failure shrunk to a\n"
	"                     scenario file (docs/explore.md; Python:\n"
	"                     `wirecheck explore --help`)\n"
	"  --help             this text; `wirecheck run --help` for the flags\n"
	"  --version          the version\n"
	"\n"
	"The scenario language is in docs/scenario-language.md, the trace format\n"
	"in docs/cli.md.\n";

static const char usage_run[] =
	"usage: wirecheck run FILE [FLAGS]\n"
	"\n"
	"Runs the scenario FILE once (or --repeat times) and writes its trace as\n"
	"JSON. Every flag can also be written in the scenario file, as a line with\n"
	"the same name and no dashes; flags add to the file's faults and override\n"
	"its transport, timeout and variants.\n"
	"\n"
	"  --clamp-send N        every writing call sends at most N bytes (a true\n"
	"                        short send): the rule write:short=N,repeat=forever\n"
	"  --refuse-write SPEC   writing calls fail without the kernel: ERR refuses\n"
	"                        every call, ERR@K the K-th only (from 1), ERR@KxN\n"
	"                        N calls from the K-th, ERR@Kx* every call from the\n"
	"                        K-th. ERR is a name (EAGAIN) or a number.\n"
	"  --signal SPEC         SIG@SYSCALL:K raises SIG before the K-th such call\n"
	"                        (SIGTERM@send:2); SIG@task:N raises it at the end of\n"
	"                        task N's operations, from the subject itself, or\n"
	"                        from the harness with SIG@task:N:external\n"
	"  --fault RULE          a gate rule: TARGET:ACTION[,after=K][,repeat=N|forever]\n"
	"                        [,fd=N][,fds=any][,conn=C][,byte=N]; ACTION is\n"
	"                        short=N, errno=E, zero, signal=S; conn=C aims at\n"
	"                        connection C (0 is the first opened), byte=N at\n"
	"                        the call that would carry byte N of its stream;\n"
	"                        without fd=N or fds=any, a rule on write, read,\n"
	"                        close or epoll_ctl aims at sockets only; TARGET a\n"
	"                        syscall, write, read, syswrite, sysread, all\n"
	"  --variant NAME=VALUE  select a strategy: queue=cursor|memmove,\n"
	"                        batch=on|off, halfopen=end-first|poll-first,\n"
	"                        chunked=fixed|separate, ws=by-option|by-kind\n"
	"                        (fixed|legacy are accepted as values)\n"
	"  --connections N       the number of connections (the scenario's own)\n"
	"  --transport tcp|unix  the connection between subject and peer (tcp)\n"
	"  --timeout SECONDS     kill the subject after this long (30; x10 under\n"
	"                        --valgrind); the trace says timed_out\n"
	"  --repeat N            run N times; exit 1 if two traces differ\n"
	"  --valgrind            run the subject under valgrind memcheck; the trace's\n"
	"                        exit.valgrind says clean or errors\n"
	"  --trace FILE          write the trace to FILE instead of stdout\n"
	"  --subject NAME|PATH   the subject: refstack (refstack-subject beside\n"
	"                        wirecheck, the default), node (node:net), libuv,\n"
	"                        bun, node-upgrade, bun-upgrade, or a program's\n"
	"                        PATH (docs/subjects.md)\n"
	"  --subject-preload     run the subject PATH with the gate preloaded (node\n"
	"                        and libuv always are): for a stack not built\n"
	"                        against the gate\n"
	"  --subject-handoff upgrade  each connection is the socket an HTTP\n"
	"                        server hands to its 'upgrade' listener: the peer\n"
	"                        connects and sends an Upgrade request first, and\n"
	"                        the subject's 101 is not part of what it received\n"
	"                        (node-upgrade and bun-upgrade imply it)\n"
	"  --strace FILE         run the subject under `strace -f -c -o FILE`: an\n"
	"                        independent count of its syscalls\n";

static const char usage_exec[] =
	"usage: wirecheck exec [FLAGS] -- PROGRAM [ARGS...]\n"
	"\n"
	"Runs PROGRAM, which need not be built against the gate, with the fault\n"
	"gate preloaded (libwirecheck-preload.so): its send, sendto, sendmsg,\n"
	"write, writev, recv, read, epoll_ctl, epoll_wait, accept, accept4,\n"
	"connect, shutdown and close are counted, and the faults apply to them;\n"
	"so do recvfrom and recvmsg (as recv), readv (as read) and epoll_pwait\n"
	"(as epoll_wait). A rule aims at sockets only, unless it says fd=N or\n"
	"fds=any. Prints a JSON report: the command, the faults, the program's\n"
	"exit, its counts per kind and fd, the faults that fired, and the counts\n"
	"of the processes it started.\n"
	"\n"
	"  --clamp-send N        as for `run`: every writing call on a socket\n"
	"  --refuse-write SPEC   as for `run`\n"
	"  --fault RULE          as for `run`\n"
	"  --signal SIG@SYSCALL:K  as for `run` (a task point needs a scenario)\n"
	"  --timeout SECONDS     kill the program's process group after this long\n"
	"                        (30); the report's exit says timed_out\n"
	"  --output FILE         write the report to FILE instead of stdout\n"
	"  --preload PATH        the library (default: lib/libwirecheck-preload.so\n"
	"                        beside wirecheck's bin/ directory)\n"
	"  --stop-after SECONDS  send the stop signal to the program after this\n"
	"                        long (a server's graceful end)\n"
	"  --until 'COMMAND'     run COMMAND (sh -c, without the gate) beside the\n"
	"                        program; send it the stop signal when COMMAND ends\n"
	"                        (COMMAND gets SIGTERM when the program and what\n"
	"                        it left end first)\n"
	"  --stop-signal SIG     the stop signal (SIGTERM)\n"
	"  --fiu-ctrl PREFIX     let fiu-ctrl -f PREFIX arm the gate's failpoints\n"
	"                        in the running program\n"
	"  --exit-zero           exit 0 when the report is written; without it,\n"
	"                        exec exits with the program's status (a signal\n"
	"                        as 128+N, 124 at the timeout)\n";

struct cli {
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

/* The command whose --help a usage error points to. */
static const char *help_command = "run";

static int usage_error(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "wirecheck: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\nTry 'wirecheck %s --help'.\n", help_command);
	return 2;
}

/*
 * A file the command line names for wirecheck (or strace) to write, checked
 * before anything runs (harness/outpath.h), so that a run is not spent on
 * a report it cannot write. Returns 0, or 2 after a usage error that names
 * the flag, the path and the reason.
 */
static int check_output(const char *flag, const char *path)
{
	char why[4200], named[4200];

	if (path == NULL || wc_output_check(path, why, sizeof(why)) == 0)
		return 0;
	(void)snprintf(named, sizeof(named), "%s '%s'", flag, path);
	return usage_error("%s: cannot write there: %s", named, why);
}

/*
 * --fiu-ctrl PREFIX: libfiu in the program makes its FIFOs PREFIX-PID.in and
 * PREFIX-PID.out, and the preload ends the program when it cannot. Their
 * directory is checked here, as an output file's, so that a bad prefix is a
 * usage error before the program runs.
 */
static int check_fiu_ctrl(const char *prefix)
{
	char probe[4200], why[4200];

	if (snprintf(probe, sizeof(probe), "%s-1.in", prefix) >= (int)sizeof(probe))
		return usage_error("--fiu-ctrl: the prefix is too long%s%s", "", "");
	if (wc_output_check(probe, why, sizeof(why)) == 0)
		return 0;
	(void)snprintf(probe, sizeof(probe), "--fiu-ctrl '%s'", prefix);
	return usage_error("%s: cannot make its FIFOs there: %s", probe, why);
}

/* NAME in the directory of this program (found through /proc/self/exe),
 * or NAME itself when that cannot be read. NAME may climb (../lib/...). */
static char *beside_self(const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self));
	char *slash, *path;

	if (n <= 0 || n >= (ssize_t)sizeof(self))
		return strdup(name);
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		slash[1] = '\0';
	else
		self[0] = '\0';
	if (asprintf(&path, "%s%s", self, name) < 0)
		return NULL;
	return path;
}

/*
 * The directories the binaries find each other by, relative to this
 * program's own (cmake/Install.cmake sets them from the install layout, and
 * the build tree has the same shape): the subjects, the preload library and
 * the wirecheck Python package. Never the source tree (docs/cli.md, "How
 * wirecheck finds its parts").
 */
#ifndef WC_LIBEXEC_FROM_BIN
#define WC_LIBEXEC_FROM_BIN "../libexec/wirecheck"
#endif
#ifndef WC_LIB_FROM_BIN
#define WC_LIB_FROM_BIN "../lib"
#endif
#ifndef WC_PYTHON_FROM_BIN
#define WC_PYTHON_FROM_BIN "../lib/python3/dist-packages"
#endif

/*
 * A program of wirecheck's (a subject) by its NAME: in the installed
 * layout's libexec directory, else beside this program (a build tree's
 * bin/). The first that exists; the libexec path when neither does, for
 * the caller's message. NULL without memory.
 */
static char *locate(const char *name)
{
	char *rel = NULL, *path;

	if (asprintf(&rel, "%s/%s", WC_LIBEXEC_FROM_BIN, name) < 0)
		return NULL;
	path = beside_self(rel);
	free(rel);
	if (path == NULL || access(path, F_OK) == 0)
		return path;
	rel = beside_self(name);
	if (rel != NULL && access(rel, F_OK) == 0) {
		free(path);
		return rel;
	}
	free(rel);
	return path;
}

/* The preload library, in the lib directory of this program's layout. */
static char *preload_library(void)
{
	return beside_self(WC_LIB_FROM_BIN "/libwirecheck-preload.so");
}

/* The subject beside this program. */
static char *default_subject(void)
{
	return locate("refstack-subject");
}

/*
 * The subjects known by name (docs/subjects.md): the reference stack, linked
 * against the gate; node:net and libuv, which are not and run with the gate
 * preloaded. Sets *subject (to free) and *preload for a name; leaves both
 * alone for a PATH. Returns 0, or 3 without memory.
 */
static int named_subject(const char *given, char **subject, int *preload)
{
	static const struct { const char *name, *program; int preload; } names[] = {
		{ "refstack", "refstack-subject", 0 },
		{ "node", "node-subject", 1 },
		{ "libuv", "libuv-subject", 1 },
		{ "bun", "bun-subject", 1 },
		/* each connection handed off by an HTTP server (--subject-handoff) */
		{ "node-upgrade", "node-subject", 1 },
		{ "bun-upgrade", "bun-subject", 1 },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(given, names[i].name) != 0)
			continue;
		*subject = locate(names[i].program);
		*preload |= names[i].preload;
		return *subject ? 0 : 3;
	}
	return 0;
}

/*
 * A subject that is not linked against the gate runs with it preloaded
 * (faultinject/preload.c): LD_PRELOAD names the library, before any the
 * environment had, and WIRECHECK_SHM_FD=5 makes it that subject's gate
 * (counters in the shared memory, sockets only, commands on fd 5). Set in
 * this process's environment, which the subject inherits. Returns 0, or 2
 * after a message.
 */
static int preload_subject(void)
{
	char *lib = preload_library();
	char *real = lib ? realpath(lib, NULL) : NULL;
	const char *old = getenv("LD_PRELOAD");
	char *value;
	size_t len;
	int rc = 0;

	if (!real) {
		fprintf(stderr, "wirecheck: the preload library %s: %s\n",
			lib ? lib : "?", strerror(lib ? errno : ENOMEM));
		free(lib);
		return 2;
	}
	len = strlen(real) + (old ? strlen(old) + 1 : 0) + 1;
	value = malloc(len);
	if (!value || snprintf(value, len, "%s%s%s", real, old ? " " : "", old ? old : "") < 0 ||
	    setenv("LD_PRELOAD", value, 1) != 0 || setenv("WIRECHECK_SHM_FD", "5", 1) != 0) {
		fprintf(stderr, "wirecheck: cannot set the subject's LD_PRELOAD\n");
		rc = 2;
	}
	free(value);
	free(real);
	free(lib);
	return rc;
}

/* The setting a flag --NAME applies (scenario.c's table), or NULL. */
static sc_setting_fn flag_setting(const char *flag)
{
	return strncmp(flag, "--", 2) == 0 ? sc_flag_setting(flag + 2) : NULL;
}

/* Applies one flag with a value to the scenario. 0, or 2 after a message. */
static int apply_flag(struct scenario *sc, const char *flag, const char *val)
{
	sc_setting_fn apply = flag_setting(flag);
	char err[512];
	int rc;

	if (!apply)
		return usage_error("unknown flag '%s'%s", flag, "");
	rc = apply(sc, val, 0, err, sizeof(err));
	/* The setting's message starts with its scenario keyword: name the
	 * flag instead ("--clamp-send '0': ..."), or put the flag first. */
	if (rc < 0 && strncmp(err, flag + 2, strlen(flag + 2)) == 0)
		return usage_error("--%s%s", err, "");
	if (rc < 0)
		return usage_error("%s: %s", flag, err);
	return 0;
}

/* The flags of run that take a value: the settings, and these. */
static int is_value_flag(const char *f)
{
	static const char *flags[] = { "--repeat", "--trace", "--subject",
				       "--strace", "--from", "--to", "--subject-handoff" };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strcmp(f, flags[i]) == 0)
			return 1;
	return flag_setting(f) != NULL;
}

/* First pass: the file and the flags that are not scenario settings. */
static int parse_cli(int argc, char **argv, struct cli *cli)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--valgrind") == 0) {
			cli->valgrind = 1;
		} else if (strcmp(a, "--subject-preload") == 0) {
			cli->subject_preload = 1;
		} else if (is_value_flag(a)) {
			if (i + 1 >= argc)
				return usage_error("%s needs a value%s", a, "");
			if (strcmp(a, "--repeat") == 0) {
				char *end;
				long n = strtol(argv[i + 1], &end, 10);

				if (*end || end == argv[i + 1] || n < 1 || n > 100000)
					return usage_error("--repeat '%s': expected a count from 1 to 100000%s", argv[i + 1], "");
				cli->repeat = (int)n;
			} else if (strcmp(a, "--trace") == 0) {
				cli->trace_path = argv[i + 1];
			} else if (strcmp(a, "--subject") == 0) {
				cli->subject = argv[i + 1];
			} else if (strcmp(a, "--strace") == 0) {
				cli->strace = argv[i + 1];
			} else if (strcmp(a, "--subject-handoff") == 0) {
				cli->handoff = argv[i + 1]; /* checked once the file is read */
			} else if (strcmp(a, "--from") == 0 || strcmp(a, "--to") == 0) {
				char *end;
				long n = strtol(argv[i + 1], &end, 10);

				if (*end || end == argv[i + 1] || n < 1 || n > 1024)
					return usage_error("%s '%s': expected a connection count from 1 to 1024", a, argv[i + 1]);
				*(strcmp(a, "--from") == 0 ? &cli->from : &cli->to) = (int)n;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown flag '%s'%s", a, "");
		} else if (cli->file) {
			return usage_error("one scenario file per run; got '%s' after '%s'", a, cli->file);
		} else {
			cli->file = a;
		}
	}
	if (!cli->file)
		return usage_error("run needs a scenario FILE%s%s", "", "");
	if (cli->strace && cli->valgrind)
		return usage_error("--strace and --valgrind do not go together: each wraps the subject%s%s", "", "");
	return 0;
}

static int write_trace(json_t *trace, const char *path)
{
	int flags = JSON_SORT_KEYS | JSON_INDENT(2);

	if (!path) {
		if (json_dumpf(trace, stdout, flags) < 0 || fputc('\n', stdout) == EOF)
			return -1;
		return fflush(stdout) == 0 ? 0 : -1;
	}
	{
		int err = wc_json_to_file(trace, path, (size_t)flags, 1);

		if (err < 0) {
			fprintf(stderr, "wirecheck: cannot write the trace to %s: %s\n", path, strerror(-err));
			return -1;
		}
	}
	return 0;
}

/* Exit 4 when the subject stopped with a fatal error of its own, or broke
 * the subject protocol (the trace's exit.error): the scenario could not
 * run as written. */
static int subject_error_status(const struct scenario *sc, const char *subject, json_t *trace)
{
	json_t *error = json_object_get(json_object_get(trace, "exit"), "error");
	const char *text = json_string_value(error);

	if (!text)
		return 0;
	if (strncmp(text, "protocol: ", 10) == 0)
		fprintf(stderr, "wirecheck: %s: the subject %s broke the subject protocol "
			"(docs/subject-protocol.md), and the run ended there: %s\n", sc->path,
			subject, text);
	else if (strncmp(text, "gate: ", 6) == 0)
		fprintf(stderr, "wirecheck: %s: the scenario did not run as written on the "
			"subject %s: %s\n", sc->path, subject, text);
	else
		fprintf(stderr, "wirecheck: %s: the subject stopped with an error: %s\n", sc->path,
			text);
	return 4;
}

/* A wc_run that returned rc < 0 with err: says so, and returns the exit
 * status, 2 when the subject cannot be executed (-2: err names it, and the
 * scenario is not at fault), else 3. */
static int run_failed(const struct scenario *sc, int rc, const char *err)
{
	if (rc == -2) {
		fprintf(stderr, "wirecheck: %s\n", err);
		return 2;
	}
	fprintf(stderr, "wirecheck: %s: %s\n", sc->path, err);
	return 3;
}

static int run_repeated(const struct scenario *sc, const struct cli *cli,
			const struct run_options *first_ro)
{
	struct run_options ro = *first_ro;
	json_t *first = NULL;
	char err[512];
	int status = 0;

	for (int i = 0; i < cli->repeat; i++) {
		json_t *trace = NULL;
		const char *what = NULL;

		if (cli->repeat > 1)
			fprintf(stderr, "wirecheck: %s: run %d/%d\n", sc->name, i + 1, cli->repeat);
		/* The first run's deadline counts from before the file was
		 * read; each later run has its own. */
		if (i > 0)
			ro.started_ms = 0;
		if ((status = wc_run(sc, &ro, &trace, err, sizeof(err))) < 0) {
			json_decref(first);
			return run_failed(sc, status, err);
		}
		if (!first) {
			first = trace;
			continue;
		}
		if (!wc_trace_same(first, trace, &what)) {
			char *a = json_dumps(json_object_get(first, what), JSON_SORT_KEYS | JSON_COMPACT);
			char *b = json_dumps(json_object_get(trace, what), JSON_SORT_KEYS | JSON_COMPACT);

			fprintf(stderr, "wirecheck: %s: run %d differs from run 1 in '%s'\n  run 1: %.2000s\n  run %d: %.2000s\n",
				sc->path, i + 1, what, a ? a : "?", i + 1, b ? b : "?");
			free(a);
			free(b);
			json_decref(trace);
			status = 1;
			break;
		}
		json_decref(trace);
	}
	if (write_trace(first, cli->trace_path) < 0)
		status = 3;
	if (status == 0)
		status = subject_error_status(sc, ro.subject, first);
	json_decref(first);
	return status;
}

/* How long reading the scenario file may wait for input (a FIFO): the
 * --timeout of the command line, or the default timeout. */
static int read_wait_ms(int argc, char **argv)
{
	struct scenario scratch = { .timeout_ms = SC_DEFAULT_TIMEOUT_MS };
	char err[256];

	for (int i = 0; i + 1 < argc; i++)
		if (strcmp(argv[i], "--timeout") == 0)
			(void)sc_set_timeout(&scratch, argv[i + 1], 0, err, sizeof(err));
	return scratch.timeout_ms;
}

/*
 * The subject PATH must be an executable file. A name without a slash is
 * the file of that name in the current directory (./NAME), never one found
 * through PATH, which execvp would run instead of the file the user meant.
 * Sets *path to the name to run (*owned, to free, when it is a new
 * string). Returns 0, 2 after a message, or 3 without memory.
 */
static int check_subject(char **owned, const char **path)
{
	const char *why = NULL;
	struct stat st;
	int err = 0, bare = !strchr(*path, '/');

	if (bare) {
		size_t n = strlen(*path) + 3;
		char *rel = malloc(n);

		if (!rel) {
			fprintf(stderr, "wirecheck: out of memory\n");
			return 3;
		}
		snprintf(rel, n, "./%s", *path);
		free(*owned);
		*owned = rel;
		*path = rel;
	}
	if (stat(*path, &st) != 0)
		why = strerror(err = errno);
	else if (S_ISDIR(st.st_mode))
		why = strerror(EISDIR);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (access(*path, X_OK) != 0)
		why = strerror(err = errno);
	if (!why)
		return 0;
	fprintf(stderr, "wirecheck: the subject %s is not an executable file: %s%s\n", *path, why,
		bare && err == ENOENT
			? " (a subject's name without a slash is the file in the current "
			  "directory, never one found through PATH)"
			: "");
	return 2;
}

/* Parses the command line and the scenario, applies the flags, finds the
 * subject. Returns 0, or an exit status after a message. The run's
 * deadline counts from the start, reading the file included. */
static int prepare(int argc, char **argv, struct cli *cli, struct scenario *sc,
		   struct run_options *ro, char **subject)
{
	char err[1024];
	int64_t started = wc_now_ms();
	int rc = parse_cli(argc, argv, cli);

	if (rc)
		return rc;
	if ((rc = check_output("--trace", cli->trace_path)) != 0 ||
	    (rc = check_output("--strace", cli->strace)) != 0)
		return rc;
	ro->started_ms = started;
	if (sc_parse_file(cli->file, read_wait_ms(argc, argv), sc, err, sizeof(err)) < 0) {
		fprintf(stderr, "wirecheck: %s\n", err);
		return 2;
	}
	for (int i = 0; i < argc; i++) {
		if (flag_setting(argv[i]) && (rc = apply_flag(sc, argv[i], argv[i + 1]))) {
			sc_free(sc);
			return rc;
		}
		i += is_value_flag(argv[i]);
	}
	if (sc_validate(sc, err, sizeof(err)) < 0) {
		fprintf(stderr, "wirecheck: %s\n", err);
		sc_free(sc);
		return 2;
	}
	if (cli->handoff && strcmp(cli->handoff, "upgrade") != 0) {
		sc_free(sc);
		return usage_error("--subject-handoff '%s': expected upgrade%s", cli->handoff, "");
	}
	if ((cli->subject && named_subject(cli->subject, subject, &cli->subject_preload)) ||
	    (!cli->subject && !(*subject = default_subject()))) {
		sc_free(sc);
		return 3;
	}
	ro->subject = *subject ? *subject : cli->subject;
	/* node-upgrade, bun-upgrade: the named subject with a handoff */
	if (cli->subject && strlen(cli->subject) > 8 &&
	    strcmp(cli->subject + strlen(cli->subject) - 8, "-upgrade") == 0 && *subject)
		cli->handoff = "upgrade";
	ro->handoff = cli->handoff ? WC_HANDOFF_UPGRADE : WC_HANDOFF_NONE;
	ro->valgrind = cli->valgrind;
	ro->strace = cli->strace;
	if ((rc = check_subject(subject, &ro->subject)) != 0) {
		free(*subject);
		sc_free(sc);
		return rc;
	}
	if (cli->subject_preload && (rc = preload_subject()) != 0) {
		free(*subject);
		sc_free(sc);
		return rc;
	}
	return 0;
}

static int wants_help(int argc, char **argv, const char *text)
{
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(text, stdout);
			return 1;
		}
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct cli cli = { .repeat = 1 };
	struct run_options ro = { 0 };
	struct scenario sc;
	char *subject = NULL;
	int rc;

	if (wants_help(argc, argv, usage_run))
		return 0;
	rc = prepare(argc, argv, &cli, &sc, &ro, &subject);
	if (rc)
		return rc;
	rc = run_repeated(&sc, &cli, &ro);
	free(subject);
	sc_free(&sc);
	return rc;
}

static const char usage_per_connection[] =
	"usage: wirecheck per-connection FILE --from N1 --to N2 [RUN FLAGS]\n"
	"\n"
	"Runs the scenario with N1 and with N2 connections (the scenario's\n"
	"'connections' replaced) and prints, for every syscall kind, the count per\n"
	"connection: (count at N2 - count at N1) / (N2 - N1), the figure of\n"
	"oven-sh/bun \"usockets: dispatch on_end before the poll change\" (--from 100 --to 300). Every wirecheck run flag applies\n"
	"to both runs but --repeat, which is refused. Output: JSON on stdout, or\n"
	"in the file of --trace. Exit 1 when a run did not end cleanly (its exit\n"
	"is printed), or, with no JSON, when the subject never attached the gate\n"
	"(no syscalls to count: --subject-preload); 2 on bad input or a subject\n"
	"that cannot be executed; 3 when the harness itself failed.\n";

/* Runs the scenario with n connections; returns its trace, or NULL and
 * the exit status in *status (2: the subject cannot be executed; 3). */
static json_t *run_with(struct scenario *sc, int n, const struct run_options *ro, int *status)
{
	char err[512];
	json_t *trace = NULL;
	int rc;

	sc->connections = n;
	fprintf(stderr, "wirecheck: %s: %d connection%s\n", sc->name, n, n == 1 ? "" : "s");
	if ((rc = wc_run(sc, ro, &trace, err, sizeof(err))) < 0) {
		*status = run_failed(sc, rc, err);
		return NULL;
	}
	return trace;
}

static int clean_exit(json_t *trace)
{
	json_t *ex = json_object_get(trace, "exit");

	return json_integer_value(json_object_get(ex, "code")) == 0 &&
	       json_is_integer(json_object_get(ex, "code")) &&
	       !json_is_true(json_object_get(ex, "timed_out"));
}

static json_t *per_connection(json_t *a, json_t *b, int from, int to)
{
	json_t *ca = json_object_get(a, "syscalls"), *cb = json_object_get(b, "syscalls");
	json_t *out = json_object();
	const char *key;
	json_t *v;

	json_object_foreach(cb, key, v) {
		json_int_t d = json_integer_value(v) - json_integer_value(json_object_get(ca, key));

		json_object_set_new(out, key, json_real((double)d / (to - from)));
	}
	return out;
}

static int cmd_per_connection(int argc, char **argv)
{
	struct cli cli = { .repeat = 1 };
	struct run_options ro = { 0 };
	struct scenario sc;
	char *subject = NULL;
	json_t *a = NULL, *b = NULL, *out;
	int rc;

	help_command = "per-connection";
	if (wants_help(argc, argv, usage_per_connection))
		return 0;
	rc = prepare(argc, argv, &cli, &sc, &ro, &subject);
	if (rc)
		return rc;
	if (cli.from == 0 || cli.to == 0 || cli.from >= cli.to || cli.repeat > 1) {
		free(subject);
		sc_free(&sc);
		if (cli.repeat > 1)
			return usage_error("per-connection makes one run per count: "
					   "--repeat does not apply%s%s", "", "");
		return usage_error("per-connection needs --from N1 --to N2 with N1 < N2%s%s", "", "");
	}
	rc = 0;
	a = run_with(&sc, cli.from, &ro, &rc);
	ro.started_ms = 0; /* the second run has a deadline of its own */
	b = a ? run_with(&sc, cli.to, &ro, &rc) : NULL;
	if (a && b && (!json_object_get(a, "syscalls") || !json_object_get(b, "syscalls"))) {
		fprintf(stderr, "wirecheck: %s: no syscalls to count: the subject never attached "
			"the gate (--subject-preload)\n", sc.path);
		rc = 1;
	}
	if (rc == 0) {
		int err = 0;

		out = json_pack("{s:s,s:i,s:i,s:O,s:o,s:{s:O,s:O},s:{s:O,s:O}}",
				"scenario", sc.name, "from", cli.from, "to", cli.to,
				"variant", json_object_get(b, "variant"),
				"per_connection", per_connection(a, b, cli.from, cli.to),
				"syscalls", "from", json_object_get(a, "syscalls"),
				"to", json_object_get(b, "syscalls"),
				"exit", "from", json_object_get(a, "exit"), "to", json_object_get(b, "exit"));
		errno = 0;
		if (!out)
			err = -ENOMEM;
		else if (cli.trace_path)
			err = wc_json_to_file(out, cli.trace_path,
					      JSON_SORT_KEYS | JSON_INDENT(2), 0);
		else if (json_dumpf(out, stdout, JSON_SORT_KEYS | JSON_INDENT(2)) < 0 ||
			 putchar('\n') == EOF || fflush(stdout) != 0)
			err = -(errno ? errno : EIO);
		if (err < 0) {
			fprintf(stderr, "wirecheck: cannot write the result to %s: %s\n",
				cli.trace_path ? cli.trace_path : "stdout", strerror(-err));
			rc = 3;
		}
		json_decref(out);
		if (rc == 0 && (!clean_exit(a) || !clean_exit(b))) {
			fprintf(stderr, "wirecheck: %s: a run did not end cleanly (see exit)\n", sc.path);
			rc = 1;
		}
	}
	json_decref(a);
	json_decref(b);
	free(subject);
	sc_free(&sc);
	return rc;
}

static json_t *except_json(const char *list)
{
	json_t *arr = json_array();
	char buf[128], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", list ? list : "");
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_array_append_new(arr, json_string(tok));
	return arr;
}

/* The suite metadata of a scenario, for the pytest plugin. */
static json_t *check_json(const struct scenario *sc)
{
	json_t *matrix = json_array();

	for (size_t i = 0; i < sc->nmatrix; i++) {
		json_t *values = json_array();

		for (size_t k = 0; k < sc->matrix[i].nvalues; k++)
			json_array_append_new(values, json_string(sc->matrix[i].values[k]));
		json_array_append_new(matrix, json_pack("{s:s,s:o}", "key", sc->matrix[i].key,
							"values", values));
	}
	json_t *declared = json_array();

	for (size_t i = 0; i < sc->ndeclared; i++)
		json_array_append_new(declared, json_pack(
			"{s:i,s:I,s:I,s:s}", "conn", sc->declared[i].conn,
			"start", (json_int_t)sc->declared[i].start,
			"end", (json_int_t)sc->declared[i].end,
			"reason", sc->declared[i].reason));
	return json_pack("{s:s,s:s,s:o,s:o,s:o,s:I,s:i,s:b,s:o}",
			 "name", sc->name, "path", sc->path,
			 "behaviour", sc->behaviour ? json_string(sc->behaviour) : json_null(),
			 "matrix", matrix,
			 "legacy", sc->legacy ? json_pack("{s:s,s:b,s:o}", "variant", sc->legacy,
							  "must_differ", sc->legacy_must_differ,
							  "except", except_json(sc->legacy_except))
					      : json_null(),
			 "tasks", (json_int_t)sc->ntasks, "connections", sc->connections,
			 "allow_half_open", sc->allow_half_open, "sweep_declared", declared);
}

static const char usage_check[] =
	"usage: wirecheck check [--json] FILE\n"
	"\n"
	"Parses the scenario FILE and exits 0 when it is good, 2 with its first\n"
	"error (FILE:LINE: PROBLEM) when it is not. With --json, prints its suite\n"
	"metadata (name, path, behaviour, matrix, legacy, tasks, connections,\n"
	"allow_half_open, sweep_declared) on one line, for the pytest plugin and\n"
	"the sweep.\n";

static int cmd_check(int argc, char **argv)
{
	struct scenario sc;
	char err[1024];
	int as_json = argc == 2 && strcmp(argv[0], "--json") == 0;
	const char *file;

	help_command = "check";
	if (wants_help(argc, argv, usage_check))
		return 0;
	if ((argc != 1 && !as_json) || (argc == 1 && strcmp(argv[0], "--json") == 0))
		return usage_error("check takes [--json] and one scenario FILE%s%s", "", "");
	file = as_json ? argv[1] : argv[0];
	if (sc_parse_file(file, SC_DEFAULT_TIMEOUT_MS, &sc, err, sizeof(err)) < 0) {
		fprintf(stderr, "wirecheck: %s\n", err);
		return 2;
	}
	if (as_json) {
		json_t *o = check_json(&sc);

		if (!o || json_dumpf(o, stdout, JSON_SORT_KEYS | JSON_COMPACT) < 0) {
			json_decref(o);
			sc_free(&sc);
			return 3;
		}
		putchar('\n');
		json_decref(o);
	} else {
		printf("%s: ok (%zu task%s, %zu handler%s, %d connection%s)\n", file,
		       sc.ntasks, sc.ntasks == 1 ? "" : "s", sc.nhandlers,
		       sc.nhandlers == 1 ? "" : "s", sc.connections, sc.connections == 1 ? "" : "s");
	}
	sc_free(&sc);
	return 0;
}

/* `wirecheck exec`: the flags that make gate rules, then -- PROGRAM. */
static int cmd_exec(int argc, char **argv)
{
	struct exec_options eo = { .timeout_ms = 30000, .stop_signal = SIGTERM,
				   .stop_after_ms = -1 };
	struct scenario sc;
	const char **specs = NULL;
	char *preload = NULL, err[256];
	int i, rc = 0;

	help_command = "exec";
	for (i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_exec, stdout);
			return 0;
		}
	}
	if (sc_parse("exec", "", &sc, err, sizeof(err)) != 0)
		return usage_error("%s%s", err, "");
	for (i = 0; i < argc && strcmp(argv[i], "--") != 0 && rc == 0; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--exit-zero") == 0) {
			eo.exit_zero = 1;
		} else if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0) {
			rc = usage_error("exec: '%s' needs a value, or is not a flag; "
					 "the program comes after --%s", a, "");
		} else if (strcmp(a, "--stop-signal") == 0) {
			eo.stop_signal = fi_signal_parse(argv[++i]);
			if (eo.stop_signal < 0)
				rc = usage_error("--stop-signal '%s': expected a "
						 "signal name (SIGTERM, INT) or "
						 "number%s", argv[i], "");
		} else if (strcmp(a, "--stop-after") == 0) {
			char *end;
			double v;

			errno = 0;
			v = strtod(argv[++i], &end);
			if (errno != 0 || end == argv[i] || *end != '\0' ||
			    !(v >= 0 && v <= 86400))
				rc = usage_error("--stop-after '%s': expected "
						 "seconds, 0 to 86400%s", argv[i], "");
			else
				eo.stop_after_ms = (int)(v * 1000.0);
		} else if (strcmp(a, "--until") == 0) {
			eo.until = argv[++i];
		} else if (strcmp(a, "--fiu-ctrl") == 0) {
			eo.fiu_ctrl = argv[++i];
			if (*eo.fiu_ctrl == '\0')
				rc = usage_error("--fiu-ctrl: expected the FIFO "
						 "prefix fiu-ctrl -f takes%s%s",
						 "", "");
		} else if (strcmp(a, "--output") == 0) {
			eo.output = argv[++i];
		} else if (strcmp(a, "--preload") == 0) {
			eo.preload = argv[++i];
		} else if (strcmp(a, "--clamp-send") == 0 ||
			   strcmp(a, "--refuse-write") == 0 ||
			   strcmp(a, "--fault") == 0 ||
			   strcmp(a, "--signal") == 0 ||
			   strcmp(a, "--timeout") == 0) {
			rc = apply_flag(&sc, a, argv[++i]);
		} else if (a[0] != '-') {
			rc = usage_error("exec: '%s' is not a flag: put -- before "
					 "the program (wirecheck exec [FLAGS] -- "
					 "PROGRAM [ARGS])%s", a, "");
		} else {
			rc = usage_error("exec: unknown flag '%s'%s", a, "");
		}
	}
	if (rc == 0 && sc.ntsignals > 0)
		rc = usage_error("exec: --signal takes SIG@SYSCALL:K; a task point "
				 "(SIG@task:N) needs a scenario%s%s", "", "");
	if (rc == 0 && (i >= argc || i + 1 >= argc))
		rc = usage_error("exec needs -- PROGRAM [ARGS]%s%s", "", "");
	if (rc == 0)
		rc = check_output("--output", eo.output);
	if (rc == 0 && eo.fiu_ctrl != NULL)
		rc = check_fiu_ctrl(eo.fiu_ctrl);
	if (rc == 0 && sc.nfaults > FI_MAX_RULES) {
		char n[32], max[32];

		(void)snprintf(n, sizeof(n), "%zu", sc.nfaults);
		(void)snprintf(max, sizeof(max), "%d", FI_MAX_RULES);
		rc = usage_error("exec: %s rules; the gate arms at most %s", n,
				 max);
	}
	if (rc == 0) {
		specs = calloc(sc.nfaults + 1, sizeof(*specs));
		if (eo.preload == NULL)
			eo.preload = preload = preload_library();
		if (specs == NULL || eo.preload == NULL) {
			fprintf(stderr, "wirecheck exec: out of memory\n");
			rc = 3;
		}
	}
	if (rc == 0) {
		for (size_t k = 0; k < sc.nfaults; k++)
			specs[k] = sc.faults[k].text;
		eo.argv = argv + i + 1;
		eo.faults = specs;
		eo.nfaults = sc.nfaults;
		eo.timeout_ms = sc.timeout_ms;
		rc = wc_exec(&eo);
	}
	free(specs);
	free(preload);
	sc_free(&sc);
	return rc;
}

/*
 * A subcommand written in Python (wirecheck sweep, wirecheck explore): execs
 * `python3 -m MODULE --wirecheck-bin SELF ARGS` with the wirecheck package's
 * directory of this program's layout (WC_PYTHON_FROM_BIN: the installed
 * dist-packages, or the build tree's link to python/) first on PYTHONPATH.
 * WIRECHECK_PYTHON names another interpreter. Returns 3 only when the
 * package is missing or the exec failed.
 */
static int run_python_tool(const char *command, const char *module, int argc, char **argv)
{
	const char *python = getenv("WIRECHECK_PYTHON");
	const char *old = getenv("PYTHONPATH");
	char *dir = beside_self(WC_PYTHON_FROM_BIN), *self = beside_self("wirecheck");
	char **args = calloc((size_t)argc + 6, sizeof(*args));
	char *path = NULL, *init = NULL;

	if (!python || !*python)
		python = "/usr/bin/python3";
	if (!dir || !self || !args || asprintf(&init, "%s/wirecheck/__init__.py", dir) < 0) {
		fprintf(stderr, "wirecheck %s: out of memory\n", command);
	} else if (access(init, R_OK) != 0) {
		fprintf(stderr, "wirecheck %s: the wirecheck Python package is not where this "
			"program's layout puts it (%s: %s); install wirecheck "
			"(cmake --install) or run the wirecheck of a build folder\n",
			command, init, strerror(errno));
	} else if (asprintf(&path, "%s%s%s", dir, old && *old ? ":" : "",
			    old && *old ? old : "") < 0 ||
		   setenv("PYTHONPATH", path, 1) != 0) {
		fprintf(stderr, "wirecheck %s: out of memory\n", command);
	} else {
		args[0] = (char *)python;
		args[1] = "-m";
		args[2] = (char *)module;
		args[3] = "--wirecheck-bin";
		args[4] = self;
		for (int i = 0; i < argc; i++)
			args[5 + i] = argv[i];
		execv(python, args);
		fprintf(stderr, "wirecheck %s: cannot run %s: %s\n", command, python,
			strerror(errno));
	}
	free(init);
	free(path);
	free(args);
	free(self);
	free(dir);
	return 3;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage_main, stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("wirecheck %s\n", WIRECHECK_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 2, argv + 2);
	if (strcmp(argv[1], "check") == 0)
		return cmd_check(argc - 2, argv + 2);
	if (strcmp(argv[1], "exec") == 0)
		return cmd_exec(argc - 2, argv + 2);
	if (strcmp(argv[1], "per-connection") == 0)
		return cmd_per_connection(argc - 2, argv + 2);
	if (strcmp(argv[1], "sweep") == 0)
		return run_python_tool("sweep", "wirecheck.sweep", argc - 2, argv + 2);
	if (strcmp(argv[1], "explore") == 0)
		return run_python_tool("explore", "wirecheck.explore", argc - 2, argv + 2);
	fprintf(stderr, "wirecheck: unknown command '%s'\n%s", argv[1], usage_main);
	return 2;
}
