/*
 * cli_check.c: `wirecheck check`: a scenario parsed, its first error, or
 * its suite metadata as JSON for the pytest plugin and the sweep (cli.h).
 */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

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

int wc_cmd_check(int argc, char **argv)
{
	struct scenario sc;
	char err[1024];
	int as_json = argc == 2 && strcmp(argv[0], "--json") == 0;
	const char *file;

	wc_cli_set_help("check");
	if (wc_cli_wants_help(argc, argv, usage_check))
		return 0;
	if ((argc != 1 && !as_json) || (argc == 1 && strcmp(argv[0], "--json") == 0))
		return wc_cli_usage_error("check takes [--json] and one scenario FILE%s%s", "", "");
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
