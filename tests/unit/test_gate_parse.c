/*
 * test_gate_parse.c: the fault gate's rule parser and formatter
 * (faultinject/fi.h: fi_rule_parse, fi_rule_format, the errno and signal
 * names), with cmocka. No socket and no armed rule: bytes in, a rule or a
 * message out. The gate acting on sockets is test_gate.c's.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fi.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------ */
/* Parsing.                                                                 */

static void test_parse_targets(void **state)
{
	static const struct {
		const char *name;
		unsigned mask;
	} cases[] = {
		{"send", FI_MASK(FI_SEND)},
		{"sendto", FI_MASK(FI_SENDTO)},
		{"sendmsg", FI_MASK(FI_SENDMSG)},
		{"syswrite", FI_MASK(FI_WRITE)},
		{"writev", FI_MASK(FI_WRITEV)},
		{"recv", FI_MASK(FI_RECV)},
		{"sysread", FI_MASK(FI_READ)},
		{"epoll_ctl", FI_MASK(FI_EPOLL_CTL)},
		{"epoll_wait", FI_MASK(FI_EPOLL_WAIT)},
		{"accept", FI_MASK(FI_ACCEPT)},
		{"connect", FI_MASK(FI_CONNECT)},
		{"shutdown", FI_MASK(FI_SHUTDOWN)},
		{"close", FI_MASK(FI_CLOSE)},
		{"write", FI_GROUP_WRITE},
		{"read", FI_GROUP_READ},
		{"all", (1u << FI_SYS_COUNT) - 1},
	};
	char spec[64], err[256];
	struct fi_rule r;

	(void)state;
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		snprintf(spec, sizeof(spec), "%s:errno=EPIPE", cases[i].name);
		if (fi_rule_parse(spec, &r, err, sizeof(err)) != 0)
			fail_msg("%s: %s", spec, err);
		assert_string_equal(r.target, cases[i].name);
		assert_int_equal(r.sys_mask, cases[i].mask);
	}
	assert_string_equal(fi_sys_name(FI_WRITE), "write");
	assert_string_equal(fi_sys_name(FI_EPOLL_CTL), "epoll_ctl");
	assert_string_equal(fi_sys_name(FI_SYS_COUNT), "?");
}

static void test_parse_actions(void **state)
{
	static const struct {
		const char *spec;
		enum fi_action action;
		long param;
	} cases[] = {
		{"send:short=5", FI_ACT_SHORT, 5},
		{"send:short=1", FI_ACT_SHORT, 1},
		{"send:errno=EPIPE", FI_ACT_ERRNO, EPIPE},
		{"send:errno=32", FI_ACT_ERRNO, 32},
		{"send:errno=EWOULDBLOCK", FI_ACT_ERRNO, EWOULDBLOCK},
		{"send:errno=4095", FI_ACT_ERRNO, 4095},
		{"recv:zero", FI_ACT_ZERO, 0},
		{"send:signal=SIGTERM", FI_ACT_SIGNAL, SIGTERM},
		{"send:signal=TERM", FI_ACT_SIGNAL, SIGTERM},
		{"send:signal=15", FI_ACT_SIGNAL, 15},
		{"send:signal=USR1", FI_ACT_SIGNAL, SIGUSR1},
		{"epoll_wait:short=1", FI_ACT_SHORT, 1},
		{"accept:errno=EMFILE", FI_ACT_ERRNO, EMFILE},
	};
	char err[256];
	struct fi_rule r;

	(void)state;
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		if (fi_rule_parse(cases[i].spec, &r, err, sizeof(err)) != 0)
			fail_msg("%s: %s", cases[i].spec, err);
		assert_int_equal(r.action, cases[i].action);
		assert_int_equal(r.param, cases[i].param);
		assert_int_equal(r.after, 0);
		assert_int_equal(r.repeat, 1);
		assert_int_equal(r.fd, -1);
		assert_int_equal(r.seen, 0);
		assert_int_equal(r.fired, 0);
	}
}

