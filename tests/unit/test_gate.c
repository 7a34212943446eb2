/*
 * test_gate.c: the fault gate (faultinject/fi.h), with cmocka: arming,
 * counters, disarming, fiu-ctrl, aiming at sockets and the fired log. The
 * rule parser's tests are test_gate_parse.c's.
 *
 * Rules are checked against real sockets: a clamp is only a clamp if the
 * peer receives exactly the clamped bytes, and an injected errno only if the
 * peer receives nothing. Every test starts from a disarmed gate with zeroed
 * counters and a fresh non-blocking socketpair (a_fd, b_fd).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define FIU_ENABLE 1
#include <fiu-control.h>
#include <fiu.h>

#include "fi.h"

#include "gate_fixture.h"

static int armf(const char *fmt, int fd)
{
	char spec[128];

	assert_true(snprintf(spec, sizeof(spec), fmt, fd) < (int)sizeof(spec));
	return arm(spec);
}

/* ------------------------------------------------------------------------ */
/* Arming.                                                                  */

static void test_arm_validation(void **state)
{
	struct fi_rule r, bad;
	char err[256];

	(void)state;
	assert_int_equal(
		fi_rule_parse("send:errno=EPIPE", &r, err, sizeof(err)), 0);
	bad = r;
	bad.sys_mask = FI_GROUP_WRITE;
	assert_int_equal(fi_arm(&bad), -EINVAL);
	bad = r;
	strcpy(bad.target, "nope");
	assert_int_equal(fi_arm(&bad), -EINVAL);
	bad = r;
	memset(bad.target, 'x', sizeof(bad.target));
	assert_int_equal(fi_arm(&bad), -EINVAL);
	bad = r;
	bad.param = 0;
	assert_int_equal(fi_arm(&bad), -EINVAL);
	bad = r;
	bad.repeat = 0;
	assert_int_equal(fi_arm(&bad), -EINVAL);
	bad = r;
	bad.action = FI_ACT_COUNT;
	assert_int_equal(fi_arm(&bad), -EINVAL);
	assert_int_equal(fi_arm(NULL), -EINVAL);
	assert_int_equal(fi_rule_count(), 0);

	for (int i = 0; i < FI_MAX_RULES; i++)
		assert_int_equal(fi_arm(&r), i);
	assert_int_equal(fi_arm(&r), -ENOSPC);
	assert_int_equal(fi_rule_count(), FI_MAX_RULES);
	assert_non_null(fi_rule_get(FI_MAX_RULES - 1));
	assert_null(fi_rule_get(FI_MAX_RULES));
	assert_null(fi_rule_get(-1));
}

/* Sends one byte from a_fd and returns the wrapper's result. */
static ssize_t send1(void)
{
	return fi_send(a_fd, "x", 1, MSG_NOSIGNAL);
}

static void test_after_repeat_fd(void **state)
{
	static const ssize_t want[] = {1, 1, -EPIPE, -EPIPE, 1};
	const struct fi_rule *rule;
	char buf[16];

	(void)state;
	armf("send:errno=EPIPE,after=2,repeat=2,fd=%d", a_fd);
	/* Calls on another fd are not matching calls: they count nothing. */
	assert_int_equal(fi_send(b_fd, "y", 1, MSG_NOSIGNAL), 1);
	for (size_t i = 0; i < COUNT_OF(want); i++)
		assert_int_equal(send1(), want[i]);
	rule = fi_rule_get(0);
	assert_int_equal(rule->seen, 5);
	assert_int_equal(rule->fired, 2);
	assert_int_equal(drain(b_fd, buf, sizeof(buf)), 3);
	assert_int_equal(drain(a_fd, buf, sizeof(buf)), 1);
	assert_int_equal(fi_counters()->injected[FI_SEND], 2);
	assert_int_equal(fi_calls(fi_counters(), FI_SEND), 6);
}

static void test_repeat_forever(void **state)
{
	(void)state;
	arm("send:errno=ECONNRESET,after=1,repeat=forever");
	assert_int_equal(send1(), 1);
	for (int i = 0; i < 9; i++)
		assert_int_equal(send1(), -ECONNRESET);
	assert_int_equal(fi_rule_get(0)->fired, 9);
	assert_int_equal(fi_rule_get(0)->seen, 10);
}

static void test_short_send(void **state)
{
	char out[100], in[200];

	(void)state;
	memset(out, 'a', sizeof(out));
	arm("send:short=7");
	assert_int_equal(fi_send(a_fd, out, sizeof(out), MSG_NOSIGNAL), 7);
	/* A true short send: the peer has exactly 7 bytes, no more. */
	assert_int_equal(drain(b_fd, in, sizeof(in)), 7);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 0);
	/* repeat=1: the next send is whole. */
	assert_int_equal(fi_send(a_fd, out, sizeof(out), MSG_NOSIGNAL), 100);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 100);
	assert_int_equal(fi_counters()->injected[FI_SEND], 1);
}

