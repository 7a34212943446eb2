/*
 * wirecheck.c: the command line (docs/cli.md): the list of commands, and
 * the dispatch to each one's file (cli.h).
 *
 * Exit status: 0 a trace was written (whatever the subject did: its exit,
 * signal or timeout is in the trace); 1 --repeat found two traces that
 * differ; 2 bad usage or a bad scenario (the message names file:line);
 * 3 the harness itself failed; 4 the trace was written but the subject
 * stopped with a fatal error of its own (exit.error).
 */
#include "cli.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

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

/* Each subcommand: a C entry (cli.h), or the module of one in Python. */
static const struct command {
	const char *name;
	int (*entry)(int argc, char **argv);
	const char *module;
} commands[] = {
	{ "run", wc_cmd_run, NULL },
	{ "check", wc_cmd_check, NULL },
	{ "exec", wc_cmd_exec, NULL },
	{ "per-connection", wc_cmd_per_connection, NULL },
	{ "sweep", NULL, "wirecheck.sweep" },
	{ "explore", NULL, "wirecheck.explore" },
};

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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];

		if (strcmp(argv[1], c->name) != 0)
			continue;
		if (c->entry)
			return c->entry(argc - 2, argv + 2);
		return wc_cmd_python(c->name, c->module, argc - 2, argv + 2);
	}
	fprintf(stderr, "wirecheck: unknown command '%s'\n%s", argv[1], usage_main);
	return 2;
}
