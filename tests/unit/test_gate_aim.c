/*
 * test_gate_aim.c: faults aimed at a connection and at a byte of its stream
 * (the rule keys conn=C and byte=N, faultinject/fi.h), with cmocka.
 *
 * The connections are real: a listening unix socket, connect() and
 * accept() through the gate, so that the gate numbers them as it numbers
 * a subject's. Every test starts from a disarmed gate, zeroed counters and
 * a fresh socketpair (a_fd, b_fd), which is no connection of the gate's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fi.h"

#include "gate_fixture.h"

/* ---- the parser ---------------------------------------------------------- */

static void test_parse_conn_byte(void **state)
{
	static const struct {
		const char *spec;
		int conn;
		long byte;
		const char *canonical;
	} cases[] = {
		{"send:zero", -1, -1, "send:zero"},
		{"send:zero,conn=0", 0, -1, "send:zero,conn=0"},
		{"write:errno=EPIPE,conn=3,byte=4096", 3, 4096,
		 "write:errno=EPIPE,conn=3,byte=4096"},
		{"write:errno=32,byte=0,conn=1,after=2", 1, 0,
		 "write:errno=EPIPE,after=2,conn=1,byte=0"},
		{"read:zero,byte=7", -1, 7, "read:zero,byte=7"},
		{"all:signal=SIGURG,byte=1", -1, 1, "all:signal=SIGURG,byte=1"},
		{"close:errno=EIO,conn=2", 2, -1, "close:errno=EIO,conn=2"},
		{"writev:short=1,fd=9,conn=0", 0, -1,
		 "writev:short=1,fd=9,conn=0"},
	};
	char err[256], buf[128];
	struct fi_rule r, back;

	(void)state;
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		if (fi_rule_parse(cases[i].spec, &r, err, sizeof(err)) != 0)
			fail_msg("%s: %s", cases[i].spec, err);
		assert_int_equal(r.conn, cases[i].conn);
		assert_int_equal(r.byte, cases[i].byte);
		assert_true(fi_rule_format(&r, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, cases[i].canonical);
		if (fi_rule_parse(buf, &back, err, sizeof(err)) != 0)
			fail_msg("%s: %s", buf, err);
		assert_int_equal(back.conn, r.conn);
		assert_int_equal(back.byte, r.byte);
	}
}

