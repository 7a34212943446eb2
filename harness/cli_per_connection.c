/*
 * cli_per_connection.c: `wirecheck per-connection`: two runs of a scenario
 * with two connection counts, and the syscalls per connection between them
 * (cli.h).
 */
#include "cli.h"
#include "outpath.h"
#include "run.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		*status = wc_cli_run_failed(sc, rc, err);
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

int wc_cmd_per_connection(int argc, char **argv)
{
	struct wc_cli cli = { .repeat = 1 };
	struct run_options ro = { 0 };
	struct scenario sc;
	char *subject = NULL;
	json_t *a = NULL, *b = NULL, *out;
	int rc;

	wc_cli_set_help("per-connection");
	if (wc_cli_wants_help(argc, argv, usage_per_connection))
		return 0;
	rc = wc_cli_prepare(argc, argv, &cli, &sc, &ro, &subject);
	if (rc)
		return rc;
	if (cli.from == 0 || cli.to == 0 || cli.from >= cli.to || cli.repeat > 1) {
		free(subject);
		sc_free(&sc);
		if (cli.repeat > 1)
			return wc_cli_usage_error("per-connection makes one run per count: "
					   "--repeat does not apply%s%s", "", "");
		return wc_cli_usage_error("per-connection needs --from N1 --to N2 with N1 < N2%s%s", "", "");
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
