/*
 * test_gate_count.c: what the gate counts when one call has several rules,
 * with cmocka: a call a signal rule ends before the kernel sees it is no
 * call (fi_calls) and no rule's fired but the signal's; a call whose signal
 * is handled is counted; a clamp (or a zero) that another rule's refusal
 * replaces does not fire, and fires on a later call.
 *
 * A signal that ends the process is raised in a forked child whose counters
 * are a shared mapping, as `wirecheck exec` and `run` read them: the parent
 * reads them after the death.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fi.h"

#include "gate_fixture.h"

/*
 * Arms specs in a forked child whose counters are a fresh shared mapping,
 * sends 100 bytes on a_fd `sends` times, then exits 0 (it exits 1 when a
 * spec does not arm). Returns the mapping, after the child ended, with
 * *status its wait status; the caller unmaps it.
 */
static struct fi_counters *child_sends(const char *const *specs, size_t n,
				       int sends, int *status)
{
	struct fi_counters *c;
	pid_t pid;

	c = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(c != MAP_FAILED);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char out[100];

		memset(out, 'x', sizeof(out));
		fi_counters_attach(c);
		for (size_t i = 0; i < n; i++) {
			struct fi_rule rule;
			char err[256];

			if (fi_rule_parse(specs[i], &rule, err, sizeof(err)) != 0 ||
			    fi_arm(&rule) < 0)
				_exit(1);
		}
		for (int i = 0; i < sends; i++)
			(void)fi_send(a_fd, out, sizeof(out), MSG_NOSIGNAL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, status, 0), pid);
	return c;
}

/* The repro of the bug: a clamp of 7 on every send, SIGTERM at the 5th.
 * The peer gets 4 clamped sends; the 5th call never reached the kernel,
 * nor the clamp. Before the fix, the gate counted 5 sends and 5 clamps. */
static void test_killed_call_is_not_counted(void **state)
{
	static const char *const specs[] = { "send:short=7,repeat=forever",
					     "send:signal=TERM,after=4" };
	struct fi_counters *c;
	char in[256];
	int status;

	(void)state;
	c = child_sends(specs, COUNT_OF(specs), 10, &status);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 28);
	assert_int_equal(fi_calls(c, FI_SEND), 4);
	assert_int_equal(c->fd_calls[FI_SEND][a_fd], 4);
	assert_int_equal(c->fd_ops[a_fd][0], 4);
	assert_int_equal(c->rule_fired[0], 4);
	assert_int_equal(c->rule_fired[1], 1);
	assert_int_equal(c->injected[FI_SEND], 4);
	/* The signal's entry, logged before the raise, names the 5th call. */
	assert_int_equal(c->fired_total, 5);
	assert_int_equal(c->fired[4].action, FI_ACT_SIGNAL);
	assert_int_equal(c->fired[4].rule, 1);
	assert_int_equal(c->fired[4].call, 5);
	assert_int_equal(c->fired[4].offset, 28);
	assert_int_equal(c->fired[3].call, 4);
	assert_int_equal(munmap(c, sizeof(*c)), 0);
}

/* A call the signal ended before the gate refused it: neither refused nor
 * a call, and the errno rule did not fire. */
static void test_killed_refusal_is_not_counted(void **state)
{
	static const char *const specs[] = { "send:errno=EPIPE,after=2",
					     "send:signal=TERM,after=2" };
	struct fi_counters *c;
	char in[512];
	int status;

	(void)state;
	c = child_sends(specs, COUNT_OF(specs), 10, &status);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 200);
	assert_int_equal(fi_calls(c, FI_SEND), 2);
	assert_int_equal(c->refused[FI_SEND], 0);
	assert_int_equal(c->rule_fired[0], 0);
	assert_int_equal(c->rule_fired[1], 1);
	assert_int_equal(c->fired_total, 1);
	assert_int_equal(c->fired[0].call, 3);
	assert_int_equal(munmap(c, sizeof(*c)), 0);
}

static volatile sig_atomic_t usr1_count;
static int usr1_calls_seen;

/* Reads the count the gate holds for a_fd's sends while the signal runs:
 * the call that raised it is not in it until the handler returns. */
static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
	usr1_calls_seen = (int)fi_counters()->fd_calls[FI_SEND][a_fd];
}

/* A handled signal: the call then goes to the kernel, clamped, and counts
 * as a call and as the clamp's. */
