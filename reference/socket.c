/*
 * socket.c: stream sockets with the write semantics of node:net, on the loop.
 *
 * Write path: a write that finds the queue empty goes to the kernel inside
 * the call (one send); what the kernel refuses is appended to the socket's
 * pending-write queue (queue.c) and waits for writable. A write that finds
 * bytes queued tries the kernel with both (one sendmsg of the queued tail and
 * the new bytes), since that is the write the kernel would take next anyway,
 * and appends what is left of the new bytes. A writable event sends queued
 * bytes until the kernel refuses, at most RS_FLUSH_MAX_SENDS times.
 *
 * Completion: the stack counts bytes accepted by write() (seq) and bytes the
 * kernel took (written). A write's callback covers the bytes up to its seq,
 * and runs in the "settle" microtask once written reaches it; so it never runs
 * inside the call that queued it, and always after the kernel has the bytes.
 * settle also emits drain and, once every byte is taken after end(), sends
 * our FIN and runs end()'s callback, then finish, as node 20 does.
 *
 * This file is the write path, with what it calls on every write (the poll
 * interest, closing) and the dispatch of a socket's epoll events, so that
 * the compiler sees the hot functions together and inlines them. The read
 * side and the peer's FIN are socket_read.c; the optional writes of chunked
 * responses socket_try.c; connect, accept and the free socket_open.c; the
 * struct they share socket_internal.h. The list of sockets with a batch,
 * and the process-exit wrappers, are batch.c; listening and accepting are
 * listener.c.
 */
#include "socket_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RS_FLUSH_MAX_SENDS 32
/* At most this many runs of bytes in one sendmsg (owned bytes among copied
 * ones make several runs); more wait for the next call. */
#define RS_SEND_IOV 64

static void sock_settle(rs_loop *loop, void *arg);
static void sock_fail(rs_socket *s, int code, const char *syscall);

/* Out of memory in the middle of a callback chain leaves no sane way to
 * keep the promises of the API (a callback that never runs); a test stack
 * stops there, loudly. */
static void must(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "refstack: %s: %s\n", what, strerror(-rc));
		abort();
	}
}

/* ---- poll interest ---------------------------------------------------- */

static uint32_t sock_wanted_events(const rs_socket *s)
{
	uint32_t want = 0;

	if (!s->peer_ended && !s->paused)
		want |= EPOLLIN;
	if (s->connecting || rs__queue_len(&s->queue) > 0 || s->want_writable)
		want |= EPOLLOUT;
	return want;
}

/* sock_poll_update when the interest changes: the epoll_ctl. */
static RS__OUT_OF_LINE void sock_poll_change(rs_socket *s, uint32_t want)
{
	int rc;

	if (s->unregistered && want == 0)
		return;
	rc = rs__io_epoll_ctl(s->loop->epfd,
			      s->unregistered ? EPOLL_CTL_ADD : EPOLL_CTL_MOD,
			      s->fd, want, &s->handle);
	if (rc == 0)
		s->unregistered = 0;
	if (rc < 0) {
		sock_fail(s, -rc, "epoll_ctl");
		return;
	}
	s->poll = want;
}

/* Inline: every send ends here, and the interest seldom changes. */
static inline __attribute__((always_inline)) void
sock_poll_update(rs_socket *s)
{
	uint32_t want = sock_wanted_events(s);

	if (s->destroyed || (want == s->poll && !s->unregistered))
		return;
	sock_poll_change(s, want);
}

static inline __attribute__((always_inline)) void
sock_schedule_settle(rs_socket *s)
{
	if (s->settle_queued || s->destroyed)
		return;
	s->settle_queued = 1;
	must(rs__microtask(s->loop, sock_settle, s), "microtask");
}

/* ---- closing ---------------------------------------------------------- */

/* Runs after destroy, in a microtask: failed callbacks, error, close. */
static void sock_close_task(rs_loop *loop, void *arg)
{
	rs_socket *s = arg;
	int first = 1;

	while (s->reqs.len > 0) {
		struct rs__wreq r;
		int status = first && s->error ? -s->error : -ECANCELED;

		rs__ring_pop(&s->reqs, &r);
		first = 0;
		if (r.cb)
			r.cb(s, status, r.arg);
	}
	if (s->end_cb) {
		rs_write_cb cb = s->end_cb;

		s->end_cb = NULL;
		cb(s, s->error ? -s->error : -ECANCELED, s->end_arg);
	}
	if (s->error && s->ev.on_error)
		s->ev.on_error(s, s->error, s->error_syscall, s->arg);
	if (s->ev.on_close)
		s->ev.on_close(s, s->error != 0, s->arg);
	rs__loop_closed(loop, &s->handle);
}

