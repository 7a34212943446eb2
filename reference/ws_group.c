/*
 * ws_group.c: one message to many WebSocket sockets, as
 * uWebSockets' publish to a topic (Bun's server.publish) does it: the
 * frame is encoded once, and every member's frames of a loop iteration
 * leave in one write.
 *
 * The first publish of an iteration corks every member (rs_socket_cork)
 * and posts a task (rs_loop_post) that uncorks them; each publish hands
 * the same frame to every member in the order they were added
 * (rs__ws_send_frame: a plain write of the frame while the member is
 * open and nothing of its waits, else rs_ws_send); while corked, a member
 * is held (rs__ws_hold), so that its bytes in the cork buffer do not read
 * as bytes the kernel refused. The posted task runs
 * after the tasks of the next iteration's poll, as every posted task
 * does, so a member's frames of this iteration and of that poll's tasks
 * go out in that task's one write (its first of the task, in the call:
 * the batching seed's rule). Sends to a member outside the group while it
 * is corked join its cork buffer, so the member's byte order is its call
 * order; uncorked by the task, each member is let go and watched
 * (rs__ws_hold(ws, 0)) in case the kernel took part of the write.
 *
 * What this changes against a loop of rs_ws_send over the members: the
 * number of writes, one per member per drain instead of min(frames, 2)
 * per member per task; the bytes, their order and the events of each
 * member's stream are those of the same sends made in that order.
 */
#include "rs.h"
#include "rs_internal.h"
#include "ws_frame.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define GROUP_STACK_FRAME 512

struct rs_ws_group {
	rs_loop *loop;
	rs_ws **members;
	size_t n, cap;
	int posted;        /* the uncork task is posted; members are corked */
	int free_pending;  /* rs_ws_group_free came while it was posted */
	uint64_t publishes, drains;
};

int rs_ws_group_new(rs_loop *loop, rs_ws_group **out)
{
	rs_ws_group *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->loop = loop;
	*out = g;
	return 0;
}

/* The posted task: every member's frames of the iteration in one write. */
static void group_drain(rs_loop *loop, void *arg)
{
	rs_ws_group *g = arg;

	(void)loop;
	g->posted = 0;
	g->drains++;
	for (size_t i = 0; i < g->n; i++)
		rs_socket_uncork(rs_ws_socket(g->members[i]));
	/* A member's on_close runs in a microtask of this task, after this
	 * loop: every member is still here. */
	for (size_t i = 0; i < g->n; i++)
		rs__ws_hold(g->members[i], 0);
	if (g->free_pending) {
		free(g->members);
		free(g);
	}
}

void rs_ws_group_free(rs_ws_group *g)
{
	if (!g)
		return;
	if (g->posted) {
		/* The posted task holds g: it frees it. The members' bytes go
		 * out now. */
		for (size_t i = 0; i < g->n; i++) {
			rs_socket_uncork(rs_ws_socket(g->members[i]));
			rs__ws_hold(g->members[i], 0);
		}
		g->n = 0;
		g->free_pending = 1;
		return;
	}
	free(g->members);
	free(g);
}

static ssize_t group_find(const rs_ws_group *g, const rs_ws *ws)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->members[i] == ws)
			return (ssize_t)i;
	return -1;
}

int rs_ws_group_add(rs_ws_group *g, rs_ws *ws)
{
	if (g->free_pending)
		return -EINVAL;
	if (group_find(g, ws) >= 0)
		return 0;
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 8;
		rs_ws **m = realloc(g->members, cap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		g->members = m;
		g->cap = cap;
	}
	g->members[g->n++] = ws;
	if (g->posted) {
		rs_socket_cork(rs_ws_socket(ws));
		rs__ws_hold(ws, 1);
	}
	return 0;
}

void rs_ws_group_remove(rs_ws_group *g, rs_ws *ws)
{
	ssize_t i = group_find(g, ws);

	if (i < 0)
		return;
	memmove(&g->members[i], &g->members[i + 1],
		(g->n - (size_t)i - 1) * sizeof(*g->members));
	g->n--;
	if (g->posted) {
		/* Its bytes of this iteration go out now, in order. */
		rs_socket_uncork(rs_ws_socket(ws));
		rs__ws_hold(ws, 0);
	}
}

size_t rs_ws_group_size(const rs_ws_group *g)
{
	return g->n;
}

int rs_ws_publish(rs_ws_group *g, const void *data, size_t len, int kind)
{
	uint8_t stack[GROUP_STACK_FRAME], *frame = stack;
	struct rs_ws_fragments f = { 0 };
	size_t need;
	long n;
	int sent = 0;

	if (rs_ws_message_type(0, kind, RS_WS_BINARY_ABSENT) < 0 ||
	    (!data && len > 0))
		return -EINVAL;
	if (g->n == 0)
		return 0;
	need = rs_ws_send_size(0, kind, len, 0);
	if (need > sizeof(stack) && !(frame = malloc(need)))
		return -ENOMEM;
	n = rs_ws_encode_send(&f, 0, kind, RS_WS_BINARY_ABSENT, 1, 0, NULL,
			      data, len, frame, need);
	if (n < 0) {
		if (frame != stack)
			free(frame);
		return (int)n;
	}
	if (!g->posted) {
		int r = rs_loop_post(g->loop, group_drain, g);

		if (r < 0) {
			if (frame != stack)
				free(frame);
			return r;
		}
		g->posted = 1;
		for (size_t i = 0; i < g->n; i++) {
			rs_socket_cork(rs_ws_socket(g->members[i]));
			rs__ws_hold(g->members[i], 1);
		}
	}
	g->publishes++;
	for (size_t i = 0; i < g->n; i++)
		if (rs__ws_send_frame(g->members[i], frame, (size_t)n, data, len,
				      kind) >= 0)
			sent++;
	if (frame != stack)
		free(frame);
	return sent;
}