static void test_parse_options(void **state)
{
	static const struct {
		const char *spec;
		unsigned long after;
		long repeat;
		int fd;
	} cases[] = {
		{"send:zero,after=3", 3, 1, -1},
		{"send:zero,repeat=4", 0, 4, -1},
		{"send:zero,repeat=forever", 0, FI_REPEAT_FOREVER, -1},
		{"send:zero,fd=7", 0, 1, 7},
		{"send:zero,fd=0", 0, 1, 0},
		{"send:zero,after=0", 0, 1, -1},
		{"send:zero,after=2,repeat=forever,fd=9", 2, FI_REPEAT_FOREVER,
		 9},
		{"send:zero,fd=9,repeat=3,after=2", 2, 3, 9},
		{"send:zero,after=18446744073709551615", 18446744073709551615UL,
		 1, -1},
	};
	char err[256];
	struct fi_rule r;

	(void)state;
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		if (fi_rule_parse(cases[i].spec, &r, err, sizeof(err)) != 0)
			fail_msg("%s: %s", cases[i].spec, err);
		assert_int_equal(r.after, cases[i].after);
		assert_int_equal(r.repeat, cases[i].repeat);
		assert_int_equal(r.fd, cases[i].fd);
	}
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *spec;
		const char *what;
	} cases[] = {
		{"", "empty spec"},
		{"send", "missing ':' between target and action"},
		{":zero", "missing target before ':'"},
		{"sned:zero", "unknown target \"sned\""},
		{"Send:zero", "unknown target \"Send\""},
		{"send:", "missing action after ':'"},
		{"send:foo", "unknown action \"foo\""},
		{"send:after=1", "missing action: \"after=1\" is an option"},
		{"send:short", "missing value in \"short\""},
		{"send:short=", "missing value in \"short=\""},
		{"send:short=abc", "non-numeric value in \"short=abc\""},
		{"send:short=-3", "negative value in \"short=-3\""},
		{"send:short=0", "\"short=0\": a clamp to 0 bytes"},
		{"send:short=12x", "trailing garbage \"x\" after the number in "
				   "\"short=12x\""},
		{"send:short=99999999999999999999", "value out of range"},
		{"send:errno", "missing value in \"errno\""},
		{"send:errno=EFOO", "unknown errno name \"EFOO\" (a name such as"},
		{"send:errno=epipe", "unknown errno name \"epipe\" (did you mean EPIPE?"},
		{"send:errno=ECONRESET", "(did you mean ECONNRESET? a name such as EAGAIN"},
		{"send:errno=EPIPEE", "(did you mean EPIPE?"},
		{"send:errno=0", "\"errno=0\": 0 is not an errno"},
		{"send:errno=-1", "negative value in \"errno=-1\""},
		{"send:errno=4096", "value out of range in \"errno=4096\""},
		{"send:errno=32a", "trailing garbage \"a\""},
		{"send:signal", "missing value in \"signal\""},
		{"send:signal=SIGFOO", "unknown signal name \"SIGFOO\""},
		{"send:signal=0", "0 is not a signal"},
		{"send:signal=-15", "negative value in \"signal=-15\""},
		{"send:signal=99", "value out of range in \"signal=99\""},
		{"send:zero=1", "\"zero=1\": zero takes no value"},
		{"send:zero,foo=1", "unknown key \"foo\""},
		{"send:zero,after=1,after=2", "duplicate key \"after\""},
		{"send:zero,fd=1,repeat=2,fd=3", "duplicate key \"fd\""},
		{"send:zero,repeat=0",
		 "\"repeat=0\": a rule that fires 0 times"},
		{"send:zero,repeat=-1", "negative value in \"repeat=-1\""},
		{"send:zero,repeat=never",
		 "non-numeric value in \"repeat=never\""},
		{"send:zero,repeat", "missing value in \"repeat\""},
		{"send:zero,fd=-1", "negative value in \"fd=-1\""},
		{"send:zero,fd=abc", "non-numeric value in \"fd=abc\""},
		{"send:zero,fd=99999999999", "value out of range in \"fd="},
		{"send:zero,after", "missing value in \"after\""},
		{"send:zero,after=", "missing value in \"after=\""},
		{"send:zero,after=3;recv:zero",
		 "trailing garbage \";recv:zero\""},
		{"send:zero,", "empty option (a stray ',')"},
		{"send:zero,,after=1", "empty option"},
		{"send:zero,errno=EPIPE", "second action \"errno=EPIPE\""},
		{"close:short=5",
		 "action short does not apply to target close"},
		{"accept:zero", "action zero does not apply to target accept"},
	};
	char err[512], quoted[256];
	struct fi_rule r, untouched;

	(void)state;
	memset(&untouched, 0x5a, sizeof(untouched));
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		r = untouched;
		snprintf(quoted, sizeof(quoted), "spec \"%s\": ",
			 cases[i].spec);
		if (fi_rule_parse(cases[i].spec, &r, err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("\"%s\" parsed", cases[i].spec);
		if (strncmp(err, quoted, strlen(quoted)) != 0 ||
		    strstr(err, cases[i].what) == NULL)
			fail_msg("\"%s\": got [%s], want [%s%s...]",
				 cases[i].spec, err, quoted, cases[i].what);
		assert_memory_equal(&r, &untouched, sizeof(r));
	}
}

static void test_parse_error_buffer(void **state)
{
	char small[8];
	struct fi_rule r;

	(void)state;
	memset(small, 'x', sizeof(small));
	assert_int_equal(fi_rule_parse("bogus", &r, small, sizeof(small)),
			 -EINVAL);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(fi_rule_parse("bogus", &r, NULL, 0), -EINVAL);
	assert_int_equal(fi_rule_parse(NULL, &r, NULL, 0), -EINVAL);
}