static void sock_destroy(rs_socket *s, int code, const char *syscall)
{
	if (s->destroyed)
		return;
	s->destroyed = 1;
	rs__batch_unlist(&s->batch_link);
	s->error = code;
	s->error_syscall = syscall;
	/* An explicit DEL, not just close(): the count of epoll_ctl(DEL) per
	 * connection is one of the figures the harness reports. */
	if (!s->unregistered)
		(void)rs__io_epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, 0, NULL);
	(void)rs__io_close(s->fd);
	s->fd = -1;
	s->loop->handles--;
	must(rs_microtask(s->loop, sock_close_task, s), "microtask");
}

static void sock_fail(rs_socket *s, int code, const char *syscall)
{
	sock_destroy(s, code, syscall);
}

void rs_socket_destroy(rs_socket *s, int code)
{
	/* What was written before destroy() still goes out: one send of the
	 * batch, then the close. */
	if (s->batch_link.listed)
		rs__socket_batch_flush(s);
	sock_destroy(s, code > 0 ? code : 0, "destroy");
}

/* Errors after which the kernel will take the bytes later. ENOBUFS is
 * transient memory pressure: the bytes stay queued, nothing is lost. */
static int is_retryable(ssize_t rc)
{
	return rc == -EAGAIN || rc == -EWOULDBLOCK || rc == -ENOBUFS ||
	       rc == -EINTR;
}

/* ---- the write path --------------------------------------------------- */

/*
 * New bytes for the kernel: a write's (copied or, when owned, held by
 * reference if the kernel does not take them in the call), or the bytes a
 * queue of the socket holds (its batch, its cork buffer), which keep what
 * they are: copied bytes are copied into the pending-write queue, owned
 * ones held by reference.
 */
struct sock_src {
	const char *data;
	size_t len;
	int owned;
	struct rs_queue *q;  /* when set, the bytes are q's; data, len unused */
};

static void sock_send_raw(rs_socket *s, const struct sock_src *src);

/* Sends what the batch holds, before anything written after it. What the
 * kernel refuses goes to the pending-write queue, as an ordinary write. */
void rs__socket_batch_flush(rs_socket *s)
{
	struct sock_src src = { .q = &s->batch };
	size_t len = rs_queue_len(&s->batch);

	rs__batch_unlist(&s->batch_link);
	if (len == 0)
		return;
	sock_send_raw(s, &src);
	rs_queue_consume(&s->batch, len);
}

/* rs_loop_task, inline: the write path asks it twice per write. */
static uint64_t sock_task(const rs_socket *s)
{
	return s->loop->in_task ? s->loop->task : 0;
}

/* Whether a write is held in the batch: the fixed strategy, a byte write of
 * at most RS_BATCH_MAX_WRITE without a callback, after the socket's first
 * write of this task, while the kernel takes every byte (nothing queued),
 * and while the batch stays within RS_BATCH_LIMIT. An owned write has a
 * callback (its release), so it is never held. */
static int sock_batchable(const rs_socket *s, size_t len, rs_write_cb cb)
{
	/* A loop in a task has started one, so the task's number is not 0:
	 * in_task stands for sock_task(s) != 0, read only when the tests
	 * before it hold. */
	return rs_config.batch && !cb && len > 0 && len <= RS_BATCH_MAX_WRITE &&
	       s->loop->in_task && s->write_task == s->loop->task &&
	       !s->connecting &&
	       rs__queue_len(&s->queue) == 0 &&
	       rs__queue_len(&s->batch) + len <= RS_BATCH_LIMIT;
}

/* Schedules what bytes the kernel took (counted in written) complete. */
static inline __attribute__((always_inline)) void
sock_took_settle(rs_socket *s)
{
	if (s->reqs.len > 0 || s->need_drain || s->ending)
		sock_schedule_settle(s);
}

/* Accounts n bytes the kernel took; schedules what that completes. */
static inline __attribute__((always_inline)) void sock_took(rs_socket *s,
							      size_t n)
{
	s->written += n;
	sock_took_settle(s);
}

static size_t sock_src_len(const struct sock_src *src)
{
	return src->q ? rs_queue_len(src->q) : src->len;
}

/* Appends to the pending-write queue what the kernel left of src after
 * its first taken bytes. */
static void sock_keep(rs_socket *s, const struct sock_src *src, size_t taken)
{
	if (src->q)
		must(rs_queue_append_queue(&s->queue, src->q, taken),
		     "queue append");
	else if (taken < src->len && src->owned)
		must(rs_queue_append_owned(&s->queue, src->data + taken,
					   src->len - taken), "queue append");
	else if (taken < src->len)
		must(rs_queue_append(&s->queue, src->data + taken,
				     src->len - taken), "queue append");
}

