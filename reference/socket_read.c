/*
 * socket_read.c: the read side of the stream socket: one recv per readable
 * event, pause and resume, and the peer's FIN in the order of the half-open
 * strategy (rs_config.halfopen, docs/ARCHITECTURE.md "Half-open
 * connections"). A file of its own since socket.c passed 1,200 lines: none
 * of it is on the write path, and it reaches the socket's write side only
 * through socket_internal.h and rs_socket_end.
 */
#include "socket_internal.h"

/* One recv per readable event into this buffer: the stack is single-
 * threaded, and a short read means the kernel had no more. */
#define RS_READ_BUFFER 65536
static char read_buffer[RS_READ_BUFFER];

static void sock_auto_end(rs_loop *loop, void *arg)
{
	rs_socket *s = arg;

	(void)loop;
	if (!s->destroyed && !s->ending)
		(void)rs_socket_end(s, NULL, 0, NULL, NULL);
}

/* Whether the socket closes in this task's microtasks without sending
 * anything more: on_end ended it (or the stack will, without
 * allow_half_open) and nothing waits in the queue or the cork buffer. */
static int sock_closing_quietly(const rs_socket *s)
{
	return (s->ending || !s->opts.allow_half_open) &&
	       rs_queue_len(&s->queue) == 0 && rs_queue_len(&s->cork) == 0;
}

/* Legacy (halfopen=poll-first): the poll goes to writable before on_end, as
 * uSockets did; the writable event that follows finds nothing to send and
 * drops it again, or the close removes it. */
static void sock_eof_poll_first(rs_socket *s)
{
	int rc = rs__io_epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, EPOLLOUT,
				  &s->handle);

	if (rc < 0) {
		rs__socket_fail(s, -rc, "epoll_ctl");
		return;
	}
	s->poll = EPOLLOUT;
	if (s->ev.on_end)
		s->ev.on_end(s, s->arg);
}

/*
 * The peer's FIN (the oven-sh/bun pull request "usockets: dispatch on_end
 * before the poll change in the half-open EOF arm"). Fixed: on_end first, then the poll
 * change, and only for a socket that stays open: one that on_end closed, or
 * that closes now with nothing left to send, keeps its poll until the close
 * removes it; one that stays open reads no more and is writable only if it
 * has bytes to send, the same poll events it had before. Queued bytes keep
 * the writable poll whatever on_end did, so a reply that ends with our FIN
 * still flushes.
 */
static void sock_on_eof(rs_socket *s)
{
	s->peer_ended = 1;
	/* Our FIN is out already: both sides are done, no poll to change. */
	if (s->finished) {
		if (s->ev.on_end)
			s->ev.on_end(s, s->arg);
		if (!s->destroyed)
			rs_socket_destroy(s, 0);
		return;
	}
	if (rs_config.halfopen == RS_HALFOPEN_POLL_FIRST) {
		sock_eof_poll_first(s);
	} else if (s->ev.on_end) {
		s->ev.on_end(s, s->arg);
	}
	if (s->destroyed)
		return;
	if (s->finished) {
		rs_socket_destroy(s, 0);
		return;
	}
	if (rs_config.halfopen == RS_HALFOPEN_END_FIRST && !sock_closing_quietly(s))
		rs__socket_poll_update(s);
	/* Without allow_half_open the stack ends its side after on_end, in a
	 * microtask, as node's Duplex does in a tick. */
	if (!s->opts.allow_half_open && !s->ending)
		rs__socket_must(rs_microtask(s->loop, sock_auto_end, s),
				"microtask");
}

void rs__socket_read(rs_socket *s)
{
	ssize_t n = rs__io_recv(s->fd, read_buffer, sizeof(read_buffer));

	if (n > 0) {
		if (s->ev.on_data)
			s->ev.on_data(s, read_buffer, (size_t)n, s->arg);
	} else if (n == 0) {
		sock_on_eof(s);
	} else if (!rs__socket_retryable(n)) {
		rs__socket_fail(s, (int)-n, "recv");
	}
}

void rs_socket_pause(rs_socket *s)
{
	s->paused = 1;
	rs__socket_poll_update(s);
}

void rs_socket_resume(rs_socket *s)
{
	s->paused = 0;
	rs__socket_poll_update(s);
}