static void test_parse_conn_byte_errors(void **state)
{
	static const struct {
		const char *spec;
		const char *what;
	} cases[] = {
		{"send:zero,conn=", "missing value in \"conn=\""},
		{"send:zero,conn", "missing value in \"conn\""},
		{"send:zero,conn=-1", "negative value in \"conn=-1\""},
		{"send:zero,conn=x", "non-numeric value in \"conn=x\""},
		{"send:zero,conn=99999999999", "value out of range in \"conn="},
		{"send:zero,conn=1,conn=2", "duplicate key \"conn\""},
		{"send:zero,byte=", "missing value in \"byte=\""},
		{"send:zero,byte=-5", "negative value in \"byte=-5\""},
		{"send:zero,byte=1k", "trailing garbage \"k\""},
		{"send:zero,byte=99999999999999999999",
		 "value out of range in \"byte="},
		{"send:zero,byte=1,byte=2", "duplicate key \"byte\""},
		{"close:errno=EIO,byte=3",
		 "byte=3: target close carries no bytes"},
		{"epoll_wait:short=1,byte=0",
		 "target epoll_wait carries no bytes"},
		{"send:zero,bytes=1", "unknown key \"bytes\" (expected after=K, "
				      "repeat=N|forever, fd=N, fds=any, conn=C "
				      "or byte=N)"},
		{"send:conn=1", "missing action: \"conn=1\" is an option"},
		{"send:byte=1", "missing action: \"byte=1\" is an option"},
	};
	char err[512], quoted[256];
	struct fi_rule r;

	(void)state;
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		snprintf(quoted, sizeof(quoted), "spec \"%s\": ",
			 cases[i].spec);
		if (fi_rule_parse(cases[i].spec, &r, err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("\"%s\" parsed", cases[i].spec);
		if (strncmp(err, quoted, strlen(quoted)) != 0 ||
		    strstr(err, cases[i].what) == NULL)
			fail_msg("\"%s\": got [%s], want [%s%s...]",
				 cases[i].spec, err, quoted, cases[i].what);
	}
}

/* The longest canonical spec fits FI_SPEC_MAX, which the harness's and
 * the preload's buffers of specs are. */
static void test_longest_spec_fits(void **state)
{
	/* Every option at its largest; epoll_wait is the longest target name,
	 * but carries no bytes, so its spec is 2 characters longer than the
	 * longest that parses (syswrite's). */
	static const char *longest =
		"epoll_wait:short=9223372036854775807,after=18446744073709551615,"
		"repeat=9223372036854775807,fd=2147483647,conn=2147483647,"
		"byte=9223372036854775807";
	char err[256], buf[FI_SPEC_MAX];
	struct fi_rule r;
	int n;

	(void)state;
	assert_true(strlen(longest) < FI_SPEC_MAX);
	if (fi_rule_parse("syswrite:short=9223372036854775807,"
			  "after=18446744073709551615,repeat=9223372036854775807,"
			  "fd=2147483647,conn=2147483647,byte=9223372036854775807",
			  &r, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	n = fi_rule_format(&r, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(longest) - 2);
}

/* fi_arm checks what the parser checks, for rules made by hand. */
static void test_arm_refuses_bad_aim(void **state)
{
	struct fi_rule r, bad;
	char err[256];

	(void)state;
	assert_int_equal(fi_rule_parse("send:zero,conn=1,byte=2", &r, err,
				       sizeof(err)),
			 0);
	bad = r;
	bad.conn = -2;
	assert_int_equal(fi_arm(&bad), -EINVAL);
	bad = r;
	bad.byte = -2;
	assert_int_equal(fi_arm(&bad), -EINVAL);
	assert_int_equal(fi_rule_parse("close:errno=EIO", &bad, err,
				       sizeof(err)),
			 0);
	bad.byte = 0;
	assert_int_equal(fi_arm(&bad), -EINVAL);
	assert_int_equal(fi_rule_count(), 0);
}

/* ---- connections ---------------------------------------------------------- */

/* A listening unix socket under an abstract name unique to this process. */
static int listen_unix(struct sockaddr_un *sa, socklen_t *len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		 "wirecheck-test-gate-aim-%d", (int)getpid());
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   strlen(sa->sun_path + 1));
	assert_int_equal(bind(fd, (struct sockaddr *)sa, *len), 0);
	assert_int_equal(listen(fd, 8), 0);
	return fd;
}

/* Connects a new socket through the gate; returns it. */
static int connect_one(const struct sockaddr_un *sa, socklen_t len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(fi_connect(fd, (const struct sockaddr *)sa, len), 0);
	return fd;
}

/*
 * The gate numbers connections in the order they open, connect or accept,
 * armed or not; a rule with conn=C changes only connection C's calls, and
 * a closed fd is no connection any more.
 */
static void test_conn_numbers(void **state)
{
	struct sockaddr_un sa;
	socklen_t len;
	int l = listen_unix(&sa, &len);
	int c[2], s[2], base;
	char buf[16], spec[64];

	(void)state;
	/* Disarmed: the numbers are given all the same. */
	c[0] = connect_one(&sa, len);
	base = fi_fd_conn(c[0]);
	assert_true(base >= 0);
	s[0] = fi_accept(l, NULL, NULL, 0);
	assert_true(s[0] >= 0);
	assert_int_equal(fi_fd_conn(s[0]), base + 1);
	arm("send:errno=EPIPE,repeat=forever,conn=999");
	snprintf(spec, sizeof(spec), "send:errno=ECONNRESET,conn=%d", base + 2);
	arm(spec);
	c[1] = connect_one(&sa, len);
	assert_int_equal(fi_fd_conn(c[1]), base + 2);
	s[1] = fi_accept(l, NULL, NULL, 0);
	assert_int_equal(fi_fd_conn(s[1]), base + 3);
	/* The socketpair is no connection of the gate's. */
	assert_int_equal(fi_fd_conn(a_fd), -1);
	assert_int_equal(fi_fd_conn(-1), -1);
	assert_int_equal(fi_fd_conn(FI_MAX_FD), -1);
	/* Only connection base+2 is refused, once. */
	assert_int_equal(fi_send(c[0], "x", 1, MSG_NOSIGNAL), 1);
	assert_int_equal(fi_send(s[0], "x", 1, MSG_NOSIGNAL), 1);
	assert_int_equal(fi_send(a_fd, "x", 1, MSG_NOSIGNAL), 1);
	assert_int_equal(fi_send(c[1], "x", 1, MSG_NOSIGNAL), -ECONNRESET);
	assert_int_equal(fi_send(c[1], "x", 1, MSG_NOSIGNAL), 1);
	assert_int_equal(fi_counters()->fired_total, 1);
	assert_int_equal(fi_counters()->fired[0].conn, base + 2);
	assert_int_equal(fi_counters()->fired[0].fd, c[1]);
	assert_int_equal(fi_rule_get(1)->seen, 2);
	assert_int_equal(recv(s[1], buf, sizeof(buf), 0), 1);
	/* Closed through the gate, the number is gone with the fd. */
	assert_int_equal(fi_close(c[1]), 0);
	assert_int_equal(fi_fd_conn(c[1]), -1);
	fi_disarm_all();
	assert_int_equal(fi_close(c[0]), 0);
	assert_int_equal(fi_close(s[0]), 0);
	assert_int_equal(fi_close(s[1]), 0);
	assert_int_equal(close(l), 0);
}

/* A failed connect opens no connection: the next one gets the number. */
static void test_conn_failed_connect(void **state)
{
	struct sockaddr_un sa;
	socklen_t len;
	int l = listen_unix(&sa, &len), fd, before, c;

	(void)state;
	c = connect_one(&sa, len);
	before = fi_fd_conn(c);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	arm("connect:errno=ECONNREFUSED");
	assert_int_equal(fi_connect(fd, (const struct sockaddr *)&sa, len),
			 -ECONNREFUSED);
	assert_int_equal(fi_fd_conn(fd), -1);
	assert_int_equal(fi_connect(fd, (const struct sockaddr *)&sa, len), 0);
	assert_int_equal(fi_fd_conn(fd), before + 1);
	fi_disarm_all();
	assert_int_equal(fi_close(fd), 0);
	assert_int_equal(fi_close(c), 0);
	assert_int_equal(close(l), 0);
}

/* ---- bytes ------------------------------------------------------------------ */

/*
 * byte=N fires on the call whose bytes [off, off + len) hold N, whatever
 * the calls' sizes: sends of 4 bytes meet byte 10 at their third call
 * (bytes 8..11), sends of 3 at their fourth (9..11).
 */
static void test_byte_whatever_the_calls(void **state)
{
	static const size_t sizes[] = {4, 3, 1};
	static const int want_call[] = {3, 4, 11};
	char buf[64];

	(void)state;
	for (size_t s = 0; s < COUNT_OF(sizes); s++) {
		int fired_at = 0;

		fi_disarm_all();
		fi_counters_reset();
		/* A fresh stream: the pair's fds start again from byte 0. */
		fi_fd_forget(a_fd);
		arm("send:errno=EPIPE,byte=10");
		for (int call = 1; call <= 12; call++) {
			ssize_t r = fi_send(a_fd, "abcd", sizes[s],
					    MSG_NOSIGNAL);

			if (r == -EPIPE) {
				assert_int_equal(fired_at, 0);
				fired_at = call;
			} else {
				assert_int_equal(r, (ssize_t)sizes[s]);
			}
		}
		assert_int_equal(fired_at, want_call[s]);
		assert_int_equal(fi_counters()->fired_total, 1);
		assert_true(fi_counters()->fired[0].offset <= 10);
		assert_true(fi_counters()->fired[0].offset +
				    fi_counters()->fired[0].length >
			    10);
		assert_int_equal(fi_counters()->fired[0].length, sizes[s]);
		assert_int_equal(fi_counters()->fired[0].conn, -1);
		while (recv(b_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
			;
	}
}

/* writev's bytes are its vector's total; a clamp at byte N cuts the call
 * that carries it; a refused call carries nothing, so its retry is again
 * the call that carries N (after=1 is that retry). */
static void test_byte_writev_and_retry(void **state)
{
	struct iovec iov[2] = {{"abc", 3}, {"defgh", 5}};
	char buf[64];

	(void)state;
	arm("writev:short=2,byte=12");
	arm("writev:errno=EAGAIN,after=1,byte=20");
	assert_int_equal(fi_writev(a_fd, iov, 2), 8);  /* 0..7 */
	assert_int_equal(fi_writev(a_fd, iov, 2), 2);  /* 8..15 holds 12 */
	assert_int_equal(fi_writev(a_fd, iov, 2), 8);  /* 10..17 */
	/* 18..25 holds 20: the first such call passes (after=1), its bytes
	 * go; the next call starts at 26. */
	assert_int_equal(fi_writev(a_fd, iov, 2), 8);
	assert_int_equal(fi_writev(a_fd, iov, 2), 8);
	assert_int_equal(fi_rule_get(1)->fired, 0);
	assert_int_equal(recv(b_fd, buf, sizeof(buf), 0), 34);
	fi_disarm_all();
	fi_fd_forget(a_fd);
	arm("writev:errno=EAGAIN,after=1,byte=5");
	assert_int_equal(fi_writev(a_fd, iov, 2), 8); /* seen 1: let through */
	fi_fd_forget(a_fd);
	assert_int_equal(fi_writev(a_fd, iov, 2), -EAGAIN);
	assert_int_equal(fi_writev(a_fd, iov, 2), 8);
	assert_int_equal(fi_counters()->fired[fi_counters()->fired_total - 1]
				 .length,
			 8);
}

/* Reading calls are aimed at the bytes read. */
static void test_byte_read(void **state)
{
	char buf[64];

	(void)state;
	arm("recv:zero,byte=5");
	assert_int_equal(send(b_fd, "0123456789", 10, 0), 10);
	assert_int_equal(fi_recv(a_fd, buf, 4, 0), 4);  /* 0..3 */
	assert_int_equal(fi_recv(a_fd, buf, 4, 0), 0);  /* 4..7 holds 5 */
	assert_int_equal(fi_recv(a_fd, buf, 4, 0), 4);
	assert_int_equal(fi_recv(a_fd, buf, 4, 0), 2);
	assert_int_equal(fi_rule_get(0)->fired, 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_parse_conn_byte),
		T(test_parse_conn_byte_errors),
		T(test_arm_refuses_bad_aim),
		T(test_longest_spec_fits),
		T(test_conn_numbers),
		T(test_conn_failed_connect),
		T(test_byte_whatever_the_calls),
		T(test_byte_writev_and_retry),
		T(test_byte_read),
	};
#undef T
	if (fi_init() != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