/* One call: send for one run of bytes, sendmsg for more. */
static ssize_t sock_sendv(rs_socket *s, const struct iovec *iov, int n)
{
	if (n == 1)
		return rs__io_send(s->fd, iov[0].iov_base, iov[0].iov_len);
	return rs__io_sendv(s->fd, iov, n);
}

/*
 * Points iov at the queued bytes, then, when they all fit, at src's; sets
 * *queued_in to the queued bytes the iovecs hold. Returns the iovecs used.
 */
static int sock_gather(rs_socket *s, const struct sock_src *src,
		       struct iovec *iov, size_t *queued_in)
{
	int n = rs_queue_peekv(&s->queue, iov, RS_SEND_IOV);
	size_t in = 0;

	for (int i = 0; i < n; i++)
		in += iov[i].iov_len;
	*queued_in = in;
	/* The new bytes go behind the queued ones, or not in this call. */
	if (in < rs_queue_len(&s->queue) || n == RS_SEND_IOV)
		return n;
	if (src->q)
		return n + rs_queue_peekv(src->q, iov + n, RS_SEND_IOV - n);
	iov[n].iov_base = (void *)src->data;
	iov[n].iov_len = src->len;
	return n + 1;
}

/*
 * sock_send_raw of one run of new bytes (len > 0) with nothing queued:
 * one send of them, and what the kernel refuses becomes the queue (the
 * owned run itself, or a copy), with nothing queued to consume first.
 */
static inline __attribute__((always_inline)) void
sock_send_first(rs_socket *s, const struct sock_src *src)
{
	ssize_t n = rs__io_send(s->fd, src->data, src->len);
	size_t taken = n > 0 ? (size_t)n : 0;

	if (n < 0 && n != -EAGAIN && !is_retryable(n)) {
		sock_fail(s, (int)-n, "send");
		return;
	}
	if (taken < src->len && src->owned)
		must(rs__queue_append_owned(&s->queue, src->data + taken,
					    src->len - taken), "queue append");
	else if (taken < src->len)
		must(rs_queue_append(&s->queue, src->data + taken,
				     src->len - taken), "queue append");
	if (taken > 0)
		sock_took(s, taken);
	sock_poll_update(s);
}

/* Sends src's bytes behind whatever is queued (in one call, with the
 * queued bytes first); queues what is refused. */
static void sock_send_raw(rs_socket *s, const struct sock_src *src)
{
	struct iovec iov[RS_SEND_IOV];
	size_t queued = rs__queue_len(&s->queue);
	size_t queued_in, taken_new = 0;
	int niov;
	ssize_t n;

	if (s->connecting) {
		sock_keep(s, src, 0);
		return;
	}
	/* Nothing queued and one run of new bytes: one send of them. */
	if (queued == 0 && !src->q) {
		sock_send_first(s, src);
		return;
	}
	niov = sock_gather(s, src, iov, &queued_in);
	n = sock_sendv(s, iov, niov);
	if (n > 0) {
		size_t from_queue = (size_t)n < queued ? (size_t)n : queued;

		rs_queue_consume(&s->queue, from_queue);
		taken_new = (size_t)n - from_queue;
	}
	if (n < 0 && !is_retryable(n)) {
		sock_fail(s, (int)-n, niov > 1 ? "sendmsg" : "send");
		return;
	}
	if (taken_new < sock_src_len(src))
		sock_keep(s, src, taken_new);
	if (n > 0)
		sock_took(s, (size_t)n);
	sock_poll_update(s);
}

/* Every path that gives bytes to the kernel comes here: what the batch
 * holds goes first, so the order on the wire is the order of the writes. */
static void sock_send_bytes(rs_socket *s, const struct sock_src *src)
{
	if (s->batch_link.listed)
		rs__socket_batch_flush(s);
	if (!s->destroyed)
		sock_send_raw(s, src);
}

/*
 * Drops the first n bytes (at most what they hold) from the iovecs at *iov,
 * *cnt of them: whole ones leave, a partly sent one is shortened in place
 * (libuv's uv__write_req_update). The iovecs then say what a new peek of
 * the queue would say once those n bytes are consumed.
 */
static void sock_iov_advance(struct iovec **iov, int *cnt, size_t n)
{
	struct iovec *v = *iov;

	while (n > 0 && n >= v->iov_len) {
		n -= v->iov_len;
		v++;
		(*cnt)--;
	}
	if (n > 0) {
		v->iov_base = (char *)v->iov_base + n;
		v->iov_len -= n;
	}
	*iov = v;
}