static void test_short_not_needed(void **state)
{
	char in[16];

	(void)state;
	/* A clamp larger than the call fires but changes nothing. */
	arm("send:short=50");
	assert_int_equal(fi_send(a_fd, "hello", 5, MSG_NOSIGNAL), 5);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 5);
	assert_int_equal(fi_rule_get(0)->fired, 1);
	assert_int_equal(fi_counters()->injected[FI_SEND], 0);
}

/* Three iovecs of "abc", "defgh", "ij" and a copy to compare them with. */
struct vec3 {
	char s1[4], s2[6], s3[3];
	struct iovec iov[3], saved[3];
};

static void vec3_init(struct vec3 *v)
{
	memcpy(v->s1, "abc", 4);
	memcpy(v->s2, "defgh", 6);
	memcpy(v->s3, "ij", 3);
	v->iov[0] = (struct iovec){v->s1, 3};
	v->iov[1] = (struct iovec){v->s2, 5};
	v->iov[2] = (struct iovec){v->s3, 2};
	memcpy(v->saved, v->iov, sizeof(v->iov));
}

static void test_short_writev(void **state)
{
	static const struct {
		const char *spec;
		const char *want;
	} cases[] = {
		{"writev:short=5", "abcde"},
		{"writev:short=3", "abc"},
		{"writev:short=2", "ab"},
		{"writev:short=9", "abcdefghi"},
		{"write:short=8", "abcdefgh"},
		{"writev:short=10", "abcdefghij"},
	};
	struct vec3 v;
	char in[32];
	size_t n;

	(void)state;
	for (size_t i = 0; i < COUNT_OF(cases); i++) {
		fi_disarm_all();
		vec3_init(&v);
		arm(cases[i].spec);
		n = strlen(cases[i].want);
		assert_int_equal(fi_writev(a_fd, v.iov, 3), n);
		assert_int_equal(drain(b_fd, in, sizeof(in)), n);
		assert_memory_equal(in, cases[i].want, n);
		/* The caller's vector is untouched. */
		assert_memory_equal(v.iov, v.saved, sizeof(v.iov));
	}
}

static void test_short_sendmsg(void **state)
{
	struct vec3 v;
	struct msghdr msg = {0}, saved;
	char in[32];

	(void)state;
	vec3_init(&v);
	msg.msg_iov = v.iov;
	msg.msg_iovlen = 3;
	saved = msg;
	arm("sendmsg:short=4");
	assert_int_equal(fi_sendmsg(a_fd, &msg, MSG_NOSIGNAL), 4);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 4);
	assert_memory_equal(in, "abcd", 4);
	assert_memory_equal(&msg, &saved, sizeof(msg));
	assert_memory_equal(v.iov, v.saved, sizeof(v.iov));
}

static void test_short_read(void **state)
{
	char in[64];

	(void)state;
	assert_int_equal(send(b_fd, "0123456789", 10, 0), 10);
	arm("read:short=3");
	arm("sysread:short=2");
	assert_int_equal(fi_recv(a_fd, in, sizeof(in), 0), 3);
	assert_memory_equal(in, "012", 3);
	assert_int_equal(fi_read(a_fd, in, sizeof(in)), 2);
	assert_memory_equal(in, "34", 2);
	assert_int_equal(fi_recv(a_fd, in, sizeof(in), 0), 5);
}

static void test_errno_sends_nothing(void **state)
{
	char in[16];

	(void)state;
	arm("send:errno=ECONNRESET");
	assert_int_equal(fi_send(a_fd, "hello", 5, MSG_NOSIGNAL), -ECONNRESET);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 0);
	assert_int_equal(fi_counters()->injected[FI_SEND], 1);
	assert_int_equal(fi_calls(fi_counters(), FI_SEND), 1);
	assert_int_equal(fi_counters()->wouldblock[FI_SEND], 0);
}

static void test_zero(void **state)
{
	char in[16];

	(void)state;
	assert_int_equal(send(b_fd, "abc", 3, 0), 3);
	arm("recv:zero");
	assert_int_equal(fi_recv(a_fd, in, sizeof(in), 0), 0);
	/* The kernel was not called: the bytes are still waiting. */
	assert_int_equal(fi_recv(a_fd, in, sizeof(in), 0), 3);
	arm("send:zero");
	assert_int_equal(send1(), 0);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 0);
	assert_int_equal(fi_counters()->injected[FI_RECV], 1);
	assert_int_equal(fi_counters()->injected[FI_SEND], 1);
}

