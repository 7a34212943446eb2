/*
 * test_scenario.c: the scenario-language parser (harness/scenario.c), with
 * cmocka. The language is described in docs/scenario-language.md.
 *
 * Two halves. The first parses valid scenarios that use every construct and
 * checks every field of the parsed form, including the canonical fault text
 * each shorthand (clamp-send, refuse-write, signal SIG@SYSCALL:K) becomes.
 * The second gives the parser one mistake at a time and checks that the
 * message starts with "WHERE:LINE: " at the right line, names the problem,
 * and that the failed parse left nothing behind (the scenario is zeroed, and
 * valgrind or ASan see no leak).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "rs.h"
#include "scenario.h"

#define WHERE "t.wcs"
#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

/* ---- helpers -------------------------------------------------------------- */

static char tmpdir[64];

static int group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/test_scenario.XXXXXX",
		 base && strlen(base) < 32 ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

/* Variants must not change the process-wide configuration; should a
 * regression change it, the next test still starts from the defaults. */
static int reset_config(void **state)
{
	(void)state;
	rs_config = (struct rs_config)RS_CONFIG_DEFAULTS;
	return 0;
}

static void parse_ok(const char *text, struct scenario *sc)
{
	char err[1024] = "";
	int rc = sc_parse(WHERE, text, sc, err, sizeof(err));

	if (rc != 0)
		fail_msg("unexpected parse error: %s", err);
}

static int is_zeroed(const struct scenario *sc)
{
	static const struct scenario zero;

	return memcmp(sc, &zero, sizeof(zero)) == 0;
}

/*
 * Checks an error message: it starts with "where:line: " (or "where: " when
 * line is 0), names the location once, and holds every word of words.
 */
static void check_message(const char *err, const char *where, int line,
			  const char *const *words)
{
	char prefix[256];
	size_t n;

	if (line > 0)
		snprintf(prefix, sizeof(prefix), "%s:%d: ", where, line);
	else
		snprintf(prefix, sizeof(prefix), "%s: ", where);
	n = strlen(prefix);
	if (strncmp(err, prefix, n) != 0)
		fail_msg("message '%s' does not start with '%s'", err, prefix);
	if (strstr(err + n, prefix))
		fail_msg("message '%s' names its location twice", err);
	for (; *words; words++)
		if (!strstr(err + n, *words))
			fail_msg("message '%s' lacks '%s'", err, *words);
}

/* Parses text that must fail at line with a message holding every word. */
static void expect_error_(const char *text, int line, const char *const *words)
{
	struct scenario sc;
	char err[1024] = "";
	int rc;

	memset(&sc, 0xa5, sizeof(sc)); /* sc_parse must not rely on it */
	rc = sc_parse(WHERE, text, &sc, err, sizeof(err));
	if (rc == 0) {
		sc_free(&sc);
		fail_msg("parsed without error:\n%s", text);
	}
	assert_int_equal(rc, -1);
	check_message(err, WHERE, line, words);
	/* A failed parse leaves nothing to free. */
	assert_true(is_zeroed(&sc));
}

#define expect_error(text, line, ...) \
	expect_error_((text), (line), (const char *const[]){ __VA_ARGS__, NULL })

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* Checks an op's fields one by one, so that a failure names the field. */
static void check_op(const struct sc_op *op, enum sc_op_kind kind, int line,
		     int conn, size_t len, int fill, int cb, int microtask)
{
	assert_int_equal(op->kind, kind);
	assert_int_equal(op->line, line);
	assert_int_equal(op->conn, conn);
	assert_int_equal(op->len, len);
	assert_int_equal(op->fill, fill);
	assert_int_equal(op->cb, cb);
	assert_int_equal(op->microtask, microtask);
}

static void check_data(const struct sc_op *op, const void *bytes, size_t len)
{
	assert_non_null(op->data);
	assert_int_equal(op->len, len);
	assert_memory_equal(op->data, bytes, len);
}

/* ---- valid scenarios: settings --------------------------------------------- */

static void test_defaults(void **state)
{
	struct scenario sc;
	char err[256];

	(void)state;
	assert_int_equal(sc_parse("dir/sub/my-scenario.wcs", "", &sc, err, sizeof(err)), 0);
	assert_string_equal(sc.name, "my-scenario");
	assert_string_equal(sc.path, "dir/sub/my-scenario.wcs");
	assert_int_equal(sc.transport, SC_TCP);
	assert_int_equal(sc.role, SC_ROLE_CLIENT);
	assert_int_equal(sc.connections, 1);
	assert_int_equal(sc.allow_half_open, 0);
	assert_int_equal(sc.timeout_ms, 30000);
	assert_int_equal(sc.peer_rcvbuf, 0);
	assert_int_equal(sc.peer_on_eof, SC_EOF_CLOSE);
	assert_int_equal(sc.nfaults, 0);
	assert_int_equal(sc.nvariants, 0);
	assert_int_equal(sc.ntasks, 0);
	assert_int_equal(sc.nhandlers, 0);
	assert_int_equal(sc.npeer, 0);
	assert_int_equal(sc.ntsignals, 0);
	assert_null(sc.faults);
	assert_null(sc.tasks);
	assert_null(sc.handlers);
	assert_null(sc.peer);
	assert_int_equal(sc_reads_at_points(&sc), 0);
	sc_free(&sc);
	assert_true(is_zeroed(&sc));
}