/*
 * A writable event: sends of the queued bytes until the queue is empty, the
 * kernel refuses, or RS_FLUSH_MAX_SENDS sends (libuv's bound of 32 writes
 * per wakeup, for the same reason: a peer that reads as fast as we write must
 * not starve the other sockets of the loop).
 *
 * The queue is peeked once and consumed once per event, not per send: the
 * iovecs advance past what each send took (sock_iov_advance), so that a
 * send costs its call and a few instructions, where a peek and a consume
 * of an owned queue cost about 60 (docs/queue-model.md, "Sender cost").
 * The sends are the ones a peek per send would make: under the cursor
 * strategy a consume moves no unsent byte, and the iovecs are peeked again
 * when they are used up or when a full array (RS_SEND_IOV runs, more
 * queued) lost a run that a new peek would replace. The memmove strategy
 * moves the unsent bytes at every consume, so it peeks and consumes per
 * send, as the legacy code did.
 */
static RS__OUT_OF_LINE void sock_flush_runs(rs_socket *s)
{
	struct rs_queue *q = &s->queue;
	struct iovec iov[RS_SEND_IOV];
	struct iovec *cur = iov;
	size_t taken = 0, consumed = 0;
	ssize_t n = 0;
	/* The iovecs are peeked again once fewer than min_left are left. */
	int left = 0, min_left = 1;

	for (int i = 0; i < RS_FLUSH_MAX_SENDS; i++) {
		if (left < min_left) {
			if (taken > consumed)
				rs__queue_consume(q, taken - consumed);
			consumed = taken;
			left = rs__queue_peekv(q, iov, RS_SEND_IOV);
			if (left == 0)
				break;
			cur = iov;
			min_left = q->strategy != RS_QUEUE_CURSOR ? INT_MAX :
				   left == RS_SEND_IOV ? RS_SEND_IOV : 1;
		}
		n = sock_sendv(s, cur, left);
		if (n <= 0)
			break;
		taken += (size_t)n;
		sock_iov_advance(&cur, &left, (size_t)n);
	}
	if (taken > consumed)
		rs__queue_consume(q, taken - consumed);
	/* The bytes taken are accounted once per event, not once per send:
	 * nothing runs between the sends of one event that could see
	 * written, and a failure still finds them counted first. */
	if (taken > 0)
		sock_took(s, taken);
	/* A failed send is the last one made, of left iovecs. */
	if (n < 0 && !is_retryable(n)) {
		sock_fail(s, (int)-n, left > 1 ? "sendmsg" : "send");
		return;
	}
	sock_poll_update(s);
}

/*
 * Whether the settle that the bytes a writable event's flush took would
 * queue is sure to find nothing to do, for a flush that left bytes queued
 * (which rules out drain and finish: both wait for an empty queue). It
 * would, when queued here, be the task's first microtask (none is queued
 * yet) and run on the state the flush leaves, since the flush is the last
 * work of the event's task (the caller knows that no writable hook
 * follows), and the front write request, if any, is not complete. Such a
 * settle would do nothing and nothing could come between, so leaving it
 * out changes no event and no order; what it saves is a microtask per
 * writable event while a large write drains.
 */
static inline int sock_settle_idle(const rs_socket *s)
{
	return s->loop->micro.len == 0 &&
	       (s->reqs.len == 0 ||
		RS__RING_FRONT(&s->reqs, const struct rs__wreq)->end >
			s->written);
}

/*
 * sock_flush_runs for a queue that is one run of bytes (one owned run, or
 * the copied buffer under the cursor strategy), the common case: the same
 * sends, from a pointer and a length instead of an array of iovecs, and
 * the same consume once per event, done here: a run sent in part moves
 * its start (the owned run's, or the buffer's head), as rs_queue_consume
 * would. The memmove strategy consumes (moves) after every send, and a
 * queue of several runs walks its segments: those take sock_flush_runs.
 * The socket is not destroyed (every caller tests it). last: the flush is
 * a writable event's and the last work of its task, no writable hook
 * follows (sock_settle_idle may then leave the settle out).
 */