static void test_errno_names(void **state)
{
	static const char *const names[] = {
		"EAGAIN", "EPIPE", "ECONNRESET", "ENOBUFS", "EINTR",
		"ENOMEM", "EBADF", "EINVAL", "ENOTCONN", "ETIMEDOUT",
		"ECONNREFUSED", "EMSGSIZE", "EIO", "EACCES", "EPERM",
		"ENOSPC", "EHOSTUNREACH", "ENETDOWN", "ENETUNREACH",
		"ECONNABORTED", "EADDRINUSE",
	};

	(void)state;
	for (size_t i = 0; i < COUNT_OF(names); i++) {
		int e = fi_errno_parse(names[i]);

		if (e <= 0)
			fail_msg("%s not known", names[i]);
		assert_string_equal(fi_errno_name(e), names[i]);
	}
	assert_int_equal(fi_errno_parse("EPIPE"), EPIPE);
	assert_int_equal(fi_errno_parse("EWOULDBLOCK"), EWOULDBLOCK);
	assert_int_equal(fi_errno_parse("32"), 32);
	assert_int_equal(fi_errno_parse("0"), -1);
	assert_int_equal(fi_errno_parse("4096"), -1);
	assert_int_equal(fi_errno_parse("EFOO"), -1);
	assert_int_equal(fi_errno_parse(""), -1);
	assert_int_equal(fi_errno_parse(NULL), -1);
	assert_null(fi_errno_name(0));
	assert_null(fi_errno_name(4000));
}

static void test_signal_names(void **state)
{
	static const char *const names[] = {
		"HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE",
		"KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM",
		"CHLD", "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG",
		"XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "SYS",
	};
	char full[32];

	(void)state;
	for (size_t i = 0; i < COUNT_OF(names); i++) {
		int s = fi_signal_parse(names[i]);

		snprintf(full, sizeof(full), "SIG%s", names[i]);
		if (s <= 0)
			fail_msg("%s not known", names[i]);
		assert_int_equal(fi_signal_parse(full), s);
		assert_string_equal(fi_signal_name(s), full);
	}
	assert_int_equal(fi_signal_parse("SIGTERM"), SIGTERM);
	assert_int_equal(fi_signal_parse("TERM"), SIGTERM);
	assert_int_equal(fi_signal_parse("15"), 15);
	assert_int_equal(fi_signal_parse("0"), -1);
	assert_int_equal(fi_signal_parse("SIG"), -1);
	assert_int_equal(fi_signal_parse("SIGFOO"), -1);
	assert_int_equal(fi_signal_parse("sigterm"), -1);
	assert_int_equal(fi_signal_parse(NULL), -1);
	assert_null(fi_signal_name(0));
}

static void assert_rules_equal(const struct fi_rule *x, const struct fi_rule *y)
{
	assert_string_equal(x->target, y->target);
	assert_int_equal(x->sys_mask, y->sys_mask);
	assert_int_equal(x->action, y->action);
	assert_int_equal(x->param, y->param);
	assert_int_equal(x->after, y->after);
	assert_int_equal(x->repeat, y->repeat);
	assert_int_equal(x->fd, y->fd);
	assert_int_equal(x->any_fd, y->any_fd);
}

static void test_format_round_trip(void **state)
{
	static const struct {
		const char *in;
		const char *canonical;
	} cases[] = {
		{"send:errno=32", "send:errno=EPIPE"},
		{"send:errno=EWOULDBLOCK", "send:errno=EAGAIN"},
		{"send:errno=200", "send:errno=200"},
		{"write:short=10,fd=3,repeat=2,after=1",
		 "write:short=10,after=1,repeat=2,fd=3"},
		{"recv:zero,repeat=1,after=0", "recv:zero"},
		{"all:signal=TERM,repeat=forever",
		 "all:signal=SIGTERM,repeat=forever"},
		{"send:signal=40", "send:signal=40"},
		{"syswrite:errno=EAGAIN,fd=0", "syswrite:errno=EAGAIN,fd=0"},
		{"epoll_wait:short=1", "epoll_wait:short=1"},
		{"sysread:short=3,after=18446744073709551615",
		 "sysread:short=3,after=18446744073709551615"},
		{"write:short=3,fds=any", "write:short=3,fds=any"},
		{"write:short=3,fds=sockets", "write:short=3"},
		/* fd=N aims at that fd whatever it is: fds= says nothing more. */
		{"write:short=3,fds=any,fd=4", "write:short=3,fd=4"},
	};
	struct fi_rule r, back;
	char buf[128], err[256];

	(void)state;
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		if (fi_rule_parse(cases[i].in, &r, err, sizeof(err)) != 0)
			fail_msg("%s: %s", cases[i].in, err);
		assert_int_equal(fi_rule_format(&r, buf, sizeof(buf)),
				 strlen(cases[i].canonical));
		assert_string_equal(buf, cases[i].canonical);
		if (fi_rule_parse(buf, &back, err, sizeof(err)) != 0)
			fail_msg("%s: %s", buf, err);
		assert_rules_equal(&r, &back);
	}
	/* Like snprintf, a short buffer gets a prefix and the full length. */
	assert_int_equal(
		fi_rule_parse("send:errno=EPIPE", &r, err, sizeof(err)), 0);
	assert_int_equal(fi_rule_format(&r, buf, 5), 16);
	assert_string_equal(buf, "send");
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_targets),
		cmocka_unit_test(test_parse_actions),
		cmocka_unit_test(test_parse_options),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_error_buffer),
		cmocka_unit_test(test_errno_names),
		cmocka_unit_test(test_signal_names),
		cmocka_unit_test(test_format_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
