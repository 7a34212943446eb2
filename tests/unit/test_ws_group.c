/*
 * test_ws_group.c: rs_ws_publish (reference/ws_group.c). Three
 * WebSocket clients of the reference stack connect to a server of the
 * same loop; the server's sockets are the members of a group. Once all
 * three are open, one task publishes "one", sends "direct" to member 1
 * alone, and publishes "two": every client must get its messages in that
 * call order, and each member's frames must leave in one write (the
 * gate's per-fd counts), where the same calls as a loop of rs_ws_send
 * make two (the first write of a task in the call, the rest in the
 * batch at the task's end).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fi.h"
#include "rs.h"
#include "ws_frame.h"

#define N 3

struct world {
	rs_loop *loop;
	rs_listener *listener;
	rs_ws_group *group;
	int use_group;
	int remove_one;          /* remove member 2 between the publishes */
	rs_ws *server[N];
	int nserver, nopen;
	rs_ws *client[N];
	char got[N][64];          /* the messages each client read, "|"-joined */
	int msgs[N];
	int closed;
	uint64_t writes_before[N];
	uint64_t writes[N];       /* each server socket's writing calls for the
				   * task's messages */
	char dir[64], path[96];
};

static struct world W;

static uint64_t writes_of(rs_ws *ws)
{
	const struct fi_counters *c = fi_counters();
	int fd = rs_socket_fd(rs_ws_socket(ws));

	return c->fd_calls[FI_SEND][fd] + c->fd_calls[FI_SENDTO][fd] +
	       c->fd_calls[FI_SENDMSG][fd] + c->fd_calls[FI_WRITE][fd] +
	       c->fd_calls[FI_WRITEV][fd];
}

static int expected(int i)
{
	return i == 1 ? 3 : 2;
}

static void send_all(rs_ws *const *m, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		assert_true(rs_ws_send(m[i], s, strlen(s), RS_WS_KIND_TEXT, NULL) >= 0);
}

/* The task under test: publish, a direct send, publish. */
static void publish_task(rs_loop *loop, void *arg)
{
	(void)loop;
	(void)arg;
	for (int i = 0; i < N; i++)
		W.writes_before[i] = writes_of(W.server[i]);
	if (W.use_group)
		assert_int_equal(rs_ws_publish(W.group, "one", 3, RS_WS_KIND_TEXT), N);
	else
		send_all(W.server, N, "one");
	assert_true(rs_ws_send(W.server[1], "direct", 6, RS_WS_KIND_TEXT, NULL) >= 0);
	if (W.use_group && W.remove_one) {
		rs_ws_group_remove(W.group, W.server[2]);
		assert_int_equal(rs_ws_group_size(W.group), N - 1);
		/* Its bytes went out at the removal; the second publish
		 * leaves it out. */
		assert_true(rs_ws_send(W.server[2], "two", 3, RS_WS_KIND_TEXT, NULL) >= 0);
	}
	if (W.use_group)
		assert_int_equal(rs_ws_publish(W.group, "two", 3, RS_WS_KIND_TEXT),
				 W.remove_one ? N - 1 : N);
	else
		send_all(W.server, N, "two");
}

static void client_message(rs_ws *ws, const struct rs_ws_message *m, void *arg)
{
	int i = (int)(intptr_t)arg;

	(void)ws;
	assert_true(strlen(W.got[i]) + m->len + 2 < sizeof(W.got[i]));
	if (W.msgs[i]++)
		strcat(W.got[i], "|");
	strncat(W.got[i], (const char *)m->data, m->len);
	if (W.msgs[i] == expected(i)) {
		W.writes[i] = writes_of(W.server[i]) - W.writes_before[i];
		assert_int_equal(rs_ws_close(ws, 1000, NULL, 0), 0);
	}
}

static void client_close(rs_ws *ws, int code, size_t dropped, void *arg)
{
	(void)ws;
	(void)code;
	(void)dropped;
	(void)arg;
	W.closed++;
}

static void server_open(rs_ws *ws, void *arg)
{
	(void)ws;
	(void)arg;
	if (++W.nopen == N)
		assert_int_equal(rs_loop_post(W.loop, publish_task, NULL), 0);
}

static void server_close(rs_ws *ws, int code, size_t dropped, void *arg)
{
	(void)code;
	(void)dropped;
	(void)arg;
	if (W.group)
		rs_ws_group_remove(W.group, ws);
}