static inline __attribute__((always_inline)) void sock_flush(rs_socket *s,
							       int last)
{
	struct rs_queue *q = &s->queue;
	const char *p;
	size_t len, taken = 0;
	ssize_t n = 0;

	if (q->segs || (!q->owned_len && q->strategy != RS_QUEUE_CURSOR)) {
		sock_flush_runs(s);
		return;
	}
	p = q->owned_len ? q->owned_at : q->buf + q->head;
	len = q->owned_len ? q->owned_len : q->tail - q->head;
	for (int i = 0; i < RS_FLUSH_MAX_SENDS && taken < len; i++) {
		n = rs__io_send(s->fd, p + taken, len - taken);
		if (n <= 0)
			break;
		taken += (size_t)n;
	}
	if (taken == len && taken > 0) {
		if (q->owned_len) {
			q->owned_at = NULL;  /* the one owned run, all sent */
			q->owned_len = 0;
		} else {
			rs_queue_consume(q, taken);
		}
		s->written += taken;
		sock_took_settle(s);
	} else if (taken > 0) {
		if (q->owned_len) {
			q->owned_at += taken;
			q->owned_len -= taken;
		} else {
			q->head += taken;
		}
		s->written += taken;
		if (!last || !sock_settle_idle(s))
			sock_took_settle(s);
	}
	/* EAGAIN tested first: the send that ends a writable event. */
	if (__builtin_expect(n != -EAGAIN, 0) && n < 0 && !is_retryable(n)) {
		sock_fail(s, (int)-n, "send");
		return;
	}
	if (taken == len) {
		sock_poll_update(s);
		return;
	}
	/* sock_poll_update of a socket that still has bytes queued and is
	 * not destroyed (a failed send returned above). want holds EPOLLOUT,
	 * and an unregistered socket's poll is 0 (sock_unregister), so
	 * want == poll says it is registered too. */
	{
		uint32_t want = EPOLLOUT;

		if (!s->peer_ended && !s->paused)
			want |= EPOLLIN;
		if (want != s->poll)
			sock_poll_change(s, want);
	}
}

size_t rs_socket_writable_length(const rs_socket *s)
{
	return rs__queue_len(&s->queue) + rs__queue_len(&s->cork);
}

uint64_t rs_socket_bytes_written(const rs_socket *s)
{
	return s->written;
}

int rs_socket_fd(const rs_socket *s)
{
	return s->fd;
}

const struct rs_queue *rs_socket_queue(const rs_socket *s)
{
	return &s->queue;
}

uint64_t rs_socket_bytes_copied(const rs_socket *s)
{
	return s->queue.bytes_copied + s->cork.bytes_copied +
	       s->batch.bytes_copied;
}

struct late_cb {
	rs_socket *s;
	rs_write_cb cb;
	void *arg;
	int status;
};

static void late_cb_task(rs_loop *loop, void *arg)
{
	struct late_cb l = *(struct late_cb *)arg;

	(void)loop;
	free(arg);
	l.cb(l.s, l.status, l.arg);
}

/* A write the socket cannot take: the callback fails, then error, close. */
static int sock_write_refused(rs_socket *s, int code, rs_write_cb cb,
			      void *arg)
{
	if (s->destroyed) {
		/* Closed already (its close task may have run): the callback
		 * learns of it in a microtask of its own, before the socket is
		 * freed at the end of the iteration. */
		if (cb) {
			struct late_cb *l = malloc(sizeof(*l));

			if (!l)
				must(-ENOMEM, "late callback");
			*l = (struct late_cb){ s, cb, arg, -code };
			must(rs_microtask(s->loop, late_cb_task, l), "microtask");
		}
		return -code;
	}
	/* The refused write is the first request to fail: it goes to the
	 * front so that it gets the error and the others -ECANCELED. */
	if (cb) {
		struct rs__wreq r = { s->seq, cb, arg };

		must(rs__ring_push_front(&s->reqs, &r), "write request");
	}
	sock_destroy(s, code, "write");
	return -code;
}

static int sock_can_write(const rs_socket *s)
{
	if (s->destroyed)
		return -EBADF;
	if (s->ending || (s->peer_ended && !s->opts.allow_half_open))
		return -EPIPE;
	return 0;
}

static int sock_write(rs_socket *s, const void *data, size_t len,
		      rs_write_cb cb, void *arg, int owned)
{
	/* node:net: the return value compares the length including this
	 * write with the high-water mark, before the kernel is tried. */
	int keep_going = rs__queue_len(&s->queue) + rs__queue_len(&s->cork) +
			 len < RS_HIGH_WATER_MARK;

	if (!keep_going)
		s->need_drain = 1;
	s->seq += len;
	if (cb && s->reqs.len < s->reqs.cap) {
		/* In a free slot in place: rs__ring_push's copy is a call. */
		*(struct rs__wreq *)rs__ring_back(&s->reqs) =
			(struct rs__wreq){ s->seq, cb, arg };
	} else if (cb) {
		struct rs__wreq r = { s->seq, cb, arg };

		must(rs__ring_push(&s->reqs, &r), "write request");
	}
	if (s->corked && owned) {
		must(rs_queue_append_owned(&s->cork, data, len), "cork append");
	} else if (s->corked) {
		must(rs_queue_append(&s->cork, data, len), "cork append");
	} else if (sock_batchable(s, len, cb)) {
		must(rs_queue_append(&s->batch, data, len), "batch append");
		rs__batch_list(&s->batch_link);
	} else if (len > 0) {
		struct sock_src src = { data, len, owned, NULL };

		sock_send_bytes(s, &src);
	} else if (s->batch_link.listed) {
		/* An empty write with a callback completes after the bytes
		 * before it: send them now, not at the end of the task. */
		rs__socket_batch_flush(s);
	}
	s->write_task = sock_task(s);
	/* A write whose bytes are all taken (or that has none) completes in
	 * this task's microtasks. */
	if (cb && s->written >= s->seq)
		sock_schedule_settle(s);
	return keep_going;
}