static void test_default_name(void **state)
{
	static const struct {
		const char *where, *name;
	} cases[] = {
		{ "end-large.wcs", "end-large" },
		{ "a/b.c/noext", "noext" },
		{ "x/a.b.wcs", "a.b" },
		{ "x/.hidden", ".hidden" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct scenario sc;
		char err[256];

		assert_int_equal(sc_parse(cases[i].where, "task\n", &sc, err, sizeof(err)), 0);
		assert_string_equal(sc.name, cases[i].name);
		assert_string_equal(sc.path, cases[i].where);
		sc_free(&sc);
	}
}

static void test_settings(void **state)
{
	struct scenario sc;

	(void)state;
	parse_ok("# every plain setting\n"
		 "name \"queue: end() \\\"large\\\"\"\n"
		 "transport unix\n"
		 "role server\n"
		 "connections 3\n"
		 "allow-half-open yes\n"
		 "timeout 2.5\n"
		 "peer rcvbuf 4096\n"
		 "peer on-eof shutdown\n",
		 &sc);
	assert_string_equal(sc.name, "queue: end() \"large\"");
	assert_string_equal(sc.path, WHERE);
	assert_int_equal(sc.transport, SC_UNIX);
	assert_int_equal(sc.role, SC_ROLE_SERVER);
	assert_int_equal(sc.connections, 3);
	assert_int_equal(sc.allow_half_open, 1);
	assert_int_equal(sc.timeout_ms, 2500);
	assert_int_equal(sc.peer_rcvbuf, 4096);
	assert_int_equal(sc.peer_on_eof, SC_EOF_SHUTDOWN);
	sc_free(&sc);

	/* The other values, and a later line overrides an earlier one. */
	parse_ok("name first\n"
		 "name second\n"
		 "transport unix\n"
		 "transport tcp\n"
		 "role server\n"
		 "role client\n"
		 "connections 1024\n"
		 "allow-half-open yes\n"
		 "allow-half-open no\n"
		 "timeout 3600\n"
		 "peer on-eof keep\n",
		 &sc);
	assert_string_equal(sc.name, "second");
	assert_int_equal(sc.transport, SC_TCP);
	assert_int_equal(sc.role, SC_ROLE_CLIENT);
	assert_int_equal(sc.connections, 1024);
	assert_int_equal(sc.allow_half_open, 0);
	assert_int_equal(sc.timeout_ms, 3600000);
	assert_int_equal(sc.peer_on_eof, SC_EOF_KEEP);
	sc_free(&sc);

	/* A timeout under a millisecond is one millisecond; on-eof close. */
	parse_ok("timeout 0.0001\npeer on-eof close\n", &sc);
	assert_int_equal(sc.timeout_ms, 1);
	assert_int_equal(sc.peer_on_eof, SC_EOF_CLOSE);
	sc_free(&sc);
}

static void test_clamp_send(void **state)
{
	struct scenario sc;

	(void)state;
	parse_ok("clamp-send 4096\n\nclamp-send 1\n", &sc);
	assert_int_equal(sc.nfaults, 2);
	assert_string_equal(sc.faults[0].text, "write:short=4096,repeat=forever");
	assert_int_equal(sc.faults[0].line, 1);
	assert_string_equal(sc.faults[1].text, "write:short=1,repeat=forever");
	assert_int_equal(sc.faults[1].line, 3);
	sc_free(&sc);

	/* A byte count with its unit, as a write's size takes. */
	parse_ok("clamp-send 64KiB\nclamp-send 1M\n", &sc);
	assert_string_equal(sc.faults[0].text, "write:short=65536,repeat=forever");
	assert_string_equal(sc.faults[1].text, "write:short=1048576,repeat=forever");
	sc_free(&sc);
}

static void test_refuse_write_forms(void **state)
{
	static const char *const canon[] = {
		"write:errno=EAGAIN,repeat=forever",       /* ERR: every call */
		"write:errno=EPIPE,after=2",               /* ERR@K: the K-th */
		"write:errno=EPIPE",                       /* ERR@1 */
		"write:errno=ENOBUFS,after=1,repeat=3",    /* ERR@KxN */
		"write:errno=ECONNRESET,after=3,repeat=forever", /* ERR@Kx* */
		"write:errno=EAGAIN",                      /* EWOULDBLOCK@1x1 */
		"write:errno=EPIPE,repeat=forever",        /* a number */
		"write:errno=EINTR,after=9,repeat=2",
	};
	struct scenario sc;
	char text[512];

	(void)state;
	snprintf(text, sizeof(text),
		 "refuse-write EAGAIN\n"
		 "refuse-write EPIPE@3\n"
		 "refuse-write EPIPE@1\n"
		 "refuse-write ENOBUFS@2x3\n"
		 "refuse-write ECONNRESET@4x*\n"
		 "refuse-write EWOULDBLOCK@1x1\n"
		 "refuse-write %d\n"
		 "refuse-write EINTR@10x2\n",
		 EPIPE);
	parse_ok(text, &sc);
	assert_int_equal(sc.nfaults, sizeof(canon) / sizeof(canon[0]));
	for (size_t i = 0; i < sc.nfaults; i++) {
		assert_string_equal(sc.faults[i].text, canon[i]);
		assert_int_equal(sc.faults[i].line, (int)i + 1);
	}
	assert_int_equal(sc.ntsignals, 0);
	sc_free(&sc);
}

static void test_signal_settings(void **state)
{
	struct scenario sc;

	(void)state;
	parse_ok("signal SIGTERM@send:2\n"
		 "signal USR1@write:1\n"
		 "signal 15@all:3\n"
		 "signal SIGUSR2@task:1\n"
		 "signal SIGTERM@task:2:external\n"
		 "signal INT@task:2:self\n"
		 "task\n"
		 "task\n",
		 &sc);
	/* SIG@SYSCALL:K is a gate rule: signal before the K-th call. */
	assert_int_equal(sc.nfaults, 3);
	assert_string_equal(sc.faults[0].text, "send:signal=SIGTERM,after=1");
	assert_int_equal(sc.faults[0].line, 1);
	assert_string_equal(sc.faults[1].text, "write:signal=SIGUSR1");
	assert_int_equal(sc.faults[1].line, 2);
	assert_string_equal(sc.faults[2].text, "all:signal=SIGTERM,after=2");
	assert_int_equal(sc.faults[2].line, 3);
	/* SIG@task:N[:self|:external] is a task signal. */
	assert_int_equal(sc.ntsignals, 3);
	assert_int_equal(sc.tsignals[0].task, 1);
	assert_int_equal(sc.tsignals[0].sig, SIGUSR2);
	assert_int_equal(sc.tsignals[0].external, 0);
	assert_int_equal(sc.tsignals[0].line, 4);
	assert_int_equal(sc.tsignals[1].task, 2);
	assert_int_equal(sc.tsignals[1].sig, SIGTERM);
	assert_int_equal(sc.tsignals[1].external, 1);
	assert_int_equal(sc.tsignals[1].line, 5);
	assert_int_equal(sc.tsignals[2].task, 2);
	assert_int_equal(sc.tsignals[2].sig, SIGINT);
	assert_int_equal(sc.tsignals[2].external, 0);
	assert_int_equal(sc.tsignals[2].line, 6);
	assert_int_equal(sc.ntasks, 2);
	sc_free(&sc);
}

static void test_fault_rules(void **state)
{
	static const char *const canon[] = {
		"send:errno=ENOBUFS,after=1,repeat=3",
		"writev:short=7",
		"read:zero,fd=5",
		"all:signal=SIGTERM,after=3",
		"syswrite:errno=EPIPE,repeat=2",
		"sysread:errno=ECONNRESET,repeat=forever",
		"epoll_wait:short=1",
		"recv:zero,after=2,repeat=forever,fd=7",
		"write:errno=EAGAIN,after=1,fd=3",
		"accept:errno=EMFILE",
		"sendmsg:short=4096,repeat=forever",
	};
	struct scenario sc;
	char text[1024];

	(void)state;
	snprintf(text, sizeof(text),
		 "fault send:errno=ENOBUFS,after=1,repeat=3\n"
		 "fault writev:short=7,repeat=1\n"
		 "fault read:zero,fd=5\n"
		 "fault all:signal=%d,after=3\n"
		 "fault syswrite:errno=%d,repeat=2\n"
		 "fault \"sysread:errno=ECONNRESET,repeat=forever\"\n"
		 "fault epoll_wait:short=1\n"
		 "fault recv:zero,after=2,repeat=forever,fd=7\n"
		 "fault write:errno=EAGAIN,fd=3,after=1\n"
		 "fault accept:errno=EMFILE,after=0\n"
		 "fault sendmsg:short=4096,repeat=forever\n"
		 "clamp-send 4096\n",
		 SIGTERM, EPIPE);
	parse_ok(text, &sc);
	/* clamp-send, last, shares the list with the rules, in file order. */
	assert_int_equal(sc.nfaults, 12);
	for (size_t i = 0; i < 11; i++) {
		assert_string_equal(sc.faults[i].text, canon[i]);
		assert_int_equal(sc.faults[i].line, (int)i + 1);
	}
	assert_string_equal(sc.faults[11].text, "write:short=4096,repeat=forever");
	assert_int_equal(sc.faults[11].line, 12);
	sc_free(&sc);
}

static void test_variant(void **state)
{
	struct scenario sc;

	(void)state;
	parse_ok("variant queue=memmove\n", &sc);
	assert_int_equal(sc.nvariants, 1);
	assert_string_equal(sc.variants[0].text, "queue=memmove");
	assert_int_equal(sc.variants[0].line, 1);
	assert_int_equal(sc.config.queue, RS_QUEUE_MEMMOVE);
	/* The scenario's own configuration changed, not the process's: the
	 * first version set the harness's global copy (rs_config). */
	assert_int_equal(rs_config.queue, RS_QUEUE_CURSOR);
	sc_free(&sc);

	/* A second line for the same name replaces the first. */
	parse_ok("variant queue=memmove\n# then\nvariant queue=cursor\n", &sc);
	assert_int_equal(sc.nvariants, 1);
	assert_string_equal(sc.variants[0].text, "queue=cursor");
	assert_int_equal(sc.variants[0].line, 3);
	assert_int_equal(sc.config.queue, RS_QUEUE_CURSOR);
	sc_free(&sc);

	/* The aliases are accepted and kept as written. */
	parse_ok("variant queue=legacy\n", &sc);
	assert_string_equal(sc.variants[0].text, "queue=legacy");
	assert_int_equal(sc.config.queue, RS_QUEUE_MEMMOVE);
	sc_free(&sc);
	parse_ok("variant batch=off\nvariant queue=fixed\n", &sc);
	assert_int_equal(sc.config.queue, RS_QUEUE_CURSOR);
	assert_int_equal(sc.config.batch, 0);
	assert_int_equal(rs_config.batch, 1);
	sc_free(&sc);
}

static void test_peer_actions(void **state)
{
	static const unsigned char sent[] = { 'h', 'i', '\r', '\n', 0, '!' };
	struct scenario sc;
	const struct sc_peer_action *a;

	(void)state;
	parse_ok("connections 2\n"                        /* 1 */
		 "peer rcvbuf 8192\n"                     /* 2 */
		 "peer on-eof keep\n"                     /* 3 */
		 "peer read at start\n"                   /* 4 */
		 "peer read at task 1 conn=1\n"           /* 5 */
		 "peer send \"hi\\r\\n\\0!\" at task 2\n" /* 6 */
		 "peer shutdown at done conn=0\n"         /* 7 */
		 "peer reset at task 2\n"                 /* 8 */
		 "peer read continuous\n"                 /* 9 */
		 "task\n"                                 /* 10 */
		 "  write 1\n"
		 "task conn=1\n"                          /* 12 */
		 "  write 2\n",
		 &sc);
	assert_int_equal(sc.peer_rcvbuf, 8192);
	assert_int_equal(sc.peer_on_eof, SC_EOF_KEEP);
	/* "peer read continuous" adds no action. */
	assert_int_equal(sc.npeer, 5);

	a = &sc.peer[0];
	assert_int_equal(a->kind, SC_PEER_READ);
	assert_int_equal(a->line, 4);
	assert_int_equal(a->conn, -1);
	assert_int_equal(a->at.kind, SC_AT_START);
	assert_null(a->data);
	assert_int_equal(a->len, 0);

	a = &sc.peer[1];
	assert_int_equal(a->kind, SC_PEER_READ);
	assert_int_equal(a->line, 5);
	assert_int_equal(a->conn, 1);
	assert_int_equal(a->at.kind, SC_AT_TASK);
	assert_int_equal(a->at.task, 1);

	a = &sc.peer[2];
	assert_int_equal(a->kind, SC_PEER_SEND);
	assert_int_equal(a->line, 6);
	assert_int_equal(a->conn, -1);
	assert_int_equal(a->at.kind, SC_AT_TASK);
	assert_int_equal(a->at.task, 2);
	assert_int_equal(a->len, sizeof(sent));
	assert_memory_equal(a->data, sent, sizeof(sent));

	a = &sc.peer[3];
	assert_int_equal(a->kind, SC_PEER_SHUTDOWN);
	assert_int_equal(a->line, 7);
	assert_int_equal(a->conn, 0);
	assert_int_equal(a->at.kind, SC_AT_DONE);

	a = &sc.peer[4];
	assert_int_equal(a->kind, SC_PEER_RESET);
	assert_int_equal(a->line, 8);
	assert_int_equal(a->conn, -1);
	assert_int_equal(a->at.kind, SC_AT_TASK);
	assert_int_equal(a->at.task, 2);

	assert_int_equal(sc_reads_at_points(&sc), 1);
	sc_free(&sc);
}

static void test_reads_at_points(void **state)
{
	struct scenario sc;

	(void)state;
	/* Only a read at a point makes the peer read at points. */
	parse_ok("peer send \"x\" at start\n"
		 "peer shutdown at done\n"
		 "peer reset at done\n"
		 "peer read continuous\n",
		 &sc);
	assert_int_equal(sc.npeer, 3);
	assert_int_equal(sc_reads_at_points(&sc), 0);
	sc_free(&sc);

	parse_ok("peer read at done\n", &sc);
	assert_int_equal(sc_reads_at_points(&sc), 1);
	sc_free(&sc);

	/* An empty string is a valid send. */
	parse_ok("peer send \"\" at start\n", &sc);
	assert_int_equal(sc.peer[0].len, 0);
	assert_non_null(sc.peer[0].data);
	sc_free(&sc);
}

/* ---- valid scenarios: blocks and operations --------------------------------- */

static void test_blocks(void **state)
{
	static const struct {
		int line, conn;
		enum sc_event event;
		size_t nops;
	} handlers[] = {
		{ 5, -1, SC_EV_DATA, 1 },  { 7, 1, SC_EV_EOF, 0 },
		{ 8, -1, SC_EV_DRAIN, 0 }, { 9, 0, SC_EV_FINISH, 0 },
		{ 10, -1, SC_EV_CLOSE, 1 },
	};
	struct scenario sc;

	(void)state;
	parse_ok("connections 3\n"    /* 1 */
		 "task\n"             /* 2 */
		 "  write 1\n"        /* 3 */
		 "task conn=2\n"      /* 4: an empty task */
		 "on data\n"          /* 5 */
		 "  pause\n"          /* 6 */
		 "on eof conn=1\n"    /* 7 */
		 "on drain\n"         /* 8 */
		 "on finish conn=0\n" /* 9 */
		 "on close\n"         /* 10 */
		 "  resume\n"         /* 11 */
		 "task conn=1\n"      /* 12 */
		 "  write 3\n"        /* 13 */
		 "  write 4\n",       /* 14 */
		 &sc);
	assert_int_equal(sc.ntasks, 3);
	assert_int_equal(sc.tasks[0].line, 2);
	assert_int_equal(sc.tasks[0].conn, 0);
	assert_int_equal(sc.tasks[0].nops, 1);
	assert_int_equal(sc.tasks[0].ops[0].line, 3);
	assert_int_equal(sc.tasks[1].line, 4);
	assert_int_equal(sc.tasks[1].conn, 2);
	assert_int_equal(sc.tasks[1].nops, 0);
	assert_int_equal(sc.tasks[2].line, 12);
	assert_int_equal(sc.tasks[2].conn, 1);
	assert_int_equal(sc.tasks[2].nops, 2);
	assert_int_equal(sc.tasks[2].ops[0].len, 3);
	assert_int_equal(sc.tasks[2].ops[1].line, 14);

	assert_int_equal(sc.nhandlers, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(sc.handlers[i].line, handlers[i].line);
		assert_int_equal(sc.handlers[i].conn, handlers[i].conn);
		assert_int_equal(sc.handlers[i].event, handlers[i].event);
		assert_int_equal(sc.handlers[i].nops, handlers[i].nops);
	}
	assert_int_equal(sc.handlers[0].ops[0].kind, SC_OP_PAUSE);
	assert_int_equal(sc.handlers[0].ops[0].line, 6);
	assert_int_equal(sc.handlers[4].ops[0].kind, SC_OP_RESUME);
	assert_int_equal(sc.handlers[4].ops[0].line, 11);
	sc_free(&sc);
}

static void test_peer_exec(void **state)
{
	struct scenario sc;

	(void)state;
	parse_ok("role server\n"
		 "peer exec stop=SIGTERM /bin/echo a \"b c\" {host}:{port}\n", &sc);
	assert_non_null(sc.peer_exec);
	assert_int_equal(sc.peer_exec->line, 2);
	assert_int_equal(sc.peer_exec->stop_sig, SIGTERM);
	assert_int_equal(sc.peer_exec->argc, 4);
	assert_string_equal(sc.peer_exec->argv[0], "/bin/echo");
	assert_string_equal(sc.peer_exec->argv[2], "b c");
	assert_string_equal(sc.peer_exec->argv[3], "{host}:{port}"); /* as written */
	assert_null(sc.peer_exec->argv[4]);
	sc_free(&sc);
	expect_error("peer exec /bin/echo \"a\\0b\"\n", 1, "cannot hold a NUL byte");
	expect_error("peer exec /bin/echo {nope}\n", 1, "unknown substitution '{nope}'");
	expect_error("peer exec /bin/echo x}\n", 1, "a '}' without its '{'");
	expect_error("peer exec /bin/true\npeer read at done\n", 2, "'peer read' does not go with 'peer exec' (line 1)");
	expect_error("peer rcvbuf 100\npeer exec /bin/true\n", 2, "'peer rcvbuf' and 'peer on-eof' do not go with 'peer exec'");
}

static void test_exec_expand(void **state)
{
	struct sc_exec_address tcp = { SC_TCP, 8080, NULL };
	struct sc_exec_address un = { SC_UNIX, 0, "/tmp/x/peer.sock" };
	char out[64], err[256];

	(void)state;
	assert_int_equal(sc_exec_expand("{host}:{port} {addr}", &tcp, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "127.0.0.1:8080 127.0.0.1:8080");
	assert_int_equal(sc_exec_expand("{url}x", &tcp, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "http://127.0.0.1:8080/x");
	assert_int_equal(sc_exec_expand("{{{unix}}}", &un, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "{/tmp/x/peer.sock}");
	assert_int_equal(sc_exec_expand("{url}", &un, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "http://localhost/");
	assert_int_equal(sc_exec_expand("{port}", &un, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "{port} is for transport tcp"));
	assert_int_equal(sc_exec_expand("{unix}", &tcp, NULL, 0, err, sizeof(err)), -1);
	assert_int_equal(sc_exec_expand("{host}", &tcp, out, 9, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "longer than 8 bytes"));
	assert_int_equal(sc_exec_expand("{host}", &tcp, out, 10, err, sizeof(err)), 0);
	assert_string_equal(out, "127.0.0.1");
}

/* What the subject would refuse, check refuses, at its line (issue 12). */
static void test_limits(void **state)
{
	struct scenario sc;
	size_t n = 256 * 1024;
	char *big = malloc(n + 64), text[4096] = "";

	(void)state;
	assert_non_null(big);
	/* A string of 256 KiB is the most a write takes; one more is refused. */
	for (int extra = 0; extra < 2; extra++) {
		size_t len = n + (size_t)extra;
		int rc;
		char err[256];

		memcpy(big, "task\n  write \"", 14);
		memset(big + 14, 'x', len);
		memcpy(big + 14 + len, "\"\n", 3);
		rc = sc_parse(WHERE, big, &sc, err, sizeof(err));
		if (extra == 0) {
			assert_int_equal(rc, 0);
			assert_int_equal(sc.tasks[0].ops[0].len, n);
			sc_free(&sc);
		} else {
			assert_int_equal(rc, -1);
			assert_non_null(strstr(err, "t.wcs:2: a string of 262145 bytes: at most 262144"));
		}
	}
	free(big);
	parse_ok("task\n  write 1024MiB\n", &sc);
	assert_int_equal(sc.tasks[0].ops[0].len, (size_t)1 << 30);
	sc_free(&sc);
	/* 32 rules run; the 33rd is refused at its line. */
	for (int i = 0; i < 33; i++)
		strcat(text, "clamp-send 7\n");
	expect_error(text, 33, "fault rule 33", "at most 32");
	text[strlen(text) - strlen("clamp-send 7\n")] = '\0';
	parse_ok(text, &sc);
	assert_int_equal(sc.nfaults, 32);
	sc_free(&sc);
	expect_error("clamp-send 2147483648\n", 1, "clamp-send '2147483648'", "at most 2147483647");
	expect_error("signal SIGTERM@send:99999999999\n", 1, "at most 2147483647");
	expect_error("peer shutdown at checkpoint 99999999999\n", 1, "at most 2147483647");
	expect_error("peer rcvbuf 99999999999\n", 1, "at most 2147483647");
}

/* "on end" is the older name of "on eof" (the peer's FIN): still read. */
static void test_on_end_is_on_eof(void **state)
{
	struct scenario sc;

	(void)state;
	parse_ok("on end\n  destroy\n", &sc);
	assert_int_equal(sc.nhandlers, 1);
	assert_int_equal(sc.handlers[0].event, SC_EV_EOF);
	assert_string_equal(sc_event_names[sc.handlers[0].event], "eof");
	sc_free(&sc);
}

static void test_write_sizes(void **state)
{
	struct scenario sc;
	const struct sc_op *op;

	(void)state;
	parse_ok("task\n"                        /* 1 */
		 "  write 100\n"                 /* 2 */
		 "  write 16KiB\n"               /* 3 */
		 "  write 8MiB\n"                /* 4 */
		 "  write 4K\n"                  /* 5 */
		 "  write 1M\n"                  /* 6 */
		 "  write 0\n"                   /* 7 */
		 "  write 4096 cb\n"             /* 8 */
		 "  write 10 fill=x\n"           /* 9 */
		 "  write 10 conn=1 cb fill=Z\n" /* 10 */
		 "  microtask write 5\n"         /* 11 */
		 "  microtask write 7 cb conn=1\n" /* 12 */
		 "connections 2\n",              /* after the block: still counts */
		 &sc);
	assert_int_equal(sc.ntasks, 1);
	assert_int_equal(sc.tasks[0].nops, 11);
	op = sc.tasks[0].ops;
	check_op(&op[0], SC_OP_WRITE, 2, -1, 100, -1, 0, 0);
	check_op(&op[1], SC_OP_WRITE, 3, -1, 16 * KIB, -1, 0, 0);
	check_op(&op[2], SC_OP_WRITE, 4, -1, 8 * MIB, -1, 0, 0);
	check_op(&op[3], SC_OP_WRITE, 5, -1, 4 * KIB, -1, 0, 0);
	check_op(&op[4], SC_OP_WRITE, 6, -1, 1 * MIB, -1, 0, 0);
	check_op(&op[5], SC_OP_WRITE, 7, -1, 0, -1, 0, 0);
	check_op(&op[6], SC_OP_WRITE, 8, -1, 4096, -1, 1, 0);
	check_op(&op[7], SC_OP_WRITE, 9, -1, 10, 'x', 0, 0);
	check_op(&op[8], SC_OP_WRITE, 10, 1, 10, 'Z', 1, 0);
	check_op(&op[9], SC_OP_WRITE, 11, -1, 5, -1, 0, 1);
	check_op(&op[10], SC_OP_WRITE, 12, 1, 7, -1, 1, 1);
	for (size_t i = 0; i < 11; i++) {
		assert_null(op[i].data); /* generated bytes */
		assert_int_equal(op[i].sig, 0);
		assert_int_equal(op[i].external, 0);
	}
	sc_free(&sc);
}

static void test_write_strings(void **state)
{
	static const unsigned char escapes[] = { 'a', '\r', '\n', '\t', 0, 'b',
						 '\\', 'c', '"', 'd' };
	static const unsigned char hex[] = { 0x00, 0xff, 0x7f, 0xab, 'g' };
	static const unsigned char nul_digits[] = { 0, '1', '2' };
	struct scenario sc;
	const struct sc_op *op;

	(void)state;
	parse_ok("task\n"
		 "  write \"plain\"\n"
		 "  write \"a\\r\\n\\t\\0b\\\\c\\\"d\"\n"
		 "  write \"\\x00\\xff\\x7F\\xAbg\"\n"
		 "  write \"\" cb\n"
		 "  write \"#not a comment\" # a comment\n"
		 "  write \"\\012\" conn=0 fill=q\n"
		 "  write \"two  spaces\ttab\"\n",
		 &sc);
	assert_int_equal(sc.tasks[0].nops, 7);
	op = sc.tasks[0].ops;
	check_data(&op[0], "plain", 5);
	check_data(&op[1], escapes, sizeof(escapes));
	check_data(&op[2], hex, sizeof(hex));
	check_data(&op[3], "", 0);
	assert_int_equal(op[3].cb, 1);
	check_data(&op[4], "#not a comment", 14);
	/* \0 is one NUL byte: the digits after it are themselves. */
	check_data(&op[5], nul_digits, sizeof(nul_digits));
	assert_int_equal(op[5].conn, 0);
	assert_int_equal(op[5].fill, 'q');
	check_data(&op[6], "two  spaces\ttab", 15);
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(op[i].kind, SC_OP_WRITE);
	sc_free(&sc);
}

static void test_end_ops(void **state)
{
	struct scenario sc;
	const struct sc_op *op;

	(void)state;
	parse_ok("connections 2\n"          /* 1 */
		 "task\n"                   /* 2 */
		 "  end\n"                  /* 3 */
		 "  end 10\n"               /* 4 */
		 "  end 16KiB cb\n"         /* 5 */
		 "  end \"bye\\n\" cb\n"    /* 6 */
		 "  end cb conn=1\n"        /* 7 */
		 "  end 5 fill=.\n"         /* 8 */
		 "  microtask end\n",       /* 9 */
		 &sc);
	op = sc.tasks[0].ops;
	assert_int_equal(sc.tasks[0].nops, 7);
	check_op(&op[0], SC_OP_END, 3, -1, 0, -1, 0, 0);
	assert_null(op[0].data);
	check_op(&op[1], SC_OP_END, 4, -1, 10, -1, 0, 0);
	assert_null(op[1].data);
	check_op(&op[2], SC_OP_END, 5, -1, 16 * KIB, -1, 1, 0);
	check_op(&op[3], SC_OP_END, 6, -1, 4, -1, 1, 0);
	check_data(&op[3], "bye\n", 4);
	check_op(&op[4], SC_OP_END, 7, 1, 0, -1, 1, 0);
	check_op(&op[5], SC_OP_END, 8, -1, 5, '.', 0, 0);
	check_op(&op[6], SC_OP_END, 9, -1, 0, -1, 0, 1);
	sc_free(&sc);
}

static void test_other_ops(void **state)
{
	struct scenario sc;
	const struct sc_op *op;

	(void)state;
	parse_ok("connections 2\n"                         /* 1 */
		 "on drain conn=1\n"                       /* 2 */
		 "  destroy\n"                             /* 3 */
		 "  destroy-soon conn=1\n"                 /* 4 */
		 "  cork\n"                                /* 5 */
		 "  uncork\n"                              /* 6 */
		 "  pause conn=1\n"                        /* 7 */
		 "  resume\n"                              /* 8 */
		 "  signal SIGTERM\n"                      /* 9 */
		 "  signal USR1 self\n"                    /* 10 */
		 "  signal SIGHUP external conn=1\n"       /* 11 */
		 "  disarm\n"                              /* 12 */
		 "  microtask disarm\n"                    /* 13 */
		 "  microtask signal SIGUSR2 external\n"   /* 14 */
		 "  microtask destroy conn=0\n"            /* 15 */
		 "  signal 15 external self\n",            /* 16: the last word wins */
		 &sc);
	assert_int_equal(sc.nhandlers, 1);
	assert_int_equal(sc.handlers[0].nops, 14);
	op = sc.handlers[0].ops;
	check_op(&op[0], SC_OP_DESTROY, 3, -1, 0, -1, 0, 0);
	check_op(&op[1], SC_OP_DESTROY_SOON, 4, 1, 0, -1, 0, 0);
	check_op(&op[2], SC_OP_CORK, 5, -1, 0, -1, 0, 0);
	check_op(&op[3], SC_OP_UNCORK, 6, -1, 0, -1, 0, 0);
	check_op(&op[4], SC_OP_PAUSE, 7, 1, 0, -1, 0, 0);
	check_op(&op[5], SC_OP_RESUME, 8, -1, 0, -1, 0, 0);
	check_op(&op[6], SC_OP_SIGNAL, 9, -1, 0, -1, 0, 0);
	assert_int_equal(op[6].sig, SIGTERM);
	assert_int_equal(op[6].external, 0);
	check_op(&op[7], SC_OP_SIGNAL, 10, -1, 0, -1, 0, 0);
	assert_int_equal(op[7].sig, SIGUSR1);
	assert_int_equal(op[7].external, 0);
	check_op(&op[8], SC_OP_SIGNAL, 11, 1, 0, -1, 0, 0);
	assert_int_equal(op[8].sig, SIGHUP);
	assert_int_equal(op[8].external, 1);
	check_op(&op[9], SC_OP_DISARM, 12, -1, 0, -1, 0, 0);
	check_op(&op[10], SC_OP_DISARM, 13, -1, 0, -1, 0, 1);
	check_op(&op[11], SC_OP_SIGNAL, 14, -1, 0, -1, 0, 1);
	assert_int_equal(op[11].sig, SIGUSR2);
	assert_int_equal(op[11].external, 1);
	check_op(&op[12], SC_OP_DESTROY, 15, 0, 0, -1, 0, 1);
	check_op(&op[13], SC_OP_SIGNAL, 16, -1, 0, -1, 0, 0);
	assert_int_equal(op[13].sig, SIGTERM);
	assert_int_equal(op[13].external, 0);
	for (size_t i = 0; i < 14; i++)
		assert_null(op[i].data);
	sc_free(&sc);
}

/* The operations and handlers batching and process-end scenarios use. */
static void test_process_ops(void **state)
{
	struct scenario sc;
	const struct sc_op *op;

	(void)state;
	parse_ok("peer read at checkpoint 2\n"   /* 1 */
		 "task\n"                        /* 2 */
		 "  checkpoint\n"                /* 3 */
		 "  ignore SIGPIPE\n"            /* 4 */
		 "  signal 1000\n"               /* 5: kill() refuses it; allowed */
		 "  await-drained\n"             /* 6 */
		 "  checkpoint\n"                /* 7 */
		 "  exit 3\n"                    /* 8 */
		 "  exit\n"                      /* 9 */
		 "  abort\n"                     /* 10 */
		 "  execve\n"                    /* 11 */
		 "on write-cb\n"                 /* 12 */
		 "  destroy\n"                   /* 13 */
		 "on end-cb conn=0\n"            /* 14 */
		 "  destroy\n",                  /* 15 */
		 &sc);
	assert_int_equal(sc.npeer, 1);
	assert_int_equal(sc.peer[0].at.kind, SC_AT_CHECKPOINT);
	assert_int_equal(sc.peer[0].at.task, 2);
	op = sc.tasks[0].ops;
	assert_int_equal(sc.tasks[0].nops, 9);
	check_op(&op[0], SC_OP_CHECKPOINT, 3, -1, 0, -1, 0, 0);
	check_op(&op[1], SC_OP_IGNORE, 4, -1, 0, -1, 0, 0);
	assert_int_equal(op[1].sig, SIGPIPE);
	check_op(&op[2], SC_OP_SIGNAL, 5, -1, 0, -1, 0, 0);
	assert_int_equal(op[2].sig, 1000);
	check_op(&op[3], SC_OP_AWAIT_DRAINED, 6, -1, 0, -1, 0, 0);
	check_op(&op[5], SC_OP_EXIT, 8, -1, 0, -1, 0, 0);
	assert_int_equal(op[5].sig, 3);
	check_op(&op[6], SC_OP_EXIT, 9, -1, 0, -1, 0, 0);
	assert_int_equal(op[6].sig, 0);
	check_op(&op[7], SC_OP_ABORT, 10, -1, 0, -1, 0, 0);
	check_op(&op[8], SC_OP_EXECVE, 11, -1, 0, -1, 0, 0);
	assert_int_equal(sc.nhandlers, 2);
	assert_int_equal(sc.handlers[0].event, SC_EV_WRITE_CB);
	assert_int_equal(sc.handlers[1].event, SC_EV_END_CB);
	assert_int_equal(sc.handlers[1].conn, 0);
	sc_free(&sc);
	/* The peer's own point: once it has read N bytes on the connection. */
	parse_ok("peer shutdown at bytes 8MiB conn=0\n", &sc);
	assert_int_equal(sc.peer[0].at.kind, SC_AT_BYTES);
	assert_int_equal(sc.peer[0].at.bytes, 8 * 1024 * 1024);
	assert_int_equal(sc.peer[0].conn, 0);
	sc_free(&sc);
}

/* Suite metadata for the pytest plugin: behaviour, matrix, legacy. */
static void test_suite_metadata(void **state)
{
	struct scenario sc;

	(void)state;
	parse_ok("behaviour half_open\n"
		 "matrix clamp 1 none 4096\n"
		 "matrix transport tcp unix\n"
		 "legacy batch=off must-match except=syscalls,queue\n", &sc);
	assert_string_equal(sc.behaviour, "half_open");
	assert_int_equal(sc.nmatrix, 2);
	assert_string_equal(sc.matrix[0].key, "clamp");
	assert_int_equal(sc.matrix[0].nvalues, 3);
	assert_string_equal(sc.matrix[0].values[1], "none");
	assert_string_equal(sc.matrix[1].values[1], "unix");
	assert_string_equal(sc.legacy, "batch=off");
	assert_int_equal(sc.legacy_must_differ, 0);
	assert_string_equal(sc.legacy_except, "syscalls,queue");
	/* A legacy line declares the variant; it does not select it. */
	assert_int_equal(sc.config.batch, 1);
	sc_free(&sc);
	parse_ok("legacy queue=memmove must-differ\n", &sc);
	assert_int_equal(sc.legacy_must_differ, 1);
	assert_null(sc.legacy_except);
	assert_int_equal(sc.config.queue, RS_QUEUE_CURSOR);
	sc_free(&sc);
}

static void test_error_suite_metadata(void **state)
{
	(void)state;
	expect_error("behaviour Queue\n", 1, "behaviour 'Queue'", "lower-case");
	expect_error("matrix clamp\n", 1, "'matrix' needs a key");
	expect_error("matrix speed 1 2\n", 1, "matrix key 'speed'");
	expect_error("matrix clamp 0\n", 1, "matrix clamp", "clamp-send '0'");
	expect_error("matrix clamp 1\nmatrix clamp 2\n", 2, "already declared on line 1");
	expect_error("matrix transport udp\n", 1, "transport 'udp'");
	expect_error("legacy queue=memmove\n", 1, "must-differ or must-match");
	expect_error("legacy queue=zzz must-differ\n", 1, "'queue' does not take the value 'zzz'");
	expect_error("legacy batch=off must-differ except=syscalls\n", 1, "'except=' goes with must-match only");
	expect_error("legacy batch=off must-match except=speed\n", 1, "unknown section 'speed'");
	expect_error("legacy batch=off must-match\nlegacy batch=off must-match\n", 2, "already declared on line 1");
	expect_error("peer read at checkpoint 1\ntask\n  write 1\n", 1, "'at checkpoint 1'", "0 checkpoints");
	expect_error("task\n  exit 256\n", 2, "exit '256'");
	expect_error("task\n  ignore SIGFOO\n", 2, "unknown signal 'SIGFOO'");
	expect_error("on write\n", 1, "unknown event 'write'", "write-cb");
}

static void test_comments_and_whitespace(void **state)
{
	struct scenario sc;
	const struct sc_op *op;

	(void)state;
	parse_ok("# a comment\n"                 /* 1 */
		 "\n"                            /* 2 */
		 "name x # trailing comment\r\n" /* 3: CRLF */
		 "task\t# after the keyword\n"   /* 4 */
		 "\twrite 1\t cb\r\n"            /* 5: tab indent */
		 "\n"                            /* 6: blank, block goes on */
		 "# column 0 comment, block goes on\n" /* 7 */
		 "  write 2\n"                   /* 8 */
		 "   \t  \n"                     /* 9 */
		 "  write \"a # b\"#c\n"         /* 10 */
		 "on data\r\n"                   /* 11 */
		 "  end#comment\n"               /* 12 */
		 "#",                            /* 13: no final newline */
		 &sc);
	assert_string_equal(sc.name, "x");
	assert_int_equal(sc.ntasks, 1);
	assert_int_equal(sc.tasks[0].line, 4);
	assert_int_equal(sc.tasks[0].nops, 3);
	op = sc.tasks[0].ops;
	check_op(&op[0], SC_OP_WRITE, 5, -1, 1, -1, 1, 0);
	check_op(&op[1], SC_OP_WRITE, 8, -1, 2, -1, 0, 0);
	check_data(&op[2], "a # b", 5);
	assert_int_equal(op[2].line, 10);
	assert_int_equal(sc.nhandlers, 1);
	assert_int_equal(sc.handlers[0].nops, 1);
	check_op(&sc.handlers[0].ops[0], SC_OP_END, 12, -1, 0, -1, 0, 0);
	sc_free(&sc);
}

/* The scenario of scenarios/queue/eagain-then-disarm.wcs, as a whole. */
static void test_queue_example(void **state)
{
	struct scenario sc;
	const struct sc_op *op;

	(void)state;
	parse_ok("# Every writing call is refused with EAGAIN until task 2 disarms the gate:\n"
		 "# the bytes wait in the queue, then every byte arrives, in order.\n"
		 "refuse-write EAGAIN\n"
		 "task\n"
		 "  write 100KiB cb\n"
		 "  write \"tail\\n\" cb\n"
		 "  end cb\n"
		 "task\n"
		 "  disarm\n",
		 &sc);
	assert_string_equal(sc.name, "t");
	assert_int_equal(sc.nfaults, 1);
	assert_string_equal(sc.faults[0].text, "write:errno=EAGAIN,repeat=forever");
	assert_int_equal(sc.ntasks, 2);
	op = sc.tasks[0].ops;
	check_op(&op[0], SC_OP_WRITE, 5, -1, 100 * KIB, -1, 1, 0);
	check_data(&op[1], "tail\n", 5);
	check_op(&op[2], SC_OP_END, 7, -1, 0, -1, 1, 0);
	check_op(&sc.tasks[1].ops[0], SC_OP_DISARM, 9, -1, 0, -1, 0, 0);
	sc_free(&sc);
}

/* ---- files ----------------------------------------------------------------- */

static void test_parse_file(void **state)
{
	static const char text[] = "clamp-send 7\ntask\n  end 1KiB cb\n";
	struct scenario sc;
	char path[128], err[512];

	(void)state;
	tmp_path(path, sizeof(path), "sample.wcs");
	write_file(path, text, strlen(text));
	if (sc_parse_file(path, 30000, &sc, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(sc.name, "sample");
	assert_string_equal(sc.path, path);
	assert_string_equal(sc.faults[0].text, "write:short=7,repeat=forever");
	check_op(&sc.tasks[0].ops[0], SC_OP_END, 3, -1, KIB, -1, 1, 0);
	sc_free(&sc);
	assert_int_equal(unlink(path), 0);
}

/*
 * A file larger than the reader's first buffer (64 KiB): a task, 1000
 * comment lines of 100 bytes (which do not close it), then its operation.
 */
static void test_parse_large_file(void **state)
{
	enum { COMMENTS = 1000, WIDTH = 100 };
	size_t cap = 64 + COMMENTS * WIDTH;
	char *text = malloc(cap), *p = text;
	struct scenario sc;
	char path[128], err[512];

	(void)state;
	assert_non_null(text);
	p += sprintf(p, "task\n");
	for (int i = 0; i < COMMENTS; i++) {
		memset(p, '#', WIDTH - 1);
		p[WIDTH - 1] = '\n';
		p += WIDTH;
	}
	p += sprintf(p, "  write \"end\" cb\n");
	tmp_path(path, sizeof(path), "large.wcs");
	write_file(path, text, (size_t)(p - text));
	free(text);
	if (sc_parse_file(path, 30000, &sc, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(sc.ntasks, 1);
	assert_int_equal(sc.tasks[0].nops, 1);
	assert_int_equal(sc.tasks[0].ops[0].line, COMMENTS + 2);
	check_data(&sc.tasks[0].ops[0], "end", 3);
	sc_free(&sc);
	assert_int_equal(unlink(path), 0);
}

static void expect_file_error(const char *path, int line, const char *const *words)
{
	struct scenario sc;
	char err[1024] = "";

	memset(&sc, 0, sizeof(sc));
	assert_int_equal(sc_parse_file(path, 30000, &sc, err, sizeof(err)), -1);
	check_message(err, path, line, words);
	assert_true(is_zeroed(&sc));
}

static void test_file_errors(void **state)
{
	static const char nul1[] = "\0task\n";
	static const char nul3[] = "task\n  write 1\n  write \"a\0b\"\n";
	static const char bad[] = "task\n  write 1\n  writ 2\n";
	char path[128];

	(void)state;
	tmp_path(path, sizeof(path), "missing.wcs");
	expect_file_error(path, 0, (const char *const[]){ "cannot open", strerror(ENOENT), NULL });

	/* A directory opens but does not read. */
	expect_file_error(tmpdir, 0, (const char *const[]){ "cannot read", strerror(EISDIR), NULL });

	tmp_path(path, sizeof(path), "nul1.wcs");
	write_file(path, nul1, sizeof(nul1) - 1);
	expect_file_error(path, 1, (const char *const[]){ "NUL byte", "\\0", NULL });
	assert_int_equal(unlink(path), 0);

	tmp_path(path, sizeof(path), "nul3.wcs");
	write_file(path, nul3, sizeof(nul3) - 1);
	expect_file_error(path, 3, (const char *const[]){ "NUL byte", NULL });
	assert_int_equal(unlink(path), 0);

	/* A parse error in a file names the file. */
	tmp_path(path, sizeof(path), "bad.wcs");
	write_file(path, bad, sizeof(bad) - 1);
	expect_file_error(path, 3, (const char *const[]){ "unknown operation 'writ'", NULL });
	assert_int_equal(unlink(path), 0);
}

/* ---- errors: the tokenizer ---------------------------------------------------- */

static void test_error_too_many_words(void **state)
{
	char text[512] = "task\n  write 1";

	(void)state;
	for (int i = 0; i < 31; i++)
		strcat(text, " cb");
	strcat(text, "\n");
	expect_error(text, 2, "too many words", "32");
}

static void test_error_strings(void **state)
{
	(void)state;
	expect_error("task\n  write \"\\xZ1\"\n", 2, "bad escape", "\\xZ1", "two hex digits");
	expect_error("task\n  write \"\\x4\"\n", 2, "bad escape", "\\x4", "two hex digits");
	expect_error("task\n  write \"\\x\n", 2, "bad escape", "two hex digits");
	expect_error("task\n\n  write \"a\\qb\"\n", 3, "unknown escape", "\\q");
	expect_error("name \"a\\y\"\n", 1, "unknown escape", "\\y");
	expect_error("task\n  write \"abc\n", 2, "unterminated string");
	expect_error("task\n  write \"abc\\\"\n", 2, "unterminated string");
	/* A backslash that ends the line escapes nothing. */
	expect_error("task\n  write \"abc\\\n", 2, "unterminated string");
	expect_error("peer send \"x at start\n", 1, "unterminated string");
	expect_error("task\n  write \"ab\"cd\n", 2, "expected a space after a string");
	/* The parse stops at the first error; a later one is not reported. */
	expect_error("bogus\n  write \"abc\n", 1, "unknown keyword 'bogus'");
}

/* ---- errors: operations -------------------------------------------------------- */

static void test_error_ops(void **state)
{
	(void)state;
	expect_error("task\n  microtask\n", 2, "'microtask' needs an operation");
	expect_error("task\n  frobnicate 1\n", 2, "unknown operation 'frobnicate'", "write");
	expect_error("task\n  microtask microtask write 1\n", 2, "unknown operation 'microtask'");
	expect_error("on data\n  \"write\" 1\n", 2, "unknown operation 'write'");
	expect_error("task\n  task\n", 2, "unknown operation 'task'");
	expect_error("task\n  write\n", 2, "'write' needs a byte count or a \"string\"");
	expect_error("task\n  write 12X\n", 2, "'12X'", "expected a byte count");
	expect_error("task\n  write 16kib\n", 2, "'16kib'", "expected a byte count");
	expect_error("task\n  write 16 KiB\n", 2, "unexpected 'KiB' after 'write'");
	expect_error("task\n  write -1\n", 2, "'-1'", "expected a byte count");
	expect_error("task\n  write cb\n", 2, "'cb'", "expected a byte count");
	/* Too large: the bound, not what a byte count looks like. */
	expect_error("task\n  write 99999999999999999999\n", 2, "'99999999999999999999'", "at most 1073741824");
	expect_error("task\n  write 1GiB\n", 2, "'1GiB'", "byte count");
	expect_error("task\n  end 1025M\n", 2, "'1025M'", "at most 1073741824");
	expect_error("task\n  write 18446744073709551615K\n", 2, "'18446744073709551615K'", "at most 1073741824");
	expect_error("task\n  end 5Q\n", 2, "'5Q'", "expected a byte count");
	expect_error("task\n  signal\n", 2, "'signal' needs a signal name");
	expect_error("task\n  signal SIGFOO\n", 2, "unknown signal 'SIGFOO'");
	expect_error("task\n  signal 0\n", 2, "unknown signal '0'");
	expect_error("task\n  write 5 fill=ab\n", 2, "fill=ab", "one character");
	expect_error("task\n  write-owned\n", 2, "'write-owned' needs a byte count");
	expect_error("task\n  write-owned 5 cb\n", 2, "unexpected 'cb' after 'write-owned'");
	expect_error("task\n  overwrite\n", 2, "'overwrite' needs fill=C");
	expect_error("task\n  overwrite fill=xy\n", 2, "fill=xy", "one character");
	expect_error("task\n  write 5 fill=\n", 2, "fill=", "one character");
	/* '#' starts a comment, even in fill=#. */
	expect_error("task\n  write 5 fill=#\n", 2, "fill=", "one character");
	expect_error("task\n  write 5 conn=x\n", 2, "conn=x", "connection index");
	expect_error("task\n  write 5 conn=-1\n", 2, "conn=-1", "connection index");
	expect_error("task\n  write 5 conn=1024\n", 2, "conn=1024", "at most 1023");
	expect_error("task\n  write 5 conn=x\n", 2, "conn=x", "connection index");
	expect_error("task\n  destroy cb\n", 2, "unexpected 'cb' after 'destroy'");
	expect_error("task\n  cork fill=a\n", 2, "unexpected 'fill=a' after 'cork'");
	expect_error("task\n  write 5 external\n", 2, "unexpected 'external' after 'write'");
	expect_error("task\n  signal SIGTERM cb\n", 2, "unexpected 'cb' after 'signal'");
	expect_error("task\n  disarm now\n", 2, "unexpected 'now' after 'disarm'");
	expect_error("task\n  end 5 \"x\"\n", 2, "unexpected 'x' after 'end'");
	expect_error("task\n  write \"x\" 5\n", 2, "unexpected '5' after 'write'");
	/* The data of a write is freed when a later word is wrong. */
	expect_error("task\n  write \"data\" fill=xy\n", 2, "fill=xy");
	expect_error("task\n  end \"data\" bogus\n", 2, "unexpected 'bogus' after 'end'");
}

/* ---- errors: blocks and indentation ----------------------------------------------- */

static void test_error_blocks(void **state)
{
	(void)state;
	expect_error("task foo\n", 1, "unexpected 'foo'", "conn=K");
	expect_error("task conn=-1\n", 1, "conn=-1", "connection index");
	expect_error("task conn=\n", 1, "conn=", "connection index");
	expect_error("on\n", 1, "'on' needs an event", "data, eof, drain, finish, close, write-cb, end-cb, request or writable");
	expect_error("on frob\n", 1, "unknown event 'frob'");
	expect_error("on data conn=x\n", 1, "conn=x", "connection index");
	expect_error("\non data later\n", 2, "unexpected 'later'", "conn=K");
}

static void test_error_indentation(void **state)
{
	(void)state;
	expect_error("  write 1\n", 1, "indented operation outside a 'task' or 'on' block");
	expect_error("# comment\n\tend\n", 2, "indented operation outside");
	/* A setting line ends the block. */
	expect_error("task\n  write 1\nclamp-send 4\n  write 2\n", 4, "indented operation outside");
	/* An operation at column 0 is not an operation. */
	expect_error("task\nwrite 1\n", 2, "unknown keyword 'write'");
}

/* ---- errors: peer lines -------------------------------------------------------------- */

static void test_error_peer(void **state)
{
	(void)state;
	expect_error("peer\n", 1, "'peer' needs an action");
	expect_error("peer dance\n", 1, "unknown peer action 'dance'", "read, send, shutdown, reset, rcvbuf, on-eof");
	expect_error("peer read\n", 1, "'peer read' needs 'at POINT'");
	expect_error("peer read start\n", 1, "'peer read' needs 'at POINT'");
	expect_error("peer reset\n", 1, "'peer reset' needs 'at POINT'");
	expect_error("peer send at start\n", 1, "'peer send' needs a \"string\"");
	expect_error("peer send hello at start\n", 1, "'peer send' needs a \"string\"");
	expect_error("peer read at\n", 1, "expected a point after 'at'", "start, task N, checkpoint N, bytes N or done");
	expect_error("peer shutdown at bytes 0\n", 1, "bytes '0'", "from 1");
	expect_error("peer read at bytes 10\n", 1, "reads at bytes are continuous");
	expect_error("peer read at never\n", 1, "expected a point after 'at'");
	expect_error("peer shutdown at task\n", 1, "expected a point after 'at'");
	expect_error("peer read at task 0\n", 1, "task '0'", "task number from 1");
	expect_error("peer read at task x\n", 1, "task 'x'", "task number from 1");
	expect_error("peer shutdown at done now\n", 1, "unexpected 'now'", "conn=K");
	expect_error("peer reset at start conn=x\n", 1, "conn=x", "connection index");
	expect_error("peer reset at start conn=1024\n", 1, "conn=1024", "at most 1023");
	/* The bytes of a send are freed on every later error. */
	expect_error("peer send \"x\"\n", 1, "'peer send' needs 'at POINT'");
	expect_error("peer send \"x\" at never\n", 1, "expected a point after 'at'");
	expect_error("peer send \"x\" at start bogus\n", 1, "unexpected 'bogus'");
	expect_error("peer send \"x\" at start conn=-2\n", 1, "conn=-2");
	expect_error("peer read continuous now\n", 1, "'peer read' needs 'at POINT'");
	expect_error("peer rcvbuf\n", 1, "'peer rcvbuf' needs a byte count from 1");
	expect_error("peer rcvbuf 0\n", 1, "'peer rcvbuf' needs a byte count from 1");
	expect_error("peer rcvbuf 4K\n", 1, "'peer rcvbuf' needs a byte count from 1");
	expect_error("peer rcvbuf 1 2\n", 1, "'peer rcvbuf' needs a byte count from 1");
	expect_error("peer on-eof\n", 1, "'peer on-eof' takes close, shutdown or keep");
	expect_error("peer on-eof open\n", 1, "'peer on-eof' takes close, shutdown or keep");
}

/* ---- errors: settings ------------------------------------------------------------------ */

static void test_error_argument_count(void **state)
{
	static const char *const keys[] = {
		"name", "transport", "timeout", "clamp-send", "refuse-write",
		"signal", "fault", "variant", "connections", "role",
		"allow-half-open",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char text[128], want[64];

		snprintf(text, sizeof(text), "task\n%s\n", keys[i]);
		snprintf(want, sizeof(want), "'%s' takes 1 argument, got 0", keys[i]);
		expect_error(text, 2, want);
		snprintf(text, sizeof(text), "%s a b\n", keys[i]);
		snprintf(want, sizeof(want), "'%s' takes 1 argument, got 2", keys[i]);
		expect_error(text, 1, want);
	}
}

static void test_error_simple_settings(void **state)
{
	(void)state;
	expect_error("frobnicate 1\n", 1, "unknown keyword 'frobnicate'");
	expect_error("transport udp\n", 1, "transport 'udp'", "tcp or unix");
	expect_error("timeout 0\n", 1, "timeout '0'", "seconds");
	expect_error("timeout -1\n", 1, "timeout '-1'", "seconds");
	expect_error("timeout abc\n", 1, "timeout 'abc'", "seconds");
	expect_error("timeout 5s\n", 1, "timeout '5s'", "seconds");
	expect_error("timeout 3601\n", 1, "timeout '3601'", "at most 3600");
	expect_error("timeout nan\n", 1, "timeout 'nan'");
	expect_error("timeout inf\n", 1, "timeout 'inf'");
	expect_error("connections 0\n", 1, "connections '0'", "1 to 1024");
	expect_error("connections 1025\n", 1, "connections '1025'", "1 to 1024");
	expect_error("connections two\n", 1, "connections 'two'");
	expect_error("role peer\n", 1, "role 'peer'", "client or server");
	expect_error("allow-half-open maybe\n", 1, "allow-half-open 'maybe'", "yes or no");
	expect_error("clamp-send 0\n", 1, "clamp-send '0'", "at least 1");
	expect_error("clamp-send 4KB\n", 1, "clamp-send '4KB'", "byte count");
	expect_error("clamp-send x\n", 1, "clamp-send 'x'");
}

static void test_error_refuse_write(void **state)
{
	(void)state;
	expect_error("refuse-write @3\n", 1, "refuse-write '@3'", "ERRNO[@K[xN]]");
	expect_error("refuse-write EAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAGAIN\n", 1,
		     "refuse-write", "ERRNO[@K[xN]]");
	expect_error("refuse-write EFOO\n", 1, "refuse-write 'EFOO'", "unknown errno 'EFOO'");
	expect_error("refuse-write EFOO@2\n", 1, "unknown errno 'EFOO'");
	expect_error("refuse-write 0\n", 1, "unknown errno '0'");
	expect_error("refuse-write EPIPE@\n", 1, "refuse-write 'EPIPE@'", "call number after '@'");
	expect_error("refuse-write EPIPE@x2\n", 1, "call number after '@'");
	expect_error("refuse-write EPIPE@0\n", 1, "'0' is not a call number", "1 is the first call");
	expect_error("refuse-write EPIPE@a\n", 1, "'a' is not a call number");
	expect_error("refuse-write EPIPE@2x0\n", 1, "'0' is not a count", "* for forever");
	expect_error("refuse-write EPIPE@2x\n", 1, "'' is not a count");
	expect_error("refuse-write EPIPE@2xy\n", 1, "'y' is not a count");
	expect_error("refuse-write EPIPE@2x3x4\n", 1, "'3x4' is not a count");
}

static void test_error_signal_setting(void **state)
{
	char text[256];

	(void)state;
	memset(text, 0, sizeof(text));
	memcpy(text, "task\nsignal SIGTERM@send:", 25);
	memset(text + 25, '1', 130);
	strcat(text, "\n");
	expect_error(text, 2, "too long");
	expect_error("signal SIGTERM\n", 1, "signal 'SIGTERM'", "SIG@SYSCALL:K or SIG@task:N");
	expect_error("signal SIGFOO@send:1\n", 1, "unknown signal 'SIGFOO'");
	expect_error("signal @task:1\n", 1, "unknown signal ''");
	expect_error("signal SIGTERM@task\n", 1, "expected ':' and a number after 'task'");
	expect_error("signal SIGTERM@send\n", 1, "expected ':' and a number after 'send'");
	expect_error("signal SIGTERM@task:0\n", 1, "'0' is not a number from 1");
	expect_error("signal SIGTERM@send:x\n", 1, "'x' is not a number from 1");
	expect_error("task\nsignal SIGTERM@task:1:loud\n", 2, "'loud' is neither self nor external");
	expect_error("task\nsignal SIGTERM@task:1:\n", 2, "'' is neither self nor external");
	expect_error("signal SIGTERM@send:1:external\n", 1, "unexpected ':external'");
	/* An unknown syscall is an unknown target of the gate rule. */
	expect_error("signal SIGTERM@sned:1\n", 1, "unknown target \"sned\"");
	expect_error("signal SIGTERM@:1\n", 1, "missing target");
}

static void test_error_fault(void **state)
{
	(void)state;
	expect_error("fault send\n", 1, "spec \"send\"", "missing ':'");
	expect_error("fault bogus:zero\n", 1, "unknown target \"bogus\"", "syswrite");
	expect_error("fault send:explode\n", 1, "unknown action \"explode\"");
	expect_error("fault send:\n", 1, "missing action");
	expect_error("fault send:after=1\n", 1, "missing action");
	expect_error("fault accept:short=5\n", 1, "action short does not apply to target accept");
	expect_error("fault accept:zero\n", 1, "action zero does not apply to target accept");
	expect_error("fault send:errno=EFOO\n", 1, "unknown errno name \"EFOO\"");
	expect_error("fault send:signal=SIGFOO\n", 1, "unknown signal name \"SIGFOO\"");
	expect_error("fault send:zero,after=-1\n", 1, "negative value");
	expect_error("fault send:short=0\n", 1, "a clamp to 0 bytes");
	expect_error("fault send:zero,repeat=0\n", 1, "fires 0 times");
	expect_error("fault send:zero,after=1,after=2\n", 1, "duplicate key \"after\"");
	expect_error("fault send:zero,errno=EPIPE\n", 1, "second action");
	expect_error("fault send:zero,when=1\n", 1, "unknown key \"when\"");
	expect_error("fault send:zero,\n", 1, "empty option");
	expect_error("fault :zero\n", 1, "missing target");
}

static void test_error_variant(void **state)
{
	(void)state;
	expect_error("variant queue\n", 1, "variant 'queue'", "NAME=VALUE");
	expect_error("variant =cursor\n", 1, "variant '=cursor'", "NAME=VALUE");
	expect_error("variant queue=\n", 1, "variant 'queue='", "NAME=VALUE");
	expect_error("variant flush=batch\n", 1, "unknown variant 'flush'");
	expect_error("variant queue=ring\n", 1, "'queue' does not take the value 'ring'");
}

/* ---- errors: what is only known at the end ------------------------------------------- */

static void test_error_validate(void **state)
{
	(void)state;
	expect_error("task conn=1\n  write 1\n", 1, "conn=1", "1 connection (indexes from 0)");
	expect_error("task\n  write 1\n  write 2 conn=2\nconnections 2\n", 3,
		     "conn=2", "2 connections");
	expect_error("connections 2\n\non close conn=2\n", 3, "conn=2", "2 connections");
	expect_error("on data\n  end conn=1\n", 2, "conn=1", "1 connection");
	expect_error("peer read at start conn=1\n", 1, "conn=1", "1 connection");
	expect_error("task\ntask\npeer read at task 3\n", 3, "'at task 3'", "2 tasks");
	expect_error("peer send \"x\" at task 1\n", 1, "'at task 1'", "0 tasks");
	expect_error("task\nsignal SIGUSR1@task:2\n", 2, "a signal at task 2", "1 task");
	expect_error("signal SIGTERM@task:1:external\n", 1, "a signal at task 1", "0 tasks");
	/* connections may come last, and lower the limit. */
	expect_error("connections 3\ntask conn=2\nconnections 2\n", 2, "conn=2", "2 connections");
}

/* Everything a scenario can allocate, then an error: valgrind and ASan see
 * whether the failed parse freed it all. */
static void test_error_frees_everything(void **state)
{
	static const char head[] =
		"name \"allocated\"\n"
		"clamp-send 1\n"
		"refuse-write EPIPE@2\n"
		"fault send:zero\n"
		"variant queue=memmove\n"
		"signal SIGTERM@task:1\n"
		"peer send \"data\" at start\n"
		"peer read at task 1\n"
		"task\n"
		"  write \"bytes\" cb\n"
		"  write 5\n"
		"on data\n"
		"  end \"more\"\n"
		"on close\n"
		"  destroy\n";
	char text[1024];

	(void)state;
	/* A parse error on line 16. */
	snprintf(text, sizeof(text), "%sbogus\n", head);
	expect_error(text, 16, "unknown keyword 'bogus'");
	/* A validation error after a complete parse. */
	snprintf(text, sizeof(text), "%speer reset at task 2\n", head);
	expect_error(text, 16, "'at task 2'");
	/* An error inside an operation of a block that holds data. */
	snprintf(text, sizeof(text), "%s  write \"x\" fill=no\n", head);
	expect_error(text, 16, "fill=no");
}

/* ---- the functions the command line shares ------------------------------------------ */

static void test_cli_settings(void **state)
{
	struct scenario sc;
	char err[512];

	(void)state;
	parse_ok("task\n", &sc);
	/* Line 0: from the command line. */
	assert_int_equal(sc_add_clamp(&sc, "7", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_add_refuse(&sc, "EPIPE@3", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_add_signal(&sc, "SIGTERM@send:2", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_add_fault(&sc, "read:zero", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_add_signal(&sc, "SIGUSR1@task:1:external", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_add_variant(&sc, "queue=memmove", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_set_transport(&sc, "unix", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_set_timeout(&sc, "1.5", 0, err, sizeof(err)), 0);
	assert_int_equal(sc.nfaults, 4);
	assert_string_equal(sc.faults[0].text, "write:short=7,repeat=forever");
	assert_string_equal(sc.faults[1].text, "write:errno=EPIPE,after=2");
	assert_string_equal(sc.faults[2].text, "send:signal=SIGTERM,after=1");
	assert_string_equal(sc.faults[3].text, "read:zero");
	for (size_t i = 0; i < sc.nfaults; i++)
		assert_int_equal(sc.faults[i].line, 0);
	assert_int_equal(sc.ntsignals, 1);
	assert_int_equal(sc.tsignals[0].line, 0);
	assert_int_equal(sc.tsignals[0].external, 1);
	assert_string_equal(sc.variants[0].text, "queue=memmove");
	assert_int_equal(sc.transport, SC_UNIX);
	assert_int_equal(sc.timeout_ms, 1500);
	assert_int_equal(sc_validate(&sc, err, sizeof(err)), 0);

	/* The messages carry no location, and a refused setting adds nothing. */
	assert_int_equal(sc_add_refuse(&sc, "EFOO", 0, err, sizeof(err)), -1);
	assert_string_equal(err, "refuse-write 'EFOO': unknown errno 'EFOO'");
	assert_int_equal(sc_add_clamp(&sc, "0", 0, err, sizeof(err)), -1);
	assert_string_equal(err, "clamp-send '0': expected a byte count of at least 1 (4096, 64KiB, 1MiB)");
	assert_int_equal(sc_add_signal(&sc, "SIGTERM", 0, err, sizeof(err)), -1);
	assert_string_equal(err, "signal 'SIGTERM': expected SIG@SYSCALL:K or SIG@task:N");
	assert_int_equal(sc_add_variant(&sc, "queue=ring", 0, err, sizeof(err)), -1);
	assert_string_equal(err, "variant 'queue=ring': 'queue' does not take the value 'ring'");
	assert_int_equal(sc_add_fault(&sc, "send", 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "spec \"send\": missing ':'"));
	assert_int_equal(sc_set_transport(&sc, "sctp", 0, err, sizeof(err)), -1);
	assert_string_equal(err, "transport 'sctp': expected tcp or unix");
	assert_int_equal(sc_set_timeout(&sc, "0", 0, err, sizeof(err)), -1);
	assert_string_equal(err, "timeout '0': expected seconds, more than 0 and at most 3600");
	assert_int_equal(sc.nfaults, 4);
	assert_int_equal(sc.ntsignals, 1);
	assert_int_equal(sc.nvariants, 1);
	assert_int_equal(sc.transport, SC_UNIX);
	assert_int_equal(sc.timeout_ms, 1500);

	/* A command-line signal at a task that does not exist: no line 0. */
	assert_int_equal(sc_add_signal(&sc, "SIGTERM@task:2", 0, err, sizeof(err)), 0);
	assert_int_equal(sc_validate(&sc, err, sizeof(err)), -1);
	check_message(err, WHERE, 0, (const char *const[]){ "--signal", "a signal at task 2", "1 task", NULL });
	assert_null(strstr(err, ":0:"));
	sc_free(&sc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_default_name),
		cmocka_unit_test(test_settings),
		cmocka_unit_test(test_clamp_send),
		cmocka_unit_test(test_refuse_write_forms),
		cmocka_unit_test(test_signal_settings),
		cmocka_unit_test(test_fault_rules),
		cmocka_unit_test_teardown(test_variant, reset_config),
		cmocka_unit_test(test_peer_actions),
		cmocka_unit_test(test_reads_at_points),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_on_end_is_on_eof),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_peer_exec),
		cmocka_unit_test(test_exec_expand),
		cmocka_unit_test(test_write_sizes),
		cmocka_unit_test(test_write_strings),
		cmocka_unit_test(test_end_ops),
		cmocka_unit_test(test_other_ops),
		cmocka_unit_test(test_process_ops),
		cmocka_unit_test_teardown(test_suite_metadata, reset_config),
		cmocka_unit_test_teardown(test_error_suite_metadata, reset_config),
		cmocka_unit_test(test_comments_and_whitespace),
		cmocka_unit_test(test_queue_example),
		cmocka_unit_test(test_parse_file),
		cmocka_unit_test(test_parse_large_file),
		cmocka_unit_test(test_file_errors),
		cmocka_unit_test(test_error_too_many_words),
		cmocka_unit_test(test_error_strings),
		cmocka_unit_test(test_error_ops),
		cmocka_unit_test(test_error_blocks),
		cmocka_unit_test(test_error_indentation),
		cmocka_unit_test(test_error_peer),
		cmocka_unit_test(test_error_argument_count),
		cmocka_unit_test(test_error_simple_settings),
		cmocka_unit_test(test_error_refuse_write),
		cmocka_unit_test(test_error_signal_setting),
		cmocka_unit_test(test_error_fault),
		cmocka_unit_test_teardown(test_error_variant, reset_config),
		cmocka_unit_test(test_error_validate),
		cmocka_unit_test_teardown(test_error_frees_everything, reset_config),
		cmocka_unit_test_teardown(test_cli_settings, reset_config),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