static volatile sig_atomic_t usr1_count;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

static void usr1_catch(struct sigaction *old)
{
	struct sigaction sa = {0};

	sa.sa_handler = on_usr1;
	assert_int_equal(sigemptyset(&sa.sa_mask), 0);
	assert_int_equal(sigaction(SIGUSR1, &sa, old), 0);
	usr1_count = 0;
}

static void test_signal(void **state)
{
	struct sigaction old;
	char in[16];

	(void)state;
	usr1_catch(&old);
	arm("send:signal=USR1");
	assert_int_equal(send1(), 1);
	assert_int_equal(usr1_count, 1);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 1);
	assert_int_equal(send1(), 1);
	assert_int_equal(usr1_count, 1);
	assert_int_equal(fi_counters()->injected[FI_SEND], 1);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
}

static void test_several_rules(void **state)
{
	struct sigaction old;
	struct iovec iov = {"zz", 2};
	char in[16];

	(void)state;
	usr1_catch(&old);
	arm("send:signal=USR1");
	arm("send:short=2");
	arm("recv:errno=EINTR");
	arm("writev:errno=EPIPE");
	/* Two actions on one call: the signal, then the clamped send. */
	assert_int_equal(fi_send(a_fd, "hello", 5, MSG_NOSIGNAL), 2);
	assert_int_equal(usr1_count, 1);
	assert_int_equal(fi_recv(b_fd, in, sizeof(in), 0), -EINTR);
	assert_int_equal(fi_recv(b_fd, in, sizeof(in), 0), 2);
	assert_memory_equal(in, "he", 2);
	assert_int_equal(fi_writev(a_fd, &iov, 1), -EPIPE);
	assert_int_equal(fi_writev(a_fd, &iov, 1), 2);
	assert_int_equal(fi_counters()->injected[FI_SEND], 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fi_rule_get(i)->fired, 1);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
}

static void test_shared_failpoint(void **state)
{
	static const ssize_t want[] = {1, -EPIPE, 1, -ECONNRESET, 1};

	(void)state;
	arm("send:errno=EPIPE,after=1");
	arm("send:errno=ECONNRESET,after=3");
	for (size_t i = 0; i < COUNT_OF(want); i++)
		assert_int_equal(send1(), want[i]);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fi_rule_get(i)->seen, 5);
		assert_int_equal(fi_rule_get(i)->fired, 1);
	}
}

static void test_shared_failpoint_same_call(void **state)
{
	(void)state;
	/* Both are due on the first call, which takes one errno: the first
	 * rule fires, the second fires on the next call instead. */
	arm("send:errno=EPIPE");
	arm("send:errno=ECONNRESET");
	assert_int_equal(send1(), -EPIPE);
	assert_int_equal(send1(), -ECONNRESET);
	assert_int_equal(send1(), 1);
	assert_int_equal(fi_rule_get(0)->fired, 1);
	assert_int_equal(fi_rule_get(1)->fired, 1);
	assert_int_equal(fi_rule_get(1)->seen, 3);
}

static void test_groups(void **state)
{
	struct iovec iov = {"a", 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	char in[16];

	(void)state;
	arm("write:errno=EPIPE,repeat=forever");
	assert_int_equal(send1(), -EPIPE);
	assert_int_equal(fi_sendto(a_fd, "a", 1, MSG_NOSIGNAL, NULL, 0),
			 -EPIPE);
	assert_int_equal(fi_sendmsg(a_fd, &msg, MSG_NOSIGNAL), -EPIPE);
	assert_int_equal(fi_write(a_fd, "a", 1), -EPIPE);
	assert_int_equal(fi_writev(a_fd, &iov, 1), -EPIPE);
	assert_int_equal(fi_recv(b_fd, in, sizeof(in), 0), -EAGAIN);
	assert_int_equal(fi_counters()->wouldblock[FI_RECV], 1);
	assert_int_equal(fi_rule_get(0)->fired, 5);

	fi_disarm_all();
	arm("syswrite:errno=EIO");
	assert_int_equal(send1(), 1);
	assert_int_equal(fi_write(a_fd, "a", 1), -EIO);

	fi_disarm_all();
	arm("all:errno=EBADF");
	assert_int_equal(fi_shutdown(a_fd, SHUT_WR), -EBADF);
	assert_int_equal(fi_shutdown(a_fd, SHUT_WR), 0);
}

static void test_own_name_before_group(void **state)
{
	(void)state;
	arm("write:errno=EPIPE");
	arm("send:errno=ECONNRESET");
	assert_int_equal(send1(), -ECONNRESET);
	assert_int_equal(fi_rule_get(0)->seen, 1);
	assert_int_equal(fi_rule_get(0)->fired, 0);
	assert_int_equal(send1(), -EPIPE);
	assert_int_equal(send1(), 1);
}

static void test_epoll_wait_short(void **state)
{
	struct epoll_event ev = {.events = EPOLLOUT}, evs[8];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	(void)state;
	assert_true(ep >= 0);
	ev.data.fd = a_fd;
	assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_ADD, a_fd, &ev), 0);
	ev.data.fd = b_fd;
	assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_ADD, b_fd, &ev), 0);
	arm("epoll_wait:short=1");
	assert_int_equal(fi_epoll_wait(ep, evs, 8, 0), 1);
	assert_int_equal(fi_epoll_wait(ep, evs, 8, 0), 2);
	arm("epoll_wait:zero");
	assert_int_equal(fi_epoll_wait(ep, evs, 8, 0), 0);
	assert_int_equal(fi_close(ep), 0);
}