/*
 * Whether rs_socket_write(s, ..., len, NULL, NULL) would hold the write in
 * the batch and return 1, its tests in one expression (those of
 * sock_can_write, sock_batchable and keep_going). keep_going: the queue is
 * empty, and so is the cork buffer of a socket that is not corked
 * (uncorking sends or drops all of it), so it is len below the mark. The
 * task: a loop in a task has started one, so its number is not 0.
 */
static inline __attribute__((always_inline)) int
sock_batch_ok(const rs_socket *s, size_t len)
{
	return !(s->destroyed || s->ending || s->connecting ||
		 (s->peer_ended && !s->opts.allow_half_open) || s->corked ||
		 !rs_config.batch || len == 0 || len > RS_BATCH_MAX_WRITE ||
		 len >= RS_HIGH_WATER_MARK || !s->loop->in_task ||
		 s->write_task != s->loop->task ||
		 rs__queue_len(&s->queue) != 0 ||
		 rs__queue_len(&s->batch) + len > RS_BATCH_LIMIT);
}

/* The header bytes (hlen at most 4, the first in the low byte of head),
 * then the payload, at p. */
static void sock_fill_pair(char *p, uint32_t head, size_t hlen,
			   const void *data, size_t len)
{
	for (size_t i = 0; i < hlen; i++)
		p[i] = (char)(head >> (8 * i));
	if (len > 0)
		memcpy(p + hlen, data, len);
}

/* rs__socket_write_pair but for its common case: in the batch after
 * growing it, or through rs_socket_write. Out of line, so that the common
 * case calls nothing and saves no registers. */
static RS__OUT_OF_LINE int sock_write_pair_slow(rs_socket *s, uint32_t head,
						size_t hlen, const void *data,
						size_t len)
{
	char buf[RS__PAIR_MAX];
	char *p;

	if (hlen > 4 || len > RS__PAIR_MAX - hlen)
		return -EINVAL;
	if (sock_batch_ok(s, hlen + len) &&
	    (p = rs__queue_room(&s->batch, hlen + len))) {
		s->seq += hlen + len;
		rs__batch_list(&s->batch_link);
		sock_fill_pair(p, head, hlen, data, len);
		return RS__WRITE_BATCHED;
	}
	sock_fill_pair(buf, head, hlen, data, len);
	return rs_socket_write(s, buf, hlen + len, NULL, NULL);
}

/*
 * The common case: a 2-byte header and at most 16 bytes, for a batch that
 * is listed and has the room (a task's later small writes), with no call:
 * the two stores of the header and two overlapping moves of the payload
 * (8 bytes each, or 4, or byte by byte below 4).
 */
int rs__socket_write_pair(rs_socket *s, uint32_t head, size_t hlen,
			  const void *data, size_t len)
{
	struct rs_queue *b = &s->batch;
	const char *src = data;
	size_t n = hlen + len;
	char *p;

	/* sock_batch_ok's tests, the batch's limit read as tail + n: a batch
	 * without owned bytes (owned_len 0) and with head 0 holds tail bytes. */
	if (hlen != 2 || len > 16 || b->owned_len || b->head != 0 ||
	    n > b->cap - b->tail || b->tail + n > RS_BATCH_LIMIT ||
	    !s->batch_link.listed || s->destroyed || s->ending ||
	    s->connecting || (s->peer_ended && !s->opts.allow_half_open) ||
	    s->corked || !rs_config.batch || !s->loop->in_task ||
	    s->write_task != s->loop->task || rs__queue_len(&s->queue) != 0)
		return sock_write_pair_slow(s, head, hlen, data, len);
	p = b->buf + b->tail;
	b->tail += n;
	b->bytes_copied += n;
	s->seq += n;
	p[0] = (char)head;
	p[1] = (char)(head >> 8);
	p += 2;
	if (len >= 8) {
		uint64_t x, y;

		memcpy(&x, src, 8);
		memcpy(&y, src + len - 8, 8);
		memcpy(p, &x, 8);
		memcpy(p + len - 8, &y, 8);
	} else if (len >= 4) {
		uint32_t x, y;

		memcpy(&x, src, 4);
		memcpy(&y, src + len - 4, 4);
		memcpy(p, &x, 4);
		memcpy(p + len - 4, &y, 4);
	} else {
		for (size_t i = 0; i < len; i++)
			p[i] = src[i];
	}
	return RS__WRITE_BATCHED;
}

