/*
 * fuzz_subject_script.c: libFuzzer target for the subject's script reader
 * (protocol/script_read.c, docs/subject-protocol.md "The script").
 *
 * The input is split at newlines and fed line by line, as refstack-subject
 * reads its control pipe. Beyond "no crash, no sanitizer finding", a script
 * the reader accepts must be one the subject can run without reading out of
 * bounds: every block's and op's connection is -1 (where allowed) or below
 * the script's connection count, and sync_task covers the tasks.
 */
#include "script_read.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_subject_script: accepted a script with %s\n", what);
		abort();
	}
}

static void check_blocks(const struct sr_script *s, const struct sr_block *b,
			 size_t n, int is_task)
{
	for (size_t i = 0; i < n; i++) {
		check(is_task ? b[i].conn >= 0 && b[i].conn < s->nconns
			      : b[i].conn >= -1 && b[i].conn < s->nconns,
		      is_task ? "a task on a connection out of range"
			      : "a handler on a connection out of range");
		check((unsigned)b[i].event < SR_EV_KIND_COUNT, "an unknown event");
		for (size_t k = 0; k < b[i].nops; k++) {
			const struct sr_op *op = &b[i].ops[k];

			check(op->conn >= -1 && op->conn < s->nconns,
			      "an op on a connection out of range");
			check((unsigned)op->kind < SR_OP_KIND_COUNT, "an unknown op");
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sr_script s;
	char err[512];
	size_t at = 0;
	int rc = 0;

	sr_init(&s);
	while (at < size && rc == 0) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
		/* A line of its own memory, so that ASan sees a read past it. */
		char *line = malloc(len + 1);

		if (!line)
			break;
		memcpy(line, data + at, len);
		line[len] = '\0';
		rc = sr_feed_line(&s, line, err, sizeof(err));
		free(line);
		at += len + 1;
	}
	if (rc == 1 && sr_finish(&s, err, sizeof(err)) == 0) {
		check(s.nconns > 0, "no connections");
		check_blocks(&s, s.tasks, s.ntasks, 1);
		check_blocks(&s, s.handlers, s.nhandlers, 0);
		check(s.sync_task != NULL, "no sync table");
	}
	sr_free(&s);
	return 0;
}
