/*
 * stack_pair.h: a client socket of the reference stack connected to a
 * server socket of the same loop, for the unit tests of the write path.
 *
 * sp_run() listens on a unix path in a fresh temporary folder, connects,
 * and runs the test's script in the client's on_connect (a task of the
 * loop); the server collects every byte it reads, ends its side when the
 * client's FIN arrives (no allow_half_open), and the loop runs until both
 * sockets are closed. Faults are armed on the gate (sp_arm) before the run;
 * a clamp then applies to every send of the process, and only the client
 * sends.
 */
#ifndef WIRECHECK_TEST_STACK_PAIR_H
#define WIRECHECK_TEST_STACK_PAIR_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fi.h"
#include "rs.h"

struct sp_pair;
typedef void (*sp_script)(struct sp_pair *p, rs_socket *client);

struct sp_pair {
	rs_loop *loop;
	rs_listener *listener;
	rs_socket *client;      /* NULL once closed */
	rs_socket *server;      /* NULL once closed */
	sp_script script;
	void *arg;              /* the test's */
	unsigned char *recv;    /* every byte the server read, in order */
	size_t recv_len;
	size_t recv_cap;
	int client_closed;
	int client_error;       /* on_error's code, or 0 */
	uint64_t client_copied; /* rs_socket_bytes_copied at on_close */
	char dir[64];
	char path[96];
};

/* Parses and arms one rule spec, failing the test when it does not arm. */
/* The cmocka fixture of the pair tests: each test starts with the gate
 * disarmed, and rs_config.batch is put back as it was after it. */
static int sp_saved_batch;

static inline int sp_setup(void **state)
{
	(void)state;
	sp_saved_batch = rs_config.batch;
	fi_disarm_all();
	return 0;
}

static inline int sp_teardown(void **state)
{
	(void)state;
	rs_config.batch = sp_saved_batch;
	fi_disarm_all();
	return 0;
}

static inline void sp_arm(const char *spec)
{
	struct fi_rule rule;
	char err[256];

	if (fi_rule_parse(spec, &rule, err, sizeof(err)) != 0)
		fail_msg("cannot parse \"%s\": %s", spec, err);
	if (fi_arm(&rule) < 0)
		fail_msg("cannot arm \"%s\"", spec);
}

static inline void sp_server_data(rs_socket *s, const char *data, size_t len,
				  void *arg)
{
	struct sp_pair *p = arg;

	(void)s;
	if (p->recv_len + len > p->recv_cap) {
		size_t cap = (p->recv_len + len) * 2;
		unsigned char *b = realloc(p->recv, cap);

		assert_non_null(b);
		p->recv = b;
		p->recv_cap = cap;
	}
	memcpy(p->recv + p->recv_len, data, len);
	p->recv_len += len;
}

static inline void sp_server_close(rs_socket *s, int had_error, void *arg)
{
	struct sp_pair *p = arg;

	(void)s;
	(void)had_error;
	p->server = NULL;
}

static inline void sp_on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	struct sp_pair *p = arg;
	static const struct rs_socket_events ev = {
		.on_data = sp_server_data,
		.on_close = sp_server_close,
	};

	rs_socket_set_events(s, &ev, p);
	p->server = s;
	rs_listener_close(l);
	p->listener = NULL;
}

static inline void sp_client_connect(rs_socket *s, void *arg)
{
	struct sp_pair *p = arg;

	p->script(p, s);
}

static inline void sp_client_error(rs_socket *s, int code,
				   const char *syscall, void *arg)
{
	struct sp_pair *p = arg;

	(void)s;
	(void)syscall;
	p->client_error = code;
}

static inline void sp_client_close(rs_socket *s, int had_error, void *arg)
{
	struct sp_pair *p = arg;

	(void)had_error;
	p->client_copied = rs_socket_bytes_copied(s);
	p->client_closed = 1;
	p->client = NULL;
}

/* Runs script on a fresh connected pair until both sockets are closed.
 * The caller frees with sp_free. */
static inline void sp_run(struct sp_pair *p, sp_script script, void *arg)
{
	static const struct rs_socket_events ev = {
		.on_connect = sp_client_connect,
		.on_error = sp_client_error,
		.on_close = sp_client_close,
	};

	memset(p, 0, sizeof(*p));
	p->script = script;
	p->arg = arg;
	strcpy(p->dir, "/tmp/wirecheck-unit-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	snprintf(p->path, sizeof(p->path), "%s/s", p->dir);
	assert_int_equal(rs_loop_new(&p->loop), 0);
	assert_int_equal(rs_listen_unix(p->loop, p->path, NULL,
					sp_on_connection, p, &p->listener), 0);
	assert_int_equal(rs_connect_unix(p->loop, p->path, NULL, &ev, p,
					 &p->client), 0);
	assert_int_equal(rs_loop_run(p->loop), 0);
	assert_true(p->client_closed);
	assert_null(p->server);
	assert_int_equal(rs_loop_free(p->loop), 0);
	assert_int_equal(unlink(p->path), 0);
	assert_int_equal(rmdir(p->dir), 0);
}

static inline void sp_free(struct sp_pair *p)
{
	free(p->recv);
	p->recv = NULL;
}

#endif
