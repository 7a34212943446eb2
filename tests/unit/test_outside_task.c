/*
 * test_outside_task.c: what the stack does with calls made outside any loop
 * task (rs.h: rs_microtask, rs_socket_write's batching). The scenario
 * subject runs every operation inside a task, so no golden reaches these
 * rules; the mutation pass (docs/mutants.md) found them untested.
 *
 * - A microtask queued outside a task runs as a task of its own at the
 *   next iteration (rs.h, rs_microtask), even in a loop with nothing else
 *   to do.
 * - A write outside a task is never held in the batch: no end of task
 *   would send it. The only connected socket outside a task is one whose
 *   loop stopped with it open: rs_loop_run returns -errno when epoll_wait
 *   fails for good, which the gate injects here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fi.h"
#include "rs.h"

static int saved_batch;

static int setup(void **state)
{
	(void)state;
	saved_batch = rs_config.batch;
	rs_config.batch = 1;
	fi_disarm_all();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rs_config.batch = saved_batch;
	fi_disarm_all();
	return 0;
}

/* ---- a microtask outside a task ----------------------------------------- */

struct micro_seen {
	int runs;
	uint64_t task;   /* rs_loop_task inside the microtask */
};

static void note_micro(rs_loop *loop, void *arg)
{
	struct micro_seen *m = arg;

	m->runs++;
	m->task = rs_loop_task(loop);
}

static void test_microtask_outside_task_runs(void **state)
{
	struct micro_seen m = { 0, 0 };
	rs_loop *loop;

	(void)state;
	assert_int_equal(rs_loop_new(&loop), 0);
	assert_int_equal(rs_loop_task(loop), 0);
	assert_int_equal(rs_microtask(loop, note_micro, &m), 0);
	/* Posted as a task: the loop has that task to run, so run() does
	 * not return before it. A microtask kept for a task that never
	 * comes would leave runs at 0. */
	assert_int_equal(rs_loop_run(loop), 0);
	assert_int_equal(m.runs, 1);
	assert_int_equal(m.task, 1);
	assert_int_equal(rs_loop_free(loop), 0);
}

/* ---- a write outside a task --------------------------------------------- */

struct pair {
	rs_loop *loop;
	rs_listener *listener;
	rs_socket *client;   /* NULL once closed */
	rs_socket *server;   /* NULL once closed */
	int connected;
	char dir[64];
	char path[96];
};

static void server_close(rs_socket *s, int had_error, void *arg)
{
	struct pair *p = arg;

	(void)s;
	(void)had_error;
	p->server = NULL;
}

static void on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	struct pair *p = arg;
	static const struct rs_socket_events ev = { .on_close = server_close };

	rs_socket_set_events(s, &ev, p);
	p->server = s;
	rs_listener_close(l);
	p->listener = NULL;
}

static void arm(const char *spec)
{
	struct fi_rule rule;
	char err[256];

	if (fi_rule_parse(spec, &rule, err, sizeof(err)) != 0)
		fail_msg("cannot parse \"%s\": %s", spec, err);
	if (fi_arm(&rule) < 0)
		fail_msg("cannot arm \"%s\"", spec);
}

/* The client is connected (the listener, made first, accepted in the same
 * or an earlier task): the loop's next epoll_wait fails, so rs_loop_run
 * returns with both sockets open. */
static void client_connect(rs_socket *s, void *arg)
{
	struct pair *p = arg;

	(void)s;
	p->connected = 1;
	arm("epoll_wait:errno=EBADF");
}

static void client_close(rs_socket *s, int had_error, void *arg)
{
	struct pair *p = arg;

	(void)s;
	(void)had_error;
	p->client = NULL;
}

static void test_write_outside_task_not_batched(void **state)
{
	static const struct rs_socket_events ev = {
		.on_connect = client_connect,
		.on_close = client_close,
	};
	struct pair p;
	char buf[8];
	ssize_t n;

	(void)state;
	memset(&p, 0, sizeof(p));
	strcpy(p.dir, "/tmp/wirecheck-unit-XXXXXX");
	assert_non_null(mkdtemp(p.dir));
	snprintf(p.path, sizeof(p.path), "%s/s", p.dir);
	assert_int_equal(rs_loop_new(&p.loop), 0);
	assert_int_equal(rs_listen_unix(p.loop, p.path, NULL, on_connection, &p,
					&p.listener), 0);
	assert_int_equal(rs_connect_unix(p.loop, p.path, NULL, &ev, &p,
					 &p.client), 0);
	assert_int_equal(rs_loop_run(p.loop), -EBADF);
	fi_disarm_all();
	assert_true(p.connected);
	assert_non_null(p.server);
	assert_non_null(p.client);
	assert_int_equal(rs_loop_task(p.loop), 0);

	/* Two small writes, no callback, outside any task: each goes to the
	 * kernel in its call, so the server's socket holds both bytes now,
	 * before the loop runs again. Held in the batch, they would wait for
	 * an end of task that does not come (recv: EAGAIN). */
	assert_int_equal(rs_socket_write(p.client, "a", 1, NULL, NULL), 1);
	assert_int_equal(rs_socket_write(p.client, "b", 1, NULL, NULL), 1);
	n = recv(rs_socket_fd(p.server), buf, sizeof(buf), MSG_DONTWAIT);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "ab", 2);

	/* Both sockets closed, the loop run to its end: nothing leaks. */
	rs_socket_destroy(p.client, 0);
	rs_socket_destroy(p.server, 0);
	assert_int_equal(rs_loop_run(p.loop), 0);
	assert_null(p.client);
	assert_null(p.server);
	assert_int_equal(rs_loop_free(p.loop), 0);
	assert_int_equal(unlink(p.path), 0);
	assert_int_equal(rmdir(p.dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_microtask_outside_task_runs,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_write_outside_task_not_batched, setup, teardown),
	};

	if (fi_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
