/*
 * test_scenario_errors.c: the scenario-language parser (harness/scenario.c)
 * given one mistake at a time, with cmocka: each message starts with
 * "WHERE:LINE: " at the right line and names the problem, and the failed
 * parse left nothing behind (the scenario is zeroed, and valgrind or ASan
 * see no leak). Last, the setting functions the command line shares, whose
 * messages carry no location. Valid scenarios are test_scenario.c's.
 */
#include <errno.h>
#include <signal.h>

#include "scenario_fixture.h"

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
	expect_error("sweep-declare conn=0 bytes=1..2\n", 1, "takes conn=C bytes=A..B \"REASON\"");
	expect_error("sweep-declare conn=0 bytes=5..2 \"r\"\n", 1, "bytes=5..2", "before the first");
	expect_error("sweep-declare conn=0 bytes=x..2 \"r\"\n", 1, "bytes=x..2", "A is not a byte offset");
	expect_error("sweep-declare conn=0 bytes=3 \"r\"\n", 1, "bytes=A..B expected");
	expect_error("sweep-declare conn=0 bytes=1..2 \"\"\n", 1, "the reason is empty");
	expect_error("sweep-declare conn=0 bytes=1..2 \"r\"\nsweep-declare conn=0 bytes=1..2 \"r\"\n",
		     2, "already declared on line 1");
	expect_error("task\n  write 1\nsweep-declare conn=1 bytes=1..2 \"r\"\n", 3, "conn=1",
		     "1 connection");
	expect_error("task\n  exit 256\n", 2, "exit '256'");
	expect_error("task\n  ignore SIGFOO\n", 2, "unknown signal 'SIGFOO'");
	expect_error("on write\n", 1, "unknown event 'write'", "write-cb");
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
	expect_error("task\n  write 2GiB\n", 2, "'2GiB': at most 1073741824 (1GiB) bytes");
	expect_error("task\n  write 16 KiB\n", 2, "unexpected 'KiB' after 'write'");
	expect_error("task\n  write -1\n", 2, "'-1'", "expected a byte count");
	expect_error("task\n  write cb\n", 2, "'cb'", "expected a byte count");
	/* Too large: the bound, not what a byte count looks like. */
	expect_error("task\n  write 99999999999999999999\n", 2, "'99999999999999999999'", "at most 1073741824");
	expect_error("task\n  write 1GB\n", 2, "'1GB'", "expected a byte count");
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
	expect_error("peer read at checkpoint 0\n", 1, "checkpoint '0'", "checkpoint number from 1");
	expect_error("peer read at checkpoint 99999999999\n", 1, "checkpoint '99999999999'", "at most 2147483647");
	expect_error("peer read at task 99999999999\n", 1, "task '99999999999'", "at most 2147483647");
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
	assert_int_equal(sc_add_refuse(&sc, "EPIPEE@2", 0, err, sizeof(err)), -1);
	assert_string_equal(err, "refuse-write 'EPIPEE@2': unknown errno 'EPIPEE' (did you mean EPIPE?)");
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
		cmocka_unit_test_teardown(test_error_suite_metadata, reset_config),
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