static void on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	static const struct rs_ws_events ev = { .on_open = server_open,
						.on_close = server_close };
	struct rs_ws_options o = { .server = 1 };
	rs_ws *ws;

	(void)arg;
	assert_int_equal(rs_ws_attach(s, &o, &ev, NULL, &ws), 0);
	W.server[W.nserver++] = ws;
	if (W.group)
		assert_int_equal(rs_ws_group_add(W.group, ws), 0);
	if (W.nserver == N) {
		rs_listener_close(l);
		W.listener = NULL;
	}
}

static void client_connect(rs_socket *s, void *arg)
{
	static const struct rs_ws_events ev = { .on_message = client_message,
						.on_close = client_close };
	struct rs_ws_options o = { .server = 0, .seed = 7 };
	int i = (int)(intptr_t)arg;

	assert_int_equal(rs_ws_attach(s, &o, &ev, arg, &W.client[i]), 0);
}

static void run(int use_group, int remove_one)
{
	static const struct rs_socket_events cev = { .on_connect = client_connect };

	memset(&W, 0, sizeof(W));
	W.use_group = use_group;
	W.remove_one = remove_one;
	fi_disarm_all();
	snprintf(W.dir, sizeof(W.dir), "/tmp/test_ws_group.XXXXXX");
	assert_non_null(mkdtemp(W.dir));
	snprintf(W.path, sizeof(W.path), "%s/s", W.dir);
	assert_int_equal(rs_loop_new(&W.loop), 0);
	if (use_group)
		assert_int_equal(rs_ws_group_new(W.loop, &W.group), 0);
	assert_int_equal(rs_listen_unix(W.loop, W.path, NULL, on_connection, NULL,
					&W.listener), 0);
	for (int i = 0; i < N; i++) {
		rs_socket *s;

		assert_int_equal(rs_connect_unix(W.loop, W.path, NULL, &cev,
						 (void *)(intptr_t)i, &s), 0);
	}
	assert_int_equal(rs_loop_run(W.loop), 0);
	if (W.group)
		rs_ws_group_free(W.group);
	assert_int_equal(rs_loop_free(W.loop), 0);
	(void)unlink(W.path);
	(void)rmdir(W.dir);
	assert_int_equal(W.closed, N);
}

static void test_publish_keeps_each_members_call_order(void **state)
{
	(void)state;
	run(1, 0);
	assert_string_equal(W.got[0], "one|two");
	assert_string_equal(W.got[1], "one|direct|two");
	assert_string_equal(W.got[2], "one|two");
}

static void test_publish_makes_one_write_per_member(void **state)
{
	(void)state;
	run(1, 0);
	for (int i = 0; i < N; i++)
		assert_int_equal(W.writes[i], 1);
}

/* The same calls by a loop of rs_ws_send: the same bytes, two writes per
 * member (the first in the call, the rest at the end of the task). */
static void test_loop_of_sends_same_messages_two_writes(void **state)
{
	(void)state;
	run(0, 0);
	assert_string_equal(W.got[0], "one|two");
	assert_string_equal(W.got[1], "one|direct|two");
	assert_string_equal(W.got[2], "one|two");
	for (int i = 0; i < N; i++)
		assert_int_equal(W.writes[i], 2);
}

/* A member removed while its bytes are held: they go out at the removal,
 * in order, and later sends to it are its own. */
static void test_remove_sends_what_was_held(void **state)
{
	(void)state;
	run(1, 1);
	assert_string_equal(W.got[0], "one|two");
	assert_string_equal(W.got[1], "one|direct|two");
	assert_string_equal(W.got[2], "one|two");
	assert_int_equal(W.writes[0], 1);
	assert_int_equal(W.writes[1], 1);
}

static void test_bad_arguments(void **state)
{
	rs_loop *loop;
	rs_ws_group *g;

	(void)state;
	assert_int_equal(rs_loop_new(&loop), 0);
	assert_int_equal(rs_ws_group_new(loop, &g), 0);
	assert_int_equal(rs_ws_publish(g, "x", 1, 7), -EINVAL);
	assert_int_equal(rs_ws_publish(g, NULL, 1, RS_WS_KIND_TEXT), -EINVAL);
	assert_int_equal(rs_ws_publish(g, "x", 1, RS_WS_KIND_TEXT), 0);
	assert_int_equal(rs_ws_group_size(g), 0);
	rs_ws_group_free(g);
	assert_int_equal(rs_loop_free(loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_publish_keeps_each_members_call_order),
		cmocka_unit_test(test_publish_makes_one_write_per_member),
		cmocka_unit_test(test_loop_of_sends_same_messages_two_writes),
		cmocka_unit_test(test_remove_sends_what_was_held),
		cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