/* A failpoint that fi_arm did not enable is not asked about: the gate keeps
 * a mask of its own failpoints, so an unrelated rule costs a call nothing. */
static void test_only_enabled_failpoints_asked(void **state)
{
	(void)state;
	arm("recv:errno=EPIPE");
	assert_int_equal(fiu_enable("wirecheck/send/errno", 1,
				    (void *)(intptr_t)ECONNRESET, 0), 0);
	assert_int_not_equal(fiu_fail("wirecheck/send/errno"), 0);
	assert_int_equal(send1(), 1);
	assert_int_equal(fiu_disable("wirecheck/send/errno"), 0);
}

static int failinfo_cb(const char *name, int *failnum, void **failinfo,
		       unsigned *flags)
{
	(void)name;
	(void)failnum;
	(void)flags;
	*failinfo = (void *)(intptr_t)42;
	return 1;
}

/* The gate relies on it: in libfiu 1.1, fiu_failinfo() returns the failinfo
 * that an external callback set, not the one given at enable time. */
static void test_libfiu_external_failinfo(void **state)
{
	(void)state;
	assert_int_equal(fiu_init(0), 0);
	assert_int_equal(fiu_enable_external("wirecheck-test/failinfo", 1,
					     (void *)(intptr_t)7, 0,
					     failinfo_cb),
			 0);
	assert_int_not_equal(fiu_fail("wirecheck-test/failinfo"), 0);
	assert_int_equal((intptr_t)fiu_failinfo(), 42);
	assert_int_equal(fiu_disable("wirecheck-test/failinfo"), 0);
}

/* ------------------------------------------------------------------------ */
/* Counters.                                                                */

static void test_counters_calls(void **state)
{
	struct fi_counters *c = fi_counters();
	char in[16];

	(void)state;
	assert_int_equal(send1(), 1);
	assert_int_equal(send1(), 1);
	assert_int_equal(fi_send(b_fd, "z", 1, MSG_NOSIGNAL), 1);
	assert_int_equal(fi_recv(b_fd, in, sizeof(in), 0), 2);
	/* A bad fd is counted as a call, and has no per-fd counter. */
	assert_int_equal(fi_send(-1, "z", 1, MSG_NOSIGNAL), -EBADF);
	assert_int_equal(fi_calls(c, FI_SEND), 4);
	assert_int_equal(fi_calls(c, FI_RECV), 1);
	assert_int_equal(c->fd_calls[FI_SEND][a_fd], 2);
	assert_int_equal(c->fd_calls[FI_SEND][b_fd], 1);
	assert_int_equal(c->fd_calls[FI_RECV][b_fd], 1);
	assert_int_equal(c->other_fd_calls[FI_SEND], 1);
	assert_int_equal(c->wouldblock[FI_SEND], 0);
	fi_counters_reset();
	assert_int_equal(fi_calls(c, FI_SEND), 0);
	assert_int_equal(c->fd_calls[FI_SEND][a_fd], 0);
}

