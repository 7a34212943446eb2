/*
 * fuzz_scenario.c: libFuzzer target for the scenario parser
 * (harness/scenario.c, settings.c, substitute.c; docs/scenario-language.md).
 *
 * The input is a scenario file's text (a NUL ends it early, as the parser
 * reads C strings). Beyond "no crash, no sanitizer finding": a refused
 * scenario says where and why ("fuzz:LINE: ..." or "fuzz: ..."), and an
 * accepted one becomes a script (harness/script.c) that the subject's
 * reader (protocol/script_read.c) accepts whole, with the same tasks, the
 * same handlers and the same faults: what the harness checked is what the
 * subject runs.
 */
#include "scenario.h"
#include "script.h"
#include "script_read.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what, const char *detail)
{
	if (!ok) {
		fprintf(stderr, "fuzz_scenario: %s%s%s\n", what, detail ? ": " : "",
			detail ? detail : "");
		abort();
	}
}

/* Feeds the script to the subject's reader; returns the reader's verdict. */
static void read_back(const struct scenario *sc, char *script)
{
	struct sr_script s;
	char err[512];
	char *save = NULL, *line;
	int rc = 0;

	sr_init(&s);
	for (line = strtok_r(script, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save))
		rc = sr_feed_line(&s, line, err, sizeof(err));
	check(rc == 1, "the subject refuses the script of a good scenario",
	      rc < 0 ? err : "no 'run' line");
	check(sr_finish(&s, err, sizeof(err)) == 0,
	      "the subject refuses the script's sync points", err);
	check(s.ntasks >= sc->ntasks, "the script lost tasks", NULL);
	check(s.nhandlers == sc->nhandlers, "the script lost handlers", NULL);
	check(s.nfaults == sc->nfaults, "the script lost faults", NULL);
	check(s.nconns == sc->connections, "the script has another connection count", NULL);
	sr_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	char err[1024];
	struct scenario sc;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (sc_parse("fuzz", text, &sc, err, sizeof(err)) == 0) {
		char *script = wc_script_build(&sc, "connect tcp 127.0.0.1 40000");

		check(script != NULL, "no script for a good scenario", NULL);
		read_back(&sc, script);
		free(script);
		sc_free(&sc);
	} else {
		check(strncmp(err, "fuzz:", 5) == 0 || strncmp(err, "fuzz ", 5) == 0,
		      "an error that does not name the file", err);
	}
	free(text);
	return 0;
}