static void test_handled_signal_call_is_counted(void **state)
{
	struct sigaction sa = {0}, old;
	char out[100], in[64];
	const struct fi_counters *c = fi_counters();

	(void)state;
	memset(out, 'x', sizeof(out));
	sa.sa_handler = on_usr1;
	assert_int_equal(sigemptyset(&sa.sa_mask), 0);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	usr1_count = 0;
	arm("send:short=7,repeat=forever");
	arm("send:signal=USR1,after=1");
	for (int i = 0; i < 3; i++)
		assert_int_equal(fi_send(a_fd, out, sizeof(out), MSG_NOSIGNAL),
				 7);
	assert_int_equal(usr1_count, 1);
	assert_int_equal(usr1_calls_seen, 1);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 21);
	assert_int_equal(fi_calls(c, FI_SEND), 3);
	assert_int_equal(c->rule_fired[0], 3);
	assert_int_equal(c->rule_fired[1], 1);
	assert_int_equal(fi_rule_get(0)->fired, 3);
	/* clamp 1, signal 2, clamp 2, clamp 3: both on call 2. */
	assert_int_equal(c->fired_total, 4);
	assert_int_equal(c->fired[1].action, FI_ACT_SIGNAL);
	assert_int_equal(c->fired[1].call, 2);
	assert_int_equal(c->fired[2].action, FI_ACT_SHORT);
	assert_int_equal(c->fired[2].call, 2);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
}

/* The second repro: a clamp on every send and EAGAIN refusing sends 2 to
 * 4. The clamp applied to 3 calls of 6; before the fix it said 6. */
static void test_clamp_does_not_fire_on_refused_calls(void **state)
{
	static const ssize_t want[] = { 7, -EAGAIN, -EAGAIN, -EAGAIN, 7, 7 };
	const struct fi_counters *c = fi_counters();
	char out[100];

	(void)state;
	memset(out, 'x', sizeof(out));
	arm("send:short=7,repeat=forever");
	arm("send:errno=EAGAIN,after=1,repeat=3");
	for (size_t i = 0; i < COUNT_OF(want); i++)
		assert_int_equal(fi_send(a_fd, out, sizeof(out), MSG_NOSIGNAL),
				 want[i]);
	assert_int_equal(fi_rule_get(0)->fired, 3);
	assert_int_equal(c->rule_fired[0], 3);
	assert_int_equal(fi_rule_get(0)->seen, 6);
	assert_int_equal(c->rule_fired[1], 3);
	assert_int_equal(c->fired_total, 6);
	assert_int_equal(c->injected[FI_SEND], 6);
	assert_int_equal(c->refused[FI_SEND], 3);
}

/* A refused call does not use up a clamp's repeat: the clamp fires on the
 * two calls after it. Before the fix the refused call took one of them. */
static void test_refused_call_keeps_the_clamps_repeat(void **state)
{
	static const ssize_t want[] = { -EPIPE, 7, 7, 100 };
	char out[100], in[256];

	(void)state;
	memset(out, 'x', sizeof(out));
	arm("send:short=7,repeat=2");
	arm("send:errno=EPIPE");
	for (size_t i = 0; i < COUNT_OF(want); i++)
		assert_int_equal(fi_send(a_fd, out, sizeof(out), MSG_NOSIGNAL),
				 want[i]);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 114);
	assert_int_equal(fi_rule_get(0)->fired, 2);
	assert_int_equal(fi_counters()->rule_fired[0], 2);
}

/* errno and zero on one call: errno is applied, so zero does not fire and
 * answers the next call instead. Before the fix it fired on the first. */
static void test_zero_does_not_fire_under_an_errno(void **state)
{
	char in[16];

	(void)state;
	arm("send:zero");
	arm("send:errno=EPIPE");
	assert_int_equal(fi_send(a_fd, "a", 1, MSG_NOSIGNAL), -EPIPE);
	assert_int_equal(fi_send(a_fd, "a", 1, MSG_NOSIGNAL), 0);
	assert_int_equal(fi_send(a_fd, "a", 1, MSG_NOSIGNAL), 1);
	assert_int_equal(drain(b_fd, in, sizeof(in)), 1);
	assert_int_equal(fi_rule_get(0)->fired, 1);
	assert_int_equal(fi_rule_get(1)->fired, 1);
	assert_int_equal(fi_counters()->refused[FI_SEND], 2);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_killed_call_is_not_counted),
		T(test_killed_refusal_is_not_counted),
		T(test_handled_signal_call_is_counted),
		T(test_clamp_does_not_fire_on_refused_calls),
		T(test_refused_call_keeps_the_clamps_repeat),
		T(test_zero_does_not_fire_under_an_errno),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
