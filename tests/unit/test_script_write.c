/*
 * test_script_write.c: the script's lines as the harness writes them
 * (protocol/script_write.c) read back by the subject's reader
 * (protocol/script_read.c), field by field; and the scenario's op and
 * event names, which harness/script.c maps to the protocol's by name, all
 * known to the protocol.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scenario.h"
#include "script_read.h"
#include "script_write.h"

/* Feeds TEXT to the reader line by line; returns what sr_feed_line
 * returned for the last line (1: "run"). */
static int read_back(char *text, struct sr_script *s)
{
	char err[256], *save = NULL;
	int rc = -1;

	sr_init(s);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		rc = sr_feed_line(s, line, err, sizeof(err));
		if (rc < 0)
			fail_msg("'%s': %s", line, err);
	}
	if (rc == 1 && sr_finish(s, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	return rc;
}

static void test_round_trip(void **state)
{
	static const long deflate[6] = { 1, 0, 1, 15, 12, 64 };
	unsigned char bytes[] = { 0xff, 0x68, 0x00 };
	struct sr_op write = { .kind = SR_OP_WRITE, .conn = -1, .len = 100000, .fill = -1,
			       .cb = 1, .micro = 1 };
	struct sr_op ws = { .kind = SR_OP_WS_SEND, .conn = 1, .len = sizeof(bytes),
			    .data = bytes, .fill = -1, .ws_kind = 2, .ws_binary = -1,
			    .ws_fin = 1, .ws_no_compress = 1 };
	struct sr_op sig = { .kind = SR_OP_SIGNAL, .conn = -1, .fill = -1, .sig = 15,
			     .external = 1 };
	struct sr_op try = { .kind = SR_OP_TRY_WRITE, .conn = 0, .len = 7, .fill = 'x',
			     .final = 1, .resume = 1 };
	struct sw_text t = { 0 };
	struct sr_script s;
	char *text;

	(void)state;
	sw_variant(&t, "queue=memmove");
	sw_fault(&t, "send:short=3,repeat=forever");
	sw_setup(&t, 2, 1, 1);
	sw_websocket(&t, 7, 65536, deflate);
	sw_address(&t, "connect tcp 127.0.0.1 40000");
	sw_sync_start(&t);
	sw_sync_task(&t, 1);
	sw_task(&t, 0);
	sw_op(&t, &write);
	sw_op(&t, &ws);
	sw_op(&t, &sig);
	sw_end_block(&t);
	sw_handler(&t, SR_EV_WRITABLE, -1);
	sw_op(&t, &try);
	sw_end_block(&t);
	text = sw_run(&t);
	assert_non_null(text);
	assert_int_equal(read_back(text, &s), 1);
	assert_int_equal(s.nvariants, 1);
	assert_string_equal(s.variants[0].name, "queue");
	assert_string_equal(s.variants[0].value, "memmove");
	assert_int_equal(s.nfaults, 1);
	assert_int_equal(s.nconns, 2);
	assert_int_equal(s.half_open, 1);
	assert_int_equal(s.http, 1);
	assert_int_equal(s.websocket, 1);
	assert_int_equal(s.ws_seed, 7);
	assert_int_equal(s.ws_max_message, 65536);
	assert_memory_equal(s.ws_deflate, deflate, sizeof(deflate));
	assert_int_equal(s.port, 40000);
	assert_int_equal(s.sync_start, 1);
	assert_int_equal(s.sync_task[1], 1);
	assert_int_equal(s.ntasks, 1);
	assert_int_equal(s.tasks[0].nops, 3);
	assert_int_equal(s.tasks[0].ops[0].kind, SR_OP_WRITE);
	assert_int_equal(s.tasks[0].ops[0].len, 100000);
	assert_int_equal(s.tasks[0].ops[0].fill, -1);
	assert_int_equal(s.tasks[0].ops[0].cb, 1);
	assert_int_equal(s.tasks[0].ops[0].micro, 1);
	assert_null(s.tasks[0].ops[0].data);
	assert_int_equal(s.tasks[0].ops[1].conn, 1);
	assert_int_equal(s.tasks[0].ops[1].len, sizeof(bytes));
	assert_memory_equal(s.tasks[0].ops[1].data, bytes, sizeof(bytes));
	assert_int_equal(s.tasks[0].ops[1].ws_kind, 2);
	assert_int_equal(s.tasks[0].ops[1].ws_binary, -1);
	assert_int_equal(s.tasks[0].ops[1].ws_fin, 1);
	assert_int_equal(s.tasks[0].ops[1].ws_no_compress, 1);
	assert_int_equal(s.tasks[0].ops[2].sig, 15);
	assert_int_equal(s.tasks[0].ops[2].external, 1);
	assert_int_equal(s.nhandlers, 1);
	assert_int_equal(s.handlers[0].event, SR_EV_WRITABLE);
	assert_int_equal(s.handlers[0].conn, -1);
	assert_int_equal(s.handlers[0].ops[0].fill, 'x');
	assert_int_equal(s.handlers[0].ops[0].final, 1);
	assert_int_equal(s.handlers[0].ops[0].resume, 1);
	sr_free(&s);
	free(text);
}

/* A variant without '=' has no line: the script is refused as a whole. */
static void test_refused(void **state)
{
	struct sw_text t = { 0 };

	(void)state;
	sw_variant(&t, "queue");
	sw_setup(&t, 1, 0, 0);
	assert_null(sw_run(&t));
}

static int protocol_knows(const char *const *names, int n, const char *name)
{
	for (int k = 0; k < n; k++)
		if (strcmp(names[k], name) == 0)
			return 1;
	return 0;
}

static void test_scenario_names(void **state)
{
	(void)state;
	for (int k = SC_OP_WRITE; k <= SC_OP_WS_BUFFERED; k++)
		if (!protocol_knows(sr_op_names, SR_OP_KIND_COUNT, sc_op_name((enum sc_op_kind)k)))
			fail_msg("op '%s' has no script line", sc_op_name((enum sc_op_kind)k));
	for (int e = 0; e < SC_EV_COUNT; e++)
		if (!protocol_knows(sr_ev_names, SR_EV_KIND_COUNT, sc_event_names[e]))
			fail_msg("event '%s' has no script line", sc_event_names[e]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_scenario_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