static void test_counters_wouldblock(void **state)
{
	static char chunk[65536];
	ssize_t r;
	uint64_t sends = 0;

	(void)state;
	/* Fill the socket until the kernel refuses: exactly one EAGAIN. */
	do {
		r = fi_send(a_fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
		sends++;
		assert_true(r > 0 || r == -EAGAIN);
	} while (r > 0 && sends < 10000);
	assert_int_equal(r, -EAGAIN);
	assert_int_equal(fi_counters()->wouldblock[FI_SEND], 1);
	assert_int_equal(fi_calls(fi_counters(), FI_SEND), sends);
	assert_int_equal(fi_counters()->injected[FI_SEND], 0);
	/* An injected EAGAIN is injected, not a kernel wouldblock. */
	arm("send:errno=EAGAIN");
	assert_int_equal(send1(), -EAGAIN);
	assert_int_equal(fi_counters()->wouldblock[FI_SEND], 1);
	assert_int_equal(fi_counters()->injected[FI_SEND], 1);
}

static void test_counters_epoll_ctl(void **state)
{
	struct fi_counters *c = fi_counters();
	struct epoll_event ev = {.events = EPOLLIN}, evs[4];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	(void)state;
	assert_true(ep >= 0);
	assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_ADD, a_fd, &ev), 0);
	assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_MOD, a_fd, &ev), 0);
	assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_MOD, a_fd, &ev), 0);
	assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_DEL, a_fd, NULL), 0);
	assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_ADD, b_fd, &ev), 0);
	assert_int_equal(fi_epoll_ctl(ep, 99, b_fd, &ev), -EINVAL);
	assert_int_equal(fi_epoll_wait(ep, evs, 4, 0), 0);
	assert_int_equal(fi_calls(c, FI_EPOLL_CTL), 6);
	assert_int_equal(c->ctl_ops[EPOLL_CTL_ADD], 2);
	assert_int_equal(c->ctl_ops[EPOLL_CTL_MOD], 2);
	assert_int_equal(c->ctl_ops[EPOLL_CTL_DEL], 1);
	assert_int_equal(c->per_fd_ctl[a_fd][EPOLL_CTL_ADD], 1);
	assert_int_equal(c->per_fd_ctl[a_fd][EPOLL_CTL_MOD], 2);
	assert_int_equal(c->per_fd_ctl[a_fd][EPOLL_CTL_DEL], 1);
	assert_int_equal(c->per_fd_ctl[b_fd][EPOLL_CTL_ADD], 1);
	assert_int_equal(c->fd_calls[FI_EPOLL_CTL][a_fd], 4);
	assert_int_equal(c->fd_calls[FI_EPOLL_CTL][b_fd], 2);
	assert_int_equal(c->fd_calls[FI_EPOLL_WAIT][ep], 1);
	assert_int_equal(fi_close(ep), 0);
	assert_int_equal(fi_calls(c, FI_CLOSE), 1);
}

static void test_counters_attach(void **state)
{
	struct fi_counters *shared = calloc(1, sizeof(*shared));

	(void)state;
	assert_non_null(shared);
	fi_counters_attach(shared);
	assert_ptr_equal(fi_counters(), shared);
	assert_int_equal(send1(), 1);
	fi_counters_attach(NULL);
	assert_ptr_not_equal(fi_counters(), shared);
	assert_int_equal(fi_calls(shared, FI_SEND), 1);
	assert_int_equal(fi_calls(fi_counters(), FI_SEND), 0);
	free(shared);
}

/* ------------------------------------------------------------------------ */
/* Disarming and the environment.                                           */

static void test_disarm_all(void **state)
{
	(void)state;
	arm("send:errno=EPIPE,repeat=forever");
	arm("write:short=1");
	assert_int_equal(send1(), -EPIPE);
	fi_disarm_all();
	assert_int_equal(fi_rule_count(), 0);
	assert_null(fi_rule_get(0));
	assert_int_equal(send1(), 1);
	assert_int_equal(fiu_fail("wirecheck/send/errno"), 0);
	assert_int_equal(fiu_fail("wirecheck/write/short"), 0);
	/* Re-arming after a disarm starts from fresh state. */
	arm("send:errno=EPIPE");
	assert_int_equal(send1(), -EPIPE);
	assert_int_equal(send1(), 1);
}

/* Runs fi_init() with stderr captured into out. Returns fi_init's value. */
static int init_captured(char *out, size_t len)
{
	FILE *tmp = tmpfile();
	int saved, r;
	size_t n;

	assert_non_null(tmp);
	assert_int_equal(fflush(stderr), 0);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	r = fi_init();
	assert_int_equal(fflush(stderr), 0);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	assert_int_equal(close(saved), 0);
	rewind(tmp);
	n = fread(out, 1, len - 1, tmp);
	out[n] = '\0';
	assert_int_equal(fclose(tmp), 0);
	return r;
}

