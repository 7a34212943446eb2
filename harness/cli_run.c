/*
 * cli_run.c: `wirecheck run`: its usage, its flags, the scenario they
 * apply to, the run repeated and its trace written (cli.h). The flags are
 * shared with per-connection (wc_cli_prepare).
 */
#include "cli.h"
#include "outpath.h"
#include "run.h"
#include "trace.h"
#include "wcutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The flags of run that take a value: the settings, and these. */
static int is_value_flag(const char *f)
{
	static const char *flags[] = { "--repeat", "--trace", "--subject",
				       "--strace", "--from", "--to", "--subject-handoff" };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (strcmp(f, flags[i]) == 0)
			return 1;
	return wc_cli_flag_setting(f) != NULL;
}

/* First pass: the file and the flags that are not scenario settings. */
static int parse_cli(int argc, char **argv, struct wc_cli *cli)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--valgrind") == 0) {
			cli->valgrind = 1;
		} else if (strcmp(a, "--subject-preload") == 0) {
			cli->subject_preload = 1;
		} else if (is_value_flag(a)) {
			if (i + 1 >= argc)
				return wc_cli_usage_error("%s needs a value%s", a, "");
			if (strcmp(a, "--repeat") == 0) {
				char *end;
				long n = strtol(argv[i + 1], &end, 10);

				if (*end || end == argv[i + 1] || n < 1 || n > 100000)
					return wc_cli_usage_error("--repeat '%s': expected a count from 1 to 100000%s", argv[i + 1], "");
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
					return wc_cli_usage_error("%s '%s': expected a connection count from 1 to 1024", a, argv[i + 1]);
				*(strcmp(a, "--from") == 0 ? &cli->from : &cli->to) = (int)n;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			return wc_cli_usage_error("unknown flag '%s'%s", a, "");
		} else if (cli->file) {
			return wc_cli_usage_error("one scenario file per run; got '%s' after '%s'", a, cli->file);
		} else {
			cli->file = a;
		}
	}
	if (!cli->file)
		return wc_cli_usage_error("run needs a scenario FILE%s%s", "", "");
	if (cli->strace && cli->valgrind)
		return wc_cli_usage_error("--strace and --valgrind do not go together: each wraps the subject%s%s", "", "");
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
int wc_cli_run_failed(const struct scenario *sc, int rc, const char *err)
{
	if (rc == -2) {
		fprintf(stderr, "wirecheck: %s\n", err);
		return 2;
	}
	fprintf(stderr, "wirecheck: %s: %s\n", sc->path, err);
	return 3;
}

static int run_repeated(const struct scenario *sc, const struct wc_cli *cli,
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
			return wc_cli_run_failed(sc, status, err);
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

/* Parses the command line and the scenario, applies the flags, finds the
 * subject. Returns 0, or an exit status after a message. The run's
 * deadline counts from the start, reading the file included. */
int wc_cli_prepare(int argc, char **argv, struct wc_cli *cli, struct scenario *sc,
		   struct run_options *ro, char **subject)
{
	char err[1024];
	int64_t started = wc_now_ms();
	int rc = parse_cli(argc, argv, cli);

	if (rc)
		return rc;
	if ((rc = wc_cli_check_output("--trace", cli->trace_path)) != 0 ||
	    (rc = wc_cli_check_output("--strace", cli->strace)) != 0)
		return rc;
	ro->started_ms = started;
	if (sc_parse_file(cli->file, read_wait_ms(argc, argv), sc, err, sizeof(err)) < 0) {
		fprintf(stderr, "wirecheck: %s\n", err);
		return 2;
	}
	for (int i = 0; i < argc; i++) {
		if (wc_cli_flag_setting(argv[i]) && (rc = wc_cli_apply_flag(sc, argv[i], argv[i + 1]))) {
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
		return wc_cli_usage_error("--subject-handoff '%s': expected upgrade%s", cli->handoff, "");
	}
	if ((cli->subject && wc_cli_named_subject(cli->subject, subject, &cli->subject_preload)) ||
	    (!cli->subject && !(*subject = wc_cli_default_subject()))) {
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
	if ((rc = wc_cli_check_subject(subject, &ro->subject)) != 0) {
		free(*subject);
		sc_free(sc);
		return rc;
	}
	if (cli->subject_preload && (rc = wc_cli_preload_subject()) != 0) {
		free(*subject);
		sc_free(sc);
		return rc;
	}
	return 0;
}

int wc_cmd_run(int argc, char **argv)
{
	struct wc_cli cli = { .repeat = 1 };
	struct run_options ro = { 0 };
	struct scenario sc;
	char *subject = NULL;
	int rc;

	if (wc_cli_wants_help(argc, argv, usage_run))
		return 0;
	rc = wc_cli_prepare(argc, argv, &cli, &sc, &ro, &subject);
	if (rc)
		return rc;
	rc = run_repeated(&sc, &cli, &ro);
	free(subject);
	sc_free(&sc);
	return rc;
}
