/*
 * socket_try.c: the stream socket's optional writes, for chunked HTTP
 * responses (http.c's try_write): a send that never queues, a
 * queue that never tries the kernel, and the writable hook that tells the
 * caller when to try again. A file of its own since socket.c passed 1,200
 * lines; they share the socket's accounting (seq, written, the write
 * requests) through socket_internal.h.
 */
#include "socket_internal.h"

#include <errno.h>
#include <stdlib.h>

/* Set from WIRECHECK_TEST_NO_WRITABLE_MARK: a partial send of several
 * buffers does not mark the socket as wanting writable, as uSockets'
 * us_socket_write2 before the seed's companion fix. Tests only. */
static int no_writable_mark = -1;

rs_loop *rs__socket_loop(const rs_socket *s)
{
	return s->loop;
}

void rs__socket_on_writable(rs_socket *s, rs__writable_fn fn, void *arg)
{
	s->on_writable = fn;
	s->writable_arg = arg;
}

void rs__socket_want_writable(rs_socket *s)
{
	if (s->destroyed || s->want_writable)
		return;
	s->want_writable = 1;
	rs__socket_poll_update(s);
}

int rs__socket_destroyed(const rs_socket *s)
{
	return s->destroyed;
}

int rs__socket_can_try(const rs_socket *s)
{
	return !s->destroyed && !s->connecting && !s->corked &&
	       !s->ending && rs_queue_len(&s->queue) == 0;
}

ssize_t rs__socket_try_sendv(rs_socket *s, const struct iovec *iov, int n,
			     int more, int mark)
{
	size_t len = 0;
	ssize_t got;

	if (s->destroyed)
		return -EBADF;
	if (s->batch_link.listed)
		rs__socket_batch_flush(s);
	if (!rs__socket_can_try(s))
		return 0;
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (len == 0)
		return 0;
	got = n == 1 ? rs__io_send_more(s->fd, iov[0].iov_base, len, more)
		     : rs__io_sendv_more(s->fd, iov, n, more);
	if (got < 0 && !rs__socket_retryable(got)) {
		rs__socket_fail(s, (int)-got, n == 1 ? "send" : "sendmsg");
		return got;
	}
	if (got < 0)
		got = 0;
	s->seq += (size_t)got;
	s->write_task = rs_loop_task(s->loop);
	if (got > 0)
		rs__socket_took(s, (size_t)got);
	if (mark && (size_t)got < len) {
		if (no_writable_mark < 0)
			no_writable_mark =
				getenv("WIRECHECK_TEST_NO_WRITABLE_MARK") != NULL;
		if (n == 1 || !no_writable_mark)
			rs__socket_want_writable(s);
	}
	return got;
}

int rs__socket_queue_iov(rs_socket *s, const struct iovec *iov, int n,
			 size_t write_len, rs_write_cb cb, void *arg)
{
	size_t len = 0;
	int keep_going;

	if (s->destroyed)
		return rs__socket_write_refused(s, EBADF, cb, arg);
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	keep_going = rs_socket_writable_length(s) + write_len < RS_HIGH_WATER_MARK;
	if (!keep_going)
		s->need_drain = 1;
	s->seq += len;
	if (cb) {
		struct rs__wreq r = { s->seq, cb, arg };

		rs__socket_must(rs__ring_push(&s->reqs, &r), "write request");
	}
	for (int i = 0; i < n; i++)
		rs__socket_must(rs_queue_append(s->corked ? &s->cork : &s->queue,
						iov[i].iov_base,
						iov[i].iov_len),
				"queue append");
	s->write_task = rs_loop_task(s->loop);
	if (cb && s->written >= s->seq)
		rs__socket_schedule_settle(s);
	rs__socket_poll_update(s);
	return keep_going;
}

void rs__socket_writable_hook(rs_socket *s)
{
	if (!s->want_writable || rs_queue_len(&s->queue) > 0)
		return;
	s->want_writable = 0;
	rs__socket_poll_update(s);
	if (!s->destroyed && s->on_writable)
		s->on_writable(s, s->writable_arg);
}