int rs_socket_write(rs_socket *s, const void *data, size_t len,
		    rs_write_cb cb, void *arg)
{
	int err = sock_can_write(s);

	if (err < 0)
		return sock_write_refused(s, -err, cb, arg);
	return sock_write(s, data, len, cb, arg, 0);
}

int rs_socket_write_owned(rs_socket *s, const void *data, size_t len,
			  rs_write_cb release, void *arg)
{
	int err;

	if (!release)
		return -EINVAL;
	err = sock_can_write(s);
	if (err < 0)
		return sock_write_refused(s, -err, release, arg);
	return sock_write(s, data, len, release, arg, 1);
}

static void sock_uncork_all(rs_socket *s)
{
	struct sock_src src = { .q = &s->cork };
	size_t len = rs_queue_len(&s->cork);

	s->corked = 0;
	if (len == 0)
		return;
	/* The collected bytes leave in one call, as node's uncork does with
	 * one writev of the buffered chunks. */
	sock_send_bytes(s, &src);
	rs_queue_consume(&s->cork, len);
}

int rs_socket_end(rs_socket *s, const void *data, size_t len, rs_write_cb cb,
		  void *arg)
{
	int err = sock_can_write(s);

	/* After the peer's FIN without allow_half_open, only bytes are refused
	 * (node's writeAfterFIN): an end() with none is how the stack itself
	 * closes such a socket. */
	if (err == -EPIPE && len == 0 && !s->ending)
		err = 0;
	if (err < 0)
		return sock_write_refused(s, -err, cb, arg);
	/* The callback is the socket's before any byte is sent: if that send
	 * fails, the close reports the error to it. */
	s->end_cb = cb;
	s->end_arg = arg;
	if (len > 0)
		(void)sock_write(s, data, len, NULL, NULL, 0);
	if (s->batch_link.listed)
		rs__socket_batch_flush(s);
	if (s->destroyed)
		return 0;
	s->ending = 1;
	if (s->corked)
		sock_uncork_all(s);
	sock_schedule_settle(s);
	return 0;
}

void rs_socket_destroy_soon(rs_socket *s)
{
	if (s->destroyed)
		return;
	if (!s->ending)
		(void)rs_socket_end(s, NULL, 0, NULL, NULL);
	if (s->finished)
		rs_socket_destroy(s, 0);
	else
		s->destroy_on_finish = 1;
}

void rs_socket_cork(rs_socket *s)
{
	s->corked++;
}

void rs_socket_uncork(rs_socket *s)
{
	if (s->corked == 0 || s->destroyed)
		return;
	if (--s->corked == 0) {
		s->corked = 1;
		sock_uncork_all(s);
	}
}

/* Every byte is taken after end(): send our FIN, then finish, then end's
 * callback; close when the peer has ended too (node's autoDestroy). */
static void sock_finish(rs_socket *s)
{
	int rc = rs__io_shutdown(s->fd);
	rs_write_cb cb = s->end_cb;

	/* ENOTCONN: the peer is gone already; node ignores it as well. */
	if (rc < 0 && rc != -ENOTCONN) {
		sock_fail(s, -rc, "shutdown");
		return;
	}
	s->finished = 1;
	s->end_cb = NULL;
	/* end()'s callback before the finish event, as node 20's Writable
	 * runs its kOnFinished callbacks before emit('finish'). */
	if (cb)
		cb(s, 0, s->end_arg);
	if (!s->destroyed && s->ev.on_finish)
		s->ev.on_finish(s, s->arg);
	if (!s->destroyed && (s->peer_ended || s->destroy_on_finish))
		rs_socket_destroy(s, 0);
}

/*
 * Completions, in node 20's order (Writable's afterWrite): drain first, when
 * a write asked for it, the socket is not ending and nothing is left; then
 * the callbacks of the writes the kernel has now taken; then, after end()
 * and once every byte is taken, our FIN, end()'s callback and finish.
 */
