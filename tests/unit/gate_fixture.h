/*
 * gate_fixture.h: what the gate's unit tests share (test_gate.c,
 * test_gate_aim.c): a connected non-blocking unix socket pair a_fd/b_fd
 * made fresh for each test with the gate disarmed and its counters at
 * zero, arm(), which parses and arms one rule or fails the test with
 * the parser's message, and drain(), which reads what waits on an fd
 * without the gate. Include after <cmocka.h> and "fi.h"; test_gate_count.c
 * shares drain() too.
 */
#ifndef WIRECHECK_GATE_FIXTURE_H
#define WIRECHECK_GATE_FIXTURE_H

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static int a_fd = -1;
static int b_fd = -1;

static int setup(void **state)
{
	int sv[2];

	(void)state;
	fi_disarm_all();
	fi_counters_reset();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
		return -1;
	a_fd = sv[0];
	b_fd = sv[1];
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fi_disarm_all();
	if (a_fd >= 0 && close(a_fd) != 0)
		return -1;
	if (b_fd >= 0 && close(b_fd) != 0)
		return -1;
	a_fd = b_fd = -1;
	return 0;
}

/* Parses and arms one spec, failing the test with the parser's message;
 * returns the rule's index. */
static int arm(const char *spec)
{
	struct fi_rule rule;
	char err[256];
	int i;

	if (fi_rule_parse(spec, &rule, err, sizeof(err)) != 0)
		fail_msg("cannot parse \"%s\": %s", spec, err);
	i = fi_arm(&rule);
	if (i < 0)
		fail_msg("cannot arm \"%s\": %s", spec, strerror(-i));
	return i;
}

/* Reads what is waiting on a non-blocking fd without the gate: returns the
 * byte count, 0 when nothing is waiting. (inline: not every test file that
 * includes this reads.) */
static inline size_t drain(int fd, char *buf, size_t cap)
{
	ssize_t r = recv(fd, buf, cap, 0);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	assert_true(r >= 0);
	return (size_t)r;
}

#endif
