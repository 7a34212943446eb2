/*
 * test_scenario.c: the scenario-language parser (harness/scenario.c), with
 * cmocka, on valid scenarios. The language is described in
 * docs/scenario-language.md.
 *
 * It parses valid scenarios that use every construct and checks every
 * field of the parsed form, including the canonical fault text each
 * shorthand (clamp-send, refuse-write, signal SIG@SYSCALL:K) becomes. Its
 * other half, test_scenario_errors.c, gives the parser one mistake at a
 * time.
 */
#include <errno.h>
#include <signal.h>

#include "scenario_fixture.h"

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
	struct sc_exec_address tcp = { SC_TCP, 8080, NULL, "/srv/my scenarios", 0 };
	struct sc_exec_address un = { SC_UNIX, 0, "/tmp/x/peer.sock", NULL, 0 };
	struct sc_exec_address prog = { SC_TCP, 8080, NULL, "/srv/s", 1 };
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
	/* {dir}: the scenario's folder, spaces and all (one argument). */
	assert_int_equal(sc_exec_expand("{dir}/sink.py", &tcp, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "/srv/my scenarios/sink.py");
	assert_int_equal(sc_exec_expand("{dir}", &tcp, out, 17, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "longer than 16 bytes"));
	assert_int_equal(sc_exec_expand("{dir}", &un, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "current directory is unknown"));
	/* PROGRAM: {dir} and the braces, not the address. */
	assert_int_equal(sc_exec_expand("{dir}/c{{1}}", &prog, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "/srv/s/c{1}");
	assert_int_equal(sc_exec_expand("{port}", &prog, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "{port} in PROGRAM"));
	assert_int_equal(sc_exec_expand("{dirs}", &prog, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unknown substitution '{dirs}'"));
}

/* What the subject would refuse, check refuses, at its line, so that a
 * scenario that cannot run fails before it runs. */
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
	parse_ok("task\n  write 1GiB\n  end 1G\n", &sc);
	assert_int_equal(sc.tasks[0].ops[0].len, (size_t)1 << 30);
	assert_int_equal(sc.tasks[0].ops[1].len, (size_t)1 << 30);
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
	char path[128], err[512], *want;

	(void)state;
	tmp_path(path, sizeof(path), "sample.wcs");
	write_file(path, text, strlen(text));
	if (sc_parse_file(path, 30000, &sc, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(sc.name, "sample");
	assert_string_equal(sc.path, path);
	/* {dir}: the file's folder, absolute; text without a file: the
	 * current directory. */
	want = realpath(tmpdir, NULL);
	assert_non_null(want);
	assert_string_equal(sc.dir, want);
	free(want);
	sc_free(&sc);
	assert_int_equal(sc_parse("text", text, &sc, err, sizeof(err)), 0);
	want = getcwd(NULL, 0);
	assert_non_null(want);
	assert_string_equal(sc.dir, want);
	free(want);
	sc_free(&sc);
	assert_int_equal(sc_parse_file(path, 30000, &sc, err, sizeof(err)), 0);
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
		cmocka_unit_test(test_comments_and_whitespace),
		cmocka_unit_test(test_queue_example),
		cmocka_unit_test(test_parse_file),
		cmocka_unit_test(test_parse_large_file),
		cmocka_unit_test(test_file_errors),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