static void sock_settle(rs_loop *loop, void *arg)
{
	rs_socket *s = arg;

	(void)loop;
	s->settle_queued = 0;
	/* Bytes still queued rule out drain and finish (both wait for an
	 * empty queue): with the front request not complete, nothing is due.
	 * The settle of a write the kernel did not take whole ends here. */
	if (rs__queue_len(&s->queue) > 0 &&
	    (s->reqs.len == 0 ||
	     RS__RING_FRONT(&s->reqs, const struct rs__wreq)->end > s->written))
		return;
	if (s->need_drain && !s->ending && !s->destroyed &&
	    rs__queue_len(&s->queue) + rs__queue_len(&s->cork) == 0) {
		s->need_drain = 0;
		if (s->ev.on_drain)
			s->ev.on_drain(s, s->arg);
	}
	while (!s->destroyed && s->reqs.len > 0 &&
	       RS__RING_FRONT(&s->reqs, const struct rs__wreq)->end <=
		       s->written) {
		struct rs__wreq r = *(struct rs__wreq *)rs__ring_take(&s->reqs);

		r.cb(s, 0, r.arg);
	}
	if (!s->destroyed && s->ending && !s->finished && !s->connecting &&
	    rs__queue_len(&s->queue) + rs__queue_len(&s->cork) == 0)
		sock_finish(s);
}

/* ---- connect's completion, dispatch --------------------------------- */

static void sock_connected(rs_socket *s)
{
	s->connecting = 0;
	if (s->ev.on_connect)
		s->ev.on_connect(s, s->arg);
	if (s->destroyed)
		return;
	if (rs__queue_len(&s->queue) > 0)
		sock_flush(s, 0);
	else
		sock_poll_update(s);
	/* An end() made while connecting finishes now that it can. */
	if (!s->destroyed && s->ending)
		sock_schedule_settle(s);
}

/*
 * epoll reports a hang-up or an error whatever the interest, and level-
 * triggered it reports it at every wait: a socket that reads nothing (paused,
 * or past the peer's FIN) and has nothing to send would make the loop spin.
 * It leaves epoll until it wants events again (sock_poll_update adds it).
 */
static void sock_unregister(rs_socket *s)
{
	int rc = rs__io_epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, 0, NULL);

	if (rc < 0) {
		sock_fail(s, -rc, "epoll_ctl");
		return;
	}
	s->unregistered = 1;
	s->poll = 0;
}

/* A writable event alone, the event of a write that drains: the flush,
 * which is what the general case of rs__socket_dispatch comes to for it.
 * Out of line, so that dispatch's test jumps straight here and this
 * function saves only the registers the flush needs. */
static RS__OUT_OF_LINE void sock_on_writable(rs_socket *s)
{
	sock_flush(s, 1);
}

static RS__OUT_OF_LINE void sock_dispatch_events(rs_socket *s,
						   uint32_t events);

void rs__socket_dispatch(struct rs__handle *h, uint32_t events)
{
	/* A socket's struct begins with its handle. */
	rs_socket *s = (rs_socket *)h;

	if (events == EPOLLOUT && !s->destroyed && !s->connecting &&
	    !s->want_writable)
		sock_on_writable(s);
	else
		sock_dispatch_events(s, events);
}

/* Any other event: the connect's completion, a read, a hang-up, and a
 * writable event with a writable hook or beside a read. */
static void sock_dispatch_events(rs_socket *s, uint32_t events)
{
	if (s->destroyed)
		return;
	if (s->connecting) {
		int err;

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		err = rs__io_socket_error(s->fd);
		if (err) {
			sock_fail(s, err, "connect");
			return;
		}
		sock_connected(s);
		return;
	}
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !s->paused &&
	    !s->peer_ended)
		rs__socket_read(s);
	else if ((events & (EPOLLHUP | EPOLLERR)) && sock_wanted_events(s) == 0)
		sock_unregister(s);
	if (!s->destroyed && (events & EPOLLOUT))
		sock_flush(s, !s->want_writable);
	if (s->want_writable && !s->destroyed && (events & EPOLLOUT))
		rs__socket_writable_hook(s);
}

/* ---- for the other files of the socket (socket_internal.h) ------------ */

void rs__socket_must(int rc, const char *what)
{
	must(rc, what);
}

void rs__socket_fail(rs_socket *s, int code, const char *syscall)
{
	sock_fail(s, code, syscall);
}

void rs__socket_poll_update(rs_socket *s)
{
	sock_poll_update(s);
}

void rs__socket_schedule_settle(rs_socket *s)
{
	sock_schedule_settle(s);
}

void rs__socket_took(rs_socket *s, size_t n)
{
	sock_took(s, n);
}

int rs__socket_retryable(ssize_t rc)
{
	return is_retryable(rc);
}

int rs__socket_write_refused(rs_socket *s, int code, rs_write_cb cb,
			     void *arg)
{
	return sock_write_refused(s, code, cb, arg);
}