static void test_init_env(void **state)
{
	char out[1024];

	(void)state;
	assert_int_equal(setenv("WIRECHECK_FAULTS",
				" send:errno=EPIPE,after=1 ;recv:zero;;", 1),
			 0);
	assert_int_equal(init_captured(out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(fi_rule_count(), 2);
	assert_int_equal(fi_rule_get(0)->after, 1);
	assert_int_equal(send1(), 1);
	assert_int_equal(send1(), -EPIPE);
	assert_int_equal(fi_rule_get(1)->action, FI_ACT_ZERO);
	fi_disarm_all();

	assert_int_equal(setenv("WIRECHECK_FAULTS",
				"send:zero;bogus:zero,after=1", 1),
			 0);
	assert_int_equal(init_captured(out, sizeof(out)), -EINVAL);
	assert_non_null(strstr(out, "WIRECHECK_FAULTS"));
	assert_non_null(strstr(out, "spec \"bogus:zero,after=1\""));
	assert_non_null(strstr(out, "unknown target \"bogus\""));
	/* Nothing is armed from a variable with a bad spec. */
	assert_int_equal(fi_rule_count(), 0);

	assert_int_equal(setenv("WIRECHECK_FAULTS", "", 1), 0);
	assert_int_equal(init_captured(out, sizeof(out)), 0);
	assert_int_equal(fi_rule_count(), 0);
	assert_int_equal(unsetenv("WIRECHECK_FAULTS"), 0);
	assert_int_equal(init_captured(out, sizeof(out)), 0);
	assert_int_equal(fi_rule_count(), 0);
}

/* ------------------------------------------------------------------------ */
/* fiu-ctrl arms a failpoint in a running process.                          */

static int in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path != NULL && *path != '\0') {
		size_t n = strcspn(path, ":");

		if (snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog) <
			    (int)sizeof(buf) &&
		    access(buf, X_OK) == 0)
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

/* Reads exactly len bytes, or fails after a generous bound: a guard against
 * a hung child, not a synchronisation (the pipe is the synchronisation). */
static int read_full(int fd, void *buf, size_t len)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t got = 0;

	while (got < len) {
		ssize_t r;

		if (poll(&pfd, 1, 60000) != 1)
			return -1;
		r = read(fd, (char *)buf + got, len - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/*
 * The child: enables remote control, says so, then sends one byte each
 * time the parent writes 's', and reports the result. EOF on the command
 * pipe ends it. It runs as a fresh exec of this program, like a subject the
 * harness spawns: a fork alone would end with libfiu's remote control thread
 * still running, which valgrind reports as a possibly lost thread stack.
 */
static int remote_child(const char *base, int cmd_fd, int res_fd, int sock)
{
	long r = fi_remote_control(base);
	char cmd;

	if (write_full(res_fd, &r, sizeof(r)) != 0)
		return 2;
	while (read(cmd_fd, &cmd, 1) == 1 && cmd == 's') {
		r = fi_send(sock, "x", 1, MSG_NOSIGNAL);
		if (write_full(res_fd, &r, sizeof(r)) != 0)
			return 3;
	}
	return 0;
}

#define REMOTE_CHILD_FLAG "--remote-child"

/* The path this program was started as, to exec the remote child. */
static const char *self_path;

static int fd_arg(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0 || v > INT_MAX)
		return -1;
	return (int)v;
}

/* argv: self, flag, basename, command fd, result fd, socket fd. */
static int remote_child_main(char **argv)
{
	int cmd_fd = fd_arg(argv[3]);
	int res_fd = fd_arg(argv[4]);
	int sock = fd_arg(argv[5]);

	if (cmd_fd < 0 || res_fd < 0 || sock < 0)
		return 4;
	return remote_child(argv[2], cmd_fd, res_fd, sock);
}

/* In the forked process: keeps the three fds across the exec, then runs
 * this program again as the remote child. Never returns. */
static void remote_exec(const char *base, int cmd_fd, int res_fd, int sock)
{
	char a[16], b[16], c[16];
	char *args[] = {(char *)self_path, REMOTE_CHILD_FLAG, (char *)base,
			a, b, c, NULL};

	snprintf(a, sizeof(a), "%d", cmd_fd);
	snprintf(b, sizeof(b), "%d", res_fd);
	snprintf(c, sizeof(c), "%d", sock);
	if (fcntl(cmd_fd, F_SETFD, 0) != 0 || fcntl(res_fd, F_SETFD, 0) != 0)
		_exit(5);
	execv(self_path, args);
	_exit(6);
}

/* What the parent saw; checked after the child is gone, so that a failed
 * check never leaves a child behind. */
struct remote_result {
	long armed, before, after;
	char ctrl_out[512];
	int ctrl_status;
	int child_status;
};

/* Runs fiu-ctrl against the child and collects its output: fiu-ctrl exits 0
 * even when it fails, so the output is the only verdict. */
static void remote_ctrl(const char *base, pid_t pid, struct remote_result *res)
{
	char cmd[1024];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "fiu-ctrl -c 'enable name=wirecheck/send/errno,failinfo=%d' "
		 "-f '%s' %ld 2>&1",
		 EPIPE, base, (long)pid);
	p = popen(cmd, "r");
	if (p == NULL) {
		snprintf(res->ctrl_out, sizeof(res->ctrl_out), "popen failed");
		return;
	}
	n = fread(res->ctrl_out, 1, sizeof(res->ctrl_out) - 1, p);
	res->ctrl_out[n] = '\0';
	res->ctrl_status = pclose(p);
}

static long remote_ask(int cmd_fd, int res_fd)
{
	long r = LONG_MIN;

	if (write_full(cmd_fd, "s", 1) != 0 || read_full(res_fd, &r, sizeof(r)))
		return LONG_MIN;
	return r;
}

static void remote_parent(const char *base, pid_t pid, int cmd_fd, int res_fd,
			  struct remote_result *res)
{
	if (read_full(res_fd, &res->armed, sizeof(res->armed)) != 0 ||
	    res->armed != 0)
		return;
	res->before = remote_ask(cmd_fd, res_fd);
	remote_ctrl(base, pid, res);
	res->after = remote_ask(cmd_fd, res_fd);
}

static void remote_cleanup(const char *dir, const char *base, pid_t pid)
{
	char path[512];

	snprintf(path, sizeof(path), "%s-%ld.in", base, (long)pid);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s-%ld.out", base, (long)pid);
	(void)unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

static void test_fiu_ctrl_remote(void **state)
{
	char dir[] = "/tmp/wirecheck-fiu-XXXXXX", base[64];
	struct remote_result res = {.armed = -1, .before = 0, .after = 0};
	int cmd[2], out[2];
	pid_t pid;

	(void)state;
	if (!in_path("fiu-ctrl")) {
		print_message("fiu-ctrl is not installed "
			      "(Debian: fiu-utils)\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(base, sizeof(base), "%s/ctl", dir);
	assert_int_equal(pipe2(cmd, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(fflush(NULL), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(cmd[1]);
		close(out[0]);
		remote_exec(base, cmd[0], out[1], a_fd);
	}
	close(cmd[0]);
	close(out[1]);
	remote_parent(base, pid, cmd[1], out[0], &res);
	/* Closing the command pipe ends the child's loop. */
	close(cmd[1]);
	close(out[0]);
	assert_int_equal(waitpid(pid, &res.child_status, 0), pid);
	remote_cleanup(dir, base, pid);

	assert_int_equal(res.armed, 0);
	assert_int_equal(res.before, 1);
	if (res.ctrl_out[0] != '\0')
		fail_msg("fiu-ctrl said: %s", res.ctrl_out);
	assert_int_equal(res.after, -EPIPE);
	assert_true(WIFEXITED(res.child_status));
	assert_int_equal(WEXITSTATUS(res.child_status), 0);
}


/* ------------------------------------------------------------------------ */
/* Sockets only, unless a rule says otherwise (fd=N, fds=any).             */

static void test_rules_aim_at_sockets(void **state)
{
	char in[16];
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	arm("write:short=2,repeat=forever");
	/* The pipe is no socket: the clamp leaves it alone (before, this
	 * wrote 2 bytes, as it cut node's eventfd writes). */
	assert_int_equal(fi_write(p[1], "abcdef", 6), 6);
	assert_int_equal(read(p[0], in, sizeof(in)), 6);
	assert_int_equal(fi_write(a_fd, "abcdef", 6), 2);
	assert_int_equal(fi_rule_get(0)->fired, 1);
	fi_disarm_all();
	/* fds=any aims at every fd; fd=N at that one, whatever it is. */
	arm("write:short=2,repeat=forever,fds=any");
	assert_int_equal(fi_write(p[1], "abcdef", 6), 2);
	fi_disarm_all();
	armf("syswrite:short=3,fd=%d", p[1]);
	assert_int_equal(fi_write(p[1], "abcdef", 6), 3);
	assert_int_equal(read(p[0], in, sizeof(in)), 5);
	/* send's fd is a socket by nature: no filter to pass. */
	fi_disarm_all();
	arm("epoll_ctl:errno=EPERM,repeat=forever");
	{
		int ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = {.events = EPOLLIN};

		assert_true(ep >= 0);
		/* epoll_ctl's fd is the watched one: a pipe is left alone, a
		 * socket refused. */
		assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
		assert_int_equal(fi_epoll_ctl(ep, EPOLL_CTL_ADD, a_fd, &ev), -EPERM);
		assert_int_equal(close(ep), 0);
	}
	assert_int_equal(close(p[0]), 0);
	assert_int_equal(close(p[1]), 0);
}

static void test_fd_type_forgotten_at_close(void **state)
{
	int p[2], sv[2], fd;
	char c;

	(void)state;
	arm("write:errno=EPIPE,repeat=forever");
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd = sv[0];
	assert_int_equal(fi_write(fd, "x", 1), -EPIPE); /* cached: a socket */
	assert_int_equal(pipe(p), 0);
	/* Behind the gate's back the number becomes a pipe: the cache is
	 * stale until told (the preload library's dup2 tells it). */
	assert_int_equal(dup2(p[1], fd), fd);
	assert_int_equal(fi_write(fd, "y", 1), -EPIPE);
	fi_fd_forget(fd);
	assert_int_equal(fi_write(fd, "y", 1), 1);
	assert_int_equal(read(p[0], &c, 1), 1);
	/* A close through the gate forgets by itself: the socket that takes
	 * the number next is seen as one. */
	assert_int_equal(fi_close(fd), 0);
	assert_int_equal(fcntl(sv[1], F_DUPFD, fd), fd);
	assert_int_equal(fi_write(fd, "z", 1), -EPIPE);
	assert_int_equal(close(fd), 0);
	assert_int_equal(close(sv[1]), 0);
	assert_int_equal(close(p[0]), 0);
	assert_int_equal(close(p[1]), 0);
}

/* ------------------------------------------------------------------------ */
/* Fired faults and refused calls (items 3 and 8).                          */

static void test_fired_log(void **state)
{
	const struct fi_counters *c;
	char out[10] = "0123456789", in[16];

	(void)state;
	arm("send:short=4,repeat=2");
	arm("send:errno=EPIPE,after=3");
	assert_int_equal(fi_send(a_fd, out, 10, MSG_NOSIGNAL), 4);
	assert_int_equal(fi_send(a_fd, out + 4, 6, MSG_NOSIGNAL), 4);
	assert_int_equal(fi_send(a_fd, out + 8, 2, MSG_NOSIGNAL), 2);
	assert_int_equal(fi_send(a_fd, out, 1, MSG_NOSIGNAL), -EPIPE);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 10);
	c = fi_counters();
	/* Two clamps at bytes 0 and 4, then the refusal of the 4th send at
	 * byte 10, which never reached the kernel. */
	assert_int_equal(c->fired_total, 3);
	assert_int_equal(c->fired[0].rule, 0);
	assert_int_equal(c->fired[0].call, 1);
	assert_int_equal(c->fired[0].offset, 0);
	assert_int_equal(c->fired[0].param, 4);
	assert_int_equal(c->fired[1].call, 2);
	assert_int_equal(c->fired[1].offset, 4);
	assert_int_equal(c->fired[2].rule, 1);
	assert_int_equal(c->fired[2].kind, FI_SEND);
	assert_int_equal(c->fired[2].action, FI_ACT_ERRNO);
	assert_int_equal(c->fired[2].refused, 1);
	assert_int_equal(c->fired[2].fd, a_fd);
	assert_int_equal(c->fired[2].call, 4);
	assert_int_equal(c->fired[2].offset, 10);
	assert_int_equal(c->fired[2].param, EPIPE);
	/* Refused apart: 4 calls, 3 of them reached the kernel. */
	assert_int_equal(fi_calls(c, FI_SEND), 4);
	assert_int_equal(c->refused[FI_SEND], 1);
	assert_int_equal(c->injected[FI_SEND], 3);
	assert_int_equal(c->rule_fired[0], 2);
	assert_int_equal(c->rule_fired[1], 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(test_arm_validation),
		T(test_after_repeat_fd),
		T(test_repeat_forever),
		T(test_short_send),
		T(test_short_not_needed),
		T(test_short_writev),
		T(test_short_sendmsg),
		T(test_short_read),
		T(test_errno_sends_nothing),
		T(test_zero),
		T(test_signal),
		T(test_several_rules),
		T(test_shared_failpoint),
		T(test_shared_failpoint_same_call),
		T(test_groups),
		T(test_own_name_before_group),
		T(test_epoll_wait_short),
		T(test_only_enabled_failpoints_asked),
		T(test_libfiu_external_failinfo),
		T(test_counters_calls),
		T(test_counters_wouldblock),
		T(test_counters_epoll_ctl),
		T(test_counters_attach),
		T(test_disarm_all),
		T(test_init_env),
		T(test_fiu_ctrl_remote),
		T(test_rules_aim_at_sockets),
		T(test_fd_type_forgotten_at_close),
		T(test_fired_log),
	};

	self_path = argv[0];
	if (argc == 6 && strcmp(argv[1], REMOTE_CHILD_FLAG) == 0)
		return remote_child_main(argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
